//! `use_vmac`: an instance running on a macvlan of its interface that
//! carries the virtual router's MAC address, so that its adverts, its
//! gratuitous ARPs and the traffic to its virtual addresses use that
//! address (RFC 5798 7.3) and a switch need not learn a new port at a
//! failover. As keepalived 2.2.7 does it (vrrp_vmac.c, vrrp_if_config.c,
//! vrrp.c `vrrp_complete_instance`):
//!
//! - The macvlan's name is the configured one, else `vrrp.VRID`; a name
//!   another instance's macvlan has is not taken twice: `vrrp1.VRID`,
//!   `vrrp2.VRID`... (for IPv6 `vrrp6.VRID` first), `create_vmac_name`
//!   ([`names`]).
//! - Its MAC address is the configured one (five octets: the VRID is the
//!   sixth), else 00:00:5e:00:01:VRID, 00:00:5e:00:02:VRID for IPv6.
//! - It is made over rtnetlink in private mode on the instance's interface
//!   ([`create_message`]). An interface of that name already there is used
//!   when it is a private macvlan on the same interface with that address
//!   (a pulse restarted after a crash); another macvlan is deleted and
//!   made again; an interface of another kind is left alone and the
//!   instance cannot start (keepalived picks another name; pulse says
//!   which name is taken, so that the operator's scripts, which name the
//!   macvlan, are not silently wrong).
//! - For an IPv4 instance the kernel is told what keepalived tells it
//!   ([`devconf_message`], IFLA_INET_CONF): on the macvlan `arp_ignore` 1
//!   (it must not answer for the base's addresses), `accept_local` 1 (it
//!   must hear the other routers' adverts, sent from addresses of this
//!   host's subnet), `rp_filter` 0 (it has no address, so every packet
//!   would fail the reverse path check) and `promote_secondaries` 1; on
//!   the base `arp_ignore` 1 and `arp_filter` 1 (it must not answer ARP
//!   for the virtual addresses with its own MAC address), their values
//!   saved first and put back when the base's last macvlan goes. Seen
//!   here, keepalived 2.2.7 leaves the base's values set after it stops;
//!   pulse puts them back, as keepalived's code means to.
//! - IPv6 is turned off on an IPv4 instance's macvlan (`disable_ipv6`, a
//!   sysctl file: rtnetlink cannot set it, keepalived writes the file too)
//!   and no link-local address is made from its MAC address
//!   (`IFLA_INET6_ADDR_GEN_MODE` none, sent before the link is brought up,
//!   since bringing it up makes the address); then it is brought up.
//! - An IPv6 instance that sends from the macvlan gives it a link-local
//!   address: the configured source, else the base's link-local address,
//!   else one made from the base's MAC address (`set_link_local_address`),
//!   so that adverts do not go from a virtual address.
//! - Adverts are sent and received on the macvlan, from the base's
//!   address; with `vmac_xmit_base` on the base (keepalived's sockpool
//!   takes `configured_ifp` then). The virtual addresses without a `dev`
//!   (or with the base's) of the instance's family go on the macvlan, and
//!   its gratuitous ARPs go from it.
//! - When the instance stops the macvlan is deleted (its addresses with
//!   it).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};

use fulcrum_config::model as config;
use netlink_packet_core::{DefaultNla, NLM_F_ACK, NLM_F_REQUEST};
use netlink_packet_route::AddressFamily;
use netlink_packet_route::link::{
    AfSpecInet, AfSpecInet6, AfSpecUnspec, In6AddrGenMode, InfoData, InfoKind, InfoMacVlan,
    LinkAttribute, LinkFlags, LinkInfo, LinkMessage, MacVlanMode,
};
use rtnetlink::Handle;

use super::addresses::{self, AddressError};
use super::io::Interface;
use super::packet::Family;

/// RFC 5798 7.3's virtual router MAC address, without its last octet
/// (the VRID) and the one before it (1 for IPv4, 2 for IPv6).
const VIRTUAL_ROUTER_PREFIX: [u8; 4] = [0x00, 0x00, 0x5e, 0x00];
/// `IFLA_INET_CONF` in `IFLA_AF_SPEC`'s `AF_INET` (linux/if_link.h).
const IFLA_INET_CONF: u16 = 1;
/// `IPV4_DEVCONF_*` (linux/ip.h), the index of each setting in
/// `IFLA_INET_CONF`.
const DEVCONF_RP_FILTER: u16 = 8;
const DEVCONF_ARP_FILTER: u16 = 13;
const DEVCONF_ARP_IGNORE: u16 = 19;
const DEVCONF_PROMOTE_SECONDARIES: u16 = 20;
const DEVCONF_ACCEPT_LOCAL: u16 = 23;
/// The kernel's `IFNAMSIZ`, with the terminating zero.
const INTERFACE_NAME_SIZE: usize = 16;

/// What a planned instance's macvlan is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmacPlan {
    pub name: String,
    pub address: [u8; 6],
    /// `vmac_xmit_base`: adverts go and come on the base interface.
    pub transmit_on_base: bool,
}

/// The name keepalived would give the macvlan of each instance (`None`
/// without `use_vmac`), in the configuration's order: the configured one,
/// else `PREFIX.VRID`, else the first of `PREFIX1.VRID`, `PREFIX2.VRID`...
/// (`PREFIX6.VRID` first for IPv6) no earlier instance has.
pub fn names(
    instances: &[(Option<&config::Vmac>, u8, Family)],
    prefix: &str,
) -> Vec<Option<String>> {
    let mut taken: Vec<String> = instances
        .iter()
        .filter_map(|(vmac, _, _)| vmac.and_then(|vmac| vmac.name.clone()))
        .collect();
    instances
        .iter()
        .map(|(vmac, vrid, family)| {
            let vmac = (*vmac)?;
            if let Some(name) = &vmac.name {
                return Some(name.clone());
            }
            let mut number: u16 = 0;
            loop {
                let suffix = if number == 0 {
                    format!(".{vrid}")
                } else {
                    format!("{number}.{vrid}")
                };
                // keepalived shortens the prefix, not the number.
                let room = (INTERFACE_NAME_SIZE - 1).saturating_sub(suffix.len());
                let name = format!("{}{suffix}", &prefix[..prefix.len().min(room)]);
                if !taken.contains(&name) {
                    taken.push(name.clone());
                    return Some(name);
                }
                number = match (family, number) {
                    (Family::Ipv6, 0) => 6,
                    (Family::Ipv6, 6) => 1,
                    (Family::Ipv6, 5) => 7,
                    (_, number) => number + 1,
                };
            }
        })
        .collect()
}

/// The macvlan's MAC address: the configured one, else RFC 5798's.
pub fn address(vmac: &config::Vmac, vrid: u8, family: Family) -> [u8; 6] {
    match vmac.address {
        Some(address) => address.with_vrid(vrid),
        None => {
            let [a, b, c, d] = VIRTUAL_ROUTER_PREFIX;
            let version = match family {
                Family::Ipv4 => 0x01,
                Family::Ipv6 => 0x02,
            };
            [a, b, c, d, version, vrid]
        }
    }
}

/// RTM_NEWLINK making the macvlan on interface `base`, as keepalived's
/// `netlink_link_add_vmac`: private mode (it receives the frames sent to
/// its address, and no other macvlan of the base hears it), the base, the
/// name and the address.
pub fn create_message(plan: &VmacPlan, base: u32) -> LinkMessage {
    let mut message = LinkMessage::default();
    message.attributes = vec![
        LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::MacVlan),
            LinkInfo::Data(InfoData::MacVlan(vec![InfoMacVlan::Mode(
                MacVlanMode::Private,
            )])),
        ]),
        LinkAttribute::Link(base),
        LinkAttribute::IfName(plan.name.clone()),
        LinkAttribute::Address(plan.address.to_vec()),
    ];
    message
}

/// RTM_NEWLINK setting IPv4 settings of interface `index`: each
/// `(IPV4_DEVCONF_*, value)` an attribute of `IFLA_INET_CONF`, as the
/// kernel's `inet_set_link_af` reads them. (netlink-packet-route's
/// `DevConfRequest` leaves out every 0, and `rp_filter` must be set to 0.)
pub fn devconf_message(index: u32, settings: &[(u16, u32)]) -> LinkMessage {
    let mut nested = Vec::with_capacity(settings.len() * 8);
    for (setting, value) in settings {
        nested.extend_from_slice(&8u16.to_ne_bytes());
        nested.extend_from_slice(&setting.to_ne_bytes());
        nested.extend_from_slice(&value.to_ne_bytes());
    }
    let mut message = LinkMessage::default();
    message.header.index = index;
    message.attributes = vec![LinkAttribute::AfSpecUnspec(vec![AfSpecUnspec::Inet(vec![
        // Without NLA_F_NESTED, as keepalived sends it (the kernel takes both).
        AfSpecInet::Other(DefaultNla::new(IFLA_INET_CONF, nested)),
    ])])];
    message
}

/// The macvlan's IPv4 settings, keepalived's `vmac_sysctl`.
pub const VMAC_SETTINGS: [(u16, u32); 4] = [
    (DEVCONF_ARP_IGNORE, 1),
    (DEVCONF_ACCEPT_LOCAL, 1),
    (DEVCONF_RP_FILTER, 0),
    (DEVCONF_PROMOTE_SECONDARIES, 1),
];

/// The base's, keepalived's `parent_sysctl`.
fn base_settings(arp_ignore: u32, arp_filter: u32) -> [(u16, u32); 2] {
    [
        (DEVCONF_ARP_IGNORE, arp_ignore),
        (DEVCONF_ARP_FILTER, arp_filter),
    ]
}

/// RTM_NEWLINK telling the kernel to make no IPv6 link-local address on
/// interface `index` (RFC 5798 7.4: the virtual MAC must not give the
/// router an address of its own).
pub fn no_address_generation_message(index: u32) -> LinkMessage {
    let mut message = LinkMessage::default();
    message.header.index = index;
    message.attributes = vec![LinkAttribute::AfSpecUnspec(vec![AfSpecUnspec::Inet6(
        vec![AfSpecInet6::AddrGenMode(In6AddrGenMode::None)],
    )])];
    message
}

/// RTM_NEWLINK bringing interface `index` up.
pub fn up_message(index: u32) -> LinkMessage {
    let mut message = LinkMessage::default();
    message.header.index = index;
    message.header.flags = LinkFlags::Up;
    message.header.change_mask = LinkFlags::Up;
    message
}

/// Why a macvlan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum VmacError {
    #[error("VMAC {name} conflicts with existing interface (not a macvlan)")]
    Conflict { name: String },
    #[error("Unable to create VMAC interface {name}: {error}")]
    Create {
        name: String,
        error: rtnetlink::Error,
    },
    #[error("VMAC interface {name}: {error}")]
    Setup { name: String, error: AddressError },
}

/// The values of a base's settings before its first macvlan, and how many
/// macvlans it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavedBase {
    arp_ignore: u32,
    arp_filter: u32,
    macvlans: usize,
}

/// The bases with macvlans, by index.
pub type SavedBases = HashMap<u32, SavedBase>;

/// A macvlan an instance runs on.
#[derive(Debug, Clone)]
pub struct VirtualMac {
    /// The macvlan as the instance uses it (its index, name, MAC address).
    pub interface: Interface,
    pub base_index: u32,
    pub family: Family,
    pub transmit_on_base: bool,
}

/// Makes (or takes up again) `plan`'s macvlan on `base` for an instance
/// of `family` whose configured source is `source`, and sets it up as the
/// module's rules say.
pub async fn create(
    handle: &Handle,
    plan: &VmacPlan,
    base: &Interface,
    family: Family,
    source: Option<IpAddr>,
    saved: &mut SavedBases,
) -> Result<VirtualMac, VmacError> {
    let name = plan.name.clone();
    let setup_error = |error: AddressError| VmacError::Setup {
        name: name.clone(),
        error,
    };
    let mut reused = false;
    if let Ok(existing) = addresses::link(handle, &plan.name).await {
        let Some(mode) = macvlan_mode(&existing) else {
            return Err(VmacError::Conflict { name });
        };
        let same = mode == MacVlanMode::Private
            && link_of(&existing) == Some(base.index)
            && addresses::hardware_address(&existing) == Some(plan.address);
        if same {
            reused = true;
        } else {
            tracing::info!(
                "Removing old VMAC interface {} due to conflicting interface",
                plan.name
            );
            delete(handle, existing.header.index).await;
        }
    }
    if !reused {
        // keepalived's flags: NLM_F_CREATE | NLM_F_EXCL.
        handle
            .link()
            .add(create_message(plan, base.index))
            .execute()
            .await
            .map_err(|error| VmacError::Create {
                name: name.clone(),
                error,
            })?;
        tracing::info!("Success creating VMAC interface {}", plan.name);
    }
    let link = addresses::link(handle, &plan.name)
        .await
        .map_err(setup_error)?;
    let index = link.header.index;
    if family == Family::Ipv4 {
        change(handle, devconf_message(index, &VMAC_SETTINGS))
            .await
            .map_err(setup_error)?;
        save_and_set_base(handle, base.index, saved)
            .await
            .map_err(setup_error)?;
        if let Err(error) = set_ipv6(&plan.name, false) {
            tracing::warn!("VMAC {}: cannot turn IPv6 off: {error}", plan.name);
        }
    }
    change(handle, no_address_generation_message(index))
        .await
        .map_err(setup_error)?;
    change(handle, up_message(index))
        .await
        .map_err(setup_error)?;
    if family == Family::Ipv6 && !plan.transmit_on_base {
        let address = match source {
            Some(IpAddr::V6(address)) => address,
            _ => base
                .ipv6_link_local
                .unwrap_or_else(|| link_local_from(base.hardware_address)),
        };
        let message = link_local_message(address, index);
        addresses::add(handle, message).await.map_err(setup_error)?;
    }
    let interface = addresses::interface(handle, &plan.name)
        .await
        .map_err(setup_error)?;
    Ok(VirtualMac {
        interface,
        base_index: base.index,
        family,
        transmit_on_base: plan.transmit_on_base,
    })
}

/// Deletes `vmac`, and puts its base's settings back when it was the
/// base's last macvlan. A macvlan already gone counts as deleted.
pub async fn remove(handle: &Handle, vmac: &VirtualMac, saved: &mut SavedBases) {
    delete(handle, vmac.interface.index).await;
    tracing::info!("Success removing VMAC interface {}", vmac.interface.name);
    if vmac.family != Family::Ipv4 {
        return;
    }
    let Some(base) = saved.get_mut(&vmac.base_index) else {
        return;
    };
    base.macvlans -= 1;
    if base.macvlans > 0 {
        return;
    }
    let base = saved.remove(&vmac.base_index).expect("looked up above");
    let message = devconf_message(
        vmac.base_index,
        &base_settings(base.arp_ignore, base.arp_filter),
    );
    if let Err(error) = change(handle, message).await {
        tracing::warn!(
            "cannot put back arp_ignore {} and arp_filter {} on interface {}: {error}",
            base.arp_ignore,
            base.arp_filter,
            vmac.base_index
        );
    }
}

async fn delete(handle: &Handle, index: u32) {
    if let Err(error) = handle.link().del(index).execute().await {
        let gone = matches!(&error, rtnetlink::Error::NetlinkError(message)
            if message.to_io().raw_os_error() == Some(libc::ENODEV));
        if !gone {
            tracing::warn!("cannot delete VMAC interface {index}: {error}");
        }
    }
}

/// Sends an RTM_NEWLINK changing an existing link, with keepalived's
/// flags (no NLM_F_CREATE: a link that went meanwhile is an error).
async fn change(handle: &Handle, message: LinkMessage) -> Result<(), AddressError> {
    handle
        .link()
        .add(message)
        .set_flags(NLM_F_REQUEST | NLM_F_ACK)
        .execute()
        .await?;
    Ok(())
}

/// Reads `arp_ignore` and `arp_filter` of the base before its first
/// macvlan, and sets both to 1.
async fn save_and_set_base(
    handle: &Handle,
    base: u32,
    saved: &mut SavedBases,
) -> Result<(), AddressError> {
    if let Some(known) = saved.get_mut(&base) {
        known.macvlans += 1;
        return Ok(());
    }
    let link = addresses::link_by_index(handle, base).await?;
    let (arp_ignore, arp_filter) = arp_settings(&link).unwrap_or((0, 0));
    if (arp_ignore, arp_filter) != (1, 1) {
        change(handle, devconf_message(base, &base_settings(1, 1))).await?;
    }
    saved.insert(
        base,
        SavedBase {
            arp_ignore,
            arp_filter,
            macvlans: 1,
        },
    );
    Ok(())
}

/// `arp_ignore` and `arp_filter` as a link dump carries them.
fn arp_settings(link: &LinkMessage) -> Option<(u32, u32)> {
    link.attributes
        .iter()
        .find_map(|attribute| match attribute {
            LinkAttribute::AfSpecUnspec(families) => {
                families.iter().find_map(|family| match family {
                    AfSpecUnspec::Inet(settings) => {
                        settings.iter().find_map(|setting| match setting {
                            AfSpecInet::DevConf(configuration) => Some((
                                configuration.arp_ignore as u32,
                                configuration.arpfilter as u32,
                            )),
                            _ => None,
                        })
                    }
                    _ => None,
                })
            }
            _ => None,
        })
}

/// `promote_secondaries` of an interface as a link dump carries it.
pub fn promote_secondaries_of(link: &LinkMessage) -> Option<bool> {
    link.attributes
        .iter()
        .find_map(|attribute| match attribute {
            LinkAttribute::AfSpecUnspec(families) => {
                families.iter().find_map(|family| match family {
                    AfSpecUnspec::Inet(settings) => {
                        settings.iter().find_map(|setting| match setting {
                            AfSpecInet::DevConf(configuration) => {
                                Some(configuration.promote_secondaries != 0)
                            }
                            _ => None,
                        })
                    }
                    _ => None,
                })
            }
            _ => None,
        })
}

/// Sets `promote_secondaries` of interface `index` (an instance's
/// `promote_secondaries`, keepalived's `set_promote_secondaries_devconf`).
pub async fn set_promote_secondaries(
    handle: &Handle,
    index: u32,
    promote: bool,
) -> Result<(), AddressError> {
    change(
        handle,
        devconf_message(index, &[(DEVCONF_PROMOTE_SECONDARIES, u32::from(promote))]),
    )
    .await
}

/// `net/ipv6/conf/NAME/disable_ipv6`: keepalived's `link_set_ipv6`
/// writes the file, for rtnetlink has no way to set it.
fn set_ipv6(name: &str, enabled: bool) -> std::io::Result<()> {
    std::fs::write(
        format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6"),
        if enabled { "0" } else { "1" },
    )
}

fn macvlan_mode(link: &LinkMessage) -> Option<MacVlanMode> {
    let infos = link
        .attributes
        .iter()
        .find_map(|attribute| match attribute {
            LinkAttribute::LinkInfo(infos) => Some(infos),
            _ => None,
        })?;
    if !infos
        .iter()
        .any(|info| matches!(info, LinkInfo::Kind(InfoKind::MacVlan)))
    {
        return None;
    }
    Some(
        infos
            .iter()
            .find_map(|info| match info {
                LinkInfo::Data(InfoData::MacVlan(data)) => {
                    data.iter().find_map(|item| match item {
                        InfoMacVlan::Mode(mode) => Some(*mode),
                        _ => None,
                    })
                }
                _ => None,
            })
            .unwrap_or(MacVlanMode::Other(0)),
    )
}

fn link_of(link: &LinkMessage) -> Option<u32> {
    link.attributes
        .iter()
        .find_map(|attribute| match attribute {
            LinkAttribute::Link(index) => Some(*index),
            _ => None,
        })
}

/// The EUI-64 link-local address of a MAC address (RFC 4291 appendix A),
/// keepalived's `make_link_local_address`.
pub fn link_local_from(mac: [u8; 6]) -> Ipv6Addr {
    Ipv6Addr::from([
        0xfe,
        0x80,
        0,
        0,
        0,
        0,
        0,
        0,
        mac[0] ^ 0x02,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ])
}

/// `address`/64 on interface `index`, the macvlan's link-local address.
fn link_local_message(
    address: Ipv6Addr,
    index: u32,
) -> netlink_packet_route::address::AddressMessage {
    use netlink_packet_route::address::{AddressAttribute, AddressMessage};
    let mut message = AddressMessage::default();
    message.header.family = AddressFamily::Inet6;
    message.header.prefix_len = 64;
    message.header.index = index;
    message
        .attributes
        .push(AddressAttribute::Local(IpAddr::V6(address)));
    message
        .attributes
        .push(AddressAttribute::Address(IpAddr::V6(address)));
    message
}

#[cfg(test)]
mod tests;
