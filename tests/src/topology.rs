//! Ready-made topologies: a client, a director and real servers, each in
//! its own network namespace.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use anyhow::{Context, Result, bail};

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

/// How the real servers of a [`DirectReturnTopology`] receive what the
/// director forwards, which decides the IPVS forwarding method that works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reception {
    /// Direct routing (`lvs_method DR`): frames addressed to the real
    /// server's MAC carry packets for the virtual address, which each real
    /// server holds on `lo`.
    DirectRouting,
    /// IP-in-IP (`lvs_method TUN type ipip`): the `tunl0` fallback device
    /// decapsulates.
    Ipip,
    /// GUE (`lvs_method TUN type gue port PORT`): a GUE receive port
    /// (`ip fou add port PORT gue`) strips UDP and GUE and hands the inner
    /// IP-in-IP packet to `tunl0`.
    Gue { port: u16 },
    /// GRE (`lvs_method TUN type gre [csum]`). Without checksums the
    /// `gre0` fallback device decapsulates. The kernel drops GRE packets
    /// whose checksum flag differs from the receiving device's setting
    /// (counted as receive errors of gre0), so with checksums a GRE device
    /// `vip0` bound to the real server's address with `icsum` receives
    /// instead, and refuses packets without one.
    Gre { checksum: bool },
}

/// A topology where replies bypass the director, as DR and TUN need: the
/// client reaches the real servers' segment through a router, and the real
/// servers answer through that router, never through the director.
///
/// ```text
/// client (10.0.1.2) --veth-- (10.0.1.1) router (10.0.2.254, bridge br0)
///                                         |-- veth -- director (10.0.2.1, VIP 10.0.2.100)
///                                         |-- veth -- rs1 (10.0.2.11, VIP on lo or a tunnel)
///                                         |-- veth -- rs2 (10.0.2.12) ...
/// ```
///
/// The virtual address is on the shared segment, and the router finds it
/// by ARP: only the director answers, as the real servers hold it on `lo`
/// or a tunnel device with `arp_ignore=1` (answer only for addresses of the
/// interface asked on) and `arp_announce=2` (never use it as the source of
/// their own ARP requests). The director does not forward
/// (`ip_forward=0`) and holds the virtual address itself, so a reply sent
/// through it (source VIP, destination the client) would be dropped: an
/// answer reaching the client proves it came straight from the real server
/// through the router.
pub struct DirectReturnTopology {
    pub client: Namespace,
    pub router: Namespace,
    pub director: Namespace,
    pub real_servers: Vec<Host>,
}

impl DirectReturnTopology {
    pub const CLIENT_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);
    pub const DIRECTOR_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 1);
    pub const ROUTER_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 254);
    pub const VIRTUAL_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 100);

    /// Builds it with `count` real servers (rs1, rs2...) set up for
    /// `reception`. Namespaces are named `<prefix>-client`,
    /// `<prefix>-router`, `<prefix>-director`, `<prefix>-rs1`...
    pub fn build(prefix: &str, count: usize, reception: Reception) -> Result<DirectReturnTopology> {
        assert!(
            (1..=200).contains(&count),
            "10.0.2.11 + count must stay in the /24, below the virtual address"
        );
        let client = Namespace::create(&format!("{prefix}-client"))?;
        let router = Namespace::create(&format!("{prefix}-router"))?;
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

        let mut links = format!(
            "link add eth0 netns {client} type veth peer name client0 netns {router}\n\
             link add br0 netns {router} type bridge\n\
             link add eth0 netns {director} type veth peer name director netns {router}\n",
            client = client.name(),
            router = router.name(),
            director = director.name(),
        );
        let mut router_setup = String::from(
            "link set client0 up\naddr add 10.0.1.1/24 dev client0\n\
             link set br0 up\naddr add 10.0.2.254/24 dev br0\n\
             link set director master br0\nlink set director up\n",
        );
        for host in &real_servers {
            writeln!(
                links,
                "link add eth0 netns {} type veth peer name {} netns {}",
                host.namespace.name(),
                host.name,
                router.name()
            )?;
            writeln!(
                router_setup,
                "link set {} master br0\nlink set {} up",
                host.name, host.name
            )?;
        }
        run_ip(None, &links)?;
        router.ip(&router_setup)?;
        router.sysctl("net/ipv4/ip_forward", "1")?;
        client.ip(
            "link set eth0 up\naddr add 10.0.1.2/24 dev eth0\nroute add default via 10.0.1.1\n",
        )?;
        director.ip(&format!(
            "link set eth0 up\naddr add 10.0.2.1/24 dev eth0\naddr add {}/32 dev eth0\n\
             route add default via 10.0.2.254\n",
            Self::VIRTUAL_ADDRESS
        ))?;
        // A new namespace inherits ip_forward from the initial one: make
        // sure the director cannot pass a reply on.
        director.sysctl("net/ipv4/ip_forward", "0")?;
        if let Reception::Gue { .. } = reception {
            // fou declares no module alias: neither `ip fou` (the generic
            // netlink family) nor a tunnel's `encap gue` makes the kernel
            // load it on demand.
            load_module("fou")?;
        }
        for host in &real_servers {
            set_up_real_server(host, reception)?;
        }
        Ok(DirectReturnTopology {
            client,
            router,
            director,
            real_servers,
        })
    }

    /// Starts an HTTP responder on `port` of every real server, answering
    /// with the server's name. They listen on every address: requests
    /// arrive for the virtual address, health checks for the server's own.
    pub fn start_responders(&self, port: u16) -> Result<Vec<Responder>> {
        self.real_servers
            .iter()
            .map(|host| {
                Responder::spawn(
                    &host.namespace,
                    SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port),
                    &host.name,
                )
            })
            .collect()
    }

    /// The virtual service address for `port`.
    pub fn virtual_address(port: u16) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(Self::VIRTUAL_ADDRESS), port)
    }
}

/// Addresses, routes, the virtual address and the decapsulation of one real
/// server of a [`DirectReturnTopology`].
fn set_up_real_server(host: &Host, reception: Reception) -> Result<()> {
    let virtual_address = DirectReturnTopology::VIRTUAL_ADDRESS;
    let mut setup = format!(
        "link set eth0 up\naddr add {}/24 dev eth0\nroute add default via 10.0.2.254\n",
        host.address
    );
    // Creating a throwaway tunnel of the kind makes the kernel load its
    // module, which creates the fallback device (tunl0, gre0) in every
    // namespace; the fallback device then receives the packets no other
    // tunnel claims, from any director.
    let device = match reception {
        Reception::DirectRouting => "lo",
        Reception::Ipip | Reception::Gue { .. } => {
            setup.push_str("link add probe type ipip remote 192.0.2.1\nlink del probe\n");
            "tunl0"
        }
        Reception::Gre { checksum: false } => {
            setup.push_str("link add probe type gre remote 192.0.2.1\nlink del probe\n");
            "gre0"
        }
        Reception::Gre { checksum: true } => {
            writeln!(setup, "link add vip0 type gre local {} icsum", host.address)?;
            "vip0"
        }
    };
    if let Reception::Gue { port } = reception {
        writeln!(setup, "fou add port {port} gue")?;
    }
    if device != "lo" {
        writeln!(setup, "link set {device} up")?;
    }
    writeln!(setup, "addr add {virtual_address}/32 dev {device}")?;
    host.namespace.ip(&setup)?;
    let namespace = &host.namespace;
    for (key, value) in [
        ("net/ipv4/conf/all/arp_ignore", "1"),
        ("net/ipv4/conf/all/arp_announce", "2"),
        // Decapsulated packets come in on the tunnel device while the route
        // back to their source leaves by eth0: reverse path filtering (the
        // stricter of `all` and the device's) would drop them.
        ("net/ipv4/conf/all/rp_filter", "0"),
    ] {
        namespace.sysctl(key, value)?;
    }
    if device != "lo" {
        namespace.sysctl(&format!("net/ipv4/conf/{device}/rp_filter"), "0")?;
    }
    Ok(())
}

/// Loads a kernel module with modprobe (the kernel's, not a namespace's).
fn load_module(module: &str) -> Result<()> {
    let output = std::process::Command::new("modprobe")
        .arg(module)
        .output()
        .with_context(|| format!("cannot run modprobe {module}"))?;
    if !output.status.success() {
        bail!(
            "modprobe {module} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}
