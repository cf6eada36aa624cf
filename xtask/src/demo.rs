//! `cargo xtask demo`: load balancing happening in a real kernel.
//!
//! In the guest: a client, a director and two real servers, each in its own
//! network namespace; a NAT virtual service programmed through the `ipvs`
//! library; requests from the client answered in turn by each real server.

use anyhow::{Context, Result, bail};
use ipvs::{Client, Destination, Forwarding, Operation, Protocol, Service, ServiceKey};
use labkit::{NatTopology, http};

const REQUESTS: usize = 8;

/// In the guest: the demo itself. Fails unless the answers alternate.
pub fn run_in_guest() -> Result<()> {
    println!("Building the topology: a client, a director and two real servers (namespaces).");
    let topology = NatTopology::build("demo", 2)?;
    let responders = topology.start_responders(80)?;
    for responder in &responders {
        println!(
            "  {} at {}: an HTTP server answering with its name",
            responder.name(),
            responder.address()
        );
    }

    let virtual_address = NatTopology::virtual_address(80);
    let key = ServiceKey::Address {
        protocol: Protocol::Tcp,
        address: virtual_address.ip(),
        port: 80,
    };
    let mut operations = vec![Operation::CreateService(Service::new(key, "rr"))];
    for responder in &responders {
        operations.push(Operation::CreateDestination(
            key,
            Destination::new(responder.address(), Forwarding::Masquerade),
        ));
    }
    println!("\nProgramming the director's IPVS through the library (one netlink exchange):");
    for operation in &operations {
        println!("  {operation}");
    }
    let mut client = topology.director.run(Client::connect)??;
    client.apply(&operations)?;

    println!("\nThe kernel's table, as ipvsadm sees it:");
    let table = topology
        .director
        .command("ipvsadm")
        .args(["-L", "-n"])
        .output()
        .context("cannot run ipvsadm")?;
    print!("{}", String::from_utf8_lossy(&table.stdout));

    println!(
        "\nThe client ({}) asks http://{virtual_address}/ {REQUESTS} times:",
        NatTopology::CLIENT_ADDRESS
    );
    let mut answers = Vec::new();
    for request in 1..=REQUESTS {
        let answer = http::get(&topology.client, virtual_address)?;
        println!("  request {request}: answered by {answer}");
        answers.push(answer);
    }
    let alternating = answers.windows(2).all(|pair| pair[0] != pair[1]);
    for responder in &responders {
        println!(
            "{} served {} requests",
            responder.name(),
            responder.served()
        );
    }
    if !alternating {
        bail!("the answers did not alternate between the real servers: {answers:?}");
    }
    println!("\nRound robin through the kernel's IPVS: the answers alternate.");
    Ok(())
}
