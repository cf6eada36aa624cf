//! keepalived's firewall for a master without accept mode (`no_accept`,
//! the default in strict mode): RFC 5798 §6.1 says such a master must not
//! take packets addressed to the virtual addresses it does not own, so
//! keepalived 2.2.7 (built with nftables only, as Debian's is) drops them
//! with nftables: table `keepalived` in families `ip` and `ip6`, a set
//! `vips` of the dropped addresses, and chains `in`/`out` hooked at input
//! and output at priority filter - 1 dropping packets to or from an address
//! of the set. pulse creates the same tables, chains, sets and rules,
//! so that an operator's `nft` scripts and listings keep working: built here
//! as nfnetlink messages without I/O ([`Batch`]), sent by [`Firewall`].
//!
//! Hand-written messages rather than a crate: the few message kinds needed
//! (tables, chains, sets, elements, rules of five expression kinds) are
//! short, keepalived itself builds them by hand, and the nftables crates
//! either wrap libnftnl (C) or cover far more than this.
//!
//! Not done: IPv6 link-local virtual addresses, which keepalived drops in
//! the `in_link_local`/`out_link_local` chains per interface; pulse creates
//! the chains empty and leaves those addresses alone.

// The messages typed on netlink-packet-core, one module per kernel object;
// the batch below does not use them yet.
mod attribute;
pub mod chain;
pub mod data;
pub mod expression;
pub mod message;
pub mod rule;
pub mod set;
pub mod set_element;
pub mod table;

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// keepalived's names (DEFAULT_NFTABLES_TABLE and its chains and sets).
pub const TABLE: &str = "keepalived";
pub const SET: &str = "vips";
pub const NEIGHBOR_DISCOVERY_SET: &str = "neighbor-discovery";
pub const INPUT_CHAIN: &str = "in";
pub const OUTPUT_CHAIN: &str = "out";
pub const INPUT_LINK_LOCAL_CHAIN: &str = "in_link_local";
pub const OUTPUT_LINK_LOCAL_CHAIN: &str = "out_link_local";

const NETLINK_NETFILTER: libc::c_int = 12;
const NFNL_SUBSYS_NFTABLES: u16 = 10;
const NFNL_MSG_BATCH_BEGIN: u16 = 0x10;
const NFNL_MSG_BATCH_END: u16 = 0x11;

const NFT_MSG_NEWTABLE: u16 = 0;
const NFT_MSG_DELTABLE: u16 = 2;
const NFT_MSG_NEWCHAIN: u16 = 3;
const NFT_MSG_NEWRULE: u16 = 6;
const NFT_MSG_NEWSET: u16 = 9;
const NFT_MSG_NEWSETELEM: u16 = 12;
const NFT_MSG_DELSETELEM: u16 = 14;

const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_CREATE: u16 = 0x400;
const NLM_F_APPEND: u16 = 0x800;
const NLMSG_ERROR: u16 = 2;
const NLA_F_NESTED: u16 = 0x8000;

const NFPROTO_IPV4: u8 = 2;
const NFPROTO_IPV6: u8 = 10;

// Attributes (linux/netfilter/nf_tables.h).
const NFTA_TABLE_NAME: u16 = 1;
const NFTA_CHAIN_TABLE: u16 = 1;
const NFTA_CHAIN_NAME: u16 = 3;
const NFTA_CHAIN_HOOK: u16 = 4;
const NFTA_CHAIN_POLICY: u16 = 5;
const NFTA_CHAIN_TYPE: u16 = 7;
const NFTA_HOOK_HOOKNUM: u16 = 1;
const NFTA_HOOK_PRIORITY: u16 = 2;
const NFTA_RULE_TABLE: u16 = 1;
const NFTA_RULE_CHAIN: u16 = 2;
const NFTA_RULE_EXPRESSIONS: u16 = 4;
const NFTA_LIST_ELEM: u16 = 1;
const NFTA_EXPR_NAME: u16 = 1;
const NFTA_EXPR_DATA: u16 = 2;
const NFTA_SET_TABLE: u16 = 1;
const NFTA_SET_NAME: u16 = 2;
const NFTA_SET_FLAGS: u16 = 3;
const NFTA_SET_KEY_TYPE: u16 = 4;
const NFTA_SET_KEY_LEN: u16 = 5;
const NFTA_SET_ID: u16 = 10;
const NFTA_SET_ELEM_LIST_TABLE: u16 = 1;
const NFTA_SET_ELEM_LIST_SET: u16 = 2;
const NFTA_SET_ELEM_LIST_ELEMENTS: u16 = 3;
const NFTA_SET_ELEM_LIST_SET_ID: u16 = 4;
const NFTA_SET_ELEM_KEY: u16 = 1;
const NFTA_DATA_VALUE: u16 = 1;
const NFTA_DATA_VERDICT: u16 = 2;
const NFTA_VERDICT_CODE: u16 = 1;
const NFTA_VERDICT_CHAIN: u16 = 2;
const NFTA_PAYLOAD_DREG: u16 = 1;
const NFTA_PAYLOAD_BASE: u16 = 2;
const NFTA_PAYLOAD_OFFSET: u16 = 3;
const NFTA_PAYLOAD_LEN: u16 = 4;
const NFTA_LOOKUP_SET: u16 = 1;
const NFTA_LOOKUP_SREG: u16 = 2;
const NFTA_LOOKUP_SET_ID: u16 = 4;
const NFTA_IMMEDIATE_DREG: u16 = 1;
const NFTA_IMMEDIATE_DATA: u16 = 2;
const NFTA_CMP_SREG: u16 = 1;
const NFTA_CMP_OP: u16 = 2;
const NFTA_CMP_DATA: u16 = 3;
const NFTA_BITWISE_SREG: u16 = 1;
const NFTA_BITWISE_DREG: u16 = 2;
const NFTA_BITWISE_LEN: u16 = 3;
const NFTA_BITWISE_MASK: u16 = 4;
const NFTA_BITWISE_XOR: u16 = 5;

const NF_INET_LOCAL_IN: u32 = 1;
const NF_INET_LOCAL_OUT: u32 = 3;
const NF_DROP: u32 = 0;
const NF_ACCEPT: u32 = 1;
/// NFT_GOTO, -4.
const NFT_GOTO: u32 = (-4i32) as u32;
const NFT_REG_VERDICT: u32 = 0;
const NFT_REG_1: u32 = 1;
const NFT_PAYLOAD_NETWORK_HEADER: u32 = 1;
const NFT_PAYLOAD_TRANSPORT_HEADER: u32 = 2;
const NFT_CMP_EQ: u32 = 0;
const NFT_SET_CONSTANT: u32 = 0x2;
/// nft's data types, which `nft list` shows the sets' keys as.
const TYPE_IPADDR: u32 = 7;
const TYPE_IP6ADDR: u32 = 8;
const TYPE_ICMP6_TYPE: u32 = 29;
/// Priority filter - 1: before an operator's filter chains.
const PRIORITY: i32 = -1;

/// The set's id within a batch, for the rules that look it up before the
/// transaction commits.
const VIPS_SET_ID: u32 = 1;
const NEIGHBOR_DISCOVERY_SET_ID: u32 = 2;

const ICMPV6: u8 = 58;
const NEIGHBOR_SOLICITATION: u8 = 135;
const NEIGHBOR_ADVERTISEMENT: u8 = 136;

/// `ip` or `ip6`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TableFamily {
    Ipv4,
    Ipv6,
}

impl TableFamily {
    pub fn of(address: &IpAddr) -> TableFamily {
        match address {
            IpAddr::V4(_) => TableFamily::Ipv4,
            IpAddr::V6(_) => TableFamily::Ipv6,
        }
    }

    fn protocol(self) -> u8 {
        match self {
            TableFamily::Ipv4 => NFPROTO_IPV4,
            TableFamily::Ipv6 => NFPROTO_IPV6,
        }
    }

    /// Where the source and destination addresses are in the network
    /// header, and their length.
    fn address_fields(self) -> (u32, u32, u32) {
        match self {
            TableFamily::Ipv4 => (12, 16, 4),
            TableFamily::Ipv6 => (8, 24, 16),
        }
    }
}

/// Netlink attributes, appended to a message being built.
struct Attributes {
    bytes: Vec<u8>,
}

impl Attributes {
    fn new() -> Self {
        Attributes { bytes: Vec::new() }
    }

    fn put(&mut self, kind: u16, value: &[u8]) -> &mut Self {
        let len = 4 + value.len();
        self.bytes.extend_from_slice(&(len as u16).to_ne_bytes());
        self.bytes.extend_from_slice(&kind.to_ne_bytes());
        self.bytes.extend_from_slice(value);
        self.bytes.resize(self.bytes.len().next_multiple_of(4), 0);
        self
    }

    /// nftables wants its numbers in network byte order.
    fn u32(&mut self, kind: u16, value: u32) -> &mut Self {
        self.put(kind, &value.to_be_bytes())
    }

    /// NUL-terminated, as nft sends them.
    fn string(&mut self, kind: u16, value: &str) -> &mut Self {
        let mut bytes = value.as_bytes().to_vec();
        bytes.push(0);
        self.put(kind, &bytes)
    }

    fn nested(&mut self, kind: u16, build: impl FnOnce(&mut Attributes)) -> &mut Self {
        let mut inner = Attributes::new();
        build(&mut inner);
        self.put(kind | NLA_F_NESTED, &inner.bytes)
    }
}

/// One expression of a rule.
enum Expression<'a> {
    /// Loads `len` bytes at `offset` of a header into register 1.
    Payload {
        base: u32,
        offset: u32,
        len: u32,
    },
    /// Register 1 equals `data`.
    Equal(&'a [u8]),
    /// Register 1 = register 1 & `mask`.
    Mask(&'a [u8]),
    /// Register 1 is in the set.
    Lookup {
        set: &'a str,
        id: u32,
    },
    Verdict {
        code: u32,
        chain: Option<&'a str>,
    },
}

impl Expression<'_> {
    fn write(&self, list: &mut Attributes) {
        list.nested(NFTA_LIST_ELEM, |element| match self {
            Expression::Payload { base, offset, len } => {
                element.string(NFTA_EXPR_NAME, "payload");
                element.nested(NFTA_EXPR_DATA, |data| {
                    data.u32(NFTA_PAYLOAD_DREG, NFT_REG_1)
                        .u32(NFTA_PAYLOAD_BASE, *base)
                        .u32(NFTA_PAYLOAD_OFFSET, *offset)
                        .u32(NFTA_PAYLOAD_LEN, *len);
                });
            }
            Expression::Equal(value) => {
                element.string(NFTA_EXPR_NAME, "cmp");
                element.nested(NFTA_EXPR_DATA, |data| {
                    data.u32(NFTA_CMP_SREG, NFT_REG_1)
                        .u32(NFTA_CMP_OP, NFT_CMP_EQ)
                        .nested(NFTA_CMP_DATA, |data| {
                            data.put(NFTA_DATA_VALUE, value);
                        });
                });
            }
            Expression::Mask(mask) => {
                element.string(NFTA_EXPR_NAME, "bitwise");
                element.nested(NFTA_EXPR_DATA, |data| {
                    let zero = vec![0; mask.len()];
                    data.u32(NFTA_BITWISE_SREG, NFT_REG_1)
                        .u32(NFTA_BITWISE_DREG, NFT_REG_1)
                        .u32(NFTA_BITWISE_LEN, mask.len() as u32)
                        .nested(NFTA_BITWISE_MASK, |data| {
                            data.put(NFTA_DATA_VALUE, mask);
                        })
                        .nested(NFTA_BITWISE_XOR, |data| {
                            data.put(NFTA_DATA_VALUE, &zero);
                        });
                });
            }
            Expression::Lookup { set, id } => {
                element.string(NFTA_EXPR_NAME, "lookup");
                element.nested(NFTA_EXPR_DATA, |data| {
                    data.string(NFTA_LOOKUP_SET, set)
                        .u32(NFTA_LOOKUP_SREG, NFT_REG_1)
                        .u32(NFTA_LOOKUP_SET_ID, *id);
                });
            }
            Expression::Verdict { code, chain } => {
                element.string(NFTA_EXPR_NAME, "immediate");
                element.nested(NFTA_EXPR_DATA, |data| {
                    data.u32(NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT).nested(
                        NFTA_IMMEDIATE_DATA,
                        |data| {
                            data.nested(NFTA_DATA_VERDICT, |verdict| {
                                verdict.u32(NFTA_VERDICT_CODE, *code);
                                if let Some(chain) = chain {
                                    verdict.string(NFTA_VERDICT_CHAIN, chain);
                                }
                            });
                        },
                    );
                });
            }
        });
    }
}

/// One nfnetlink transaction: messages between a batch begin and end,
/// applied by the kernel all or nothing. Each asks for an acknowledgement,
/// so that [`Firewall`] knows when the kernel is done and what failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    bytes: Vec<u8>,
    first_sequence: u32,
    sequence: u32,
    /// Messages that will be acknowledged (all but begin and end).
    acknowledged: usize,
}

impl Batch {
    pub fn new(first_sequence: u32) -> Batch {
        let mut batch = Batch {
            bytes: Vec::new(),
            first_sequence,
            sequence: first_sequence,
            acknowledged: 0,
        };
        batch.message(NFNL_MSG_BATCH_BEGIN, 0, NLM_F_REQUEST, &[]);
        batch
    }

    /// The batch with its end, to send.
    pub fn finish(mut self) -> (Vec<u8>, std::ops::Range<u32>, usize) {
        self.message(NFNL_MSG_BATCH_END, 0, NLM_F_REQUEST, &[]);
        (
            self.bytes,
            self.first_sequence..self.sequence,
            self.acknowledged,
        )
    }

    pub fn is_empty(&self) -> bool {
        self.acknowledged == 0
    }

    fn message(&mut self, kind: u16, family: u8, flags: u16, attributes: &[u8]) {
        let (kind, resource) = if kind == NFNL_MSG_BATCH_BEGIN || kind == NFNL_MSG_BATCH_END {
            (kind, NFNL_SUBSYS_NFTABLES)
        } else {
            self.acknowledged += 1;
            (NFNL_SUBSYS_NFTABLES << 8 | kind, 0)
        };
        let flags = if kind >> 8 == NFNL_SUBSYS_NFTABLES {
            flags | NLM_F_ACK
        } else {
            flags
        };
        let len = 16 + 4 + attributes.len();
        self.bytes.extend_from_slice(&(len as u32).to_ne_bytes());
        self.bytes.extend_from_slice(&kind.to_ne_bytes());
        self.bytes.extend_from_slice(&flags.to_ne_bytes());
        self.bytes.extend_from_slice(&self.sequence.to_ne_bytes());
        self.bytes.extend_from_slice(&0u32.to_ne_bytes());
        // struct nfgenmsg: family, version (NFNETLINK_V0), resource id
        // (big endian).
        self.bytes.push(family);
        self.bytes.push(0);
        self.bytes.extend_from_slice(&resource.to_be_bytes());
        self.bytes.extend_from_slice(attributes);
        self.sequence = self.sequence.wrapping_add(1);
    }

    /// Table `keepalived` of `family` as keepalived 2.2.7 sets it up, from
    /// scratch: a table left by a previous run is deleted first (added
    /// before, so that the delete cannot fail).
    pub fn create_table(&mut self, family: TableFamily) {
        let protocol = family.protocol();
        let mut table = Attributes::new();
        table.string(NFTA_TABLE_NAME, TABLE);
        self.message(
            NFT_MSG_NEWTABLE,
            protocol,
            NLM_F_REQUEST | NLM_F_CREATE,
            &table.bytes,
        );
        self.message(NFT_MSG_DELTABLE, protocol, NLM_F_REQUEST, &table.bytes);
        self.message(
            NFT_MSG_NEWTABLE,
            protocol,
            NLM_F_REQUEST | NLM_F_CREATE,
            &table.bytes,
        );
        // keepalived's order, which `nft list` shows.
        self.base_chain(protocol, OUTPUT_CHAIN, NF_INET_LOCAL_OUT);
        self.base_chain(protocol, INPUT_CHAIN, NF_INET_LOCAL_IN);
        if family == TableFamily::Ipv6 {
            self.chain(protocol, INPUT_LINK_LOCAL_CHAIN);
            self.chain(protocol, OUTPUT_LINK_LOCAL_CHAIN);
        }
        let (key_type, key_len) = match family {
            TableFamily::Ipv4 => (TYPE_IPADDR, 4),
            TableFamily::Ipv6 => (TYPE_IP6ADDR, 16),
        };
        self.set(protocol, SET, VIPS_SET_ID, key_type, key_len, 0);
        let (source, destination, len) = family.address_fields();
        let network = |offset| Expression::Payload {
            base: NFT_PAYLOAD_NETWORK_HEADER,
            offset,
            len,
        };
        if family == TableFamily::Ipv6 {
            // Neighbour discovery for the addresses goes on: without it
            // the master could not defend them (keepalived's rules).
            self.set(
                protocol,
                NEIGHBOR_DISCOVERY_SET,
                NEIGHBOR_DISCOVERY_SET_ID,
                TYPE_ICMP6_TYPE,
                1,
                NFT_SET_CONSTANT,
            );
            self.elements(
                NFT_MSG_NEWSETELEM,
                protocol,
                NEIGHBOR_DISCOVERY_SET,
                Some(NEIGHBOR_DISCOVERY_SET_ID),
                &[&[NEIGHBOR_SOLICITATION], &[NEIGHBOR_ADVERTISEMENT]],
            );
            let mut link_local_mask = [0; 16];
            link_local_mask[..2].copy_from_slice(&[0xff, 0xc0]);
            let mut link_local = [0; 16];
            link_local[..2].copy_from_slice(&[0xfe, 0x80]);
            for (chain, offset, link_local_chain) in [
                (INPUT_CHAIN, destination, INPUT_LINK_LOCAL_CHAIN),
                (OUTPUT_CHAIN, source, OUTPUT_LINK_LOCAL_CHAIN),
            ] {
                self.rule(
                    protocol,
                    chain,
                    &[
                        // ip6 nexthdr icmpv6 (keepalived's match).
                        Expression::Payload {
                            base: NFT_PAYLOAD_NETWORK_HEADER,
                            offset: 6,
                            len: 1,
                        },
                        Expression::Equal(&[ICMPV6]),
                        Expression::Payload {
                            base: NFT_PAYLOAD_TRANSPORT_HEADER,
                            offset: 0,
                            len: 1,
                        },
                        Expression::Lookup {
                            set: NEIGHBOR_DISCOVERY_SET,
                            id: NEIGHBOR_DISCOVERY_SET_ID,
                        },
                        Expression::Verdict {
                            code: NF_ACCEPT,
                            chain: None,
                        },
                    ],
                );
                self.rule(
                    protocol,
                    chain,
                    &[
                        network(offset),
                        Expression::Mask(&link_local_mask),
                        Expression::Equal(&link_local),
                        Expression::Verdict {
                            code: NFT_GOTO,
                            chain: Some(link_local_chain),
                        },
                    ],
                );
            }
        }
        for (chain, offset) in [(INPUT_CHAIN, destination), (OUTPUT_CHAIN, source)] {
            let vips = Expression::Lookup {
                set: SET,
                id: VIPS_SET_ID,
            };
            let drop = Expression::Verdict {
                code: NF_DROP,
                chain: None,
            };
            self.rule(protocol, chain, &[network(offset), vips, drop]);
        }
    }

    pub fn delete_table(&mut self, family: TableFamily) {
        let mut table = Attributes::new();
        table.string(NFTA_TABLE_NAME, TABLE);
        self.message(
            NFT_MSG_DELTABLE,
            family.protocol(),
            NLM_F_REQUEST,
            &table.bytes,
        );
    }

    /// Adds (`drop`) or removes addresses of one family to or from the
    /// `vips` set.
    pub fn addresses(&mut self, family: TableFamily, addresses: &[IpAddr], drop: bool) {
        let keys: Vec<Vec<u8>> = addresses
            .iter()
            .filter(|address| TableFamily::of(address) == family)
            .map(|address| match address {
                IpAddr::V4(address) => address.octets().to_vec(),
                IpAddr::V6(address) => address.octets().to_vec(),
            })
            .collect();
        if keys.is_empty() {
            return;
        }
        let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let kind = if drop {
            NFT_MSG_NEWSETELEM
        } else {
            NFT_MSG_DELSETELEM
        };
        self.elements(kind, family.protocol(), SET, None, &keys);
    }

    fn base_chain(&mut self, protocol: u8, name: &str, hook: u32) {
        let mut chain = Attributes::new();
        chain
            .string(NFTA_CHAIN_TABLE, TABLE)
            .string(NFTA_CHAIN_NAME, name)
            .nested(NFTA_CHAIN_HOOK, |hook_attributes| {
                hook_attributes
                    .u32(NFTA_HOOK_HOOKNUM, hook)
                    .u32(NFTA_HOOK_PRIORITY, PRIORITY as u32);
            })
            .u32(NFTA_CHAIN_POLICY, NF_ACCEPT)
            .string(NFTA_CHAIN_TYPE, "filter");
        self.message(
            NFT_MSG_NEWCHAIN,
            protocol,
            NLM_F_REQUEST | NLM_F_CREATE,
            &chain.bytes,
        );
    }

    fn chain(&mut self, protocol: u8, name: &str) {
        let mut chain = Attributes::new();
        chain
            .string(NFTA_CHAIN_TABLE, TABLE)
            .string(NFTA_CHAIN_NAME, name);
        self.message(
            NFT_MSG_NEWCHAIN,
            protocol,
            NLM_F_REQUEST | NLM_F_CREATE,
            &chain.bytes,
        );
    }

    fn set(&mut self, protocol: u8, name: &str, id: u32, key_type: u32, key_len: u32, flags: u32) {
        let mut set = Attributes::new();
        set.string(NFTA_SET_TABLE, TABLE)
            .string(NFTA_SET_NAME, name)
            .u32(NFTA_SET_FLAGS, flags)
            .u32(NFTA_SET_KEY_TYPE, key_type)
            .u32(NFTA_SET_KEY_LEN, key_len)
            .u32(NFTA_SET_ID, id);
        self.message(
            NFT_MSG_NEWSET,
            protocol,
            NLM_F_REQUEST | NLM_F_CREATE,
            &set.bytes,
        );
    }

    fn elements(&mut self, kind: u16, protocol: u8, set: &str, id: Option<u32>, keys: &[&[u8]]) {
        let mut elements = Attributes::new();
        elements
            .string(NFTA_SET_ELEM_LIST_TABLE, TABLE)
            .string(NFTA_SET_ELEM_LIST_SET, set);
        if let Some(id) = id {
            elements.u32(NFTA_SET_ELEM_LIST_SET_ID, id);
        }
        elements.nested(NFTA_SET_ELEM_LIST_ELEMENTS, |list| {
            for key in keys {
                list.nested(NFTA_LIST_ELEM, |element| {
                    element.nested(NFTA_SET_ELEM_KEY, |data| {
                        data.put(NFTA_DATA_VALUE, key);
                    });
                });
            }
        });
        let flags = if kind == NFT_MSG_NEWSETELEM {
            NLM_F_REQUEST | NLM_F_CREATE
        } else {
            NLM_F_REQUEST
        };
        self.message(kind, protocol, flags, &elements.bytes);
    }

    fn rule(&mut self, protocol: u8, chain: &str, expressions: &[Expression]) {
        let mut rule = Attributes::new();
        rule.string(NFTA_RULE_TABLE, TABLE)
            .string(NFTA_RULE_CHAIN, chain)
            .nested(NFTA_RULE_EXPRESSIONS, |list| {
                for expression in expressions {
                    expression.write(list);
                }
            });
        self.message(
            NFT_MSG_NEWRULE,
            protocol,
            NLM_F_REQUEST | NLM_F_CREATE | NLM_F_APPEND,
            &rule.bytes,
        );
    }
}

/// What is dropped, without I/O: how many masters drop each address (two
/// instances may share one), and which tables exist. Tells what a change
/// needs sent.
#[derive(Debug, Default)]
pub struct DropState {
    users: HashMap<IpAddr, usize>,
    tables: Vec<TableFamily>,
}

impl DropState {
    /// The batch that drops `addresses` for one more master: the tables
    /// when a family has none yet, the addresses no master dropped yet.
    pub fn drop_addresses(&mut self, addresses: &[IpAddr], batch: &mut Batch) {
        let mut new = Vec::new();
        for address in addresses {
            let users = self.users.entry(*address).or_default();
            *users += 1;
            if *users == 1 {
                new.push(*address);
            }
        }
        for family in [TableFamily::Ipv4, TableFamily::Ipv6] {
            if !new.iter().any(|address| TableFamily::of(address) == family) {
                continue;
            }
            if !self.tables.contains(&family) {
                batch.create_table(family);
                self.tables.push(family);
            }
            batch.addresses(family, &new, true);
        }
    }

    /// The batch that takes `addresses` out of the sets for one master
    /// fewer (the tables stay, as keepalived's do until it stops).
    pub fn accept_addresses(&mut self, addresses: &[IpAddr], batch: &mut Batch) {
        let mut gone = Vec::new();
        for address in addresses {
            if let Some(users) = self.users.get_mut(address) {
                *users -= 1;
                if *users == 0 {
                    self.users.remove(address);
                    gone.push(*address);
                }
            }
        }
        for family in [TableFamily::Ipv4, TableFamily::Ipv6] {
            if self.tables.contains(&family) {
                batch.addresses(family, &gone, false);
            }
        }
    }

    /// The batch that deletes the tables (pulse stopping).
    pub fn remove_tables(&mut self, batch: &mut Batch) {
        self.users.clear();
        for family in self.tables.drain(..) {
            batch.delete_table(family);
        }
    }
}

/// The nftables firewall: [`DropState`] and a netfilter netlink socket,
/// opened when first needed. Calls block briefly (one round trip to the
/// kernel).
#[derive(Debug, Default)]
pub struct Firewall {
    state: DropState,
    socket: Option<OwnedFd>,
    sequence: u32,
}

impl Firewall {
    pub fn drop_addresses(&mut self, addresses: &[IpAddr]) -> io::Result<()> {
        let mut batch = Batch::new(self.sequence);
        self.state.drop_addresses(addresses, &mut batch);
        self.send(batch)
    }

    pub fn accept_addresses(&mut self, addresses: &[IpAddr]) -> io::Result<()> {
        let mut batch = Batch::new(self.sequence);
        self.state.accept_addresses(addresses, &mut batch);
        self.send(batch)
    }

    pub fn remove_tables(&mut self) -> io::Result<()> {
        let mut batch = Batch::new(self.sequence);
        self.state.remove_tables(&mut batch);
        self.send(batch)
    }

    fn send(&mut self, batch: Batch) -> io::Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let (bytes, sequences, mut expected) = batch.finish();
        self.sequence = sequences.end.wrapping_add(1);
        let socket = match &self.socket {
            Some(socket) => socket,
            None => self.socket.insert(open()?),
        };
        let fd = socket.as_raw_fd();
        // SAFETY: `bytes` is valid for its length.
        let sent = unsafe { libc::send(fd, bytes.as_ptr().cast(), bytes.len(), 0) };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buffer = vec![0u8; 65536];
        let mut failure = None;
        while expected > 0 {
            // SAFETY: `buffer` is valid for its length.
            let received = unsafe { libc::recv(fd, buffer.as_mut_ptr().cast(), buffer.len(), 0) };
            if received < 0 {
                return Err(io::Error::last_os_error());
            }
            for (sequence, error) in acknowledgements(&buffer[..received as usize]) {
                // Answers to an earlier batch that failed half way are
                // not this batch's.
                if !sequences.contains(&sequence) {
                    continue;
                }
                expected -= 1;
                if error != 0 && failure.is_none() {
                    failure = Some(io::Error::from_raw_os_error(-error));
                }
            }
        }
        failure.map_or(Ok(()), Err)
    }
}

fn open() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the descriptor is owned from here on.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            NETLINK_NETFILTER,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is not owned elsewhere.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    // A kernel that never answers must not hang the daemon.
    let timeout = libc::timeval {
        tv_sec: 2,
        tv_usec: 0,
    };
    // SAFETY: `timeout` is a valid timeval for its size.
    let result = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&timeout as *const libc::timeval).cast(),
            size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(socket)
}

/// `(sequence, error)` of each NLMSG_ERROR in `bytes` (error 0: an
/// acknowledgement).
fn acknowledgements(mut bytes: &[u8]) -> Vec<(u32, i32)> {
    let mut found = Vec::new();
    while bytes.len() >= 16 {
        let len = u32::from_ne_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
        let kind = u16::from_ne_bytes(bytes[4..6].try_into().expect("2 bytes"));
        let sequence = u32::from_ne_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if len < 16 || len > bytes.len() {
            break;
        }
        if kind == NLMSG_ERROR && len >= 20 {
            let error = i32::from_ne_bytes(bytes[16..20].try_into().expect("4 bytes"));
            found.push((sequence, error));
        }
        bytes = &bytes[len.next_multiple_of(4).min(bytes.len())..];
    }
    found
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    /// The message kinds of a batch, in order.
    fn kinds(batch: Batch) -> Vec<(u16, u8)> {
        let (bytes, _, _) = batch.finish();
        let mut kinds = Vec::new();
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let len = u32::from_ne_bytes(rest[0..4].try_into().unwrap()) as usize;
            let kind = u16::from_ne_bytes(rest[4..6].try_into().unwrap());
            kinds.push((kind & 0xff, rest[16]));
            rest = &rest[len..];
        }
        kinds
    }

    const V4: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 100));
    const V6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x100));

    #[test]
    fn the_first_master_creates_the_table_and_later_ones_only_add_addresses() {
        let mut state = DropState::default();
        let mut batch = Batch::new(1);
        state.drop_addresses(&[V4], &mut batch);
        assert_eq!(
            kinds(batch),
            [
                (NFNL_MSG_BATCH_BEGIN, 0),
                (NFT_MSG_NEWTABLE, NFPROTO_IPV4),
                (NFT_MSG_DELTABLE, NFPROTO_IPV4),
                (NFT_MSG_NEWTABLE, NFPROTO_IPV4),
                (NFT_MSG_NEWCHAIN, NFPROTO_IPV4),
                (NFT_MSG_NEWCHAIN, NFPROTO_IPV4),
                (NFT_MSG_NEWSET, NFPROTO_IPV4),
                (NFT_MSG_NEWRULE, NFPROTO_IPV4),
                (NFT_MSG_NEWRULE, NFPROTO_IPV4),
                (NFT_MSG_NEWSETELEM, NFPROTO_IPV4),
                (NFNL_MSG_BATCH_END, 0),
            ]
        );
        // A second master with the same address: nothing to send.
        let mut batch = Batch::new(20);
        state.drop_addresses(&[V4], &mut batch);
        assert!(batch.is_empty());
        // One leaves: the address stays for the other.
        let mut batch = Batch::new(30);
        state.accept_addresses(&[V4], &mut batch);
        assert!(batch.is_empty());
        let mut batch = Batch::new(40);
        state.accept_addresses(&[V4], &mut batch);
        assert_eq!(
            kinds(batch),
            [
                (NFNL_MSG_BATCH_BEGIN, 0),
                (NFT_MSG_DELSETELEM, NFPROTO_IPV4),
                (NFNL_MSG_BATCH_END, 0),
            ]
        );
        let mut batch = Batch::new(50);
        state.drop_addresses(&[V6], &mut batch);
        let ipv6 = kinds(batch);
        assert_eq!(ipv6[1], (NFT_MSG_NEWTABLE, NFPROTO_IPV6));
        assert_eq!(
            ipv6.iter()
                .filter(|(kind, _)| *kind == NFT_MSG_NEWRULE)
                .count(),
            6
        );
        let mut batch = Batch::new(60);
        state.remove_tables(&mut batch);
        assert_eq!(
            kinds(batch),
            [
                (NFNL_MSG_BATCH_BEGIN, 0),
                (NFT_MSG_DELTABLE, NFPROTO_IPV4),
                (NFT_MSG_DELTABLE, NFPROTO_IPV6),
                (NFNL_MSG_BATCH_END, 0),
            ]
        );
    }

    #[test]
    fn acknowledgements_are_read_with_their_sequence_and_error() {
        let mut bytes = Vec::new();
        for (sequence, error) in [(7u32, 0i32), (8, -2)] {
            bytes.extend_from_slice(&36u32.to_ne_bytes());
            bytes.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
            bytes.extend_from_slice(&0u16.to_ne_bytes());
            bytes.extend_from_slice(&sequence.to_ne_bytes());
            bytes.extend_from_slice(&0u32.to_ne_bytes());
            bytes.extend_from_slice(&error.to_ne_bytes());
            bytes.extend_from_slice(&[0; 16]);
        }
        assert_eq!(acknowledgements(&bytes), [(7, 0), (8, -2)]);
    }
}
