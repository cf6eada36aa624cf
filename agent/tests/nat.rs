//! The host agent's nftables rules against the kernel's own bytes.
//!
//! `tests/captured/nat.txt` holds the kernel's dump (GETRULE, families
//! netdev and inet) of the rules `fulcrum_agent::nat::ruleset` makes for
//! the scenario below, one `reply <hex>` line per rule, as the kernel sent
//! them. The tests check that every message parses into the typed messages
//! and is written back to the same bytes, and that the kernel holds the
//! expressions the agent sent, rule for rule, in order.
//!
//! Captured again (root, nftables, on any kernel: no IPVS needed) with
//! `cargo test -p fulcrum-agent --test nat -- --ignored capture`, which
//! loads the rules in a network namespace of its own with the two VXLAN
//! devices their netdev chains hook.
//!
//! The captured integers are in the byte order of this x86_64 machine, so
//! these run on little-endian machines only.
#![cfg(target_endian = "little")]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;

use fulcrum_agent::desired::{Found, Segment, Translation};
use fulcrum_agent::nat;
use fulcrum_cluster::schema::Protocol;
use fulcrum_nftables::message::{NFPROTO_INET, NFPROTO_NETDEV};
use fulcrum_nftables::rule::{RuleAttribute, RuleMessage};
use fulcrum_nftables::{Expression, NftablesMessage};
use labkit::captured::{Direction, Line, hex};
use netlink_packet_core::{NetlinkMessage, NetlinkPayload};

const CAPTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/captured/nat.txt");

/// Two networks on one host, the same DIP address in both: host2 of the
/// lab's topology with a second tenant-a DIP.
fn scenario() -> (Vec<Segment>, Vec<Translation>, Found) {
    let segment = |network: &str, vni, interface: &str, zone| Segment {
        network: network.into(),
        vni,
        interface: interface.into(),
        zone,
    };
    let translation = |network: &str, vip: &str, protocol, dip: &str| Translation {
        network: network.into(),
        vip: vip.parse().unwrap(),
        protocol,
        dip: dip.parse::<SocketAddr>().unwrap(),
    };
    (
        vec![
            segment("tenant-a", 100, "br100", 1),
            segment("tenant-b", 200, "br200", 2),
        ],
        vec![
            translation(
                "tenant-a",
                "203.0.113.10:80",
                Protocol::Tcp,
                "10.1.0.7:8080",
            ),
            translation(
                "tenant-a",
                "203.0.113.10:80",
                Protocol::Tcp,
                "10.1.0.5:8080",
            ),
            translation(
                "tenant-b",
                "203.0.113.20:53",
                Protocol::Udp,
                "10.1.0.5:5353",
            ),
        ],
        BTreeMap::from([
            (
                ("tenant-a".to_owned(), "10.1.0.7".parse().unwrap()),
                [2, 0, 0, 0, 1, 7],
            ),
            (
                ("tenant-a".to_owned(), "10.1.0.5".parse().unwrap()),
                [2, 0, 0, 0, 1, 5],
            ),
            (
                ("tenant-b".to_owned(), "10.1.0.5".parse().unwrap()),
                [2, 0, 0, 0, 2, 5],
            ),
        ]),
    )
}

/// Each rule the batch makes: (family, chain, expressions), in order.
fn sent() -> Vec<(u8, String, Vec<Expression>)> {
    let (segments, translations, found) = scenario();
    nat::ruleset(&segments, &translations, &found)
        .messages()
        .filter_map(|message| match message {
            NftablesMessage::NewRule(rule) => Some(rule_of(rule)),
            _ => None,
        })
        .collect()
}

fn rule_of(rule: &RuleMessage) -> (u8, String, Vec<Expression>) {
    let mut chain = String::new();
    let mut expressions = Vec::new();
    for attribute in &rule.attributes {
        match attribute {
            RuleAttribute::Chain(name) => chain.clone_from(name),
            RuleAttribute::Expressions(list) => expressions.clone_from(list),
            _ => {}
        }
    }
    (rule.header.family, chain, expressions)
}

fn captured() -> Vec<Line> {
    let text = std::fs::read_to_string(CAPTURE).expect("the capture is in the repository");
    text.lines()
        .enumerate()
        .filter_map(|(number, line)| Line::read(number + 1, line))
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn the_kernels_rules_read_and_write_back_to_its_bytes() {
    let lines = captured();
    assert!(lines.len() > 10, "{} lines", lines.len());
    for line in &lines {
        assert_eq!(line.direction, Direction::Reply, "line {}", line.number);
        let message = NetlinkMessage::<NftablesMessage>::deserialize(&line.bytes)
            .unwrap_or_else(|error| panic!("line {}: {error}", line.number));
        let mut bytes = vec![0; message.buffer_len()];
        message.serialize(&mut bytes);
        // The kernel writes nftables' nests without NLA_F_NESTED
        // (nla_nest_start_noflag); ours carry it, as libnftnl's requests
        // do. Any other difference is a fault.
        assert_eq!(bytes.len(), line.bytes.len(), "line {}", line.number);
        for (index, (ours, kernels)) in bytes.iter().zip(&line.bytes).enumerate() {
            assert!(
                ours == kernels || *ours == kernels | 0x80,
                "line {}, byte {index}: {ours:#04x} written for the kernel's {kernels:#04x}\n\
                 ours:   {}\nkernel: {}",
                line.number,
                hex(&bytes),
                hex(&line.bytes)
            );
        }
        let again = NetlinkMessage::<NftablesMessage>::deserialize(&bytes).unwrap();
        assert_eq!(again, message, "line {}", line.number);
    }
}

#[test]
fn the_kernel_holds_the_rules_the_agent_sends() {
    let held: Vec<_> = captured()
        .iter()
        .map(|line| {
            let message = NetlinkMessage::<NftablesMessage>::deserialize(&line.bytes).unwrap();
            let NetlinkPayload::InnerMessage(NftablesMessage::NewRule(rule)) = message.payload
            else {
                panic!("line {}: not a rule: {:?}", line.number, message.payload);
            };
            rule_of(&rule)
        })
        .collect();
    let sent = sent();
    // The kernel dumps netdev's rules first when asked for both: compare
    // each family's in order.
    for family in [NFPROTO_NETDEV, NFPROTO_INET] {
        let of = |rules: &[(u8, String, Vec<Expression>)]| -> Vec<(String, Vec<Expression>)> {
            rules
                .iter()
                .filter(|(rule_family, _, _)| *rule_family == family)
                .map(|(_, chain, expressions)| (chain.clone(), expressions.clone()))
                .collect()
        };
        let (held, sent) = (of(&held), of(&sent));
        assert_eq!(held.len(), sent.len(), "family {family}");
        // Chains are dumped one after another: compare by chain, in order.
        let mut chains: Vec<&String> = sent.iter().map(|(chain, _)| chain).collect();
        chains.dedup();
        for chain in chains {
            let held: Vec<_> = held.iter().filter(|(name, _)| name == chain).collect();
            let sent: Vec<_> = sent.iter().filter(|(name, _)| name == chain).collect();
            assert_eq!(held, sent, "family {family}, chain {chain}");
        }
    }
}

/// Loads the scenario's rules in a namespace of its own and writes the
/// kernel's dump of them to the capture.
#[test]
#[ignore = "captures again: needs root and nftables"]
fn capture() {
    let name = "fulcrum-nat-capture";
    let namespace = labkit::Namespace::create(name).expect("root");
    let lines = namespace
        .run(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                for vni in [100, 200] {
                    let status = std::process::Command::new("ip")
                        .args(["link", "add", &format!("fvx{vni}"), "type", "vxlan"])
                        .args([
                            "id",
                            &vni.to_string(),
                            "dstport",
                            "4789",
                            "local",
                            "127.0.0.1",
                        ])
                        .status()
                        .unwrap();
                    assert!(status.success());
                }
                let (segments, translations, found) = scenario();
                let mut connection = fulcrum_nftables::Connection::open().unwrap();
                connection
                    .apply(nat::ruleset(&segments, &translations, &found))
                    .await
                    .unwrap();
                let mut lines = Vec::new();
                for family in [NFPROTO_NETDEV, NFPROTO_INET] {
                    let request = NftablesMessage::GetRule(RuleMessage::new(
                        family,
                        vec![RuleAttribute::Table(nat::TABLE.to_owned())],
                    ));
                    for bytes in connection.dump(request).await.unwrap() {
                        lines.push(format!("reply {}", hex(&bytes)));
                    }
                }
                lines
            })
        })
        .unwrap();
    let kernel = std::process::Command::new("uname")
        .arg("-r")
        .output()
        .unwrap();
    let mut text = format!(
        "# The kernel's dump (GETRULE netdev, then inet) of the host agent's rules for\n\
         # agent/tests/nat.rs's scenario, by its capture test, on Linux {}\n",
        String::from_utf8_lossy(&kernel.stdout).trim()
    );
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    std::fs::create_dir_all(Path::new(CAPTURE).parent().unwrap()).unwrap();
    std::fs::write(CAPTURE, text).unwrap();
}
