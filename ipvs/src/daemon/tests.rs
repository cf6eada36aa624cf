use std::net::{Ipv4Addr, Ipv6Addr};

use netlink_packet_core::DefaultNla;

use super::*;
use crate::testing::{parse, round_trip};

#[test]
fn every_attribute_round_trips() {
    let attributes = [
        DaemonAttribute::State(1),
        DaemonAttribute::Interface("eth0".into()),
        DaemonAttribute::SyncId(9),
        DaemonAttribute::MaxLength(1472),
        DaemonAttribute::Group(Ipv4Addr::new(224, 0, 0, 81)),
        DaemonAttribute::Group6("ff02::81".parse::<Ipv6Addr>().unwrap()),
        DaemonAttribute::Port(8848),
        DaemonAttribute::Ttl(1),
        DaemonAttribute::Other(DefaultNla::new(77, vec![0; 3])),
    ];
    for attribute in &attributes {
        round_trip(attribute);
    }
}

#[test]
fn group_is_network_order_and_port_host_order() {
    let bytes = round_trip(&DaemonAttribute::Group(Ipv4Addr::new(224, 0, 0, 81)));
    assert_eq!(&bytes[4..], &[224, 0, 0, 81]);
    let bytes = round_trip(&DaemonAttribute::Port(8848));
    assert_eq!(&bytes[4..6], &8848u16.to_ne_bytes());
}

#[test]
fn model_round_trips_through_attributes() {
    let daemons = [
        SyncDaemon::new(SyncState::Master, "eth0", 1),
        SyncDaemon {
            max_length: Some(1400),
            group: Some("ff02::81".parse().unwrap()),
            port: Some(9000),
            ttl: Some(2),
            ..SyncDaemon::new(SyncState::Backup, "bond0", 200)
        },
        SyncDaemon {
            group: Some("239.1.1.1".parse().unwrap()),
            ..SyncDaemon::new(SyncState::Master, "eth1", 0)
        },
    ];
    for daemon in daemons {
        daemon.validate().unwrap();
        assert_eq!(
            SyncDaemon::from_attributes(&daemon.to_attributes()).unwrap(),
            daemon
        );
    }
}

#[test]
fn errors() {
    assert!(matches!(
        SyncDaemon::from_attributes(&[DaemonAttribute::State(1)]),
        Err(ParseError::MissingAttribute("IPVS_DAEMON_ATTR_MCAST_IFN"))
    ));
    assert!(matches!(
        SyncDaemon::from_attributes(&[
            DaemonAttribute::State(3),
            DaemonAttribute::Interface("eth0".into()),
            DaemonAttribute::SyncId(0),
        ]),
        Err(ParseError::InvalidValue {
            attribute: "IPVS_DAEMON_ATTR_STATE",
            value: 3
        })
    ));
    let error = parse::<DaemonAttribute>(&[6, 0, 5, 0, 224, 0, 0, 0]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("invalid IPVS_DAEMON_ATTR_MCAST_GROUP value"),
        "{error}"
    );
    let daemon = SyncDaemon {
        group: Some("10.0.0.1".parse().unwrap()),
        ..SyncDaemon::new(SyncState::Master, "eth0", 1)
    };
    assert!(matches!(
        daemon.validate(),
        Err(RequestError::NotMulticast(_))
    ));
    let daemon = SyncDaemon::new(SyncState::Master, "an-interface-name", 1);
    assert!(matches!(
        daemon.validate(),
        Err(RequestError::InvalidName { max: 15, .. })
    ));
}
