use super::*;

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

fn at(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + seconds)
}

fn report() -> AgentReport {
    let mut report = AgentReport::new("172.30.3.2");
    report.connected = true;
    report.sync.applied(1, at(0));
    report.networks = vec!["tenant-a".to_owned(), "tenant-b".to_owned()];
    report.found = BTreeSet::from([("tenant-b".to_owned(), IpAddr::from([10, 1, 0, 5]))]);
    let dip = SocketAddr::new(IpAddr::from([10, 1, 0, 5]), 8080);
    report.verdict(
        "tenant-b",
        dip,
        false,
        "TCP_CHECK 10.1.0.5:8080: connection refused",
        at(2),
    );
    report.verdict(
        "tenant-b",
        dip,
        true,
        "TCP_CHECK 10.1.0.5:8080: success",
        at(4),
    );
    report.translations.insert("tenant-b".to_owned(), 1);
    report.translations.insert("tenant-a".to_owned(), 0);
    report
}

#[test]
fn dips_probes_translations_and_the_sync_lag() {
    let text = text(&report(), at(10));
    let labels = "host=\"172.30.3.2\",network=\"tenant-b\",dip=\"10.1.0.5:8080\"";
    for line in [
        "fulcrum_agent_store_connected{host=\"172.30.3.2\"} 1.0".to_owned(),
        "fulcrum_agent_policy_revision_applied{host=\"172.30.3.2\"} 1.0".to_owned(),
        "fulcrum_agent_policy_revision_store{host=\"172.30.3.2\"} 1.0".to_owned(),
        "fulcrum_agent_sync_lag_revisions{host=\"172.30.3.2\"} 0.0".to_owned(),
        "fulcrum_agent_sync_lag_seconds{host=\"172.30.3.2\"} 0.0".to_owned(),
        "fulcrum_agent_dips_found{host=\"172.30.3.2\",network=\"tenant-a\"} 0.0".to_owned(),
        "fulcrum_agent_dips_found{host=\"172.30.3.2\",network=\"tenant-b\"} 1.0".to_owned(),
        format!("fulcrum_agent_dip_up{{{labels}}} 1.0"),
        format!(
            "fulcrum_agent_dip_last_change_info{{{labels},state=\"up\",reason=\"TCP_CHECK 10.1.0.5:8080: success\"}} 1.0"
        ),
        format!("fulcrum_agent_dip_last_change_timestamp_seconds{{{labels}}} 1800000004.0"),
        "# TYPE fulcrum_agent_probe_verdicts_total counter".to_owned(),
        format!("fulcrum_agent_probe_verdicts_total{{{labels},result=\"up\"}} 1"),
        format!("fulcrum_agent_probe_verdicts_total{{{labels},result=\"down\"}} 1"),
        "fulcrum_agent_nat_translations{host=\"172.30.3.2\",network=\"tenant-b\"} 1.0".to_owned(),
        "fulcrum_agent_nat_translations{host=\"172.30.3.2\",network=\"tenant-a\"} 0.0".to_owned(),
    ] {
        assert!(
            text.lines().any(|shown| shown == line),
            "{line} in:\n{text}"
        );
    }
}

#[test]
fn behind_the_store_the_lag_shows() {
    let mut report = report();
    report.sync.saw_store(3, at(20));
    let text = text(&report, at(26));
    for line in [
        "fulcrum_agent_policy_revision_store{host=\"172.30.3.2\"} 3.0",
        "fulcrum_agent_sync_lag_revisions{host=\"172.30.3.2\"} 2.0",
        "fulcrum_agent_sync_lag_seconds{host=\"172.30.3.2\"} 6.0",
    ] {
        assert!(
            text.lines().any(|shown| shown == line),
            "{line} in:\n{text}"
        );
    }
}

#[test]
fn the_served_registry_reads_the_latest_published() {
    let (sender, receiver) = watch::channel(AgentReport::new("172.30.3.2"));
    let registry = registry(receiver);
    assert!(!fulcrum_metrics::encode(&registry).contains("fulcrum_agent_dip_up{"));
    sender.send_replace(report());
    assert!(fulcrum_metrics::encode(&registry).contains("fulcrum_agent_dip_up{"));
}
