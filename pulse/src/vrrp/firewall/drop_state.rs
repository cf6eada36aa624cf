//! What is sent, without I/O: [`DropState`] knows which addresses are
//! dropped and which tables exist, and fills a [`Batch`] with the
//! messages keepalived 2.2.7 sends for the same change, in its order and
//! with its attributes (`vrrp_nftables.c`; the captures in
//! pulse/tests/captured/nftables hold its bytes).

use std::collections::HashMap;
use std::net::IpAddr;

use fulcrum_nftables::batch::BaseChain;
use fulcrum_nftables::chain::{ChainAttribute, ChainMessage};
use fulcrum_nftables::data::DataAttribute;
use fulcrum_nftables::expression::register::{R1 as NFT_REG_1, R2 as NFT_REG_2};
use fulcrum_nftables::expression::{
    BitwiseAttribute, CmpAttribute, DupAttribute, Expression, LookupAttribute, MetaAttribute,
    comparison, meta,
};
use fulcrum_nftables::message::{NFPROTO_IPV4, NFPROTO_IPV6, NftablesMessage};
use fulcrum_nftables::set::{SetAttribute, SetMessage};
use fulcrum_nftables::set_element::{
    SetElement, SetElementAttribute, SetElementListAttribute, SetElementMessage,
};
use fulcrum_nftables::table::{TableAttribute, TableMessage};
use fulcrum_nftables::verdict::{ACCEPT as NF_ACCEPT, DROP as NF_DROP, GOTO as NFT_GOTO};
use fulcrum_nftables::{Batch, hook};
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};

/// keepalived's names (DEFAULT_NFTABLES_TABLE and its chains and sets).
pub const TABLE: &str = "keepalived";
pub const SET: &str = "vips";
pub const NEIGHBOR_DISCOVERY_SET: &str = "neighbor-discovery";
pub const INPUT_CHAIN: &str = "in";
pub const OUTPUT_CHAIN: &str = "out";
pub const INPUT_LINK_LOCAL_CHAIN: &str = "in_link_local";
pub const OUTPUT_LINK_LOCAL_CHAIN: &str = "out_link_local";
/// `use_vmac`'s: each macvlan's index to its base's, and (IPv6) the
/// macvlans.
pub const VMAC_MAP: &str = "vmac_map";
pub const VMAC_SET: &str = "vmac_set";

const NF_INET_LOCAL_IN: u32 = hook::LOCAL_IN;
const NF_INET_LOCAL_OUT: u32 = hook::LOCAL_OUT;
const NFT_PAYLOAD_NETWORK_HEADER: u32 = fulcrum_nftables::expression::header::NETWORK;
const NFT_PAYLOAD_TRANSPORT_HEADER: u32 = fulcrum_nftables::expression::header::TRANSPORT;
const NFT_SET_CONSTANT: u32 = 0x2;
/// nft's data types, which `nft list` shows the sets' keys as.
const TYPE_IPADDR: u32 = 7;
const TYPE_IP6ADDR: u32 = 8;
const TYPE_ICMPV6_TYPE: u32 = 29;
const TYPE_IFINDEX: u32 = 20;
const NFT_SET_MAP: u32 = 0x8;
/// libnftnl's NFTNL_UDATA_SET_DATABYTEORDER: the byte order of a map's
/// data.
const NFTNL_UDATA_SET_DATABYTEORDER: u8 = 1;
const IGMP: u8 = 2;
const MLD2_LISTENER_REPORT: u8 = 143;
const ROUTER_SOLICITATION: u8 = 133;
/// `meta oifkind`'s value: the kind's name, NUL padded to IFNAMSIZ.
const MACVLAN_KIND: &[u8; 16] = b"macvlan\0\0\0\0\0\0\0\0\0";
/// keepalived's lookups of the vmac sets carry set id 1 whatever the
/// set's (vrrp_nftables.c `setup_rule_move_igmp`, `add_lookup(..., 1,
/// ...)`); the kernel finds the set by its name.
const VMAC_LOOKUP_SET_ID: u32 = 1;
/// Priority filter - 1 (keepalived's default `nftables_priority`):
/// before an operator's filter chains.
const PRIORITY: i32 = -1;

/// keepalived's table settings (`global_defs`): `nftables [NAME]` (the
/// table's name, default `keepalived`), `nftables_priority` (its base
/// chains' priority, default -1; `nftables` puts it back to -1, so it
/// counts only after), `nftables_counters` (a counter in every rule, just
/// before its verdict).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSettings {
    pub table: String,
    pub priority: i32,
    pub counters: bool,
}

impl Default for TableSettings {
    fn default() -> TableSettings {
        TableSettings {
            table: TABLE.to_owned(),
            priority: PRIORITY,
            counters: false,
        }
    }
}

/// libnftnl's set user data (NFTNL_UDATA_SET_KEYBYTEORDER, a u32 in host
/// order): the byte order nft shows the keys in. keepalived gives
/// addresses big endian and the ICMPv6 types host order.
const NFTNL_UDATA_SET_KEYBYTEORDER: u8 = 0;
const BYTEORDER_HOST_ENDIAN: u32 = 1;
const BYTEORDER_BIG_ENDIAN: u32 = 2;

const ICMPV6: u8 = 58;
const NEIGHBOR_SOLICITATION: u8 = 135;
const NEIGHBOR_ADVERTISEMENT: u8 = 136;

/// A set keepalived creates (setup_set): no flags attribute at all
/// unless it has flags.
struct SetShape {
    name: &'static str,
    flags: Option<u32>,
    key_type: u32,
    key_length: u32,
    byte_order: u32,
    /// A map's data: its type and length (host order).
    data: Option<(u32, u32)>,
}

const VIPS_IPV4: SetShape = SetShape {
    name: SET,
    flags: None,
    key_type: TYPE_IPADDR,
    key_length: 4,
    byte_order: BYTEORDER_BIG_ENDIAN,
    data: None,
};

const VIPS_IPV6: SetShape = SetShape {
    name: SET,
    flags: None,
    key_type: TYPE_IP6ADDR,
    key_length: 16,
    byte_order: BYTEORDER_BIG_ENDIAN,
    data: None,
};

/// The ICMPv6 types let through, a constant set.
const NEIGHBOR_DISCOVERY: SetShape = SetShape {
    name: NEIGHBOR_DISCOVERY_SET,
    flags: Some(NFT_SET_CONSTANT),
    key_type: TYPE_ICMPV6_TYPE,
    key_length: 1,
    byte_order: BYTEORDER_HOST_ENDIAN,
    data: None,
};

/// `map vmac_map { type iface_index : iface_index }`.
const VMAC_MAP_SHAPE: SetShape = SetShape {
    name: VMAC_MAP,
    flags: Some(NFT_SET_MAP),
    key_type: TYPE_IFINDEX,
    key_length: 4,
    byte_order: BYTEORDER_HOST_ENDIAN,
    data: Some((TYPE_IFINDEX, 4)),
};

/// `set vmac_set { type iface_index }`.
const VMAC_SET_SHAPE: SetShape = SetShape {
    name: VMAC_SET,
    flags: None,
    key_type: TYPE_IFINDEX,
    key_length: 4,
    byte_order: BYTEORDER_HOST_ENDIAN,
    data: None,
};

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

    /// The nfgenmsg family (NFPROTO_*).
    pub fn protocol(self) -> u8 {
        match self {
            TableFamily::Ipv4 => NFPROTO_IPV4,
            TableFamily::Ipv6 => NFPROTO_IPV6,
        }
    }

    /// As nft and keepalived's log lines name it.
    pub fn name(self) -> &'static str {
        match self {
            TableFamily::Ipv4 => "ip",
            TableFamily::Ipv6 => "ip6",
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

/// `GETTABLE family TABLE`: whether a previous run left the table (the
/// kernel answers the table, or ENOENT).
pub fn get_table(family: TableFamily, table: &str) -> NftablesMessage {
    NftablesMessage::GetTable(TableMessage::new(
        family.protocol(),
        vec![TableAttribute::Name(table.to_owned())],
    ))
}

/// The messages keepalived sends for a table of `settings`, put into
/// `batch`.
struct Keepalived<'a> {
    batch: &'a mut Batch,
    settings: &'a TableSettings,
}

/// The ids of the vmac sets a batch creates (`None`: made earlier), which
/// their first elements name.
#[derive(Debug, Clone, Copy, Default)]
struct VmacSets {
    map: Option<u32>,
    set: Option<u32>,
}

/// A macvlan in the vmac sets: its index and its base's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vmac {
    pub index: u32,
    pub base: u32,
    pub family: TableFamily,
}

impl Keepalived<'_> {
    /// `nft add table FAMILY keepalived` and `add chain FAMILY keepalived
    /// out { type filter hook output priority -1; policy accept; }`
    /// (nft_setup_ipv4/nft_setup_ipv6).
    fn table(&mut self, family: TableFamily) {
        self.batch
            .add_table(family.protocol(), &self.settings.table);
        self.base_chain(family, OUTPUT_CHAIN, NF_INET_LOCAL_OUT);
    }

    /// The rest of keepalived's `vips` setup (nft_setup_ipv4_vips,
    /// nft_setup_ipv6_vips), its sets numbered from `set_ids`.
    fn vips(&mut self, family: TableFamily, set_ids: &mut u32) {
        let mut next_set_id = || {
            *set_ids += 1;
            *set_ids
        };
        self.base_chain(family, INPUT_CHAIN, NF_INET_LOCAL_IN);
        let (source, destination, length) = family.address_fields();
        let network = |offset| Expression::payload(NFT_PAYLOAD_NETWORK_HEADER, offset, length);
        match family {
            TableFamily::Ipv4 => {
                self.set(family, &VIPS_IPV4, next_set_id());
            }
            TableFamily::Ipv6 => {
                self.chain(family, INPUT_LINK_LOCAL_CHAIN);
                self.chain(family, OUTPUT_LINK_LOCAL_CHAIN);
                self.set(family, &VIPS_IPV6, next_set_id());
                // Neighbour discovery for the addresses goes on: without
                // it the master could not defend them.
                let neighbor_discovery = next_set_id();
                self.set(family, &NEIGHBOR_DISCOVERY, neighbor_discovery);
                self.batch.push(
                    NftablesMessage::NewSetElement(SetElementMessage::new(
                        family.protocol(),
                        vec![
                            SetElementListAttribute::Set(NEIGHBOR_DISCOVERY_SET.to_owned()),
                            SetElementListAttribute::SetId(neighbor_discovery),
                            SetElementListAttribute::Table(self.settings.table.clone()),
                            SetElementListAttribute::Elements(vec![
                                SetElement::key(vec![NEIGHBOR_SOLICITATION]),
                                SetElement::key(vec![NEIGHBOR_ADVERTISEMENT]),
                            ]),
                        ],
                    )),
                    NLM_F_CREATE,
                );
                let mut link_local_mask = [0; 16];
                link_local_mask[..2].copy_from_slice(&[0xff, 0xc0]);
                let mut link_local = [0; 16];
                link_local[..2].copy_from_slice(&[0xfe, 0x80]);
                for (chain, offset, link_local_chain) in [
                    (INPUT_CHAIN, destination, INPUT_LINK_LOCAL_CHAIN),
                    (OUTPUT_CHAIN, source, OUTPUT_LINK_LOCAL_CHAIN),
                ] {
                    // icmpv6 type @neighbor-discovery accept (the next
                    // header, then the ICMPv6 type).
                    self.rule(
                        family,
                        chain,
                        vec![
                            Expression::payload(NFT_PAYLOAD_NETWORK_HEADER, 6, 1),
                            Expression::equal(vec![ICMPV6]),
                            Expression::payload(NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1),
                            Expression::lookup(NEIGHBOR_DISCOVERY_SET),
                            Expression::verdict(NF_ACCEPT, None),
                        ],
                    );
                    // ip6 daddr fe80::/10 goto in_link_local (saddr for
                    // out).
                    self.rule(
                        family,
                        chain,
                        vec![
                            network(offset),
                            Expression::Bitwise(vec![
                                BitwiseAttribute::SourceRegister(NFT_REG_1),
                                BitwiseAttribute::DestinationRegister(NFT_REG_1),
                                BitwiseAttribute::Length(16),
                                BitwiseAttribute::Mask(vec![DataAttribute::Value(
                                    link_local_mask.to_vec(),
                                )]),
                                BitwiseAttribute::Xor(vec![DataAttribute::Value(vec![0; 16])]),
                            ]),
                            Expression::equal(link_local.to_vec()),
                            Expression::verdict(NFT_GOTO, Some(link_local_chain)),
                        ],
                    );
                }
            }
        }
        // ip daddr @vips drop, ip saddr @vips drop.
        for (chain, offset) in [(INPUT_CHAIN, destination), (OUTPUT_CHAIN, source)] {
            self.rule(
                family,
                chain,
                vec![
                    network(offset),
                    Expression::lookup(SET),
                    Expression::verdict(NF_DROP, None),
                ],
            );
        }
    }

    /// keepalived's `nft_setup_igmp`: the vmac map (and for IPv6 the vmac
    /// set), and the rules that keep a macvlan's group membership reports
    /// off it: IGMP (MLDv2) reports sent on a macvlan go out on its base
    /// instead (`dup to ip daddr device oif map @vmac_map drop`), so that
    /// the switch does not learn the virtual MAC address on a backup; an
    /// IPv6 macvlan sends no router solicitation.
    fn vmac_setup(&mut self, family: TableFamily, set_ids: &mut u32) -> VmacSets {
        let mut next_set_id = || {
            *set_ids += 1;
            *set_ids
        };
        let map = next_set_id();
        self.set(family, &VMAC_MAP_SHAPE, map);
        let set = (family == TableFamily::Ipv6).then(|| {
            let set = next_set_id();
            self.set(family, &VMAC_SET_SHAPE, set);
            set
        });
        let macvlan = [
            Expression::Meta(vec![
                MetaAttribute::Key(meta::OUTPUT_INTERFACE_KIND),
                MetaAttribute::DestinationRegister(NFT_REG_2),
            ]),
            Expression::Cmp(vec![
                CmpAttribute::SourceRegister(NFT_REG_2),
                CmpAttribute::Operation(comparison::EQUAL),
                CmpAttribute::Data(vec![DataAttribute::Value(MACVLAN_KIND.to_vec())]),
            ]),
            Expression::Meta(vec![
                MetaAttribute::Key(meta::OUTPUT_INTERFACE),
                MetaAttribute::DestinationRegister(NFT_REG_2),
            ]),
        ];
        let (_, destination, length) = family.address_fields();
        let report = match family {
            TableFamily::Ipv4 => vec![
                Expression::payload(NFT_PAYLOAD_NETWORK_HEADER, 9, 1),
                Expression::equal(vec![IGMP]),
            ],
            TableFamily::Ipv6 => vec![
                Expression::meta(meta::LAYER4_PROTOCOL),
                Expression::equal(vec![ICMPV6]),
                Expression::payload(NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1),
                Expression::equal(vec![MLD2_LISTENER_REPORT]),
            ],
        };
        let mut move_report = report;
        move_report.push(Expression::payload(
            NFT_PAYLOAD_NETWORK_HEADER,
            destination,
            length,
        ));
        move_report.extend(macvlan.clone());
        move_report.extend([
            Expression::Lookup(vec![
                LookupAttribute::SourceRegister(NFT_REG_2),
                LookupAttribute::DestinationRegister(NFT_REG_2),
                LookupAttribute::Set(VMAC_MAP.to_owned()),
                LookupAttribute::SetId(VMAC_LOOKUP_SET_ID),
            ]),
            Expression::Dup(vec![
                DupAttribute::SourceRegisterAddress(NFT_REG_1),
                DupAttribute::SourceRegisterDevice(NFT_REG_2),
            ]),
            Expression::verdict(NF_DROP, None),
        ]);
        self.rule(family, OUTPUT_CHAIN, move_report);
        if family == TableFamily::Ipv6 {
            let mut solicitation = vec![
                Expression::meta(meta::LAYER4_PROTOCOL),
                Expression::equal(vec![ICMPV6]),
                Expression::payload(NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1),
                Expression::equal(vec![ROUTER_SOLICITATION]),
            ];
            solicitation.extend(macvlan);
            solicitation.extend([
                Expression::Lookup(vec![
                    LookupAttribute::SourceRegister(NFT_REG_2),
                    LookupAttribute::Set(VMAC_SET.to_owned()),
                    LookupAttribute::SetId(VMAC_LOOKUP_SET_ID),
                ]),
                Expression::verdict(NF_DROP, None),
            ]);
            self.rule(family, OUTPUT_CHAIN, solicitation);
        }
        VmacSets {
            map: Some(map),
            set,
        }
    }

    /// `vmac`'s elements (keepalived's `nft_update_vmac_family`): the map's
    /// `macvlan : base`, and for IPv6 the set's `macvlan`, each naming its
    /// set's id when this batch creates the set; the indexes in host order.
    fn vmac_elements(&mut self, family: TableFamily, vmac: Vmac, sets: VmacSets, add: bool) {
        let index = vmac.index.to_ne_bytes().to_vec();
        let mut lists = vec![(
            VMAC_MAP,
            sets.map,
            SetElement {
                attributes: vec![
                    SetElementAttribute::Key(vec![DataAttribute::Value(index.clone())]),
                    SetElementAttribute::Data(vec![DataAttribute::Value(
                        vmac.base.to_ne_bytes().to_vec(),
                    )]),
                ],
            },
        )];
        if family == TableFamily::Ipv6 {
            lists.push((VMAC_SET, sets.set, SetElement::key(index)));
        }
        for (name, id, element) in lists {
            let mut attributes = vec![SetElementListAttribute::Set(name.to_owned())];
            attributes.extend(id.map(SetElementListAttribute::SetId));
            attributes.extend([
                SetElementListAttribute::Table(self.settings.table.clone()),
                SetElementListAttribute::Elements(vec![element]),
            ]);
            let message = SetElementMessage::new(family.protocol(), attributes);
            if add {
                self.batch
                    .push(NftablesMessage::NewSetElement(message), NLM_F_CREATE);
            } else {
                self.batch
                    .push(NftablesMessage::DeleteSetElement(message), 0);
            }
        }
    }

    fn base_chain(&mut self, family: TableFamily, name: &str, hook: u32) {
        let base = BaseChain {
            kind: "filter",
            hook,
            priority: self.settings.priority,
            device: None,
        };
        self.batch
            .add_base_chain(family.protocol(), &self.settings.table, name, base);
    }

    fn chain(&mut self, family: TableFamily, name: &str) {
        self.batch.push(
            NftablesMessage::NewChain(ChainMessage::new(
                family.protocol(),
                vec![
                    ChainAttribute::Table(self.settings.table.clone()),
                    ChainAttribute::Name(name.to_owned()),
                ],
            )),
            NLM_F_CREATE,
        );
    }

    fn set(&mut self, family: TableFamily, shape: &SetShape, id: u32) {
        let mut attributes = vec![
            SetAttribute::Table(self.settings.table.clone()),
            SetAttribute::Name(shape.name.to_owned()),
        ];
        attributes.extend(shape.flags.map(SetAttribute::Flags));
        let mut user_data = vec![NFTNL_UDATA_SET_KEYBYTEORDER, 4];
        user_data.extend_from_slice(&shape.byte_order.to_ne_bytes());
        attributes.extend([
            SetAttribute::KeyType(shape.key_type),
            SetAttribute::KeyLength(shape.key_length),
        ]);
        if let Some((data_type, data_length)) = shape.data {
            attributes.extend([
                SetAttribute::DataType(data_type),
                SetAttribute::DataLength(data_length),
            ]);
            user_data.extend([NFTNL_UDATA_SET_DATABYTEORDER, 4]);
            user_data.extend_from_slice(&BYTEORDER_HOST_ENDIAN.to_ne_bytes());
        }
        attributes.extend([SetAttribute::Id(id), SetAttribute::UserData(user_data)]);
        self.batch.push(
            NftablesMessage::NewSet(SetMessage::new(family.protocol(), attributes)),
            NLM_F_CREATE,
        );
    }

    fn rule(&mut self, family: TableFamily, chain: &str, mut expressions: Vec<Expression>) {
        if self.settings.counters {
            // keepalived's add_counter, just before the verdict.
            let verdict = expressions.len() - 1;
            expressions.insert(
                verdict,
                Expression::Other {
                    name: "counter".to_owned(),
                    data: Some(Vec::new()),
                },
            );
        }
        self.batch
            .add_rule(family.protocol(), &self.settings.table, chain, expressions);
    }

    /// The addresses of `family` in `addresses` into (`drop`) or out of
    /// the `vips` set, in one message (keepalived's order of attributes:
    /// the set, then the table).
    fn elements(&mut self, family: TableFamily, addresses: &[IpAddr], drop: bool) {
        let elements: Vec<SetElement> = addresses
            .iter()
            .filter(|address| TableFamily::of(address) == family)
            .map(|address| {
                SetElement::key(match address {
                    IpAddr::V4(address) => address.octets().to_vec(),
                    IpAddr::V6(address) => address.octets().to_vec(),
                })
            })
            .collect();
        if elements.is_empty() {
            return;
        }
        let message = SetElementMessage::new(
            family.protocol(),
            vec![
                SetElementListAttribute::Set(SET.to_owned()),
                SetElementListAttribute::Table(self.settings.table.clone()),
                SetElementListAttribute::Elements(elements),
            ],
        );
        if drop {
            // EXCL as keepalived: an address already there means the
            // count of its masters is wrong, which had better show.
            self.batch.push(
                NftablesMessage::NewSetElement(message),
                NLM_F_CREATE | NLM_F_EXCL,
            );
        } else {
            self.batch
                .push(NftablesMessage::DeleteSetElement(message), 0);
        }
    }
}

/// What is dropped, without I/O: how many masters drop each address (two
/// instances may share one), and which tables exist. Tells what a change
/// needs sent. Cloned before a change and kept only once the kernel took
/// the batch: a batch is all or nothing, so a refused one changed nothing.
#[derive(Debug, Clone, Default)]
pub struct DropState {
    users: HashMap<IpAddr, usize>,
    /// In the order they were created.
    tables: Vec<TableFamily>,
    /// The tables with the `vips` set and its chains and rules.
    vips: Vec<TableFamily>,
    /// The tables with the vmac sets and their rules.
    vmac_tables: Vec<TableFamily>,
    /// keepalived numbers its sets over its whole run (a counter in
    /// setup_set): the last id given.
    set_ids: u32,
    settings: TableSettings,
}

impl DropState {
    /// With keepalived's table settings `settings`.
    pub fn new(settings: TableSettings) -> DropState {
        DropState {
            settings,
            ..DropState::default()
        }
    }

    pub fn settings(&self) -> &TableSettings {
        &self.settings
    }

    fn writer<'a>(settings: &'a TableSettings, batch: &'a mut Batch) -> Keepalived<'a> {
        Keepalived { batch, settings }
    }

    /// `family`'s table with its `out` chain, if it has none yet; before
    /// the first table, the `leftovers` a previous run left are deleted.
    fn ensure_table(&mut self, family: TableFamily, leftovers: &[TableFamily], batch: &mut Batch) {
        if self.tables.contains(&family) {
            return;
        }
        if self.tables.is_empty() {
            for leftover in [TableFamily::Ipv4, TableFamily::Ipv6] {
                if leftovers.contains(&leftover) {
                    batch.delete_table(leftover.protocol(), &self.settings.table);
                }
            }
        }
        Self::writer(&self.settings, batch).table(family);
        self.tables.push(family);
    }

    /// Whether dropping `addresses` creates the first table: keepalived
    /// asks the kernel then for both families' tables (GETTABLE), so as
    /// to delete what a previous run left, and so must the caller before
    /// [`DropState::drop_addresses`].
    pub fn creates_first_table(&self, addresses: &[IpAddr]) -> bool {
        self.tables.is_empty()
            && addresses
                .iter()
                .any(|address| !self.users.contains_key(address))
    }

    /// Drops `addresses` for one more master: the tables of the families
    /// that have none yet (after deleting the `leftovers` a previous run
    /// left, when these are the first), then the addresses no master
    /// dropped yet. keepalived's order: the tables in the order of the
    /// addresses' families, then the elements, IPv4 first.
    pub fn drop_addresses(
        &mut self,
        addresses: &[IpAddr],
        leftovers: &[TableFamily],
        batch: &mut Batch,
    ) {
        let mut new = Vec::new();
        for address in addresses {
            let users = self.users.entry(*address).or_default();
            *users += 1;
            if *users == 1 {
                new.push(*address);
            }
        }
        for address in &new {
            let family = TableFamily::of(address);
            self.ensure_table(family, leftovers, batch);
            if !self.vips.contains(&family) {
                Self::writer(&self.settings, batch).vips(family, &mut self.set_ids);
                self.vips.push(family);
            }
        }
        for family in [TableFamily::Ipv4, TableFamily::Ipv6] {
            Self::writer(&self.settings, batch).elements(family, &new, true);
        }
    }

    /// Takes `addresses` out of the sets for one master fewer (the tables
    /// stay, as keepalived's do until it stops).
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
                Self::writer(&self.settings, batch).elements(family, &gone, false);
            }
        }
    }

    /// Whether adding a macvlan creates the first table (see
    /// [`DropState::creates_first_table`]).
    pub fn vmac_creates_first_table(&self) -> bool {
        self.tables.is_empty()
    }

    /// `vmac` into the vmac sets (keepalived's `nft_add_vmac`, when a
    /// macvlan is made): its family's table first if there is none (after
    /// deleting the `leftovers`, when it is the first), and the sets and
    /// rules if this is the family's first macvlan.
    pub fn add_vmac(&mut self, vmac: Vmac, leftovers: &[TableFamily], batch: &mut Batch) {
        let family = vmac.family;
        self.ensure_table(family, leftovers, batch);
        let sets = if self.vmac_tables.contains(&family) {
            VmacSets::default()
        } else {
            self.vmac_tables.push(family);
            Self::writer(&self.settings, batch).vmac_setup(family, &mut self.set_ids)
        };
        Self::writer(&self.settings, batch).vmac_elements(family, vmac, sets, true);
    }

    /// `vmac` out of the vmac sets (keepalived's `nft_remove_vmac`, when a
    /// macvlan goes); the sets and rules stay until the tables go.
    pub fn remove_vmac(&mut self, vmac: Vmac, batch: &mut Batch) {
        if self.vmac_tables.contains(&vmac.family) {
            Self::writer(&self.settings, batch).vmac_elements(
                vmac.family,
                vmac,
                VmacSets::default(),
                false,
            );
        }
    }

    /// Deletes the tables (pulse stopping), `ip` first as keepalived.
    pub fn remove_tables(&mut self, batch: &mut Batch) {
        self.users.clear();
        self.vips.clear();
        self.vmac_tables.clear();
        for family in [TableFamily::Ipv4, TableFamily::Ipv6] {
            if self.tables.contains(&family) {
                batch.delete_table(family.protocol(), &self.settings.table);
            }
        }
        self.tables.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    /// The messages of a batch as `KIND family table object`.
    fn names(batch: &Batch) -> Vec<String> {
        batch.messages().map(ToString::to_string).collect()
    }

    const V4: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 100));
    const V6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x100));

    #[test]
    fn the_first_master_creates_the_table_and_later_ones_only_add_addresses() {
        let mut state = DropState::default();
        assert!(state.creates_first_table(&[V4]));
        let mut batch = Batch::new();
        state.drop_addresses(&[V4], &[], &mut batch);
        assert_eq!(
            names(&batch),
            [
                "NEWTABLE ip keepalived",
                "NEWCHAIN ip keepalived out",
                "NEWCHAIN ip keepalived in",
                "NEWSET ip keepalived vips",
                "NEWRULE ip keepalived in",
                "NEWRULE ip keepalived out",
                "NEWSETELEM ip keepalived vips",
            ]
        );
        // A second master with the same address: nothing to send.
        assert!(!state.creates_first_table(&[V4]));
        let mut batch = Batch::new();
        state.drop_addresses(&[V4], &[], &mut batch);
        assert!(batch.is_empty());
        // One leaves: the address stays for the other.
        let mut batch = Batch::new();
        state.accept_addresses(&[V4], &mut batch);
        assert!(batch.is_empty());
        state.accept_addresses(&[V4], &mut batch);
        assert_eq!(names(&batch), ["DELSETELEM ip keepalived vips"]);
        // The IPv4 table exists: no question to the kernel for IPv6.
        assert!(!state.creates_first_table(&[V6]));
        let mut batch = Batch::new();
        state.drop_addresses(&[V6], &[TableFamily::Ipv4], &mut batch);
        let ipv6 = names(&batch);
        assert_eq!(ipv6[0], "NEWTABLE ip6 keepalived");
        assert_eq!(
            ipv6.iter()
                .filter(|name| name.starts_with("NEWRULE"))
                .count(),
            6
        );
        let mut batch = Batch::new();
        state.remove_tables(&mut batch);
        assert_eq!(
            names(&batch),
            ["DELTABLE ip keepalived", "DELTABLE ip6 keepalived"]
        );
        assert!(state.creates_first_table(&[V4]));
    }

    #[test]
    fn leftover_tables_go_before_the_first_table_and_both_families_share_a_batch() {
        let mut state = DropState::default();
        let mut batch = Batch::new();
        state.drop_addresses(
            &[V6, V4],
            &[TableFamily::Ipv4, TableFamily::Ipv6],
            &mut batch,
        );
        let names = names(&batch);
        assert_eq!(
            names[..3],
            [
                "DELTABLE ip keepalived",
                "DELTABLE ip6 keepalived",
                "NEWTABLE ip6 keepalived"
            ]
        );
        // The elements after both tables, IPv4 first.
        assert_eq!(
            names[names.len() - 2..],
            [
                "NEWSETELEM ip keepalived vips",
                "NEWSETELEM ip6 keepalived vips"
            ]
        );
        let tables = names
            .iter()
            .filter(|name| name.starts_with("NEWTABLE"))
            .count();
        assert_eq!(tables, 2);
    }
}
