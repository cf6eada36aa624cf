use super::*;
use crate::testing::{parse, round_trip};

#[test]
fn every_32_bit_attribute_round_trips() {
    let statistics = Statistics {
        connections: 1,
        incoming_packets: 2,
        outgoing_packets: 3,
        incoming_bytes: u64::MAX - 4,
        outgoing_bytes: 5,
        connection_rate: 6,
        incoming_packet_rate: 7,
        outgoing_packet_rate: 8,
        incoming_byte_rate: 9,
        outgoing_byte_rate: 10,
    };
    for attribute in statistics.to_attributes() {
        round_trip(&attribute);
    }
    round_trip(&StatsAttribute::Padding(vec![]));
}

#[test]
fn every_64_bit_attribute_round_trips() {
    let statistics = Statistics {
        connections: u64::MAX,
        incoming_packets: 2,
        outgoing_packets: 3,
        incoming_bytes: 4,
        outgoing_bytes: 5,
        connection_rate: 6,
        incoming_packet_rate: 7,
        outgoing_packet_rate: 8,
        incoming_byte_rate: 9,
        outgoing_byte_rate: 10,
    };
    for attribute in statistics.to_attributes64() {
        round_trip(&attribute);
    }
    round_trip(&Stats64Attribute::Padding(vec![]));
}

#[cfg(target_endian = "little")]
#[test]
fn padding_attribute_is_ignored() {
    // Built by hand from nla_put_u64_64bit: an empty IPVS_STATS_ATTR_PAD (11)
    // followed by the aligned u64 IPVS_STATS_ATTR_INBYTES (4).
    let bytes: &[u8] = &[
        4, 0, 11, 0, // PAD, no value
        12, 0, 4, 0, 0x2a, 0, 0, 0, 0, 0, 0, 0, // INBYTES = 42
    ];
    let attributes: Vec<StatsAttribute> = crate::nla::parse_nested(bytes).unwrap();
    assert_eq!(
        attributes,
        vec![
            StatsAttribute::Padding(vec![]),
            StatsAttribute::IncomingBytes(42)
        ]
    );
    assert_eq!(
        Statistics::from_attributes(&attributes),
        Statistics {
            incoming_bytes: 42,
            ..Default::default()
        }
    );
}

#[test]
fn wrong_width_is_a_contextual_error() {
    // IPVS_STATS_ATTR_CONNS with 8 bytes in the 32-bit nest.
    let bytes: &[u8] = &[12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    let error = parse::<StatsAttribute>(bytes).unwrap_err().to_string();
    assert!(
        error.contains("invalid IPVS_STATS_ATTR_CONNS value"),
        "{error}"
    );
}

#[test]
fn stats64_wins_over_stats() {
    let stats = [StatsAttribute::Connections(1)];
    let stats64 = [Stats64Attribute::Connections(1 << 40)];
    assert_eq!(
        Statistics::preferred(
            Some(Statistics::from_attributes(&stats)),
            Some(Statistics::from_attributes64(&stats64))
        )
        .unwrap()
        .connections,
        1 << 40
    );
    assert_eq!(
        Statistics::preferred(Some(Statistics::from_attributes(&stats)), None)
            .unwrap()
            .connections,
        1
    );
    assert_eq!(Statistics::preferred(None, None), None);
}
