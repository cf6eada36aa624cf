//! Messages captured from this kernel (6.18, x86_64): a Python child of a
//! process subscribed as keepalived subscribes, renaming itself with
//! `prctl(PR_SET_NAME, "fulcrum-renamed")`: the subscription's answer,
//! then its fork, exec, comm and exit, each datagram as received.

use super::*;

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|index| u8::from_str_radix(&hex[index..index + 2], 16).unwrap())
        .collect()
}

const ACKNOWLEDGED: &str = "4c00000003000000863c0000000000000100000001000000863c000001000000\
280000000000000001000000530def2b95090000000000000000000000000000000000000000000000000000";
const FORK: &str = "4c00000003000000873c0000000000000100000001000000873c000000000000\
280000000100000001000000afe5f12b95090000bd010000bd010000e6010000e60100000000000000000000";
const EXEC: &str = "4c000000030000001b3c00000000000001000000010000001b3c000000000000\
280000000200000000000000f415f42b95090000e6010000e601000000000000000000000000000000000000";
const COMM: &str = "4c00000003000000883c0000000000000100000001000000883c000000000000\
2800000000020000010000000959252e95090000e6010000e601000066756c6372756d2d72656e616d656400";
const EXIT: &str = "4c00000003000000893c0000000000000100000001000000893c000000000000\
2800000000000080010000009b3b862e95090000e6010000e60100000000000011000000bd010000bd010000";

fn parsed(hex: &str) -> Repr {
    Repr::parse(&Packet::new_checked(bytes(hex)).unwrap()).unwrap()
}

#[test]
fn captured_messages_parse() {
    let acknowledged = parsed(ACKNOWLEDGED);
    // The answer to the subscription: its acknowledgement is ours plus 1.
    assert_eq!(acknowledged.event, Event::Acknowledged { error: 0 });
    assert_eq!(acknowledged.acknowledgement, 1);
    assert_eq!(acknowledged.sequence, 0x3c86);
    assert_eq!(acknowledged.cpu, 1);
    assert_eq!(
        parsed(FORK).event,
        Event::Fork {
            parent_pid: 445,
            parent_tgid: 445,
            child_pid: 486,
            child_tgid: 486,
        }
    );
    assert_eq!(parsed(FORK).acknowledgement, 0);
    assert_eq!(
        parsed(EXEC).event,
        Event::Exec {
            pid: 486,
            tgid: 486
        }
    );
    assert_eq!(parsed(EXEC).cpu, 0);
    let Event::Comm { pid, tgid, comm } = parsed(COMM).event else {
        panic!("not a comm event");
    };
    assert_eq!((pid, tgid), (486, 486));
    assert_eq!(Event::comm_name(&comm), b"fulcrum-renamed");
    assert_eq!(
        parsed(EXIT).event,
        Event::Exit {
            pid: 486,
            tgid: 486,
            exit_code: 0,
            exit_signal: libc::SIGCHLD as u32,
            parent_pid: 445,
            parent_tgid: 445,
        }
    );
    assert_eq!(parsed(EXIT).timestamp_nanoseconds, 0x0995_2e86_3b9b);
}

#[test]
fn captured_messages_are_emitted_byte_for_byte() {
    for hex in [ACKNOWLEDGED, FORK, EXEC, COMM, EXIT] {
        assert_eq!(parsed(hex).to_bytes(), bytes(hex), "{hex}");
    }
}

#[test]
fn other_kinds_round_trip_as_sent() {
    let mut data = [0u8; 24];
    data[..8].copy_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
    // PROC_EVENT_UID.
    let repr = Repr {
        sequence: 7,
        acknowledgement: 0,
        cpu: 3,
        timestamp_nanoseconds: 42,
        event: Event::Other { what: 4, data },
    };
    let bytes = repr.to_bytes();
    assert_eq!(
        Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()),
        Ok(repr)
    );
}

#[test]
fn short_or_foreign_messages_are_refused() {
    let whole = bytes(FORK);
    assert_eq!(
        Packet::new_checked(&whole[..30]).err(),
        Some(Error::Truncated)
    );
    // A length beyond the datagram.
    assert_eq!(
        Packet::new_checked(&whole[..70]).err(),
        Some(Error::Truncated)
    );
    let mut foreign = whole.clone();
    foreign[16] = 2;
    assert_eq!(
        Repr::parse(&Packet::new_unchecked(&foreign[..])),
        Err(Error::NotProcessEvents { index: 2, value: 1 })
    );
    // An event shorter than the kernel's, its lengths consistent.
    let mut short = whole[..60].to_vec();
    short[0] = 60;
    short[32] = 24;
    assert_eq!(
        Repr::parse(&Packet::new_unchecked(&short[..])),
        Err(Error::ShortEvent(24))
    );
}

#[test]
fn the_subscription_is_keepalived_s() {
    // keepalived's set_proc_ev_listen: 40 bytes, NLMSG_DONE, its port,
    // CN_IDX_PROC/CN_VAL_PROC, 4 bytes of data: PROC_CN_MCAST_LISTEN.
    let expected = bytes(
        "2800000003000000000000003930000001000000010000000000000000000000\
         0400000001000000",
    );
    assert_eq!(subscription_message(true, 12345), expected);
    let ignore = subscription_message(false, 12345);
    assert_eq!(ignore[36..], [2, 0, 0, 0]);
    let packet = Packet::new_checked(&expected[..]).unwrap();
    assert_eq!(packet.data(), &[1, 0, 0, 0]);
    assert_eq!(packet.port(), 12345);
}
