use std::sync::Arc;

use fulcrum_config::lexer::Options;

use super::*;

fn plan(text: &str) -> Plan {
    Plan::from_config(Arc::new(crate::vrrp::tests::configuration(text))).unwrap()
}

fn tracked(name: &str, weight: i32) -> Tracked {
    Tracked {
        name: name.into(),
        weight,
        reverse: false,
    }
}

/// Names and weights.
type Weights = Vec<(String, i32)>;

fn weights(objects: &TrackedObjects) -> (Weights, Weights, Weights) {
    let pairs = |list: &[Tracked]| {
        list.iter()
            .map(|object| (object.name.clone(), object.weight))
            .collect()
    };
    (
        pairs(&objects.links),
        pairs(&objects.scripts),
        pairs(&objects.files),
    )
}

fn named(pairs: &[(&str, i32)]) -> Weights {
    pairs
        .iter()
        .map(|(name, weight)| ((*name).to_owned(), *weight))
        .collect()
}

#[test]
fn a_sync_group_member_s_weights_go_as_keepalived_s() {
    let mut objects = TrackedObjects {
        links: vec![tracked("eth1", 10), tracked("eth2", 0)],
        scripts: vec![tracked("weighted", -20), tracked("fault", 0)],
        files: vec![
            tracked("default", 1),
            tracked("weighted", 5),
            tracked("zero", 0),
        ],
        processes: Vec::new(),
        bfds: Vec::new(),
    };
    let mut warnings = Vec::new();
    ignore_weights("VI_1", &mut objects, &mut warnings);
    assert_eq!(
        weights(&objects),
        (
            named(&[("eth1", 0), ("eth2", 0)]),
            named(&[("fault", 0)]),
            named(&[("default", 0), ("zero", 0)]),
        )
    );
    assert_eq!(
        warnings,
        [
            "(VI_1) ignoring weight of tracked interface eth1 due to SYNC group",
            "(VI_1) ignoring tracked script weighted with weights due to SYNC group",
            "(VI_1) ignoring weight from tracked file default due to SYNC group - specify weight 0",
            "(VI_1) ignoring tracked file weighted with weight 5 due to SYNC group",
        ]
    );
}

#[test]
fn a_sync_group_s_tracking_applies_to_its_members_once() {
    let group = || TrackedObjects {
        links: vec![tracked("eth1", 10)],
        scripts: vec![tracked("check", -20)],
        files: vec![tracked("value", 2)],
        processes: Vec::new(),
        bfds: Vec::new(),
    };
    let mut own = TrackedObjects {
        links: vec![tracked("eth1", 0), tracked("eth2", 0)],
        scripts: vec![tracked("check", 0)],
        files: Vec::new(),
        processes: Vec::new(),
        bfds: Vec::new(),
    };
    let mut warnings = Vec::new();
    merge_group_tracking("VI_1", "G1", false, &mut own, group(), &mut warnings);
    assert_eq!(
        weights(&own),
        (
            named(&[("eth2", 0), ("eth1", 10)]),
            named(&[("check", -20)]),
            named(&[("value", 2)]),
        )
    );
    assert_eq!(
        warnings,
        [
            "(VI_1) track_interface eth1 is configured on VRRP instance and sync group. Remove \
             vrrp instance or sync group config",
            "(VI_1) track_script check is configured on VRRP instance and sync group. Remove \
             vrrp instance config",
        ]
    );
    // A member owning its addresses: the group's weights go.
    let mut own = TrackedObjects::default();
    let mut warnings = Vec::new();
    merge_group_tracking("VI_1", "G1", true, &mut own, group(), &mut warnings);
    assert_eq!(
        weights(&own),
        (
            named(&[("eth1", 0)]),
            named(&[("check", 0)]),
            named(&[("value", 0)]),
        )
    );
    assert_eq!(
        warnings[2],
        "(G1) Cannot have weighted track file 'value' with member having priority 255 - setting \
         weight 0"
    );
}

const TWO_INSTANCES: &str = "
vrrp_script chk {
    script /bin/true
    weight -10
}
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    priority 100
    virtual_ipaddress {
        192.0.2.100
    }
    track_script {
        chk
    }
}
vrrp_instance VI_2 {
    interface eth0
    virtual_router_id 52
    priority 100
    unicast_peer {
        192.0.2.2
    }
    virtual_ipaddress {
        192.0.2.101
    }
}
";

#[test]
fn an_instance_resolves_its_tracking_destinations_and_drops() {
    let plan = plan(&format!(
        "global_defs {{\n vrrp_strict\n}}\n{TWO_INSTANCES}"
    ));
    let first = &plan.instances[0];
    assert_eq!(first.interface, "eth0");
    assert_eq!(first.tracked.scripts, [tracked("chk", -10)]);
    assert_eq!(
        first.destinations,
        ["224.0.0.18".parse::<IpAddr>().unwrap()]
    );
    // Strict mode: no accept mode, so the master drops its addresses.
    assert_eq!(first.dropped, ["192.0.2.100".parse::<IpAddr>().unwrap()]);
    assert!(!first.configured_source());
    assert_eq!(
        plan.instances[1].destinations,
        ["192.0.2.2".parse::<IpAddr>().unwrap()]
    );
    assert_eq!(plan.scripts.len(), 1);
}

#[test]
fn a_reload_of_the_same_file_keeps_everything() {
    let old = plan(TWO_INSTANCES);
    let new = plan(TWO_INSTANCES);
    assert_eq!(
        reload(&old, &new),
        Reload {
            kept: vec![(0, 0), (1, 1)],
            kept_groups: Vec::new(),
        }
    );
}

#[test]
fn a_changed_instance_or_tracked_script_restarts_only_what_uses_it() {
    let old = plan(TWO_INSTANCES);
    // VI_2's priority changes, and it moves first: VI_1 is kept at its new
    // place.
    let changed = TWO_INSTANCES.replace(
        "virtual_router_id 52\n    priority 100",
        "virtual_router_id 52\n    priority 90",
    );
    let new = plan(&changed);
    assert_eq!(reload(&old, &new).kept, [(0, 0)]);
    // The script VI_1 tracks changes: VI_1 restarts, VI_2 is kept.
    let new = plan(&TWO_INSTANCES.replace("weight -10", "weight -20"));
    assert_eq!(reload(&old, &new).kept, [(1, 1)]);
    // A global VRRP setting changes: everything restarts.
    let new = plan(&format!(
        "global_defs {{\n vrrp_garp_interval 1\n}}\n{TWO_INSTANCES}"
    ));
    assert_eq!(reload(&old, &new), Reload::default());
}

#[test]
fn a_sync_group_is_kept_only_whole() {
    let grouped = format!(
        "{TWO_INSTANCES}
vrrp_sync_group G1 {{
    group {{
        VI_1
        VI_2
    }}
}}
"
    );
    let old = plan(&grouped);
    assert_eq!(old.groups[0].members, [0, 1]);
    assert_eq!(old.instances[1].group, Some((0, 1)));
    assert_eq!(
        reload(&old, &plan(&grouped)),
        Reload {
            kept: vec![(0, 0), (1, 1)],
            kept_groups: vec![(0, 0)],
        }
    );
    // One member changes: the whole group restarts.
    let changed = grouped.replace(
        "virtual_router_id 52\n    priority 100",
        "virtual_router_id 52\n    priority 90",
    );
    assert_eq!(reload(&old, &plan(&changed)), Reload::default());
    // Out of the group: an instance that was in one is not kept.
    assert_eq!(reload(&old, &plan(TWO_INSTANCES)), Reload::default());
    // Into a group: neither.
    assert_eq!(reload(&plan(TWO_INSTANCES), &old), Reload::default());
}

#[test]
fn an_instance_without_interface_cannot_run() {
    let options = Options::default();
    let loaded = fulcrum_config::load_str(
        "test.conf",
        "vrrp_instance VI_1 {\n virtual_router_id 1\n}\n",
        &options,
    );
    assert_eq!(
        Plan::from_config(Arc::new(loaded.config)).unwrap_err(),
        PlanError::NoInterface("VI_1".into())
    );
}

#[test]
fn tracked_processes_resolve_and_merge_as_keepalived_s() {
    let plan = plan(
        "
vrrp_track_process web {
    process nginx
    weight -30
}
vrrp_track_process cache {
    process varnishd
    weight 10 reverse
}
vrrp_track_process unused {
    process sshd
}
vrrp_sync_group G1 {
    group {
        VI_1
        VI_2
    }
    track_process {
        web weight -40
        cache
    }
}
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    priority 100
    track_process {
        web weight -20 reverse
        web
        missing
    }
    virtual_ipaddress {
        192.0.2.100
    }
}
vrrp_instance VI_2 {
    interface eth0
    virtual_router_id 52
    priority 100
    track_process {
        web weight 0
    }
    virtual_ipaddress {
        192.0.2.101
    }
}
",
    );
    let reversed = |name: &str, weight| Tracked {
        reverse: true,
        ..tracked(name, weight)
    };
    // A sync group member keeps its process weights (keepalived clears
    // those of scripts, not of processes); the group's weight replaces a
    // weighted entry of the member's, which keeps its reverse.
    assert_eq!(
        plan.instances[0].tracked.processes,
        [reversed("web", -40), reversed("cache", 10)]
    );
    // An unweighted entry of the member's stays unweighted.
    assert_eq!(
        plan.instances[1].tracked.processes,
        [tracked("web", 0), reversed("cache", 10)]
    );
    let names: Vec<&str> = plan
        .processes
        .iter()
        .map(|process| process.name.as_str())
        .collect();
    assert_eq!(names, ["web", "cache"]);
    for warning in [
        "(VI_1) duplicate track_process web - ignoring",
        "(VI_1) track process missing not found, ignoring...",
        "(VI_1) track_process web is configured on VRRP instance and sync group. Remove vrrp \
         instance config",
    ] {
        assert!(
            plan.warnings.iter().any(|line| line == warning),
            "{warning}: {:?}",
            plan.warnings
        );
    }
    // A changed definition restarts what tracks it.
    let changed = Plan::from_config(Arc::new(crate::vrrp::tests::configuration(
        &plan_text_with_quorum(),
    )))
    .unwrap();
    let unchanged = Plan::from_config(Arc::new(crate::vrrp::tests::configuration(
        &plan_text_with_quorum(),
    )))
    .unwrap();
    assert_eq!(reload(&changed, &unchanged).kept.len(), 1);
    let other = Plan::from_config(Arc::new(crate::vrrp::tests::configuration(
        &plan_text_with_quorum().replace("quorum 2", "quorum 3"),
    )))
    .unwrap();
    assert_eq!(reload(&changed, &other).kept.len(), 0);
}

fn plan_text_with_quorum() -> String {
    "
vrrp_track_process web {
    process nginx
    quorum 2
}
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    priority 100
    track_process {
        web
    }
    virtual_ipaddress {
        192.0.2.100
    }
}
"
    .to_owned()
}

#[test]
fn unicast_fault_no_peer_without_peers_is_a_configuration_fault() {
    let without_peers = "vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    unicast_src_ip 192.0.2.1
    unicast_fault_no_peer
    virtual_ipaddress {
        192.0.2.100
    }
}
";
    let faulted = plan(without_peers);
    assert!(faulted.instances[0].configuration_fault);
    // keepalived's line, logged with the plan's warnings.
    assert!(faulted.warnings.contains(
        &"(VI_1) Cannot use unicast without any peers - going to fault state".to_owned()
    ));
    // With a peer it is unicast as usual.
    let with_peer = plan(&without_peers.replace(
        "unicast_fault_no_peer\n",
        "unicast_fault_no_peer\n    unicast_peer {\n        192.0.2.2\n    }\n",
    ));
    assert!(!with_peer.instances[0].configuration_fault);
    assert_eq!(
        with_peer.instances[0].destinations,
        ["192.0.2.2".parse::<IpAddr>().unwrap()]
    );
    // Without the keyword keepalived falls back to multicast.
    let multicast = plan(&without_peers.replace("    unicast_fault_no_peer\n", ""));
    assert!(!multicast.instances[0].configuration_fault);
    assert_eq!(
        multicast.instances[0].destinations,
        ["224.0.0.18".parse::<IpAddr>().unwrap()]
    );
}

#[test]
fn a_reload_removes_what_keepalived_finds_no_counterpart_for() {
    let old = plan(TWO_INSTANCES);
    // The same file: nothing removed.
    assert_eq!(removed(&old, &plan(TWO_INSTANCES)), Vec::<usize>::new());
    // keepalived matches by VRID, family and interface, not by name or
    // block: a renamed instance with another priority is not removed.
    let renamed = TWO_INSTANCES.replace("VI_2", "VI_9").replace(
        "virtual_router_id 52\n    priority 100",
        "virtual_router_id 52\n    priority 90",
    );
    assert_eq!(removed(&old, &plan(&renamed)), Vec::<usize>::new());
    // Another VRID: removed.
    let moved = TWO_INSTANCES.replace("virtual_router_id 52", "virtual_router_id 53");
    assert_eq!(removed(&old, &plan(&moved)), [1]);
    // Unicast to multicast: removed.
    let multicast = TWO_INSTANCES.replace("    unicast_peer {\n        192.0.2.2\n    }\n", "");
    assert_eq!(removed(&old, &plan(&multicast)), [1]);
    // Another multicast group: removed.
    let group = TWO_INSTANCES.replacen(
        "virtual_router_id 51\n",
        "virtual_router_id 51\n    mcast_dst_ip 224.0.0.19\n",
        1,
    );
    assert_eq!(removed(&old, &plan(&group)), [0]);
}

#[test]
fn a_removed_instance_notifies_as_keepalived_s_deleted_one() {
    use crate::vrrp::State;
    // notify_deleted: DELETED whatever the state.
    for state in [State::Master, State::Backup, State::Fault] {
        assert_eq!(removal_notice(true, state), RemovalNotice::Deleted);
    }
    // Without it, FAULT, unless it is in FAULT already.
    assert_eq!(removal_notice(false, State::Master), RemovalNotice::Fault);
    assert_eq!(removal_notice(false, State::Backup), RemovalNotice::Fault);
    assert_eq!(removal_notice(false, State::Fault), RemovalNotice::Nothing);
}

#[test]
fn notify_priority_changes_comes_from_the_instance_its_group_or_the_globals() {
    let text = |globals: &str, group: &str, instance: &str| {
        format!(
            "global_defs {{\n{globals}}}\nvrrp_sync_group G {{\n    group {{\n        VI_1\n    \
             }}\n{group}}}\nvrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 51\n\
             {instance}    virtual_ipaddress {{\n        192.0.2.100\n    }}\n}}\n"
        )
    };
    let resolved = |globals, group, instance| {
        plan(&text(globals, group, instance)).instances[0].notify_priority_changes
    };
    assert!(!resolved("", "", ""));
    assert!(resolved("    vrrp_notify_priority_changes\n", "", ""));
    assert!(!resolved(
        "    vrrp_notify_priority_changes\n",
        "    notify_priority_changes false\n",
        ""
    ));
    assert!(resolved(
        "",
        "    notify_priority_changes false\n",
        "    notify_priority_changes\n"
    ));
}

#[test]
fn tracked_bfds_resolve_and_merge_as_keepalived_s() {
    let plan = plan(
        "
bfd_instance peer {
    neighbor_ip 192.0.2.2
    weight -30
}
bfd_instance backup_link {
    neighbor_ip 192.0.2.3
    weight 10 reverse
}
bfd_instance unused {
    neighbor_ip 192.0.2.4
}
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    priority 100
    track_bfd {
        peer weight -20
        peer
        backup_link
        missing
    }
    virtual_ipaddress {
        192.0.2.100
    }
}
vrrp_instance OWNER {
    interface eth0
    virtual_router_id 52
    priority 255
    track_bfd {
        peer
        backup_link weight 0
    }
    virtual_ipaddress {
        192.0.2.101
    }
}
",
    );
    let reversed = |name: &str, weight| Tracked {
        reverse: true,
        ..tracked(name, weight)
    };
    // The entry's weight, else the bfd_instance's; the instance's reverse
    // stays with an entry's weight.
    assert_eq!(
        plan.instances[0].tracked.bfds,
        [tracked("peer", -20), reversed("backup_link", 10)]
    );
    // An address owner's weighted entries go; weight 0 stays.
    assert_eq!(plan.instances[1].tracked.bfds, [reversed("backup_link", 0)]);
    // The sessions of what is tracked, in the configuration's order.
    let names: Vec<&str> = plan.bfds.iter().map(|spec| spec.name.as_str()).collect();
    assert_eq!(names, ["peer", "backup_link"]);
    assert_eq!(
        plan.bfds[0].neighbor,
        "192.0.2.2".parse::<std::net::IpAddr>().unwrap()
    );
    for warning in [
        "(VI_1) duplicate track_bfd peer - ignoring",
        "(VI_1) track bfd missing not found, ignoring...",
        "(OWNER) ignoring tracked bfd peer with weight -30 due to address_owner",
    ] {
        assert!(
            plan.warnings.iter().any(|line| line == warning),
            "{warning}: {:?}",
            plan.warnings
        );
    }
}

#[test]
fn a_sync_group_s_tracked_bfds_follow_keepalived_s_rules() {
    let text = "
bfd_instance peer {
    neighbor_ip 192.0.2.2
}
bfd_instance other {
    neighbor_ip 192.0.2.3
}
vrrp_sync_group G1 {
    group {
        VI_1
        VI_2
    }
    track_bfd {
        peer weight -40
        other weight 5 reverse
    }
}
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    priority PRIORITY
    track_bfd {
        other weight 0
        peer weight -10
    }
    virtual_ipaddress {
        192.0.2.100
    }
}
vrrp_instance VI_2 {
    interface eth0
    virtual_router_id 52
    priority PRIORITY
    virtual_ipaddress {
        192.0.2.101
    }
}
";
    let reversed = |name: &str, weight| Tracked {
        reverse: true,
        ..tracked(name, weight)
    };
    // Without sync_group_tracking_weight a member's weighted entry goes;
    // the group's entries apply to every member, its weight replacing a
    // member's weighted entry and not an unweighted one.
    let without_weights = plan(&text.replace("PRIORITY", "100"));
    assert_eq!(
        without_weights.instances[0].tracked.bfds,
        [tracked("other", 0), tracked("peer", -40)]
    );
    assert_eq!(
        without_weights.instances[1].tracked.bfds,
        [tracked("peer", -40), reversed("other", 5)]
    );
    assert!(
        without_weights.warnings.iter().any(
            |line| line == "(VI_1) ignoring tracked bfd peer with weight -10 due to SYNC group"
        )
    );
    // With it, the member's weighted entry takes the group's weight and
    // reverse.
    let with_weights = plan(&text.replace("PRIORITY", "100").replace(
        "    track_bfd {\n        peer weight -40",
        "    sync_group_tracking_weight\n    track_bfd {\n        peer weight -40",
    ));
    assert_eq!(
        with_weights.instances[0].tracked.bfds,
        [tracked("other", 0), tracked("peer", -40)]
    );
    assert!(with_weights.warnings.iter().any(|line| line
        == "(VI_1) track_bfd peer is configured on VRRP instance and sync group. Remove vrrp \
            instance config"));
    // With address owners among the members, the group's weights go.
    let owners = plan(&text.replace("PRIORITY", "255"));
    assert_eq!(
        owners.instances[1].tracked.bfds,
        [tracked("peer", 0), reversed("other", 0)]
    );
    assert!(owners.warnings.iter().any(|line| line
        == "(G1) Cannot have weighted track bfd 'peer' with member having priority 255 - \
            setting weight 0"));
}
