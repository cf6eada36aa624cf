//! The agent's effects on its host: over rtnetlink, a VXLAN device per
//! network, routed (not bridged) to the network's segment, with a routing
//! rule and table of its own; over nfnetlink, the translation rules
//! ([`crate::nat`]); the segment's neighbour table, where DIPs are found.
//!
//! Order of a change (no packet meets a half state): the devices and
//! routes of the networks served are made first, then the rules replaced
//! in one batch, then what served networks no longer served goes.
//!
//! Sysctls (IPv4): the VXLAN device forwards, without reverse-path
//! filtering (a request's source is a client, whose route is not the
//! overlay); the segment forwards too (the DIPs' replies go from it to the
//! host's gateway). The segment's forwarding is put back as it was on a
//! clean stop.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use fulcrum_nftables::{Batch, Connection};
use fulcrum_overlay::{
    KernelError, failed, ignore, index_of, io_failed, link, neighbours, overlay_mtu, sysctl, vxlan,
};
use netlink_packet_route::neighbour::NeighbourState;
use netlink_packet_route::route::{RouteMessage, RouteScope};
use netlink_packet_route::rule::{RuleAction, RuleMessage};
use rtnetlink::{Handle, LinkUnspec, RouteMessageBuilder};

use crate::desired::{Found, Local, Segment};
use crate::nat;

pub struct Kernel {
    handle: Handle,
    vtep: IpAddr,
    /// The overlay's MTU: the underlay's less VXLAN's encapsulation.
    mtu: u32,
    firewall: Connection,
    /// VNI -> what was made or adopted for it.
    made: BTreeMap<u32, Made>,
    /// The rules last applied.
    rules: Option<Batch>,
    /// How many translations those rules hold, by network.
    translations: BTreeMap<String, u64>,
}

/// A served network's device and settings.
struct Made {
    segment: Segment,
    /// The VXLAN device's index.
    device: u32,
    /// The segment's forwarding before the agent set it.
    forwarding: String,
}

impl Kernel {
    pub async fn start(vtep: IpAddr) -> Result<Kernel, KernelError> {
        let (connection, handle, _) =
            rtnetlink::new_connection().map_err(io_failed("cannot open rtnetlink"))?;
        tokio::spawn(connection);
        let mtu = overlay_mtu(&handle, vtep).await?;
        let firewall = Connection::open().map_err(io_failed("cannot open nfnetlink"))?;
        Ok(Kernel {
            handle,
            vtep,
            mtu,
            firewall,
            made: BTreeMap::new(),
            rules: None,
            translations: BTreeMap::new(),
        })
    }

    /// Serves `local`'s segments, translating to the DIPs of `found`.
    pub async fn apply(&mut self, local: &Local, found: &Found) -> Result<(), KernelError> {
        for segment in &local.segments {
            self.serve(segment).await?;
        }
        let rules = nat::ruleset(&local.segments, &local.translations, found);
        if self.rules.as_ref() != Some(&rules) {
            self.firewall
                .apply(rules.clone())
                .await
                .map_err(|error| KernelError {
                    what: "cannot replace the translation rules".into(),
                    cause: error.to_string(),
                })?;
            self.rules = Some(rules);
        }
        self.translations =
            nat::translations_by_network(&local.segments, &local.translations, found);
        let wanted: BTreeSet<u32> = local.segments.iter().map(|segment| segment.vni).collect();
        let gone: Vec<u32> = self
            .made
            .keys()
            .filter(|vni| !wanted.contains(vni))
            .copied()
            .collect();
        for vni in gone {
            self.remove(vni).await?;
        }
        Ok(())
    }

    /// How many translations the kernel holds, by network served: those of
    /// the last rules it took.
    pub fn translations(&self) -> &BTreeMap<String, u64> {
        &self.translations
    }

    /// Removes every rule, route and device the agent made or adopted (a
    /// clean stop).
    pub async fn clear(&mut self) -> Result<(), KernelError> {
        self.firewall
            .apply(nat::removal())
            .await
            .map_err(|error| KernelError {
                what: "cannot remove the translation rules".into(),
                cause: error.to_string(),
            })?;
        self.rules = None;
        self.translations.clear();
        let all: Vec<u32> = self.made.keys().copied().collect();
        for vni in all {
            self.remove(vni).await?;
        }
        Ok(())
    }

    /// The VXLAN device of `segment`, made or adopted, up, with its
    /// routing rule and table; the sysctls.
    async fn serve(&mut self, segment: &Segment) -> Result<(), KernelError> {
        let interface = link(&self.handle, &segment.interface)
            .await?
            .ok_or_else(|| KernelError {
                what: format!(
                    "the segment {} of network {}",
                    segment.interface, segment.network
                ),
                cause: "no such interface".into(),
            })?
            .header
            .index;
        let name = nat::device(segment.vni);
        let device = match link(&self.handle, &name).await? {
            Some(link) => link.header.index,
            None => {
                self.handle
                    .link()
                    .add(vxlan(&name, segment.vni, self.vtep, self.mtu))
                    .execute()
                    .await
                    .map_err(failed(format!("cannot create {name}")))?;
                tracing::info!("agent: made {name} for network {}", segment.network);
                index_of(&self.handle, &name).await?
            }
        };
        // Out of any bridge (an earlier version joined it to the segment),
        // with the overlay's MTU (an adopted device may have another).
        self.handle
            .link()
            .set(
                LinkUnspec::new_with_index(device)
                    .nocontroller()
                    .mtu(self.mtu)
                    .up()
                    .build(),
            )
            .execute()
            .await
            .map_err(failed(format!("cannot bring {name} up")))?;
        let settings = |what: &str| io_failed(format!("cannot set {what}"));
        sysctl(&format!("/proc/sys/net/ipv4/conf/{name}/forwarding"), "1")
            .map_err(settings(&format!("{name}'s forwarding")))?;
        sysctl(&format!("/proc/sys/net/ipv4/conf/{name}/rp_filter"), "0")
            .map_err(settings(&format!("{name}'s reverse-path filter")))?;
        let forwarding = sysctl(
            &format!("/proc/sys/net/ipv4/conf/{}/forwarding", segment.interface),
            "1",
        )
        .map_err(settings(&format!("{}'s forwarding", segment.interface)))?;

        let mut request = self.handle.rule().add().v4();
        *request.message_mut() = self.rule(segment);
        ignore(request.execute().await, &[libc::EEXIST]).map_err(failed(format!(
            "cannot route {name}'s packets by table {}",
            nat::routing_table(segment)
        )))?;
        self.handle
            .route()
            .add(route(segment, interface))
            .replace()
            .execute()
            .await
            .map_err(failed(format!(
                "cannot route table {} on {}",
                nat::routing_table(segment),
                segment.interface
            )))?;
        let forwarding = match self.made.get(&segment.vni) {
            Some(made) => made.forwarding.clone(),
            None => forwarding,
        };
        self.made.insert(
            segment.vni,
            Made {
                segment: segment.clone(),
                device,
                forwarding,
            },
        );
        Ok(())
    }

    /// `iif fvxN lookup TABLE`, at the agent's priority.
    fn rule(&self, segment: &Segment) -> RuleMessage {
        // The action said: rtnetlink leaves it unspecified, which the
        // kernel takes, and then fails every lookup of (EINVAL: the
        // packets vanish without an ICMP error).
        let mut request = self
            .handle
            .rule()
            .add()
            .v4()
            .input_interface(nat::device(segment.vni))
            .table_id(nat::routing_table(segment))
            .priority(nat::RULE_PRIORITY)
            .action(RuleAction::ToTable);
        request.message_mut().clone()
    }

    async fn remove(&mut self, vni: u32) -> Result<(), KernelError> {
        let Some(made) = self.made.get(&vni) else {
            return Ok(());
        };
        let segment = made.segment.clone();
        let name = nat::device(vni);
        let result = self.handle.rule().del(self.rule(&segment)).execute().await;
        ignore(result, &[libc::ENOENT, libc::ESRCH])
            .map_err(failed(format!("cannot remove {name}'s routing rule")))?;
        if let Some(interface) = link(&self.handle, &segment.interface).await? {
            let result = self
                .handle
                .route()
                .del(route(&segment, interface.header.index))
                .execute()
                .await;
            ignore(result, &[libc::ENOENT, libc::ESRCH]).map_err(failed(format!(
                "cannot remove table {}'s route",
                nat::routing_table(&segment)
            )))?;
            sysctl(
                &format!("/proc/sys/net/ipv4/conf/{}/forwarding", segment.interface),
                &made.forwarding,
            )
            .map_err(io_failed(format!(
                "cannot put {}'s forwarding back",
                segment.interface
            )))?;
        }
        match self.handle.link().del(made.device).execute().await {
            Err(rtnetlink::Error::NetlinkError(message))
                if message.to_io().raw_os_error() == Some(libc::ENODEV) => {}
            result => result.map_err(failed(format!("cannot delete {name}")))?,
        }
        self.made.remove(&vni);
        Ok(())
    }

    /// The MAC of each of `wanted` (network, DIP) found in its segment's
    /// neighbour table; for the others, a datagram bound to the segment
    /// (to the discard port) makes the kernel ask, for the next look.
    pub async fn find(
        &self,
        segments: &[Segment],
        wanted: &BTreeSet<(String, IpAddr)>,
    ) -> Result<Found, KernelError> {
        let mut indexes = BTreeMap::new();
        for segment in segments {
            if let Some(link) = link(&self.handle, &segment.interface).await? {
                indexes.insert(link.header.index, segment);
            }
        }
        let mut found = BTreeMap::new();
        for entry in neighbours(&self.handle, "of the host").await? {
            let Some(segment) = indexes.get(&entry.index) else {
                continue;
            };
            if matches!(
                entry.state,
                NeighbourState::Failed | NeighbourState::Incomplete | NeighbourState::Noarp
            ) {
                continue;
            }
            let key = (segment.network.clone(), entry.address);
            if wanted.contains(&key) {
                found.insert(key, entry.mac);
            }
        }
        for (network, address) in wanted {
            if found.contains_key(&(network.clone(), *address)) {
                continue;
            }
            if let Some(segment) = segments.iter().find(|segment| &segment.network == network) {
                ask(&segment.interface, *address);
            }
        }
        Ok(found)
    }
}

/// Table `routing_table(segment)`: everything on the segment.
fn route(segment: &Segment, interface: u32) -> RouteMessage {
    RouteMessageBuilder::<Ipv4Addr>::new()
        .table_id(nat::routing_table(segment))
        .output_interface(interface)
        .scope(RouteScope::Link)
        .build()
}

/// A datagram to `address`'s discard port, bound to `interface`: the
/// kernel resolves the address on that segment first (tenants' DIPs may
/// share an address; the bound socket leaves by the segment).
fn ask(interface: &str, address: IpAddr) {
    let domain = socket2::Domain::for_address(SocketAddr::new(address, 9));
    let Ok(socket) = socket2::Socket::new(domain, socket2::Type::DGRAM, None) else {
        return;
    };
    if socket.bind_device(Some(interface.as_bytes())).is_err() {
        return;
    }
    let _ = socket.set_nonblocking(true);
    let _ = socket.send_to(&[], &SocketAddr::new(address, 9).into());
}
