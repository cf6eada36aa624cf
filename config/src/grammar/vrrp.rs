//! VRRP blocks (keepalived's vrrp_parser.c): vrrp_script,
//! vrrp_track_process, track_file, vrrp_sync_group, garp_group,
//! vrrp_instance, and the address/route/rule sub-syntax (vrrp_ipaddress.c,
//! vrrp_iproute.c, vrrp_iprule.c) shared with the static_* blocks.

use std::net::IpAddr;
use std::time::Duration;

use super::common;
use super::{Context, Keyword, Node, Reference, ReferenceKind, values};
use crate::model::{
    Authentication, Config, GarpExtraInterfaces, GarpGroup, GarpSettings, Notify, ParamMatch,
    Prefix, Route, Rule, Scope, SyncGroup, TrackFile, TrackProcess, Tracked, Tracking, UnicastPeer,
    VirtualAddress, Vmac, VmacAddress, VrrpInstance, VrrpScript, VrrpState,
};
use crate::syntax::Word;

pub static SCRIPT: &[Keyword] = &[
    Keyword::leaf("script", 1, None),
    Keyword::leaf("interval", 1, Some(1)),
    Keyword::leaf("timeout", 1, Some(1)),
    Keyword::leaf("weight", 1, Some(2)),
    Keyword::leaf("rise", 1, Some(1)),
    Keyword::leaf("fall", 1, Some(1)),
    Keyword::leaf("user", 1, Some(2)),
    Keyword::leaf("init_fail", 0, Some(0)),
];

pub static TRACK_PROCESS: &[Keyword] = &[
    Keyword::leaf("process", 1, None),
    Keyword::leaf("quorum", 1, Some(1)),
    Keyword::leaf("quorum_max", 1, Some(1)),
    Keyword::leaf("weight", 1, Some(2)),
    Keyword::leaf("delay", 1, Some(1)),
    Keyword::leaf("terminate_delay", 1, Some(1)),
    Keyword::leaf("fork_delay", 1, Some(1)),
    Keyword::leaf("full_command", 0, Some(0)),
    Keyword::leaf("param_match", 0, Some(1)),
];

pub static TRACK_FILE: &[Keyword] = &[
    Keyword::leaf("file", 1, Some(1)),
    Keyword::leaf("weight", 1, Some(2)),
    Keyword::leaf("init_file", 0, Some(2)),
];

macro_rules! notify_keywords {
    ($($extra:expr),* $(,)?) => {
        &[
            Keyword::leaf("notify_master", 1, None),
            Keyword::leaf("notify_backup", 1, None),
            Keyword::leaf("notify_fault", 1, None),
            Keyword::leaf("notify_stop", 1, None),
            Keyword::leaf("notify", 1, None),
            Keyword::leaf("notify_priority_changes", 0, Some(1)),
            Keyword::leaf("smtp_alert", 0, Some(1)),
            Keyword::lines("track_interface", 0, Some(0)),
            Keyword::lines("track_script", 0, Some(0)),
            Keyword::lines("track_file", 0, Some(0)),
            Keyword::lines("track_process", 0, Some(0)),
            Keyword::lines("track_bfd", 0, Some(0)),
            $($extra,)*
        ]
    };
}

pub static SYNC_GROUP: &[Keyword] = notify_keywords!(
    Keyword::lines("group", 0, Some(0)),
    Keyword::leaf("global_tracking", 0, Some(0)),
    Keyword::leaf("sync_group_tracking_weight", 0, Some(0)),
);

/// `track_group NAME { group { INSTANCE... } }`: the instances whose
/// static addresses, routes and rules `track_group` ties together.
pub static TRACK_GROUP: &[Keyword] = &[Keyword::lines("group", 0, Some(0))];

/// Checks the top-level blocks stored as written.
pub fn check_stored(node: &Node, context: &mut Context) {
    match node.name() {
        // `IFNAME DOWN_DELAY [UP_DELAY]`, seconds to 255 with microseconds.
        "interface_up_down_delays" => {
            for line in node.children {
                if line.arguments.is_empty() || line.arguments.len() > 2 {
                    context.error(
                        line.span(),
                        "expected an interface, a down delay and optionally an up delay",
                    );
                    continue;
                }
                for word in line.arguments {
                    values::seconds(
                        context,
                        word,
                        Duration::ZERO,
                        Duration::from_secs(255),
                        "interface delay",
                    );
                }
            }
        }
        // `IFNAME [MII|ETHTOOL|POLL]`.
        "linkbeat_interfaces" => {
            for line in node.children {
                if let Some(kind) = line.argument(0) {
                    values::choice(
                        context,
                        kind,
                        &[("MII", ()), ("ETHTOOL", ()), ("POLL", ())],
                        "linkbeat type",
                    );
                }
            }
        }
        _ => {}
    }
}

pub static GARP_GROUP: &[Keyword] = &[
    Keyword::leaf("garp_interval", 1, Some(1)),
    Keyword::leaf("gna_interval", 1, Some(1)),
    Keyword::leaf("interface", 1, Some(1)),
    Keyword::lines("interfaces", 0, Some(0)),
];

pub static AUTHENTICATION: &[Keyword] = &[
    Keyword::leaf("auth_type", 1, Some(1)),
    Keyword::leaf("auth_pass", 1, None),
];

pub static INSTANCE: &[Keyword] = notify_keywords!(
    Keyword::leaf("state", 1, Some(1)),
    Keyword::leaf("interface", 1, Some(1)),
    Keyword::leaf("virtual_router_id", 1, Some(1)),
    Keyword::leaf("priority", 1, Some(1)),
    Keyword::leaf("advert_int", 1, Some(1)),
    Keyword::leaf("version", 1, Some(1)),
    Keyword::block("authentication", 0, Some(0), AUTHENTICATION),
    Keyword::lines("virtual_ipaddress", 0, Some(0)),
    Keyword::lines("virtual_ipaddress_excluded", 0, Some(0)),
    Keyword::lines("virtual_routes", 0, Some(0)),
    Keyword::lines("virtual_rules", 0, Some(0)),
    Keyword::leaf("unicast_src_ip", 1, Some(1)),
    Keyword::lines("unicast_peer", 0, Some(0)),
    Keyword::leaf("unicast_ttl", 1, Some(1)),
    Keyword::leaf("unicast_fault_no_peer", 0, Some(0)),
    Keyword::leaf("check_unicast_src", 0, Some(0)),
    Keyword::leaf("old_unicast_checksum", 0, Some(1)).not_acted_on(),
    Keyword::leaf("mcast_src_ip", 1, Some(1)),
    Keyword::leaf("mcast_dst_ip", 1, Some(1)),
    Keyword::leaf("dont_track_primary", 0, Some(0)),
    Keyword::leaf("track_src_ip", 0, Some(0)),
    Keyword::leaf("notify_deleted", 0, None),
    Keyword::leaf("notify_master_rx_lower_pri", 1, None),
    Keyword::leaf("nopreempt", 0, Some(0)),
    // "for backwards compatibility": preempting is the default.
    Keyword::leaf("preempt", 0, Some(0)),
    Keyword::leaf("preempt_delay", 1, Some(1)),
    Keyword::leaf("accept", 0, Some(0)),
    Keyword::leaf("no_accept", 0, Some(0)),
    Keyword::leaf("strict_mode", 0, Some(1)),
    Keyword::leaf("skip_check_adv_addr", 0, Some(1)),
    Keyword::leaf("use_vmac", 0, Some(2)),
    Keyword::leaf("use_vmac_addr", 0, Some(0)).not_acted_on(),
    Keyword::leaf("vmac_xmit_base", 0, Some(0)),
    Keyword::leaf("use_ipvlan", 0, Some(3)).not_acted_on(),
    Keyword::leaf("native_ipv6", 0, Some(0)),
    Keyword::leaf("promote_secondaries", 0, Some(0)),
    Keyword::leaf("garp_master_delay", 1, Some(1)),
    Keyword::leaf("garp_master_repeat", 1, Some(1)),
    Keyword::leaf("garp_lower_prio_delay", 1, Some(1)),
    Keyword::leaf("garp_lower_prio_repeat", 1, Some(1)),
    Keyword::leaf("garp_master_refresh", 1, Some(1)),
    Keyword::leaf("garp_master_refresh_repeat", 1, Some(1)),
    Keyword::leaf("garp_extra_if", 1, Some(2)),
    Keyword::leaf("vmac_garp_intvl", 1, Some(2)),
    Keyword::leaf("lower_prio_no_advert", 0, Some(1)),
    Keyword::leaf("higher_prio_send_advert", 0, Some(1)),
    Keyword::leaf("down_timer_adverts", 1, Some(1)),
    Keyword::leaf("debug", 0, Some(1)).not_acted_on(),
    Keyword::leaf("kernel_rx_buf_size", 1, Some(1)).not_acted_on(),
    Keyword::leaf("linkbeat_use_polling", 0, Some(0)).not_acted_on(),
    Keyword::leaf("vrf", 1, Some(1)).not_acted_on(),
    // Obsolete: keepalived only logs that it is ignored.
    Keyword::leaf("lvs_sync_daemon_interface", 1, Some(1)).not_acted_on(),
);

/// `vrrp_script NAME { ... }`.
pub fn read_script(node: &Node, config: &mut Config, context: &mut Context) {
    let mut vrrp_script = VrrpScript {
        name: common::first(node),
        script: None,
        interval: Duration::from_secs(1),
        timeout: None,
        weight: 0,
        weight_reverse: false,
        rise: 1,
        fall: 1,
        init_fail: false,
    };
    let mut user = None;
    for child in node.children {
        let argument = child.argument(0);
        match child.name() {
            "script" => {
                vrrp_script.script = common::command_words(child)
                    .first()
                    .map(|command| crate::model::Script::new(command, None, None).at(child.span()))
            }
            "interval" => {
                if let Some(value) = argument.and_then(|word| {
                    values::whole_seconds(context, word, 1, u32::MAX.into(), "interval")
                }) {
                    vrrp_script.interval = value;
                }
            }
            "timeout" => {
                vrrp_script.timeout = argument.and_then(|word| {
                    values::whole_seconds(context, word, 1, u32::MAX.into(), "timeout")
                })
            }
            "weight" => {
                let (weight, reverse) = common::weight_and_reverse(
                    context,
                    &child.words(),
                    -253,
                    253,
                    "vrrp_script weight",
                );
                vrrp_script.weight = weight.unwrap_or(0);
                vrrp_script.weight_reverse = reverse;
            }
            "rise" => {
                if let Some(value) = argument
                    .and_then(|word| values::integer(context, word, 1, u32::MAX.into(), "rise"))
                {
                    vrrp_script.rise = value;
                }
            }
            "fall" => {
                if let Some(value) = argument
                    .and_then(|word| values::integer(context, word, 1, u32::MAX.into(), "fall"))
                {
                    vrrp_script.fall = value;
                }
            }
            "user" => {
                user = Some((
                    common::first(child),
                    child.argument(1).map(|w| w.text.to_string()),
                ))
            }
            "init_fail" => vrrp_script.init_fail = true,
            _ => context.not_acted_on(child),
        }
    }
    if let (Some(script), Some((user, group))) = (&mut vrrp_script.script, user) {
        script.user = Some(user);
        script.group = group;
    }
    if vrrp_script.script.is_none() {
        context.warning(
            node.end_span(),
            format!(
                "vrrp_script '{}' has no 'script': keepalived ignores it",
                vrrp_script.name
            ),
        );
        return;
    }
    config.vrrp_scripts.push(vrrp_script);
}

/// `vrrp_track_process NAME { ... }`, as keepalived 2.2.7's vrrp_parser.c
/// reads it: each line in order (a `quorum` above the `quorum_max` read
/// before it is ignored, and the other way round; `delay` sets both
/// delays), and a block without `process` dropped.
pub fn read_track_process(node: &Node, config: &mut Config, context: &mut Context) {
    let mut process = TrackProcess {
        name: common::first(node),
        process: None,
        quorum: 1,
        quorum_max: None,
        weight: 0,
        weight_reverse: false,
        terminate_delay: None,
        fork_delay: None,
        full_command: false,
        param_match: None,
    };
    for child in node.children {
        let argument = child.argument(0);
        match child.name() {
            "process" => {
                if process.process.is_some() {
                    context.warning(
                        child.keyword.span,
                        format!(
                            "Process already set for track process {} - ignoring",
                            process.name
                        ),
                    );
                    continue;
                }
                let words: Vec<String> = child
                    .arguments
                    .iter()
                    .map(|word| word.text.to_string())
                    .collect();
                // Parameters are matched on the command line, exactly
                // unless param_match said otherwise.
                if words.len() > 1 {
                    process.param_match.get_or_insert(ParamMatch::Exact);
                    process.full_command = true;
                }
                process.process = Some(words);
            }
            "param_match" => {
                let matching = match argument {
                    None => Some(ParamMatch::Exact),
                    Some(word) => values::choice(
                        context,
                        word,
                        &[
                            ("initial", ParamMatch::Initial),
                            ("partial", ParamMatch::Partial),
                        ],
                        "param_match",
                    ),
                };
                if let Some(matching) = matching {
                    process.param_match = Some(matching);
                    process.full_command = true;
                }
            }
            "quorum" => {
                if let Some(value) =
                    argument.and_then(|word| values::integer(context, word, 1, 65535, "quorum"))
                {
                    if process.quorum_max.is_some_and(|maximum| value > maximum) {
                        context.warning(
                            child.keyword.span,
                            "quorum is greater than quorum_max: keepalived ignores this quorum",
                        );
                    } else {
                        process.quorum = value;
                    }
                }
            }
            "quorum_max" => {
                let Some(maximum) = argument
                    .and_then(|word| values::integer(context, word, 0, 65535, "quorum_max"))
                else {
                    continue;
                };
                // 0 (the process must not run) is allowed unless a quorum
                // above 1 was given.
                if (maximum != 0 || process.quorum > 1) && maximum < process.quorum {
                    context.warning(
                        child.keyword.span,
                        "quorum_max is less than quorum: keepalived ignores quorum_max",
                    );
                    continue;
                }
                process.quorum_max = Some(maximum);
                if maximum == 0 {
                    process.quorum = 0;
                } else if process.quorum == 0 {
                    process.quorum = 1;
                }
            }
            "weight" => {
                let (weight, reverse) =
                    common::weight_and_reverse(context, &child.words(), -254, 254, "weight");
                process.weight = weight.unwrap_or(0);
                process.weight_reverse = reverse;
            }
            "delay" => {
                if let Some(delay) = argument.and_then(|word| process_delay(context, word, "delay"))
                {
                    process.terminate_delay = Some(delay);
                    process.fork_delay = Some(delay);
                }
            }
            "terminate_delay" => {
                if let Some(delay) =
                    argument.and_then(|word| process_delay(context, word, "terminate_delay"))
                {
                    process.terminate_delay = Some(delay);
                }
            }
            "fork_delay" => {
                if let Some(delay) =
                    argument.and_then(|word| process_delay(context, word, "fork_delay"))
                {
                    process.fork_delay = Some(delay);
                }
            }
            "full_command" => process.full_command = true,
            _ => context.not_acted_on(child),
        }
    }
    if process.process.is_none() {
        context.warning(
            node.end_span(),
            format!(
                "track process '{}' process name not specified: keepalived ignores it",
                process.name
            ),
        );
        return;
    }
    config.track_processes.push(process);
}

/// A vrrp_track_process delay: 0.000001 to 3600 seconds.
fn process_delay(context: &mut Context, word: &Word, what: &str) -> Option<Duration> {
    values::seconds(
        context,
        word,
        Duration::from_micros(1),
        Duration::from_secs(3600),
        what,
    )
}

/// `track_file NAME { ... }` (also `vrrp_track_file`).
pub fn read_track_file(node: &Node, config: &mut Config, context: &mut Context) {
    let mut file = TrackFile {
        name: common::first(node),
        file: None,
        weight: 1,
        weight_reverse: false,
        init_file: None,
    };
    for child in node.children {
        match child.name() {
            "file" => file.file = Some(common::first(child)),
            "weight" => {
                let (weight, reverse) =
                    common::weight_and_reverse(context, &child.words(), -254, 254, "weight");
                file.weight = weight.unwrap_or(1);
                file.weight_reverse = reverse;
            }
            "init_file" => {
                // `init_file [VALUE] [overwrite]`.
                for (index, word) in child.arguments.iter().enumerate() {
                    if word.text == "overwrite" {
                        continue;
                    }
                    if index == 0 {
                        values::integer::<i64>(
                            context,
                            word,
                            i32::MIN.into(),
                            i32::MAX.into(),
                            "init_file value",
                        );
                    } else {
                        context.error(
                            word.span,
                            format!(
                                "unknown init_file option '{}': expected a value and 'overwrite'",
                                word.text
                            ),
                        );
                    }
                }
                file.init_file = Some(
                    child
                        .arguments
                        .iter()
                        .map(|word| word.text.to_string())
                        .collect(),
                )
            }
            _ => context.not_acted_on(child),
        }
    }
    if file.file.is_none() {
        context.warning(
            node.end_span(),
            format!(
                "track_file '{}' has no 'file': keepalived ignores it",
                file.name
            ),
        );
        return;
    }
    config.track_files.push(file);
}

/// The lines of a `track_*` block: `NAME [weight N] [reverse|noreverse]`.
fn read_tracked(
    node: &Node,
    context: &mut Context,
    limit: i128,
    kind: Option<ReferenceKind>,
) -> Vec<Tracked> {
    let mut tracked = Vec::new();
    for line in node.children {
        if let Some(kind) = kind {
            context.references.push(Reference {
                kind,
                name: line.keyword.text.to_string(),
                span: line.keyword.span,
            });
        }
        let (weight, reverse) = common::weight_and_reverse(
            context,
            &line.arguments.iter().collect::<Vec<_>>(),
            -limit,
            limit,
            &format!("{} weight", node.name()),
        );
        tracked.push(Tracked {
            name: line.keyword.text.to_string(),
            weight,
            reverse,
        });
    }
    tracked
}

/// Keywords shared by sync groups and instances; returns false for others.
fn read_notify_or_tracking(
    child: &Node,
    notify: &mut Notify,
    tracking: &mut Tracking,
    smtp_alert: &mut Option<bool>,
    context: &mut Context,
) -> bool {
    let argument = child.argument(0);
    let slot = match child.name() {
        "notify_master" => &mut notify.master,
        "notify_backup" => &mut notify.backup,
        "notify_fault" => &mut notify.fault,
        "notify_stop" => &mut notify.stop,
        "notify" => &mut notify.any,
        "notify_master_rx_lower_pri" => &mut notify.master_rx_lower_priority,
        "notify_deleted" => {
            notify.deleted = Some(common::script_checked(child, Some(context)));
            return true;
        }
        "notify_priority_changes" => {
            notify.priority_changes =
                values::optional_boolean(context, argument, "notify_priority_changes");
            return true;
        }
        "smtp_alert" => {
            *smtp_alert = values::optional_boolean(context, argument, "smtp_alert");
            return true;
        }
        "track_interface" => {
            tracking
                .interfaces
                .extend(read_tracked(child, context, 253, None));
            return true;
        }
        "track_script" => {
            tracking.scripts.extend(read_tracked(
                child,
                context,
                253,
                Some(ReferenceKind::Script),
            ));
            return true;
        }
        "track_file" => {
            tracking
                .files
                .extend(read_tracked(child, context, 254, Some(ReferenceKind::File)));
            return true;
        }
        "track_process" => {
            tracking.processes.extend(read_tracked(
                child,
                context,
                254,
                Some(ReferenceKind::Process),
            ));
            return true;
        }
        "track_bfd" => {
            tracking
                .bfds
                .extend(read_tracked(child, context, 253, Some(ReferenceKind::Bfd)));
            return true;
        }
        _ => return false,
    };
    if slot.is_some() {
        context.replaced(child);
    }
    *slot = common::script_checked(child, Some(context));
    true
}

/// `vrrp_sync_group NAME { group { ... } ... }`.
pub fn read_sync_group(node: &Node, config: &mut Config, context: &mut Context) {
    let mut group = SyncGroup {
        name: common::first(node),
        instances: Vec::new(),
        tracking: Tracking::default(),
        notify: Notify::default(),
        smtp_alert: None,
        global_tracking: false,
        sync_group_tracking_weight: false,
    };
    for child in node.children {
        if read_notify_or_tracking(
            child,
            &mut group.notify,
            &mut group.tracking,
            &mut group.smtp_alert,
            context,
        ) {
            continue;
        }
        match child.name() {
            // keepalived reads every word of every line: `group { VI_1 VI_2 }`.
            "group" => {
                for line in child.children {
                    for word in line.words() {
                        if let Some(other) = config
                            .sync_groups
                            .iter()
                            .find(|other| other.instances.iter().any(|name| *name == word.text))
                        {
                            context.warning(
                                word.span,
                                format!(
                                    "'{}' is already in sync group '{}': an instance belongs to one sync group; keepalived ignores it here",
                                    word.text, other.name
                                ),
                            );
                            continue;
                        }
                        group.instances.push(word.text.to_string());
                        context.references.push(Reference {
                            kind: ReferenceKind::Instance,
                            name: word.text.to_string(),
                            span: word.span,
                        });
                    }
                }
            }
            "global_tracking" => {
                context.warning(
                    child.keyword.span,
                    "'global_tracking' is deprecated: use track_* blocks in the sync group",
                );
                group.global_tracking = true;
            }
            "sync_group_tracking_weight" => group.sync_group_tracking_weight = true,
            _ => context.not_acted_on(child),
        }
    }
    if group.instances.is_empty() {
        context.warning(
            node.keyword.span,
            format!(
                "sync group '{}' has no 'group' of instances: keepalived ignores it",
                group.name
            ),
        );
        return;
    }
    if group.instances.len() == 1 {
        context.warning(
            node.keyword.span,
            format!(
                "sync group '{}' has only one instance: this is probably not what you want",
                group.name
            ),
        );
    }
    config.sync_groups.push(group);
}

/// `garp_group { ... }`.
pub fn read_garp_group(node: &Node, config: &mut Config, context: &mut Context) {
    let mut group = GarpGroup::default();
    for child in node.children {
        let argument = child.argument(0);
        match child.name() {
            "garp_interval" => {
                // keepalived: 0 to INT_MAX microseconds.
                group.garp_interval = argument.and_then(|word| {
                    values::seconds(
                        context,
                        word,
                        Duration::ZERO,
                        Duration::from_micros(i32::MAX as u64),
                        "garp_interval",
                    )
                })
            }
            "gna_interval" => {
                // keepalived: 0 to INT_MAX microseconds.
                group.gna_interval = argument.and_then(|word| {
                    values::seconds(
                        context,
                        word,
                        Duration::ZERO,
                        Duration::from_micros(i32::MAX as u64),
                        "gna_interval",
                    )
                })
            }
            "interface" => group.interface = Some(common::first(child)),
            "interfaces" => {
                for line in child.children {
                    for word in line.words() {
                        group.interfaces.push(word.text.to_string());
                    }
                }
            }
            _ => context.not_acted_on(child),
        }
    }
    if group.interface.is_some() && !group.interfaces.is_empty() {
        context.warning(
            node.keyword.span,
            "garp_group: use only one of 'interface' and 'interfaces'",
        );
    }
    if group.garp_interval.is_none() && group.gna_interval.is_none() {
        context.warning(
            node.end_span(),
            "garp_group sets neither garp_interval nor gna_interval: keepalived removes it",
        );
        return;
    }
    config.garp_groups.push(group);
}

/// `garp_extra_if [all] DELAY` (and the global `vrrp_garp_extra_if`), as
/// keepalived reads them: `all` anywhere, the last number the delay
/// (`minimum` to a day); `None`, with keepalived's complaint, without a
/// delay or with a wrong one.
pub fn read_garp_extra_if(
    node: &Node,
    minimum: u64,
    context: &mut Context,
) -> Option<GarpExtraInterfaces> {
    let mut all = false;
    let mut delay = None;
    for word in node.arguments {
        if word.text == "all" {
            all = true;
        } else {
            let what = format!("{} delay", node.name());
            delay = Some(values::whole_seconds(context, word, minimum, 86400, &what)?);
        }
    }
    let Some(delay) = delay else {
        context.warning(
            node.keyword.span,
            format!("{} specified without time - ignoring", node.name()),
        );
        return None;
    };
    Some(GarpExtraInterfaces { all, delay })
}

/// `vrrp_instance NAME { ... }`.
pub fn read_instance(node: &Node, config: &mut Config, context: &mut Context) {
    let mut instance = VrrpInstance {
        name: common::first(node),
        state: None,
        interface: None,
        virtual_router_id: None,
        priority: 100,
        advert_interval: Duration::from_secs(1),
        version: None,
        authentication: None,
        virtual_addresses: Vec::new(),
        excluded_addresses: Vec::new(),
        virtual_routes: Vec::new(),
        virtual_rules: Vec::new(),
        unicast_source: None,
        unicast_peers: Vec::new(),
        unicast_ttl: None,
        unicast_fault_no_peer: false,
        check_unicast_source: false,
        multicast_source: None,
        multicast_destination: None,
        tracking: Tracking::default(),
        dont_track_primary: false,
        track_source_ip: false,
        notify: Notify::default(),
        smtp_alert: None,
        nopreempt: false,
        preempt_delay: Duration::ZERO,
        accept: None,
        strict_mode: None,
        skip_check_adv_addr: None,
        use_vmac: None,
        vmac_xmit_base: false,
        use_ipvlan: None,
        native_ipv6: false,
        promote_secondaries: false,
        garp: GarpSettings::default(),
        lower_prio_no_advert: None,
        higher_prio_send_advert: None,
        down_timer_adverts: None,
        debug: None,
        other: Vec::new(),
    };
    if config
        .vrrp_instances
        .iter()
        .any(|other| other.name == instance.name)
    {
        context.error(
            node.keyword.span,
            format!("vrrp_instance '{}' is defined twice", instance.name),
        );
    }
    let mut address_nodes = Vec::new();
    for child in node.children {
        if read_notify_or_tracking(
            child,
            &mut instance.notify,
            &mut instance.tracking,
            &mut instance.smtp_alert,
            context,
        ) {
            continue;
        }
        let argument = child.argument(0);
        let garp = &mut instance.garp;
        match child.name() {
            "state" => {
                if let Some(word) = argument {
                    instance.state = values::choice(
                        context,
                        word,
                        &[("MASTER", VrrpState::Master), ("BACKUP", VrrpState::Backup)],
                        "state",
                    );
                }
            }
            "interface" => instance.interface = Some(common::first(child)),
            "virtual_router_id" => {
                instance.virtual_router_id = argument
                    .and_then(|word| values::integer(context, word, 1, 255, "virtual_router_id"))
            }
            "priority" => {
                if let Some(value) =
                    argument.and_then(|word| values::integer(context, word, 1, 255, "priority"))
                {
                    instance.priority = value;
                }
            }
            "advert_int" => {
                if let Some(value) = argument.and_then(|word| {
                    values::seconds(
                        context,
                        word,
                        Duration::from_millis(10),
                        Duration::from_secs(255),
                        "advert_int",
                    )
                }) {
                    instance.advert_interval = value;
                }
            }
            "version" => {
                instance.version =
                    argument.and_then(|word| values::integer(context, word, 2, 3, "version"))
            }
            "authentication" => read_authentication(child, &mut instance, context),
            "virtual_ipaddress" => {
                read_addresses(child, &mut instance.virtual_addresses, false, context);
                address_nodes.push(child);
            }
            "virtual_ipaddress_excluded" => {
                read_addresses(child, &mut instance.excluded_addresses, false, context)
            }
            "virtual_routes" => read_routes(child, &mut instance.virtual_routes, false, context),
            "virtual_rules" => read_rules(child, &mut instance.virtual_rules, false, context),
            // keepalived accepts (and ignores) a prefix length here.
            "unicast_src_ip" => {
                instance.unicast_source = argument
                    .and_then(|word| values::prefix(context, word, "unicast_src_ip"))
                    .map(|prefix| prefix.address)
            }
            "unicast_peer" => read_unicast_peers(child, &mut instance.unicast_peers, context),
            "unicast_ttl" => {
                instance.unicast_ttl =
                    argument.and_then(|word| values::integer(context, word, 0, 255, "unicast_ttl"))
            }
            "unicast_fault_no_peer" => instance.unicast_fault_no_peer = true,
            "check_unicast_src" => instance.check_unicast_source = true,
            "mcast_src_ip" => {
                instance.multicast_source =
                    argument.and_then(|word| values::address(context, word, "mcast_src_ip"))
            }
            "mcast_dst_ip" => {
                let Some(word) = argument else { continue };
                if let Some(address) = values::address(context, word, "mcast_dst_ip") {
                    if address.is_multicast() {
                        instance.multicast_destination = Some(address);
                    } else {
                        context.error(
                            word.span,
                            format!("mcast_dst_ip '{}' is not a multicast address", word.text),
                        );
                    }
                }
            }
            "dont_track_primary" => instance.dont_track_primary = true,
            "track_src_ip" => instance.track_source_ip = true,
            "nopreempt" => instance.nopreempt = true,
            "preempt" => instance.nopreempt = false,
            "preempt_delay" => {
                if let Some(value) = argument.and_then(|word| {
                    values::seconds(
                        context,
                        word,
                        Duration::ZERO,
                        Duration::from_secs(1000),
                        "preempt_delay",
                    )
                }) {
                    instance.preempt_delay = value;
                }
            }
            "accept" => instance.accept = Some(true),
            "no_accept" => instance.accept = Some(false),
            "strict_mode" => {
                instance.strict_mode = values::optional_boolean(context, argument, "strict_mode")
            }
            "skip_check_adv_addr" => {
                instance.skip_check_adv_addr =
                    values::optional_boolean(context, argument, "skip_check_adv_addr")
            }
            "use_vmac" => instance.use_vmac = Some(vmac(child, &config.vrrp_instances, context)),
            "vmac_xmit_base" => instance.vmac_xmit_base = true,
            "use_ipvlan" => {
                check_instance_extra(child, context);
                instance.use_ipvlan = Some(
                    child
                        .arguments
                        .iter()
                        .map(|word| word.text.to_string())
                        .collect(),
                )
            }
            "native_ipv6" => instance.native_ipv6 = true,
            "promote_secondaries" => instance.promote_secondaries = true,
            "garp_master_delay" => {
                garp.master_delay = argument.and_then(|word| {
                    values::whole_seconds(context, word, 0, u32::MAX.into(), "garp_master_delay")
                })
            }
            "garp_master_repeat" => {
                garp.master_repeat = argument.and_then(|word| {
                    values::integer(context, word, 1, u32::MAX.into(), "garp_master_repeat")
                })
            }
            "garp_lower_prio_delay" => {
                garp.lower_prio_delay = argument.and_then(|word| {
                    values::whole_seconds(
                        context,
                        word,
                        0,
                        u32::MAX.into(),
                        "garp_lower_prio_delay",
                    )
                })
            }
            "garp_lower_prio_repeat" => {
                garp.lower_prio_repeat = argument.and_then(|word| {
                    values::integer(context, word, 0, u32::MAX.into(), "garp_lower_prio_repeat")
                })
            }
            "garp_master_refresh" => {
                garp.master_refresh = argument.and_then(|word| {
                    values::whole_seconds(context, word, 0, u32::MAX.into(), "garp_master_refresh")
                })
            }
            "garp_master_refresh_repeat" => {
                garp.master_refresh_repeat = argument.and_then(|word| {
                    values::integer(
                        context,
                        word,
                        1,
                        u32::MAX.into(),
                        "garp_master_refresh_repeat",
                    )
                })
            }
            "garp_extra_if" | "vmac_garp_intvl" => {
                if child.name() == "vmac_garp_intvl" {
                    check_instance_extra(child, context);
                }
                // keepalived's vrrp_garp_extra_if_handler: 0 turns it off.
                if let Some(extra) = read_garp_extra_if(child, 0, context) {
                    garp.extra_if = Some(extra);
                }
            }
            "lower_prio_no_advert" => {
                instance.lower_prio_no_advert =
                    values::optional_boolean(context, argument, "lower_prio_no_advert")
            }
            "higher_prio_send_advert" => {
                instance.higher_prio_send_advert =
                    values::optional_boolean(context, argument, "higher_prio_send_advert")
            }
            "down_timer_adverts" => {
                instance.down_timer_adverts = argument
                    .and_then(|word| values::integer(context, word, 1, 100, "down_timer_adverts"))
            }
            "debug" => {
                instance.debug = match argument {
                    None => Some(0),
                    Some(word) => values::integer(context, word, 0, 4, "debug"),
                }
            }
            "old_unicast_checksum"
            | "vrf"
            | "linkbeat_use_polling"
            | "lvs_sync_daemon_interface"
            | "kernel_rx_buf_size" => {
                check_instance_extra(child, context);
                instance.other.push(common::raw(child));
            }
            _ => instance.other.push(common::raw(child)),
        }
    }
    // All virtual addresses share the instance's family (that of the first,
    // or IPv6 with native_ipv6): keepalived ignores the others.
    let mut family = instance.native_ipv6.then_some(false).or_else(|| {
        instance
            .virtual_addresses
            .first()
            .map(|address| address.address.address.is_ipv4())
    });
    for node in address_nodes {
        for line in node.children {
            let Ok(prefix) = values::parse_prefix(&line.keyword.text) else {
                continue;
            };
            match family {
                None => family = Some(prefix.address.is_ipv4()),
                Some(is_ipv4) if is_ipv4 != prefix.address.is_ipv4() => {
                    context.warning(
                        line.keyword.span,
                        "this address's family differs from the instance's: keepalived ignores it (use virtual_ipaddress_excluded to mix families)",
                    );
                    instance
                        .virtual_addresses
                        .retain(|address| address.address != prefix);
                }
                Some(_) => {}
            }
        }
    }
    if instance.nopreempt && instance.preempt_delay > Duration::ZERO {
        context.warning(
            node.keyword.span,
            "preempt_delay is incompatible with nopreempt: keepalived resets it",
        );
        instance.preempt_delay = Duration::ZERO;
    }
    if instance.unicast_peers.is_empty()
        && (instance.unicast_source.is_some() || instance.unicast_ttl.is_some())
    {
        context.warning(
            node.keyword.span,
            "a unicast keyword without unicast peers: keepalived falls back to multicast (deprecated)",
        );
    }
    if instance.interface.is_some() && node.children.iter().any(|child| child.name() == "vrf") {
        context.warning(
            node.keyword.span,
            "vrf cannot be given with interface: keepalived ignores the vrf",
        );
    }
    if instance.virtual_router_id.is_none() {
        context.error(
            node.keyword.span,
            format!(
                "vrrp_instance '{}' has no virtual_router_id (1 to 255): keepalived ignores the instance",
                instance.name
            ),
        );
    }
    let version = instance.version.or(config.global.vrrp.version).unwrap_or(2);
    let advert_micros = instance.advert_interval.as_micros();
    if version == 2 && advert_micros % 1_000_000 != 0 {
        context.warning(
            node.keyword.span,
            "VRRPv2 advertisement intervals are whole seconds: keepalived rounds advert_int",
        );
    } else if version == 3 && advert_micros % 10_000 != 0 {
        context.warning(
            node.keyword.span,
            "VRRPv3 advertisement intervals are in units of 10 ms: keepalived rounds advert_int",
        );
    }
    // Strict mode (global vrrp_strict, unless the instance says otherwise;
    // global_defs normally comes first, as keepalived's own checks assume).
    // keepalived 2.2.7's vrrp_complete_instance, in its order and words.
    let strict = instance.strict_mode.unwrap_or(config.global.vrrp.strict);
    if strict {
        strict_mode(context, node, &mut instance, version);
    }
    if let (Some(router_id), Some(interface)) = (instance.virtual_router_id, &instance.interface) {
        let is_ipv6 = instance
            .virtual_addresses
            .first()
            .is_some_and(|address| address.address.address.is_ipv6());
        let clash = config.vrrp_instances.iter().find(|other| {
            other.virtual_router_id == Some(router_id)
                && other.interface.as_ref() == Some(interface)
                && other.unicast_peers.is_empty()
                && instance.unicast_peers.is_empty()
                && other
                    .virtual_addresses
                    .first()
                    .is_some_and(|address| address.address.address.is_ipv6())
                    == is_ipv6
        });
        if let Some(other) = clash {
            context.warning(
                node.keyword.span,
                format!(
                    "'{}' and '{}' both use virtual_router_id {router_id} with {} on {interface}",
                    other.name,
                    instance.name,
                    if is_ipv6 { "IPv6" } else { "IPv4" }
                ),
            );
        }
    }
    if instance.virtual_addresses.is_empty() && instance.excluded_addresses.is_empty() {
        context.warning(
            node.keyword.span,
            format!(
                "vrrp_instance '{}' has no virtual_ipaddress; at least one is sensible",
                instance.name
            ),
        );
    }
    if instance.unicast_ttl.is_some() && instance.unicast_peers.is_empty() {
        context.warning(
            node.end_span(),
            "unicast_ttl without unicast peers: keepalived resets it",
        );
        instance.unicast_ttl = None;
    }
    if instance.use_vmac.is_some() && !instance.unicast_peers.is_empty() && !instance.vmac_xmit_base
    {
        context.warning(
            node.end_span(),
            "unicast with use_vmac requires vmac_xmit_base: keepalived sets it",
        );
        instance.vmac_xmit_base = true;
    }
    if instance.nopreempt && instance.state == Some(VrrpState::Master) {
        context.warning(
            node.keyword.span,
            "nopreempt does not work with the initial state MASTER: keepalived clears it",
        );
        instance.nopreempt = false;
    }
    config.vrrp_instances.push(instance);
}

/// Argument checks for the instance keywords stored as written.
/// `use_vmac [NAME] [MAC]` as keepalived 2.2.7's `vrrp_vmac_handler` reads
/// it: a word with a colon is the MAC address (interface names cannot
/// hold one), another the name; one it refuses is ignored, with its
/// words, and the keyword still applies.
fn vmac(node: &Node, instances: &[VrrpInstance], context: &mut Context) -> Vmac {
    let mut vmac = Vmac::default();
    for word in node.arguments.iter().take(2) {
        let text: &str = &word.text;
        if text.contains(':') {
            if vmac.address.is_some() {
                context.warning(word.span, "VMAC interface address already specified");
                continue;
            }
            let Some(address) = vmac_address(text) else {
                context.error(
                    word.span,
                    format!(
                        "invalid VMAC MAC address '{text}': expected 5 or 6 hexadecimal octets"
                    ),
                );
                continue;
            };
            let octets = address.with_vrid(0);
            if octets[0] & 0x01 != 0 {
                context.warning(
                    word.span,
                    format!("VMAC MAC address is multicast {text} - ignoring"),
                );
            } else if octets[..4] == [0x00, 0x00, 0x5e, 0x00] && matches!(octets[4], 0x01 | 0x02) {
                context.warning(
                    word.span,
                    format!(
                        "VMAC MAC address not allowed to be RFC5798 address ({text}) - ignoring"
                    ),
                );
            } else {
                vmac.address = Some(address);
            }
        } else if vmac.name.is_some() {
            context.warning(word.span, "VMAC interface name already specified");
        } else if !interface_name_valid(text) {
            context.warning(
                word.span,
                format!("VMAC interface name '{text}' too long or invalid characters - ignoring"),
            );
        } else if let Some(other) = instances.iter().find(|other| {
            other
                .use_vmac
                .as_ref()
                .and_then(|other| other.name.as_deref())
                == Some(text)
        }) {
            context.warning(
                word.span,
                format!(
                    "vrrp_instance '{}' already uses the VMAC name '{text}': keepalived ignores the name here",
                    other.name
                ),
            );
        } else {
            vmac.name = Some(text.to_string());
        }
    }
    vmac
}

/// A MAC address as keepalived reads `use_vmac`'s: octets of one or two
/// hexadecimal digits separated by colons, six of them, or five (with or
/// without a last colon) for the VRID to be the sixth.
fn vmac_address(text: &str) -> Option<VmacAddress> {
    let text = text
        .strip_suffix(':')
        .filter(|_| text.matches(':').count() == 5)
        .unwrap_or(text);
    let octets: Vec<u8> = text
        .split(':')
        .map(|octet| {
            if (1..=2).contains(&octet.len()) {
                u8::from_str_radix(octet, 16).ok()
            } else {
                None
            }
        })
        .collect::<Option<_>>()?;
    match octets[..] {
        [a, b, c, d, e] => Some(VmacAddress::WithVrid([a, b, c, d, e])),
        [a, b, c, d, e, f] => Some(VmacAddress::Whole([a, b, c, d, e, f])),
        _ => None,
    }
}

/// The kernel's `dev_valid_name` (net/core/dev.c), which keepalived copies:
/// not empty, shorter than IFNAMSIZ, not `.` nor `..`, no `/`, `:` or
/// white space.
pub(crate) fn interface_name_valid(name: &str) -> bool {
    !name.is_empty()
        && name.len() < 16
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|character| character == '/' || character == ':' || character.is_whitespace())
}

fn check_instance_extra(node: &Node, context: &mut Context) {
    match node.name() {
        "use_ipvlan" => {
            // [NAME] [ADDRESS[/LEN]] [bridge|private|vepa]
            if let Some(mode) = node.argument(2) {
                values::choice(
                    context,
                    mode,
                    &[("bridge", ()), ("private", ()), ("vepa", ())],
                    "ipvlan mode",
                );
            }
        }
        "old_unicast_checksum" => {
            if let Some(word) = node.argument(0) {
                values::choice(context, word, &[("never", ())], "old_unicast_checksum mode");
            }
        }
        "kernel_rx_buf_size" => {
            if let Some(word) = node.argument(0) {
                values::integer::<u64>(context, word, 1, u32::MAX.into(), "kernel_rx_buf_size");
            }
        }
        "linkbeat_use_polling" => context.warning(
            node.keyword.span,
            "'linkbeat_use_polling' in a vrrp_instance is deprecated: use a linkbeat_interfaces block",
        ),
        "lvs_sync_daemon_interface" => context.warning(
            node.keyword.span,
            "'lvs_sync_daemon_interface' in a vrrp_instance is deprecated: use the global lvs_sync_daemon",
        ),
        "vmac_garp_intvl" => context.warning(
            node.keyword.span,
            "'vmac_garp_intvl' is deprecated: use 'garp_extra_if'",
        ),
        _ => {}
    }
}

fn read_authentication(node: &Node, instance: &mut VrrpInstance, context: &mut Context) {
    let mut kind: Option<&str> = None;
    let mut password: Option<&Word> = None;
    for child in node.children {
        match child.name() {
            "auth_type" => {
                if let Some(word) = child.argument(0) {
                    kind = values::choice(
                        context,
                        word,
                        &[("PASS", "PASS"), ("AH", "AH")],
                        "auth_type",
                    );
                }
            }
            "auth_pass" => password = child.argument(0),
            _ => context.not_acted_on(child),
        }
    }
    let Some(password) = password else {
        context.warning(
            node.keyword.span,
            "authentication without 'auth_pass' is ignored",
        );
        return;
    };
    if password.text.len() > 8 {
        // keepalived truncates silently; say so.
        context.warning(
            password.span,
            "only the first 8 characters of auth_pass are used",
        );
    }
    let text: String = password.text.chars().take(8).collect();
    instance.authentication = Some(match kind {
        Some("AH") => Authentication::Ah(text),
        _ => Authentication::Password(text),
    });
}

fn read_unicast_peers(node: &Node, peers: &mut Vec<UnicastPeer>, context: &mut Context) {
    for line in node.children {
        let Some(address) = values::address(context, line.keyword, "unicast peer address") else {
            continue;
        };
        let mut peer = UnicastPeer {
            address,
            min_ttl: None,
            max_ttl: None,
        };
        let mut words = line.arguments.iter();
        while let Some(word) = words.next() {
            let slot = match word.text.as_str() {
                "min_ttl" => &mut peer.min_ttl,
                "max_ttl" => &mut peer.max_ttl,
                other => {
                    context.error(
                        word.span,
                        format!(
                            "unexpected '{other}' after a unicast peer: expected min_ttl or max_ttl"
                        ),
                    );
                    break;
                }
            };
            match words.next() {
                Some(value) => *slot = values::integer(context, value, 0, 255, &word.text),
                None => context.error(word.span, format!("'{}' needs a value", word.text)),
            }
        }
        peers.push(peer);
    }
}

fn scope(context: &mut Context, word: &Word) -> Option<Scope> {
    match word.text.as_str() {
        "global" | "universe" => Some(Scope::Global),
        "site" => Some(Scope::Site),
        "link" => Some(Scope::Link),
        "host" => Some(Scope::Host),
        "nowhere" => Some(Scope::Nowhere),
        other => match other.parse::<u8>() {
            Ok(number) => Some(Scope::Number(number)),
            Err(_) => {
                context.error(
                    word.span,
                    format!("invalid scope '{other}': expected global, site, link, host, nowhere or a number"),
                );
                None
            }
        },
    }
}

/// The lines of `virtual_ipaddress`, `virtual_ipaddress_excluded` and
/// `static_ipaddress`.
pub fn read_addresses(
    node: &Node,
    addresses: &mut Vec<VirtualAddress>,
    is_static: bool,
    context: &mut Context,
) {
    for line in node.children {
        if let Some(address) = read_address(line, is_static, context) {
            addresses.push(address);
        }
    }
}

fn read_address(line: &Node, is_static: bool, context: &mut Context) -> Option<VirtualAddress> {
    let prefix = values::prefix(context, line.keyword, "address")?;
    let mut address = VirtualAddress {
        address: prefix,
        broadcast: None,
        device: None,
        scope: Scope::Global,
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
    };
    let words: Vec<&Word> = line.arguments.iter().collect();
    let mut index = 0;
    while index < words.len() {
        let word = words[index];
        let value = words.get(index + 1).copied();
        let takes_value = matches!(
            word.text.as_str(),
            "brd"
                | "broadcast"
                | "dev"
                | "scope"
                | "label"
                | "peer"
                | "preferred_lft"
                | "track_group"
        );
        if takes_value && value.is_none() {
            context.error(word.span, format!("'{}' needs a value", word.text));
            return None;
        }
        match (word.text.as_str(), value) {
            ("brd" | "broadcast", Some(value)) => {
                address.broadcast = match value.text.as_str() {
                    // `ip`'s "+": the address with all host bits set.
                    "+" => Some(broadcast_of(prefix)),
                    "-" => None,
                    _ => Some(values::address(context, value, "broadcast address")?),
                }
            }
            ("dev", Some(value)) => address.device = Some(value.text.to_string()),
            ("scope", Some(value)) => address.scope = scope(context, value)?,
            ("label", Some(value)) if prefix.address.is_ipv6() => {
                context.warning(
                    value.span,
                    "IPv6 addresses take no label: keepalived ignores it",
                );
            }
            ("label", Some(value)) => address.label = Some(value.text.to_string()),
            ("peer", Some(value)) => {
                // keepalived reads the peer as a plain address ("Invalid
                // peer address" for 10.0.0.20/24).
                if line.keyword.text.contains('/') {
                    context.error(
                        line.keyword.span,
                        "an address with a peer takes no prefix length (give the peer's instead)",
                    );
                    return None;
                }
                let peer = values::address(context, value, "peer address")?;
                address.peer = Some(Prefix {
                    address: peer,
                    length: if peer.is_ipv4() { 32 } else { 128 },
                });
            }
            ("preferred_lft", Some(value)) => {
                if address.address.address.is_ipv4() {
                    context.warning(
                        word.span,
                        "keepalived 2.2.7 applies 'preferred_lft' to IPv6 addresses only: this IPv4 address stays preferred",
                    );
                }
                address.preferred_lifetime = Some(if value.text == "forever" {
                    None
                } else {
                    Some(values::integer(
                        context,
                        value,
                        0,
                        u32::MAX.into(),
                        "preferred_lft",
                    )?)
                })
            }
            ("track_group", Some(_)) if !is_static => {
                context.error(word.span, "'track_group' only applies to static_ipaddress");
                return None;
            }
            // keepalived's static track groups are not followed yet.
            ("track_group", Some(value)) => {
                address.track_group = Some(value.text.to_string());
                context.option_not_acted_on(word);
            }
            ("home", _) => address.home = true,
            ("-nodad", _) => address.no_dad = true,
            ("mngtmpaddr", _) => address.manage_temporary_address = true,
            ("noprefixroute", _) => address.no_prefix_route = true,
            ("autojoin", _) => address.autojoin = true,
            // A virtual address's `no_track`: its deletion does not make a
            // master step down; a static address's: it is not added back
            // when deleted.
            ("no_track", _) => address.no_track = true,
            // keepalived 2.2.7 reads `use_vmac` on virtual addresses only
            // ("Unknown configuration entry ... - ignoring" on a static one).
            ("use_vmac", _) if is_static => {
                context.warning(
                    word.span,
                    "'use_vmac' does not apply to static_ipaddress: keepalived ignores it",
                );
            }
            // Kept in the model, not applied yet: pulse makes no VMAC
            // interfaces for single addresses.
            ("use_vmac", _) => {
                address.use_vmac = true;
                context.option_not_acted_on(word);
            }
            (other, _) => {
                let options = [
                    "brd",
                    "dev",
                    "scope",
                    "label",
                    "peer",
                    "home",
                    "-nodad",
                    "mngtmpaddr",
                    "noprefixroute",
                    "autojoin",
                    "no_track",
                    "preferred_lft",
                    "use_vmac",
                    "track_group",
                ];
                let mut message = format!("unknown address option '{other}'");
                if let Some(best) = super::suggestion(other, options.into_iter()) {
                    message.push_str(&format!(" (did you mean '{best}'?)"));
                }
                context.error(word.span, message);
                return None;
            }
        }
        index += if takes_value { 2 } else { 1 };
    }
    Some(address)
}

fn broadcast_of(prefix: Prefix) -> IpAddr {
    match prefix.address {
        IpAddr::V4(address) => {
            let host_bits = if prefix.length >= 32 {
                0
            } else {
                u32::MAX >> prefix.length
            };
            IpAddr::from((u32::from(address) | host_bits).to_be_bytes())
        }
        other => other,
    }
}

/// `ip route` options that take a value (kept in `options`). Deliberately
/// without `proto`, `pervasive`, a bare `lock` and `weight` outside
/// `nexthop`: keepalived 2.2.7 refuses them ("unknown route keyword").
const ROUTE_VALUE_OPTIONS: &[&str] = &[
    "src",
    "via",
    "gw",
    "or",
    "dev",
    "oif",
    "table",
    "metric",
    "preference",
    "priority",
    "scope",
    "protocol",
    "realms",
    "mtu",
    "advmss",
    "rtt",
    "rttvar",
    "reordering",
    "window",
    "cwnd",
    "initcwnd",
    "initrwnd",
    "ssthresh",
    "features",
    "quickack",
    "congctl",
    "rto_min",
    "hoplimit",
    "pref",
    "tos",
    "dsfield",
    "fastopen_no_cookie",
    "ttl-propagate",
    "expires",
    "encap",
    "as",
    "from",
    "track_group",
];

/// Options whose value may be preceded by `lock` (`mtu lock 1400`).
const ROUTE_LOCKABLE: &[&str] = &[
    "mtu",
    "advmss",
    "rtt",
    "rttvar",
    "reordering",
    "window",
    "cwnd",
    "initcwnd",
    "initrwnd",
    "ssthresh",
    "rto_min",
    "hoplimit",
];

const ROUTE_FLAGS: &[&str] = &["onlink", "no_track", "nexthop"];

const ROUTE_TYPES: &[&str] = &[
    "unicast",
    "local",
    "broadcast",
    "multicast",
    "throw",
    "unreachable",
    "prohibit",
    "blackhole",
    "nat",
];

/// The routing tables every system has by name; other names come from
/// /etc/iproute2/rt_tables on the machine keepalived runs on.
const TABLE_NAMES: &[&str] = &["main", "local", "default", "unspec"];

/// keepalived's `RTPROT_KEEPALIVED`: the only protocol of a tracked route.
const PROTOCOL_KEEPALIVED: &str = "18";

fn check_table(context: &mut Context, value: &Word) {
    if value.text.parse::<u32>().is_err() && !TABLE_NAMES.contains(&value.text.as_str()) {
        context.warning(
            value.span,
            format!(
                "routing table '{}' is neither a number nor main/local/default: keepalived looks it up in /etc/iproute2/rt_tables, where it must exist",
                value.text
            ),
        );
    }
}

/// The lines of `virtual_routes` and `static_routes` (keepalived's
/// vrrp_iproute.c): `[TYPE] [src ADDR] [to] PREFIX|default|default6
/// [via ADDR] [dev IF] [table T] [metric N] ... [nexthop ...]`.
pub fn read_routes(node: &Node, routes: &mut Vec<Route>, is_static: bool, context: &mut Context) {
    'lines: for line in node.children {
        let words = line.words();
        let mut route = Route {
            kind: None,
            destination: Prefix {
                address: IpAddr::from([0, 0, 0, 0]),
                length: 0,
            },
            source: None,
            gateways: Vec::new(),
            device: None,
            table: None,
            metric: None,
            scope: None,
            no_track: false,
            options: Vec::new(),
            not_applied: Vec::new(),
            tuning_not_applied: Vec::new(),
        };
        let mut destination_seen = false;
        let mut in_nexthop = false;
        let mut protocol: Option<&Word> = None;
        let mut index = 0;
        while index < words.len() {
            let word = words[index];
            let text = word.text.as_str();
            if ROUTE_TYPES.contains(&text) && !destination_seen {
                if matches!(text, "local" | "broadcast" | "multicast" | "nat") {
                    not_applied(&mut route.not_applied, word, context);
                }
                route.kind = Some(text.to_string());
                index += 1;
                continue;
            }
            if ROUTE_FLAGS.contains(&text) {
                match text {
                    "no_track" => route.no_track = true,
                    "nexthop" => {
                        in_nexthop = true;
                        route.options.push(text.to_string());
                    }
                    // `onlink`: the kernel then takes the gateway as
                    // on the link without checking it.
                    _ => {
                        not_applied(&mut route.tuning_not_applied, word, context);
                        route.options.push(text.to_string());
                    }
                }
                index += 1;
                continue;
            }
            if text == "to" && !destination_seen {
                index += 1;
                continue;
            }
            let value_option =
                ROUTE_VALUE_OPTIONS.contains(&text) || (in_nexthop && text == "weight");
            if value_option {
                if text == "track_group" && !is_static {
                    context.error(word.span, "'track_group' only applies to static_routes");
                    continue 'lines;
                }
                let mut value_index = index + 1;
                if ROUTE_LOCKABLE.contains(&text)
                    && words
                        .get(value_index)
                        .is_some_and(|next| next.text == "lock")
                {
                    route.options.push(text.to_string());
                    route.options.push("lock".to_string());
                    value_index += 1;
                }
                let Some(value) = words.get(value_index).copied() else {
                    context.error(word.span, format!("'{text}' needs a value"));
                    continue 'lines;
                };
                match text {
                    "src" => {
                        route.source = values::address(context, value, "route source");
                        if route.source.is_none() {
                            continue 'lines;
                        }
                    }
                    "from" => match values::prefix(context, value, "route 'from' source") {
                        Some(prefix) if prefix.address.is_ipv4() => {
                            context.error(
                                word.span,
                                "'from' on a route is only supported for IPv6; use 'src' for IPv4",
                            );
                            continue 'lines;
                        }
                        Some(_) => {}
                        None => continue 'lines,
                    },
                    "via" | "gw" | "or" => {
                        // `via [inet|inet6] ADDR`, as `ip route` takes it.
                        let mut value = value;
                        if matches!(value.text.as_str(), "inet" | "inet6") {
                            let Some(address) = words.get(value_index + 1).copied() else {
                                context
                                    .error(value.span, "a gateway address must follow the family");
                                continue 'lines;
                            };
                            value_index += 1;
                            value = address;
                        }
                        if text != "via" {
                            context.warning(
                                word.span,
                                format!("'{text}' for routes is deprecated: use 'via' (and 'nexthop' for several gateways)"),
                            );
                        }
                        match values::address(context, value, "gateway") {
                            Some(address)
                                if destination_seen
                                    && address.is_ipv4() != route.destination.address.is_ipv4() =>
                            {
                                context.error(
                                    value.span,
                                    "a route cannot mix IPv4 and IPv6 addresses",
                                );
                                continue 'lines;
                            }
                            Some(address) => route.gateways.push(address),
                            None => continue 'lines,
                        }
                    }
                    // keepalived tracks a route by its own `dev`, not its
                    // nexthops'.
                    "dev" | "oif" if !in_nexthop => route.device = Some(value.text.to_string()),
                    "encap" => {
                        let Some(consumed) = encapsulation(context, &words[value_index..]) else {
                            continue 'lines;
                        };
                        not_applied(&mut route.not_applied, word, context);
                        route.options.push(text.to_string());
                        for word in &words[value_index..value_index + consumed] {
                            route.options.push(word.text.to_string());
                        }
                        index = value_index + consumed;
                        continue;
                    }
                    "table" => {
                        check_table(context, value);
                        route.table = Some(value.text.to_string());
                    }
                    "metric" | "preference" | "priority" => {
                        route.metric =
                            values::integer(context, value, 0, u32::MAX.into(), "metric");
                        if route.metric.is_none() {
                            continue 'lines;
                        }
                    }
                    "scope" => {
                        route.scope = scope(context, value);
                        if route.scope.is_none() {
                            continue 'lines;
                        }
                    }
                    "protocol" => protocol = Some(value),
                    "as" => context.warning(
                        word.span,
                        "'as to' is for MPLS routes only: keepalived ignores it",
                    ),
                    "rtt" | "rttvar" | "rto_min" if !route_time(value) => {
                        context.error(
                            value.span,
                            format!(
                                "invalid {text} '{}': expected a time such as 300ms or 0.3s (millisecond resolution)",
                                value.text
                            ),
                        );
                        continue 'lines;
                    }
                    _ => {}
                }
                match text {
                    // Typed above, or ignored by keepalived too (`as`).
                    "src" | "via" | "gw" | "or" | "table" | "metric" | "preference"
                    | "priority" | "scope" | "as" => {}
                    "dev" | "oif" if !in_nexthop => {}
                    // Which traffic the route takes, and where it goes.
                    "from" | "tos" | "dsfield" | "dev" | "oif" => {
                        not_applied(&mut route.not_applied, word, context)
                    }
                    // The route's metrics and labels.
                    _ => not_applied(&mut route.tuning_not_applied, word, context),
                }
                route.options.push(text.to_string());
                route.options.push(value.text.to_string());
                index = value_index + 1;
                continue;
            }
            if !destination_seen {
                destination_seen = true;
                // keepalived 2.2.7 knows `default` and `default6` (not
                // `default4`).
                if text == "default6" {
                    route.destination = Prefix {
                        address: IpAddr::from([0u16; 8]),
                        length: 0,
                    };
                    index += 1;
                    continue;
                }
                if text == "default" {
                    index += 1;
                    continue;
                }
                match values::prefix(context, word, "route destination") {
                    Some(prefix) => route.destination = prefix,
                    None => continue 'lines,
                }
                index += 1;
                continue;
            }
            let mut message = format!("unknown route option '{text}'");
            if let Some(best) =
                super::suggestion(text, ROUTE_VALUE_OPTIONS.iter().chain(ROUTE_FLAGS).copied())
            {
                message.push_str(&format!(" (did you mean '{best}'?)"));
            }
            context.error(word.span, message);
            continue 'lines;
        }
        if !destination_seen {
            context.error(line.span(), "route without a destination");
            continue;
        }
        if !route.no_track {
            if route.device.is_none() {
                context.warning(
                    line.span(),
                    "a route without 'dev' cannot be tracked: keepalived does not track it (add 'dev' or 'no_track')",
                );
            } else if let Some(protocol) = protocol.filter(|word| word.text != PROTOCOL_KEEPALIVED)
            {
                context.warning(
                    protocol.span,
                    "a tracked route's protocol must be keepalived's (18): keepalived resets it",
                );
            }
        }
        routes.push(route);
    }
}

/// `encap TYPE ARGS...`: returns how many words (the type included) it
/// takes.
fn encapsulation(context: &mut Context, words: &[&Word]) -> Option<usize> {
    let kind = words.first()?;
    let keys: &[&str] = match kind.text.as_str() {
        "mpls" => {
            if words.len() < 2 {
                context.error(kind.span, "'encap mpls' needs a label");
                return None;
            }
            return Some(2);
        }
        "ip" | "ip6" => &[
            "id", "dst", "src", "tos", "tc", "ttl", "hoplimit", "key", "csum", "seq",
        ],
        "seg6" => &["mode", "segs", "hmac"],
        "bpf" => &["in", "out", "xmit", "headroom"],
        other => {
            context.error(
                kind.span,
                format!("unknown encapsulation '{other}': expected mpls, ip, ip6, seg6 or bpf"),
            );
            return None;
        }
    };
    let mut consumed = 1;
    while let Some(key) = words.get(consumed) {
        if !keys.contains(&key.text.as_str()) {
            break;
        }
        if words.get(consumed + 1).is_none() {
            context.error(key.span, format!("'{}' needs a value", key.text));
            return None;
        }
        consumed += 2;
    }
    Some(consumed)
}

/// `ip route`'s times: a number with an optional unit (`s`, `sec`, `secs`,
/// `ms`, `msec`, `msecs`); keepalived keeps milliseconds, so seconds may
/// have at most 3 decimal places and milliseconds none.
fn route_time(value: &Word) -> bool {
    let text = value.text.as_str();
    let split = text
        .find(|character: char| !(character.is_ascii_digit() || character == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let decimals = number
        .split_once('.')
        .map_or(0, |(_, fraction)| fraction.len());
    let valid_number = !number.is_empty() && number.matches('.').count() <= 1 && number != ".";
    valid_number
        && match unit {
            "" | "ms" | "msec" | "msecs" => decimals == 0,
            "s" | "sec" | "secs" => decimals <= 3,
            _ => false,
        }
}

/// `ip rule` options that take a value. No `pref` (keepalived 2.2.7:
/// "Unknown rule option pref") and no `tun_id`.
const RULE_VALUE_OPTIONS: &[&str] = &[
    "from",
    "to",
    "table",
    "lookup",
    "priority",
    "preference",
    "fwmark",
    "iif",
    "oif",
    "tos",
    "dsfield",
    "realms",
    "goto",
    "uidrange",
    "ipproto",
    "sport",
    "dport",
    "suppress_prefixlength",
    "suppress_ifgroup",
    "protocol",
    "track_group",
];

const RULE_FLAGS: &[&str] = &[
    "no_track",
    "not",
    "blackhole",
    "prohibit",
    "unreachable",
    "nop",
    "l3mdev",
];

/// Records an option of a route or rule line that Fulcrum keeps as
/// written but does not apply, with its note.
fn not_applied(names: &mut Vec<String>, word: &Word, context: &mut Context) {
    names.push(word.text.to_string());
    context.option_not_acted_on(word);
}

/// The lines of `virtual_rules` and `static_rules` (keepalived's
/// vrrp_iprule.c, `ip rule` syntax).
pub fn read_rules(node: &Node, rules: &mut Vec<Rule>, is_static: bool, context: &mut Context) {
    'lines: for line in node.children {
        let words = line.words();
        let mut rule = Rule {
            from: None,
            to: None,
            table: None,
            priority: None,
            fwmark: None,
            no_track: false,
            options: Vec::new(),
            not_applied: Vec::new(),
            tuning_not_applied: Vec::new(),
        };
        let mut protocol: Option<&Word> = None;
        let mut index = 0;
        while index < words.len() {
            let word = words[index];
            let text = word.text.as_str();
            if RULE_FLAGS.contains(&text) {
                if text == "no_track" {
                    rule.no_track = true;
                } else {
                    not_applied(&mut rule.not_applied, word, context);
                    rule.options.push(text.to_string());
                }
                index += 1;
                continue;
            }
            if RULE_VALUE_OPTIONS.contains(&text) {
                if text == "track_group" && !is_static {
                    context.error(word.span, "'track_group' only applies to static_rules");
                    continue 'lines;
                }
                let Some(value) = words.get(index + 1).copied() else {
                    context.error(word.span, format!("'{text}' needs a value"));
                    continue 'lines;
                };
                match text {
                    "from" | "to" if value.text != "all" => {
                        let Some(prefix) =
                            values::prefix(context, value, &format!("rule '{text}' address"))
                        else {
                            continue 'lines;
                        };
                        if text == "from" {
                            rule.from = Some(prefix);
                        } else {
                            rule.to = Some(prefix);
                        }
                    }
                    "table" | "lookup" => {
                        check_table(context, value);
                        rule.table = Some(value.text.to_string());
                    }
                    "priority" | "preference" => {
                        rule.priority =
                            values::integer(context, value, 0, u32::MAX.into(), "priority");
                        if rule.priority.is_none() {
                            continue 'lines;
                        }
                    }
                    "fwmark" => rule.fwmark = Some(value.text.to_string()),
                    "protocol" => {
                        if values::integer::<u8>(context, value, 0, 255, "rule protocol").is_none()
                        {
                            continue 'lines;
                        }
                        protocol = Some(value);
                    }
                    // keepalived 2.2.7 reads these as ranges only.
                    "sport" | "dport" if !value.text.contains('-') => {
                        context.error(
                            value.span,
                            format!("invalid {text} range '{}': keepalived 2.2.7 needs a range, e.g. {0}-{0}", value.text),
                        );
                        continue 'lines;
                    }
                    _ => {}
                }
                match text {
                    "from" | "to" | "table" | "lookup" | "priority" | "preference" | "fwmark" => {}
                    // A label, and a static rule's track group (which
                    // only says what deletes the rule with an interface):
                    // which traffic the rule takes does not change.
                    "protocol" | "track_group" => {
                        not_applied(&mut rule.tuning_not_applied, word, context)
                    }
                    _ => not_applied(&mut rule.not_applied, word, context),
                }
                rule.options.push(text.to_string());
                rule.options.push(value.text.to_string());
                index += 2;
                continue;
            }
            let mut message = format!("unknown rule option '{text}'");
            if let Some(best) =
                super::suggestion(text, RULE_VALUE_OPTIONS.iter().chain(RULE_FLAGS).copied())
            {
                message.push_str(&format!(" (did you mean '{best}'?)"));
            }
            context.error(word.span, message);
            continue 'lines;
        }
        if rule.priority.is_none() {
            context.warning(
                line.span(),
                "rule without a priority: keepalived sets 16384, which is probably not what you want",
            );
        }
        if let Some(protocol) = protocol.filter(|word| word.text != PROTOCOL_KEEPALIVED) {
            if !rule.no_track {
                context.warning(
                    protocol.span,
                    "a tracked rule's protocol must be keepalived's (18): keepalived resets it",
                );
            }
        }
        rules.push(rule);
    }
}

/// Cross-references once everything is read: sync group members and tracked
/// scripts must exist (keepalived warns and ignores them).
pub fn finish(config: &mut Config, context: &mut Context) {
    let references = std::mem::take(&mut context.references);
    for reference in &references {
        check_reference(config, reference, context);
    }
}

/// One reference checked against what `config` defines.
pub(crate) fn check_reference(config: &Config, reference: &Reference, context: &mut Context) {
    let name = reference.name.as_str();
    let (exists, what) = match reference.kind {
        ReferenceKind::Script => (
            config.vrrp_scripts.iter().any(|script| script.name == name),
            "vrrp_script",
        ),
        ReferenceKind::File => (
            config.track_files.iter().any(|file| file.name == name),
            "track_file",
        ),
        ReferenceKind::Process => (
            config
                .track_processes
                .iter()
                .any(|process| process.name == name),
            "vrrp_track_process",
        ),
        ReferenceKind::Bfd => (
            config
                .bfd_instances
                .iter()
                .any(|instance| instance.name == name),
            "bfd_instance",
        ),
        ReferenceKind::Instance => (
            config
                .vrrp_instances
                .iter()
                .any(|instance| instance.name == name),
            "vrrp_instance",
        ),
    };
    if !exists {
        context.warning(
            reference.span,
            format!("no {what} '{name}' is defined (or it was dropped): keepalived ignores this reference"),
        );
    }
}

/// What keepalived 2.2.7 overrides of an instance in strict mode
/// (`vrrp_strict`, `strict_mode`), in its words; its defaults in strict
/// mode (accept mode off, no repeated garps, no adverts to a lower
/// priority) are pulse's settings resolution's.
fn strict_mode(context: &mut Context, node: &Node, instance: &mut VrrpInstance, version: u8) {
    let name = instance.name.clone();
    let is_ipv6 = instance
        .virtual_addresses
        .first()
        .is_some_and(|address| address.address.address.is_ipv6());
    if is_ipv6 && instance.version == Some(2) {
        context.warning(
            node.keyword.span,
            format!("({name}) cannot use IPv6 with VRRP version 2; setting version 3"),
        );
        instance.version = Some(3);
    }
    if instance.virtual_addresses.is_empty() {
        context.error(
            node.keyword.span,
            format!("({name}) No VIP specified; at least one is required"),
        );
    }
    let owner = instance.priority == 255;
    if instance
        .state
        .is_some_and(|state| (state == VrrpState::Master) != owner)
    {
        context.warning(
            node.keyword.span,
            format!("({name}) State MASTER must match being address owner"),
        );
        instance.state = Some(if owner {
            VrrpState::Master
        } else {
            VrrpState::Backup
        });
    }
    if instance.authentication.is_some() {
        context.warning(
            node.keyword.span,
            format!("({name}) Strict mode does not support authentication. Ignoring."),
        );
        instance.authentication = None;
    }
    if instance.preempt_delay > Duration::ZERO {
        context.warning(
            node.keyword.span,
            format!("({name}) preempt_delay is incompatible with strict mode - resetting"),
        );
        instance.preempt_delay = Duration::ZERO;
    }
    let version = if is_ipv6 { 3 } else { version };
    if instance.accept == Some(true) && !owner && version == 2 {
        context.warning(
            node.keyword.span,
            format!(
                "({name}) warning - accept mode for VRRP version 2 does not comply with RFC3768 - resetting"
            ),
        );
        instance.accept = Some(false);
    }
    if instance
        .garp
        .lower_prio_repeat
        .is_some_and(|repeat| repeat != 0)
    {
        context.warning(
            node.keyword.span,
            format!("({name}) Strict mode requires no repeat garps - resetting"),
        );
        instance.garp.lower_prio_repeat = Some(0);
    }
    if instance
        .garp
        .lower_prio_delay
        .is_some_and(|delay| !delay.is_zero())
    {
        context.warning(
            node.keyword.span,
            format!("({name}) Strict mode requires no repeat garp delay - resetting"),
        );
        instance.garp.lower_prio_delay = Some(Duration::ZERO);
    }
    if instance.lower_prio_no_advert == Some(false) {
        context.warning(
            node.keyword.span,
            format!("({name}) Strict mode requires no lower priority advert - resetting"),
        );
        instance.lower_prio_no_advert = Some(true);
    }
    if instance.higher_prio_send_advert == Some(true) {
        context.warning(
            node.keyword.span,
            format!(
                "({name}) strict mode requires higher_prio_send_advert to be clear - resetting"
            ),
        );
        instance.higher_prio_send_advert = Some(false);
    }
}
