use super::*;

fn at(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + seconds)
}

#[test]
fn in_sync_the_lag_is_zero() {
    let mut report = MuxReport::new("172.30.1.2");
    assert_eq!(report.sync.revisions_behind(), 0);
    report.sync.saw_store(3, at(0));
    assert_eq!(report.sync.revisions_behind(), 3, "nothing applied yet");
    assert_eq!(report.sync.behind_since, Some(at(0)));
    report.applied(3, Vec::new(), Duration::from_millis(20), at(1));
    assert_eq!(report.sync.revisions_behind(), 0);
    assert_eq!(report.sync.seconds_behind(at(5)), 0.0);
    assert_eq!(
        report.last_apply,
        Some(LastApply {
            at: at(1),
            took: Duration::from_millis(20)
        })
    );
    assert_eq!(report.applies_succeeded, 1);
}

#[test]
fn behind_counts_from_the_first_revision_not_applied() {
    let mut report = MuxReport::new("172.30.1.2");
    report.applied(4, Vec::new(), Duration::ZERO, at(0));
    // A watch event says 5; the reading fails, then 6 comes.
    report.sync.saw_store(5, at(10));
    report.apply_failed();
    report.sync.saw_store(6, at(12));
    assert_eq!(report.sync.store, Some(6));
    assert_eq!(report.sync.revisions_behind(), 2);
    assert_eq!(report.sync.seconds_behind(at(13)), 3.0);
    // An older revision seen late changes nothing.
    report.sync.saw_store(5, at(14));
    assert_eq!(report.sync.store, Some(6));
    // 5 applied: still behind 6, since the same moment.
    report.applied(5, Vec::new(), Duration::ZERO, at(15));
    assert_eq!(report.sync.revisions_behind(), 1);
    assert_eq!(report.sync.behind_since, Some(at(10)));
    report.applied(6, Vec::new(), Duration::ZERO, at(16));
    assert_eq!(report.sync.behind_since, None);
    assert_eq!((report.applies_succeeded, report.applies_failed), (3, 1));
}

#[test]
fn a_clock_stepped_back_gives_no_negative_lag() {
    let mut sync = PolicySync::default();
    sync.saw_store(1, at(10));
    assert_eq!(sync.seconds_behind(at(5)), 0.0);
}

#[test]
fn tenants_say_which_vips_are_announced() {
    let vip = |last: u8| IpAddr::from([203, 0, 113, last]);
    let tenant = TenantReport::new(
        100,
        "tenant-a",
        "fulcrum-vni100",
        &BTreeSet::from([vip(10), vip(11)]),
        &BTreeSet::from([vip(10)]),
    );
    assert_eq!(tenant.vips, [(vip(10), true), (vip(11), false)]);
    let mut report = MuxReport::new("172.30.1.2");
    report.applied(1, vec![tenant], Duration::ZERO, at(0));
    assert_eq!(report.announced(), 1);
}
