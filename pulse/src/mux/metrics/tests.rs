use super::*;

use std::collections::BTreeSet;
use std::net::IpAddr;

use ipvs::Forwarding;

use crate::mux::report::TenantReport;

fn at(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + seconds)
}

fn vip(last: u8) -> IpAddr {
    IpAddr::from([203, 0, 113, last])
}

/// A Mux that applied revision 2 at `at(10)` in 25 ms and has seen 3
/// since `at(20)`: tenant-a with VIP .10 announced and .11 withdrawn.
fn report() -> MuxReport {
    let mut report = MuxReport::new("172.30.1.2");
    report.connected = true;
    report.applied(
        2,
        vec![TenantReport::new(
            100,
            "tenant-a",
            "fulcrum-vni100",
            &BTreeSet::from([vip(10), vip(11)]),
            &BTreeSet::from([vip(10)]),
        )],
        Duration::from_millis(25),
        at(10),
    );
    report.sync.saw_store(3, at(20));
    report.apply_failed();
    report
}

fn traffic() -> Traffic {
    let key = ServiceKey::Address {
        protocol: ipvs::Protocol::Tcp,
        address: vip(10),
        port: 80,
    };
    let mut service = Service::new(key, "mh");
    service.statistics = Some(Box::default());
    let destination = |last: u8, connections: u64| {
        let mut destination = Destination::new(
            SocketAddr::new(IpAddr::from([10, 1, 0, last]), 8080),
            Forwarding::Route,
        );
        destination.statistics = Some(Box::new(Statistics {
            connections,
            incoming_packets: connections * 10,
            incoming_bytes: connections * 1000,
            ..Statistics::default()
        }));
        destination
    };
    let fwmark = Service::new(
        ServiceKey::Fwmark {
            family: ipvs::Family::Inet,
            mark: 5,
        },
        "rr",
    );
    Traffic {
        read_at: Some(at(29)),
        services: service_traffic(
            "tenant-a",
            &[
                (service, vec![destination(5, 7), destination(6, 3)]),
                (fwmark, Vec::new()),
            ],
        ),
    }
}

#[test]
fn the_sync_lag_the_last_apply_and_the_counts() {
    let text = text(&report(), &Traffic::default(), at(30));
    for line in [
        "pulse_mux_store_connected{mux=\"172.30.1.2\"} 1.0",
        "pulse_mux_policy_revision_applied{mux=\"172.30.1.2\"} 2.0",
        "pulse_mux_policy_revision_store{mux=\"172.30.1.2\"} 3.0",
        "pulse_mux_sync_lag_revisions{mux=\"172.30.1.2\"} 1.0",
        "pulse_mux_sync_lag_seconds{mux=\"172.30.1.2\"} 10.0",
        "pulse_mux_last_apply_timestamp_seconds{mux=\"172.30.1.2\"} 1800000010.0",
        "pulse_mux_last_apply_duration_seconds{mux=\"172.30.1.2\"} 0.025",
        "# TYPE pulse_mux_applies_total counter",
        "pulse_mux_applies_total{mux=\"172.30.1.2\",result=\"success\"} 1",
        "pulse_mux_applies_total{mux=\"172.30.1.2\",result=\"failure\"} 1",
        "pulse_mux_tenant_info{mux=\"172.30.1.2\",network=\"tenant-a\",vni=\"100\",namespace=\"fulcrum-vni100\"} 1.0",
        "pulse_mux_vip_announced{mux=\"172.30.1.2\",network=\"tenant-a\",vip=\"203.0.113.10\"} 1.0",
        "pulse_mux_vip_announced{mux=\"172.30.1.2\",network=\"tenant-a\",vip=\"203.0.113.11\"} 0.0",
        "pulse_mux_vips_announced{mux=\"172.30.1.2\"} 1.0",
    ] {
        assert!(
            text.lines().any(|shown| shown == line),
            "{line} in:\n{text}"
        );
    }
    // No counters read yet: the families are described, without samples.
    assert!(text.contains("# TYPE pulse_mux_ipvs_connections_total counter"));
    assert!(
        !text.contains("pulse_mux_ipvs_connections_total{"),
        "{text}"
    );
    assert!(
        !text.contains("pulse_mux_ipvs_last_read_timestamp_seconds{"),
        "{text}"
    );
}

#[test]
fn before_the_first_application_nothing_is_applied_and_all_is_behind() {
    let mut report = MuxReport::new("172.30.1.2");
    report.sync.saw_store(4, at(0));
    let text = text(&report, &Traffic::default(), at(2));
    assert!(
        !text.contains("pulse_mux_policy_revision_applied{"),
        "{text}"
    );
    assert!(
        !text.contains("pulse_mux_last_apply_timestamp_seconds{"),
        "{text}"
    );
    for line in [
        "pulse_mux_store_connected{mux=\"172.30.1.2\"} 0.0",
        "pulse_mux_sync_lag_revisions{mux=\"172.30.1.2\"} 4.0",
        "pulse_mux_sync_lag_seconds{mux=\"172.30.1.2\"} 2.0",
        "pulse_mux_vips_announced{mux=\"172.30.1.2\"} 0.0",
    ] {
        assert!(
            text.lines().any(|shown| shown == line),
            "{line} in:\n{text}"
        );
    }
}

#[test]
fn the_tenants_ipvs_counters_per_service_and_dip() {
    let text = text(&report(), &traffic(), at(30));
    let labels = |dip: &str| {
        format!(
            "mux=\"172.30.1.2\",network=\"tenant-a\",service=\"203.0.113.10:80/tcp\",dip=\"{dip}\""
        )
    };
    for line in [
        format!(
            "pulse_mux_ipvs_connections_total{{{}}} 7",
            labels("10.1.0.5:8080")
        ),
        format!(
            "pulse_mux_ipvs_connections_total{{{}}} 3",
            labels("10.1.0.6:8080")
        ),
        format!(
            "pulse_mux_ipvs_incoming_packets_total{{{}}} 70",
            labels("10.1.0.5:8080")
        ),
        format!(
            "pulse_mux_ipvs_incoming_bytes_total{{{}}} 3000",
            labels("10.1.0.6:8080")
        ),
        "pulse_mux_ipvs_last_read_timestamp_seconds{mux=\"172.30.1.2\"} 1800000029.0".to_owned(),
    ] {
        assert!(
            text.lines().any(|shown| shown == line),
            "{line} in:\n{text}"
        );
    }
    // The fwmark service is no VIP's.
    assert_eq!(traffic().services.len(), 1);
}

#[test]
fn the_served_registry_reads_the_latest_published() {
    let (report_sender, report_receiver) = watch::channel(MuxReport::new("172.30.1.2"));
    let (_traffic_sender, traffic) = watch::channel(Traffic::default());
    let registry = registry(Observed {
        report: report_receiver,
        traffic,
    });
    assert!(
        fulcrum_metrics::encode(&registry)
            .contains("pulse_mux_vips_announced{mux=\"172.30.1.2\"} 0")
    );
    report_sender.send_replace(report());
    assert!(
        fulcrum_metrics::encode(&registry)
            .contains("pulse_mux_vips_announced{mux=\"172.30.1.2\"} 1")
    );
}
