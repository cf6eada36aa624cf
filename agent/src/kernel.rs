//! The agent's effects on its host, over rtnetlink: a VXLAN device per
//! network joined to the network's segment (its bridge), and the
//! segment's neighbour table, where DIPs are found.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};

use fulcrum_overlay::{KernelError, failed, io_failed, link, neighbours, vxlan};
use netlink_packet_route::neighbour::NeighbourState;
use rtnetlink::{Handle, LinkUnspec};

use crate::desired::Segment;

pub struct Kernel {
    handle: Handle,
    vtep: IpAddr,
    /// VNI -> the VXLAN device's index, for those made or adopted.
    devices: BTreeMap<u32, u32>,
}

impl Kernel {
    pub async fn start(vtep: IpAddr) -> Result<Kernel, KernelError> {
        let (connection, handle, _) =
            rtnetlink::new_connection().map_err(io_failed("cannot open rtnetlink"))?;
        tokio::spawn(connection);
        Ok(Kernel {
            handle,
            vtep,
            devices: BTreeMap::new(),
        })
    }

    /// Terminates the VXLAN of each of `segments` on its segment: a
    /// device `fvxN` (no learning: the Mux's FDB entries say where DIPs
    /// are; replies do not come back through it) joined to the segment's
    /// bridge, made or adopted; devices of networks no longer served go.
    pub async fn segments(&mut self, segments: &[Segment]) -> Result<(), KernelError> {
        let wanted: BTreeSet<u32> = segments.iter().map(|segment| segment.vni).collect();
        for segment in segments {
            let bridge = link(&self.handle, &segment.interface)
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
            let name = format!("fvx{}", segment.vni);
            let index = match link(&self.handle, &name).await? {
                Some(link) => link.header.index,
                None => {
                    self.handle
                        .link()
                        .add(vxlan(&name, segment.vni, self.vtep))
                        .execute()
                        .await
                        .map_err(failed(format!("cannot create {name}")))?;
                    tracing::info!("agent: made {name} for network {}", segment.network);
                    link(&self.handle, &name)
                        .await?
                        .ok_or_else(|| KernelError {
                            what: format!("{name} is missing"),
                            cause: "made, then not found".into(),
                        })?
                        .header
                        .index
                }
            };
            self.handle
                .link()
                .set(
                    LinkUnspec::new_with_index(index)
                        .controller(bridge)
                        .up()
                        .build(),
                )
                .execute()
                .await
                .map_err(failed(format!(
                    "cannot join {name} to {}",
                    segment.interface
                )))?;
            self.devices.insert(segment.vni, index);
        }
        let gone: Vec<(u32, u32)> = self
            .devices
            .iter()
            .filter(|(vni, _)| !wanted.contains(vni))
            .map(|(vni, index)| (*vni, *index))
            .collect();
        for (vni, index) in gone {
            self.remove(vni, index).await?;
        }
        Ok(())
    }

    /// Removes every device the agent made or adopted (a clean stop).
    pub async fn clear(&mut self) -> Result<(), KernelError> {
        let all: Vec<(u32, u32)> = self
            .devices
            .iter()
            .map(|(vni, index)| (*vni, *index))
            .collect();
        for (vni, index) in all {
            self.remove(vni, index).await?;
        }
        Ok(())
    }

    async fn remove(&mut self, vni: u32, index: u32) -> Result<(), KernelError> {
        match self.handle.link().del(index).execute().await {
            Err(rtnetlink::Error::NetlinkError(message))
                if message.to_io().raw_os_error() == Some(libc::ENODEV) => {}
            result => result.map_err(failed(format!("cannot delete fvx{vni}")))?,
        }
        self.devices.remove(&vni);
        Ok(())
    }

    /// The MAC of each of `wanted` (network, DIP) found in its segment's
    /// neighbour table; for the others, a datagram bound to the segment
    /// (to the discard port) makes the kernel ask, for the next look.
    pub async fn find(
        &self,
        segments: &[Segment],
        wanted: &BTreeSet<(String, IpAddr)>,
    ) -> Result<BTreeMap<(String, IpAddr), [u8; 6]>, KernelError> {
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
