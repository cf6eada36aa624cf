use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload};
use netlink_packet_generic::GenlMessage;

use super::*;
use crate::{Info, ServiceKey, Version};

fn emit(message: &IpvsMessage) -> Vec<u8> {
    let mut bytes = vec![0; message.buffer_len()];
    message.emit(&mut bytes);
    bytes
}

fn parse(command: IpvsCommand, bytes: &[u8]) -> Result<IpvsMessage, DecodeError> {
    IpvsMessage::parse_with_param(
        bytes,
        GenlHeader {
            cmd: command.into(),
            version: IPVS_GENL_VERSION,
        },
    )
}

#[test]
fn commands_convert_both_ways() {
    for raw in 0..=u8::MAX {
        assert_eq!(u8::from(IpvsCommand::from(raw)), raw);
    }
    assert_eq!(IpvsCommand::from(8), IpvsCommand::GetDestination);
    assert_eq!(IpvsCommand::from(17), IpvsCommand::Flush);
    assert_eq!(IpvsCommand::from(18), IpvsCommand::Other(18));
}

#[test]
fn top_level_numbers_depend_on_the_command() {
    let info = Info {
        version: Version {
            major: 1,
            minor: 2,
            patch: 1,
        },
        connection_table_size: 4096,
    };
    let message = IpvsMessage::new(IpvsCommand::SetInfo, info.to_attributes());
    let bytes = emit(&message);
    assert_eq!(parse(IpvsCommand::SetInfo, &bytes).unwrap(), message);
    assert_eq!(Info::from_reply(&message).unwrap(), info);
    assert_eq!(info.version.to_string(), "1.2.1");
    assert_eq!(info.version.code(), 0x010201);

    // The same bytes under another command are attribute 1 = SERVICE: a
    // 4-byte value is not a valid nest.
    let error = parse(IpvsCommand::NewService, &bytes).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("invalid IPVS_CMD_ATTR_SERVICE value"),
        "{error}"
    );
}

#[test]
fn every_top_level_attribute_round_trips() {
    let message = IpvsMessage::new(
        IpvsCommand::NewDestination,
        vec![
            IpvsAttribute::Service(
                ServiceKey::Fwmark {
                    family: crate::Family::Inet,
                    mark: 3,
                }
                .to_attributes(),
            ),
            IpvsAttribute::Destination(crate::Destination::key_attributes(
                "10.1.1.1:0".parse().unwrap(),
            )),
            IpvsAttribute::Daemon(vec![DaemonAttribute::State(2)]),
            IpvsAttribute::TimeoutTcp(900),
            IpvsAttribute::TimeoutTcpFin(120),
            IpvsAttribute::TimeoutUdp(300),
            IpvsAttribute::Other(DefaultNla::new(50, vec![9, 9])),
        ],
    );
    let bytes = emit(&message);
    let parsed = parse(IpvsCommand::NewDestination, &bytes).unwrap();
    assert_eq!(parsed, message);
    assert_eq!(emit(&parsed), bytes);
}

#[test]
fn netlink_message_round_trips() {
    let mut genl = GenlMessage::from_payload(IpvsMessage::new(
        IpvsCommand::SetConfig,
        vec![IpvsAttribute::TimeoutTcp(900)],
    ));
    genl.set_resolved_family_id(0x1d);
    let mut message = NetlinkMessage::new(NetlinkHeader::default(), NetlinkPayload::from(genl));
    message.finalize();
    let mut bytes = vec![0; message.buffer_len()];
    message.serialize(&mut bytes);
    // nlmsghdr (16) + genlmsghdr (4) + one u32 attribute (8)
    assert_eq!(bytes.len(), 28);
    assert_eq!(&bytes[4..6], &0x1du16.to_ne_bytes());
    assert_eq!(&bytes[16..18], &[12, 1]); // cmd SET_CONFIG, version 1
    let parsed = NetlinkMessage::<GenlMessage<IpvsMessage>>::deserialize(&bytes).unwrap();
    assert_eq!(parsed, message);
    assert_eq!(<IpvsMessage as GenlFamily>::family_name(), "IPVS");
}

#[test]
fn truncated_message_is_an_error_with_context() {
    let message = IpvsMessage::new(IpvsCommand::SetConfig, vec![IpvsAttribute::TimeoutUdp(1)]);
    let bytes = emit(&message);
    let error = parse(IpvsCommand::SetConfig, &bytes[..6]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("failed to parse IPVS SetConfig message attributes"),
        "{error}"
    );
}

#[test]
fn reply_parsers_check_the_command() {
    let message = IpvsMessage::new(IpvsCommand::NewDestination, vec![]);
    assert!(matches!(
        crate::Service::from_reply(&message),
        Err(ParseError::UnexpectedCommand {
            expected: IpvsCommand::NewService,
            found: IpvsCommand::NewDestination
        })
    ));
    assert!(matches!(
        crate::Destination::from_reply(&message),
        Err(ParseError::MissingAttribute("IPVS_CMD_ATTR_DEST"))
    ));
}
