use super::*;

use std::net::Ipv4Addr;

fn written(address: &str, length: u8) -> config::VirtualAddress {
    config::VirtualAddress {
        address: config::Prefix {
            address: address.parse().unwrap(),
            length,
        },
        broadcast: None,
        device: None,
        scope: config::Scope::Global,
        label: None,
        peer: None,
        home: false,
        no_dad: false,
        manage_temporary_address: false,
        no_prefix_route: false,
        autojoin: false,
        no_track: false,
        use_vmac: false,
        preferred_lifetime: None,
        track_group: None,
    }
}

/// keepalived 2.2.7's `format_ipaddress`, as its dumps showed it for these
/// lines of `virtual_ipaddress` (a host address has no prefix).
#[test]
fn addresses_are_written_as_keepalived_writes_them() {
    assert_eq!(
        format_address(&written("192.168.77.100", 24), "veth0"),
        "192.168.77.100/24 dev veth0 scope global"
    );
    let mut labelled = written("192.168.77.101", 32);
    labelled.device = Some("veth0".to_owned());
    labelled.label = Some("veth0:1".to_owned());
    assert_eq!(
        format_address(&labelled, "eth9"),
        "192.168.77.101 dev veth0 scope global label veth0:1"
    );
    let mut other = written("10.0.0.1", 8);
    other.broadcast = Some(IpAddr::V4(Ipv4Addr::new(10, 255, 255, 255)));
    other.scope = config::Scope::Link;
    other.no_track = true;
    assert_eq!(
        format_address(&other, "eth0"),
        "10.0.0.1/8 brd 10.255.255.255 dev eth0 scope link no_track"
    );
    // IPv6: a /128 without preferred_lft is deprecated, others forever.
    assert_eq!(
        format_address(&written("2001:db8::1", 128), "eth0"),
        "2001:db8::1 dev eth0 scope global deprecated"
    );
    let mut forever = written("2001:db8::2", 64);
    forever.no_dad = true;
    assert_eq!(
        format_address(&forever, "eth0"),
        "2001:db8::2/64 dev eth0 scope global -nodad preferred_lft forever"
    );
}

#[test]
fn floats_are_written_as_c_s_percent_g() {
    for (value, text) in [
        (0.0, "0"),
        (1.0, "1"),
        (5.0, "5"),
        (0.5, "0.5"),
        (0.01, "0.01"),
        (2.25, "2.25"),
        (1.0 / 3.0, "0.333333"),
        (120.0, "120"),
        // Six significant digits, rounded.
        (123456.0, "123456"),
        (1234567.0, "1.23457e+06"),
        (999999.5, "1e+06"),
        (0.0001, "0.0001"),
        (0.00012345678, "0.000123457"),
        // keepalived's smallest delay (one microsecond) and others below
        // 1e-4: the exponent form, signed, two digits at least.
        (0.000001, "1e-06"),
        (0.000015, "1.5e-05"),
        (3600.0, "3600"),
        (1e100, "1e+100"),
        (-2.5, "-2.5"),
    ] {
        assert_eq!(general(value), text, "{value}");
    }
}

fn description(name: &str, virtual_router_id: u8, base_priority: u8) -> Description {
    Description {
        interface: "veth0".to_owned(),
        ..Description::example(name, virtual_router_id, base_priority)
    }
}

fn master(description: Description, effective_priority: u8, at: (u64, u32)) -> InstanceReport {
    let mut statistics = Statistics::default();
    statistics.adverts_sent = 2;
    statistics.became_master = 1;
    InstanceReport {
        description: Arc::new(description),
        state: State::Master,
        wanted_state: State::Master,
        effective_priority,
        master_priority: 0,
        master_advert_interval: Duration::from_secs(1),
        last_transition: SystemTime::UNIX_EPOCH + Duration::new(at.0, at.1 * 1000),
        addresses_set: true,
        statistics,
    }
}

/// The file keepalived 2.2.7 wrote on SIGRTMIN+2 for two masters (one
/// with a password, a notify script, two addresses, an excluded one and
/// two tracked scripts, one failing with weight -10), byte for byte.
#[test]
fn the_json_dump_is_keepalived_s() {
    let mut first = description("VI_1", 51, 100);
    first.notify_scripts = vec![("script_master", "'/usr/bin/echo' 'master'".to_owned())];
    let mut labelled = written("192.168.77.101", 32);
    labelled.device = Some("veth0".to_owned());
    labelled.label = Some("veth0:1".to_owned());
    first.virtual_addresses = vec![
        Address {
            text: format_address(&written("192.168.77.100", 24), "veth0"),
        },
        Address {
            text: format_address(&labelled, "veth0"),
        },
    ];
    first.excluded_addresses = vec![Address {
        text: format_address(&written("10.9.9.9", 32), "veth0"),
    }];
    first.tracked_scripts = vec!["'/usr/bin/true'".to_owned(), "'/usr/bin/false'".to_owned()];
    first.authentication = (1, Some("s3cret".to_owned()));
    let mut second = description("VI_2", 52, 50);
    second.nopreempt = true;
    second.virtual_addresses = vec![Address {
        text: format_address(&written("192.168.77.102", 32), "veth0"),
    }];
    let report = Report {
        instances: vec![
            master(first, 90, (1796676731, 39677)),
            master(second, 50, (1796676731, 181246)),
        ],
        scripts: Vec::new(),
        processes: Vec::new(),
    };
    let expected = concat!(
        r#"[{"data":{"iname":"VI_1","dont_track_primary":0,"skip_check_adv_addr":0,"strict_mode":0,"vmac_ifname":"","ifp_ifname":"veth0","master_priority":0,"last_transition":1796676731.039677,"garp_delay":5,"garp_refresh":0,"garp_rep":5,"garp_refresh_rep":1,"garp_lower_prio_delay":5,"garp_lower_prio_rep":5,"lower_prio_no_advert":0,"higher_prio_send_advert":0,"vrid":51,"base_priority":100,"effective_priority":90,"vipset":true,"promote_secondaries":false,"adver_int":1,"master_adver_int":1,"accept":1,"nopreempt":false,"preempt_delay":0,"state":2,"wantstate":2,"version":2,"smtp_alert":false,"notify_deleted":false,"script_master":"'\/usr\/bin\/echo' 'master'","vips":["192.168.77.100\/24 dev veth0 scope global set","192.168.77.101 dev veth0 scope global label veth0:1 set"],"evips":["10.9.9.9 dev veth0 scope global set"],"track_script":["'\/usr\/bin\/true'","'\/usr\/bin\/false'"],"auth_type":1,"auth_data":"s3cret"},"stats":{"advert_rcvd":0,"advert_sent":2,"become_master":1,"release_master":0,"packet_len_err":0,"advert_interval_err":0,"ip_ttl_err":0,"invalid_type_rcvd":0,"addr_list_err":0,"invalid_authtype":0,"authtype_mismatch":0,"auth_failure":0,"pri_zero_rcvd":0,"pri_zero_sent":0}},"#,
        r#"{"data":{"iname":"VI_2","dont_track_primary":0,"skip_check_adv_addr":0,"strict_mode":0,"vmac_ifname":"","ifp_ifname":"veth0","master_priority":0,"last_transition":1796676731.181246,"garp_delay":5,"garp_refresh":0,"garp_rep":5,"garp_refresh_rep":1,"garp_lower_prio_delay":5,"garp_lower_prio_rep":5,"lower_prio_no_advert":0,"higher_prio_send_advert":0,"vrid":52,"base_priority":50,"effective_priority":50,"vipset":true,"promote_secondaries":false,"adver_int":1,"master_adver_int":1,"accept":1,"nopreempt":true,"preempt_delay":0,"state":2,"wantstate":2,"version":2,"smtp_alert":false,"notify_deleted":false,"vips":["192.168.77.102 dev veth0 scope global set"],"auth_type":0},"stats":{"advert_rcvd":0,"advert_sent":2,"become_master":1,"release_master":0,"packet_len_err":0,"advert_interval_err":0,"ip_ttl_err":0,"invalid_type_rcvd":0,"addr_list_err":0,"invalid_authtype":0,"authtype_mismatch":0,"auth_failure":0,"pri_zero_rcvd":0,"pri_zero_sent":0}}]"#,
        "\n"
    );
    assert_eq!(keepalived_json(&report, JsonVersion::One), expected);
}

#[test]
fn strings_are_escaped_as_keepalived_s_writer_does() {
    let mut json = Json::default();
    json.quoted("a/b\"c\td\\e'f");
    assert_eq!(json.text, r#""a\/b\"c\td\ne'f""#);
}

#[test]
fn no_instance_is_an_empty_array() {
    assert_eq!(
        keepalived_json(&Report::default(), JsonVersion::One),
        "[]\n"
    );
    assert_eq!(
        keepalived_json(&Report::default(), JsonVersion::Two),
        "{\"vrrp\":[]}\n"
    );
}

/// A report with one master and the given processes.
fn with_processes(processes: Vec<ProcessReport>) -> Report {
    let mut description = description("VI_1", 51, 100);
    description.virtual_addresses = vec![Address {
        text: format_address(&written("192.168.77.100", 24), "veth0"),
    }];
    Report {
        instances: vec![master(description, 100, (1796676731, 39677))],
        scripts: Vec::new(),
        processes,
    }
}

/// json_version 2 without tracked processes: the version 1 array under
/// "vrrp", nothing else (keepalived 2.2.8's `vrrp_json_dump` writes the
/// "track_process" array only when some process is tracked).
#[test]
fn json_version_2_puts_the_instances_under_vrrp() {
    let report = with_processes(Vec::new());
    let array = keepalived_json(&report, JsonVersion::One);
    assert!(
        array.starts_with("[{\"data\":{\"iname\":\"VI_1\""),
        "{array}"
    );
    assert_eq!(
        keepalived_json(&report, JsonVersion::Two),
        format!("{{\"vrrp\":{}}}\n", array.trim_end_matches('\n'))
    );
}

/// json_version 2 with tracked processes: after the instances, the
/// "track_process" array, each process with the fields of keepalived's
/// `vrrp_json_vprocess_dump` in its order: the parameters joined by spaces
/// and left out without any, `max_processes` left out without a maximum,
/// the weight negated when reversed, the delays in seconds by `%g`, the
/// flags as `true`/`false`.
#[test]
fn json_version_2_writes_the_tracked_processes_as_keepalived_does() {
    let processes = vec![
        ProcessReport {
            name: "nginx".to_owned(),
            parameters: Vec::new(),
            parameter_match: ParameterMatch::None,
            quorum: 1,
            quorum_max: None,
            current_processes: 2,
            have_quorum: true,
            weight: 0,
            weight_reverse: false,
            terminate_delay: Duration::ZERO,
            fork_delay: Duration::ZERO,
            fork_delay_timer_running: false,
            terminate_delay_timer_running: false,
            full_command: false,
        },
        ProcessReport {
            name: "application".to_owned(),
            parameters: vec!["-c".to_owned(), "/etc/app.conf".to_owned()],
            parameter_match: ParameterMatch::Partial,
            quorum: 2,
            quorum_max: Some(4),
            current_processes: 1,
            have_quorum: false,
            weight: 10,
            weight_reverse: true,
            terminate_delay: Duration::from_millis(500),
            fork_delay: Duration::from_micros(1),
            fork_delay_timer_running: true,
            terminate_delay_timer_running: false,
            full_command: true,
        },
    ];
    let report = with_processes(processes);
    let array = keepalived_json(&report, JsonVersion::One);
    let expected = format!(
        "{{\"vrrp\":{}{}\n",
        array.trim_end_matches('\n'),
        concat!(
            r#","track_process":["#,
            r#"{"process":"nginx","param_match":"none","min_processes":1,"current_processes":2,"have_quorum":true,"weight":0,"terminate_delay":0,"fork_delay":0,"fork_delay_timer_running":false,"terminate_delay_timer_running":false,"full_command":false},"#,
            r#"{"process":"application","parameters":"-c \/etc\/app.conf","param_match":"partial","min_processes":2,"max_processes":4,"current_processes":1,"have_quorum":false,"weight":-10,"terminate_delay":0.5,"fork_delay":1e-06,"fork_delay_timer_running":true,"terminate_delay_timer_running":false,"full_command":true}"#,
            r#"]}"#
        )
    );
    assert_eq!(keepalived_json(&report, JsonVersion::Two), expected);
    // Version 1 has no place for them: the array alone.
    assert!(!array.contains("track_process"), "{array}");
}

/// The other `param_match` words.
#[test]
fn parameter_matches_are_keepalived_s_words() {
    for (parameter_match, word) in [
        (ParameterMatch::None, "none"),
        (ParameterMatch::Exact, "exact"),
        (ParameterMatch::Partial, "partial"),
        (ParameterMatch::Initial, "initial"),
    ] {
        assert_eq!(parameter_match.name(), word);
    }
}

#[test]
fn the_json_version_is_the_configuration_s() {
    let mut global = config::GlobalDefs::default();
    assert_eq!(JsonVersion::of(&global), JsonVersion::One);
    global.json_version = Some(1);
    assert_eq!(JsonVersion::of(&global), JsonVersion::One);
    global.json_version = Some(2);
    assert_eq!(JsonVersion::of(&global), JsonVersion::Two);
}
