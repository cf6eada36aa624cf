use super::*;

use std::time::Duration;

use nanny::spec::RealServerName;

fn web() -> VirtualServerKey {
    VirtualServerKey::Address {
        address: "10.0.0.1:80".parse().unwrap(),
        protocol: Some(fulcrum_config::model::Protocol::Tcp),
    }
}

fn verdict(real_server: &str, up: bool, initial: bool, reason: &str) -> StateChange {
    StateChange {
        real_server: RealServerName {
            address: real_server.parse().unwrap(),
        },
        virtual_servers: vec![web()],
        up,
        initial,
        reason: reason.to_owned(),
        weight: None,
        weight_offset: 0,
    }
}

fn at(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
}

/// `change` recorded, the reconciler having found it a transition or not.
fn record(report: &mut LvsReport, change: StateChange, changed: bool, now: SystemTime) {
    report.record(&change, |_, _| changed, now);
}

#[test]
fn the_first_verdict_sets_the_state_and_each_change_counts() {
    let mut report = LvsReport::default();
    record(
        &mut report,
        verdict("192.168.1.1:80", true, true, "TCP_CHECK: success"),
        false,
        at(1),
    );
    let key = (web().to_string(), "192.168.1.1:80".parse().unwrap());
    let known = &report.real_servers[&key];
    assert_eq!((known.up, known.went_up, known.went_down), (true, 0, 0));
    assert_eq!(known.since, at(1));
    // The same state again (a weight, say): no transition, no new time.
    record(
        &mut report,
        verdict("192.168.1.1:80", true, false, "MISC_CHECK: weight 3"),
        false,
        at(2),
    );
    let known = &report.real_servers[&key];
    assert_eq!((known.went_up, known.since), (0, at(1)));
    assert_eq!(known.reason, "MISC_CHECK: weight 3");
    record(
        &mut report,
        verdict("192.168.1.1:80", false, false, "TCP_CHECK: refused"),
        true,
        at(3),
    );
    record(
        &mut report,
        verdict("192.168.1.1:80", true, false, "TCP_CHECK: success"),
        true,
        at(4),
    );
    record(
        &mut report,
        verdict("192.168.1.1:80", false, false, "TCP_CHECK: timed out"),
        true,
        at(5),
    );
    let known = &report.real_servers[&key];
    assert_eq!((known.up, known.went_up, known.went_down), (false, 1, 2));
    assert_eq!(
        (known.since, known.reason.as_str()),
        (at(5), "TCP_CHECK: timed out")
    );
    assert_eq!(key.0, "10.0.0.1:80 TCP");
    // A first verdict of down for a server that started up is a change.
    record(
        &mut report,
        verdict("192.168.1.3:80", false, true, "TCP_CHECK: refused"),
        true,
        at(6),
    );
    let known = &report.real_servers[&(web().to_string(), "192.168.1.3:80".parse().unwrap())];
    assert_eq!((known.up, known.went_down, known.since), (false, 1, at(6)));
}

#[test]
fn a_reload_forgets_what_it_removed() {
    let mut report = LvsReport::default();
    record(
        &mut report,
        verdict("192.168.1.1:80", true, true, "ok"),
        false,
        at(1),
    );
    record(
        &mut report,
        verdict("192.168.1.2:80", true, true, "ok"),
        false,
        at(1),
    );
    let kept: SocketAddr = "192.168.1.2:80".parse().unwrap();
    report.retain(|virtual_server, address| *virtual_server == web() && address == kept);
    assert_eq!(
        report
            .real_servers
            .keys()
            .map(|(_, address)| *address)
            .collect::<Vec<_>>(),
        vec![kept]
    );
}

#[test]
fn passes_are_counted_by_what_started_them_and_repairs_summed() {
    let mut report = LvsReport::default();
    report.count(Reason::Start, 10, 0, false);
    report.count(Reason::Health, 2, 0, false);
    report.count(Reason::Health, 3, 2, false);
    report.count(Reason::DriftCheck, 2, 1, true);
    report.count(Reason::DriftCheck, 0, 0, true);
    report.count(Reason::Edited, 1, 0, false);
    assert_eq!(
        report.passes["start"],
        PassCounts {
            passes: 1,
            applied: 10,
            refused: 0,
            netlink_errors: 0
        }
    );
    assert_eq!(
        report.passes["health"],
        PassCounts {
            passes: 2,
            applied: 5,
            refused: 2,
            netlink_errors: 0
        }
    );
    assert_eq!(
        report.passes["audit"],
        PassCounts {
            passes: 2,
            applied: 2,
            refused: 1,
            netlink_errors: 2
        }
    );
    assert_eq!(
        report.drift_repaired().into_iter().collect::<Vec<_>>(),
        vec![("audit", 2), ("netlink_tap", 1), ("refusal", 0)]
    );
}
