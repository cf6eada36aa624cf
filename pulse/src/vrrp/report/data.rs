//! keepalived's data dump, `keepalived.data`, which its VRRP process
//! writes on SIGUSR1 (vrrp_print.c `vrrp_print_data`, vrrp_data.c
//! `dump_data_vrrp`).
//!
//! Rules:
//! - **keepalived 2.2.7's bytes, in its order.** `------< Global
//!   definitions >------` (global_data.c `dump_global_data`, as Debian's
//!   build compiles it: VRRP, LVS, BFD, SNMP, DBus, nftables, VMAC), `------<
//!   VRRP Topology >------` (`dump_vrrp`), `------< VRRP Sockpool >------`
//!   (`dump_sock_pool`), `------< VRRP Sync groups >------`, `------< VRRP
//!   Scripts >------` (`dump_vscript`), `------< Interfaces >------`
//!   (vrrp_if.c `dump_if`); a line keepalived writes only when something is
//!   set is written only then. mehdy/keepalived-exporter's text mode parses
//!   this file (`ParseVRRPData`, `ParseVRRPScript`): a difference is its to
//!   trip on.
//! - **Pure.** [`keepalived_data`] renders a [`Dump`]: the published
//!   [`Report`], what the plan says ([`PlanData`], built once per plan),
//!   what moves that the report does not carry ([`InstanceMoment`]) and the
//!   kernel's links ([`Link`], read by the task at the signal). The time
//!   comes in with the dump; only the local time zone is read here, as
//!   keepalived's `localtime_r` reads it.
//! - **What pulse does not have is written as keepalived writes its
//!   default**, never left out: the settings pulse does not model (process
//!   priorities, SNMP, DBus, netlink buffers: their defaults), `libnftnl
//!   version` (Debian 12's keepalived's), `Rx buf size = 0`, a script's
//!   `State = idle` (pulse does not say whether one is running). What
//!   cannot match keepalived's (descriptors, times, `Seen up`) is listed in
//!   docs/observability.md and normalised by the interop test.

use std::fmt::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant, SystemTime};

use fulcrum_config::model as config;

use super::{Report, state_name};
use crate::vrrp::garp::PaceReport;
use crate::vrrp::plan::{Plan, Tracked};

/// keepalived's weight for an instance's own interface with
/// `dont_track_primary` (vrrp_track.h `VRRP_NOT_TRACK_IF`).
const NOT_TRACKED: i32 = 255;

/// The libnftnl version Debian 12's keepalived 2.2.7 was built with, which
/// its dump prints (a build-time constant of keepalived's).
const LIBNFTNL_VERSION: &str = "1.2.3";

/// Each interface and the instances tracking it, `(instance, weight,
/// reverse)`, in keepalived's order.
type InterfaceTracking = Vec<(String, Vec<(String, i32, bool)>)>;

/// One socket of keepalived's pool: its interface, family and unicast
/// source, its descriptors and its instances (VRID, name).
type PooledSocket = (
    (String, bool, Option<IpAddr>),
    Option<(i32, i32)>,
    Vec<(u8, String)>,
);

/// What the data dump says that the configuration decides: built once per
/// plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanData {
    pub global: Global,
    /// In the plan's order (the report's).
    pub instances: Vec<InstanceData>,
    /// The tracked `vrrp_script`s, in the plan's order.
    pub scripts: Vec<ScriptData>,
}

/// `global_defs`, resolved as keepalived resolves it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Global {
    pub definitions: config::GlobalDefs,
    /// `router_id`, else the host's name (keepalived's default).
    pub router_id: String,
    /// Whom scripts run as by default (keepalived's `Default script
    /// uid:gid`).
    pub script_account: (u32, u32),
}

/// What one instance's configuration says, beyond its [`super::Description`].
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceData {
    pub ipv6: bool,
    pub sync_group: Option<String>,
    /// `(address, min_ttl, max_ttl)`, keepalived's defaults 0 and 255.
    pub unicast_peers: Vec<(IpAddr, u8, u8)>,
    pub unicast_ttl: Option<u8>,
    pub check_unicast_source: bool,
    pub unicast_fault_no_peer: bool,
    /// Whether adverts go from a configured address.
    pub configured_source: bool,
    pub multicast_group: IpAddr,
    pub down_timer_adverts: u32,
    pub promote_secondaries: bool,
    /// Whether any of keepalived's flag bits is set (`Flags:` or `Flags:
    /// none`).
    pub flags: bool,
    pub tracked_interfaces: Vec<Tracked>,
    pub tracked_scripts: Vec<Tracked>,
    /// The interfaces of its addresses written with another `dev`, which
    /// keepalived tracks too (weight 0).
    pub address_interfaces: Vec<String>,
    /// `(keepalived's name of the script, its command, uid, gid)`, in
    /// keepalived's order.
    pub notify_scripts: Vec<(&'static str, String, u32, u32)>,
    pub notify_priority_changes: bool,
    pub debug: u8,
    /// keepalived's `num_config_faults`: 1 with `unicast_fault_no_peer`
    /// and no peer.
    pub configuration_faults: u32,
    /// `garp_extra_if`'s interval, where it is in force.
    pub garp_extra_interfaces: Option<Duration>,
}

/// A tracked `vrrp_script`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptData {
    pub name: String,
    pub command: String,
    pub interval: Duration,
    /// keepalived prints 0 when none is written.
    pub timeout: Duration,
    pub weight: i32,
    pub reverse: bool,
    pub rise: u32,
    pub fall: u32,
    pub init_fail: bool,
    pub account: (u32, u32),
    /// The instances tracking it: `(instance, weight, reverse)`.
    pub tracking: Vec<(String, i32, bool)>,
}

/// What moves in an instance that the published report does not carry.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceMoment {
    /// The master heard last, and its advert interval.
    pub master_address: Option<IpAddr>,
    /// keepalived's `ms_down_timer`, computed as it does.
    pub master_down_timer: Duration,
    /// When its timer fires next (keepalived's `sands`); `None` if none.
    pub read_timeout: Option<Instant>,
    /// The address adverts go from, `None` without one.
    pub source_address: Option<IpAddr>,
    /// `(receive, send)` descriptors.
    pub sockets: Option<(i32, i32)>,
    /// Its interface's index.
    pub interface_index: u32,
    /// The next `garp_extra_if` announcement, once it has been master.
    pub extra_interfaces_at: Option<Instant>,
}

/// A link as the kernel has it at the dump, with keepalived's view of its
/// addresses: IPv4 ones and link-local IPv6 ones, without the instances'
/// own (virtual and excluded) addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub name: String,
    pub index: u32,
    pub ipv4: Vec<Ipv4Addr>,
    pub ipv6: Vec<Ipv6Addr>,
    /// Empty when all zeros (a loopback's), as keepalived keeps it.
    pub hardware_address: Vec<u8>,
    pub broadcast_address: Vec<u8>,
    /// `IFF_*`.
    pub flags: u32,
    pub mtu: u32,
    /// `ARPHRD_*`.
    pub hardware_type: u16,
}

/// Everything the dump is made of.
pub struct Dump<'a> {
    pub report: &'a Report,
    pub plan: &'a PlanData,
    /// Parallel to the report's instances.
    pub moments: &'a [InstanceMoment],
    /// By index.
    pub links: &'a [Link],
    /// The interfaces' paces of gratuitous ARPs (keepalived's
    /// `garp_delay` list).
    pub garp_delays: &'a [PaceReport],
    /// The same moment on both clocks.
    pub now: (Instant, SystemTime),
}

impl PlanData {
    pub fn of(plan: &Plan) -> PlanData {
        let configuration = &plan.configuration;
        let definitions = &configuration.global;
        let script_account = default_script_account(definitions);
        let account = |script: &config::Script| {
            script
                .runs_as
                .map_or(script_account, |account| (account.uid, account.gid))
        };
        let command =
            |script: &config::Script| fulcrum_scripts::security::quoted_command(&script.argv);
        let instances = plan
            .instances
            .iter()
            .map(|instance| {
                let model = &instance.model;
                let settings = &instance.settings;
                let notify = &model.notify;
                let notify_scripts = [
                    ("Backup", notify.backup.as_ref()),
                    ("Master", notify.master.as_ref()),
                    ("Fault", notify.fault.as_ref()),
                    ("Stop", notify.stop.as_ref()),
                    ("Deleted", notify.deleted.as_ref().and_then(Option::as_ref)),
                    ("Generic", notify.any.as_ref()),
                    (
                        "Master rx lower pri",
                        notify.master_rx_lower_priority.as_ref(),
                    ),
                ]
                .into_iter()
                .filter_map(|(name, script)| {
                    script.map(|script| {
                        let (uid, gid) = account(script);
                        (name, command(script), uid, gid)
                    })
                })
                .collect();
                let mut address_interfaces: Vec<String> = Vec::new();
                for address in model
                    .virtual_addresses
                    .iter()
                    .chain(&model.excluded_addresses)
                {
                    if let Some(device) = &address.device
                        && *device != instance.interface
                        && !address_interfaces.contains(device)
                    {
                        address_interfaces.push(device.clone());
                    }
                }
                let unicast = !settings.unicast_peers.is_empty();
                let ipv6 = settings.family == crate::vrrp::packet::Family::Ipv6;
                let configured_source = instance.configured_source();
                let other_family = model
                    .excluded_addresses
                    .iter()
                    .any(|address| address.address.address.is_ipv6() != ipv6);
                InstanceData {
                    ipv6,
                    sync_group: instance
                        .group
                        .map(|(group, _)| plan.groups[group].model.name.clone()),
                    unicast_peers: settings
                        .unicast_peers
                        .iter()
                        .map(|peer| {
                            (
                                peer.address,
                                peer.min_ttl.unwrap_or(0),
                                peer.max_ttl.unwrap_or(255),
                            )
                        })
                        .collect(),
                    unicast_ttl: model.unicast_ttl,
                    check_unicast_source: settings.check_unicast_source,
                    unicast_fault_no_peer: model.unicast_fault_no_peer,
                    configured_source,
                    multicast_group: instance
                        .destinations
                        .first()
                        .copied()
                        .filter(|_| !unicast)
                        .unwrap_or_else(|| crate::vrrp::io::group(settings.family)),
                    down_timer_adverts: settings.down_timer_adverts,
                    promote_secondaries: model.promote_secondaries,
                    // keepalived's flag bits that pulse's configuration can
                    // set (vrrp.h: VRRP_FLAG_*).
                    flags: unicast
                        || model.unicast_fault_no_peer
                        || model.dont_track_primary
                        || settings.skip_check_advert_addresses
                        || configured_source
                        || model.track_source_ip
                        || settings.check_unicast_source
                        || model.promote_secondaries
                        || other_family
                        || !settings.preempt,
                    tracked_interfaces: instance.tracked.links.clone(),
                    tracked_scripts: instance.tracked.scripts.clone(),
                    address_interfaces,
                    notify_scripts,
                    notify_priority_changes: instance.notify_priority_changes,
                    debug: model.debug.unwrap_or(0),
                    configuration_faults: u32::from(instance.configuration_fault),
                    garp_extra_interfaces: settings.garp.extra_interfaces,
                }
            })
            .collect();
        let scripts = plan
            .scripts
            .iter()
            .map(|script| ScriptData {
                name: script.name.clone(),
                command: script.script.as_ref().map(command).unwrap_or_default(),
                interval: script.interval,
                timeout: script.timeout.unwrap_or_default(),
                weight: script.weight,
                reverse: script.weight_reverse,
                rise: script.rise,
                fall: script.fall,
                init_fail: script.init_fail,
                account: script.script.as_ref().map_or(script_account, account),
                tracking: plan
                    .instances
                    .iter()
                    .flat_map(|instance| {
                        instance
                            .tracked
                            .scripts
                            .iter()
                            .filter(|tracked| tracked.name == script.name)
                            .map(|tracked| {
                                (instance.name().to_owned(), tracked.weight, tracked.reverse)
                            })
                    })
                    .collect(),
            })
            .collect();
        PlanData {
            global: Global {
                definitions: definitions.clone(),
                router_id: definitions.router_id.clone().unwrap_or_else(host_name),
                script_account,
            },
            instances,
            scripts,
        }
    }
}

/// Whom keepalived runs a script without a user of its own as:
/// `script_user`, else `keepalived_script` if there is such a user, else
/// root.
fn default_script_account(definitions: &config::GlobalDefs) -> (u32, u32) {
    use fulcrum_scripts::account::{Accounts, System};
    let found = match &definitions.script_user {
        Some((user, group)) => System.lookup(user, group.as_deref()),
        None => System.lookup(fulcrum_scripts::review::DEFAULT_USER, None),
    };
    found.map_or((0, 0), |account| (account.uid, account.gid))
}

/// The host's name, keepalived's default `router_id`.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim_end().to_owned())
        .unwrap_or_default()
}

/// keepalived.data as keepalived 2.2.7's VRRP process writes it.
pub fn keepalived_data(dump: &Dump<'_>) -> String {
    let mut text = String::new();
    global_definitions(&mut text, &dump.plan.global);
    if !dump.garp_delays.is_empty() {
        text.push_str("------< Gratuitous ARP delays >------\n");
        for pace in dump.garp_delays {
            garp_delay(&mut text, pace, dump);
        }
    }
    let report = dump.report;
    if !report.instances.is_empty() {
        text.push_str("------< VRRP Topology >------\n");
        for ((instance, data), moment) in report
            .instances
            .iter()
            .zip(&dump.plan.instances)
            .zip(dump.moments)
        {
            topology(&mut text, instance, data, moment, dump.now);
        }
        socket_pool(&mut text, dump);
    }
    if !dump.plan.scripts.is_empty() {
        text.push_str("------< VRRP Scripts >------\n");
        for script in &dump.plan.scripts {
            let succeeding = report
                .scripts
                .iter()
                .find(|published| published.name == script.name)
                .and_then(|published| published.succeeding);
            vrrp_script(&mut text, script, succeeding);
        }
    }
    if !dump.links.is_empty() {
        text.push_str("------< Interfaces >------\n");
        let tracking = interface_tracking(dump);
        for link in dump.links {
            let pace = dump
                .garp_delays
                .iter()
                .find(|pace| pace.interfaces.contains(&link.name));
            interface(&mut text, link, &tracking, pace);
        }
    }
    text
}

fn on_off(value: Option<bool>) -> &'static str {
    match value {
        None => "unset",
        Some(true) => "on",
        Some(false) => "off",
    }
}

fn true_false(value: bool) -> &'static str {
    if value { "true" } else { "false" }
}

/// `dump_global_data`, for the VRRP process.
fn global_definitions(text: &mut String, global: &Global) {
    let definitions = &global.definitions;
    let vrrp = &definitions.vrrp;
    let mut line = |line: String| {
        text.push_str(&line);
        text.push('\n');
    };
    line("------< Global definitions >------".to_owned());
    line(" Network namespace = (default)".to_owned());
    line(" Network namespace ipvs = (main namespace)".to_owned());
    line(format!(" Router ID = {}", global.router_id));
    if let Some(server) = &definitions.smtp_server
        && let Some(address) = server.address
    {
        line(format!(" Smtp server = {address}"));
        line(format!(" Smtp server port = {}", server.port));
    }
    if let Some(helo) = &definitions.smtp_helo_name {
        line(format!(" Smtp HELO name = {helo}"));
    }
    if let Some(timeout) = definitions.smtp_connect_timeout {
        line(format!(
            " Smtp server connection timeout = {}",
            timeout.as_secs()
        ));
    }
    if let Some(from) = &definitions.notification_email_from {
        line(format!(" Email notification from = {from}"));
        line(" Email notification to:".to_owned());
        for email in &definitions.notification_email {
            line(format!("   {email}"));
        }
    }
    line(format!(
        " Default smtp_alert = {}",
        on_off(definitions.smtp_alert)
    ));
    line(format!(
        " Default smtp_alert_vrrp = {}",
        on_off(definitions.smtp_alert_vrrp)
    ));
    line(format!(
        " Default smtp_alert_checker = {}",
        on_off(definitions.smtp_alert_checker)
    ));
    line(" Checkers log all failures = false".to_owned());
    line(" No test config before reload".to_owned());
    for (script, timeout, what, comma) in [
        (
            &definitions.startup_script,
            definitions.startup_script_timeout,
            "Startup",
            ",",
        ),
        (
            &definitions.shutdown_script,
            definitions.shutdown_script_timeout,
            "Shutdown",
            // keepalived's line for the shutdown script has no comma.
            "",
        ),
    ] {
        if let Some(script) = script {
            let (uid, gid) = script
                .runs_as
                .map_or(global.script_account, |account| (account.uid, account.gid));
            line(format!(
                " {what} script = {}, uid:gid {uid}:{gid}{comma} timeout {}",
                fulcrum_scripts::security::quoted_command(&script.argv),
                timeout.unwrap_or(Duration::from_secs(10)).as_secs()
            ));
        }
    }
    line(format!(
        " Dynamic interfaces = {}",
        true_false(definitions.dynamic_interfaces)
    ));
    if definitions.dynamic_interfaces {
        line(" Allow interface changes = false".to_owned());
    }
    if definitions.no_email_faults {
        line(" Send emails for fault transitions = off".to_owned());
    }
    let timeouts = &definitions.lvs_timeouts;
    // keepalived names the UDP timeout "TCP" too.
    for (timeout, name) in [
        (timeouts.tcp, "TCP"),
        (timeouts.tcp_fin, "TCP FIN"),
        (timeouts.udp, "TCP"),
    ] {
        if let Some(timeout) = timeout.filter(|timeout| !timeout.is_zero()) {
            line(format!(" LVS {name} timeout = {}", timeout.as_secs()));
        }
    }
    line(format!(
        " Default interface = {}",
        definitions.default_interface.as_deref().unwrap_or("eth0")
    ));
    line(" Disable local IGMP = no".to_owned());
    if let Some(sync) = &definitions.lvs_sync_daemon {
        line(format!(" LVS syncd vrrp instance = {}", sync.instance));
        line(format!(" LVS syncd interface = {}", sync.interface));
        line(format!(" LVS syncd syncid = {}", sync.sync_id.unwrap_or(0)));
        if let Some(length) = sync.max_length {
            line(format!(" LVS syncd maxlen = {length}"));
        }
        if let Some(group) = sync.group {
            line(format!(" LVS mcast group {group}"));
        }
        if let Some(port) = sync.port {
            line(format!(" LVS syncd mcast port = {port}"));
        }
        if let Some(ttl) = sync.ttl {
            line(format!(" LVS syncd mcast ttl = {ttl}"));
        }
    }
    line(format!(
        " LVS flush = {}",
        true_false(definitions.lvs_flush)
    ));
    line(format!(
        " LVS flush on stop = {}",
        match definitions.lvs_flush_on_stop.as_deref() {
            None => "disabled",
            Some("VS") => "VS",
            Some(_) => "full",
        }
    ));
    line(" FIFO write vrrp states on reload = false".to_owned());
    line(format!(
        " VRRP notify priority changes = {}",
        true_false(vrrp.notify_priority_changes.unwrap_or(false))
    ));
    line(format!(
        " VRRP IPv4 mcast group = {}",
        vrrp.mcast_group4
            .unwrap_or(IpAddr::V4(Ipv4Addr::new(224, 0, 0, 18)))
    ));
    line(format!(
        " VRRP IPv6 mcast group = {}",
        vrrp.mcast_group6
            .unwrap_or(IpAddr::V6(Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x12)))
    ));
    let delay = vrrp.garp_master_delay.unwrap_or(Duration::from_secs(5));
    let repeat = vrrp.garp_master_repeat.unwrap_or(5);
    line(format!(" Gratuitous ARP delay = {}", delay.as_secs()));
    line(format!(" Gratuitous ARP repeat = {repeat}"));
    line(format!(
        " Gratuitous ARP refresh timer = {}",
        vrrp.garp_master_refresh.unwrap_or_default().as_secs()
    ));
    line(format!(
        " Gratuitous ARP refresh repeat = {}",
        vrrp.garp_master_refresh_repeat.unwrap_or(1)
    ));
    // Unset, keepalived gives them the master's delay and repeat before
    // any dump.
    line(format!(
        " Gratuitous ARP lower priority delay = {}",
        vrrp.garp_lower_prio_delay.unwrap_or(delay).as_secs()
    ));
    line(format!(
        " Gratuitous ARP lower priority repeat = {}",
        vrrp.garp_lower_prio_repeat.unwrap_or(repeat)
    ));
    line(format!(
        " Num adverts before down = {}",
        vrrp.down_timer_adverts.unwrap_or(3)
    ));
    // global_data.c: "i/f" with `all`, the interval (0 when unset).
    line(format!(
        " Gratuitous ARP for each secondary {} = {}s",
        if vrrp.garp_extra_if.is_some_and(|extra| extra.all) {
            "i/f"
        } else {
            "VMAC"
        },
        vrrp.garp_extra_if.map_or(0, |extra| extra.delay.as_secs())
    ));
    line(format!(
        " Send advert after receive lower priority advert = {}",
        true_false(!vrrp.lower_prio_no_advert.unwrap_or(false))
    ));
    line(format!(
        " Send advert after receive higher priority advert = {}",
        true_false(vrrp.higher_prio_send_advert.unwrap_or(false))
    ));
    line(format!(
        " Gratuitous ARP interval = {:.6}",
        vrrp.garp_interval.unwrap_or_default().as_secs_f64()
    ));
    line(format!(
        " Gratuitous NA interval = {:.6}",
        vrrp.gna_interval.unwrap_or_default().as_secs_f64()
    ));
    line(format!(
        " VRRP default protocol version = {}",
        vrrp.version.unwrap_or(2)
    ));
    if let Some(chains) = &vrrp.iptables
        && let Some(input) = chains.first()
    {
        line(format!(" Iptables input chain = {input}"));
        if let Some(output) = chains.get(1) {
            line(format!(" Iptables output chain = {output}"));
        }
    }
    line(" nftables without counters".to_owned());
    line(format!(" libnftnl version {LIBNFTNL_VERSION}"));
    line(format!(
        " VRRP check unicast_src = {}",
        true_false(vrrp.check_unicast_src)
    ));
    line(format!(
        " VRRP skip check advert addresses = {}",
        true_false(vrrp.skip_check_adv_addr)
    ));
    line(format!(" VRRP strict mode = {}", true_false(vrrp.strict)));
    line(" Max auto priority = 0".to_owned());
    line(" Min auto priority delay = 1000000 usecs".to_owned());
    line(format!(
        " VRRP process priority = {}",
        vrrp.priority.unwrap_or(0)
    ));
    line(format!(" VRRP don't swap = {}", true_false(vrrp.no_swap)));
    for process in ["VRRP", "Checker", "BFD"] {
        if process != "VRRP" {
            line(format!(" {process} process priority = 0"));
            line(format!(" {process} don't swap = false"));
        }
        line(format!(" {process} realtime priority = 0"));
        line(format!(" {process} realtime limit = 10000"));
    }
    for line_text in [
        " SNMP vrrp disabled",
        " SNMP checker disabled",
        " SNMP RFCv2 disabled",
        " SNMP RFCv3 disabled",
        " SNMP traps disabled",
        " SNMP socket = default (unix:/var/agentx/master)",
        " DBus disabled",
        " DBus service name = ",
    ] {
        line(line_text.to_owned());
    }
    line(format!(
        " Script security {}",
        if definitions.enable_script_security {
            "enabled"
        } else {
            "disabled"
        }
    ));
    line(format!(
        " Default script uid:gid {}:{}",
        global.script_account.0, global.script_account.1
    ));
    for name in [
        "vrrp_netlink_cmd_rcv_bufs",
        "vrrp_netlink_monitor_rcv_bufs",
        "process_monitor_rcv_bufs",
        "lvs_netlink_cmd_rcv_bufs",
        "lvs_netlink_monitor_rcv_bufs",
    ] {
        line(format!(" {name} = 0"));
        line(format!(" {name}_force = 0"));
    }
    line(" rs_init_notifies = 0".to_owned());
    line(format!(
        " no_checker_emails = {}",
        u8::from(definitions.no_checker_emails)
    ));
    line(" rx_bufs_multiples = 3".to_owned());
    // keepalived's default umask, which pulse's dumps are written with.
    line(" umask = 0177".to_owned());
    if let Some(delay) = vrrp.startup_delay.filter(|delay| !delay.is_zero()) {
        line(format!(
            " vrrp_startup_delay = {}",
            super::general(delay.as_secs_f64())
        ));
    }
}

/// `dump_vrrp`, with the moment's state.
fn topology(
    text: &mut String,
    instance: &super::InstanceReport,
    data: &InstanceData,
    moment: &InstanceMoment,
    now: (Instant, SystemTime),
) {
    let description = &instance.description;
    let version_3 = description.version == 3;
    let mut line = |line: String| {
        text.push_str(&line);
        text.push('\n');
    };
    line(format!(" VRRP Instance = {}", description.name));
    line(format!("   VRRP Version = {}", description.version));
    if let Some(group) = &data.sync_group {
        line(format!("   Sync group = {group}"));
    }
    if data.ipv6 {
        line("   Using Native IPv6".to_owned());
    }
    line(format!("   State = {}", state_name(instance.state)));
    if instance.state == super::State::Backup {
        let master = moment.master_address.unwrap_or(if data.ipv6 {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        });
        line(format!("   Master router = {master}"));
        line(format!("   Master priority = {}", instance.master_priority));
        if version_3 {
            line(format!(
                "   Master advert int = {:.2} sec",
                instance.master_advert_interval.as_secs_f64()
            ));
        }
    }
    if data.flags {
        line("   Flags:".to_owned());
        if !data.unicast_peers.is_empty() {
            line("     Using unicast".to_owned());
        }
        if data.unicast_fault_no_peer {
            line("     If unicast go to fault state if no peers".to_owned());
        }
    } else {
        line("   Flags: none".to_owned());
    }
    line(format!(
        "   Wantstate = {}",
        state_name(instance.wanted_state)
    ));
    line(format!(
        "   Number of config faults = {}",
        data.configuration_faults
    ));
    // keepalived counts the faults of its interface and tracked objects;
    // pulse's published state says whether there is one.
    line(format!(
        "   Number of interface and track script faults = {}",
        u8::from(instance.state == super::State::Fault)
    ));
    line("   Number of track scripts init = 0".to_owned());
    line(format!(
        "   Last transition = {}",
        clock(instance.last_transition)
    ));
    match moment.read_timeout {
        Some(at) => {
            line(format!("   Read timeout = {}", clock(wall_clock(at, now))));
        }
        None => line("   Read timeout = DISABLED".to_owned()),
    }
    line(format!(
        "   Master down timer = {} usecs",
        moment.master_down_timer.as_micros()
    ));
    match &description.vmac {
        Some(vmac) => {
            line(format!(
                "   Use VMAC, i/f name {}, is_up = true, xmit_base = {}",
                description.interface,
                true_false(vmac.transmit_on_base)
            ));
            if let Some(address) = &vmac.configured_address {
                line(format!("     MAC = {address}"));
            }
            line(format!(
                "   Interface = {}, vmac on {}{}",
                description.interface,
                vmac.base,
                if vmac.transmit_on_base {
                    ", xmit base i/f"
                } else {
                    ""
                }
            ));
        }
        None => line(format!("   Interface = {}", description.interface)),
    }
    if description.dont_track_primary {
        line("   VRRP interface tracking disabled".to_owned());
    }
    if description.skip_check_advert_addresses {
        line("   Skip checking advert IP addresses".to_owned());
    }
    if description.strict {
        line("   Enforcing strict VRRP compliance".to_owned());
    }
    line(format!(
        "   Using src_ip = {}{}",
        moment
            .source_address
            .map_or_else(|| "(none)".to_owned(), |address| address.to_string()),
        if data.configured_source {
            " (from configuration)"
        } else {
            ""
        }
    ));
    if data.unicast_peers.is_empty() {
        if data.ipv6 {
            // keepalived adds the group's scope, its interface's index.
            let index = moment.interface_index;
            line(format!(
                "   Multicast address {}, ifindex {index}",
                data.multicast_group
            ));
        } else {
            line(format!("   Multicast address {}", data.multicast_group));
        }
    }
    line(format!(
        "   Gratuitous ARP delay = {}",
        description.garp_delay.as_secs()
    ));
    line(format!(
        "   Gratuitous ARP repeat = {}",
        description.garp_repeat
    ));
    line(format!(
        "   Gratuitous ARP refresh = {}",
        description.garp_refresh.as_secs()
    ));
    line(format!(
        "   Gratuitous ARP refresh repeat = {}",
        description.garp_refresh_repeat
    ));
    line(format!(
        "   Gratuitous ARP lower priority delay = {}",
        description.garp_lower_priority_delay.as_secs()
    ));
    line(format!(
        "   Gratuitous ARP lower priority repeat = {}",
        description.garp_lower_priority_repeat
    ));
    line(format!(
        "   Down timer adverts = {}",
        data.down_timer_adverts
    ));
    // vrrp_data.c: only where garp_extra_if is in force (with `all`, so
    // "i/f"); the next time is the epoch until it has been master.
    if let Some(interval) = data.garp_extra_interfaces {
        line(format!(
            "   Gratuitous ARP for each secondary i/f = {}",
            interval.as_secs()
        ));
        let (seconds, micros, local, year) = local_time(
            moment
                .extra_interfaces_at
                .map_or(SystemTime::UNIX_EPOCH, |at| wall_clock(at, now)),
        );
        line(format!(
            "   Next gratuitous ARP for such secondary = {seconds}.{micros:06} \
             ({local} {year}.{micros:06})"
        ));
    }
    line(format!(
        "   Send advert after receive lower priority advert = {}",
        true_false(!description.lower_priority_no_advert)
    ));
    line(format!(
        "   Send advert after receive higher priority advert = {}",
        true_false(description.higher_priority_send_advert)
    ));
    line(format!(
        "   Virtual Router ID = {}",
        description.virtual_router_id
    ));
    line(format!("   Priority = {}", description.base_priority));
    line(format!(
        "   Effective priority = {}",
        instance.effective_priority
    ));
    // keepalived's total is the priority and the weights before they are
    // held within 1..=254; pulse keeps the held one.
    line(format!(
        "   Total priority = {}",
        instance.effective_priority
    ));
    if version_3 {
        line(format!(
            "   Advert interval = {} milli-sec",
            description.advert_interval.as_millis()
        ));
        if instance.state == super::State::Backup {
            line(format!(
                "   Master advert interval = {} milli-sec",
                instance.master_advert_interval.as_millis()
            ));
        }
    } else {
        line(format!(
            "   Advert interval = {} sec",
            description.advert_interval.as_secs()
        ));
    }
    line(format!(
        "   Accept = {}",
        if description.accept {
            "enabled"
        } else {
            "disabled"
        }
    ));
    line(format!(
        "   Preempt = {}",
        if description.nopreempt {
            "disabled"
        } else {
            "enabled"
        }
    ));
    if !description.preempt_delay.is_zero() {
        line(format!(
            "   Preempt delay = {} secs",
            super::general(description.preempt_delay.as_secs_f64())
        ));
    }
    line(format!(
        "   Promote_secondaries = {}",
        if data.promote_secondaries {
            "enabled"
        } else {
            "disabled"
        }
    ));
    match &description.authentication {
        (0, _) if !version_3 => line("   Authentication type = none".to_owned()),
        (0, _) => {}
        (_, password) => {
            line("   Authentication type = SIMPLE_PASSWORD".to_owned());
            line(format!(
                "   Password = {}",
                password.as_deref().unwrap_or_default()
            ));
        }
    }
    if data.debug != 0 {
        line(format!("   Debug level = {}", data.debug));
    }
    let set = if instance.addresses_set { " set" } else { "" };
    if !description.virtual_addresses.is_empty() {
        line(format!(
            "   Virtual IP ({}):",
            description.virtual_addresses.len()
        ));
        for address in &description.virtual_addresses {
            line(format!("     {}{set}", address.text));
        }
    }
    if !description.excluded_addresses.is_empty() {
        line("   Virtual IP Excluded :".to_owned());
        for address in &description.excluded_addresses {
            line(format!("     {}{set}", address.text));
        }
    }
    if !data.unicast_peers.is_empty() {
        if let Some(ttl) = data.unicast_ttl {
            line(format!("   Unicast TTL = {ttl}"));
        }
        line(format!(
            "   Check unicast src : {}",
            if data.check_unicast_source {
                "yes"
            } else {
                "no"
            }
        ));
        line("   Unicast Peer :".to_owned());
        for (address, minimum, maximum) in &data.unicast_peers {
            line(format!(
                "     {address} min_ttl {minimum} max_ttl {maximum}"
            ));
        }
        line("   Unicast checksum compatibility = no".to_owned());
    }
    match moment.sockets {
        Some((receive, send)) => line(format!("   fd_in {receive}, fd_out {send}")),
        None => line("   No sockets allocated".to_owned()),
    }
    for (title, tracked) in [
        ("Tracked interfaces", &data.tracked_interfaces),
        ("Tracked scripts", &data.tracked_scripts),
    ] {
        if !tracked.is_empty() {
            line(format!("   {title} :"));
            for object in tracked {
                line(format!(
                    "     {} weight {}{}",
                    object.name,
                    object.weight,
                    if object.reverse { " reverse" } else { "" }
                ));
            }
        }
    }
    line(format!(
        "   Using smtp notification = {}",
        if description.smtp_alert { "yes" } else { "no" }
    ));
    line(format!(
        "   Notify deleted = {}",
        if description.notify_deleted {
            "Deleted"
        } else {
            "Fault"
        }
    ));
    for (name, command, uid, gid) in &data.notify_scripts {
        line(format!(
            "   {name} state transition script = {command}, uid:gid {uid}:{gid}"
        ));
    }
    line(format!(
        "   Notify priority changes = {}",
        true_false(data.notify_priority_changes)
    ));
}

/// `dump_sock_pool`: keepalived shares one pair of sockets among the
/// instances of an interface, family and unicast source; they are listed
/// by VRID (its red-black tree's order).
fn socket_pool(text: &mut String, dump: &Dump<'_>) {
    let mut pool: Vec<PooledSocket> = Vec::new();
    for ((instance, data), moment) in dump
        .report
        .instances
        .iter()
        .zip(&dump.plan.instances)
        .zip(dump.moments)
    {
        let description = &instance.description;
        let unicast_source = if data.unicast_peers.is_empty() {
            None
        } else {
            moment.source_address
        };
        let key = (description.interface.clone(), data.ipv6, unicast_source);
        let member = (description.virtual_router_id, description.name.clone());
        match pool.iter_mut().find(|(existing, _, _)| *existing == key) {
            Some((_, _, members)) => members.push(member),
            None => pool.push((key, moment.sockets, vec![member])),
        }
    }
    text.push_str("------< VRRP Sockpool >------\n");
    for ((interface, ipv6, unicast_source), sockets, mut members) in pool {
        let (receive, send) = sockets.unwrap_or((-1, -1));
        let _ = writeln!(text, " fd_in {receive} fd_out = {send}");
        let _ = writeln!(text, "   Interface = {interface}");
        let _ = writeln!(text, "   Family = {}", if ipv6 { "IPv6" } else { "IPv4" });
        text.push_str("   Protocol = VRRP\n");
        let _ = writeln!(
            text,
            "   Type = {}icast",
            if unicast_source.is_some() {
                "Un"
            } else {
                "Mult"
            }
        );
        if let Some(source) = unicast_source {
            let _ = writeln!(text, "   Address = {source}");
        }
        text.push_str("   Rx buf size = 0\n");
        text.push_str("   VRRP instances\n");
        members.sort_by_key(|(virtual_router_id, _)| *virtual_router_id);
        for (virtual_router_id, name) in members {
            let _ = writeln!(text, "     {name} vrid {virtual_router_id}");
        }
    }
}

/// `dump_vscript`. keepalived's `result` counts towards `rise` and
/// `fall`; pulse keeps the verdict, from which the settled count is
/// written (`rise + fall - 1` up, 0 down, `rise - 1` before the first
/// unless `init_fail`).
fn vrrp_script(text: &mut String, script: &ScriptData, succeeding: Option<bool>) {
    let rise = i64::from(script.rise);
    let fall = i64::from(script.fall);
    let result = match succeeding {
        Some(true) => rise + fall - 1,
        Some(false) => 0,
        None if script.init_fail => 0,
        None => rise - 1,
    };
    let _ = writeln!(text, " VRRP Script = {}", script.name);
    let _ = writeln!(text, "   Command = {}", script.command);
    let _ = writeln!(text, "   Interval = {} sec", script.interval.as_secs());
    let _ = writeln!(text, "   Timeout = {} sec", script.timeout.as_secs());
    let _ = writeln!(
        text,
        "   Weight = {}{}",
        script.weight,
        if script.reverse { " reverse" } else { "" }
    );
    let _ = writeln!(text, "   Rise = {rise}");
    let _ = writeln!(text, "   Fall = {fall}");
    let _ = writeln!(text, "   Result = {result}");
    text.push_str("   Insecure = no\n");
    // keepalived's init state is INIT until the first result, then
    // "unknown" (its SCRIPT_INIT_STATE_DONE has no name).
    let _ = writeln!(
        text,
        "   Init state = {}",
        match succeeding {
            None if script.init_fail => "INIT/FAILED",
            None => "INIT",
            Some(_) => "unknown",
        }
    );
    let _ = writeln!(
        text,
        "   Status = {}",
        if result >= rise { "GOOD" } else { "BAD" }
    );
    let _ = writeln!(
        text,
        "   Script uid:gid = {}:{}",
        script.account.0, script.account.1
    );
    text.push_str("   VRRP instances :\n");
    if !script.tracking.is_empty() {
        text.push_str("   Tracking instances :\n");
        for (instance, weight, reverse) in &script.tracking {
            let _ = writeln!(
                text,
                "     {instance}, weight {weight}{}",
                if *reverse { " reverse" } else { "" }
            );
        }
    }
    text.push_str("   State = idle\n");
}

/// Each interface's tracking instances, `(interface, [(instance, weight,
/// reverse)])`, in the order keepalived adds them: per instance, its
/// tracked interfaces, then its own, then those of its addresses.
fn interface_tracking(dump: &Dump<'_>) -> InterfaceTracking {
    let mut tracking: InterfaceTracking = Vec::new();
    let mut add = |interface: &str, instance: &str, weight: i32, reverse: bool| {
        let position = match tracking.iter().position(|(name, _)| name == interface) {
            Some(position) => position,
            None => {
                tracking.push((interface.to_owned(), Vec::new()));
                tracking.len() - 1
            }
        };
        let list = &mut tracking[position].1;
        if !list.iter().any(|(name, _, _)| name == instance) {
            list.push((instance.to_owned(), weight, reverse));
        }
    };
    for (instance, data) in dump.report.instances.iter().zip(&dump.plan.instances) {
        let description = &instance.description;
        for tracked in &data.tracked_interfaces {
            if tracked.name != description.interface {
                add(
                    &tracked.name,
                    &description.name,
                    tracked.weight,
                    tracked.reverse,
                );
            }
        }
        let own_weight = if description.dont_track_primary {
            NOT_TRACKED
        } else {
            0
        };
        add(&description.interface, &description.name, own_weight, false);
        for interface in &data.address_interfaces {
            add(interface, &description.name, 0, false);
        }
    }
    tracking
}

/// `dump_if`, as Debian's build has it (VMAC, linkbeat).
fn interface(
    text: &mut String,
    link: &Link,
    tracking: &InterfaceTracking,
    pace: Option<&PaceReport>,
) {
    let flag = |bit: libc::c_int| link.flags & bit as u32 != 0;
    let _ = writeln!(text, " Name = {}", link.name);
    let _ = writeln!(text, "   index = {}", link.index);
    match link.ipv4.split_first() {
        Some((first, rest)) => {
            let _ = writeln!(text, "   IPv4 address = {first}");
            if !rest.is_empty() {
                text.push_str("   Additional IPv4 addresses :\n");
                for address in rest {
                    let _ = writeln!(text, "     {address}");
                }
            }
        }
        None => text.push_str("   IPv4 address = (none)\n"),
    }
    match link.ipv6.split_first() {
        Some((first, rest)) => {
            let _ = writeln!(text, "   IPv6 address = {first}");
            if !rest.is_empty() {
                text.push_str("   Additional IPv6 addresses :\n");
                for address in rest {
                    let _ = writeln!(text, "     {address}");
                }
            }
        }
        None => text.push_str("   IPv6 address = (none)\n"),
    }
    if !link.hardware_address.is_empty() {
        let _ = writeln!(text, "   MAC = {}", mac(&link.hardware_address));
        let _ = writeln!(text, "   MAC broadcast = {}", mac(&link.broadcast_address));
    }
    let up = flag(libc::IFF_UP);
    let running = flag(libc::IFF_RUNNING);
    let _ = writeln!(
        text,
        "   State = {}UP, {}RUNNING{}{}{}{}{}",
        if up { "" } else { "not " },
        if running { "" } else { "not " },
        if flag(libc::IFF_BROADCAST) {
            ""
        } else {
            ", no broadcast"
        },
        if flag(libc::IFF_LOOPBACK) {
            ", loopback"
        } else {
            ""
        },
        if flag(libc::IFF_POINTOPOINT) {
            ", point to point"
        } else {
            ""
        },
        if flag(libc::IFF_NOARP) {
            ", no arp"
        } else {
            ""
        },
        if flag(libc::IFF_MULTICAST) {
            ""
        } else {
            ", no multicast"
        },
    );
    // keepalived remembers whether it ever saw the link up; pulse reads
    // the link as it is.
    let _ = writeln!(text, "   Seen up = {}", u8::from(up && running));
    text.push_str("   Delayed state change running = false\n");
    text.push_str("   Up debounce timer = 0us\n");
    text.push_str("   Down debounce timer = 0us\n");
    let _ = writeln!(text, "   MTU = {}", link.mtu);
    match link.hardware_type {
        libc::ARPHRD_LOOPBACK => text.push_str("   HW Type = LOOPBACK\n"),
        libc::ARPHRD_ETHER => text.push_str("   HW Type = ETHERNET\n"),
        // keepalived logs this one instead of writing it.
        libc::ARPHRD_INFINIBAND => {}
        other => {
            let _ = writeln!(text, "   HW Type = UNKNOWN ({other})");
        }
    }
    text.push_str("   NIC netlink status update\n");
    if let Some(pace) = pace {
        if let Some(interval) = pace.intervals.arp {
            let _ = writeln!(
                text,
                "   Gratuitous ARP interval {}ms",
                interval.as_millis()
            );
        }
        if let Some(interval) = pace.intervals.neighbour {
            let _ = writeln!(text, "   Gratuitous NA interval {}ms", interval.as_millis());
        }
        if pace.aggregation_group != 0 {
            let _ = writeln!(
                text,
                "   Gratuitous ARP aggregation group {}",
                pace.aggregation_group
            );
        }
    }
    text.push_str("   Reset ARP config counter 0\n");
    text.push_str("   Original arp_ignore 0\n");
    text.push_str("   Original arp_filter 0\n");
    text.push_str("   Original promote_secondaries 0\n");
    text.push_str("   Reset promote_secondaries counter 0\n");
    if let Some((_, instances)) = tracking.iter().find(|(name, _)| *name == link.name) {
        text.push_str("   Tracking VRRP instances :\n");
        for (instance, weight, reverse) in instances {
            let _ = writeln!(
                text,
                "     {instance}, weight {weight}{}",
                if *reverse { " reverse" } else { "" }
            );
        }
    }
}

/// keepalived's `format_mac_buf`: lower-case hex pairs joined by colons.
fn mac(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// vrrp_if.c `dump_garp_delay`: one pace, its interfaces in the links'
/// order.
fn garp_delay(text: &mut String, pace: &PaceReport, dump: &Dump<'_>) {
    let _ = writeln!(
        text,
        "------< GARP delay group {} >------",
        pace.aggregation_group
    );
    let next = |at: Option<Instant>| {
        let (seconds, micros, local, _) =
            local_time(at.map_or(SystemTime::UNIX_EPOCH, |at| wall_clock(at, dump.now)));
        format!("{seconds}.{micros:06} ({local}.{micros:06})")
    };
    if let Some(interval) = pace.intervals.arp {
        let _ = writeln!(text, " GARP interval = {}", general(interval.as_secs_f64()));
        let _ = writeln!(text, " GARP next time {}", next(pace.next_arp));
    }
    if let Some(interval) = pace.intervals.neighbour {
        let _ = writeln!(text, " GNA interval = {}", general(interval.as_secs_f64()));
        let _ = writeln!(text, " GNA next time {}", next(pace.next_neighbour));
    } else if pace.intervals.arp.is_none() {
        text.push_str(" No configuration\n");
    }
    text.push_str(" Interfaces\n");
    for link in dump.links {
        if pace.interfaces.contains(&link.name) {
            let _ = writeln!(text, "  {}", link.name);
        }
    }
}

/// `instant` on the wall clock, from the same moment on both (`now`).
fn wall_clock(instant: Instant, now: (Instant, SystemTime)) -> SystemTime {
    let (now_instant, now_wall) = now;
    if instant >= now_instant {
        now_wall + (instant - now_instant)
    } else {
        now_wall - (now_instant - instant)
    }
}

/// A number as C's printf `%g` writes it: six significant digits, no
/// trailing zeros (for the values an interval or a delay takes, without
/// an exponent).
pub fn general(value: f64) -> String {
    let digits_before_point = if value >= 1.0 {
        value.log10().floor() as i32 + 1
    } else {
        1
    };
    let decimals = (6 - digits_before_point).max(0) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// `time` as seconds and microseconds since the epoch, the local time as
/// `ctime` writes it up to the seconds (`%.19s`), and the year.
fn local_time(time: SystemTime) -> (libc::time_t, u32, String, i32) {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let since = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = since.as_secs() as libc::time_t;
    let micros = since.subsec_micros();
    // SAFETY: localtime_r writes the zeroed tm it is given and reads the
    // time given; both live through the call.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&seconds, &mut tm);
        tm
    };
    let local = format!(
        "{} {}{:3} {:02}:{:02}:{:02}",
        DAYS[tm.tm_wday.rem_euclid(7) as usize],
        MONTHS[tm.tm_mon.rem_euclid(12) as usize],
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
    );
    (seconds, micros, local, tm.tm_year + 1900)
}

/// keepalived's `%ld.%6.6ld (ctime_us_r)`: the seconds and microseconds
/// since the epoch, then the local time as `asctime` writes it with the
/// microseconds after the seconds.
fn clock(time: SystemTime) -> String {
    let (seconds, micros, local, year) = local_time(time);
    format!("{seconds}.{micros:06} ({local}.{micros:06} {year})")
}

#[cfg(test)]
mod tests;
