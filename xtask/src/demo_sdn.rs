//! `cargo xtask demo sdn`: the SDN mode's act, a cloud load balancer in
//! the shape of Azure's Software Load Balancer, in a real kernel.
//!
//! In the guest (labkit::sdn's topology): a client behind an edge router;
//! the Mux, two hosts and the cluster store (etcd, one member) each on a
//! subnet of its own. Two tenants use the same DIP address, 10.1.0.5,
//! each behind its own VIP. The policy is written to the store with
//! `pulse --apply`; the Mux forwards each VIP into its tenant's VXLAN
//! overlay, the hosts' agents translate VIP:80 to DIP:8080 and send the
//! replies straight to the client. A capture on the Mux's underlay link
//! shows the VNI of each request, and no reply. A DIP's service stops:
//! its agent's probe takes it out of the rotation; it comes back.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use labkit::etcd::Etcd;
use labkit::sdn::{
    Daemon, MUX_VTEP, POLICY, STORE_ADDRESS, Topology, VIP_A, VIP_B, tenant_table, wait_until,
};

/// Where the act keeps its files in the guest (its tmpfs).
const DIRECTORY: &str = "/run/fulcrum-demo-sdn";

/// In the guest: the act, with the binaries at `pulse` and `agent`. Fails
/// unless every step shows what it should.
pub fn run_in_guest(pulse: &Path, agent: &Path) -> Result<()> {
    println!(
        "\nThe SDN act. Building a routed underlay: a client and an edge router; the Mux \
         ({MUX_VTEP}), host1 (172.30.2.2), host2 (172.30.3.2) and the cluster store \
         ({STORE_ADDRESS}) each on a subnet of its own."
    );
    let topology = Topology::build()?;
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

    println!("\nThe Mux: pulse -f mux.conf --cluster=URLS, its file says only where it is:");
    println!("    mux {{\n        vtep {MUX_VTEP}\n    }}");
    let mux = Daemon::mux(&topology, pulse, &directory, &etcd)?;
    let policy = directory.join("policy.conf");
    std::fs::write(&policy, POLICY)?;
    println!(
        "\nThe policy, in keepalived.conf's syntax (the real servers are DIPs of the network, \
         their port the backend port):\n"
    );
    for line in POLICY.lines() {
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
    let ready = wait_until("the Mux's tables", Duration::from_secs(60), || {
        tenant_table(100) == full_a
            && tenant_table(200) == ["TCP 203.0.113.20:80: 10.1.0.5:8080 w1"]
    });
    if let Err(error) = ready {
        bail!(
            "{error}\nmux:\n{}\nagent 1:\n{}\nagent 2:\n{}",
            mux.log(),
            agents[0].log(),
            agents[1].log()
        );
    }
    println!(
        "\nThe agents found their DIPs and wrote them to the store; the Mux made a namespace \
         per tenant with its VXLAN device and IPVS table (direct routing to each DIP's MAC):"
    );
    println!(
        "  fulcrum-vni100 (tenant-a): {}",
        tenant_table(100).join("; ")
    );
    println!(
        "  fulcrum-vni200 (tenant-b): {}",
        tenant_table(200).join("; ")
    );

    let mut seen_a = BTreeSet::new();
    let mut seen_b = BTreeSet::new();
    let lines = labkit::sdn::capture_underlay(&topology.mux, &directory, || {
        seen_a = topology.answers(VIP_A, 9).unwrap_or_default();
        seen_b = topology.answers(VIP_B, 3).unwrap_or_default();
    })?;
    println!("\nFrom the client, 9 requests to {VIP_A}:80 and 3 to {VIP_B}:80 were answered by:");
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
        "\nA capture on the Mux's underlay link (tcpdump -n -e) while they ran: {} packets, \
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
    wait_until("10.1.0.6 leaving", Duration::from_secs(20), || {
        tenant_table(100) == ["TCP 203.0.113.10:80: 10.1.0.5:8080 w1, 10.1.0.7:8080 w1"]
    })?;
    let left = stopped.elapsed();
    let answered = topology.answers(VIP_A, 6)?;
    println!(
        "  {:.1} s later the Mux's table no longer has it (probe every 1 s, timeout 1 s); 6 \
         requests: {}",
        left.as_secs_f64(),
        answered.iter().cloned().collect::<Vec<_>>().join(", ")
    );
    if answered.contains("tenant-a 10.1.0.6") {
        bail!("10.1.0.6 still answers: {answered:?}");
    }
    responders[1] = Some(topology.responder("sdn-a6", "tenant-a 10.1.0.6")?);
    wait_until("10.1.0.6 back", Duration::from_secs(20), || {
        tenant_table(100) == full_a
    })?;
    println!(
        "  It serves again: back in the rotation ({}).",
        tenant_table(100).join("; ")
    );

    println!("\nStopping the agents and the Mux (SIGTERM): each removes what it made.");
    for agent in agents {
        agent.stop()?;
    }
    let stopped = mux.stop()?;
    if !stopped.success() || Path::new("/run/netns/fulcrum-vni100").exists() {
        bail!("the Mux did not stop cleanly: {stopped}");
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
