//! VRRP failover with the kernel's connection sync daemon, in the lab: two
//! directors run pulse with the same virtual server, one VRRP instance
//! moving the virtual address and the real servers' gateway together, and
//! `lvs_sync_daemon` following it (labkit's `FailoverTopology`).

use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use ipvs::SyncState;
use labkit::lines::{LineConnection, LineResponder};
use labkit::{FailoverTopology, IpvsConnection, ipvs_connections};

use super::traffic::{Pulse, Scratch, connect};

const PORT: u16 = 8080;
/// The instance's VRID, and so the sync daemons' sync id.
const VIRTUAL_ROUTER: u32 = 51;

/// One director's keepalived.conf: the same on both but the priority.
/// Without checks the real servers count as up.
fn configuration(priority: u8) -> String {
    format!(
        "global_defs {{
    lvs_sync_daemon {server_side} VI_1
}}
vrrp_instance VI_1 {{
    interface {client_side}
    virtual_router_id {VIRTUAL_ROUTER}
    version 3
    advert_int 0.5
    priority {priority}
    virtual_ipaddress {{
        {virtual_address}/24 dev {client_side}
        {gateway}/24 dev {server_side}
    }}
}}
virtual_server {virtual_address} {PORT} {{
    protocol TCP
    lvs_sched rr
    lvs_method NAT
    real_server 10.0.2.11 {PORT} {{
    }}
    real_server 10.0.2.12 {PORT} {{
    }}
}}
",
        client_side = FailoverTopology::CLIENT_INTERFACE,
        server_side = FailoverTopology::SERVER_INTERFACE,
        virtual_address = FailoverTopology::VIRTUAL_ADDRESS,
        gateway = FailoverTopology::GATEWAY_ADDRESS,
    )
}

/// Polls `done` every 50 ms until it gives a value; fails after `limit`
/// with `what` and the directors' logs.
fn wait_for<T>(
    what: &str,
    limit: Duration,
    pulses: &[&Pulse],
    mut done: impl FnMut() -> Option<T>,
) -> (T, Duration) {
    let start = Instant::now();
    loop {
        if let Some(value) = done() {
            return (value, start.elapsed());
        }
        if start.elapsed() > limit {
            let logs: Vec<String> = pulses.iter().map(|pulse| pulse.log()).collect();
            panic!(
                "waited {limit:?} for {what}; the logs:\n{}",
                logs.join("\n---\n")
            );
        }
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[ignore = "runs in the lab"]
fn a_long_lived_nat_connection_survives_a_director_failover_with_the_sync_daemon() {
    labkit::require_lab();
    let prefix = "failover";
    let topology = FailoverTopology::build(prefix, 2).expect("topology");
    let _responders: Vec<LineResponder> = topology
        .real_servers
        .iter()
        .map(|host| {
            LineResponder::spawn(
                &host.namespace,
                SocketAddr::new(host.address, PORT),
                &host.name,
            )
            .expect("line responder")
        })
        .collect();
    let [first, second] = &topology.directors[..] else {
        panic!("two directors");
    };
    let scratches = [
        Scratch::new("failover-director1"),
        Scratch::new("failover-director2"),
    ];
    let (master, _) = Pulse::start(
        &first.name,
        &first.namespace,
        &scratches[0],
        &configuration(150),
    );
    let (backup, _) = Pulse::start(
        &second.name,
        &second.namespace,
        &scratches[1],
        &configuration(100),
    );
    let mut first_ipvs = connect(&first.namespace);
    let mut second_ipvs = connect(&second.namespace);
    let daemons = |client: &mut ipvs::Client| -> Vec<(SyncState, u32)> {
        client
            .daemons()
            .expect("sync daemons")
            .into_iter()
            .map(|daemon| (daemon.state, daemon.sync_id))
            .collect()
    };
    // The master's sync daemon sends only the connections it sees after it
    // starts, and the backup's receives only once it runs.
    let (_, took) = wait_for(
        "director1 master and director2 backup, with their sync daemons",
        Duration::from_secs(60),
        &[&master, &backup],
        || {
            (master.log().contains("(VI_1) Entering MASTER STATE")
                && daemons(&mut first_ipvs) == [(SyncState::Master, VIRTUAL_ROUTER)]
                && daemons(&mut second_ipvs) == [(SyncState::Backup, VIRTUAL_ROUTER)])
            .then_some(())
        },
    );
    eprintln!("{prefix}: director1 master, director2 backup, sync daemons running after {took:?}");
    assert!(
        !backup.log().contains("Entering MASTER STATE"),
        "director2 was master too:\n{}",
        backup.log()
    );

    let virtual_address = FailoverTopology::virtual_address(PORT);
    let mut connection =
        LineConnection::open(&topology.client, virtual_address).expect("a connection");
    let client = connection.local_address().expect("local address");
    let server = connection
        .exchange("before the failover")
        .expect("an answer");
    assert_eq!(
        connection.exchange("again").expect("a second answer"),
        server
    );
    let server_address = topology
        .real_servers
        .iter()
        .find(|host| host.name == server)
        .map(|host| SocketAddr::new(host.address, PORT))
        .unwrap_or_else(|| panic!("an answer from an unknown server {server}"));
    let expected = IpvsConnection {
        protocol: "TCP".into(),
        client,
        virtual_address,
        destination: server_address,
        state: "ESTABLISHED".into(),
    };
    assert!(
        ipvs_connections(&first.namespace)
            .expect("director1's connections")
            .contains(&expected),
        "director1 forwards the connection"
    );
    // director2 never saw a packet of it (the client's neighbour entry for
    // the virtual address is director1's): the entry can only come from
    // director1's sync daemon.
    assert_eq!(
        topology
            .client_neighbour(FailoverTopology::VIRTUAL_ADDRESS)
            .expect("client neighbours"),
        Some(first.hardware_address.clone())
    );
    let (_, took) = wait_for(
        "director2 to receive the connection from director1's sync daemon",
        Duration::from_secs(30),
        &[&master, &backup],
        || {
            ipvs_connections(&second.namespace)
                .expect("director2's connections")
                .contains(&expected)
                .then_some(())
        },
    );
    eprintln!(
        "{prefix}: director2 had the connection {client} -> {server} {took:?} after it was made"
    );

    // director1 dies: pulse killed (kill -9 cleans nothing up: the
    // addresses, the table and its sync daemon stay) and its links cut.
    master.kill();
    let killed = Instant::now();
    topology.cut(0).expect("director1's links cut");
    let (_, took) = wait_for(
        "the client's neighbour entry for the virtual address to name director2",
        Duration::from_secs(30),
        &[&backup],
        || {
            (topology
                .client_neighbour(FailoverTopology::VIRTUAL_ADDRESS)
                .expect("client neighbours")
                == Some(second.hardware_address.clone()))
            .then_some(())
        },
    );
    eprintln!("{prefix}: the client's ARP entry names director2 {took:?} after the cut");
    assert!(
        backup.log().contains("(VI_1) Entering MASTER STATE"),
        "{}",
        backup.log()
    );
    let answer = connection
        .exchange("after the failover")
        .expect("the connection made through director1 works through director2");
    eprintln!(
        "{prefix}: the connection answered by {answer} {:?} after the kill",
        killed.elapsed()
    );
    assert_eq!(answer, server, "the same real server");
    assert!(
        ipvs_connections(&second.namespace)
            .expect("director2's connections")
            .contains(&expected),
        "director2 forwards it, established"
    );
    // New connections go through director2 too.
    let mut fresh = LineConnection::open(&topology.client, virtual_address).expect("a new one");
    let fresh_server = fresh
        .exchange("new")
        .expect("an answer to a new connection");
    assert!(
        topology
            .real_servers
            .iter()
            .any(|host| host.name == fresh_server),
        "{fresh_server}"
    );
    drop(backup);
}
