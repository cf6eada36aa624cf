use netlink_packet_core::DefaultNla;

use super::*;
use crate::testing::{parse, round_trip};
use crate::{Stats64Attribute, StatsAttribute};

fn gue_destination() -> Destination {
    Destination {
        weight: 100,
        upper_threshold: 1000,
        lower_threshold: 10,
        ..Destination::new(
            "[2001:db8::2]:8080".parse().unwrap(),
            Forwarding::Tunnel(Tunnel {
                kind: TunnelKind::Gue,
                port: 6080,
                checksum: TunnelChecksum::RemoteChecksum,
            }),
        )
    }
}

#[test]
fn every_attribute_round_trips() {
    let attributes = [
        DestinationAttribute::Address(AddressBytes::Four([10, 0, 0, 2])),
        DestinationAttribute::Address(AddressBytes::padded("10.0.0.2".parse().unwrap())),
        DestinationAttribute::Port(8080),
        DestinationAttribute::Forwarding(3),
        DestinationAttribute::Weight(1),
        DestinationAttribute::UpperThreshold(2),
        DestinationAttribute::LowerThreshold(3),
        DestinationAttribute::ActiveConnections(4),
        DestinationAttribute::InactiveConnections(5),
        DestinationAttribute::PersistentConnections(6),
        DestinationAttribute::Stats(vec![StatsAttribute::OutgoingBytes(7)]),
        DestinationAttribute::Family(10),
        DestinationAttribute::Stats64(vec![Stats64Attribute::OutgoingBytes(8)]),
        DestinationAttribute::TunnelType(1),
        DestinationAttribute::TunnelPort(6080),
        DestinationAttribute::TunnelFlags(2),
        DestinationAttribute::Other(DefaultNla::new(42, vec![])),
    ];
    for attribute in &attributes {
        round_trip(attribute);
    }
}

#[test]
fn tunnel_port_is_big_endian_and_tunnel_flags_host_order() {
    let bytes = round_trip(&DestinationAttribute::TunnelPort(0x17c0));
    assert_eq!(&bytes[4..6], &[0x17, 0xc0]);
    let bytes = round_trip(&DestinationAttribute::TunnelFlags(2));
    assert_eq!(&bytes[4..6], &2u16.to_ne_bytes());
    let bytes = round_trip(&DestinationAttribute::TunnelType(2));
    assert_eq!(bytes, [5, 0, 13, 0, 2, 0, 0, 0]);
}

#[test]
fn model_round_trips_through_attributes() {
    let destinations = [
        gue_destination(),
        Destination::new("10.0.0.2:80".parse().unwrap(), Forwarding::Masquerade),
        Destination::new("10.0.0.3:0".parse().unwrap(), Forwarding::Route),
        Destination::new(
            "10.0.0.4:80".parse().unwrap(),
            Forwarding::Tunnel(Tunnel::default()),
        ),
        Destination::new("127.0.0.1:80".parse().unwrap(), Forwarding::Local),
        Destination::new("10.0.0.5:80".parse().unwrap(), Forwarding::Bypass),
    ];
    for destination in destinations {
        let attributes = destination.to_attributes();
        assert_eq!(
            Destination::from_attributes(&attributes).unwrap(),
            destination
        );
    }
}

#[test]
fn reply_tunnel_attributes_are_ignored_unless_tunnelling() {
    // The kernel reports TUN_* for every destination.
    let mut attributes =
        Destination::new("10.0.0.2:80".parse().unwrap(), Forwarding::Route).to_attributes();
    attributes.extend([
        DestinationAttribute::TunnelType(0),
        DestinationAttribute::TunnelPort(0),
        DestinationAttribute::TunnelFlags(0),
        DestinationAttribute::ActiveConnections(3),
    ]);
    let destination = Destination::from_attributes(&attributes).unwrap();
    assert_eq!(destination.forwarding, Forwarding::Route);
    assert_eq!(
        destination.counters,
        Some(ConnectionCounters {
            active: 3,
            ..Default::default()
        })
    );
}

#[test]
fn family_defaults_only_for_four_byte_addresses() {
    let attributes = [
        DestinationAttribute::Address(AddressBytes::Four([10, 0, 0, 2])),
        DestinationAttribute::Port(80),
        DestinationAttribute::Forwarding(0),
        DestinationAttribute::Weight(1),
        DestinationAttribute::UpperThreshold(0),
        DestinationAttribute::LowerThreshold(0),
    ];
    assert_eq!(
        Destination::from_attributes(&attributes).unwrap().address,
        "10.0.0.2".parse::<IpAddr>().unwrap()
    );
    let mut attributes = attributes.to_vec();
    attributes[0] =
        DestinationAttribute::Address(AddressBytes::padded("10.0.0.2".parse().unwrap()));
    assert!(matches!(
        Destination::from_attributes(&attributes),
        Err(ParseError::MissingAttribute("IPVS_DEST_ATTR_ADDR_FAMILY"))
    ));
    attributes.push(DestinationAttribute::Family(10));
    attributes[0] = DestinationAttribute::Address(AddressBytes::Four([10, 0, 0, 2]));
    assert!(matches!(
        Destination::from_attributes(&attributes),
        Err(ParseError::AddressLength {
            attribute: "IPVS_DEST_ATTR_ADDR",
            ..
        })
    ));
}

#[test]
fn missing_required_attributes_are_reported_by_name() {
    for (kind, name) in [
        (1, "IPVS_DEST_ATTR_ADDR"),
        (2, "IPVS_DEST_ATTR_PORT"),
        (3, "IPVS_DEST_ATTR_FWD_METHOD"),
        (4, "IPVS_DEST_ATTR_WEIGHT"),
        (5, "IPVS_DEST_ATTR_U_THRESH"),
        (6, "IPVS_DEST_ATTR_L_THRESH"),
    ] {
        let mut attributes = gue_destination().to_attributes();
        attributes.retain(|attribute| netlink_packet_core::Nla::kind(attribute) != kind);
        match Destination::from_attributes(&attributes) {
            Err(ParseError::MissingAttribute(missing)) => assert_eq!(missing, name),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn malformed_values_carry_context() {
    let error = parse::<DestinationAttribute>(&[6, 0, 13, 0, 1, 0, 0, 0]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("invalid IPVS_DEST_ATTR_TUN_TYPE value"),
        "{error}"
    );
    let error = parse::<DestinationAttribute>(&[7, 0, 1, 0, 1, 2, 3, 0]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("invalid IPVS_DEST_ATTR_ADDR value"),
        "{error}"
    );
}

#[test]
fn validation_catches_what_the_kernel_rejects() {
    let mut destination = gue_destination();
    destination.weight = u32::MAX;
    assert_eq!(
        destination.validate(Family::Inet6),
        Err(RequestError::Weight(u32::MAX))
    );

    let mut destination = gue_destination();
    destination.lower_threshold = 2000;
    assert!(matches!(
        destination.validate(Family::Inet6),
        Err(RequestError::Thresholds { .. })
    ));

    let mut destination = gue_destination();
    destination.forwarding = Forwarding::Tunnel(Tunnel {
        kind: TunnelKind::Gue,
        port: 0,
        checksum: TunnelChecksum::NoChecksum,
    });
    assert_eq!(
        destination.validate(Family::Inet6),
        Err(RequestError::TunnelPort)
    );

    // A tunnel may cross families, nothing else may.
    assert_eq!(gue_destination().validate(Family::Inet), Ok(()));
    let destination = Destination::new("[2001:db8::2]:80".parse().unwrap(), Forwarding::Route);
    assert!(matches!(
        destination.validate(Family::Inet),
        Err(RequestError::MixedFamily { .. })
    ));
}
