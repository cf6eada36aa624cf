use super::*;

use std::time::Duration;

fn at(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + seconds)
}

fn dip(last: u8) -> SocketAddr {
    SocketAddr::new(IpAddr::from([10, 1, 0, last]), 8080)
}

#[test]
fn verdicts_decide_health_and_are_counted() {
    let mut report = AgentReport::new("172.30.2.2");
    report.verdict(
        "tenant-a",
        dip(5),
        true,
        "TCP_CHECK 10.1.0.5:8080: success",
        at(0),
    );
    report.verdict(
        "tenant-a",
        dip(5),
        true,
        "TCP_CHECK 10.1.0.5:8080: success",
        at(3),
    );
    let health = &report.health[&("tenant-a".to_owned(), dip(5))];
    assert!(health.up);
    assert_eq!(health.since, at(0), "the same state again is no change");
    report.verdict(
        "tenant-a",
        dip(5),
        false,
        "TCP_CHECK 10.1.0.5:8080: connection refused",
        at(5),
    );
    let health = &report.health[&("tenant-a".to_owned(), dip(5))];
    assert!(!health.up);
    assert_eq!(health.since, at(5));
    assert_eq!(health.reason, "TCP_CHECK 10.1.0.5:8080: connection refused");
    assert_eq!((health.verdicts_up, health.verdicts_down), (2, 1));
}

#[test]
fn dips_the_policy_dropped_are_forgotten() {
    let mut report = AgentReport::new("172.30.3.2");
    report.verdict("tenant-a", dip(7), true, "ok", at(0));
    report.verdict("tenant-b", dip(5), true, "ok", at(0));
    report.retain(&BTreeSet::from([(
        "tenant-b".to_owned(),
        IpAddr::from([10, 1, 0, 5]),
    )]));
    assert_eq!(
        report.health.keys().cloned().collect::<Vec<_>>(),
        [("tenant-b".to_owned(), dip(5))]
    );
}

#[test]
fn found_dips_are_counted_per_served_network() {
    let mut report = AgentReport::new("172.30.3.2");
    report.networks = vec!["tenant-a".to_owned(), "tenant-b".to_owned()];
    report.found = BTreeSet::from([
        ("tenant-b".to_owned(), IpAddr::from([10, 1, 0, 5])),
        ("tenant-b".to_owned(), IpAddr::from([10, 1, 0, 6])),
    ]);
    assert_eq!(
        report.found_by_network(),
        BTreeMap::from([("tenant-a", 0), ("tenant-b", 2)])
    );
}

#[test]
fn the_lag_counts_from_the_first_revision_not_applied() {
    let mut sync = PolicySync::default();
    sync.applied(1, at(0));
    assert_eq!(
        (sync.revisions_behind(), sync.seconds_behind(at(9))),
        (0, 0.0)
    );
    sync.saw_store(2, at(10));
    sync.saw_store(3, at(11));
    assert_eq!(sync.revisions_behind(), 2);
    assert_eq!(sync.seconds_behind(at(14)), 4.0);
    sync.applied(3, at(15));
    assert_eq!((sync.revisions_behind(), sync.behind_since), (0, None));
}
