use netlink_packet_core::{NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST};

use super::*;
use crate::{AddressBytes, DestinationAttribute, Family, Forwarding, Protocol, ServiceAttribute};

fn key() -> ServiceKey {
    ServiceKey::Address {
        protocol: Protocol::Tcp,
        address: "192.0.2.1".parse().unwrap(),
        port: 80,
    }
}

#[test]
fn commands_and_kinds() {
    let service = Service::new(key(), "rr");
    let destination = Destination::new("10.0.0.1:80".parse().unwrap(), Forwarding::Masquerade);
    let daemon = SyncDaemon::new(SyncState::Master, "eth0", 1);
    let cases = [
        (
            new_service(&service).unwrap(),
            IpvsCommand::NewService,
            RequestKind::Change,
        ),
        (
            set_service(&service).unwrap(),
            IpvsCommand::SetService,
            RequestKind::Change,
        ),
        (
            delete_service(&key()),
            IpvsCommand::DeleteService,
            RequestKind::Change,
        ),
        (
            get_service(&key()),
            IpvsCommand::GetService,
            RequestKind::Get,
        ),
        (dump_services(), IpvsCommand::GetService, RequestKind::Dump),
        (
            new_destination(&key(), &destination).unwrap(),
            IpvsCommand::NewDestination,
            RequestKind::Change,
        ),
        (
            set_destination(&key(), &destination).unwrap(),
            IpvsCommand::SetDestination,
            RequestKind::Change,
        ),
        (
            delete_destination(&key(), destination.socket_address()),
            IpvsCommand::DeleteDestination,
            RequestKind::Change,
        ),
        (
            dump_destinations(&key()),
            IpvsCommand::GetDestination,
            RequestKind::Dump,
        ),
        (
            new_daemon(&daemon).unwrap(),
            IpvsCommand::NewDaemon,
            RequestKind::Change,
        ),
        (
            delete_daemon(SyncState::Backup),
            IpvsCommand::DeleteDaemon,
            RequestKind::Change,
        ),
        (dump_daemons(), IpvsCommand::GetDaemon, RequestKind::Dump),
        (get_config(), IpvsCommand::GetConfig, RequestKind::Get),
        (
            set_config(&Timeouts::default()),
            IpvsCommand::SetConfig,
            RequestKind::Change,
        ),
        (get_info(), IpvsCommand::GetInfo, RequestKind::Get),
        (zero_all(), IpvsCommand::Zero, RequestKind::Change),
        (zero_service(&key()), IpvsCommand::Zero, RequestKind::Change),
        (flush(), IpvsCommand::Flush, RequestKind::Change),
    ];
    for (request, command, kind) in cases {
        assert_eq!(request.message.command, command);
        assert_eq!(request.kind, kind, "{command:?}");
    }
    assert_eq!(RequestKind::Change.flags(), NLM_F_REQUEST | NLM_F_ACK);
    assert_eq!(RequestKind::Dump.flags(), NLM_F_REQUEST | NLM_F_DUMP);
}

#[test]
fn identifying_requests_carry_only_keys() {
    assert_eq!(
        delete_service(&key()).message.attributes,
        vec![IpvsAttribute::Service(key().to_attributes())]
    );
    assert_eq!(
        delete_destination(&key(), "[2001:db8::1]:0".parse().unwrap())
            .message
            .attributes[1],
        IpvsAttribute::Destination(vec![
            DestinationAttribute::Family(Family::Inet6.to_raw()),
            DestinationAttribute::Address(AddressBytes::padded("2001:db8::1".parse().unwrap())),
            DestinationAttribute::Port(0),
        ])
    );
    assert!(zero_all().message.attributes.is_empty());
    assert_eq!(
        delete_daemon(SyncState::Backup).message.attributes,
        vec![IpvsAttribute::Daemon(vec![DaemonAttribute::State(2)])]
    );
}

#[test]
fn new_service_sends_the_full_entry_with_full_mask() {
    let request = new_service(&Service::new(key(), "rr")).unwrap();
    let IpvsAttribute::Service(nest) = &request.message.attributes[0] else {
        panic!("no service nest");
    };
    assert!(nest.contains(&ServiceAttribute::Scheduler("rr".into())));
    assert!(nest.contains(&ServiceAttribute::Flags {
        flags: crate::ServiceFlags::empty(),
        mask: u32::MAX
    }));
    assert!(nest.contains(&ServiceAttribute::Timeout(0)));
    assert!(nest.contains(&ServiceAttribute::Netmask(u32::MAX)));
}

#[test]
fn invalid_models_are_refused() {
    let mut service = Service::new(key(), "rr");
    service.scheduler = "x".repeat(16);
    assert!(new_service(&service).is_err());
    let destination = Destination::new("[2001:db8::1]:80".parse().unwrap(), Forwarding::Masquerade);
    assert!(matches!(
        new_destination(&key(), &destination),
        Err(RequestError::MixedFamily { .. })
    ));
}

#[test]
fn to_netlink_sets_header() {
    let message = dump_services().to_netlink(0x22, 7);
    assert_eq!(message.header.message_type, 0x22);
    assert_eq!(message.header.sequence_number, 7);
    assert_eq!(message.header.flags, NLM_F_REQUEST | NLM_F_DUMP);
    // nlmsghdr + genlmsghdr, no attributes
    assert_eq!(message.header.length, 20);
}
