//! Several active Muxes behind an ECMP router, in the lab (issue 21): each
//! Mux announces the VIPs it can serve by BGP (BIRD beside it), the edge
//! router merges their equal paths and spreads flows over them by a hash
//! of addresses and ports, and because every Mux's `mh` table is the same,
//! a flow that the router moves to another Mux reaches the same DIP, whose
//! host holds the flow's translation: no connection breaks when a Mux dies,
//! is cut off, is added or stops.
//!
//! The client holds 50 long-lived connections to VIP A (HTTP keep-alive,
//! asked in turn all along) and opens a new connection every 200 ms. Each
//! step says what happened to both, and the figures a benchmark quotes:
//! connections lost per Mux failure, the router's convergence, the
//! disruption a DIP's removal causes, and a policy write's time to the
//! slowest Mux.

use std::collections::BTreeMap;
use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use labkit::etcd::Etcd;
use labkit::http::{Connection, Session};
use labkit::sdn::{Bgp, Daemon, Mux, STORE_ADDRESS, Topology, VIP_A, VIP_B, policy, router_paths};
use pulse::mux::maglev::lookup::{Entry, Lookup, Options};

use fulcrum_cluster::store::{Store, endpoints};

use super::sdn::{AGENTS_PATIENCE, PULSE, agent_binary, apply, nft, runtime, wait_until};

/// Long-lived connections the client holds.
const SESSIONS: usize = 50;

/// The client's traffic while the Muxes change: each session asked again
/// and again, and new connections opened all along, each outcome recorded.
struct Traffic {
    stop: Arc<AtomicBool>,
    state: Arc<Mutex<State>>,
    threads: Vec<JoinHandle<()>>,
}

#[derive(Default)]
struct State {
    sessions: Vec<SessionState>,
    /// New connections: when each was opened, and who answered or why not.
    opened: Vec<(Instant, Result<String, String>)>,
}

struct SessionState {
    client: SocketAddr,
    /// The DIP that answered its first request (the responder's name).
    dip: String,
    last_answer: Instant,
    /// When and why it broke: an error, or another DIP answering.
    broken: Option<(Instant, String)>,
}

impl Traffic {
    /// Opens the sessions from the client to `vip`:80, asks each once, and
    /// starts asking each again every 500 ms, and opening a new connection
    /// every 200 ms, until stopped.
    fn start(topology: &Topology, vip: Ipv4Addr) -> Traffic {
        let address = SocketAddr::new(IpAddr::V4(vip), 80);
        let mut sessions = Vec::new();
        let mut states = Vec::new();
        for _ in 0..SESSIONS {
            let mut session = Session::open(&topology.client, address).unwrap();
            let dip = session.ask(Duration::from_secs(10)).unwrap();
            states.push(SessionState {
                client: session.local_address(),
                dip,
                last_answer: Instant::now(),
                broken: None,
            });
            sessions.push(session);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let state = Arc::new(Mutex::new(State {
            sessions: states,
            opened: Vec::new(),
        }));
        // A thread per session: a session whose DIP is gone waits out its
        // timeout without holding up the others.
        let mut threads: Vec<JoinHandle<()>> = sessions
            .into_iter()
            .enumerate()
            .map(|(index, mut session)| {
                let stop = stop.clone();
                let state = state.clone();
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        // Long enough for TCP's retransmissions to cross a
                        // BGP hold time (3 s) and the router's update.
                        let answer = session.ask(Duration::from_secs(30));
                        let mut state = state.lock().unwrap();
                        let entry = &mut state.sessions[index];
                        match answer {
                            Ok(name) if name == entry.dip => entry.last_answer = Instant::now(),
                            Ok(name) => {
                                entry.broken =
                                    Some((Instant::now(), format!("answered by {name}")));
                                return;
                            }
                            Err(error) => {
                                entry.broken = Some((Instant::now(), format!("{error:#}")));
                                return;
                            }
                        }
                        drop(state);
                        std::thread::sleep(Duration::from_millis(500));
                    }
                })
            })
            .collect();
        let opening = {
            let stop = stop.clone();
            let state = state.clone();
            let client = File::open(fulcrum_netns::path(topology.client.name())).unwrap();
            std::thread::spawn(move || {
                fulcrum_netns::enter(&client).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    let opened = Instant::now();
                    let outcome = Connection::open_here(address)
                        .and_then(Connection::get)
                        .map_err(|error| format!("{error:#}"));
                    state.lock().unwrap().opened.push((opened, outcome));
                    std::thread::sleep(Duration::from_millis(200));
                }
            })
        };
        threads.push(opening);
        Traffic {
            stop,
            state,
            threads,
        }
    }

    /// The sessions' clients, by the DIP that answers each.
    fn clients(&self) -> Vec<(SocketAddr, String)> {
        let state = self.state.lock().unwrap();
        state
            .sessions
            .iter()
            .map(|session| (session.client, session.dip.clone()))
            .collect()
    }

    /// Waits until every live session has answered after `since` (the
    /// traffic has crossed what happened then), or broke.
    fn crossed(&self, what: &str, since: Instant) {
        wait_until(what, Duration::from_secs(60), || {
            self.state
                .lock()
                .unwrap()
                .sessions
                .iter()
                .all(|session| session.broken.is_some() || session.last_answer > since)
        });
    }

    /// The sessions that broke since `since`: client port, DIP, why.
    fn broken_since(&self, since: Instant) -> Vec<String> {
        let state = self.state.lock().unwrap();
        state
            .sessions
            .iter()
            .filter_map(|session| {
                let (when, why) = session.broken.as_ref()?;
                (*when >= since).then(|| format!("{} on {}: {why}", session.client, session.dip))
            })
            .collect()
    }

    /// The sessions still alive.
    fn alive(&self) -> usize {
        let state = self.state.lock().unwrap();
        state
            .sessions
            .iter()
            .filter(|session| session.broken.is_none())
            .count()
    }

    /// New connections opened since `since`: how many, and those that
    /// failed (why).
    fn opened_since(&self, since: Instant) -> (usize, Vec<String>) {
        let state = self.state.lock().unwrap();
        let since: Vec<_> = state
            .opened
            .iter()
            .filter(|(when, _)| *when >= since)
            .collect();
        let failed = since
            .iter()
            .filter_map(|(_, outcome)| outcome.as_ref().err().cloned())
            .collect();
        (since.len(), failed)
    }

    /// Waits until `count` new connections were opened after `since`.
    fn open_after(&self, since: Instant, count: usize) {
        wait_until("new connections", Duration::from_secs(60), || {
            self.opened_since(since).0 >= count
        });
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            thread.join().unwrap();
        }
    }
}

impl Drop for Traffic {
    /// A test that failed midway leaves no thread asking or connecting for
    /// the rest of the binary's tests (each ends at its next turn).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What a Mux's failure cost the client.
struct Cost {
    /// The sessions that broke since the failure.
    lost: Vec<String>,
    /// New connections opened once the router had converged, and those of
    /// them that failed.
    opened: usize,
    failed: Vec<String>,
    /// New connections that failed between the failure and convergence.
    failed_during: usize,
}

impl Cost {
    /// What the failure at `event` cost, the router having converged
    /// `converged` after it: measured once every session has been asked
    /// since, and five new connections opened. Fails the test beyond one
    /// session lost, or any new connection failed after convergence.
    fn of(traffic: &Traffic, what: &str, event: Instant, converged: Duration) -> Cost {
        traffic.crossed(&format!("the sessions after {what}"), event + converged);
        traffic.open_after(event + converged, 5);
        let (opened, failed) = traffic.opened_since(event + converged);
        let cost = Cost {
            lost: traffic.broken_since(event),
            opened,
            failed,
            failed_during: traffic.opened_since(event).1.len(),
        };
        assert!(cost.lost.len() <= 1, "{what}: {:?}", cost.lost);
        assert!(cost.failed.is_empty(), "{what}: {:?}", cost.failed);
        cost
    }

    /// "N of 50 established connections lost [...]; new connections...".
    fn said(&self) -> String {
        format!(
            "{} of {SESSIONS} established connections lost {:?}; new connections after \
             convergence: {} of {} failed (during it: {})",
            self.lost.len(),
            self.lost,
            self.failed.len(),
            self.opened,
            self.failed_during
        )
    }
}

/// The DIP address in a responder's name ("tenant-a 10.1.0.5").
fn dip_of(name: &str) -> IpAddr {
    name.rsplit(' ').next().unwrap().parse().unwrap()
}

/// VIP A's destinations on `mux` in the kernel's list order, as the `mh`
/// model reads them (all up here: the last weight is the weight).
fn kernel_entries(mux: &Mux) -> Vec<Entry> {
    mux.machine
        .run_in_named("fulcrum-vni100", || {
            let mut client = ipvs::Client::connect().unwrap();
            let service = client
                .services()
                .unwrap()
                .into_iter()
                .find(|service| service.key.to_string().contains("203.0.113.10:80"))
                .unwrap();
            client
                .destinations(&service.key)
                .unwrap()
                .iter()
                .map(|destination| Entry {
                    address: destination.socket_address(),
                    weight: destination.weight,
                    last_weight: destination.weight,
                })
                .collect::<Vec<Entry>>()
        })
        .unwrap_or_else(|| panic!("no tenant-a namespace on Mux {}", mux.number))
}

/// Which of the `running` Muxes hold an IPVS connection of tenant-a for
/// each of `clients` (their sloppy TCP makes one for a flow's first packet
/// through them, whatever it is).
fn carried_by(running: &[&Mux], clients: &[(SocketAddr, String)]) -> BTreeMap<u32, usize> {
    running
        .iter()
        .map(|mux| {
            let connections = mux.connections(100);
            let count = clients
                .iter()
                .filter(|(client, _)| connections.iter().any(|entry| entry.client == *client))
                .count();
            (mux.number, count)
        })
        .collect()
}

/// Writes `text` as the store's policy from this process, as `pulse
/// --apply` writes it (one transaction raising the policy's revision) but
/// without starting it: a debug pulse is 200 MB, which the guest reads
/// again over 9p at each start (seconds under emulation), and what is
/// timed is the write. Returns how long the transaction took, and when it
/// returned (the store had committed it).
fn write_policy(etcd: &Etcd, text: &str) -> (Duration, Instant) {
    let loaded = fulcrum_config::load_str("policy.conf", text, &Default::default());
    let policy = fulcrum_cluster::policy::of(&loaded.config).unwrap();
    runtime().block_on(async {
        let mut store = Store::connect(&endpoints(&etcd.urls()), Duration::from_secs(5))
            .await
            .unwrap();
        let started = Instant::now();
        let written = store.apply(&policy).await.unwrap();
        assert!(written.put + written.deleted > 0, "the policy changed");
        (started.elapsed(), Instant::now())
    })
}

/// `pulse --cluster URLS ARGUMENTS...`: its exit code and what it printed.
fn cluster_command(etcd: &Etcd, arguments: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(PULSE)
        .arg(format!("--cluster={}", etcd.urls()))
        .args(arguments)
        .output()
        .unwrap();
    (
        output.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

fn logs(muxes: &BTreeMap<u32, Daemon>) -> String {
    muxes
        .iter()
        .map(|(number, daemon)| format!("--- mux {number}:\n{}", daemon.log()))
        .collect()
}

#[test]
#[ignore = "runs in the lab"]
fn muxes_behind_ecmp_keep_connections_when_one_dies_is_cut_added_or_stopped() {
    labkit::require_lab();
    let _exclusive = labkit::sdn::exclusive();
    let topology = Topology::build(4).unwrap();
    let directory = std::env::temp_dir().join("fulcrum-sdn-ecmp");
    std::fs::create_dir_all(&directory).unwrap();
    let etcd = Etcd::start_on(STORE_ADDRESS, 1).unwrap();
    let mut responders = topology.responders().unwrap();
    // `mh` on both VIPs: the same DIP for a flow from every Mux.
    let mh_policy = policy("mh");
    apply(&etcd, &directory, &mh_policy);
    let agents: Vec<Daemon> = (1..=2)
        .map(|number| Daemon::agent(&topology, &agent_binary(), number, &directory, &etcd).unwrap())
        .collect();
    let mut muxes: BTreeMap<u32, Daemon> = (0..3)
        .map(|index| {
            let mux = &topology.muxes[index];
            (
                mux.number,
                Daemon::mux(mux, Path::new(PULSE), &directory, &etcd).unwrap(),
            )
        })
        .collect();
    let full_a =
        ["TCP 203.0.113.10:80: 10.1.0.5:8080 w1, 10.1.0.6:8080 w1, 10.1.0.7:8080 w1".to_owned()];
    let started = Instant::now();
    while !topology.muxes[..3]
        .iter()
        .all(|mux| mux.tenant_table(100) == full_a)
    {
        assert!(
            started.elapsed() < AGENTS_PATIENCE * 3,
            "tenant-a's tables {:?}\n{}\nagent 1: {}\nagent 2: {}",
            topology.muxes[..3]
                .iter()
                .map(|mux| mux.tenant_table(100))
                .collect::<Vec<_>>(),
            logs(&muxes),
            agents[0].log(),
            agents[1].log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    eprintln!("ecmp step: bgp");
    let vteps = |numbers: &[u32]| -> Vec<Ipv4Addr> {
        let mut vteps: Vec<Ipv4Addr> = numbers
            .iter()
            .map(|number| topology.muxes[*number as usize - 1].vtep())
            .collect();
        vteps.sort();
        vteps
    };
    let mut bgp = Bgp::start(&topology, &directory, &[VIP_A, VIP_B], 3).unwrap();
    wait_until("three paths to each VIP", Duration::from_secs(30), || {
        router_paths(&topology, VIP_A).unwrap() == vteps(&[1, 2, 3])
            && router_paths(&topology, VIP_B).unwrap() == vteps(&[1, 2, 3])
    });

    eprintln!("ecmp step: spread");
    let traffic = Traffic::start(&topology, VIP_A);
    let clients = traffic.clients();
    std::thread::sleep(Duration::from_secs(1));
    let running: Vec<&Mux> = topology.muxes[..3].iter().collect();
    let carried = carried_by(&running, &clients);
    println!(
        "{SESSIONS} long-lived connections over three Muxes, by each Mux's IPVS connections: {carried:?}"
    );
    for (number, count) in &carried {
        assert!(*count > 0, "Mux {number} carries none of them: {carried:?}");
    }
    // Every Mux holds VIP A's destinations in one order (the policy's),
    // so one `mh` table: the model of the kernel's `mh` (pulse's
    // lookup, which `--which-dip` answers with) chooses, from any Mux's
    // table, the DIP the kernel chose for each connection.
    let tables: Vec<Vec<Entry>> = running.iter().map(|mux| kernel_entries(mux)).collect();
    assert!(tables.iter().all(|table| *table == tables[0]), "{tables:?}");
    let model = Lookup::new(tables[0].clone());
    let options = Options {
        port: true,
        fallback: true,
    };
    for (client, dip) in &clients {
        let chosen = model.choose(*client, options).map(|chosen| chosen.ip());
        assert_eq!(
            chosen,
            Some(dip_of(dip)),
            "the model's choice for {client} (the kernel's list {:?})",
            tables[0]
        );
    }
    let spread: BTreeMap<&str, usize> =
        clients
            .iter()
            .fold(BTreeMap::new(), |mut spread, (_, dip)| {
                *spread.entry(dip.as_str()).or_default() += 1;
                spread
            });
    println!(
        "the kernel's `mh` and pulse's model of it chose the same DIP for {} of {} connections \
         (by DIP: {spread:?})",
        clients.len(),
        clients.len()
    );

    // What the store says: each VIP announced by the three Muxes, and for
    // a session's client, every Mux choosing the DIP that answers it
    // (computed from each Mux's published table).
    let (code, status) = cluster_command(&etcd, &["--status"]);
    assert_eq!(code, Some(0), "{status}");
    let ids = |numbers: &[u32]| {
        vteps(numbers)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    assert!(
        status.contains(&format!(
            "203.0.113.10:80/tcp  tenant-a  mh  announced by {}",
            ids(&[1, 2, 3])
        )),
        "{status}"
    );
    let (client, dip) = &clients[0];
    let (code, which) = cluster_command(
        &etcd,
        &[
            "--which-dip",
            &client.to_string(),
            "--vip",
            "203.0.113.10:80/tcp",
        ],
    );
    assert_eq!(code, Some(0), "{which}");
    assert!(
        which.contains(&format!("  every Mux chooses {}:8080", dip_of(dip))),
        "{which}"
    );
    println!("pulse --which-dip {client} --vip 203.0.113.10:80/tcp:\n{which}");

    let mut figures = Vec::new();

    eprintln!("ecmp step: kill -9");
    let event = Instant::now();
    muxes.remove(&3).unwrap().kill();
    bgp.kill_mux(3);
    let converged = wait_until(
        "the router without Mux 3's path",
        Duration::from_secs(20),
        || router_paths(&topology, VIP_A).unwrap() == vteps(&[1, 2]),
    );
    let cost = Cost::of(&traffic, "Mux 3's death", event, converged);
    println!(
        "Mux 3 and its BIRD killed (SIGKILL): the router without its path {:.3} s after; {}",
        converged.as_secs_f64(),
        cost.said()
    );
    figures.push(format!(
        "kill -9 of a Mux: {} of {SESSIONS} connections lost, router converged in {:.3} s",
        cost.lost.len(),
        converged.as_secs_f64()
    ));

    eprintln!("ecmp step: cut");
    // Mux 2 cut off at the router, its link up: every packet to or from it
    // dropped, forwarded ones too. Nothing closes its BGP session: the
    // router drops its path when the hold timer (3 s) expires, and the
    // flows it sent there meanwhile are retransmitted to Mux 1.
    let router = topology.namespace("sdn-router");
    nft(
        router,
        "table inet ecmpcut {
    chain input {
        type filter hook input priority 0;
        iifname \"mux2\" drop
    }
    chain output {
        type filter hook output priority 0;
        oifname \"mux2\" drop
    }
    chain forward {
        type filter hook forward priority 0;
        iifname \"mux2\" drop
        oifname \"mux2\" drop
    }
}
",
    );
    let event = Instant::now();
    let converged = wait_until(
        "the router without Mux 2's path",
        Duration::from_secs(20),
        || router_paths(&topology, VIP_A).unwrap() == vteps(&[1]),
    );
    let cost = Cost::of(&traffic, "Mux 2's cut", event, converged);
    println!(
        "Mux 2 cut off (its link up): the router without its path {:.3} s after (hold time \
         3 s); {}",
        converged.as_secs_f64(),
        cost.said()
    );
    figures.push(format!(
        "a Mux cut off: {} of {SESSIONS} connections lost, router converged in {:.3} s",
        cost.lost.len(),
        converged.as_secs_f64()
    ));
    assert!(
        router
            .command("nft")
            .args(["delete", "table", "inet", "ecmpcut"])
            .status()
            .unwrap()
            .success()
    );
    let event = Instant::now();
    let back = wait_until("Mux 2's path back", Duration::from_secs(30), || {
        router_paths(&topology, VIP_A).unwrap() == vteps(&[1, 2])
    });
    traffic.crossed("the sessions after Mux 2's return", event + back);
    let lost = traffic.broken_since(event);
    println!(
        "Mux 2 let through again: its path back {:.2} s after; {} connections lost",
        back.as_secs_f64(),
        lost.len()
    );
    assert!(lost.is_empty(), "{lost:?}");

    eprintln!("ecmp step: a fourth Mux");
    let event = Instant::now();
    let fourth = &topology.muxes[3];
    muxes.insert(
        4,
        Daemon::mux(fourth, Path::new(PULSE), &directory, &etcd).unwrap(),
    );
    wait_until("Mux 4's tables", AGENTS_PATIENCE, || {
        fourth.tenant_table(100) == full_a
    });
    bgp.start_mux(fourth).unwrap();
    wait_until("Mux 4's path", Duration::from_secs(30), || {
        router_paths(&topology, VIP_A).unwrap() == vteps(&[1, 2, 4])
    });
    let added = event.elapsed();
    traffic.crossed("the sessions after Mux 4's arrival", event + added);
    let lost = traffic.broken_since(event);
    let carried = carried_by(&[&topology.muxes[0], &topology.muxes[1], fourth], &clients);
    println!(
        "a fourth Mux added: the router routing by it {:.2} s after its start; {} connections \
         lost; the sessions by Mux: {carried:?}",
        added.as_secs_f64(),
        lost.len()
    );
    assert!(lost.is_empty(), "{lost:?}");
    assert_eq!(
        kernel_entries(fourth),
        tables[0],
        "Mux 4's table is the others'"
    );
    // The router sends it a share of the flows (its IPVS counts their
    // packets, up to 2 s late).
    let forwarding = labkit::sdn::wait_until("Mux 4 forwarding", Duration::from_secs(30), || {
        fourth.forwarded(100) > 0
    });
    assert!(
        forwarding.is_ok(),
        "Mux 4 forwards nothing: the router's paths {:?}, its connections {:?}\n{}",
        router_paths(&topology, VIP_A).unwrap(),
        fourth.connections(100),
        logs(&muxes)
    );
    let sessions_there = carried_by(&[fourth], &clients)[&4];
    println!(
        "Mux 4 forwarding {:.2} s after the router's route had it: {} IPVS connections there, \
         {sessions_there} of them established sessions the router moved to it",
        forwarding.unwrap_or_default().as_secs_f64(),
        fourth.connections(100).len()
    );

    eprintln!("ecmp step: graceful stop");
    // SIGTERM: Mux 1 withdraws its VIPs, forwards what still reaches it
    // for withdraw_delay (2 s), then removes its tenants.
    let event = Instant::now();
    let first = muxes.remove(&1).unwrap();
    let log = first.log();
    assert!(first.stop().unwrap().success(), "{log}");
    let stopped = event.elapsed();
    assert_eq!(router_paths(&topology, VIP_A).unwrap(), vteps(&[2, 4]));
    traffic.crossed("the sessions after Mux 1's stop", Instant::now());
    traffic.open_after(Instant::now(), 5);
    let lost = traffic.broken_since(event);
    let (opened, failed) = traffic.opened_since(event);
    println!(
        "Mux 1 stopped cleanly (SIGTERM, {:.2} s to exit): {} connections lost; new connections \
         since: {} of {opened} failed",
        stopped.as_secs_f64(),
        lost.len(),
        failed.len()
    );
    assert!(lost.is_empty(), "{lost:?}");
    assert!(failed.is_empty(), "{failed:?}");
    figures.push(format!(
        "a Mux's clean stop: {} connections lost, {} new connections failed",
        lost.len(),
        failed.len()
    ));

    eprintln!("ecmp step: a DIP removed");
    // 10.1.0.6 out of VIP A's policy: its own connections go; the others'
    // stay where they are. The share of other flows whose DIP a new
    // connection would change is Maglev's disruption (about 1/N of the
    // table's rows move).
    let running: Vec<&Mux> = vec![&topology.muxes[1], fourth];
    let before = Lookup::new(kernel_entries(running[0]));
    let (transaction, committed) = write_policy(
        &etcd,
        &mh_policy.replace(
            "    real_server 10.1.0.6 8080 {
        TCP_CHECK {
            connect_timeout 1
            retry 0
            delay_loop 1
        }
    }
",
            "",
        ),
    );
    let event = committed;
    let without = ["TCP 203.0.113.10:80: 10.1.0.5:8080 w1, 10.1.0.7:8080 w1".to_owned()];
    // When each Mux's table showed it, from the store's acknowledgement.
    let mut each = Vec::new();
    let mut pending: Vec<&Mux> = running.clone();
    while !pending.is_empty() {
        assert!(
            event.elapsed() < Duration::from_secs(60),
            "{}",
            logs(&muxes)
        );
        pending.retain(|mux| {
            if mux.tenant_table(100) == without {
                each.push((mux.number, event.elapsed()));
                false
            } else {
                true
            }
        });
        std::thread::sleep(Duration::from_millis(1));
    }

    let slowest = each.iter().map(|(_, took)| *took).max().unwrap();
    let fastest = each.iter().map(|(_, took)| *took).min().unwrap();
    traffic.crossed("the sessions after the DIP's removal", Instant::now());
    let lost = traffic.broken_since(event);
    let removed_own = clients
        .iter()
        .filter(|(_, dip)| dip.ends_with(" 10.1.0.6"))
        .count();
    let others_lost: Vec<&String> = lost
        .iter()
        .filter(|line| !line.contains(" 10.1.0.6:"))
        .collect();
    let after = Lookup::new(kernel_entries(running[0]));
    // Maglev's disruption: of the table's rows that were the other DIPs',
    // the share whose DIP changed (a flow's row is a hash of its client's
    // address plus port, so counting rows, not a grid of sample flows,
    // which the sum folds onto a few hundred rows).
    let removed = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 1, 0, 6)), 8080);
    let (mut others, mut moved) = (0u32, 0u32);
    for (was, is) in before.rows().zip(after.rows()) {
        if was != Some(removed) {
            others += 1;
            moved += u32::from(was != is);
        }
    }
    assert_eq!(
        others as usize,
        4093 - before.rows().filter(|row| *row == Some(removed)).count()
    );
    let fraction = f64::from(moved) / f64::from(others);
    println!(
        "10.1.0.6 removed from VIP A: the policy's transaction took {:.1} ms (etcd's commit); \
         every Mux forwarding by it {:.1} ms after the store acknowledged it ({each:?}); of its \
         own {removed_own} connections {} \
         ended, of the other {} none should: {} did; of the other DIPs' {others} rows of \
         Maglev's table, {moved} ({:.2}%) changed DIP (the model over a Mux's kernel table \
         before and after)",
        transaction.as_secs_f64() * 1000.0,
        slowest.as_secs_f64() * 1000.0,
        lost.len() - others_lost.len(),
        SESSIONS - removed_own,
        others_lost.len(),
        fraction * 100.0
    );
    assert!(others_lost.is_empty(), "{others_lost:?}");
    // Where a Mux's part goes: its own log says how long applying took
    // (from its reading of the store to the kernel's acknowledgement); the
    // rest is the watch's delivery and the store's reading.
    for number in [2, 4] {
        let log = muxes[&number].log();
        let applied = log
            .lines()
            .rfind(|line| line.contains("applied (store revision"))
            .unwrap_or("no application logged");
        println!("Mux {number}: {}", applied.trim());
    }
    figures.push(format!(
        "a DIP removed (1 of 3): {:.2}% of the other DIPs' rows remapped (Maglev's anchor: \
         near the minimum, the removed DIP's 1/N of the table, and a small share of the rest)",
        fraction * 100.0
    ));
    figures.push(format!(
        "a policy write: etcd's commit {:.1} ms, then the slowest of {} Muxes forwarding by it \
         {:.1} ms after (Ananta: tens of milliseconds for a VIP's configuration); the Muxes' \
         tables differed for {:.1} ms, the first Mux to the last",
        transaction.as_secs_f64() * 1000.0,
        running.len(),
        slowest.as_secs_f64() * 1000.0,
        (slowest - fastest).as_secs_f64() * 1000.0
    ));

    eprintln!("ecmp step: a VIP's every DIP down");
    // VIP B's only DIP stops answering its probes: every Mux withdraws VIP
    // B, and the router holds no route to it; back, announced everywhere.
    responders[3] = None;
    let withdrawn = wait_until(
        "VIP B withdrawn everywhere",
        Duration::from_secs(30),
        || router_paths(&topology, VIP_B).unwrap().is_empty(),
    );
    assert_eq!(router_paths(&topology, VIP_A).unwrap(), vteps(&[2, 4]));
    let (_, status) = cluster_command(&etcd, &["--status"]);
    assert!(
        status.contains("203.0.113.20:80/tcp  tenant-b  mh  announced by no Mux"),
        "{status}"
    );
    responders[3] = Some(topology.responder("sdn-b5", "tenant-b 10.1.0.5").unwrap());
    let back = wait_until("VIP B announced again", Duration::from_secs(30), || {
        router_paths(&topology, VIP_B).unwrap() == vteps(&[2, 4])
    });
    println!(
        "VIP B's only DIP down: no route at the router {:.2} s after its service stopped; back \
         on both Muxes' paths {:.2} s after it returned",
        withdrawn.as_secs_f64(),
        back.as_secs_f64()
    );

    let alive = traffic.alive();
    traffic.stop();
    println!(
        "of the {SESSIONS} long-lived connections, {alive} answered to the end ({removed_own} \
         were on the removed DIP)"
    );
    println!("scale-out figures of this run (software emulation):");
    for figure in &figures {
        println!("  {figure}");
    }
    drop(bgp);
    for (_, mux) in muxes {
        let log = mux.log();
        assert!(mux.stop().unwrap().success(), "{log}");
    }
    for agent in agents {
        let log = agent.log();
        assert!(agent.stop().unwrap().success(), "{log}");
    }
}
