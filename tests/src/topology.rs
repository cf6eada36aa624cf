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
        let real_servers = real_servers(prefix, count)?;

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
        cable_real_servers(
            &real_servers,
            &director,
            "br0",
            &mut links,
            &mut director_setup,
        )?;
        run_ip(None, &links)?;
        director.ip(&director_setup)?;
        client.ip(
            "link set eth0 up\naddr add 10.0.1.2/24 dev eth0\nroute add default via 10.0.1.1\n",
        )?;
        for host in &real_servers {
            host.namespace
                .ip(&real_server_setup(host, Ipv4Addr::new(10, 0, 2, 1)))?;
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
        start_responders(&self.real_servers, |host| {
            SocketAddr::new(host.address, port)
        })
    }

    /// The virtual service address for `port` on the director.
    pub fn virtual_address(port: u16) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(Self::DIRECTOR_ADDRESS), port)
    }
}

/// Two directors on the same two segments, for VRRP failover: whichever is
/// master holds the virtual address on the client's segment and the real
/// servers' gateway address on theirs.
///
/// ```text
///                 switch: bridge clients          switch: bridge servers
/// client (10.0.1.2) --|-- eth0 director1 eth1 --|-- rs1 (10.0.2.11)
///                     |   (10.0.1.251, 10.0.2.251)  |-- rs2 (10.0.2.12) ...
///                     |-- eth0 director2 eth1 --|
///                         (10.0.1.252, 10.0.2.252)
/// ```
///
/// Nothing holds the virtual address (10.0.1.1) or the gateway address
/// (10.0.2.1) until a director's VRRP instance adds them. NAT needs both
/// on the same director: the real servers' replies must come back through
/// the director that rewrote the requests, so their default route is the
/// gateway address, which moves with the virtual address. Both directors
/// forward. The bridges live in a namespace of their own (the switch), so
/// a director dies by losing its links ([`FailoverTopology::cut`]) while
/// the others keep theirs. Each director's links have fixed hardware
/// addresses, so which director a neighbour entry names is plain.
pub struct FailoverTopology {
    pub client: Namespace,
    pub switch: Namespace,
    pub directors: Vec<Director>,
    pub real_servers: Vec<Host>,
}

/// A director of a [`FailoverTopology`].
pub struct Director {
    /// director1, director2.
    pub name: String,
    pub namespace: Namespace,
    /// Its own address on the client's segment (on `eth0`).
    pub client_address: Ipv4Addr,
    /// Its own address on the real servers' segment (on `eth1`).
    pub server_address: Ipv4Addr,
    /// The hardware address of its client-side link, `eth0`.
    pub hardware_address: String,
}

impl FailoverTopology {
    /// The virtual address VRRP moves on the client's segment; the same as
    /// [`NatTopology::DIRECTOR_ADDRESS`], so a configuration serves both.
    pub const VIRTUAL_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
    /// The real servers' default gateway, which VRRP moves with it.
    pub const GATEWAY_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 1);
    pub const CLIENT_ADDRESS: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);
    /// Each director's link to the client's segment.
    pub const CLIENT_INTERFACE: &'static str = "eth0";
    /// Each director's link to the real servers' segment.
    pub const SERVER_INTERFACE: &'static str = "eth1";

    /// Builds it with two directors and `count` real servers. Namespaces
    /// are named `<prefix>-client`, `<prefix>-switch`,
    /// `<prefix>-director1`, `<prefix>-director2`, `<prefix>-rs1`...
    pub fn build(prefix: &str, count: usize) -> Result<FailoverTopology> {
        assert!(
            (1..=200).contains(&count),
            "10.0.2.11 + count must stay in the /24, below the directors"
        );
        let client = Namespace::create(&format!("{prefix}-client"))?;
        let switch = Namespace::create(&format!("{prefix}-switch"))?;
        let directors = (1..=2u8)
            .map(|index| {
                let name = format!("director{index}");
                Ok(Director {
                    namespace: Namespace::create(&format!("{prefix}-{name}"))?,
                    name,
                    client_address: Ipv4Addr::new(10, 0, 1, 250 + index),
                    server_address: Ipv4Addr::new(10, 0, 2, 250 + index),
                    hardware_address: format!("02:00:00:00:01:{index:02x}"),
                })
            })
            .collect::<Result<Vec<Director>>>()?;
        let real_servers = real_servers(prefix, count)?;

        let mut links = format!(
            "link add eth0 netns {client} type veth peer name client netns {switch}\n\
             link add clients netns {switch} type bridge\n\
             link add servers netns {switch} type bridge\n",
            client = client.name(),
            switch = switch.name(),
        );
        let mut switch_setup = String::from(
            "link set clients up\nlink set servers up\n\
             link set client master clients\nlink set client up\n",
        );
        for (index, director) in directors.iter().enumerate() {
            let number = index + 1;
            writeln!(
                links,
                "link add {client_side} netns {director} address {hardware} type veth \
                 peer name d{number}-client netns {switch}\n\
                 link add {server_side} netns {director} address 02:00:00:00:02:{number:02x} \
                 type veth peer name d{number}-server netns {switch}",
                client_side = Self::CLIENT_INTERFACE,
                server_side = Self::SERVER_INTERFACE,
                director = director.namespace.name(),
                hardware = director.hardware_address,
                switch = switch.name(),
            )?;
            writeln!(
                switch_setup,
                "link set d{number}-client master clients\nlink set d{number}-client up\n\
                 link set d{number}-server master servers\nlink set d{number}-server up"
            )?;
        }
        cable_real_servers(
            &real_servers,
            &switch,
            "servers",
            &mut links,
            &mut switch_setup,
        )?;
        run_ip(None, &links)?;
        switch.ip(&switch_setup)?;
        client.ip(&format!(
            "link set eth0 up\naddr add {}/24 dev eth0\nroute add default via {}\n",
            Self::CLIENT_ADDRESS,
            Self::VIRTUAL_ADDRESS
        ))?;
        for director in &directors {
            director.namespace.ip(&format!(
                "link set {client_side} up\naddr add {}/24 dev {client_side}\n\
                 link set {server_side} up\naddr add {}/24 dev {server_side}\n",
                director.client_address,
                director.server_address,
                client_side = Self::CLIENT_INTERFACE,
                server_side = Self::SERVER_INTERFACE,
            ))?;
            director.namespace.sysctl("net/ipv4/ip_forward", "1")?;
        }
        for host in &real_servers {
            host.namespace
                .ip(&real_server_setup(host, Self::GATEWAY_ADDRESS))?;
        }
        Ok(FailoverTopology {
            client,
            switch,
            directors,
            real_servers,
        })
    }

    /// Starts an HTTP responder on `port` of every real server, answering
    /// with the server's name; they stop when dropped.
    pub fn start_responders(&self, port: u16) -> Result<Vec<Responder>> {
        start_responders(&self.real_servers, |host| {
            SocketAddr::new(host.address, port)
        })
    }

    /// The virtual service address for `port`.
    pub fn virtual_address(port: u16) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(Self::VIRTUAL_ADDRESS), port)
    }

    /// Cuts director `index`'s links (0 for director1), as if it died:
    /// what it holds stays in its namespace, but no frame reaches it or
    /// leaves it. A killed pulse leaves its addresses in place (kill -9
    /// cleans nothing up), which would otherwise keep answering ARP.
    pub fn cut(&self, index: usize) -> Result<()> {
        self.directors[index].namespace.ip(&format!(
            "link set {} down\nlink set {} down\n",
            Self::CLIENT_INTERFACE,
            Self::SERVER_INTERFACE
        ))
    }

    /// The hardware address the client's neighbour table gives for
    /// `address` (its ARP cache, /proc/net/arp read from a thread in the
    /// client's namespace), if it has a complete entry.
    pub fn client_neighbour(&self, address: Ipv4Addr) -> Result<Option<String>> {
        neighbour(&self.client, address)
    }
}

/// The hardware address `namespace`'s ARP cache gives for `address`, if
/// complete. /proc/thread-self/net is the reading thread's namespace's.
pub fn neighbour(namespace: &Namespace, address: Ipv4Addr) -> Result<Option<String>> {
    let text = namespace
        .run(|| std::fs::read_to_string("/proc/thread-self/net/arp"))?
        .with_context(|| format!("cannot read /proc/net/arp in {}", namespace.name()))?;
    // IP address, HW type, Flags, HW address, Mask, Device; the flag 0x2
    // (ATF_COM) marks an entry whose hardware address is known.
    Ok(text.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let flags = u32::from_str_radix(fields.get(2)?.trim_start_matches("0x"), 16).ok()?;
        (fields[0] == address.to_string() && flags & 0x2 != 0).then(|| fields[3].to_owned())
    }))
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
        let real_servers = real_servers(prefix, count)?;

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
        cable_real_servers(&real_servers, &router, "br0", &mut links, &mut router_setup)?;
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
        start_responders(&self.real_servers, |_| {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port)
        })
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
    let mut setup = real_server_setup(host, DirectReturnTopology::ROUTER_ADDRESS);
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

/// Namespaces `<prefix>-rs1`, `<prefix>-rs2`... for `count` real servers
/// at 10.0.2.11, 10.0.2.12...
fn real_servers(prefix: &str, count: usize) -> Result<Vec<Host>> {
    (1..=count)
        .map(|index| {
            let name = format!("rs{index}");
            let namespace = Namespace::create(&format!("{prefix}-{name}"))?;
            let address = IpAddr::V4(Ipv4Addr::new(10, 0, 2, 10 + index as u8));
            Ok(Host {
                name,
                namespace,
                address,
            })
        })
        .collect()
}

/// Cables each real server's `eth0` to a port named after it (rs1...) of
/// `bridge` in `switch`: the veth pairs go in `links` (an `ip -batch` run in
/// the initial namespace, which places each end in its namespace), the
/// ports' setup in `switch_setup`.
fn cable_real_servers(
    hosts: &[Host],
    switch: &Namespace,
    bridge: &str,
    links: &mut String,
    switch_setup: &mut String,
) -> Result<()> {
    for host in hosts {
        writeln!(
            links,
            "link add eth0 netns {} type veth peer name {} netns {}",
            host.namespace.name(),
            host.name,
            switch.name()
        )?;
        writeln!(
            switch_setup,
            "link set {} master {bridge}\nlink set {} up",
            host.name, host.name
        )?;
    }
    Ok(())
}

/// A real server's `eth0`, address and default route through `gateway`.
fn real_server_setup(host: &Host, gateway: Ipv4Addr) -> String {
    format!(
        "link set eth0 up\naddr add {}/24 dev eth0\nroute add default via {gateway}\n",
        host.address
    )
}

/// An HTTP responder on each real server, listening on `address(host)`.
fn start_responders(
    hosts: &[Host],
    address: impl Fn(&Host) -> SocketAddr,
) -> Result<Vec<Responder>> {
    hosts
        .iter()
        .map(|host| Responder::spawn(&host.namespace, address(host), &host.name))
        .collect()
}
