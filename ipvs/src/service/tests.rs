use std::net::{IpAddr, Ipv4Addr};

use netlink_packet_core::DefaultNla;

use super::*;
use crate::testing::{parse, round_trip};
use crate::{Stats64Attribute, StatsAttribute};

fn tcp_service() -> Service {
    Service {
        key: ServiceKey::Address {
            protocol: Protocol::Tcp,
            address: "192.0.2.10".parse().unwrap(),
            port: 80,
        },
        scheduler: "wlc".into(),
        flags: ServiceFlags::PERSISTENT | ServiceFlags::SH_PORT,
        timeout: 300,
        netmask: Netmask::Ipv4(Ipv4Addr::new(255, 255, 255, 0)),
        persistence_engine: Some("sip".into()),
        statistics: None,
    }
}

#[test]
fn every_attribute_round_trips() {
    let attributes = [
        ServiceAttribute::Family(10),
        ServiceAttribute::Protocol(132),
        ServiceAttribute::Address(AddressBytes::Four([10, 0, 0, 1])),
        ServiceAttribute::Address(AddressBytes::padded("2001:db8::1".parse().unwrap())),
        ServiceAttribute::Port(443),
        ServiceAttribute::Fwmark(7),
        ServiceAttribute::Scheduler("rr".into()),
        ServiceAttribute::Flags {
            flags: ServiceFlags::ONE_PACKET,
            mask: 0xffff_ffff,
        },
        ServiceAttribute::Timeout(300),
        ServiceAttribute::Netmask(128),
        ServiceAttribute::Stats(vec![
            StatsAttribute::Connections(1),
            StatsAttribute::IncomingBytes(2),
        ]),
        ServiceAttribute::PersistenceEngine("sip".into()),
        ServiceAttribute::Stats64(vec![Stats64Attribute::Connections(1)]),
        ServiceAttribute::Other(DefaultNla::new(99, vec![1, 2, 3])),
    ];
    for attribute in &attributes {
        round_trip(attribute);
    }
}

#[test]
fn port_is_big_endian_on_the_wire() {
    let bytes = round_trip(&ServiceAttribute::Port(0x1f90));
    assert_eq!(bytes, [6, 0, 4, 0, 0x1f, 0x90, 0, 0]);
}

#[test]
fn scheduler_name_is_nul_terminated() {
    let bytes = round_trip(&ServiceAttribute::Scheduler("rr".into()));
    assert_eq!(bytes, [7, 0, 6, 0, b'r', b'r', 0, 0]);
}

#[test]
fn ipv4_netmask_bytes_are_the_mask_octets() {
    let bytes = round_trip(&ServiceAttribute::Netmask(
        Netmask::Ipv4(Ipv4Addr::new(255, 255, 255, 0)).to_raw(),
    ));
    assert_eq!(&bytes[4..], &[255, 255, 255, 0]);
    let raw = Netmask::Ipv4(Ipv4Addr::new(255, 255, 255, 0)).to_raw();
    assert_eq!(
        Netmask::from_raw(raw, Family::Inet).unwrap(),
        Netmask::Ipv4(Ipv4Addr::new(255, 255, 255, 0))
    );
    assert_eq!(
        Netmask::from_raw(64, Family::Inet6).unwrap(),
        Netmask::Ipv6(64)
    );
    assert!(Netmask::from_raw(129, Family::Inet6).is_err());
}

#[test]
fn address_key_is_encoded_like_ipvsadm() {
    let attributes = tcp_service().key.to_attributes();
    assert_eq!(
        attributes,
        vec![
            ServiceAttribute::Family(2),
            ServiceAttribute::Protocol(6),
            ServiceAttribute::Address(AddressBytes::Sixteen([
                192, 0, 2, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
            ])),
            ServiceAttribute::Port(80),
        ]
    );
}

#[test]
fn model_round_trips_through_attributes() {
    let services = [
        tcp_service(),
        Service::new(
            ServiceKey::Address {
                protocol: Protocol::Udp,
                address: "2001:db8::53".parse().unwrap(),
                port: 53,
            },
            "mh",
        ),
        Service::new(
            ServiceKey::Fwmark {
                family: Family::Inet6,
                mark: 42,
            },
            "rr",
        ),
        Service::new(
            ServiceKey::Address {
                protocol: Protocol::Other(253),
                address: IpAddr::V4(Ipv4Addr::LOCALHOST),
                port: 0,
            },
            "none",
        ),
    ];
    for service in services {
        service.validate().unwrap();
        let attributes = service.to_attributes();
        assert_eq!(Service::from_attributes(&attributes).unwrap(), service);
    }
}

#[test]
fn reply_flags_are_masked_and_statistics_prefer_64_bits() {
    let mut attributes = tcp_service().to_attributes();
    attributes.retain(|attribute| !matches!(attribute, ServiceAttribute::Flags { .. }));
    attributes.push(ServiceAttribute::Flags {
        flags: ServiceFlags::PERSISTENT | ServiceFlags::HASHED,
        mask: ServiceFlags::PERSISTENT.bits(),
    });
    attributes.push(ServiceAttribute::Stats(vec![StatsAttribute::Connections(
        1,
    )]));
    attributes.push(ServiceAttribute::Stats64(vec![
        Stats64Attribute::Connections(5_000_000_000),
    ]));
    let service = Service::from_attributes(&attributes).unwrap();
    assert_eq!(service.flags, ServiceFlags::PERSISTENT);
    assert_eq!(service.statistics.unwrap().connections, 5_000_000_000);
}

#[test]
fn missing_family_is_reported_by_name() {
    let mut attributes = tcp_service().to_attributes();
    attributes.remove(0);
    let error = Service::from_attributes(&attributes).unwrap_err();
    assert!(matches!(
        error,
        ParseError::MissingAttribute("IPVS_SVC_ATTR_AF")
    ));
    assert_eq!(error.to_string(), "missing attribute IPVS_SVC_ATTR_AF");
}

#[test]
fn missing_full_entry_attributes_are_reported_by_name() {
    for (kind, name) in [
        (6, "IPVS_SVC_ATTR_SCHED_NAME"),
        (7, "IPVS_SVC_ATTR_FLAGS"),
        (8, "IPVS_SVC_ATTR_TIMEOUT"),
        (9, "IPVS_SVC_ATTR_NETMASK"),
    ] {
        let mut attributes = tcp_service().to_attributes();
        attributes.retain(|attribute| netlink_packet_core::Nla::kind(attribute) != kind);
        match Service::from_attributes(&attributes) {
            Err(ParseError::MissingAttribute(missing)) => assert_eq!(missing, name),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn key_needs_protocol_address_and_port_without_fwmark() {
    let attributes = [ServiceAttribute::Family(2), ServiceAttribute::Port(80)];
    assert!(matches!(
        ServiceKey::from_attributes(&attributes),
        Err(ParseError::MissingAttribute("IPVS_SVC_ATTR_PROTOCOL"))
    ));
    let attributes = [ServiceAttribute::Family(3), ServiceAttribute::Fwmark(1)];
    assert!(matches!(
        ServiceKey::from_attributes(&attributes),
        Err(ParseError::UnknownFamily { value: 3, .. })
    ));
}

#[test]
fn ipv6_service_with_short_address_is_rejected() {
    let attributes = [
        ServiceAttribute::Family(10),
        ServiceAttribute::Protocol(6),
        ServiceAttribute::Address(AddressBytes::Four([10, 0, 0, 1])),
        ServiceAttribute::Port(80),
    ];
    let error = ServiceKey::from_attributes(&attributes).unwrap_err();
    assert!(matches!(
        error,
        ParseError::AddressLength {
            attribute: "IPVS_SVC_ATTR_ADDR",
            family: Family::Inet6,
            length: 4
        }
    ));
}

#[test]
fn malformed_values_carry_context() {
    // IPVS_SVC_ATTR_PORT with a single byte.
    let error = parse::<ServiceAttribute>(&[5, 0, 4, 0, 1, 0, 0, 0]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("invalid IPVS_SVC_ATTR_PORT value"),
        "{error}"
    );
    // IPVS_SVC_ATTR_ADDR with 8 bytes.
    let error = parse::<ServiceAttribute>(&[12, 0, 3, 0, 1, 2, 3, 4, 5, 6, 7, 8]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("invalid IPVS_SVC_ATTR_ADDR value"),
        "{error}"
    );
    // IPVS_SVC_ATTR_FLAGS with 4 bytes.
    let error = parse::<ServiceAttribute>(&[8, 0, 7, 0, 1, 0, 0, 0]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("invalid IPVS_SVC_ATTR_FLAGS value"),
        "{error}"
    );
    // A stats nest whose inner attribute claims more bytes than it has.
    let error = parse::<ServiceAttribute>(&[12, 0, 10, 0, 8, 0, 1, 0, 1, 0, 0, 0]);
    assert!(error.is_ok());
    let error = parse::<ServiceAttribute>(&[12, 0, 10, 0, 16, 0, 1, 0, 1, 0, 0, 0]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("invalid IPVS_SVC_ATTR_STATS value"),
        "{error}"
    );
}

#[test]
fn truncated_attribute_is_an_error() {
    // Header says 8 bytes, only 6 present.
    assert!(parse::<ServiceAttribute>(&[8, 0, 5, 0, 1, 0]).is_err());
}

#[test]
fn validation_catches_what_the_kernel_rejects() {
    let mut service = tcp_service();
    service.scheduler = "a-very-long-scheduler".into();
    assert!(matches!(
        service.validate(),
        Err(RequestError::InvalidName { .. })
    ));

    let mut service = tcp_service();
    service.netmask = Netmask::Ipv6(64);
    assert!(matches!(
        service.validate(),
        Err(RequestError::NetmaskFamily { .. })
    ));

    let mut service = Service::new(
        ServiceKey::Fwmark {
            family: Family::Inet6,
            mark: 1,
        },
        "rr",
    );
    service.netmask = Netmask::Ipv6(0);
    assert_eq!(service.validate(), Err(RequestError::PrefixLength(0)));
}

#[test]
fn flag_names() {
    let flags = ServiceFlags::PERSISTENT | ServiceFlags::SCHED_1 | ServiceFlags::from_bits(0x100);
    assert_eq!(flags.to_string(), "persistent,flag-1,0x100");
    assert_eq!(
        ServiceFlags::from_name("sh-fallback"),
        Some(ServiceFlags::SCHED_1)
    );
    assert_eq!(
        ServiceFlags::from_name("mh-port"),
        Some(ServiceFlags::SCHED_2)
    );
    assert_eq!(
        ServiceFlags::from_name("one-packet"),
        Some(ServiceFlags::ONE_PACKET)
    );
    assert_eq!(ServiceFlags::from_name("bogus"), None);
}

#[test]
fn key_display() {
    assert_eq!(tcp_service().key.to_string(), "TCP 192.0.2.10:80");
    let key = ServiceKey::Address {
        protocol: Protocol::Udp,
        address: "::1".parse().unwrap(),
        port: 53,
    };
    assert_eq!(key.to_string(), "UDP [::1]:53");
}
