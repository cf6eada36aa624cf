//! Differential against keepalived: for each configuration of [`CASES`]
//! (every check passing), keepalived's checker process and pulse, each run
//! alone in a namespace of its own, must leave the same IPVS table, as
//! `ipvsadm -S -n` prints it, and the same global timeouts (`ipvsadm -L
//! --timeout`).
//!
//! "Checks passing": most cases have no checker, so keepalived and pulse
//! both treat every real server as up; the others have TCP_CHECKs whose
//! `connect_ip` is the namespace's 127.0.0.1, where the test listens on the
//! checked ports before either daemon starts. The real servers' own
//! addresses stay off the namespace: IPVS turns a destination whose address
//! is local into a "local node" one, whatever forwarding method was asked
//! for.
//!
//! The cases run in parallel, a few at a time, each tool in a namespace of
//! its own: under emulation every process costs 0.1 to 0.3 s.
//! `FULCRUM_DIFFERENTIAL_ONLY=TEXT` keeps the cases whose names contain
//! TEXT.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fulcrum_config::diagnostic::Severity;
use ipvs::Client;
use labkit::Namespace;
use pulse::lvs::desired::Table;
use pulse::lvs::plan::read;

/// One configuration, and the ports on the namespace's 127.0.0.1 its
/// TCP_CHECKs connect to.
struct Case {
    name: &'static str,
    configuration: &'static str,
    listen: &'static [u16],
}

const CASES: &[Case] = &[
    Case {
        name: "rr-nat",
        configuration: "
virtual_server 192.0.2.1 80 {
    protocol TCP
    lvs_sched rr
    lvs_method NAT
    real_server 10.0.2.11 8080 { }
    real_server 10.0.2.12 8081 { }
    real_server 10.0.2.13 80 { }
}",
        listen: &[],
    },
    Case {
        name: "wrr-weights-thresholds",
        configuration: "
virtual_server 192.0.2.2 443 {
    protocol TCP
    lvs_sched wrr
    lvs_method NAT
    real_server 10.0.2.11 443 { weight 5 }
    real_server 10.0.2.12 443 { weight 0 }
    real_server 10.0.2.13 443 {
        weight 100
        uthreshold 1000
        lthreshold 10
    }
}",
        listen: &[],
    },
    Case {
        name: "lc-dr-wlc-udp",
        configuration: "
virtual_server 192.0.2.3 80 {
    protocol TCP
    lvs_sched lc
    lvs_method DR
    real_server 10.0.2.11 8080 { }
    real_server 10.0.2.12 80 { weight 2 }
}
virtual_server 192.0.2.3 53 {
    protocol UDP
    lvs_sched wlc
    lvs_method DR
    real_server 10.0.2.11 53 { weight 3 }
    real_server 10.0.2.12 53 { }
}",
        listen: &[],
    },
    Case {
        name: "sh-flags-ops",
        configuration: "
virtual_server 192.0.2.4 53 {
    protocol UDP
    lvs_sched sh
    sh-port
    sh-fallback
    ops
    lvs_method NAT
    real_server 10.0.2.11 53 { }
    real_server 10.0.2.12 5353 { weight 2 }
}",
        listen: &[],
    },
    Case {
        name: "mh-flags-tun-ipip",
        configuration: "
virtual_server 192.0.2.5 80 {
    protocol TCP
    lvs_sched mh
    mh-port
    mh-fallback
    lvs_method TUN
    real_server 10.0.2.11 80 { }
    real_server 10.0.2.12 8080 { weight 4 }
}",
        listen: &[],
    },
    Case {
        name: "tun-gue-gre-checksums",
        configuration: "
virtual_server 192.0.2.6 80 {
    protocol TCP
    lvs_sched rr
    lvs_method TUN type gue port 6080 csum
    real_server 10.0.2.11 80 { }
    real_server 10.0.2.12 80 { lvs_method TUN type gue port 6081 remcsum }
    real_server 10.0.2.13 80 { lvs_method TUN type gre csum }
    real_server 10.0.2.14 80 { lvs_method TUN type gre nocsum }
    real_server 10.0.2.15 80 { lvs_method TUN type ipip }
}",
        listen: &[],
    },
    Case {
        name: "persistence-granularity",
        configuration: "
virtual_server 192.0.2.7 443 {
    protocol TCP
    lvs_sched wlc
    lvs_method NAT
    persistence_timeout 600
    persistence_granularity 255.255.255.0
    real_server 10.0.2.11 443 { }
}
virtual_server 192.0.2.7 0 {
    protocol TCP
    lvs_sched rr
    lvs_method DR
    persistence_timeout 60
    real_server 10.0.2.12 0 { }
}
virtual_server 2001:db8::7 443 {
    protocol TCP
    lvs_sched rr
    lvs_method DR
    persistence_timeout 120
    persistence_granularity 64
    real_server 2001:db8::11 443 { }
}",
        listen: &[],
    },
    Case {
        name: "persistence-engine-sip",
        configuration: "
virtual_server 192.0.2.8 5060 {
    protocol UDP
    lvs_sched rr
    lvs_method NAT
    persistence_timeout 30
    persistence_engine sip
    real_server 10.0.2.11 5060 { }
    real_server 10.0.2.12 5060 { }
}",
        listen: &[],
    },
    Case {
        name: "fwmark-both-families",
        configuration: "
virtual_server fwmark 7 {
    lvs_sched wrr
    lvs_method DR
    real_server 10.0.2.11 80 { weight 2 }
    real_server 10.0.2.12 443 { }
}
virtual_server fwmark 8 {
    lvs_sched rr
    lvs_method NAT
    real_server 2001:db8::11 8080 { }
}
virtual_server fwmark 9 {
    lvs_sched rr
    lvs_method TUN
    persistence_timeout 300
    real_server 10.0.2.13 80 { }
}",
        listen: &[],
    },
    Case {
        name: "group-ranges-and-fwmarks",
        configuration: "
virtual_server_group web {
    192.0.2.20-23 80
    192.0.2.30 8080
    fwmark 11
}
virtual_server group web {
    protocol TCP
    lvs_sched wrr
    lvs_method DR
    real_server 10.0.2.11 80 { weight 3 }
    real_server 10.0.2.12 80 { }
}
virtual_server_group nat {
    192.0.2.40-41 80
}
virtual_server group nat {
    protocol TCP
    lvs_sched rr
    lvs_method NAT
    real_server 10.0.2.13 8080 { }
}",
        listen: &[],
    },
    Case {
        name: "group-ipv6-range-fwmark-inet6",
        configuration: "
virtual_server_group six {
    2001:db8::20-22 443
    fwmark 12 inet6
}
virtual_server group six {
    protocol TCP
    lvs_sched sh
    lvs_method DR
    persistence_timeout 100
    persistence_granularity 96
    real_server 2001:db8::11 443 { }
    real_server 2001:db8::12 443 { weight 7 }
}",
        listen: &[],
    },
    Case {
        name: "ipv6-nat-udp-sctp",
        configuration: "
virtual_server 2001:db8::1 80 {
    protocol TCP
    lvs_sched wlc
    lvs_method NAT
    real_server 2001:db8::11 8080 { weight 2 }
    real_server 2001:db8::12 8080 { }
}
virtual_server 2001:db8::1 53 {
    protocol UDP
    lvs_sched rr
    lvs_method NAT
    real_server 2001:db8::11 53 { }
}
virtual_server 192.0.2.9 9000 {
    protocol SCTP
    lvs_sched rr
    lvs_method NAT
    real_server 10.0.2.11 9000 { }
}",
        listen: &[],
    },
    Case {
        name: "lvs-timeouts",
        configuration: "
global_defs {
    lvs_timeouts tcp 800 tcpfin 60 udp 200
}
virtual_server 192.0.2.10 80 {
    protocol TCP
    lvs_sched rr
    lvs_method NAT
    real_server 10.0.2.11 80 { }
}",
        listen: &[],
    },
    Case {
        name: "sorry-server-inhibit-quorum-up",
        configuration: "
virtual_server 192.0.2.11 80 {
    protocol TCP
    lvs_sched rr
    lvs_method NAT
    quorum 2
    sorry_server 10.0.9.9 8080
    sorry_server_inhibit
    real_server 10.0.2.11 80 { }
    real_server 10.0.2.12 80 { }
}",
        listen: &[],
    },
    Case {
        name: "quorum-lost-sorry-server",
        configuration: "
virtual_server 192.0.2.12 80 {
    protocol TCP
    lvs_sched wrr
    lvs_method NAT
    quorum 10
    hysteresis 1
    sorry_server 10.0.9.9 80
    real_server 10.0.2.11 80 {
        weight 2
        inhibit_on_failure
    }
    real_server 10.0.2.12 80 { weight 3 }
}",
        listen: &[],
    },
    Case {
        name: "quorum-lost-without-sorry-server",
        configuration: "
virtual_server 192.0.2.13 80 {
    protocol TCP
    lvs_sched rr
    lvs_method NAT
    quorum 5
    real_server 10.0.2.11 80 { weight 2 }
    real_server 10.0.2.12 80 { weight 1 }
}",
        listen: &[],
    },
    Case {
        name: "group-persistence-granularity-ipv4",
        configuration: "
virtual_server_group sticky {
    192.0.2.60-61 443
    fwmark 13
}
virtual_server group sticky {
    protocol TCP
    lvs_sched wlc
    lvs_method DR
    persistence_timeout 300
    persistence_granularity 255.255.255.0
    real_server 10.0.2.11 443 { }
}",
        listen: &[],
    },
    Case {
        name: "keepalived-corrections",
        configuration: "
virtual_server 192.0.2.70 80 {
    lvs_sched rr
    lvs_method NAT
    real_server 10.0.2.11 80 { }
}
virtual_server 192.0.2.71 0 {
    protocol TCP
    lvs_sched rr
    lvs_method DR
    real_server 10.0.2.11 0 { }
}
virtual_server 192.0.2.72 80 {
    protocol TCP
    lvs_sched rr
    lvs_method DR
    persistence_granularity 255.255.0.0
    real_server 10.0.2.11 8080 { }
    real_server 10.0.2.12 80 { }
    real_server 10.0.2.12 80 { weight 5 }
}
virtual_server fwmark 14 {
    protocol TCP
    lvs_sched rr
    lvs_method DR
    real_server 10.0.2.13 80 { }
}
virtual_server 192.0.2.73 80 {
    protocol TCP
    lvs_sched rr
    ops
    lvs_method NAT
    real_server 10.0.2.14 0 { }
}",
        listen: &[],
    },
    Case {
        name: "zero-weights-sorry-server",
        configuration: "
virtual_server 192.0.2.74 80 {
    protocol TCP
    lvs_sched rr
    lvs_method NAT
    sorry_server 10.0.9.9 80
    real_server 10.0.2.11 80 { weight 0 }
    real_server 10.0.2.12 80 {
        weight 0
        inhibit_on_failure
    }
}",
        listen: &[],
    },
    Case {
        name: "sorry-server-ports",
        configuration: "
virtual_server 192.0.2.75 80 {
    protocol TCP
    lvs_sched rr
    lvs_method NAT
    sorry_server 10.0.9.9
    sorry_server_inhibit
    real_server 10.0.2.11 80 { }
}
virtual_server 192.0.2.76 80 {
    protocol TCP
    lvs_sched rr
    lvs_method DR
    sorry_server 10.0.9.8 8080
    sorry_server_inhibit
    real_server 10.0.2.11 80 { }
}
virtual_server fwmark 15 {
    lvs_sched rr
    lvs_method NAT
    sorry_server 10.0.9.7
    sorry_server_inhibit
    real_server 10.0.2.11 80 { }
}",
        listen: &[],
    },
    Case {
        name: "flags-and-their-order",
        configuration: "
virtual_server 192.0.2.80 80 {
    protocol TCP
    sh-port
    lvs_sched sh
    sh-fallback
    lvs_method NAT
    real_server 10.0.2.11 80 { }
}
virtual_server 192.0.2.81 80 {
    protocol TCP
    lvs_sched rr
    hashed
    flag-2
    flag-3
    lvs_method NAT
    real_server 10.0.2.11 80 { }
}
virtual_server 192.0.2.82 80 {
    protocol TCP
    lvs_sched wrr
    mh-port
    lvs_method NAT
    real_server 10.0.2.11 80 { }
}",
        listen: &[],
    },
    Case {
        name: "cross-family-tunnels",
        configuration: "
virtual_server 192.0.2.83 80 {
    protocol TCP
    lvs_sched rr
    lvs_method TUN
    real_server 2001:db8::11 80 { }
    real_server 10.0.2.11 80 { }
}
virtual_server fwmark 16 {
    ip_family inet6
    lvs_sched rr
    lvs_method TUN type gue port 7000
    real_server 10.0.2.12 80 { }
}
virtual_server fwmark 17 {
    lvs_sched rr
    lvs_method TUN
    real_server 2001:db8::12 80 { }
}",
        listen: &[],
    },
    Case {
        name: "virtual-server-weight-and-overlap",
        configuration: "
virtual_server_group overlap {
    192.0.2.90-91 80
}
virtual_server 192.0.2.91 80 {
    protocol TCP
    lvs_sched rr
    lvs_method NAT
    weight 4
    real_server 10.0.2.11 80 { }
    real_server 10.0.2.12 80 { weight 2 }
}
virtual_server group overlap {
    protocol TCP
    lvs_sched wlc
    lvs_method NAT
    real_server 10.0.2.11 80 { weight 9 }
    real_server 10.0.2.13 80 { }
}
virtual_server 192.0.2.92 80 {
    protocol TCP
    lvs_sched rr
    lvs_method NAT
    real_server 10.0.2.11 80 { }
}
virtual_server 192.0.2.92 80 {
    protocol TCP
    lvs_sched lc
    lvs_method DR
    real_server 10.0.2.14 80 { }
}",
        listen: &[],
    },
    Case {
        name: "tcp-checks-passing",
        configuration: "
virtual_server 192.0.2.14 80 {
    protocol TCP
    lvs_sched wrr
    lvs_method NAT
    delay_loop 1
    quorum 3
    sorry_server 10.0.9.9 80
    real_server 10.0.2.11 80 {
        weight 2
        inhibit_on_failure
        TCP_CHECK {
            connect_ip 127.0.0.1
            connect_port 9001
            connect_timeout 2
        }
    }
    real_server 10.0.2.12 80 {
        alpha
        TCP_CHECK {
            connect_ip 127.0.0.1
            connect_port 9002
            connect_timeout 2
        }
    }
}",
        listen: &[9001, 9002],
    },
    Case {
        name: "tcp-checks-passing-group",
        configuration: "
virtual_server_group checked {
    192.0.2.50-51 443
}
virtual_server group checked {
    protocol TCP
    lvs_sched lc
    lvs_method DR
    delay_loop 1
    real_server 10.0.2.11 443 {
        weight 4
        TCP_CHECK {
            connect_ip 127.0.0.1
            connect_port 9003
            connect_timeout 2
        }
    }
}",
        listen: &[9003],
    },
];

/// How many cases run at a time: each runs keepalived, pulse and a few
/// ipvsadm processes, on the guest's two emulated CPUs.
const PARALLEL: usize = 6;

/// How long after its first programming a daemon running checkers may be
/// taken as settled: several `delay_loop`s of the cases (1 s each).
const CHECKED_SETTLE: Duration = Duration::from_secs(6);

/// How long a daemon may take to settle, all cases running at once.
const SETTLE: Duration = Duration::from_secs(60);

fn selected() -> Vec<&'static Case> {
    let only = std::env::var("FULCRUM_DIFFERENTIAL_ONLY").unwrap_or_default();
    CASES
        .iter()
        .filter(|case| case.name.contains(&only))
        .collect()
}

/// Runs anywhere: every case is a configuration pulse accepts without an
/// error (keepalived's verdict comes in the lab).
#[test]
fn differential_configurations_load() {
    let directory = scratch_directory("load");
    for case in CASES {
        let path = directory.join(format!("{}.conf", case.name));
        std::fs::write(&path, case.configuration).unwrap();
        let loaded = fulcrum_config::load(&path, &Default::default());
        assert_eq!(
            loaded.diagnostics.count(Severity::Error),
            0,
            "{}: {}",
            case.name,
            loaded.diagnostics.render(&loaded.sources)
        );
    }
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
#[ignore = "runs in the lab"]
fn pulse_leaves_the_table_keepalived_leaves() {
    labkit::require_lab();
    let cases = selected();
    assert!(
        !cases.is_empty(),
        "FULCRUM_DIFFERENTIAL_ONLY selects no case"
    );
    let directory = scratch_directory("lab");
    let queue = Mutex::new(cases.iter().enumerate());
    let outcomes = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL.min(cases.len()) {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().unwrap().next();
                    let Some((index, case)) = next else { break };
                    let started = Instant::now();
                    let outcome = compare(index, case, &directory);
                    eprintln!(
                        "{}: {} after {:.1} s",
                        case.name,
                        if outcome.is_ok() { "same" } else { "DIFFERENT" },
                        started.elapsed().as_secs_f64()
                    );
                    outcomes.lock().unwrap().push((case.name, outcome));
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap();
    outcomes.sort_by_key(|(name, _)| *name);
    let failures: Vec<String> = outcomes
        .iter()
        .filter_map(|(name, outcome)| outcome.as_ref().err().map(|why| format!("{name}: {why}")))
        .collect();
    let _ = std::fs::remove_dir_all(&directory);
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n\n{}",
        failures.len(),
        outcomes.len(),
        failures.join("\n\n")
    );
}

/// The table each tool leaves, compared; a readable difference otherwise.
fn compare(index: usize, case: &Case, directory: &Path) -> Result<(), String> {
    let case_directory = directory.join(case.name);
    std::fs::create_dir_all(&case_directory).map_err(|error| error.to_string())?;
    let configuration = case_directory.join("keepalived.conf");
    std::fs::write(&configuration, case.configuration).map_err(|error| error.to_string())?;
    let keepalived = keepalived_table(index, case, &configuration, &case_directory)?;
    let pulse = pulse_table(index, case, &configuration, &case_directory)?;
    if keepalived == pulse {
        return Ok(());
    }
    let mut difference = String::from("(- keepalived only, + pulse only)\n");
    for line in &keepalived {
        if !pulse.contains(line) {
            difference.push_str(&format!("- {line}\n"));
        }
    }
    for line in &pulse {
        if !keepalived.contains(line) {
            difference.push_str(&format!("+ {line}\n"));
        }
    }
    for log in ["keepalived.log", "pulse.log"] {
        let text = std::fs::read_to_string(case_directory.join(log)).unwrap_or_default();
        difference.push_str(&format!("--- {log} ---\n{text}"));
    }
    Err(difference)
}

/// keepalived's checker process alone (`-C`) on `configuration`: its table
/// once settled.
fn keepalived_table(
    index: usize,
    case: &Case,
    configuration: &Path,
    directory: &Path,
) -> Result<Vec<String>, String> {
    let namespace = Namespace::create(&format!("pulse-differential-keepalived-{index}"))
        .map_err(|error| error.to_string())?;
    let _listeners = listen(&namespace, case.listen)?;
    let log = directory.join("keepalived.log");
    let mut command = namespace.command("keepalived");
    command
        .args(["-C", "-n", "-l", "-D", "-f"])
        .arg(configuration)
        .arg("-p")
        .arg(directory.join("keepalived.pid"))
        .arg("-c")
        .arg(directory.join("checkers.pid"));
    let mut daemon = Daemon::spawn(command, &log)?;
    let table = settled(&namespace, &mut daemon, case).and_then(|_| snapshot(&namespace));
    daemon.stop();
    table.map_err(|error| format!("keepalived: {error}\n{}", daemon.log()))
}

/// pulse alone on `configuration`: its table once it says READY=1 and the
/// table is settled.
fn pulse_table(
    index: usize,
    case: &Case,
    configuration: &Path,
    directory: &Path,
) -> Result<Vec<String>, String> {
    let namespace = Namespace::create(&format!("pulse-differential-pulse-{index}"))
        .map_err(|error| error.to_string())?;
    let _listeners = listen(&namespace, case.listen)?;
    let notify_path = directory.join("notify.socket");
    let _ = std::fs::remove_file(&notify_path);
    let notifications = UnixDatagram::bind(&notify_path).map_err(|error| error.to_string())?;
    let log = directory.join("pulse.log");
    let mut command = namespace.command(env!("CARGO_BIN_EXE_pulse"));
    command
        .args(["-C", "-n", "-l", "-f"])
        .arg(configuration)
        .arg("-p")
        .arg(directory.join("pulse.pid"))
        .env("NOTIFY_SOCKET", &notify_path);
    let mut daemon = Daemon::spawn(command, &log)?;
    let table = ready(&notifications, &mut daemon)
        .and_then(|_| settled(&namespace, &mut daemon, case))
        .and_then(|_| snapshot(&namespace));
    daemon.stop();
    table.map_err(|error| format!("pulse: {error}\n{}", daemon.log()))
}

/// A daemon run in a namespace, its stderr and stdout in a log file.
struct Daemon {
    child: Child,
    log: PathBuf,
}

impl Daemon {
    fn spawn(mut command: Command, log: &Path) -> Result<Daemon, String> {
        let file = std::fs::File::create(log).map_err(|error| error.to_string())?;
        let child = command
            .stdin(Stdio::null())
            .stdout(file.try_clone().map_err(|error| error.to_string())?)
            .stderr(file)
            .spawn()
            .map_err(|error| format!("cannot run {command:?}: {error}"))?;
        Ok(Daemon {
            child,
            log: log.to_owned(),
        })
    }

    /// An error if it has exited already.
    fn running(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!("exited early ({status})")),
            Err(error) => Err(error.to_string()),
        }
    }

    /// SIGTERM (`ip netns exec` execs the daemon, so the child is the
    /// daemon itself), and the wait: keepalived's parent stops its checker
    /// child first.
    fn stop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            // SAFETY: signalling our own child, which has not been reaped.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
            let _ = self.child.wait();
        }
    }

    /// What it logged, for a failure's message.
    fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = std::fs::File::open(&self.log) {
            let _ = file.read_to_string(&mut text);
        }
        format!("--- its log ---\n{}--- end of its log ---", text)
    }
}

/// Listeners on the namespace's 127.0.0.1 for the TCP_CHECKs. Nothing
/// accepts: the kernel completes the handshake of up to a backlog's worth
/// of connections (128) by itself, which is all a TCP_CHECK asks, and a
/// case lasts a few checks.
fn listen(namespace: &Namespace, ports: &[u16]) -> Result<Vec<TcpListener>, String> {
    ports
        .iter()
        .map(|&port| {
            namespace
                .run(|| TcpListener::bind(("127.0.0.1", port)))
                .map_err(|error| error.to_string())?
                .map_err(|error| format!("cannot listen on 127.0.0.1:{port}: {error}"))
        })
        .collect()
}

/// Waits for `READY=1` on the notify socket.
fn ready(notifications: &UnixDatagram, daemon: &mut Daemon) -> Result<(), String> {
    notifications
        .set_read_timeout(Some(Duration::from_millis(200)))
        .map_err(|error| error.to_string())?;
    let started = Instant::now();
    let mut buffer = [0_u8; 4096];
    loop {
        match notifications.recv(&mut buffer) {
            Ok(length) => {
                if BufReader::new(&buffer[..length])
                    .lines()
                    .any(|line| line.is_ok_and(|line| line == "READY=1"))
                {
                    return Ok(());
                }
            }
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(error) => return Err(error.to_string()),
        }
        daemon.running()?;
        if started.elapsed() > SETTLE {
            return Err(format!("no READY=1 within {SETTLE:?}"));
        }
    }
}

/// Waits until the namespace's table has services and two reads 300 ms
/// apart agree.
///
/// A case with checkers settles no earlier than [`CHECKED_SETTLE`] after
/// the table first had services: an `alpha` real server enters the pool
/// only after its first check, up to a `delay_loop` (warmup) plus a
/// connect later, and the emulated machine runs several cases at once.
fn settled(namespace: &Namespace, daemon: &mut Daemon, case: &Case) -> Result<(), String> {
    let patience = if case.listen.is_empty() {
        Duration::ZERO
    } else {
        CHECKED_SETTLE
    };
    let mut client = namespace
        .run(Client::connect)
        .map_err(|error| error.to_string())?
        .map_err(|error| error.to_string())?;
    let started = Instant::now();
    let mut first_programmed: Option<Instant> = None;
    let mut previous: Option<Table> = None;
    loop {
        let table = read(&mut client).map_err(|error| error.to_string())?;
        if !table.services.is_empty() {
            let since = *first_programmed.get_or_insert_with(Instant::now);
            if previous.as_ref() == Some(&table) && since.elapsed() >= patience {
                return Ok(());
            }
        }
        previous = Some(table);
        daemon.running()?;
        if started.elapsed() > SETTLE {
            return Err(format!("the table did not settle within {SETTLE:?}"));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// `ipvsadm -S -n`'s lines, sorted (the kernel lists services in hash
/// order and destinations in the order they were added), then `ipvsadm -L
/// --timeout`'s.
fn snapshot(namespace: &Namespace) -> Result<Vec<String>, String> {
    // ipvsadm may list a service twice while the cases beside this one
    // change their tables (`labkit::repeats_a_service`; seen once in
    // group-ipv6-range-fwmark-inet6): such a listing is taken again.
    let saved = labkit::listed_without_repeats(
        "ipvsadm -S -n",
        || ipvsadm(namespace, &["-S", "-n"]),
        |saved| saved.as_deref().unwrap_or(""),
    )?;
    let mut lines: Vec<String> = saved.lines().map(str::to_owned).collect();
    lines.sort();
    lines.extend(
        ipvsadm(namespace, &["-L", "--timeout"])?
            .lines()
            .map(str::to_owned),
    );
    Ok(lines)
}

fn ipvsadm(namespace: &Namespace, arguments: &[&str]) -> Result<String, String> {
    let output = namespace
        .command("ipvsadm")
        .args(arguments)
        .output()
        .map_err(|error| format!("cannot run ipvsadm: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "ipvsadm {} failed: {}",
            arguments.join(" "),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A fresh directory for this process's configurations, pid files, logs
/// and notify sockets.
fn scratch_directory(purpose: &str) -> PathBuf {
    let directory = std::env::temp_dir().join(format!(
        "pulse-differential-{purpose}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&directory).unwrap();
    directory
}
