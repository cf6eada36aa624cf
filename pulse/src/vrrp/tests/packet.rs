use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::captures::*;
use crate::vrrp::packet::{
    AUTHENTICATION_PASSWORD, Addresses, Error, HEADER_LEN, Kind, Packet, Repr,
};

fn parse(bytes: &[u8], source: IpAddr, destination: IpAddr) -> Result<Repr, Error> {
    Repr::parse(&Packet::new_checked(bytes)?, &source, &destination)
}

/// Parses `bytes`, checks the emitted form is the same bytes.
fn round_trip(bytes: &[u8], source: IpAddr, destination: IpAddr) -> Repr {
    let repr = parse(bytes, source, destination).unwrap();
    assert_eq!(repr.buffer_len(), bytes.len());
    assert_eq!(repr.to_bytes(&source, &destination), bytes);
    repr
}

fn v4(a: u8, b: u8, c: u8, d: u8) -> Ipv4Addr {
    Ipv4Addr::new(a, b, c, d)
}

#[test]
fn version_2_with_password() {
    let repr = round_trip(&V2_PRIORITY_150, SOURCE_V4, GROUP_V4);
    assert_eq!(
        repr,
        Repr {
            virtual_router_id: 51,
            priority: 150,
            kind: Kind::Version2 {
                advert_interval: 1,
                authentication_type: AUTHENTICATION_PASSWORD,
                authentication_data: *b"secret12",
            },
            addresses: Addresses::Ipv4(vec![v4(192, 0, 2, 100), v4(192, 0, 2, 101)]),
        }
    );
    let stop = round_trip(&V2_PRIORITY_0, SOURCE_V4, GROUP_V4);
    assert_eq!(stop.priority, 0);
    assert_eq!(stop.kind, repr.kind);
    // Version 2's checksum covers the VRRP packet only: any addresses do.
    let other = IpAddr::V4(v4(10, 0, 0, 1));
    assert_eq!(parse(&V2_PRIORITY_150, other, other), Ok(repr));
}

#[test]
fn version_3_ipv4_multicast() {
    let repr = round_trip(&V3_PRIORITY_200, SOURCE_V4, GROUP_V4);
    assert_eq!(
        repr,
        Repr {
            virtual_router_id: 52,
            priority: 200,
            kind: Kind::Version3 {
                max_advert_interval: 50
            },
            addresses: Addresses::Ipv4(vec![v4(192, 0, 2, 100), v4(192, 0, 2, 101)]),
        }
    );
    assert_eq!(round_trip(&V3_PRIORITY_0, SOURCE_V4, GROUP_V4).priority, 0);
    // The pseudo header counts: another source or destination is a bad
    // checksum.
    assert_eq!(
        parse(&V3_PRIORITY_200, PEER_V4, GROUP_V4),
        Err(Error::BadChecksum)
    );
    assert_eq!(
        parse(&V3_PRIORITY_200, SOURCE_V4, PEER_V4),
        Err(Error::BadChecksum)
    );
}

#[test]
fn version_3_ipv4_unicast_checksums_with_the_peer_address() {
    let repr = round_trip(&V3_UNICAST_PRIORITY_100, SOURCE_V4, PEER_V4);
    assert_eq!(repr.virtual_router_id, 54);
    assert_eq!(repr.priority, 100);
    assert_eq!(
        repr.kind,
        Kind::Version3 {
            max_advert_interval: 100
        }
    );
    assert_eq!(repr.addresses, Addresses::Ipv4(vec![v4(192, 0, 2, 110)]));
    assert_eq!(
        round_trip(&V3_UNICAST_PRIORITY_0, SOURCE_V4, PEER_V4).priority,
        0
    );
    assert_eq!(
        parse(&V3_UNICAST_PRIORITY_100, SOURCE_V4, GROUP_V4),
        Err(Error::BadChecksum)
    );
}

#[test]
fn version_3_ipv6() {
    let repr = round_trip(&V3_IPV6_PRIORITY_120, SOURCE_V6, GROUP_V6);
    assert_eq!(
        repr,
        Repr {
            virtual_router_id: 53,
            priority: 120,
            kind: Kind::Version3 {
                max_advert_interval: 100
            },
            addresses: Addresses::Ipv6(vec![
                Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x100),
                Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0x53),
            ]),
        }
    );
    assert_eq!(
        round_trip(&V3_IPV6_PRIORITY_0, SOURCE_V6, GROUP_V6).priority,
        0
    );
    let other = IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1));
    assert_eq!(
        parse(&V3_IPV6_PRIORITY_120, other, GROUP_V6),
        Err(Error::BadChecksum)
    );
}

#[test]
fn every_shorter_prefix_is_truncated_and_longer_is_too_long() {
    for (bytes, source, destination) in [
        (&V2_PRIORITY_150[..], SOURCE_V4, GROUP_V4),
        (&V3_PRIORITY_200[..], SOURCE_V4, GROUP_V4),
        (&V3_IPV6_PRIORITY_120[..], SOURCE_V6, GROUP_V6),
    ] {
        for len in 0..bytes.len() {
            assert_eq!(
                parse(&bytes[..len], source, destination),
                Err(Error::Truncated),
                "{len} bytes"
            );
        }
        let mut longer = bytes.to_vec();
        longer.extend([0, 0]);
        assert_eq!(parse(&longer, source, destination), Err(Error::TooLong));
    }
    assert!(Packet::new_checked(&V2_PRIORITY_150[..HEADER_LEN - 1]).is_err());
}

/// `bytes` with `change` applied and the checksum made right again, so
/// that the check under test is the one that fails.
fn altered(
    bytes: &[u8],
    source: IpAddr,
    destination: IpAddr,
    change: impl FnOnce(&mut Vec<u8>),
) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    change(&mut bytes);
    let mut packet = Packet::new_unchecked(&mut bytes[..]);
    packet.fill_checksum(&source, &destination);
    bytes
}

#[test]
fn wrong_version_type_and_checksum() {
    for version in [0u8, 1, 4, 15] {
        let bytes = altered(&V3_PRIORITY_200, SOURCE_V4, GROUP_V4, |bytes| {
            bytes[0] = (version << 4) | 1;
        });
        assert_eq!(
            parse(&bytes, SOURCE_V4, GROUP_V4),
            Err(Error::WrongVersion(version))
        );
    }
    for packet_type in [0u8, 2, 15] {
        let bytes = altered(&V3_PRIORITY_200, SOURCE_V4, GROUP_V4, |bytes| {
            bytes[0] = 0x30 | packet_type;
        });
        assert_eq!(
            parse(&bytes, SOURCE_V4, GROUP_V4),
            Err(Error::WrongType(packet_type))
        );
    }
    // Every single-bit flip outside the checksum breaks it.
    for (bytes, source, destination) in [
        (&V2_PRIORITY_150[..], SOURCE_V4, GROUP_V4),
        (&V3_IPV6_PRIORITY_120[..], SOURCE_V6, GROUP_V6),
    ] {
        for index in (0..bytes.len()).filter(|&index| index != 0 && index != 3) {
            for bit in 0..8 {
                let mut flipped = bytes.to_vec();
                flipped[index] ^= 1 << bit;
                assert_eq!(
                    parse(&flipped, source, destination),
                    Err(Error::BadChecksum),
                    "byte {index} bit {bit}"
                );
            }
        }
    }
}

#[test]
fn families() {
    assert_eq!(
        parse(&V3_PRIORITY_200, SOURCE_V4, GROUP_V6),
        Err(Error::MixedFamilies)
    );
    // Version 2 has no IPv6 form in keepalived.
    let bytes = altered(&V3_IPV6_PRIORITY_120, SOURCE_V6, GROUP_V6, |bytes| {
        bytes[0] = 0x21;
    });
    assert_eq!(
        parse(&bytes, SOURCE_V6, GROUP_V6),
        Err(Error::Version2OverIpv6)
    );
    // An IPv4 advert read as IPv6: its count asks for 32 bytes of addresses.
    assert_eq!(
        parse(&V3_PRIORITY_200, SOURCE_V6, GROUP_V6),
        Err(Error::Truncated)
    );
}

#[test]
fn version_3_reserved_bits_are_ignored_and_emitted_as_zero() {
    let bytes = altered(&V3_PRIORITY_200, SOURCE_V4, GROUP_V4, |bytes| {
        bytes[4] |= 0xf0;
    });
    let repr = parse(&bytes, SOURCE_V4, GROUP_V4).unwrap();
    assert_eq!(
        repr.kind,
        Kind::Version3 {
            max_advert_interval: 50
        }
    );
    assert_eq!(repr.to_bytes(&SOURCE_V4, &GROUP_V4), V3_PRIORITY_200);
}

#[test]
fn no_addresses() {
    let repr = Repr {
        virtual_router_id: 9,
        priority: 1,
        kind: Kind::Version3 {
            max_advert_interval: 4095,
        },
        addresses: Addresses::Ipv6(Vec::new()),
    };
    let bytes = repr.to_bytes(&SOURCE_V6, &GROUP_V6);
    assert_eq!(bytes.len(), HEADER_LEN);
    assert_eq!(parse(&bytes, SOURCE_V6, GROUP_V6), Ok(repr));
}

#[test]
fn more_than_255_addresses_are_cut_to_255() {
    let repr = Repr {
        virtual_router_id: 1,
        priority: 100,
        kind: Kind::Version3 {
            max_advert_interval: 100,
        },
        addresses: Addresses::Ipv4((0..300u32).map(Ipv4Addr::from).collect()),
    };
    let bytes = repr.to_bytes(&SOURCE_V4, &GROUP_V4);
    assert_eq!(bytes.len(), HEADER_LEN + 255 * 4);
    let parsed = parse(&bytes, SOURCE_V4, GROUP_V4).unwrap();
    assert_eq!(
        parsed.addresses,
        Addresses::Ipv4((0..255u32).map(Ipv4Addr::from).collect())
    );
}

/// Found by the fuzzer: a checksum of 0xffff is the ones'-complement minus
/// zero of 0x0000; it verifies (keepalived's in_csum accepts it too) and
/// the packet is sent again with 0x0000, as keepalived computes it.
#[test]
fn fuzz_regression_checksum_minus_zero() {
    let bytes = [
        0x21, 0x33, 0x96, 0x03, 0x00, 0x01, 0xff, 0xff, 0xff, 0x80, 0xc0, 0xfe, 0x55, 0x00, 0x02,
        0x64, 0xc0, 0x00, 0x02, 0x65, 0x65, 0x74, 0x72, 0x73, 0x65, 0x64, 0x31, 0x32,
    ];
    let repr = parse(&bytes, SOURCE_V4, GROUP_V4).unwrap();
    let mut expected = bytes.to_vec();
    expected[6..8].copy_from_slice(&[0, 0]);
    assert_eq!(repr.to_bytes(&SOURCE_V4, &GROUP_V4), expected);
    assert_eq!(parse(&expected, SOURCE_V4, GROUP_V4), Ok(repr));
}
