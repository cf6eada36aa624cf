//! The nftables firewall's messages against bytes captured from
//! keepalived 2.2.7 and the kernel.
//!
//! `tests/captured/nftables/*.txt` hold, for each scenario of
//! `nftables/capture.rs` (which re-captures them, see there), the netlink
//! messages keepalived sent on its NETLINK_NETFILTER socket and everything
//! the kernel answered them, one line per message in wire order:
//!
//! ```text
//! # comments: how, where, the scenario and keepalived's configuration
//! request <hex of nlmsghdr + nfgenmsg + attributes>
//! reply <hex ...>
//! ```
//!
//! A datagram's requests come first, then the kernel's answers to it: a
//! batch is its begin, messages and end; a GETTABLE goes alone.
//!
//! The tests check that every message parses into the typed messages and
//! is written back to the same bytes, that the answers parse and
//! acknowledge every request, and that pulse's batch for each change of
//! the scenario is keepalived's, message for message (sequence numbers
//! aside), except where the kernel refused keepalived's.
//!
//! The captured integers are in the byte order of this x86_64 machine, so
//! these run on little-endian machines only.
#![cfg(target_endian = "little")]

use std::fs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

use fulcrum_nftables::table::TableAttribute;
use fulcrum_nftables::{Acknowledgements, Batch, NftablesMessage, netlink_message};
use labkit::captured::{Direction, Line};
use netlink_packet_core::{NLA_F_NESTED, NLM_F_ACK, NLM_F_REQUEST, NetlinkMessage, NetlinkPayload};
use pulse::vrrp::firewall::drop_state::get_table;
use pulse::vrrp::firewall::{
    DropState, Firewall, FirewallError, TABLE, TableFamily, TableSettings, Vmac,
};

#[path = "nftables/capture.rs"]
mod capture;

const CAPTURE_DIRECTORY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/captured/nftables");
/// The scenarios of capture.rs: fewer files means the directory is not what
/// these tests were written against.
const CAPTURES: [&str; 6] = [
    "drop_and_accept",
    "leftover_table",
    "shared_address",
    "table_settings",
    "vmac",
    "vmac_ipv6",
];

const NETLINK_HEADER_LENGTH: usize = 16;
const NFGENMSG_LENGTH: usize = 4;

const V4: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 100));
const V6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x100));

type Message = NetlinkMessage<NftablesMessage>;

/// One datagram keepalived sent, and the kernel's answers.
#[derive(Debug, Clone)]
struct Exchange {
    requests: Vec<Line>,
    replies: Vec<Line>,
}

#[derive(Debug)]
struct Capture {
    name: String,
    lines: Vec<Line>,
}

impl Capture {
    fn all() -> Vec<Capture> {
        let mut paths: Vec<_> = fs::read_dir(CAPTURE_DIRECTORY)
            .unwrap_or_else(|error| panic!("cannot read {CAPTURE_DIRECTORY}: {error}"))
            .map(|entry| entry.expect("directory entry").path())
            .filter(|path| path.extension().is_some_and(|extension| extension == "txt"))
            .collect();
        paths.sort();
        let captures: Vec<Capture> = paths.iter().map(|path| Capture::load(path)).collect();
        for name in CAPTURES {
            assert!(
                captures.iter().any(|capture| capture.name == name),
                "{name}.txt is missing from {CAPTURE_DIRECTORY}"
            );
        }
        captures
    }

    fn named(name: &str) -> Capture {
        Capture::load(&Path::new(CAPTURE_DIRECTORY).join(format!("{name}.txt")))
    }

    fn load(path: &Path) -> Capture {
        let name = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .expect("a named capture")
            .to_owned();
        let text =
            fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let mut lines = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let read = Line::read(number, line)
                .unwrap_or_else(|| panic!("{name}.txt line {number}: unexpected line {line:?}"));
            lines.push(read.unwrap_or_else(|error| panic!("{name}.txt line {number}: {error}")));
        }
        assert!(!lines.is_empty(), "{name}.txt has no messages");
        Capture { name, lines }
    }

    fn location(&self, line: &Line) -> String {
        format!("{}.txt line {}", self.name, line.number)
    }

    fn parse(&self, line: &Line) -> Message {
        Message::deserialize(&line.bytes)
            .unwrap_or_else(|error| panic!("{}: {error}", self.location(line)))
    }

    /// The datagrams: requests up to the next reply, then the replies.
    fn exchanges(&self) -> Vec<Exchange> {
        let mut exchanges: Vec<Exchange> = Vec::new();
        for line in &self.lines {
            match (line.direction, exchanges.last_mut()) {
                (Direction::Request, Some(last)) if last.replies.is_empty() => {
                    last.requests.push(line.clone())
                }
                (Direction::Request, _) => exchanges.push(Exchange {
                    requests: vec![line.clone()],
                    replies: Vec::new(),
                }),
                (Direction::Reply, Some(last)) => last.replies.push(line.clone()),
                (Direction::Reply, None) => {
                    panic!("{}: a reply before any request", self.location(line))
                }
            }
        }
        // A batch goes out as one datagram; whatever else keepalived sends
        // goes alone.
        for exchange in &exchanges {
            let kinds: Vec<NftablesMessage> = exchange
                .requests
                .iter()
                .map(|line| inner(&self.parse(line)))
                .collect();
            if kinds.len() > 1 {
                assert!(
                    matches!(kinds.first(), Some(NftablesMessage::BatchBegin(_)))
                        && matches!(kinds.last(), Some(NftablesMessage::BatchEnd(_))),
                    "{}: several requests that are not a batch",
                    self.location(&exchange.requests[0])
                );
            }
        }
        exchanges
    }
}

fn inner(message: &Message) -> NftablesMessage {
    match &message.payload {
        NetlinkPayload::InnerMessage(inner) => inner.clone(),
        other => panic!("not an nftables message: {other:?}"),
    }
}

fn emit(message: &Message) -> Vec<u8> {
    let mut bytes = vec![0; message.buffer_len()];
    message.serialize(&mut bytes);
    bytes
}

/// `bytes` (one nftables message) with its attributes' padding zeroed.
///
/// keepalived builds its GETTABLE questions in a buffer on the stack
/// (check_table's `char buf[64]`) that libmnl does not clear, so the byte
/// after the table name's NUL is whatever was there; its batches are built
/// in memory it clears. The kernel reads no padding, and pulse writes
/// zeros.
fn zero_padding(bytes: &[u8]) -> Vec<u8> {
    fn walk(bytes: &mut [u8]) {
        let mut offset = 0;
        while offset + 4 <= bytes.len() {
            let length = usize::from(u16::from_ne_bytes([bytes[offset], bytes[offset + 1]]));
            let kind = u16::from_ne_bytes([bytes[offset + 2], bytes[offset + 3]]);
            if length < 4 || offset + length > bytes.len() {
                return;
            }
            if kind & NLA_F_NESTED != 0 {
                walk(&mut bytes[offset + 4..offset + length]);
            }
            let padded = length.next_multiple_of(4).min(bytes.len() - offset);
            bytes[offset + length..offset + padded].fill(0);
            offset += padded;
        }
    }
    let mut bytes = bytes.to_vec();
    walk(&mut bytes[NETLINK_HEADER_LENGTH + NFGENMSG_LENGTH..]);
    bytes
}

/// `bytes` with the sequence number zeroed: keepalived numbers from the
/// time it first sends (and its GETTABLEs take numbers in the middle of
/// the batch it is building), pulse from where its socket is.
fn without_sequence(bytes: &[u8]) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    bytes[8..12].fill(0);
    bytes
}

#[test]
fn every_message_round_trips() {
    let mut messages = 0;
    for capture in Capture::all() {
        for line in &capture.lines {
            let location = capture.location(line);
            let message = capture.parse(line);
            match (&message.payload, line.direction) {
                (NetlinkPayload::InnerMessage(_), _)
                | (NetlinkPayload::Error(_), Direction::Reply) => {}
                (other, direction) => panic!("{location}: {direction:?} {other:?}"),
            }
            let expected = match message.payload {
                NetlinkPayload::InnerMessage(_) => zero_padding(&line.bytes),
                _ => line.bytes.clone(),
            };
            assert_eq!(
                emit(&message),
                expected,
                "{location}: written back differently: {message:?}"
            );
            messages += 1;
        }
    }
    assert!(messages > 100, "only {messages} messages captured");
}

/// Every request asks for an acknowledgement and gets one; an error
/// echoes the whole request, which parses back into it.
#[test]
fn every_request_is_answered() {
    for capture in Capture::all() {
        for exchange in capture.exchanges() {
            let requests: Vec<Message> = exchange
                .requests
                .iter()
                .map(|line| capture.parse(line))
                .collect();
            let location = capture.location(&exchange.requests[0]);
            for request in &requests {
                let delimiter = inner(request).is_batch_delimiter();
                assert_eq!(
                    request.header.flags & NLM_F_ACK != 0,
                    !delimiter,
                    "{location}: {request:?}"
                );
            }
            let mut acknowledgements = Acknowledgements::new(&requests);
            for line in &exchange.replies {
                let reply = capture.parse(line);
                if let NetlinkPayload::Error(error) = &reply.payload
                    && error.code.is_some()
                {
                    let echoed = Message::deserialize(&error.header).unwrap_or_else(|parse| {
                        panic!("{}: the echoed request: {parse}", capture.location(line))
                    });
                    assert!(
                        requests.contains(&echoed),
                        "{}: echoes no request of its batch: {echoed:?}",
                        capture.location(line)
                    );
                }
                acknowledgements.receive(reply);
            }
            assert!(
                acknowledgements.is_complete(),
                "{location}: no answer for {}",
                acknowledgements.pending_description()
            );
        }
    }
}

/// A captured exchange's requests, parsed.
fn requests(capture: &Capture, exchange: &Exchange) -> Vec<Message> {
    exchange
        .requests
        .iter()
        .map(|line| capture.parse(line))
        .collect()
}

/// What the kernel said to an exchange.
fn outcome(capture: &Capture, exchange: &Exchange) -> Result<Vec<NftablesMessage>, FirewallError> {
    let mut acknowledgements = Acknowledgements::new(&requests(capture, exchange));
    for line in &exchange.replies {
        acknowledgements.receive(capture.parse(line));
    }
    assert!(acknowledgements.is_complete());
    acknowledgements.finish()
}

/// keepalived's questions for a previous run's tables, which pulse asks
/// too before its first table; the families whose table the kernel
/// answered with.
fn table_checks(
    capture: &Capture,
    exchanges: &mut impl Iterator<Item = Exchange>,
    table: &str,
) -> Vec<TableFamily> {
    let mut leftovers = Vec::new();
    for family in [TableFamily::Ipv4, TableFamily::Ipv6] {
        let exchange = exchanges.next().expect("a GETTABLE");
        let location = capture.location(&exchange.requests[0]);
        let [line] = exchange.requests.as_slice() else {
            panic!("{location}: not a GETTABLE alone");
        };
        let pulse = netlink_message(get_table(family, table), NLM_F_REQUEST | NLM_F_ACK, 0);
        assert_eq!(
            without_sequence(&zero_padding(&line.bytes)),
            emit(&pulse),
            "{location}: pulse asks {:?}",
            inner(&pulse)
        );
        match outcome(capture, &exchange) {
            Ok(answers) => {
                let [NftablesMessage::NewTable(answered)] = answers.as_slice() else {
                    panic!("{location}: answered {answers:?}");
                };
                assert!(
                    answered
                        .attributes
                        .contains(&TableAttribute::Name(table.to_owned())),
                    "{location}: {answered:?}"
                );
                leftovers.push(family);
            }
            Err(FirewallError::Refused(refusals)) => {
                assert_eq!(refusals.len(), 1, "{location}");
                assert_eq!(refusals[0].error.raw_os_error(), Some(libc::ENOENT));
            }
            Err(error) => panic!("{location}: {error}"),
        }
    }
    leftovers
}

/// pulse's batch is keepalived's next one, and the kernel took
/// keepalived's.
fn same_batch(capture: &Capture, exchange: Option<Exchange>, batch: Batch, what: &str) {
    let exchange = exchange.unwrap_or_else(|| panic!("{}: no batch for {what}", capture.name));
    let location = capture.location(&exchange.requests[0]);
    let pulse = batch.into_netlink(0);
    let keepalived = requests(capture, &exchange);
    let typed =
        |messages: &[Message]| -> Vec<NftablesMessage> { messages.iter().map(inner).collect() };
    assert_eq!(
        typed(&pulse),
        typed(&keepalived),
        "{location}: pulse's batch for {what} differs from keepalived's"
    );
    assert_eq!(pulse.len(), exchange.requests.len(), "{location}");
    for (message, line) in pulse.iter().zip(&exchange.requests) {
        assert_eq!(
            without_sequence(&emit(message)),
            without_sequence(&zero_padding(&line.bytes)),
            "{}: {what}: {}",
            capture.location(line),
            inner(message)
        );
    }
    if let Err(error) = outcome(capture, &exchange) {
        panic!("{location}: the kernel refused keepalived's batch for {what}: {error}");
    }
}

/// keepalived's next batch is one pulse does not send (pulse has none for
/// the change), and the kernel refused it with `refused`.
fn keepalived_only(capture: &Capture, exchange: Option<Exchange>, batch: Batch, refused: &str) {
    let exchange = exchange.unwrap_or_else(|| panic!("{}: no batch", capture.name));
    let location = capture.location(&exchange.requests[0]);
    assert!(
        batch.is_empty(),
        "{location}: pulse sends {:?}",
        batch.messages().collect::<Vec<_>>()
    );
    match outcome(capture, &exchange) {
        Err(error @ FirewallError::Refused(_)) => assert_eq!(error.to_string(), refused),
        other => panic!("{location}: {other:?}"),
    }
}

#[test]
fn pulse_drops_and_accepts_as_keepalived() {
    let capture = Capture::named("drop_and_accept");
    let mut exchanges = capture.exchanges().into_iter();
    let mut state = DropState::default();
    assert!(state.creates_first_table(&[V4]));
    let leftovers = table_checks(&capture, &mut exchanges, TABLE);
    assert_eq!(leftovers, []);
    let mut batch = Batch::new();
    state.drop_addresses(&[V4], &leftovers, &mut batch);
    same_batch(&capture, exchanges.next(), batch, "dropping 192.0.2.100");
    // The ip table exists: keepalived does not ask again for ip6.
    assert!(!state.creates_first_table(&[V6]));
    let mut batch = Batch::new();
    state.drop_addresses(&[V6], &[], &mut batch);
    same_batch(&capture, exchanges.next(), batch, "dropping 2001:db8::100");
    let mut batch = Batch::new();
    state.accept_addresses(&[V4], &mut batch);
    same_batch(&capture, exchanges.next(), batch, "the IPv4 master's fault");
    // keepalived stopping: the IPv6 master's address, then the tables.
    let mut batch = Batch::new();
    state.accept_addresses(&[V6], &mut batch);
    same_batch(
        &capture,
        exchanges.next(),
        batch,
        "the IPv6 master stopping",
    );
    let mut batch = Batch::new();
    state.remove_tables(&mut batch);
    same_batch(&capture, exchanges.next(), batch, "removing the tables");
    assert!(exchanges.next().is_none(), "keepalived sent more");
}

#[test]
fn pulse_deletes_a_leftover_table_as_keepalived() {
    let capture = Capture::named("leftover_table");
    let mut exchanges = capture.exchanges().into_iter();
    let mut state = DropState::default();
    let leftovers = table_checks(&capture, &mut exchanges, TABLE);
    assert_eq!(leftovers, [TableFamily::Ipv4]);
    let mut batch = Batch::new();
    state.drop_addresses(&[V4], &leftovers, &mut batch);
    same_batch(&capture, exchanges.next(), batch, "dropping 192.0.2.100");
    let mut batch = Batch::new();
    state.accept_addresses(&[V4], &mut batch);
    same_batch(&capture, exchanges.next(), batch, "the master stopping");
    let mut batch = Batch::new();
    state.remove_tables(&mut batch);
    same_batch(&capture, exchanges.next(), batch, "removing the tables");
    assert!(exchanges.next().is_none(), "keepalived sent more");
}

/// Two masters of one address: keepalived adds it for each, and deletes
/// it for each when it stops; the kernel refuses the second of each, which
/// keepalived does not notice (it reads only the first acknowledgement of
/// a batch). pulse counts the masters and sends each change once, the
/// messages keepalived's that the kernel took.
#[test]
fn pulse_drops_a_shared_address_once() {
    let capture = Capture::named("shared_address");
    let mut exchanges = capture.exchanges().into_iter();
    let mut state = DropState::default();
    let leftovers = table_checks(&capture, &mut exchanges, TABLE);
    let mut batch = Batch::new();
    state.drop_addresses(&[V4], &leftovers, &mut batch);
    same_batch(&capture, exchanges.next(), batch, "the first master");
    let mut batch = Batch::new();
    state.drop_addresses(&[V4], &[], &mut batch);
    keepalived_only(
        &capture,
        exchanges.next(),
        batch,
        "NEWSETELEM ip keepalived vips: File exists (os error 17)",
    );
    // Stopping: keepalived deletes the element for the first master,
    // pulse only for the last.
    let mut first = Batch::new();
    state.accept_addresses(&[V4], &mut first);
    assert!(first.is_empty());
    let mut batch = Batch::new();
    state.accept_addresses(&[V4], &mut batch);
    same_batch(
        &capture,
        exchanges.next(),
        batch,
        "the first master stopping",
    );
    keepalived_only(
        &capture,
        exchanges.next(),
        Batch::new(),
        "DELSETELEM ip keepalived vips: No such file or directory (os error 2)",
    );
    let mut batch = Batch::new();
    state.remove_tables(&mut batch);
    same_batch(&capture, exchanges.next(), batch, "removing the tables");
    assert!(exchanges.next().is_none(), "keepalived sent more");
}

/// [`Firewall`] against this machine's kernel, in a namespace of its own
/// (root and nft needed; without them the test says so and passes): a
/// table left over is replaced, a message the kernel refuses is named
/// with the kernel's error and changes nothing, the tables go at the end.
#[test]
fn the_firewall_talks_to_the_kernel() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0
        || std::process::Command::new("nft")
            .arg("--version")
            .output()
            .is_err()
    {
        eprintln!("skipping the firewall's kernel test: needs root and nft");
        return;
    }
    let namespace =
        labkit::Namespace::create(&format!("fwtest-{}", std::process::id())).expect("a namespace");
    let nft = |command: &str| -> String {
        let output = namespace
            .command("nft")
            .args(command.split_whitespace())
            .output()
            .expect("nft runs");
        assert!(
            output.status.success(),
            "nft {command}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    // A previous run's table, with something of its own in it.
    nft("add table ip keepalived");
    nft("add chain ip keepalived stale");
    let other = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 101));
    let result = namespace.run(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let mut firewall = Firewall::default();
            firewall.drop_addresses(&[V4, V6]).await.expect("dropped");
            let ruleset = nft("list ruleset");
            assert!(!ruleset.contains("stale"), "the leftover stays:\n{ruleset}");
            assert!(ruleset.contains("192.0.2.100") && ruleset.contains("2001:db8::100"));
            // Someone else's element: pulse's EXCL add is refused, by name.
            nft("add element ip keepalived vips { 192.0.2.101 }");
            let error = firewall
                .drop_addresses(&[other])
                .await
                .expect_err("the kernel refuses an element that is there");
            assert_eq!(
                error.to_string(),
                "NEWSETELEM ip keepalived vips: File exists (os error 17)"
            );
            // Refused, so not counted: accepting it sends nothing, and
            // the element stays.
            firewall
                .accept_addresses(&[other])
                .await
                .expect("nothing to send");
            assert!(nft("list set ip keepalived vips").contains("192.0.2.101"));
            firewall
                .accept_addresses(&[V4, V6])
                .await
                .expect("accepted");
            firewall.remove_tables().await.expect("removed");
            nft("list ruleset")
        })
    });
    let ruleset = result.expect("ran in the namespace");
    assert!(ruleset.trim().is_empty(), "tables left:\n{ruleset}");
}

/// An instance with `use_vmac` (the macvlan index 4 on veth0, index 3, in
/// the capture's namespace), master without accept mode, then stopping:
/// keepalived's vmac sets and rules at start, its `vips` after them in the
/// same table, and at the stop the address, the macvlan, the table.
#[test]
fn pulse_sets_a_vmac_up_as_keepalived() {
    for (name, family, address) in [
        ("vmac", TableFamily::Ipv4, V4),
        ("vmac_ipv6", TableFamily::Ipv6, V6),
    ] {
        let capture = Capture::named(name);
        let mut exchanges = capture.exchanges().into_iter();
        let mut state = DropState::default();
        let vmac = Vmac {
            index: 4,
            base: 3,
            family,
        };
        assert!(state.vmac_creates_first_table());
        let leftovers = table_checks(&capture, &mut exchanges, TABLE);
        let mut batch = Batch::new();
        state.add_vmac(vmac, &leftovers, &mut batch);
        same_batch(&capture, exchanges.next(), batch, "the macvlan");
        assert!(!state.creates_first_table(&[address]));
        let mut batch = Batch::new();
        state.drop_addresses(&[address], &[], &mut batch);
        same_batch(&capture, exchanges.next(), batch, "dropping the address");
        let mut batch = Batch::new();
        state.accept_addresses(&[address], &mut batch);
        same_batch(&capture, exchanges.next(), batch, "the master stopping");
        let mut batch = Batch::new();
        state.remove_vmac(vmac, &mut batch);
        same_batch(&capture, exchanges.next(), batch, "the macvlan going");
        let mut batch = Batch::new();
        state.remove_tables(&mut batch);
        same_batch(&capture, exchanges.next(), batch, "the tables");
        assert!(exchanges.next().is_none(), "{name}: more batches");
    }
}

/// keepalived's table settings (`nftables fulcrum_test`,
/// `nftables_priority -5`, `nftables_counters`): the table's name in every
/// message, the chains' priority, a counter before each rule's verdict.
#[test]
fn pulse_uses_keepalived_s_table_settings() {
    let capture = Capture::named("table_settings");
    let mut exchanges = capture.exchanges().into_iter();
    let mut state = DropState::new(TableSettings {
        table: "fulcrum_test".to_owned(),
        priority: -5,
        counters: true,
    });
    assert!(state.creates_first_table(&[V4]));
    let leftovers = table_checks(&capture, &mut exchanges, "fulcrum_test");
    for (address, what) in [(V4, "dropping 192.0.2.100"), (V6, "dropping 2001:db8::100")] {
        let mut batch = Batch::new();
        state.drop_addresses(&[address], &leftovers, &mut batch);
        same_batch(&capture, exchanges.next(), batch, what);
    }
    for (address, what) in [
        (V4, "the IPv4 master stopping"),
        (V6, "the IPv6 master stopping"),
    ] {
        let mut batch = Batch::new();
        state.accept_addresses(&[address], &mut batch);
        same_batch(&capture, exchanges.next(), batch, what);
    }
    let mut batch = Batch::new();
    state.remove_tables(&mut batch);
    same_batch(&capture, exchanges.next(), batch, "the tables");
    assert!(exchanges.next().is_none());
}
