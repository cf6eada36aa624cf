//! The pulse binary's daemon conventions, in the lab: systemd
//! notifications, the start-up status of a forking pulse, the pid file,
//! reloads (refused with errors, the kernel untouched; otherwise only the
//! difference), notify scripts, and what stop leaves behind.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ipvs::{Client, Destination, Forwarding, Operation, Protocol, Service, ServiceKey};
use labkit::Namespace;
use labkit::notify::Notifications;

const PULSE: &str = env!("CARGO_BIN_EXE_pulse");

/// A folder of the test's own in the guest's tmpfs.
fn directory(name: &str) -> PathBuf {
    let directory = PathBuf::from("/run").join(format!("{name}-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    directory
}

fn pulse(namespace: &Namespace, configuration: &Path, pid_file: &Path) -> Command {
    let mut command = namespace.command(PULSE);
    command
        .arg("-f")
        .arg(configuration)
        .arg("-p")
        .arg(pid_file)
        .args(["-l", "-G"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    command
}

fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: kill on our own child's id.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
}

/// Every service with its destinations and weights, as text, sorted.
fn table(client: &mut Client) -> Vec<String> {
    let mut lines = Vec::new();
    for service in client.services().unwrap() {
        let mut destinations: Vec<String> = client
            .destinations(&service.key)
            .unwrap()
            .iter()
            .map(|destination| format!("{} w{}", destination.socket_address(), destination.weight))
            .collect();
        destinations.sort();
        lines.push(format!("{}: {}", service.key, destinations.join(", ")));
    }
    lines.sort();
    lines
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what}: not within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

const CONFIGURATION: &str = "
virtual_server 192.0.2.1 80 {
    protocol TCP
    lvs_sched wrr
    real_server 10.0.9.1 80 { weight 2 }
    real_server 10.0.9.2 80 { weight 3 }
}
";

#[test]
#[ignore = "runs in the lab"]
fn daemon_notifies_reloads_and_stops_as_keepalived_users_expect() {
    labkit::require_lab();
    let namespace = Namespace::create("pulse-daemon").unwrap();
    let directory = directory("pulse-daemon");
    let configuration = directory.join("keepalived.conf");
    let pid_file = directory.join("pulse.pid");
    std::fs::write(&configuration, CONFIGURATION).unwrap();
    let mut client = namespace.run(Client::connect).unwrap().unwrap();

    // Someone else's service: pulse never touches it, even at stop.
    let foreign = ServiceKey::Address {
        protocol: Protocol::Udp,
        address: "198.51.100.1".parse().unwrap(),
        port: 53,
    };
    client
        .apply(&[
            Operation::CreateService(Service::new(foreign, "rr")),
            Operation::CreateDestination(
                foreign,
                Destination::new("10.0.8.1:53".parse().unwrap(), Forwarding::Route),
            ),
        ])
        .unwrap();
    let foreign_line = table(&mut client)[0].clone();

    // Start: READY=1 comes once the table is programmed.
    let notifications = Notifications::bind(&directory);
    let mut daemon = pulse(&namespace, &configuration, &pid_file)
        .arg("-n")
        .env("NOTIFY_SOCKET", notifications.path())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let ready = notifications.until_ready();
    assert!(
        ready.iter().any(|line| line.starts_with("STATUS=started")),
        "{ready:?}"
    );
    let started = table(&mut client);
    assert_eq!(
        started,
        [
            "TCP 192.0.2.1:80: 10.0.9.1:80 w2, 10.0.9.2:80 w3".to_owned(),
            foreign_line.clone()
        ]
    );
    assert_eq!(
        std::fs::read_to_string(&pid_file).unwrap().trim(),
        daemon.id().to_string(),
        "-n: the pid file names the process started"
    );

    // A second pulse on the same pid file is refused: status 3, table
    // untouched.
    let second = pulse(&namespace, &configuration, &pid_file)
        .arg("-n")
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(3), "{said}");
    assert!(said.contains("running already"), "{said}");

    // A reload with an error: refused, READY=1 again, the kernel untouched.
    std::fs::write(
        &configuration,
        CONFIGURATION.replace("weight 3", "weight 7") + "virtual_server {\n",
    )
    .unwrap();
    signal(&daemon, libc::SIGHUP);
    let reloading = notifications.next();
    assert!(
        reloading.iter().any(|line| line == "RELOADING=1")
            && reloading
                .iter()
                .any(|line| line.starts_with("MONOTONIC_USEC=")),
        "{reloading:?}"
    );
    let refused = notifications.until_ready();
    assert!(
        refused
            .iter()
            .any(|line| line.starts_with("STATUS=reload refused")),
        "{refused:?}"
    );
    assert_eq!(table(&mut client), started);

    // A valid reload: only the weight changes, in place.
    std::fs::write(
        &configuration,
        CONFIGURATION.replace("weight 3", "weight 7"),
    )
    .unwrap();
    signal(&daemon, libc::SIGHUP);
    let reloaded = notifications.until_ready();
    assert!(
        reloaded
            .iter()
            .any(|line| line == "STATUS=reloaded: 1 IPVS change applied"),
        "{reloaded:?}"
    );
    assert_eq!(
        table(&mut client),
        [
            "TCP 192.0.2.1:80: 10.0.9.1:80 w2, 10.0.9.2:80 w7".to_owned(),
            foreign_line.clone()
        ]
    );

    // --dont-release-ipvs is not given: SIGTERM withdraws pulse's service
    // and only it; STOPPING=1 first; status 0; the pid file goes.
    signal(&daemon, libc::SIGTERM);
    let stopping = notifications.next();
    assert!(
        stopping.iter().any(|line| line == "STOPPING=1"),
        "{stopping:?}"
    );
    let status = daemon.wait().unwrap();
    assert!(status.success(), "{status}");
    assert_eq!(table(&mut client), std::slice::from_ref(&foreign_line));
    assert!(!pid_file.exists());

    // Forking (no -n): the command returns once the table is programmed,
    // with status 0, and the daemon runs on under the pid file.
    let forked = pulse(&namespace, &configuration, &pid_file)
        .arg("--dont-release-ipvs")
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(forked.success(), "{forked}");
    assert_eq!(
        table(&mut client),
        [
            "TCP 192.0.2.1:80: 10.0.9.1:80 w2, 10.0.9.2:80 w7".to_owned(),
            foreign_line.clone()
        ]
    );
    let daemon_pid: libc::pid_t = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signals the daemon named by its pid file.
    unsafe { libc::kill(daemon_pid, libc::SIGTERM) };
    wait_until("the forked daemon to stop", || !pid_file.exists());
    // --dont-release-ipvs: the table stays for the next pulse to adopt.
    assert_eq!(
        table(&mut client),
        [
            "TCP 192.0.2.1:80: 10.0.9.1:80 w2, 10.0.9.2:80 w7".to_owned(),
            foreign_line.clone()
        ]
    );

    // Errors at start: status 4, nothing applied; the problems are on
    // stderr when the log goes elsewhere (no -l).
    client.flush().unwrap();
    std::fs::write(
        &configuration,
        "virtual_server 192.0.2.1 80 {\n lvs_shed rr\n}\n",
    )
    .unwrap();
    let refused = namespace
        .command(PULSE)
        .arg("-f")
        .arg(&configuration)
        .arg("-p")
        .arg(&pid_file)
        .args(["-n", "-G"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(4), "{said}");
    assert!(
        said.contains("keepalived.conf:2:2: error: unknown keyword 'lvs_shed'"),
        "{said}"
    );
    assert!(table(&mut client).is_empty());
    let _ = std::fs::remove_dir_all(&directory);
}

#[test]
#[ignore = "runs in the lab"]
fn notify_scripts_run_when_a_real_server_goes_down() {
    labkit::require_lab();
    let namespace = Namespace::create("pulse-notify").unwrap();
    let directory = directory("pulse-notify");
    let configuration = directory.join("keepalived.conf");
    let pid_file = directory.join("pulse.pid");
    let marker = directory.join("down");
    // Nothing listens on 127.0.0.1:9: the check fails at once.
    std::fs::write(
        &configuration,
        format!(
            "virtual_server 192.0.2.1 80 {{
    protocol TCP
    delay_loop 1
    real_server 127.0.0.1 9 {{
        notify_down \"/usr/bin/touch {}\"
        TCP_CHECK {{ connect_timeout 1\n retry 0 }}
    }}
}}
",
            marker.display()
        ),
    )
    .unwrap();
    let mut daemon = pulse(&namespace, &configuration, &pid_file)
        .arg("-n")
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut client = namespace.run(Client::connect).unwrap().unwrap();
    wait_until("notify_down to run", || marker.exists());
    // The server is down: it left the table.
    wait_until("the server to leave", || {
        table(&mut client) == ["TCP 192.0.2.1:80: ".to_owned()]
    });
    signal(&daemon, libc::SIGTERM);
    assert!(daemon.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(&directory);
}

/// With `enable_script_security`, the checker part's scripts keepalived
/// would refuse never run: a MISC_CHECK in a world-writable directory is
/// taken out (its real server, with no checker left, stays in the table,
/// as keepalived's does), an insecure `notify_up` does not run, while a
/// secure MISC_CHECK does (and, failing, takes its server out).
#[test]
#[ignore = "runs in the lab"]
fn insecure_checker_scripts_never_run_with_script_security() {
    use std::os::unix::fs::PermissionsExt;
    labkit::require_lab();
    let namespace = Namespace::create("pulse-insecure").unwrap();
    let directory = directory("pulse-insecure");
    let open = directory.join("open");
    std::fs::create_dir(&open).unwrap();
    let mode = |path: &Path, mode| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    mode(&directory, 0o755);
    mode(&open, 0o777);
    let ran = directory.join("ran");
    let script = |path: &Path, name: &str, status: u8| {
        std::fs::write(
            path,
            format!(
                "#!/bin/sh\necho {name} >> {}\nexit {status}\n",
                ran.display()
            ),
        )
        .unwrap();
        mode(path, 0o755);
    };
    script(&open.join("check.sh"), "insecure-check", 0);
    script(&open.join("up.sh"), "insecure-up", 0);
    script(&directory.join("check.sh"), "secure-check", 1);
    let configuration = directory.join("keepalived.conf");
    let pid_file = directory.join("pulse.pid");
    std::fs::write(
        &configuration,
        format!(
            "global_defs {{
    enable_script_security
    script_user root
}}
virtual_server 192.0.2.1 80 {{
    protocol TCP
    delay_loop 1
    real_server 10.0.9.1 80 {{
        notify_up {open}/up.sh
        MISC_CHECK {{
            misc_path {open}/check.sh
        }}
    }}
    real_server 10.0.9.2 80 {{
        MISC_CHECK {{
            misc_path {secure}
        }}
    }}
}}
",
            open = open.display(),
            secure = directory.join("check.sh").display()
        ),
    )
    .unwrap();
    let log = directory.join("pulse.log");
    let mut daemon = pulse(&namespace, &configuration, &pid_file)
        .arg("-n")
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut client = namespace.run(Client::connect).unwrap().unwrap();
    wait_until("the secure check to fail", || {
        table(&mut client) == ["TCP 192.0.2.1:80: 10.0.9.1:80 w1".to_owned()]
    });
    // A few more check rounds, for an insecure script that would run.
    std::thread::sleep(Duration::from_secs(2));
    signal(&daemon, libc::SIGTERM);
    assert!(daemon.wait().unwrap().success());
    let ran = std::fs::read_to_string(&ran).unwrap_or_default();
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        ran.lines().all(|line| line == "secure-check"),
        "{ran}\n{said}"
    );
    assert!(ran.contains("secure-check"), "{said}");
    for line in [
        format!(
            "Unsafe permissions found for script '{}/check.sh' - disabling.",
            open.display()
        ),
        format!(
            "Disabling misc script '{}/check.sh' due to insecure",
            open.display()
        ),
        format!(
            "Unsafe permissions found for script '{}/up.sh' - disabling.",
            open.display()
        ),
    ] {
        assert!(said.contains(&line), "no {line:?} in:\n{said}");
    }
    let _ = std::fs::remove_dir_all(&directory);
}

/// The kernel refuses destinations in a namespace whose `lo` is down
/// (EINVAL): pulse logs each refusal once, not at every retry, and the
/// retries succeed as soon as the cause is gone.
#[test]
#[ignore = "runs in the lab"]
fn refusals_are_logged_once_and_retried_until_they_succeed() {
    labkit::require_lab();
    let namespace = Namespace::create_with_lo_down("pulse-refused").unwrap();
    let directory = directory("pulse-refused");
    let configuration = directory.join("keepalived.conf");
    std::fs::write(&configuration, CONFIGURATION).unwrap();
    let notifications = Notifications::bind(&directory);
    let log = directory.join("pulse.log");
    let mut daemon = pulse(&namespace, &configuration, &directory.join("pulse.pid"))
        .arg("-n")
        .env("NOTIFY_SOCKET", notifications.path())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let ready = notifications.until_ready();
    assert!(
        ready
            .iter()
            .any(|line| line.starts_with("STATUS=started: ") && line.contains("operations failed")),
        "{ready:?}"
    );
    let mut client = namespace.run(Client::connect).unwrap().unwrap();
    // Three drift passes retry the two destinations.
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(table(&mut client), ["TCP 192.0.2.1:80: ".to_owned()]);
    namespace.ip("link set lo up\n").unwrap();
    wait_until("the retries to succeed", || {
        table(&mut client) == ["TCP 192.0.2.1:80: 10.0.9.1:80 w2, 10.0.9.2:80 w3".to_owned()]
    });
    signal(&daemon, libc::SIGTERM);
    assert!(daemon.wait().unwrap().success());
    let log = std::fs::read_to_string(&log).unwrap();
    let refusals: Vec<&str> = log
        .lines()
        .filter(|line| line.contains(" refused: "))
        .collect();
    assert_eq!(
        refusals.len(),
        2,
        "one line per destination: {refusals:#?}\n{log}"
    );
    assert!(
        refusals
            .iter()
            .all(|line| line.contains("create destination 10.0.9.")),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&directory);
}

/// `ha_suspend`: the checks of a virtual server run only while the
/// director holds its address; without them its real servers keep the
/// state they had (up at start).
#[test]
#[ignore = "runs in the lab"]
fn ha_suspend_runs_checks_only_while_the_virtual_address_is_here() {
    labkit::require_lab();
    let namespace = Namespace::create("pulse-suspend").unwrap();
    namespace
        .ip("link add vip0 type dummy\nlink set vip0 up\n")
        .unwrap();
    let directory = directory("pulse-suspend");
    let configuration = directory.join("keepalived.conf");
    // Nothing listens on 127.0.0.1:9: once checked, the server is down.
    std::fs::write(
        &configuration,
        "virtual_server 192.0.2.1 80 {
    protocol TCP
    delay_loop 1
    ha_suspend
    real_server 127.0.0.1 9 {
        TCP_CHECK { connect_timeout 1\n retry 0 }
    }
}
",
    )
    .unwrap();
    let notifications = Notifications::bind(&directory);
    let mut daemon = pulse(&namespace, &configuration, &directory.join("pulse.pid"))
        .arg("-n")
        .env("NOTIFY_SOCKET", notifications.path())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    notifications.until_ready();
    let mut client = namespace.run(Client::connect).unwrap().unwrap();
    let programmed = ["TCP 192.0.2.1:80: 127.0.0.1:9 w1".to_owned()];
    // Well past warmup + delay_loop + connect_timeout: no check ran.
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(table(&mut client), programmed, "checked while suspended");
    // The address arrives (as a VRRP takeover would add it).
    namespace.ip("addr add 192.0.2.1/32 dev vip0\n").unwrap();
    wait_until("the check to run and take the server out", || {
        table(&mut client) == ["TCP 192.0.2.1:80: ".to_owned()]
    });
    signal(&daemon, libc::SIGTERM);
    assert!(daemon.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(&directory);
}

/// Whether the ip_vs module is loaded.
fn ip_vs_loaded() -> bool {
    std::fs::read_to_string("/proc/modules")
        .unwrap()
        .lines()
        .any(|line| line.starts_with("ip_vs "))
}

/// A VRRP-only keepalived.conf, started as keepalived users start it (no
/// `-P`), runs VRRP and never loads ip_vs on a kernel that has it; where
/// the kernel cannot load it, a configuration with a virtual server is
/// refused with keepalived's line, and VRRP does not take the address
/// meanwhile. Runs first, one at a time (`cargo xtask test`): other tests
/// load ip_vs.
#[test]
#[ignore = "runs in the lab"]
fn first_vrrp_alone_never_loads_ip_vs() {
    labkit::require_lab();
    if ip_vs_loaded() {
        // An earlier first_ test of another binary connected to IPVS; no
        // service uses it yet.
        let status = Command::new("modprobe")
            .args(["-r", "ip_vs"])
            .status()
            .unwrap();
        assert!(status.success(), "cannot unload ip_vs: {status}");
    }
    assert!(!ip_vs_loaded());
    let namespace = Namespace::create("pulse-vrrp-alone").unwrap();
    namespace
        .ip("link add eth0 type veth peer name eth1\nlink set eth0 up\nlink set eth1 up\naddr add 10.9.0.1/24 dev eth0\n")
        .unwrap();
    let directory = directory("pulse-vrrp-alone");
    let configuration = directory.join("keepalived.conf");
    let pid_file = directory.join("pulse.pid");
    let vrrp = "vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    version 3
    advert_int 0.1
    priority 150
    virtual_ipaddress {
        10.9.0.100/24
    }
}
";
    std::fs::write(&configuration, vrrp).unwrap();
    let holds = || {
        let output = namespace
            .command("ip")
            .args(["-o", "addr", "show", "dev", "eth0"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).contains("10.9.0.100/24")
    };
    let log = directory.join("pulse.log");
    let mut child = pulse(&namespace, &configuration, &pid_file)
        .arg("-n")
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::options().append(true).open(&log).unwrap())
        .spawn()
        .unwrap();
    wait_until("pulse becomes master without -P", holds);
    signal(&child, libc::SIGTERM);
    assert!(child.wait().unwrap().success());
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        !ip_vs_loaded(),
        "a VRRP-only configuration loaded ip_vs:\n{said}"
    );
    assert!(!said.contains("IPVS"), "{said}");

    // A virtual server too, and a kernel that cannot load ip_vs (its
    // request for the module fails, as where the module is not installed).
    std::fs::write(
        &configuration,
        format!("{vrrp}virtual_server 10.9.0.100 80 {{\n protocol TCP\n real_server 10.9.0.2 80 {{ }}\n}}\n"),
    )
    .unwrap();
    let saved = std::fs::read_to_string("/proc/sys/kernel/modprobe").unwrap();
    std::fs::write("/proc/sys/kernel/modprobe", "/bin/false").unwrap();
    let output = pulse(&namespace, &configuration, &pid_file)
        .arg("-n")
        .output()
        .unwrap();
    std::fs::write("/proc/sys/kernel/modprobe", saved).unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{said}");
    assert!(
        said.contains("IPVS: Can't initialize ipvs: No such file or directory"),
        "{said}"
    );
    assert!(
        !holds(),
        "VRRP took the address of a pulse that did not start"
    );
    assert!(!ip_vs_loaded());
    std::fs::remove_dir_all(&directory).unwrap();
}

/// Hand edits with Debian's ipvsadm (over generic netlink, through libnl):
/// pulse is told by its nlmon tap and repairs them from that, not from an
/// audit; the device goes with pulse.
#[test]
#[ignore = "runs in the lab"]
fn hand_edits_over_netlink_are_repaired_as_soon_as_pulse_is_told() {
    labkit::require_lab();
    let namespace = Namespace::create("pulse-told").unwrap();
    let directory = directory("pulse-told");
    let configuration = directory.join("keepalived.conf");
    let pid_file = directory.join("pulse.pid");
    let log_path = directory.join("pulse.log");
    std::fs::write(&configuration, CONFIGURATION).unwrap();
    let mut client = namespace.run(Client::connect).unwrap().unwrap();
    let notifications = Notifications::bind(&directory);
    let mut daemon = pulse(&namespace, &configuration, &pid_file)
        .args(["-n", "-D"])
        .env("NOTIFY_SOCKET", notifications.path())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    notifications.until_ready();
    let programmed = table(&mut client);
    let device = || {
        namespace
            .command("ip")
            .args(["link", "show", "pulse-nlmon"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    };
    assert!(device(), "the tap's device while pulse runs");
    let log = || std::fs::read_to_string(&log_path).unwrap();
    let told_lines = || {
        log()
            .lines()
            .filter(|line| line.contains("told: 1 of 1 services another process changed differed"))
            .count()
    };
    let ipvsadm = |arguments: &str| {
        let status = namespace
            .command("ipvsadm")
            .args(arguments.split_whitespace())
            .status()
            .unwrap();
        assert!(status.success(), "ipvsadm {arguments}: {status}");
    };
    // Each edit is repaired; the audit (every second here) could come
    // between an edit and the tap's word, so a few edits of each kind are
    // given the chance to be repaired from the tap.
    for (edit, what) in [
        ("-d -t 192.0.2.1:80 -r 10.0.9.2:80", "a real server deleted"),
        (
            "-e -t 192.0.2.1:80 -r 10.0.9.1:80 -m -w 9",
            "a weight edited",
        ),
    ] {
        let before = told_lines();
        for _ in 0..3 {
            ipvsadm(edit);
            wait_until(&format!("{what}, repaired"), || {
                table(&mut client) == programmed
            });
            if told_lines() > before {
                break;
            }
        }
        assert!(
            told_lines() > before,
            "{what}: never told; the log:\n{}",
            log()
        );
    }
    // A flush is the whole table: an audit at once restores it.
    ipvsadm("-C");
    wait_until("a flush, repaired", || table(&mut client) == programmed);

    // The device removed under pulse: made again, and heard from.
    let removed = namespace
        .command("ip")
        .args(["link", "del", "pulse-nlmon"])
        .status()
        .unwrap();
    assert!(removed.success());
    wait_until("the tap's device, made again", device);
    let before = told_lines();
    for _ in 0..3 {
        ipvsadm("-d -t 192.0.2.1:80 -r 10.0.9.1:80");
        wait_until("a deletion after the device came back, repaired", || {
            table(&mut client) == programmed
        });
        if told_lines() > before {
            break;
        }
    }
    assert!(
        told_lines() > before,
        "not told once the device came back:\n{}",
        log()
    );

    signal(&daemon, libc::SIGTERM);
    assert!(daemon.wait().unwrap().success());
    assert!(
        !device(),
        "the tap's device outlives pulse; the log:\n{}",
        log()
    );
    let _ = std::fs::remove_dir_all(&directory);
}
