//! `global_defs` (keepalived's global_parser.c). The keywords pulse uses
//! (mail alerts, scripts, VRRP defaults, LVS timeouts) are typed; the many
//! tuning knobs Fulcrum has no use for yet (process priorities, SNMP, DBus,
//! nftables, netlink buffer sizes...) are stored as written and reported as
//! "accepted, not yet acted on".

use std::time::Duration;

use super::common;
use super::{Context, Keyword, Node, values};
use crate::model::{GlobalDefs, LvsSyncDaemon, NotifyFifo, SmtpServer};
use crate::syntax::Word;

/// A keyword kept as written: at least `minimum` words.
const fn raw(name: &'static str, minimum: u8) -> Keyword {
    Keyword::leaf(name, minimum, None).not_acted_on()
}

/// The kernel's longest nftables table name, with its terminating zero
/// (NFT_TABLE_MAXNAMELEN).
const NFT_TABLE_MAXNAMELEN: usize = 256;

pub static KEYWORDS: &[Keyword] = &[
    // Typed.
    Keyword::leaf("router_id", 1, Some(1)),
    Keyword::lines("notification_email", 0, Some(0)),
    Keyword::leaf("notification_email_from", 1, Some(1)),
    Keyword::leaf("smtp_server", 1, Some(2)),
    Keyword::leaf("smtp_helo_name", 1, Some(1)),
    Keyword::leaf("smtp_connect_timeout", 1, Some(1)),
    Keyword::leaf("smtp_alert", 0, Some(1)),
    Keyword::leaf("smtp_alert_vrrp", 0, Some(1)),
    Keyword::leaf("smtp_alert_checker", 0, Some(1)),
    Keyword::leaf("no_email_faults", 0, Some(0)),
    Keyword::leaf("no_checker_emails", 0, Some(0)),
    Keyword::leaf("enable_script_security", 0, Some(0)),
    Keyword::leaf("script_user", 1, Some(2)),
    Keyword::leaf("default_interface", 1, Some(1)),
    Keyword::leaf("dynamic_interfaces", 0, Some(1)),
    Keyword::leaf("lvs_flush", 0, Some(0)),
    Keyword::leaf("lvs_flush_on_stop", 0, Some(1)),
    Keyword::leaf("lvs_flush_onstop", 0, Some(1)),
    Keyword::leaf("lvs_timeouts", 2, Some(6)),
    Keyword::leaf("lvs_sync_daemon", 2, None),
    Keyword::leaf("startup_script", 1, None),
    Keyword::leaf("shutdown_script", 1, None),
    Keyword::leaf("startup_script_timeout", 1, Some(1)),
    Keyword::leaf("shutdown_script_timeout", 1, Some(1)),
    // `PATH [USER [GROUP]]`: words after the group are ignored, as
    // keepalived ignores them.
    Keyword::leaf("notify_fifo", 1, None),
    Keyword::leaf("vrrp_notify_fifo", 1, None),
    Keyword::leaf("lvs_notify_fifo", 1, None),
    Keyword::leaf("fifo_write_vrrp_states_on_reload", 0, Some(0)),
    Keyword::leaf("notify_fifo_script", 1, None),
    Keyword::leaf("vrrp_notify_fifo_script", 1, None),
    Keyword::leaf("lvs_notify_fifo_script", 1, None),
    Keyword::leaf("vrrp_mcast_group4", 1, Some(1)),
    Keyword::leaf("vrrp_mcast_group6", 1, Some(1)),
    Keyword::leaf("vrrp_garp_master_delay", 1, Some(1)),
    Keyword::leaf("vrrp_garp_master_repeat", 1, Some(1)),
    Keyword::leaf("vrrp_garp_lower_prio_delay", 1, Some(1)),
    Keyword::leaf("vrrp_garp_lower_prio_repeat", 1, Some(1)),
    Keyword::leaf("vrrp_garp_master_refresh", 1, Some(1)),
    Keyword::leaf("vrrp_garp_master_refresh_repeat", 1, Some(1)),
    Keyword::leaf("vrrp_garp_interval", 1, Some(1)),
    Keyword::leaf("vrrp_gna_interval", 1, Some(1)),
    Keyword::leaf("vrrp_garp_extra_if", 1, Some(2)),
    Keyword::leaf("vrrp_vmac_garp_intvl", 1, Some(2)),
    Keyword::leaf("vrrp_min_garp", 0, Some(1)),
    Keyword::leaf("vrrp_version", 1, Some(1)),
    Keyword::leaf("vrrp_strict", 0, Some(0)),
    Keyword::leaf("disable_local_igmp", 0, Some(0)),
    Keyword::leaf("nftables", 0, Some(1)),
    Keyword::leaf("nftables_priority", 1, Some(1)),
    Keyword::leaf("nftables_counters", 0, Some(0)),
    Keyword::leaf("umask", 1, None),
    // keepalived's reload_time_file_handler wants exactly the path; its
    // reload_repeat_handler reads no word.
    Keyword::leaf("reload_time_file", 1, Some(1)),
    Keyword::leaf("reload_repeat", 0, None),
    Keyword::leaf("vrrp_skip_check_adv_addr", 0, Some(1)),
    Keyword::leaf("vrrp_check_unicast_src", 0, Some(0)),
    Keyword::leaf("vrrp_iptables", 0, Some(2)),
    Keyword::leaf("vrrp_priority", 1, Some(1)),
    Keyword::leaf("vrrp_no_swap", 0, Some(0)),
    Keyword::leaf("checker_priority", 1, Some(1)),
    Keyword::leaf("checker_no_swap", 0, Some(0)),
    Keyword::leaf("vrrp_lower_prio_no_advert", 0, Some(1)),
    Keyword::leaf("vrrp_higher_prio_send_advert", 0, Some(1)),
    Keyword::leaf("vrrp_startup_delay", 1, Some(1)),
    Keyword::leaf("vrrp_down_timer_adverts", 1, Some(1)),
    Keyword::leaf("vrrp_notify_priority_changes", 0, Some(1)),
    // Keywords of keepalived after 2.2.7: `json_version` (2.2.8) and the
    // dump files (2.3.3). No minimum: a missing value gets keepalived's own
    // words.
    Keyword::leaf("json_version", 0, Some(1)),
    Keyword::leaf("state_dump_file", 0, None),
    Keyword::leaf("stats_dump_file", 0, None),
    Keyword::leaf("json_dump_file", 0, None),
    // Stored as written.
    raw("bfd_cpu_affinity", 1),
    raw("bfd_no_swap", 0),
    raw("bfd_priority", 1),
    raw("bfd_process_name", 1),
    raw("bfd_rlimit_rtime", 1),
    raw("bfd_rlimit_rttime", 1),
    raw("bfd_rt_priority", 1),
    raw("checker_cpu_affinity", 1),
    raw("checker_log_all_failures", 0),
    raw("checker_process_name", 1),
    raw("checker_rlimit_rtime", 1),
    raw("checker_rlimit_rttime", 1),
    raw("checker_rt_priority", 1),
    raw("config_save_dir", 1),
    raw("data_use_instance", 0),
    raw("dbus_service_name", 1),
    raw("enable_dbus", 0),
    raw("enable_snmp_checker", 0),
    raw("enable_snmp_keepalived", 0),
    raw("enable_snmp_rfc", 0),
    raw("enable_snmp_rfcv2", 0),
    raw("enable_snmp_rfcv3", 0),
    raw("enable_snmp_vrrp", 0),
    raw("enable_traps", 0),
    raw("include_check", 0),
    raw("log_unknown_vrids", 0),
    raw("lvs_netlink_cmd_rcv_bufs", 1),
    raw("lvs_netlink_cmd_rcv_bufs_force", 0),
    raw("lvs_netlink_monitor_rcv_bufs", 1),
    raw("lvs_netlink_monitor_rcv_bufs_force", 0),
    raw("lvs_process_name", 1),
    raw("max_auto_priority", 0),
    raw("min_auto_priority_delay", 1),
    raw("nftables_ifindex", 0),
    raw("nftables_ipvs", 0),
    raw("nftables_ipvs_priority", 1),
    raw("nftables_ipvs_start_fwmark", 1),
    raw("process_monitor_rcv_bufs", 1),
    raw("process_monitor_rcv_bufs_force", 0),
    raw("process_name", 1),
    raw("process_names", 0),
    raw("random_seed", 1),
    raw("reload_check_config", 0),
    raw("reload_file", 1),
    raw("rs_init_notifies", 0),
    raw("snmp_socket", 1),
    raw("tmp_config_directory", 1),
    raw("vmac_addr_prefix", 1),
    raw("vmac_prefix", 1),
    raw("vrrp_cpu_affinity", 1),
    raw("vrrp_netlink_cmd_rcv_bufs", 1),
    raw("vrrp_netlink_cmd_rcv_bufs_force", 0),
    raw("vrrp_netlink_monitor_rcv_bufs", 1),
    raw("vrrp_netlink_monitor_rcv_bufs_force", 0),
    raw("vrrp_process_name", 1),
    raw("vrrp_rlimit_rtime", 1),
    raw("vrrp_rlimit_rttime", 1),
    raw("vrrp_rt_priority", 1),
    raw("vrrp_rx_bufs_multiplier", 1),
    raw("vrrp_rx_bufs_policy", 1),
];

/// The names keepalived's man page (2.3.3 on) gives the dump files, which
/// its parser does not know (an unknown keyword), with the names it reads.
pub(crate) const MAN_PAGE_NAMES: &[(&str, &str)] = &[
    ("state_file_location", "state_dump_file"),
    ("stats_file_location", "stats_dump_file"),
    ("json_file_location", "json_dump_file"),
];

pub fn read(node: &Node, global: &mut GlobalDefs, context: &mut Context) {
    for child in node.children {
        let argument = child.argument(0);
        let vrrp = &mut global.vrrp;
        match child.name() {
            "router_id" => global.router_id = Some(common::first(child)),
            "notification_email" => {
                if child.children.is_empty() {
                    context.warning(child.end_span(), "empty notification_email block");
                }
                for line in child.children {
                    for word in line.words() {
                        global.notification_email.push(word.text.to_string());
                    }
                }
            }
            "notification_email_from" => {
                global.notification_email_from = Some(common::first(child))
            }
            "smtp_server" => {
                let Some(word) = argument else { continue };
                let port = match child.argument(1) {
                    None => 25,
                    Some(port) => {
                        match values::integer(context, port, 1, 65535, "smtp_server port") {
                            Some(port) => port,
                            None => continue,
                        }
                    }
                };
                global.smtp_server = Some(match values::parse_address(&word.text) {
                    Some(address) => SmtpServer {
                        address: Some(address),
                        host: None,
                        port,
                    },
                    // keepalived also accepts a host name, resolved at start-up.
                    None => SmtpServer {
                        address: None,
                        host: Some(word.text.to_string()),
                        port,
                    },
                });
            }
            "smtp_helo_name" => global.smtp_helo_name = Some(common::first(child)),
            "smtp_connect_timeout" => {
                global.smtp_connect_timeout = argument.and_then(|word| {
                    values::whole_seconds(context, word, 1, u32::MAX.into(), "smtp_connect_timeout")
                })
            }
            "smtp_alert" => {
                global.smtp_alert = values::optional_boolean(context, argument, "smtp_alert")
            }
            "smtp_alert_vrrp" => {
                global.smtp_alert_vrrp =
                    values::optional_boolean(context, argument, "smtp_alert_vrrp")
            }
            "smtp_alert_checker" => {
                global.smtp_alert_checker =
                    values::optional_boolean(context, argument, "smtp_alert_checker")
            }
            "no_email_faults" => global.no_email_faults = true,
            "no_checker_emails" => global.no_checker_emails = true,
            "enable_script_security" => global.enable_script_security = true,
            "script_user" => {
                global.script_user = Some((
                    common::first(child),
                    child.argument(1).map(|word| word.text.to_string()),
                ));
                global.script_user_span = Some(child.span());
            }
            "default_interface" => global.default_interface = Some(common::first(child)),
            "dynamic_interfaces" => global.dynamic_interfaces = true,
            "lvs_flush" => global.lvs_flush = true,
            // `lvs_flush_on_stop [VS|ALL]`: bare means everything.
            "lvs_flush_on_stop" | "lvs_flush_onstop" => match argument {
                None => global.lvs_flush_on_stop = Some("ALL".to_string()),
                Some(word) => {
                    global.lvs_flush_on_stop = values::choice(
                        context,
                        word,
                        &[("VS", "VS"), ("ALL", "ALL")],
                        "lvs_flush_on_stop type",
                    )
                    .map(str::to_string)
                }
            },
            "lvs_timeouts" => read_lvs_timeouts(child, global, context),
            "lvs_sync_daemon" if global.lvs_sync_daemon.is_some() => {
                common::ignored_duplicate(context, child)
            }
            "lvs_sync_daemon" => {
                global.lvs_sync_daemon = read_lvs_sync_daemon(child, context);
            }
            "startup_script" => {
                global.startup_script = common::script_checked(child, Some(context))
            }
            "shutdown_script" => {
                global.shutdown_script = common::script_checked(child, Some(context))
            }
            "startup_script_timeout" => {
                global.startup_script_timeout = argument.and_then(|word| {
                    values::whole_seconds(context, word, 1, 1000, "startup_script_timeout")
                })
            }
            "shutdown_script_timeout" => {
                global.shutdown_script_timeout = argument.and_then(|word| {
                    values::whole_seconds(context, word, 1, 1000, "shutdown_script_timeout")
                })
            }
            "fifo_write_vrrp_states_on_reload" => global.fifo_write_vrrp_states_on_reload = true,
            "notify_fifo" => read_notify_fifo(child, &mut global.fifos.any, context),
            "vrrp_notify_fifo" => read_notify_fifo(child, &mut global.fifos.vrrp, context),
            "lvs_notify_fifo" => read_notify_fifo(child, &mut global.fifos.lvs, context),
            "notify_fifo_script" => {
                global.fifo_scripts.any = common::script_checked(child, Some(context))
            }
            "vrrp_notify_fifo_script" => {
                global.fifo_scripts.vrrp = common::script_checked(child, Some(context))
            }
            "lvs_notify_fifo_script" => {
                global.fifo_scripts.lvs = common::script_checked(child, Some(context))
            }
            "vrrp_mcast_group4" => {
                vrrp.mcast_group4 = argument.and_then(|word| {
                    let address = values::address(context, word, "vrrp_mcast_group4")?;
                    if address.is_ipv4() && address.is_multicast() {
                        Some(address)
                    } else {
                        context.error(
                            word.span,
                            "vrrp_mcast_group4 must be an IPv4 multicast address",
                        );
                        None
                    }
                })
            }
            "vrrp_mcast_group6" => {
                vrrp.mcast_group6 = argument.and_then(|word| {
                    let address = values::address(context, word, "vrrp_mcast_group6")?;
                    if address.is_ipv6() && address.is_multicast() {
                        Some(address)
                    } else {
                        context.error(
                            word.span,
                            "vrrp_mcast_group6 must be an IPv6 multicast address",
                        );
                        None
                    }
                })
            }
            "vrrp_garp_master_delay" => {
                vrrp.garp_master_delay = argument.and_then(|word| {
                    values::whole_seconds(
                        context,
                        word,
                        0,
                        u32::MAX.into(),
                        "vrrp_garp_master_delay",
                    )
                })
            }
            "vrrp_garp_master_repeat" => {
                vrrp.garp_master_repeat = argument.and_then(|word| {
                    values::integer(context, word, 1, u32::MAX.into(), "vrrp_garp_master_repeat")
                })
            }
            "vrrp_garp_lower_prio_delay" => {
                vrrp.garp_lower_prio_delay = argument.and_then(|word| {
                    values::whole_seconds(
                        context,
                        word,
                        0,
                        u32::MAX.into(),
                        "vrrp_garp_lower_prio_delay",
                    )
                })
            }
            "vrrp_garp_lower_prio_repeat" => {
                vrrp.garp_lower_prio_repeat = argument.and_then(|word| {
                    values::integer(
                        context,
                        word,
                        0,
                        u32::MAX.into(),
                        "vrrp_garp_lower_prio_repeat",
                    )
                })
            }
            "vrrp_garp_master_refresh" => {
                vrrp.garp_master_refresh = argument.and_then(|word| {
                    values::whole_seconds(
                        context,
                        word,
                        0,
                        u32::MAX.into(),
                        "vrrp_garp_master_refresh",
                    )
                })
            }
            "vrrp_garp_master_refresh_repeat" => {
                vrrp.garp_master_refresh_repeat = argument.and_then(|word| {
                    values::integer(
                        context,
                        word,
                        1,
                        u32::MAX.into(),
                        "vrrp_garp_master_refresh_repeat",
                    )
                })
            }
            "vrrp_garp_interval" => {
                vrrp.garp_interval = argument.and_then(|word| {
                    values::seconds(
                        context,
                        word,
                        Duration::from_micros(1),
                        Duration::from_micros(u32::MAX.into()),
                        "vrrp_garp_interval",
                    )
                })
            }
            "vrrp_gna_interval" => {
                vrrp.gna_interval = argument.and_then(|word| {
                    values::seconds(
                        context,
                        word,
                        Duration::from_micros(1),
                        Duration::from_micros(u32::MAX.into()),
                        "vrrp_gna_interval",
                    )
                })
            }
            "vrrp_garp_extra_if" | "vrrp_vmac_garp_intvl" => {
                if child.name() == "vrrp_vmac_garp_intvl" {
                    context.warning(
                        child.keyword.span,
                        "Keyword \"vrrp_vmac_garp_intvl\" is deprecated - please use \
                         \"vrrp_garp_extra_if\"",
                    );
                }
                // keepalived's vrrp_vmac_garp_extra_if_handler: 1 s at
                // least here.
                if let Some(extra) = super::vrrp::read_garp_extra_if(child, 1, context) {
                    vrrp.garp_extra_if = Some(extra);
                }
            }
            "vrrp_min_garp" => {
                vrrp.min_garp =
                    values::optional_boolean(context, argument, "vrrp_min_garp").unwrap_or(false);
                if vrrp.min_garp {
                    vrrp.apply_min_garp();
                }
            }
            "vrrp_version" => {
                vrrp.version =
                    argument.and_then(|word| values::integer(context, word, 2, 3, "vrrp_version"))
            }
            "vrrp_strict" => vrrp.strict = true,
            "disable_local_igmp" => vrrp.disable_local_igmp = true,
            // keepalived's vrrp_nftables_handler: a second one is ignored,
            // and each puts the chains' priority back to -1.
            "nftables" => {
                if vrrp.nftables.is_some() {
                    context.warning(child.keyword.span, "nftables already specified - ignoring");
                } else {
                    let name = argument.map_or("keepalived", |word| &word.text);
                    if name.len() >= NFT_TABLE_MAXNAMELEN {
                        context.warning(
                            child.keyword.span,
                            "nftables table name too long - ignoring",
                        );
                    } else {
                        vrrp.nftables = Some(name.to_string());
                        vrrp.nftables_priority = None;
                    }
                }
            }
            "nftables_priority" => {
                if let Some(word) = argument {
                    match word.text.parse::<i32>() {
                        Ok(priority) => vrrp.nftables_priority = Some(priority),
                        Err(_) => context.error(
                            word.span,
                            format!("invalid nftables chain priority '{}'", word.text),
                        ),
                    }
                }
            }
            "nftables_counters" => vrrp.nftables_counters = true,
            "reload_time_file" => global.reload_time_file = Some(common::first(child)),
            "reload_repeat" => global.reload_repeat = true,
            "vrrp_skip_check_adv_addr" => {
                // keepalived 2.2.7 does not check the word here: anything
                // but false/off/no means true.
                vrrp.skip_check_adv_addr = !matches!(
                    argument.map(|word| word.text.as_str()),
                    Some("false" | "off" | "no")
                );
                if let Some(word) = argument.filter(|word| {
                    !matches!(
                        word.text.as_str(),
                        "true" | "on" | "yes" | "false" | "off" | "no"
                    )
                }) {
                    context.warning(
                        word.span,
                        format!(
                            "'{}' is not a <BOOL>: keepalived takes it as true",
                            word.text
                        ),
                    );
                }
            }
            "vrrp_check_unicast_src" => vrrp.check_unicast_src = true,
            "vrrp_iptables" => {
                vrrp.iptables = Some(
                    child
                        .arguments
                        .iter()
                        .map(|word| word.text.to_string())
                        .collect(),
                );
                // keepalived 2.2.7 as Debian builds it (nftables only) says
                // this, quotes as they are, and drops with nftables, as
                // pulse does.
                context.warning(
                    child.keyword.span,
                    "iptables not supported, using nftables instead. Please replace \
                     'vrrp_iptables and 'vrrp_ipsets' with 'nftables' config option",
                );
            }
            "vrrp_priority" => {
                vrrp.priority = argument
                    .and_then(|word| values::integer(context, word, -20, 19, "vrrp_priority"))
            }
            "vrrp_no_swap" => vrrp.no_swap = true,
            "checker_priority" => {
                global.checker_priority = argument
                    .and_then(|word| values::integer(context, word, -20, 19, "checker_priority"))
            }
            "checker_no_swap" => global.checker_no_swap = true,
            "vrrp_lower_prio_no_advert" => {
                vrrp.lower_prio_no_advert =
                    values::optional_boolean(context, argument, "vrrp_lower_prio_no_advert")
            }
            "vrrp_higher_prio_send_advert" => {
                vrrp.higher_prio_send_advert =
                    values::optional_boolean(context, argument, "vrrp_higher_prio_send_advert")
            }
            "vrrp_startup_delay" => {
                // keepalived's vrrp_startup_delay_handler: 1 ms to
                // UINT_MAX microseconds, and a remark from a minute on.
                vrrp.startup_delay = argument.and_then(|word| {
                    values::seconds(
                        context,
                        word,
                        Duration::from_millis(1),
                        Duration::from_micros(u32::MAX.into()),
                        "vrrp_startup_delay",
                    )
                });
                if let (Some(word), Some(delay)) = (argument, vrrp.startup_delay)
                    && delay >= Duration::from_secs(60)
                {
                    context.warning(
                        word.span,
                        format!(
                            "The vrrp_startup_delay is very large - {} seconds",
                            word.text
                        ),
                    );
                }
            }
            "vrrp_down_timer_adverts" => {
                vrrp.down_timer_adverts = argument.and_then(|word| {
                    values::integer(context, word, 1, 100, "vrrp_down_timer_adverts")
                })
            }
            "vrrp_notify_priority_changes" => {
                vrrp.notify_priority_changes =
                    values::optional_boolean(context, argument, "vrrp_notify_priority_changes")
            }
            "json_version" => match argument {
                None => context.error(child.keyword.span, "json_version requires version"),
                Some(word) => {
                    if let Some(version) = json_version(context, word) {
                        global.json_version = Some(version);
                    }
                }
            },
            "state_dump_file" => {
                if let Some(path) = dump_file(child, context) {
                    global.dump_files.state = Some(path);
                }
            }
            "stats_dump_file" => {
                if let Some(path) = dump_file(child, context) {
                    global.dump_files.statistics = Some(path);
                }
            }
            "json_dump_file" => {
                if let Some(path) = dump_file(child, context) {
                    global.dump_files.json = Some(path);
                }
            }
            "umask" => match umask(child) {
                Ok(bits) => global.umask = Some(bits),
                Err(message) => context.error(
                    argument.map_or(child.keyword.span, |word| word.span),
                    message,
                ),
            },
            name => {
                if global.other.iter().any(|setting| setting.keyword == name) {
                    context.warning(
                        child.keyword.span,
                        format!("'{name}' already given in global_defs: keepalived keeps only one of them"),
                    );
                }
                if let (Some((minimum, maximum)), Some(word)) = (numeric_range(name), argument) {
                    values::integer::<i64>(context, word, minimum, maximum, name);
                }
                global.other.push(common::raw(child));
            }
        }
    }
}

/// `json_version`'s word, read as keepalived reads it (`read_unsigned`
/// from 1 to 2) and refused with its words: its reader's complaint, then
/// "Invalid JSON version"; the version is then left as it was.
fn json_version(context: &mut Context, word: &Word) -> Option<u8> {
    let text = word.text.as_str();
    // strtoul takes a '+' and reads a '-' as a huge number.
    let digits = text.strip_prefix('+').unwrap_or(text);
    let complaint = if text.starts_with('-') {
        format!("negative number '{text}'")
    } else if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        format!("invalid number '{text}'")
    } else {
        match digits.parse::<u32>() {
            Ok(version @ 1..=2) => return Some(version as u8),
            Ok(_) => format!("number '{text}' outside range [1, 2]"),
            Err(_) => format!("number '{text}' outside unsigned integer range"),
        }
    };
    context.error(word.span, format!("Invalid JSON version: {complaint}"));
    None
}

/// A `*_dump_file`'s path: exactly one word, not empty, else keepalived's
/// error and the keyword ignored, as its handlers do.
fn dump_file(node: &Node, context: &mut Context) -> Option<String> {
    match node.arguments {
        [word] if !word.text.is_empty() => Some(word.text.to_string()),
        _ => {
            context.error(
                node.keyword.span,
                format!("{} requires a non-empty path", node.name()),
            );
            None
        }
    }
}

/// The range of the number that some stored-as-written keywords take, so
/// that a typo is still caught.
fn numeric_range(name: &str) -> Option<(i128, i128)> {
    Some(match name {
        "vrrp_rt_priority" | "checker_rt_priority" | "bfd_rt_priority" => (1, 99),
        "checker_priority" | "bfd_priority" => (-20, 19),
        "vrrp_rlimit_rtime"
        | "vrrp_rlimit_rttime"
        | "checker_rlimit_rtime"
        | "checker_rlimit_rttime"
        | "bfd_rlimit_rtime"
        | "bfd_rlimit_rttime" => (1, u32::MAX.into()),
        "min_auto_priority_delay" | "vrrp_rx_bufs_multiplier" => (1, u32::MAX.into()),
        "lvs_netlink_cmd_rcv_bufs"
        | "lvs_netlink_monitor_rcv_bufs"
        | "vrrp_netlink_cmd_rcv_bufs"
        | "vrrp_netlink_monitor_rcv_bufs"
        | "process_monitor_rcv_bufs" => (1, u32::MAX.into()),
        "nftables_priority" | "nftables_ipvs_priority" => (i32::MIN.into(), i32::MAX.into()),
        "nftables_ipvs_start_fwmark" => (1, u32::MAX.into()),
        "max_auto_priority" => (-1, 99),
        "random_seed" => (0, u32::MAX.into()),
        _ => return None,
    })
}

/// `notify_fifo PATH [USER [GROUP]]` (and the `vrrp_`, `lvs_` ones): the
/// first one given counts, as keepalived ignores a second.
fn read_notify_fifo(node: &Node, slot: &mut Option<NotifyFifo>, context: &mut Context) {
    if slot.is_some() {
        common::ignored_duplicate(context, node);
        return;
    }
    *slot = Some(NotifyFifo {
        path: common::first(node),
        owner: node.argument(1).map(|user| {
            (
                user.text.to_string(),
                node.argument(2).map(|group| group.text.to_string()),
            )
        }),
    });
}

/// `lvs_sync_daemon IFNAME INSTANCE [id N] [maxlen N] [port N] [ttl N]
/// [group ADDR]`; `None` when a word is wrong (reported).
fn read_lvs_sync_daemon(node: &Node, context: &mut Context) -> Option<LvsSyncDaemon> {
    let mut daemon = LvsSyncDaemon {
        interface: node.arguments[0].text.to_string(),
        instance: node.arguments[1].text.to_string(),
        sync_id: None,
        max_length: None,
        port: None,
        ttl: None,
        group: None,
    };
    let mut valid = true;
    let mut words = node.arguments.iter().skip(2);
    while let Some(word) = words.next() {
        let Some(value) = words.next() else {
            context.error(word.span, format!("'{}' needs a value", word.text));
            return None;
        };
        let accepted = match word.text.as_str() {
            "id" => values::integer::<u8>(context, value, 0, 255, "sync daemon id")
                .map(|id| daemon.sync_id = Some(id)),
            "maxlen" => values::integer::<u16>(context, value, 1, 65507, "maxlen")
                .map(|length| daemon.max_length = Some(length)),
            "port" => values::integer::<u16>(context, value, 1, 65535, "port")
                .map(|port| daemon.port = Some(port)),
            "ttl" => values::integer::<u8>(context, value, 1, 255, "ttl")
                .map(|ttl| daemon.ttl = Some(ttl)),
            "group" => values::address(context, value, "multicast group")
                .map(|group| daemon.group = Some(group)),
            other => {
                context.error(
                    word.span,
                    format!("unknown lvs_sync_daemon option '{other}': expected id, maxlen, port, ttl or group"),
                );
                return None;
            }
        };
        valid &= accepted.is_some();
    }
    valid.then_some(daemon)
}

/// `lvs_timeouts [tcp T] [tcpfin T] [udp T]` (whole seconds).
fn read_lvs_timeouts(node: &Node, global: &mut GlobalDefs, context: &mut Context) {
    let mut words = node.arguments.iter();
    while let Some(word) = words.next() {
        let Some(value) = words.next() else {
            context.error(
                word.span,
                format!("'{}' needs a timeout in seconds", word.text),
            );
            return;
        };
        let timeout = values::whole_seconds(context, value, 0, 86400 * 31, "lvs_timeouts");
        match word.text.as_str() {
            "tcp" => global.lvs_timeouts.tcp = timeout,
            "tcpfin" => global.lvs_timeouts.tcp_fin = timeout,
            "udp" => global.lvs_timeouts.udp = timeout,
            other => {
                context.error(
                    word.span,
                    format!("unknown lvs_timeouts protocol '{other}': expected tcp, tcpfin or udp"),
                );
                return;
            }
        }
    }
}

/// A file creation mask in C's notation (strtol base 0: a 0 prefix is
/// octal, 0x hexadecimal), within 0777: the configuration's `umask` and
/// the command line's `-u` alike (keepalived's umask_handler, set_umask).
pub fn umask_number(text: &str) -> Option<u32> {
    let parsed = if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        u32::from_str_radix(hex, 16)
    } else if text.len() > 1 && text.starts_with('0') {
        u32::from_str_radix(&text[1..], 8)
    } else {
        text.parse()
    };
    parsed.ok().filter(|bits| bits & !0o777 == 0)
}

/// `umask`, as keepalived's umask_handler reads it: a number in C's
/// notation (strtol base 0: a 0 prefix is octal, 0x hexadecimal), alone
/// and within 0777; or permission flags (`IWGRP|IWOTH`, over one or more
/// words).
fn umask(node: &Node) -> Result<u32, String> {
    const FLAGS: [(&str, u32); 9] = [
        ("IRUSR", 0o400),
        ("IWUSR", 0o200),
        ("IXUSR", 0o100),
        ("IRGRP", 0o040),
        ("IWGRP", 0o020),
        ("IXGRP", 0o010),
        ("IROTH", 0o004),
        ("IWOTH", 0o002),
        ("IXOTH", 0o001),
    ];
    let words: Vec<&str> = node
        .arguments
        .iter()
        .map(|word| word.text.as_str())
        .collect();
    let Some(first) = words.first() else {
        return Err("Missing parameter(s) to umask option".to_owned());
    };
    if first.starts_with(|c: char| c.is_ascii_digit()) {
        if words.len() != 1 {
            return Err("Extra parameter(s) to umask option".to_owned());
        }
        return umask_number(first).ok_or_else(|| format!("invalid umask value {first}"));
    }
    let mut bits = 0;
    let mut need_or = false;
    for word in &words {
        let mut rest = *word;
        while !rest.is_empty() {
            if need_or {
                match rest.strip_prefix('|') {
                    Some(after) => {
                        need_or = false;
                        rest = after;
                        continue;
                    }
                    None => return Err(format!("Invalid umask syntax {word}")),
                }
            }
            let Some((_, bit)) = FLAGS.iter().find(|(name, _)| rest.starts_with(name)) else {
                return Err(format!("Unknown umask bit {rest}"));
            };
            bits |= bit;
            rest = &rest[5..];
            need_or = true;
        }
    }
    if !need_or {
        return Err("umask missing bit value".to_owned());
    }
    Ok(bits)
}
