//! The watch over ipvsadm's exchanges as the lab's nlmon tap copied them
//! (`tests/captured`, one datagram a line), with time under control.
#![cfg(target_endian = "little")]

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use labkit::captured::{Direction, Line};

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
    assert_eq!(watch.next_deadline(), Some(now + SETTLE));
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
    assert!(watch.poll(now + SETTLE).is_empty(), "due once");
}

#[test]
fn a_request_without_an_answer_is_due_after_it_settles() {
    let capture = capture("del_destination");
    let now = Instant::now();
    let mut watch = Watch::new(capture.family, 1);
    for line in capture
        .lines
        .iter()
        .filter(|line| line.direction == Direction::Request)
    {
        watch.seen(&line.bytes, now);
    }
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
        assert!(watch.poll(now + SETTLE).is_empty(), "{name}");
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
    assert!(watch.poll(now + SETTLE).is_empty());
}

#[test]
fn every_capture_is_due_as_its_command_implies() {
    let mut checked = 0;
    for entry in std::fs::read_dir(CAPTURE_DIRECTORY).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let capture = capture(&name);
        let now = Instant::now();
        let due = watched(&capture, now).poll(now + SETTLE);
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
