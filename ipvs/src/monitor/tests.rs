//! The watch over ipvsadm's exchanges as the lab's nlmon tap copied them
//! (`tests/captured`, one datagram a line), with time under control.
#![cfg(target_endian = "little")]

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use labkit::captured::{Direction, Line};

use netlink_packet_core::NLMSG_ERROR;

use super::*;
use crate::Protocol;

const CAPTURE_DIRECTORY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/captured");

struct Capture {
    command: String,
    status: i32,
    family: u16,
    lines: Vec<Line>,
}

fn capture(name: &str) -> Capture {
    let path = format!("{CAPTURE_DIRECTORY}/{name}.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    let mut capture = Capture {
        command: String::new(),
        status: 0,
        family: 0,
        lines: Vec::new(),
    };
    for (number, line) in text.lines().enumerate() {
        if let Some(command) = line.strip_prefix("# command: ") {
            capture.command = command.to_owned();
        } else if let Some(status) = line.strip_prefix("# exit status: ") {
            capture.status = status.parse().unwrap();
        } else if let Some(family) = line.strip_prefix("family ") {
            capture.family = family.parse().unwrap();
        } else if let Some(line) = Line::read(number + 1, line) {
            capture.lines.push(line.unwrap());
        }
    }
    capture
}

/// Every line seen at `at`, as the tap delivers them (one datagram each),
/// by a watch for a process on port 1.
fn watched(capture: &Capture, at: Instant) -> Watch {
    let mut watch = Watch::new(capture.family, 1);
    for line in &capture.lines {
        watch.seen(&line.bytes, at);
    }
    watch
}

/// The capture's last request: in del_destination, the deletion (after
/// the family's resolution).
fn last_request(capture: &Capture) -> &Line {
    capture
        .lines
        .iter()
        .rfind(|line| line.direction == Direction::Request)
        .expect("a request")
}

fn tcp_service() -> ServiceKey {
    ServiceKey::Address {
        protocol: Protocol::Tcp,
        address: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
        port: 80,
    }
}

#[test]
fn a_destination_deleted_is_due_once_the_kernel_answers() {
    let capture = capture("del_destination");
    let now = Instant::now();
    let mut watch = Watch::new(capture.family, 1);
    let requests: Vec<&Line> = capture
        .lines
        .iter()
        .filter(|line| line.direction == Direction::Request)
        .collect();
    // The family's resolution, then the deletion: not due before its
    // answer, whose copy says the kernel handled it.
    for request in &requests {
        watch.seen(&request.bytes, now);
    }
    assert!(watch.poll(now).is_empty());
    assert_eq!(watch.next_deadline(), Some(now + ANSWER_PATIENCE));
    for line in capture
        .lines
        .iter()
        .filter(|line| line.direction == Direction::Reply)
    {
        watch.seen(&line.bytes, now);
    }
    let due = watch.poll(now);
    assert_eq!(due.services, HashSet::from([tcp_service()]));
    assert!(!due.table);
    assert_eq!(watch.next_deadline(), None);
    assert!(watch.poll(now + ANSWER_PATIENCE).is_empty(), "due once");
}

#[test]
fn a_request_that_asked_for_an_answer_waits_for_it_then_is_due_anyway() {
    let capture = capture("del_destination");
    let now = Instant::now();
    let mut watch = Watch::new(capture.family, 1);
    watch.seen(&last_request(&capture).bytes, now);
    assert!(
        watch
            .poll(now + ANSWER_PATIENCE - Duration::from_millis(1))
            .is_empty()
    );
    assert_eq!(
        watch.poll(now + ANSWER_PATIENCE).services,
        HashSet::from([tcp_service()])
    );
}

/// The capture's deletion with sequence number `sequence`, asking for an
/// acknowledgement or not.
fn deletion_numbered(capture: &Capture, sequence: u32, acknowledged: bool) -> Vec<u8> {
    let mut bytes = last_request(capture).bytes.clone();
    bytes[8..12].copy_from_slice(&sequence.to_ne_bytes());
    let mut flags = u16::from_ne_bytes([bytes[6], bytes[7]]);
    if acknowledged {
        flags |= netlink_packet_core::NLM_F_ACK;
    } else {
        flags &= !netlink_packet_core::NLM_F_ACK;
    }
    bytes[6..8].copy_from_slice(&flags.to_ne_bytes());
    bytes
}

/// The kernel's acknowledgement of the capture's deletion, renumbered.
fn acknowledgement_numbered(capture: &Capture, sequence: u32) -> Vec<u8> {
    let mut bytes = capture
        .lines
        .iter()
        .rfind(|line| line.direction == Direction::Reply)
        .expect("an answer")
        .bytes
        .clone();
    bytes[8..12].copy_from_slice(&sequence.to_ne_bytes());
    bytes
}

#[test]
fn a_request_without_an_acknowledgement_is_due_once_it_settles() {
    let capture = capture("del_destination");
    let now = Instant::now();
    let mut watch = Watch::new(capture.family, 1);
    watch.seen(&deletion_numbered(&capture, 7, false), now);
    assert_eq!(watch.next_deadline(), Some(now + SETTLE));
    assert!(
        watch
            .poll(now + SETTLE - Duration::from_millis(1))
            .is_empty()
    );
    assert_eq!(
        watch.poll(now + SETTLE).services,
        HashSet::from([tcp_service()])
    );
}

#[test]
fn an_answer_makes_the_same_socket_s_earlier_requests_due() {
    // As this library sends a batch: only the last request asks for an
    // acknowledgement; the kernel handled the others before it.
    let capture = capture("del_destination");
    let now = Instant::now();
    let mut watch = Watch::new(capture.family, 1);
    watch.seen(&deletion_numbered(&capture, u32::MAX, false), now);
    watch.seen(&deletion_numbered(&capture, 0, true), now);
    watch.seen(&acknowledgement_numbered(&capture, 0), now);
    assert_eq!(watch.poll(now).services, HashSet::from([tcp_service()]));
    assert_eq!(watch.next_deadline(), None, "both due, across the wrap");
}

#[test]
fn a_refused_request_changed_nothing() {
    for name in [
        "new_service_exists",
        "del_destination_missing",
        "set_service_missing",
    ] {
        let capture = capture(name);
        assert_ne!(capture.status, 0, "{name}");
        let now = Instant::now();
        let mut watch = watched(&capture, now);
        assert!(watch.poll(now + ANSWER_PATIENCE).is_empty(), "{name}");
    }
}

#[test]
fn this_process_s_own_requests_are_not_others() {
    let capture = capture("del_destination");
    let deletion = last_request(&capture);
    let port = u32::from_ne_bytes(deletion.bytes[12..16].try_into().unwrap());
    let now = Instant::now();
    let mut watch = Watch::new(capture.family, port);
    for line in &capture.lines {
        watch.seen(&line.bytes, now);
    }
    assert!(watch.poll(now + ANSWER_PATIENCE).is_empty());
}

#[test]
fn every_capture_is_due_as_its_command_implies() {
    let mut checked = 0;
    for entry in std::fs::read_dir(CAPTURE_DIRECTORY).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let capture = capture(&name);
        let now = Instant::now();
        let due = watched(&capture, now).poll(now + ANSWER_PATIENCE);
        let words: Vec<&str> = capture.command.split_whitespace().collect();
        let option = words.get(1).copied().unwrap_or_default();
        let changes_a_service = ["-A", "-E", "-D", "-a", "-e", "-d"].contains(&option);
        let changes_the_table = option == "-C" || option == "--set";
        if capture.status != 0 {
            assert!(due.is_empty(), "{name}: refused, yet {due:?}");
        } else if changes_a_service {
            assert_eq!(due.services.len(), 1, "{name}: {due:?}");
            assert!(!due.table, "{name}");
        } else if changes_the_table {
            assert!(due.table && due.services.is_empty(), "{name}: {due:?}");
        } else {
            assert!(due.is_empty(), "{name} ({}): {due:?}", capture.command);
        }
        checked += 1;
    }
    assert!(checked >= 44, "{checked} captures");
}

#[test]
fn an_unreadable_request_of_the_family_concerns_the_whole_table() {
    let capture = capture("del_destination");
    let deletion = last_request(&capture);
    let mut truncated = deletion.bytes.clone();
    truncated.truncate(truncated.len() - 8);
    let now = Instant::now();
    let mut watch = Watch::new(capture.family, 1);
    watch.seen(&truncated, now);
    assert!(watch.poll(now).table);
}

#[test]
fn too_many_waiting_requests_make_the_table_due() {
    let capture = capture("del_destination");
    let deletion = last_request(&capture);
    let now = Instant::now();
    let mut watch = Watch::new(capture.family, 1);
    for _ in 0..=MOST_PENDING {
        watch.seen(&deletion.bytes, now);
    }
    let due = watch.poll(now);
    assert!(due.table);
    assert_eq!(watch.next_deadline(), None);
}

/// Runs a classic BPF program over a datagram the tap copied for netlink
/// protocol `protocol`: the length kept (0: dropped). Only what
/// [`tap_filter`] uses: absolute loads, the protocol, JEQ, JSET, RET.
fn run_filter(program: &[libc::sock_filter], protocol: u16, packet: &[u8]) -> u32 {
    let mut accumulator: u32 = 0;
    let mut counter = 0;
    loop {
        let instruction = program[counter];
        let code = u32::from(instruction.code);
        counter += 1;
        match code {
            _ if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS
                && instruction.k == (libc::SKF_AD_OFF + libc::SKF_AD_PROTOCOL) as u32 =>
            {
                accumulator = u32::from(protocol);
            }
            _ if code == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
                let at = instruction.k as usize;
                let Some(bytes) = packet.get(at..at + 4) else {
                    return 0;
                };
                accumulator = u32::from_be_bytes(bytes.try_into().unwrap());
            }
            _ if code == libc::BPF_LD | libc::BPF_H | libc::BPF_ABS => {
                let at = instruction.k as usize;
                let Some(bytes) = packet.get(at..at + 2) else {
                    return 0;
                };
                accumulator = u32::from(u16::from_be_bytes(bytes.try_into().unwrap()));
            }
            _ if code == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K
                || code == libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K =>
            {
                let taken = if code & 0xf0 == libc::BPF_JEQ {
                    accumulator == instruction.k
                } else {
                    accumulator & instruction.k != 0
                };
                counter += usize::from(if taken {
                    instruction.jt
                } else {
                    instruction.jf
                });
            }
            _ if code == libc::BPF_RET | libc::BPF_K => return instruction.k,
            other => panic!("an instruction the interpreter lacks: {other:#x}"),
        }
    }
}

#[test]
fn the_filter_keeps_others_requests_and_the_kernel_s_answers_only() {
    const GENERIC: u16 = 16;
    const ROUTE: u16 = 0;
    let capture = capture("dump_services_and_destinations");
    let own_port = 77;
    let program = tap_filter(capture.family, own_port);
    let mut kinds = HashSet::new();
    for line in &capture.lines {
        let kind = u16::from_ne_bytes([line.bytes[4], line.bytes[5]]);
        let kept = run_filter(&program, GENERIC, &line.bytes) > 0;
        let wanted = match line.direction {
            // ipvsadm's (the capture keeps those of the IPVS family).
            Direction::Request => kind == capture.family,
            // Answers only; the dump's entries and its end are not.
            Direction::Reply => kind == NLMSG_ERROR,
        };
        assert_eq!(
            kept, wanted,
            "line {}: {:?} of type {kind}",
            line.number, line.direction
        );
        assert_eq!(
            run_filter(&program, ROUTE, &line.bytes),
            0,
            "rtnetlink is never kept"
        );
        kinds.insert((line.direction == Direction::Request, kept));
    }
    assert_eq!(
        kinds,
        HashSet::from([(true, true), (false, true), (false, false)]),
        "requests kept, answers kept, dump entries dropped"
    );
    // The same requests from this process: dropped.
    for line in capture
        .lines
        .iter()
        .filter(|line| line.direction == Direction::Request)
    {
        let mut own = line.bytes.clone();
        own[12..16].copy_from_slice(&own_port.to_ne_bytes());
        assert_eq!(
            run_filter(&program, GENERIC, &own),
            0,
            "line {}",
            line.number
        );
    }
}
