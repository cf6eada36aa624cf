use super::*;

use std::time::Duration;

use crate::vrrp::machine::{State, Statistics};
use crate::vrrp::report::{Address, Description, InstanceReport, ScriptReport};

fn instance(name: &str, addresses: &[&str], state: State) -> InstanceReport {
    InstanceReport {
        description: Arc::new(Description {
            virtual_addresses: addresses
                .iter()
                .map(|text| Address {
                    text: (*text).to_owned(),
                })
                .collect(),
            ..Description::example(name, 51, 100)
        }),
        state,
        wanted_state: state,
        effective_priority: 90,
        master_priority: 0,
        master_advert_interval: Duration::from_secs(1),
        last_transition: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        addresses_set: state == State::Master,
        statistics: {
            let mut statistics = Statistics::default();
            statistics.adverts_sent = 12;
            statistics.adverts_received = 3;
            statistics.became_master = 1;
            statistics
        },
    }
}

fn scrape(report: Report, reloads: Reloads) -> String {
    let (_vrrp_sender, vrrp) = watch::channel(Arc::new(report));
    let (_reloads_sender, reloads) = watch::channel(reloads);
    let (_lvs_sender, lvs) = watch::channel(LvsReport::default());
    fulcrum_metrics::encode(&registry(
        Observed { vrrp, lvs, reloads },
        &Arc::new(CheckDurations::default()),
    ))
}

#[test]
fn vrrp_is_exported_under_the_keepalived_exporters_names_and_labels() {
    let report = Report {
        instances: vec![
            instance(
                "VI_1",
                &[
                    "192.168.1.10/24 dev eth0 scope global",
                    "192.168.2.10 dev eth1 scope global label eth1:0",
                ],
                State::Master,
            ),
            instance("VI_2", &[], State::Backup),
        ],
        scripts: vec![
            ScriptReport {
                name: "chk_good".to_owned(),
                succeeding: Some(true),
            },
            ScriptReport {
                name: "chk_bad".to_owned(),
                succeeding: Some(false),
            },
            ScriptReport {
                name: "chk_waiting".to_owned(),
                succeeding: None,
            },
        ],
        processes: Vec::new(),
    };
    let text = scrape(report, Reloads::new(SystemTime::UNIX_EPOCH));
    for line in [
        "keepalived_up 1.0",
        "keepalived_vrrp_state{iname=\"VI_1\",intf=\"eth0\",vrid=\"51\",ip_address=\"192.168.1.10/24\"} 2.0",
        "keepalived_vrrp_state{iname=\"VI_1\",intf=\"eth1\",vrid=\"51\",ip_address=\"192.168.2.10\"} 2.0",
        "keepalived_vrrp_state{iname=\"VI_2\",intf=\"eth0\",vrid=\"51\",ip_address=\"\"} 1.0",
        "# TYPE keepalived_advertisements_sent counter",
        "keepalived_advertisements_sent_total{iname=\"VI_1\",intf=\"eth0\",vrid=\"51\"} 12",
        "keepalived_advertisements_received_total{iname=\"VI_2\",intf=\"eth0\",vrid=\"51\"} 3",
        "keepalived_become_master_total{iname=\"VI_1\",intf=\"eth0\",vrid=\"51\"} 1",
        "keepalived_priority_zero_sent_total{iname=\"VI_1\",intf=\"eth0\",vrid=\"51\"} 0",
        "keepalived_gratuitous_arp_delay_total{iname=\"VI_1\",intf=\"eth0\",vrid=\"51\"} 5",
        "keepalived_script_status{name=\"chk_good\"} 1.0",
        "keepalived_script_status{name=\"chk_bad\"} 0.0",
        "pulse_vrrp_priority{iname=\"VI_1\",intf=\"eth0\",vrid=\"51\"} 90.0",
        "pulse_vrrp_base_priority{iname=\"VI_1\",intf=\"eth0\",vrid=\"51\"} 100.0",
        "pulse_vrrp_last_transition_timestamp_seconds{iname=\"VI_1\",intf=\"eth0\",vrid=\"51\"} 1800000000.0",
    ] {
        assert!(
            text.lines().any(|written| written == line),
            "no line {line} in:\n{text}"
        );
    }
    assert!(!text.contains("chk_waiting"), "{text}");
    assert!(text.ends_with("# EOF\n"), "{text}");
}

#[test]
fn reloads_are_counted_and_the_last_one_s_outcome_kept() {
    let mut reloads = Reloads::new(SystemTime::UNIX_EPOCH + Duration::from_secs(100));
    reloads.record(true, SystemTime::UNIX_EPOCH + Duration::from_secs(200));
    reloads.record(false, SystemTime::UNIX_EPOCH + Duration::from_secs(300));
    let text = scrape(Report::default(), reloads);
    for line in [
        "pulse_config_last_reload_successful 0.0",
        "pulse_config_last_reload_success_timestamp_seconds 200.0",
        "pulse_config_reloads_total{result=\"success\"} 1",
        "pulse_config_reloads_total{result=\"failure\"} 1",
        // No instance: the families are described, without samples.
        "# TYPE keepalived_vrrp_state gauge",
    ] {
        assert!(
            text.lines().any(|written| written == line),
            "no line {line} in:\n{text}"
        );
    }
    assert!(!text.contains("keepalived_vrrp_state{"), "{text}");
}

#[test]
fn real_servers_and_passes_are_exported_with_their_reasons() {
    use crate::lvs::report::{PassCounts, RealServerReport};
    let web = nanny::spec::VirtualServerKey::Fwmark(5);
    let mut lvs_report = LvsReport::default();
    lvs_report.real_servers.insert(
        (web.to_string(), "192.168.1.1:80".parse().unwrap()),
        RealServerReport {
            virtual_server: web,
            up: false,
            reason: "HTTP_GET \"/\": status 503".to_owned(),
            since: SystemTime::UNIX_EPOCH + Duration::from_secs(7),
            went_up: 1,
            went_down: 2,
        },
    );
    lvs_report.passes.insert(
        "audit",
        PassCounts {
            passes: 3,
            applied: 4,
            refused: 1,
            netlink_errors: 0,
        },
    );
    let (_vrrp_sender, vrrp) = watch::channel(Arc::new(Report::default()));
    let (_reloads_sender, reloads) = watch::channel(Reloads::new(SystemTime::UNIX_EPOCH));
    let (_lvs_sender, lvs) = watch::channel(lvs_report);
    let text = fulcrum_metrics::encode(&registry(
        Observed { vrrp, lvs, reloads },
        &Arc::new(CheckDurations::default()),
    ));
    let server = "virtual_server=\"fwmark 5\",real_server=\"192.168.1.1:80\"";
    for line in [
        format!("pulse_real_server_up{{{server}}} 0.0"),
        format!(
            "pulse_real_server_last_change_info{{{server},state=\"down\",reason=\"HTTP_GET \\\"/\\\": status 503\"}} 1.0"
        ),
        format!("pulse_real_server_last_change_timestamp_seconds{{{server}}} 7.0"),
        format!("pulse_real_server_transitions_total{{{server},to=\"up\"}} 1"),
        format!("pulse_real_server_transitions_total{{{server},to=\"down\"}} 2"),
        "pulse_ipvs_passes_total{reason=\"audit\"} 3".to_owned(),
        "pulse_ipvs_changes_applied_total{reason=\"audit\"} 4".to_owned(),
        "pulse_ipvs_changes_refused_total{reason=\"audit\"} 1".to_owned(),
        "pulse_ipvs_netlink_errors_total{reason=\"audit\"} 0".to_owned(),
        "pulse_ipvs_drift_repaired_total{found_by=\"audit\"} 4".to_owned(),
        "pulse_ipvs_drift_repaired_total{found_by=\"netlink_tap\"} 0".to_owned(),
    ] {
        assert!(
            text.lines().any(|written| written == line),
            "no line {line} in:\n{text}"
        );
    }
}

#[test]
fn check_durations_are_a_histogram_by_checker_real_server_and_outcome() {
    let (_vrrp_sender, vrrp) = watch::channel(Arc::new(Report::default()));
    let (_reloads_sender, reloads) = watch::channel(Reloads::new(SystemTime::UNIX_EPOCH));
    let (_lvs_sender, lvs) = watch::channel(LvsReport::default());
    let durations = Arc::new(CheckDurations::default());
    let registry = registry(Observed { vrrp, lvs, reloads }, &durations);
    // Described before any check ran, as every family is.
    let text = fulcrum_metrics::encode(&registry);
    assert!(
        text.contains("# TYPE pulse_check_duration_seconds histogram\n"),
        "{text}"
    );
}
