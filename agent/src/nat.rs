//! The host agent's translation and isolation rules, as one nftables
//! batch: pure, no I/O ([`crate::kernel`] sends it, with the routes).
//!
//! The path of a request (docs/sdn.md draws it). The Mux's IPVS sends it
//! by direct routing: the frame's destination is the chosen DIP's MAC, the
//! packet's still the VIP. It arrives here on the network's VXLAN device,
//! `fvxN`, which is not a bridge port: the host routes between it and the
//! segment, so that it can translate.
//!
//! Rules:
//! - **Frames for a DIP are the host's**: `fvxN`'s ingress (table `netdev
//!   fulcrum-agent`, a chain per device) marks the frames addressed to
//!   another MAC, the DIPs', as for this host; the kernel's IP layer
//!   would drop them otherwise (PACKET_OTHERHOST).
//! - **One conntrack zone per network** (table `inet fulcrum-agent`, chain
//!   `zone`, before connection tracking): packets from `fvxN`, from the
//!   segment and (chain `zone-output`) the agent's probes to the segment
//!   are tracked in the network's zone, so that two tenants' flows with
//!   the same addresses (the same DIP address in two networks, a client
//!   reaching both) never meet in one table.
//! - **VIP:port to DIP:backend_port** (chain `translate`, destination NAT):
//!   a request from `fvxN` whose frame was for a DIP's MAC, to a VIP's
//!   address, protocol and frontend port, goes to that DIP's address and
//!   backend port. The frame says which DIP the Mux chose; the source
//!   stays the client's. Connection tracking translates the DIP's replies
//!   back (source VIP:port), and the host routes them by its own routing
//!   table, to its gateway: they never cross the Mux.
//! - **Nothing else from the overlay reaches a segment** (chain
//!   `forward`): a packet from `fvxN` that was not translated is dropped.
//! - **One batch, all or nothing**: the tables are made if missing,
//!   deleted and made again in the same batch, so that no packet sees a
//!   half state; the translations of open connections live in conntrack,
//!   not in the rules, and carry on.
//! - Only found DIPs are translated: the Mux sends nothing to the others,
//!   and their MAC is unknown.
//!
//! The routing half, by rtnetlink in [`crate::kernel`]: a rule `iif fvxN
//! lookup` the network's table ([`routing_table`]), which routes
//! everything on the segment: a translated request leaves by its own
//! network's segment, whatever the host's main table says of the address.

use std::net::IpAddr;

use fulcrum_cluster::schema::Protocol;
use fulcrum_nftables::batch::BaseChain;
use fulcrum_nftables::expression::{conntrack, header, meta};
use fulcrum_nftables::message::{NFPROTO_INET, NFPROTO_IPV4, NFPROTO_IPV6, NFPROTO_NETDEV};
use fulcrum_nftables::{Batch, Expression, hook, priority, verdict};

use crate::desired::{Found, Segment, Translation};

/// The tables' name, in families `inet` and `netdev`.
pub const TABLE: &str = "fulcrum-agent";
/// The priority of the routing rules: before the main table's (32766),
/// after the local table's (0).
pub const RULE_PRIORITY: u32 = 1000;
/// A network's routing table is this plus its zone.
pub const ROUTING_TABLE_BASE: u32 = 1_000_000;

/// linux/if_packet.h
const PACKET_HOST: u8 = 0;
const PACKET_OTHERHOST: u8 = 3;

/// The VXLAN device of `vni` on the host.
pub fn device(vni: u32) -> String {
    format!("fvx{vni}")
}

/// The routing table of a network's translated requests.
pub fn routing_table(segment: &Segment) -> u32 {
    ROUTING_TABLE_BASE + u32::from(segment.zone)
}

/// The batch that makes the rules for `segments` and their
/// `translations`, of which those whose DIP is in `found` (network, DIP
/// address -> MAC).
pub fn ruleset(segments: &[Segment], translations: &[Translation], found: &Found) -> Batch {
    let mut batch = removal();
    if segments.is_empty() {
        return batch;
    }
    let filter = |hook, priority| BaseChain {
        kind: "filter",
        hook,
        priority,
        device: None,
    };

    batch.add_table(NFPROTO_NETDEV, TABLE);
    for segment in segments {
        let name = device(segment.vni);
        batch.add_base_chain(
            NFPROTO_NETDEV,
            TABLE,
            &name,
            BaseChain {
                device: Some(&name),
                ..filter(hook::INGRESS, priority::FILTER)
            },
        );
        let mut rule = vec![
            Expression::meta(meta::PACKET_TYPE),
            Expression::equal(vec![PACKET_OTHERHOST]),
        ];
        rule.extend(Expression::set_meta(meta::PACKET_TYPE, vec![PACKET_HOST]));
        batch.add_rule(NFPROTO_NETDEV, TABLE, &name, rule);
    }

    batch.add_table(NFPROTO_INET, TABLE);
    batch.add_base_chain(
        NFPROTO_INET,
        TABLE,
        "zone",
        filter(hook::PRE_ROUTING, priority::RAW),
    );
    batch.add_base_chain(
        NFPROTO_INET,
        TABLE,
        "zone-output",
        filter(hook::LOCAL_OUT, priority::RAW),
    );
    batch.add_base_chain(
        NFPROTO_INET,
        TABLE,
        "translate",
        BaseChain {
            kind: "nat",
            ..filter(hook::PRE_ROUTING, priority::DESTINATION_NAT)
        },
    );
    batch.add_base_chain(
        NFPROTO_INET,
        TABLE,
        "forward",
        filter(hook::FORWARD, priority::FILTER),
    );
    for segment in segments {
        let overlay = device(segment.vni);
        for (chain, key, interface) in [
            ("zone", meta::INPUT_INTERFACE_NAME, overlay.as_str()),
            ("zone", meta::INPUT_INTERFACE_NAME, &segment.interface),
            (
                "zone-output",
                meta::OUTPUT_INTERFACE_NAME,
                &segment.interface,
            ),
        ] {
            let mut rule = Expression::interface_name(key, interface).to_vec();
            rule.extend(Expression::set_zone(segment.zone));
            batch.add_rule(NFPROTO_INET, TABLE, chain, rule);
        }
        // iifname fvxN ct status & dnat == 0 drop
        let mut rule = Expression::interface_name(meta::INPUT_INTERFACE_NAME, &overlay).to_vec();
        rule.extend([
            Expression::ct(conntrack::STATUS),
            Expression::and(conntrack::STATUS_DESTINATION_NAT.to_ne_bytes().to_vec()),
            Expression::equal(vec![0; 4]),
            Expression::verdict(verdict::DROP, None),
        ]);
        batch.add_rule(NFPROTO_INET, TABLE, "forward", rule);
    }
    for (segment, translation, mac) in installed(segments, translations, found) {
        let (family, vip, dip, destination_offset) =
            match (translation.vip.ip(), translation.dip.ip()) {
                (IpAddr::V4(vip), IpAddr::V4(dip)) => (
                    NFPROTO_IPV4,
                    vip.octets().to_vec(),
                    dip.octets().to_vec(),
                    16,
                ),
                (IpAddr::V6(vip), IpAddr::V6(dip)) => (
                    NFPROTO_IPV6,
                    vip.octets().to_vec(),
                    dip.octets().to_vec(),
                    24,
                ),
                // The policy's check refuses a VIP and a DIP of two
                // families; NAT cannot translate between them.
                _ => continue,
            };
        let length = vip.len() as u32;
        let mut rule =
            Expression::interface_name(meta::INPUT_INTERFACE_NAME, &device(segment.vni)).to_vec();
        rule.extend([
            Expression::payload(header::LINK_LAYER, 0, 6),
            Expression::equal(mac.to_vec()),
            Expression::meta(meta::NETWORK_PROTOCOL),
            Expression::equal(vec![family]),
            Expression::payload(header::NETWORK, destination_offset, length),
            Expression::equal(vip),
            Expression::meta(meta::LAYER4_PROTOCOL),
            Expression::equal(vec![protocol_number(translation.protocol)]),
            Expression::payload(header::TRANSPORT, 2, 2),
            Expression::equal(translation.vip.port().to_be_bytes().to_vec()),
        ]);
        rule.extend(Expression::destination_nat(
            family,
            &dip,
            translation.dip.port(),
        ));
        batch.add_rule(NFPROTO_INET, TABLE, "translate", rule);
    }
    batch
}

/// The translations [`ruleset`] installs: their network served, their
/// DIP found, the VIP and the DIP of one family (NAT cannot translate
/// between two; the policy's check refuses it).
fn installed<'a>(
    segments: &'a [Segment],
    translations: &'a [Translation],
    found: &'a Found,
) -> impl Iterator<Item = (&'a Segment, &'a Translation, &'a [u8; 6])> {
    translations.iter().filter_map(move |translation| {
        let segment = segments
            .iter()
            .find(|segment| segment.network == translation.network)?;
        let mac = found.get(&(translation.network.clone(), translation.dip.ip()))?;
        (translation.vip.is_ipv4() == translation.dip.is_ipv4()).then_some((
            segment,
            translation,
            mac,
        ))
    })
}

/// How many translations [`ruleset`] installs for each of `segments` (0
/// for one with none).
pub fn translations_by_network(
    segments: &[Segment],
    translations: &[Translation],
    found: &Found,
) -> std::collections::BTreeMap<String, u64> {
    let mut counts: std::collections::BTreeMap<String, u64> = segments
        .iter()
        .map(|segment| (segment.network.clone(), 0))
        .collect();
    for (segment, _, _) in installed(segments, translations, found) {
        *counts.entry(segment.network.clone()).or_default() += 1;
    }
    counts
}

/// The batch that deletes the agent's tables, whether or not they exist
/// (each is made first: deleting a missing table would fail the batch).
pub fn removal() -> Batch {
    let mut batch = Batch::new();
    for family in [NFPROTO_INET, NFPROTO_NETDEV] {
        batch.add_table(family, TABLE);
        batch.delete_table(family, TABLE);
    }
    batch
}

/// IPPROTO_*
fn protocol_number(protocol: Protocol) -> u8 {
    match protocol {
        Protocol::Tcp => 6,
        Protocol::Udp => 17,
        Protocol::Sctp => 132,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::net::SocketAddr;

    use fulcrum_nftables::NftablesMessage;
    use fulcrum_nftables::expression::{NatAttribute, register};
    use fulcrum_nftables::rule::RuleAttribute;

    use super::*;

    fn segment(network: &str, vni: u32, interface: &str, zone: u16) -> Segment {
        Segment {
            network: network.into(),
            vni,
            interface: interface.into(),
            zone,
        }
    }

    fn translation(network: &str, vip: &str, dip: &str) -> Translation {
        Translation {
            network: network.into(),
            vip: vip.parse().unwrap(),
            protocol: Protocol::Tcp,
            dip: dip.parse::<SocketAddr>().unwrap(),
        }
    }

    /// The rules of `chain`, each as its expressions.
    fn rules<'b>(batch: &'b Batch, chain: &str) -> Vec<&'b [Expression]> {
        batch
            .messages()
            .filter_map(|message| match message {
                NftablesMessage::NewRule(rule) => {
                    let mut in_chain = false;
                    let mut expressions = None;
                    for attribute in &rule.attributes {
                        match attribute {
                            RuleAttribute::Chain(name) => in_chain = name == chain,
                            RuleAttribute::Expressions(list) => expressions = Some(list.as_slice()),
                            _ => {}
                        }
                    }
                    in_chain.then_some(expressions?)
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn each_found_dip_is_translated_from_its_mac_and_the_vips_port_to_its_backend_port() {
        let segments = [
            segment("tenant-a", 100, "br100", 1),
            segment("tenant-b", 200, "br200", 2),
        ];
        let translations = [
            translation("tenant-a", "203.0.113.10:80", "10.1.0.7:8080"),
            translation("tenant-b", "203.0.113.20:80", "10.1.0.5:8080"),
            // Not found on this host: no rule.
            translation("tenant-a", "203.0.113.10:80", "10.1.0.9:8080"),
        ];
        let found = BTreeMap::from([
            (
                ("tenant-a".to_owned(), "10.1.0.7".parse().unwrap()),
                [2, 0, 0, 0, 1, 7],
            ),
            (
                ("tenant-b".to_owned(), "10.1.0.5".parse().unwrap()),
                [2, 0, 0, 0, 2, 5],
            ),
        ]);
        let batch = ruleset(&segments, &translations, &found);
        let names: Vec<String> = batch.messages().map(ToString::to_string).collect();
        // Replaced whole, netdev then inet.
        assert_eq!(
            names[..6],
            [
                "NEWTABLE inet fulcrum-agent",
                "DELTABLE inet fulcrum-agent",
                "NEWTABLE netdev fulcrum-agent",
                "DELTABLE netdev fulcrum-agent",
                "NEWTABLE netdev fulcrum-agent",
                "NEWCHAIN netdev fulcrum-agent fvx100",
            ]
        );
        let translate = rules(&batch, "translate");
        assert_eq!(translate.len(), 2);
        // What /metrics counts is what the batch holds.
        assert_eq!(
            translations_by_network(&segments, &translations, &found),
            BTreeMap::from([("tenant-a".to_owned(), 1), ("tenant-b".to_owned(), 1)])
        );
        let tenant_b = translate[1];
        assert_eq!(
            tenant_b[..2],
            Expression::interface_name(meta::INPUT_INTERFACE_NAME, "fvx200")
        );
        assert_eq!(tenant_b[3], Expression::equal(vec![2, 0, 0, 0, 2, 5]));
        assert_eq!(tenant_b[7], Expression::equal(vec![203, 0, 113, 20]));
        assert_eq!(tenant_b[11], Expression::equal(vec![0, 80]));
        assert_eq!(
            tenant_b[12..],
            [
                Expression::immediate(register::R1, vec![10, 1, 0, 5]),
                Expression::immediate(register::R2, vec![0x1f, 0x90]),
                Expression::Nat(vec![
                    NatAttribute::Type(1),
                    NatAttribute::Family(2),
                    NatAttribute::AddressMinimum(1),
                    NatAttribute::AddressMaximum(1),
                    NatAttribute::PortMinimum(2),
                    NatAttribute::PortMaximum(2),
                    NatAttribute::Flags(3),
                ]),
            ]
        );
        // Each network's zone, on its overlay, its segment, and the probes
        // to its segment.
        let zone = rules(&batch, "zone");
        assert_eq!(zone.len(), 4);
        assert_eq!(zone[3][2..], Expression::set_zone(2));
        assert_eq!(rules(&batch, "zone-output").len(), 2);
        assert_eq!(rules(&batch, "forward").len(), 2);
        // Every message reads back as written.
        for message in batch.into_netlink(1) {
            let mut bytes = vec![0; message.buffer_len()];
            message.serialize(&mut bytes);
            let parsed =
                netlink_packet_core::NetlinkMessage::<NftablesMessage>::deserialize(&bytes)
                    .unwrap();
            assert_eq!(parsed, message);
        }
    }

    #[test]
    fn without_segments_the_tables_only_go() {
        let names: Vec<String> = ruleset(&[], &[], &BTreeMap::new())
            .messages()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            names,
            [
                "NEWTABLE inet fulcrum-agent",
                "DELTABLE inet fulcrum-agent",
                "NEWTABLE netdev fulcrum-agent",
                "DELTABLE netdev fulcrum-agent",
            ]
        );
    }
}
