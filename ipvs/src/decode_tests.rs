//! The readers straight from the bytes (`Service::decode_reply`,
//! `Destination::decode_reply`, what the client's dumps use) against the
//! attribute-list parsers (`from_reply`, what the round-trip tests check),
//! on every service and destination reply captured from the kernel, and on
//! those replies damaged every way a byte can be: both must agree on the
//! object, or both refuse it.

use std::path::Path;

use netlink_packet_core::ParseableParametrized;
use netlink_packet_generic::GenlHeader;

use crate::{Destination, IPVS_GENL_VERSION, IpvsCommand, IpvsMessage, Service};

/// (file, command, attribute bytes) of every IPVS message in a captured
/// reply datagram.
fn captured_replies() -> Vec<(String, u8, Vec<u8>)> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/captured");
    let mut replies = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&folder)
        .expect("tests/captured")
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    names.sort();
    for path in names {
        let text = std::fs::read_to_string(&path).expect("a capture");
        for line in text.lines() {
            let Some(hex) = line.strip_prefix("reply ") else {
                continue;
            };
            let bytes: Vec<u8> = (0..hex.len() / 2)
                .map(|index| u8::from_str_radix(&hex[2 * index..2 * index + 2], 16).expect("hex"))
                .collect();
            let mut offset = 0;
            while offset + 20 <= bytes.len() {
                let length =
                    u32::from_ne_bytes(bytes[offset..offset + 4].try_into().expect("4")) as usize;
                let kind = u16::from_ne_bytes(bytes[offset + 4..offset + 6].try_into().expect("2"));
                if length < 16 || offset + length > bytes.len() {
                    break;
                }
                if kind >= 0x10 && length >= 20 {
                    replies.push((
                        path.display().to_string(),
                        bytes[offset + 16],
                        bytes[offset + 20..offset + length].to_vec(),
                    ));
                }
                offset += (length + 3) & !3;
            }
        }
    }
    replies
}

fn parse(command: u8, attributes: &[u8]) -> Option<IpvsMessage> {
    let header = GenlHeader {
        cmd: command,
        version: IPVS_GENL_VERSION,
    };
    IpvsMessage::parse_with_param(attributes, header).ok()
}

/// Both readers on one message: the same object, or both refuse.
fn assert_agree(what: &str, command: u8, attributes: &[u8]) {
    let command_kind = IpvsCommand::from(command);
    let message = parse(command, attributes);
    let service_lists = message.as_ref().map(Service::from_reply);
    let service_bytes = Service::decode_reply(command_kind, attributes);
    match (&service_lists, &service_bytes) {
        (Some(Ok(lists)), Ok(bytes)) => assert_eq!(lists, bytes, "{what}"),
        (Some(Ok(lists)), Err(error)) => panic!("{what}: {lists:?} read from the bytes: {error}"),
        (_, Ok(bytes)) => panic!("{what}: the list parser refuses {bytes:?}"),
        _ => {}
    }
    let destination_lists = message.as_ref().map(Destination::from_reply);
    let destination_bytes = Destination::decode_reply(command_kind, attributes);
    match (&destination_lists, &destination_bytes) {
        (Some(Ok(lists)), Ok(bytes)) => assert_eq!(lists, bytes, "{what}"),
        (Some(Ok(lists)), Err(error)) => panic!("{what}: {lists:?} read from the bytes: {error}"),
        (_, Ok(bytes)) => panic!("{what}: the list parser refuses {bytes:?}"),
        _ => {}
    }
}

#[test]
fn both_readers_agree_on_every_captured_reply() {
    let replies = captured_replies();
    let services = replies
        .iter()
        .filter(|(_, command, _)| IpvsCommand::from(*command) == IpvsCommand::NewService)
        .count();
    let destinations = replies
        .iter()
        .filter(|(_, command, _)| IpvsCommand::from(*command) == IpvsCommand::NewDestination)
        .count();
    // The captures hold IPv4 and IPv6, fwmark, persistent, tunnel and
    // statistics-bearing replies of both kinds.
    assert!(
        services >= 10 && destinations >= 10,
        "{services} {destinations}"
    );
    for (file, command, attributes) in &replies {
        assert_agree(file, *command, attributes);
        // What the readers make of the other kind's replies.
        for other in [IpvsCommand::NewService, IpvsCommand::NewDestination] {
            assert_agree(file, other.into(), attributes);
        }
    }
}

#[test]
fn both_readers_agree_on_damaged_replies() {
    for (file, command, attributes) in captured_replies() {
        if !matches!(
            IpvsCommand::from(command),
            IpvsCommand::NewService | IpvsCommand::NewDestination
        ) {
            continue;
        }
        for length in 0..attributes.len() {
            assert_agree(
                &format!("{file} cut at {length}"),
                command,
                &attributes[..length],
            );
        }
        let mut damaged = attributes.clone();
        for index in 0..attributes.len() {
            for value in [0x00, 0x01, 0x04, 0x0b, 0x7f, 0xff] {
                damaged[index] = value;
                assert_agree(&format!("{file} byte {index} = {value}"), command, &damaged);
            }
            damaged[index] = attributes[index];
        }
    }
}
