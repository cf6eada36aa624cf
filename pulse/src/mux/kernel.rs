//! The Mux's effects: a tenant's namespace, devices, addresses, routes,
//! neighbour and FDB entries over rtnetlink, its IPVS table over generic
//! netlink. [`super::desired`] says what; this does it, in an order where
//! no packet meets a half state.
//!
//! Per tenant of VNI N (docs/sdn.md draws it):
//! - namespace `fulcrum-vniN`, with `lo` up and the tenant's VIPs on it
//!   (IPVS takes packets for local addresses);
//! - `fvxN`, the VXLAN device (UDP port 4789, no learning, the Mux's VTEP
//!   as source), created in the Mux's namespace and moved into the
//!   tenant's: the kernel keeps its socket where it was created, on the
//!   underlay;
//! - `fvmN` (Mux's side) and `fvtN` (tenant's side), a veth pair: the Mux's
//!   namespace routes each VIP on `fvmN`, with a permanent neighbour entry
//!   for it (`fvtN`'s MAC), so that no ARP is asked;
//! - in the tenant's namespace, each reachable DIP is routed on `fvxN`,
//!   with a permanent neighbour entry (its MAC) and an FDB entry (that MAC
//!   behind its host's VTEP): IPVS's direct routing rewrites only the
//!   frame's destination, and the VXLAN device encapsulates it to the host.
//!
//! Order of a change (nothing half applied reaches a packet):
//! 0. VIPs this Mux can no longer serve (or removed) are withdrawn: their
//!    route in the announce table goes, and the BGP daemon beside the Mux
//!    withdraws them from the routers;
//! 1. VIPs removed stop being routed to the tenant;
//! 2. new DIPs get their route, neighbour and FDB entries;
//! 3. new VIPs are made local in the tenant's namespace;
//! 4. the IPVS table is planned against what the kernel holds and applied
//!    (new destinations before old ones go: [`crate::lvs::plan`]; `mh`
//!    services in one creation order: [`super::maglev`]);
//! 5. new VIPs are routed to the tenant;
//! 6. removed VIPs' addresses, then removed DIPs' entries, go;
//! 7. VIPs this Mux can serve, routed, are announced: a /32 (or /128)
//!    route on `fvmN` in the announce table, which BIRD's kernel protocol
//!    learns (`learn`) and BGP exports; last, so that no router sends a
//!    flow before the Mux forwards it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;

use fulcrum_overlay::{
    KernelError, failed, ignore, index_of, io_failed, link, mac_of, neighbours, overlay_mtu,
    rtnetlink_in, set_up, sysctl, vxlan,
};
use futures_util::TryStreamExt;
use netlink_packet_route::AddressFamily;
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourFlags, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteScope, RouteType};
use rtnetlink::{Handle, LinkUnspec, LinkVeth, RouteMessageBuilder};

use fulcrum_cluster::schema;
use ipvs::Operation;

use super::desired::{Neighbour, Overlay, Tenant};
use super::maglev;
use super::namespace;
use crate::lvs::desired::Table;
use crate::lvs::plan::read;

/// What the Mux made and programmed.
pub struct Kernel {
    runtime: tokio::runtime::Handle,
    main: Handle,
    vtep: IpAddr,
    /// The overlay's MTU: the underlay's less VXLAN's encapsulation.
    mtu: u32,
    /// The routing table of the announcements (`announce_table`).
    announce_table: u32,
    tenants: BTreeMap<u32, Programmed>,
}

/// One tenant as programmed.
struct Programmed {
    name: String,
    /// Held open: the namespace lives while the Mux does, whoever
    /// unmounts its file.
    _namespace: File,
    handle: Handle,
    ipvs: ipvs::Client,
    vxlan: u32,
    /// `fvmN`'s index in the Mux's namespace.
    outer: u32,
    /// `fvtN`'s MAC.
    inner_mac: [u8; 6],
    vips: BTreeSet<IpAddr>,
    dips: BTreeMap<IpAddr, Neighbour>,
    /// The VIPs with a route in the announce table.
    announced: BTreeSet<IpAddr>,
    announce_table: u32,
    /// The tenant's IPVS table as the kernel held it after the last
    /// application (read back when it changed): what the Mux publishes.
    held: Table,
    /// Each destination's last weight as the kernel keeps it, which it
    /// does not show (`ip_vs_ctl.c`: a creation sets it, even to 0; an
    /// edit to a weight above 0 sets it): from the operations the Mux
    /// sent and every weight above 0 read back. None is known of a
    /// destination a previous Mux left at weight 0.
    last_weights: HashMap<(ipvs::ServiceKey, SocketAddr), u32>,
}

impl Kernel {
    /// Connects to the Mux's namespace and adopts the tenants' namespaces
    /// a previous Mux left (what they hold is read, so that what is no
    /// longer wanted is removed and nothing is flushed).
    pub async fn start(vtep: IpAddr, announce_table: u32) -> Result<Kernel, KernelError> {
        let runtime = tokio::runtime::Handle::current();
        let (connection, main, _) =
            rtnetlink::new_connection().map_err(io_failed("cannot open rtnetlink"))?;
        runtime.spawn(connection);
        // The Mux routes VIPs from the underlay into the tenants'
        // namespaces.
        sysctl("/proc/sys/net/ipv4/ip_forward", "1")
            .map_err(io_failed("cannot enable IPv4 forwarding"))?;
        let mtu = overlay_mtu(&main, vtep).await?;
        let mut kernel = Kernel {
            runtime,
            main,
            vtep,
            mtu,
            announce_table,
            tenants: BTreeMap::new(),
        };
        let adopted = namespace::existing();
        // The announcements a previous Mux left, read once for every
        // tenant it left: (device, VIP).
        let announced = if adopted.is_empty() {
            Vec::new()
        } else {
            announcements(&kernel.main, announce_table).await?
        };
        for (name, vni) in adopted {
            tracing::info!("mux: adopting the namespace {name} of VNI {vni}");
            let mut programmed = kernel.tenant(vni).await?;
            programmed.read_back(&announced).await?;
            kernel.tenants.insert(vni, programmed);
        }
        Ok(kernel)
    }

    /// Makes the kernel hold `overlay`.
    pub async fn apply(&mut self, overlay: &Overlay) -> Result<(), KernelError> {
        for (vni, tenant) in &overlay.tenants {
            if !self.tenants.contains_key(vni) {
                let programmed = self.tenant(*vni).await?;
                self.tenants.insert(*vni, programmed);
            }
            let programmed = self.tenants.get_mut(vni).expect("made above");
            programmed.apply(&self.main, tenant).await?;
        }
        let gone: Vec<u32> = self
            .tenants
            .keys()
            .filter(|vni| !overlay.tenants.contains_key(vni))
            .copied()
            .collect();
        for vni in gone {
            self.remove(vni).await?;
        }
        Ok(())
    }

    /// What this Mux's kernel holds of each VIP's service, as the store's
    /// live keys of Mux `id` (key, JSON value): the destinations in the
    /// kernel's list order with their weights and last weights (unknown
    /// for one a previous Mux left at weight 0), and whether the VIP is
    /// announced.
    pub fn published(&self, id: &str) -> BTreeMap<String, String> {
        let mut published = BTreeMap::new();
        for programmed in self.tenants.values() {
            for (key, held) in &programmed.held.services {
                let ipvs::ServiceKey::Address {
                    protocol,
                    address,
                    port,
                } = *key
                else {
                    continue;
                };
                let Some(protocol) = super::desired::schema_protocol(protocol) else {
                    continue;
                };
                let destinations = held
                    .destinations
                    .iter()
                    .map(|destination| {
                        let address = destination.socket_address();
                        schema::MuxDestination {
                            address: address.ip(),
                            port: address.port(),
                            weight: destination.weight,
                            last_weight: programmed.last_weights.get(&(*key, address)).copied(),
                        }
                    })
                    .collect();
                let flags = held.service.flags;
                let service = schema::MuxService {
                    announced: programmed.announced.contains(&address),
                    scheduler: held.service.scheduler.clone(),
                    mh_port: flags.contains(ipvs::ServiceFlags::SH_PORT),
                    mh_fallback: flags.contains(ipvs::ServiceFlags::SH_FALLBACK),
                    destinations,
                };
                published.insert(
                    schema::mux_service(id, address, protocol, port),
                    schema::to_json(&service),
                );
            }
        }
        published
    }

    /// The tenants as the kernel holds them, for the Mux's report: each
    /// one's network (as `overlay` names it), namespace, VIPs and which of
    /// them are announced.
    pub fn tenants(&self, overlay: &Overlay) -> Vec<super::report::TenantReport> {
        self.tenants
            .iter()
            .map(|(vni, programmed)| {
                let network = overlay
                    .tenants
                    .get(vni)
                    .map_or("", |tenant| tenant.network.as_str());
                super::report::TenantReport::new(
                    *vni,
                    network,
                    &programmed.name,
                    &programmed.vips,
                    &programmed.announced,
                )
            })
            .collect()
    }

    /// Withdraws every announcement (the first step of a clean stop: the
    /// routers move the flows to the other Muxes while this one still
    /// forwards).
    pub async fn withdraw(&mut self) -> Result<(), KernelError> {
        for programmed in self.tenants.values_mut() {
            programmed.withdraw(&self.main, None).await?;
        }
        Ok(())
    }

    /// Removes everything the Mux made (a clean stop).
    pub async fn clear(&mut self) -> Result<(), KernelError> {
        let all: Vec<u32> = self.tenants.keys().copied().collect();
        for vni in all {
            self.remove(vni).await?;
        }
        Ok(())
    }

    async fn remove(&mut self, vni: u32) -> Result<(), KernelError> {
        let Some(mut programmed) = self.tenants.remove(&vni) else {
            return Ok(());
        };
        // No VIP routed into a namespace that is going.
        programmed.apply(&self.main, &Tenant::empty()).await?;
        let outer = programmed.outer;
        let name = programmed.name.clone();
        drop(programmed);
        // The veth pair goes with either end; the namespace takes the
        // VXLAN device and the IPVS table with it.
        ignore(self.main.link().del(outer).execute().await, &[libc::ENODEV])
            .map_err(failed(format!("cannot delete fvm{vni}")))?;
        namespace::remove(&name);
        tracing::info!("mux: removed the tenant of VNI {vni}");
        Ok(())
    }

    /// The tenant of `vni`'s namespace and devices, made where missing.
    async fn tenant(&self, vni: u32) -> Result<Programmed, KernelError> {
        let name = namespace::name(vni);
        let (space, created) = namespace::open_or_create(&name)
            .map_err(io_failed(format!("cannot make the namespace {name}")))?;
        if created {
            tracing::info!("mux: made the namespace {name}");
        }
        // A new namespace takes IPv4's settings from the initial one, where
        // a distribution often sets reverse-path filtering: the tenant's
        // namespace has no route back to clients (replies go straight from
        // the hosts), so a filter would drop every request.
        namespace::run_in(&space, || {
            sysctl("/proc/sys/net/ipv4/conf/all/rp_filter", "0")?;
            sysctl("/proc/sys/net/ipv4/conf/default/rp_filter", "0").map(drop)
        })
        .and_then(|result| result)
        .map_err(io_failed(format!(
            "cannot turn reverse-path filtering off in {name}"
        )))?;
        let handle = rtnetlink_in(&space, &self.runtime, &name)?;
        let ipvs = namespace::run_in(&space, ipvs::Client::connect)
            .map_err(io_failed(format!("cannot enter {name}")))?
            .map_err(|error| KernelError {
                what: format!("cannot reach IPVS in {name}"),
                cause: error.to_string(),
            })?;
        // IPVS's settings are per namespace and exist once ip_vs is loaded
        // (connecting asked for its family, which loads it). Sloppy: a
        // packet of a flow this Mux never saw begin (ECMP moved the flow
        // here from another Mux, or this Mux restarted) is scheduled, and
        // `mh` gives it the DIP the first Mux chose, rather than dropped
        // for not being a SYN (TCP) or an INIT (SCTP). A kernel without
        // SCTP in IPVS has no `sloppy_sctp`, and no SCTP flow to keep.
        namespace::run_in(&space, || {
            sysctl("/proc/sys/net/ipv4/vs/sloppy_tcp", "1")?;
            match sysctl("/proc/sys/net/ipv4/vs/sloppy_sctp", "1") {
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other.map(drop),
            }
        })
        .and_then(|result| result)
        .map_err(io_failed(format!(
            "cannot make IPVS sloppy (net.ipv4.vs.sloppy_tcp) in {name}"
        )))?;
        // lo up: without it the namespace has no local table, and IPVS
        // refuses destinations (it cannot classify addresses).
        set_up(&handle, 1, None, &format!("lo in {name}")).await?;

        let vxlan_name = format!("fvx{vni}");
        let vxlan = match link(&handle, &vxlan_name).await? {
            Some(link) => link.header.index,
            None => {
                let index = match link(&self.main, &vxlan_name).await? {
                    Some(link) => link.header.index,
                    None => {
                        self.main
                            .link()
                            .add(vxlan(&vxlan_name, vni, self.vtep, self.mtu))
                            .execute()
                            .await
                            .map_err(failed(format!("cannot create {vxlan_name}")))?;
                        index_of(&self.main, &vxlan_name).await?
                    }
                };
                self.move_into(index, &space, &vxlan_name).await?;
                index_of(&handle, &vxlan_name).await?
            }
        };
        // The MTU again: an adopted device may have been made with another.
        set_up(&handle, vxlan, Some(self.mtu), &vxlan_name).await?;

        let outer_name = format!("fvm{vni}");
        let inner_name = format!("fvt{vni}");
        if link(&self.main, &outer_name).await?.is_none() {
            self.main
                .link()
                .add(LinkVeth::new(&outer_name, &inner_name).build())
                .execute()
                .await
                .map_err(failed(format!("cannot create {outer_name}")))?;
        }
        if let Some(inner) = link(&self.main, &inner_name).await? {
            self.move_into(inner.header.index, &space, &inner_name)
                .await?;
        }
        let outer = index_of(&self.main, &outer_name).await?;
        set_up(&self.main, outer, None, &outer_name).await?;
        let inner = link(&handle, &inner_name)
            .await?
            .ok_or_else(|| KernelError {
                what: format!("{inner_name} is not in {name}"),
                cause: "its veth pair lost it".into(),
            })?;
        set_up(&handle, inner.header.index, None, &inner_name).await?;
        let inner_mac = mac_of(&inner).ok_or_else(|| KernelError {
            what: format!("{inner_name} has no MAC address"),
            cause: "the kernel gave none".into(),
        })?;
        Ok(Programmed {
            name,
            _namespace: space,
            handle,
            ipvs,
            vxlan,
            outer,
            inner_mac,
            vips: BTreeSet::new(),
            dips: BTreeMap::new(),
            announced: BTreeSet::new(),
            announce_table: self.announce_table,
            held: Table::default(),
            last_weights: HashMap::new(),
        })
    }

    async fn move_into(&self, index: u32, space: &File, what: &str) -> Result<(), KernelError> {
        self.main
            .link()
            .set(
                LinkUnspec::new_with_index(index)
                    .setns_by_fd(space.as_raw_fd())
                    .build(),
            )
            .execute()
            .await
            .map_err(failed(format!(
                "cannot move {what} into its tenant's namespace"
            )))
    }
}

impl Programmed {
    /// Makes the tenant's part of the kernel `wanted`, in the module's
    /// order.
    async fn apply(&mut self, main: &Handle, wanted: &Tenant) -> Result<(), KernelError> {
        let added_dips: Vec<(IpAddr, Neighbour)> = wanted
            .dips
            .iter()
            .filter(|(address, neighbour)| self.dips.get(address) != Some(neighbour))
            .map(|(address, neighbour)| (*address, *neighbour))
            .collect();
        // A DIP whose entry changed is rewritten in step 2, not removed.
        let removed_dips: Vec<(IpAddr, Neighbour)> = self
            .dips
            .iter()
            .filter(|(address, _)| !wanted.dips.contains_key(address))
            .map(|(address, neighbour)| (*address, *neighbour))
            .collect();
        let added_vips: Vec<IpAddr> = wanted.vips.difference(&self.vips).copied().collect();
        let removed_vips: Vec<IpAddr> = self.vips.difference(&wanted.vips).copied().collect();

        // 0.
        self.withdraw(main, Some(&wanted.announced)).await?;
        // 1.
        for vip in &removed_vips {
            remove_route(main, *vip, self.outer).await?;
            let _ = main
                .neighbours()
                .del(neighbour_message(self.outer, *vip))
                .execute()
                .await;
        }
        // 2.
        for (address, neighbour) in &added_dips {
            if let Some(old) = self
                .dips
                .get(address)
                .filter(|old| old.mac != neighbour.mac)
            {
                // Another MAC: the old one's FDB entry goes.
                let _ = self
                    .handle
                    .neighbours()
                    .del(fdb_message(self.vxlan, old))
                    .execute()
                    .await;
            }
            self.handle
                .neighbours()
                .add_bridge(self.vxlan, &neighbour.mac)
                .destination(neighbour.vtep)
                .flags(NeighbourFlags::Own)
                .replace()
                .execute()
                .await
                .map_err(failed(format!("cannot add the FDB entry of DIP {address}")))?;
            self.handle
                .neighbours()
                .add(self.vxlan, *address)
                .link_layer_address(&neighbour.mac)
                .state(NeighbourState::Permanent)
                .replace()
                .execute()
                .await
                .map_err(failed(format!(
                    "cannot add the neighbour entry of DIP {address}"
                )))?;
            add_route(&self.handle, *address, self.vxlan).await?;
            self.dips.insert(*address, *neighbour);
        }
        // 3.
        for vip in &added_vips {
            let length = if vip.is_ipv4() { 32 } else { 128 };
            let result = self.handle.address().add(1, *vip, length).execute().await;
            ignore(result, &[libc::EEXIST]).map_err(failed(format!(
                "cannot make VIP {vip} local in {}",
                self.name
            )))?;
        }
        // 4.
        let kernel = read(&mut self.ipvs).map_err(|error| KernelError {
            what: format!("cannot read IPVS in {}", self.name),
            cause: error.to_string(),
        })?;
        let operations = maglev::plan(&kernel, &wanted.table, &wanted.creation_weights);
        for operation in &operations {
            match operation {
                Operation::CreateDestination(key, destination) => {
                    self.last_weights
                        .insert((*key, destination.socket_address()), destination.weight);
                }
                Operation::UpdateDestination(key, destination) if destination.weight > 0 => {
                    self.last_weights
                        .insert((*key, destination.socket_address()), destination.weight);
                }
                _ => {}
            }
        }
        if operations.is_empty() {
            self.held = kernel;
        } else {
            self.ipvs.apply(&operations).map_err(|error| KernelError {
                what: format!("IPVS in {} refused a change", self.name),
                cause: error.to_string(),
            })?;
            tracing::info!(
                "mux: {} IPVS operations applied in {}",
                operations.len(),
                self.name
            );
            // Read back, not computed: what the Mux publishes of its table
            // (`--which-dip` computes each Mux's choice from it) is the
            // kernel's own list, in its order.
            self.held = read(&mut self.ipvs).map_err(|error| KernelError {
                what: format!("cannot read IPVS back in {}", self.name),
                cause: error.to_string(),
            })?;
        }
        let held = &self.held;
        self.last_weights.retain(|(key, address), _| {
            held.service(key).is_some_and(|service| {
                service
                    .destinations
                    .iter()
                    .any(|destination| destination.socket_address() == *address)
            })
        });
        for (key, service) in &held.services {
            for destination in &service.destinations {
                if destination.weight > 0 {
                    self.last_weights
                        .insert((*key, destination.socket_address()), destination.weight);
                }
            }
        }
        // 5.
        for vip in &added_vips {
            main.neighbours()
                .add(self.outer, *vip)
                .link_layer_address(&self.inner_mac)
                .state(NeighbourState::Permanent)
                .replace()
                .execute()
                .await
                .map_err(failed(format!(
                    "cannot add the neighbour entry of VIP {vip}"
                )))?;
            add_route(main, *vip, self.outer).await?;
            self.vips.insert(*vip);
        }
        // 6.
        for vip in &removed_vips {
            let mut message = netlink_packet_route::address::AddressMessage::default();
            message.header.index = 1;
            message.header.family = family(*vip);
            message.header.prefix_len = if vip.is_ipv4() { 32 } else { 128 };
            message
                .attributes
                .push(netlink_packet_route::address::AddressAttribute::Local(*vip));
            message
                .attributes
                .push(netlink_packet_route::address::AddressAttribute::Address(
                    *vip,
                ));
            let result = self.handle.address().del(message).execute().await;
            ignore(result, &[libc::EADDRNOTAVAIL, libc::ENOENT])
                .map_err(failed(format!("cannot remove VIP {vip} in {}", self.name)))?;
            self.vips.remove(vip);
        }
        for (address, neighbour) in &removed_dips {
            remove_route(&self.handle, *address, self.vxlan).await?;
            let _ = self
                .handle
                .neighbours()
                .del(neighbour_message(self.vxlan, *address))
                .execute()
                .await;
            let _ = self
                .handle
                .neighbours()
                .del(fdb_message(self.vxlan, neighbour))
                .execute()
                .await;
            self.dips.remove(address);
        }
        // 7.
        let announced: Vec<IpAddr> = wanted
            .announced
            .iter()
            .filter(|vip| self.vips.contains(vip) && !self.announced.contains(vip))
            .copied()
            .collect();
        for vip in announced {
            let result = main
                .route()
                .add(self.announcement(vip))
                .replace()
                .execute()
                .await;
            result.map_err(failed(format!(
                "cannot announce {vip} (table {})",
                self.announce_table
            )))?;
            tracing::info!("mux: {vip} announced");
            self.announced.insert(vip);
        }
        Ok(())
    }

    /// Withdraws the announced VIPs not in `kept` (all, without).
    async fn withdraw(
        &mut self,
        main: &Handle,
        kept: Option<&BTreeSet<IpAddr>>,
    ) -> Result<(), KernelError> {
        let withdrawn: Vec<IpAddr> = self
            .announced
            .iter()
            .filter(|vip| kept.is_none_or(|kept| !kept.contains(vip)))
            .copied()
            .collect();
        for vip in withdrawn {
            let result = main.route().del(self.announcement(vip)).execute().await;
            ignore(result, &[libc::ESRCH, libc::ENOENT]).map_err(failed(format!(
                "cannot withdraw {vip} (table {})",
                self.announce_table
            )))?;
            tracing::info!("mux: {vip} withdrawn");
            self.announced.remove(&vip);
        }
        Ok(())
    }

    /// A VIP's route in the announce table: on `fvmN`, as it is routed.
    fn announcement(&self, vip: IpAddr) -> netlink_packet_route::route::RouteMessage {
        route_in(vip, self.outer, self.announce_table)
    }

    /// What a previous Mux left in this tenant: the VIPs local on `lo`,
    /// the DIPs with neighbour entries on the VXLAN device, and the VIPs
    /// announced (routes on `fvmN` in the announce table).
    async fn read_back(&mut self, announced: &[(u32, IpAddr)]) -> Result<(), KernelError> {
        self.announced.extend(
            announced
                .iter()
                .filter(|(output, _)| *output == self.outer)
                .map(|(_, vip)| *vip),
        );
        let addresses: Vec<_> = self
            .handle
            .address()
            .get()
            .set_link_index_filter(1)
            .execute()
            .try_collect()
            .await
            .map_err(failed(format!(
                "cannot read the addresses in {}",
                self.name
            )))?;
        for message in addresses {
            for attribute in &message.attributes {
                if let netlink_packet_route::address::AddressAttribute::Local(address)
                | netlink_packet_route::address::AddressAttribute::Address(address) = attribute
                {
                    if !address.is_loopback() {
                        self.vips.insert(*address);
                    }
                }
            }
        }
        for entry in neighbours(&self.handle, &format!("in {}", self.name)).await? {
            if entry.index == self.vxlan {
                // The VTEP is not read back: a DIP whose entry differs from
                // the wanted one is written again, FDB entry included.
                self.dips.insert(
                    entry.address,
                    Neighbour {
                        mac: entry.mac,
                        vtep: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
                    },
                );
            }
        }
        Ok(())
    }
}

impl Tenant {
    fn empty() -> Tenant {
        Tenant {
            network: String::new(),
            vips: BTreeSet::new(),
            dips: BTreeMap::new(),
            table: Default::default(),
            announced: Default::default(),
            creation_weights: Default::default(),
        }
    }
}

/// The routes of the Mux's namespace in `table` with an output device,
/// as (device, destination): what a previous Mux announced.
async fn announcements(main: &Handle, table: u32) -> Result<Vec<(u32, IpAddr)>, KernelError> {
    let mut found = Vec::new();
    for family in [AddressFamily::Inet, AddressFamily::Inet6] {
        let mut request = netlink_packet_route::route::RouteMessage::default();
        request.header.address_family = family;
        let routes: Vec<_> = main
            .route()
            .get(request)
            .execute()
            .try_collect()
            .await
            .map_err(failed("cannot read the Mux's routes"))?;
        for route in routes {
            // A table above 255 is only in its attribute.
            let mut in_table = u32::from(route.header.table);
            let mut output = None;
            let mut destination = None;
            for attribute in &route.attributes {
                match attribute {
                    RouteAttribute::Table(number) => in_table = *number,
                    RouteAttribute::Oif(index) => output = Some(*index),
                    RouteAttribute::Destination(RouteAddress::Inet(address)) => {
                        destination = Some(IpAddr::V4(*address))
                    }
                    RouteAttribute::Destination(RouteAddress::Inet6(address)) => {
                        destination = Some(IpAddr::V6(*address))
                    }
                    _ => {}
                }
            }
            if in_table == table
                && let (Some(output), Some(destination)) = (output, destination)
            {
                found.push((output, destination));
            }
        }
    }
    Ok(found)
}

/// `address` alone, on the device `index`, in the main table.
fn route(address: IpAddr, index: u32) -> netlink_packet_route::route::RouteMessage {
    route_in(address, index, RT_TABLE_MAIN)
}

/// The kernel's main routing table.
const RT_TABLE_MAIN: u32 = 254;

/// `address` alone, on the device `index`, in `table`.
fn route_in(address: IpAddr, index: u32, table: u32) -> netlink_packet_route::route::RouteMessage {
    let length = if address.is_ipv4() { 32 } else { 128 };
    RouteMessageBuilder::<IpAddr>::new()
        .destination_prefix(address, length)
        .expect("an address and its full length")
        .output_interface(index)
        .table_id(table)
        .scope(RouteScope::Link)
        .kind(RouteType::Unicast)
        .build()
}

async fn add_route(handle: &Handle, address: IpAddr, index: u32) -> Result<(), KernelError> {
    let result = handle
        .route()
        .add(route(address, index))
        .replace()
        .execute()
        .await;
    result.map_err(failed(format!("cannot route {address}")))
}

async fn remove_route(handle: &Handle, address: IpAddr, index: u32) -> Result<(), KernelError> {
    let result = handle.route().del(route(address, index)).execute().await;
    ignore(result, &[libc::ESRCH, libc::ENOENT])
        .map_err(failed(format!("cannot remove the route of {address}")))
}

fn family(address: IpAddr) -> AddressFamily {
    match address {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    }
}

fn neighbour_message(index: u32, address: IpAddr) -> NeighbourMessage {
    let mut message = NeighbourMessage::default();
    message.header.family = family(address);
    message.header.ifindex = index;
    message
        .attributes
        .push(NeighbourAttribute::Destination(match address {
            IpAddr::V4(address) => NeighbourAddress::Inet(address),
            IpAddr::V6(address) => NeighbourAddress::Inet6(address),
        }));
    message
}

fn fdb_message(index: u32, neighbour: &Neighbour) -> NeighbourMessage {
    let mut message = NeighbourMessage::default();
    message.header.family = AddressFamily::Bridge;
    message.header.ifindex = index;
    message.header.flags = NeighbourFlags::Own;
    message
        .attributes
        .push(NeighbourAttribute::LinkLayerAddress(neighbour.mac.to_vec()));
    message
}
