use netlink_packet_core::{Emitable, Parseable};
use netlink_packet_route::link::LinkMessage;

use super::*;

/// The messages keepalived 2.2.7 sent for `use_vmac` on an IPv4
/// instance with VRID 51 on `va` (index 2), the macvlan `vrrp.51` made
/// with index 5, as `strace -e write=all` dumped them (the netlink header
/// with its flags and sequence number left out: the request adds them).
const KEEPALIVED_CREATE: &str = "000000000000000000000000000000001c0012000b0001006d6163766c616e00\
    0c000200080001000100000008000500020000000b000300767272702e353100\
    0a00010000005e0001330000";
const KEEPALIVED_DEVCONF: &str = "000000000500000000000000000000002c001a00280002002400010008001300\
    01000000080017000100000008000800000000000800140001000000";
const KEEPALIVED_NO_ADDRESS_GENERATION: &str =
    "0000000005000000000000000000000010001a000c000a000500080001000000";
const KEEPALIVED_UP: &str = "00000000050000000100000001000000";

fn bytes(hex: &str) -> Vec<u8> {
    let hex: String = hex.split_whitespace().collect();
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).unwrap())
        .collect()
}

fn emitted(message: &LinkMessage) -> Vec<u8> {
    let mut buffer = vec![0; message.buffer_len()];
    message.emit(&mut buffer);
    buffer
}

/// A message is written as keepalived wrote it.
fn same_as_keepalived(message: &LinkMessage, keepalived: &str) {
    assert_eq!(emitted(message), bytes(keepalived), "{message:?}");
}

fn plan() -> VmacPlan {
    VmacPlan {
        name: "vrrp.51".into(),
        address: [0x00, 0x00, 0x5e, 0x00, 0x01, 0x33],
        transmit_on_base: false,
    }
}

/// keepalived's strings (`macvlan`, the name) leave their terminating
/// zero out of the attribute's length, rust-netlink's count it (the
/// kernel reads both alike): the message is keepalived's once read, and
/// its bytes but for those two lengths.
#[test]
fn the_macvlan_is_made_as_keepalived_makes_it() {
    let message = create_message(&plan(), 2);
    let keepalived = bytes(KEEPALIVED_CREATE);
    assert_eq!(LinkMessage::parse(keepalived.as_slice()).unwrap(), message);
    let mut counted = keepalived.clone();
    // The lengths of IFLA_INFO_KIND and IFLA_IFNAME.
    for at in [20, 52] {
        assert_eq!(counted[at], 11);
        counted[at] = 12;
    }
    assert_eq!(emitted(&message), counted);
}

#[test]
fn the_macvlan_s_settings_are_sent_as_keepalived_sends_them() {
    same_as_keepalived(&devconf_message(5, &VMAC_SETTINGS), KEEPALIVED_DEVCONF);
    same_as_keepalived(
        &no_address_generation_message(5),
        KEEPALIVED_NO_ADDRESS_GENERATION,
    );
    same_as_keepalived(&up_message(5), KEEPALIVED_UP);
    // Read back, the same messages (not the settings' one: rust-netlink
    // reads IFLA_INET_CONF as the kernel dumps it, the whole array, where
    // a request carries chosen entries).
    for message in [no_address_generation_message(5), up_message(5)] {
        let parsed = LinkMessage::parse(emitted(&message).as_slice()).unwrap();
        assert_eq!(parsed, message);
    }
}

fn vmac(name: Option<&str>, address: Option<config::VmacAddress>) -> config::Vmac {
    config::Vmac {
        name: name.map(str::to_string),
        address,
    }
}

#[test]
fn names_are_keepalived_s_and_never_taken_twice() {
    let plain = vmac(None, None);
    let named = vmac(Some("vrrp.7"), None);
    let instances = [
        (Some(&plain), 7, Family::Ipv4),
        (None, 8, Family::Ipv4),
        // The configured name is kept; the generated ones go around it.
        (Some(&named), 9, Family::Ipv4),
        (Some(&plain), 7, Family::Ipv4),
        (Some(&plain), 7, Family::Ipv6),
        (Some(&plain), 7, Family::Ipv6),
        (Some(&plain), 200, Family::Ipv4),
    ];
    assert_eq!(
        names(&instances, "vrrp"),
        [
            Some("vrrp1.7"),
            None,
            Some("vrrp.7"),
            Some("vrrp2.7"),
            Some("vrrp6.7"),
            Some("vrrp3.7"),
            Some("vrrp.200"),
        ]
        .map(|name| name.map(str::to_string))
    );
    // keepalived shortens a long prefix to fit IFNAMSIZ.
    assert_eq!(
        names(&[(Some(&plain), 255, Family::Ipv4)], "averyverylongprefix"),
        [Some("averyverylo.255".to_string())]
    );
}

#[test]
fn addresses_are_rfc_5798_s_unless_configured() {
    assert_eq!(
        address(&vmac(None, None), 51, Family::Ipv4),
        [0x00, 0x00, 0x5e, 0x00, 0x01, 51]
    );
    assert_eq!(
        address(&vmac(None, None), 51, Family::Ipv6),
        [0x00, 0x00, 0x5e, 0x00, 0x02, 51]
    );
    let five = config::VmacAddress::WithVrid([0x02, 0, 0x5e, 0, 1]);
    assert_eq!(
        address(&vmac(None, Some(five)), 9, Family::Ipv4),
        [0x02, 0, 0x5e, 0, 1, 9]
    );
    let six = config::VmacAddress::Whole([0x02, 1, 2, 3, 4, 5]);
    assert_eq!(
        address(&vmac(None, Some(six)), 9, Family::Ipv4),
        [0x02, 1, 2, 3, 4, 5]
    );
}

#[test]
fn the_link_local_address_is_the_eui_64_one() {
    assert_eq!(
        link_local_from([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]),
        "fe80::5054:ff:fe12:3456".parse::<Ipv6Addr>().unwrap()
    );
}
