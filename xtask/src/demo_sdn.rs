//! `cargo xtask demo sdn`: the SDN mode's act, a cloud load balancer in
//! the shape of Azure's Software Load Balancer, in a real kernel.
//!
//! In the guest (labkit::sdn's topology): a client behind an edge router;
//! three Muxes, two hosts and the cluster store (etcd, one member) each on
//! a subnet of its own. Two tenants use the same DIP address, 10.1.0.5,
//! each behind its own VIP (`mh`: every Mux chooses the same DIP for a
//! flow). The policy is written to the store with `pulse --apply`; the
//! Muxes forward each VIP into its tenant's VXLAN overlay, the hosts'
//! agents translate VIP:80 to DIP:8080 and send the replies straight to
//! the client. A capture on the first Mux's underlay link shows the VNI of
//! each request, and no reply. A DIP's service stops: its agent's probe
//! takes it out of the rotation; it comes back. Then BGP: each Mux's BIRD
//! announces the VIPs to the router's, which spreads flows over the three;
//! one Mux is killed, the router's route shows the two left, and the
//! established connections keep answering from their DIPs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use labkit::etcd::Etcd;
use labkit::http::Session;
use labkit::sdn::{Bgp, Daemon, STORE_ADDRESS, Topology, VIP_A, VIP_B, router_paths, wait_until};

/// Where the act keeps its files in the guest (its tmpfs).
const DIRECTORY: &str = "/run/fulcrum-demo-sdn";

/// In the guest: the act, with the binaries at `pulse` and `agent`. Fails
/// unless every step shows what it should.
pub fn run_in_guest(pulse: &Path, agent: &Path) -> Result<()> {
    let topology = Topology::build(3)?;
    let vteps: Vec<String> = topology
        .muxes
        .iter()
        .map(|mux| mux.vtep().to_string())
        .collect();
    println!(
        "\nThe SDN act. Building a routed underlay: a client and an edge router; three Muxes \
         ({}), host1 (172.30.2.2), host2 (172.30.3.2) and the cluster store ({STORE_ADDRESS}) \
         each on a subnet of its own.",
        vteps.join(", ")
    );
    println!(
        "  host1 holds tenant-a's DIPs 10.1.0.5 and 10.1.0.6; host2 tenant-a's 10.1.0.7 and \
         tenant-b's 10.1.0.5: the same address in two tenants. Each DIP serves port 8080 and \
         answers with its name."
    );
    let mut responders = topology.responders()?;
    let directory = PathBuf::from(DIRECTORY);
    std::fs::create_dir_all(&directory)?;
    let etcd = Etcd::start_on(STORE_ADDRESS, 1)?;
    println!("  etcd, one member: {}", etcd.urls());

    println!(
        "\nThe Muxes: pulse -f mux.conf --cluster=URLS on each, its file says only where it is \
         (the first's):"
    );
    println!("    mux {{\n        vtep {}\n    }}", vteps[0]);
    let mut muxes = topology
        .muxes
        .iter()
        .map(|mux| Daemon::mux(mux, pulse, &directory, &etcd))
        .collect::<Result<Vec<Daemon>>>()?;
    let policy = directory.join("policy.conf");
    let text = labkit::sdn::policy("mh");
    std::fs::write(&policy, &text)?;
    println!(
        "\nThe policy, in keepalived.conf's syntax (the real servers are DIPs of the network, \
         their port the backend port; mh, Maglev hashing, so that every Mux chooses the same \
         DIP for a flow):\n"
    );
    for line in text.lines() {
        println!("    {line}");
    }
    let applied = std::process::Command::new(pulse)
        .arg(format!("--cluster={}", etcd.urls()))
        .arg("--apply")
        .arg(&policy)
        .output()?;
    if !applied.status.success() {
        bail!(
            "pulse --apply failed: {}",
            String::from_utf8_lossy(&applied.stderr)
        );
    }
    println!(
        "\npulse --cluster=URLS --apply policy.conf: {}",
        String::from_utf8_lossy(&applied.stdout).trim()
    );

    println!(
        "\nThe host agents: fulcrum-agent -f agent.conf --cluster=URLS on each host, with \
         the segments where the DIPs attach (host2's):"
    );
    for line in labkit::sdn::agent_configuration(2).lines() {
        println!("    {line}");
    }
    let agents = [
        Daemon::agent(&topology, agent, 1, &directory, &etcd)?,
        Daemon::agent(&topology, agent, 2, &directory, &etcd)?,
    ];
    let full_a = ["TCP 203.0.113.10:80: 10.1.0.5:8080 w1, 10.1.0.6:8080 w1, 10.1.0.7:8080 w1"];
    let ready = wait_until("the Muxes' tables", Duration::from_secs(90), || {
        topology.muxes.iter().all(|mux| {
            mux.tenant_table(100) == full_a
                && mux.tenant_table(200) == ["TCP 203.0.113.20:80: 10.1.0.5:8080 w1"]
        })
    });
    if let Err(error) = ready {
        bail!(
            "{error}\nmux:\n{}\nagent 1:\n{}\nagent 2:\n{}",
            muxes[0].log(),
            agents[0].log(),
            agents[1].log()
        );
    }
    println!(
        "\nThe agents found their DIPs and wrote them to the store; each Mux made a namespace \
         per tenant with its VXLAN device and IPVS table (direct routing to each DIP's MAC), \
         the first's:"
    );
    println!(
        "  fulcrum-vni100 (tenant-a): {}",
        topology.mux().tenant_table(100).join("; ")
    );
    println!(
        "  fulcrum-vni200 (tenant-b): {}",
        topology.mux().tenant_table(200).join("; ")
    );

    let mut seen_a = BTreeSet::new();
    let mut seen_b = BTreeSet::new();
    let lines = labkit::sdn::capture_underlay(topology.mux().namespace(), &directory, || {
        seen_a = topology.answers(VIP_A, 30).unwrap_or_default();
        seen_b = topology.answers(VIP_B, 3).unwrap_or_default();
    })?;
    println!(
        "\nUntil BGP runs, the router sends the VIPs to the first Mux. From the client, 30 \
         requests to {VIP_A}:80 and 3 to {VIP_B}:80 were answered by:"
    );
    println!(
        "  {VIP_A}: {}",
        seen_a.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    println!(
        "  {VIP_B}: {}",
        seen_b.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    if seen_a.len() != 3 || seen_b != BTreeSet::from(["tenant-b 10.1.0.5".to_owned()]) {
        bail!("each VIP answers from its own tenant's DIPs: {seen_a:?} {seen_b:?}");
    }
    let vxlan: Vec<&String> = lines.iter().filter(|line| line.contains("VXLAN")).collect();
    let inner: Vec<&String> = lines
        .iter()
        .filter(|line| line.contains("> 02:00:00:00:"))
        .collect();
    let replies = lines
        .iter()
        .filter(|line| labkit::sdn::is_reply_from_a_vip(line))
        .count();
    println!(
        "\nA capture on the first Mux's underlay link (tcpdump -n -e) while they ran: {} packets, \
         {} of them VXLAN, {replies} from a VIP. Two requests as they left for the hosts:",
        lines.len(),
        vxlan.len()
    );
    for vni in [100, 200] {
        let Some(position) = lines
            .iter()
            .position(|line| line.contains(&format!("vni {vni}")))
        else {
            bail!("no VXLAN of VNI {vni} in the capture: {lines:#?}");
        };
        println!("  {}", trimmed(&lines[position]));
        if let Some(next) = lines.get(position + 1) {
            println!("  {}", trimmed(next));
        }
    }
    if replies != 0 || inner.is_empty() {
        bail!("a reply crossed the Mux, or no request did: {lines:#?}");
    }
    println!(
        "The replies left each host straight for the client, from the VIP (the agents \
         translated DIP:8080 back to VIP:80): none crossed the Mux."
    );

    println!("\ntenant-a's 10.1.0.6 stops serving; its agent on host1 probes it every second.");
    let stopped = Instant::now();
    responders[1] = None;
    let drained = "TCP 203.0.113.10:80: 10.1.0.5:8080 w1, 10.1.0.6:8080 w0, 10.1.0.7:8080 w1";
    wait_until("10.1.0.6 leaving", Duration::from_secs(20), || {
        topology
            .muxes
            .iter()
            .all(|mux| mux.tenant_table(100) == [drained])
    })?;
    let left = stopped.elapsed();
    let answered = topology.answers(VIP_A, 12)?;
    println!(
        "  {:.1} s later every Mux holds it at weight 0 (probe every 1 s, timeout 1 s): under \
         mh it keeps its rows of Maglev's table, so only its own flows move on; 12 requests: {}",
        left.as_secs_f64(),
        answered.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    if answered.contains("tenant-a 10.1.0.6") {
        bail!("10.1.0.6 still answers: {answered:?}");
    }
    responders[1] = Some(topology.responder("sdn-a6", "tenant-a 10.1.0.6")?);
    wait_until("10.1.0.6 back", Duration::from_secs(20), || {
        topology
            .muxes
            .iter()
            .all(|mux| mux.tenant_table(100) == full_a)
    })?;
    println!(
        "  It serves again: back in the rotation ({}).",
        topology.mux().tenant_table(100).join("; ")
    );

    println!(
        "\nBGP: BIRD beside each Mux learns the routes pulse keeps in its announce table (a VIP \
         a Mux can serve) and announces them to the edge router's BIRD, which merges the equal \
         paths into one multipath route (fib_multipath_hash_policy=1: addresses and ports)."
    );
    let mut bgp = Bgp::start(&topology, &directory, &[VIP_A, VIP_B], 3)?;
    let mut sorted = vteps.clone();
    sorted.sort();
    let paths = |vip| -> Vec<String> {
        router_paths(&topology, vip)
            .expect("the router's routes")
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    wait_until("three paths", Duration::from_secs(30), || {
        paths(VIP_A) == sorted
    })?;
    println!(
        "  the router's route to {VIP_A}: via {}",
        paths(VIP_A).join(", ")
    );
    let address = std::net::SocketAddr::from((VIP_A, 80));
    let mut sessions = Vec::new();
    for _ in 0..12 {
        let mut session = Session::open(&topology.client, address)?;
        let dip = session.ask(Duration::from_secs(10))?;
        sessions.push((session, dip));
    }
    std::thread::sleep(Duration::from_secs(1));
    // Which Muxes have seen each connection (an IPVS connection of its
    // client in their tenant).
    let carriers = |client, muxes: &[&labkit::sdn::Mux]| -> Vec<String> {
        muxes
            .iter()
            .filter(|mux| {
                mux.connections(100)
                    .iter()
                    .any(|entry| entry.client == client)
            })
            .map(|mux| mux.vtep().to_string())
            .collect()
    };
    let all: Vec<&labkit::sdn::Mux> = topology.muxes.iter().collect();
    println!("\n12 long-lived connections (HTTP keep-alive), each on the Mux the router chose:");
    let mut before = Vec::new();
    for (session, dip) in &sessions {
        let client = session.local_address();
        let via = carriers(client, &all);
        println!("  {client}  via {}  to {dip}", via.join(", "));
        before.push(via);
    }
    println!("\nMux {} and its BIRD are killed (SIGKILL).", vteps[2]);
    let killed = Instant::now();
    muxes.pop().expect("three").kill();
    bgp.kill_mux(3);
    let left: Vec<String> = sorted
        .iter()
        .filter(|vtep| **vtep != vteps[2])
        .cloned()
        .collect();
    wait_until("two paths", Duration::from_secs(30), || {
        paths(VIP_A) == left
    })?;
    println!(
        "  {:.3} s later the router's route to {VIP_A}: via {}",
        killed.elapsed().as_secs_f64(),
        paths(VIP_A).join(", ")
    );
    let mut kept = 0;
    let living: Vec<&labkit::sdn::Mux> = topology.muxes[..2].iter().collect();
    for ((session, dip), via) in sessions.iter_mut().zip(&before) {
        let client = session.local_address();
        match session.ask(Duration::from_secs(30)) {
            Ok(answer) if answer == *dip => {
                kept += 1;
                if via.contains(&vteps[2]) {
                    println!(
                        "  {client} (was via {}): answered by {answer}, now via {}",
                        vteps[2],
                        carriers(client, &living).join(", ")
                    );
                }
            }
            Ok(answer) => println!("  {client}: {answer} instead of {dip}"),
            Err(error) => println!("  {client}: {error:#}"),
        }
    }
    println!(
        "  {kept} of 12 established connections answered again, each by its own DIP: the flows \
         the router moved reached Muxes that had never seen them, which chose the same DIP \
         (same mh table) and scheduled them mid-connection (sloppy TCP); the DIPs' hosts hold \
         the translation."
    );
    if kept != sessions.len() {
        bail!("connections were lost with a Mux");
    }
    drop(sessions);
    drop(bgp);

    println!("\nStopping the agents and the Muxes (SIGTERM): each removes what it made.");
    for agent in agents {
        agent.stop()?;
    }
    for (mux, daemon) in topology.muxes.iter().zip(muxes) {
        let stopped = daemon.stop()?;
        if !stopped.success() || mux.machine.netns_path("fulcrum-vni100").exists() {
            bail!("a Mux did not stop cleanly: {stopped}");
        }
    }
    println!("The SDN act is over.");
    Ok(())
}

/// A capture line without its timestamp (an inner frame's line has
/// none), shortened to fit a terminal.
fn trimmed(line: &str) -> String {
    let line = match line.split_once(' ') {
        Some((time, rest)) if time.contains('.') => rest,
        _ => line,
    };
    line.trim().chars().take(150).collect()
}
