//! Ready-made topologies: a client, a director and real servers, each in
//! its own network namespace.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use anyhow::Result;

use crate::http::Responder;
use crate::namespace::{Namespace, run_ip};

/// The client's segment is 10.0.1.0/24, the real servers' 10.0.2.0/24.
///
/// ```text
/// client (10.0.1.2) --veth-- (10.0.1.1) director (10.0.2.1, bridge br0)
///                                         |-- veth -- rs1 (10.0.2.11)
///                                         |-- veth -- rs2 (10.0.2.12) ...
/// ```
///
/// The director forwards between the segments and is every host's default
/// gateway, so replies from NAT real servers flow back through it.
pub struct NatTopology {
    pub client: Namespace,
    pub director: Namespace,
    pub real_servers: Vec<Host>,
}

/// A real server: its namespace, address and name.
pub struct Host {
    pub name: String,
    pub namespace: Namespace,
    pub address: IpAddr,
}

impl NatTopology {
    /// The director's client-facing address: the virtual address of the demo.
    pub const DIRECTOR_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
    pub const CLIENT_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);

    /// Builds it with `count` real servers (rs1, rs2, ...). Namespaces are
    /// named `<prefix>-client`, `<prefix>-director`, `<prefix>-rs1`..., so
    /// tests running at once do not collide.
    pub fn build(prefix: &str, count: usize) -> Result<NatTopology> {
        assert!(
            (1..=200).contains(&count),
            "10.0.2.11 + count must stay in the /24"
        );
        let client = Namespace::create(&format!("{prefix}-client"))?;
        let director = Namespace::create(&format!("{prefix}-director"))?;
        let mut real_servers = Vec::new();
        for index in 1..=count {
            let name = format!("rs{index}");
            let namespace = Namespace::create(&format!("{prefix}-{name}"))?;
            let address = IpAddr::V4(Ipv4Addr::new(10, 0, 2, 10 + index as u8));
            real_servers.push(Host {
                name,
                namespace,
                address,
            });
        }

        // Links are created from the initial namespace with each end placed
        // directly in its own namespace, so leaf names (eth0) never collide.
        let mut links = format!(
            "link add eth0 netns {} type veth peer name client0 netns {}\n\
             link add br0 netns {} type bridge\n",
            client.name(),
            director.name(),
            director.name()
        );
        let mut director_setup = String::from(
            "link set client0 up\naddr add 10.0.1.1/24 dev client0\n\
             link set br0 up\naddr add 10.0.2.1/24 dev br0\n",
        );
        for host in &real_servers {
            writeln!(
                links,
                "link add eth0 netns {} type veth peer name {} netns {}",
                host.namespace.name(),
                host.name,
                director.name()
            )?;
            writeln!(
                director_setup,
                "link set {} master br0\nlink set {} up",
                host.name, host.name
            )?;
        }
        run_ip(None, &links)?;
        director.ip(&director_setup)?;
        client.ip(
            "link set eth0 up\naddr add 10.0.1.2/24 dev eth0\nroute add default via 10.0.1.1\n",
        )?;
        for host in &real_servers {
            host.namespace.ip(&format!(
                "link set eth0 up\naddr add {}/24 dev eth0\nroute add default via 10.0.2.1\n",
                host.address
            ))?;
        }
        director.sysctl("net/ipv4/ip_forward", "1")?;
        Ok(NatTopology {
            client,
            director,
            real_servers,
        })
    }

    /// Starts an HTTP responder on `port` of every real server, answering
    /// with the server's name (rs1, rs2...); they stop when dropped.
    pub fn start_responders(&self, port: u16) -> Result<Vec<Responder>> {
        self.real_servers
            .iter()
            .map(|host| {
                Responder::spawn(
                    &host.namespace,
                    SocketAddr::new(host.address, port),
                    &host.name,
                )
            })
            .collect()
    }

    /// The virtual service address for `port` on the director.
    pub fn virtual_address(port: u16) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(Self::DIRECTOR_ADDRESS), port)
    }
}
