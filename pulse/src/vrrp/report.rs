//! What the VRRP task publishes about itself, and keepalived's JSON dump
//! of it.
//!
//! Rules:
//! - **One value, published.** The task sends a [`Report`] on a `watch`
//!   channel whenever a state, a priority, a counter or a script's result
//!   changed; the dumps (`keepalived.json`, `keepalived.stats`) and
//!   `/metrics` read the latest one. No reader asks the task anything, and
//!   none keeps a copy of its own.
//! - **What the configuration says is built once.** A [`Description`] per
//!   instance is made when a plan starts (or a reload replaces it) and
//!   shared by every report; a report adds only what moves.
//! - **keepalived's bytes.** [`keepalived_json`] writes what keepalived
//!   2.2.7's `vrrp_print_json` writes (vrrp_json.c, json_writer.c): the
//!   same fields in the same order, a field left out where keepalived
//!   leaves it out, `%g` for its floats, `%f` for `last_transition`, and
//!   its string escapes, including the quirk that writes a backslash as
//!   `\n`. Exporters parse this file; a difference is theirs to trip on.
//!   `json_version 2` wraps the same array as keepalived 2.2.8 does.
//!   `keepalived.data` is [`data`]'s; where each dump goes is
//!   [`location`]'s.

pub mod data;
pub mod location;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fulcrum_config::model as config;

use super::machine::{State, Statistics};
use super::plan::{InstancePlan, Plan};
use super::settings::AuthenticationSettings;

/// The VRRP part's state, as last published.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// In the configuration's order.
    pub instances: Vec<InstanceReport>,
    /// The tracked `vrrp_script`s, in the configuration's order.
    pub scripts: Vec<ScriptReport>,
    /// The `vrrp_track_process`es, in the configuration's order, for
    /// json_version 2: none until pulse tracks processes.
    pub processes: Vec<ProcessReport>,
}

/// One instance: what the configuration says and what moves.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceReport {
    pub description: Arc<Description>,
    pub state: State,
    /// keepalived's `wantstate`: MASTER for a sync group member waiting
    /// for the others, else its state.
    pub wanted_state: State,
    /// The priority after the tracking weights.
    pub effective_priority: u8,
    /// The priority of the master heard last; 0 before any.
    pub master_priority: u8,
    pub master_advert_interval: Duration,
    pub last_transition: SystemTime,
    /// Whether its virtual addresses are on their interfaces.
    pub addresses_set: bool,
    pub statistics: Statistics,
}

/// A tracked `vrrp_script`: its name and its last result (`None` before
/// the first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptReport {
    pub name: String,
    pub succeeding: Option<bool>,
}

/// A `vrrp_track_process`: what keepalived's `vrrp_json_vprocess_dump`
/// writes of it in json_version 2's `track_process` array (vrrp_json.c,
/// the same from 2.2.8 to 2.4.3), from its configuration and its count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessReport {
    /// The block's name (`vrrp_track_process NAME`): keepalived's
    /// `process` field.
    pub name: String,
    /// The words after the path in `process PATH [PARAMETER...]`, written
    /// joined by spaces; the field is left out without any.
    pub parameters: Vec<String>,
    pub parameter_match: ParameterMatch,
    /// `quorum`: keepalived's `min_processes`.
    pub quorum: u32,
    /// `quorum_max`: keepalived's `max_processes`, left out without a
    /// maximum.
    pub quorum_max: Option<u32>,
    /// How many matching processes run.
    pub current_processes: u32,
    pub have_quorum: bool,
    /// `weight N [reverse]`: written negated when reversed.
    pub weight: i32,
    pub weight_reverse: bool,
    pub terminate_delay: Duration,
    pub fork_delay: Duration,
    /// A fork or a termination being waited out (`fork_delay`,
    /// `terminate_delay`).
    pub fork_delay_timer_running: bool,
    pub terminate_delay_timer_running: bool,
    /// Matched against the whole command line (`full_command`, or
    /// parameters given).
    pub full_command: bool,
}

/// `param_match`: how a process's parameters are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParameterMatch {
    /// No parameters given.
    None,
    Exact,
    Partial,
    Initial,
}

impl ParameterMatch {
    /// keepalived's word for it.
    fn name(self) -> &'static str {
        match self {
            ParameterMatch::None => "none",
            ParameterMatch::Exact => "exact",
            ParameterMatch::Partial => "partial",
            ParameterMatch::Initial => "initial",
        }
    }
}

/// `json_version` (keepalived 2.2.8): keepalived.json's shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum JsonVersion {
    /// The instances' array: keepalived's default, and 2.2.7's only shape.
    #[default]
    One,
    /// `{"vrrp":[the same array]}`, with `"track_process":[...]` after the
    /// array when processes are tracked.
    Two,
}

impl JsonVersion {
    /// The configuration's: 1 unless `json_version 2`.
    pub fn of(global: &config::GlobalDefs) -> JsonVersion {
        match global.json_version {
            Some(2) => JsonVersion::Two,
            _ => JsonVersion::One,
        }
    }
}

/// What an instance's configuration says, resolved as keepalived resolves
/// it.
#[derive(Debug, Clone, PartialEq)]
pub struct Description {
    pub name: String,
    /// The interface it runs on: its macvlan with `use_vmac`.
    pub interface: String,
    /// `use_vmac`: the base interface, whether adverts go on it
    /// (`vmac_xmit_base`), and the configured MAC address as keepalived
    /// prints it.
    pub vmac: Option<VmacDescription>,
    pub virtual_router_id: u8,
    pub version: u8,
    pub base_priority: u8,
    pub dont_track_primary: bool,
    pub skip_check_advert_addresses: bool,
    pub strict: bool,
    pub accept: bool,
    pub nopreempt: bool,
    pub preempt_delay: Duration,
    pub advert_interval: Duration,
    pub garp_delay: Duration,
    pub garp_repeat: u32,
    pub garp_refresh: Duration,
    pub garp_refresh_repeat: u32,
    pub garp_lower_priority_delay: Duration,
    pub garp_lower_priority_repeat: u32,
    pub lower_priority_no_advert: bool,
    pub higher_priority_send_advert: bool,
    pub smtp_alert: bool,
    pub notify_deleted: bool,
    /// `(keepalived's field, the command as keepalived prints it)`, in
    /// keepalived's order.
    pub notify_scripts: Vec<(&'static str, String)>,
    pub virtual_addresses: Vec<Address>,
    pub excluded_addresses: Vec<Address>,
    pub tracked_interfaces: Vec<String>,
    /// The commands of the tracked scripts.
    pub tracked_scripts: Vec<String>,
    /// 0 none, 1 PASS (keepalived's `auth_type`), with the password.
    pub authentication: (u8, Option<String>),
}

/// An instance's macvlan, as keepalived's dumps print it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmacDescription {
    pub base: String,
    pub transmit_on_base: bool,
    /// `MAC = ...`, with ` (using VRID)` for five octets; `None` when not
    /// configured.
    pub configured_address: Option<String>,
}

/// A virtual address as keepalived's `format_ipaddress` prints it, but for
/// its trailing " set", which depends on the moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub text: String,
}

impl Description {
    pub fn of(plan: &Plan, instance: &InstancePlan) -> Description {
        let model = &instance.model;
        let settings = &instance.settings;
        let global = &plan.configuration.global;
        let command =
            |script: &config::Script| fulcrum_scripts::security::quoted_command(&script.argv);
        let notify = &model.notify;
        let notify_scripts = [
            ("script_backup", notify.backup.as_ref()),
            ("script_master", notify.master.as_ref()),
            ("script_fault", notify.fault.as_ref()),
            ("script_stop", notify.stop.as_ref()),
            (
                "script_deleted",
                notify.deleted.as_ref().and_then(Option::as_ref),
            ),
            ("script", notify.any.as_ref()),
            (
                "script_master_rx_lower_pri",
                notify.master_rx_lower_priority.as_ref(),
            ),
        ]
        .into_iter()
        .filter_map(|(field, script)| script.map(|script| (field, command(script))))
        .collect();
        // With use_vmac an address of the instance's family on its
        // interface is on the macvlan, which keepalived prints with its
        // base: `dev vrrp.51@eth0`.
        let address = |written: &config::VirtualAddress| {
            let own = written
                .device
                .as_ref()
                .is_none_or(|device| *device == instance.interface);
            let interface = match &instance.vmac {
                Some(vmac)
                    if own
                        && super::packet::Family::of(&written.address.address)
                            == settings.family =>
                {
                    format!("{}@{}", vmac.name, instance.interface)
                }
                _ => instance.interface.clone(),
            };
            let mut written = written.clone();
            if own {
                written.device = None;
            }
            Address {
                text: format_address(&written, &interface),
            }
        };
        let vmac = instance.vmac.as_ref().map(|vmac| VmacDescription {
            base: instance.interface.clone(),
            transmit_on_base: vmac.transmit_on_base,
            configured_address: model
                .use_vmac
                .as_ref()
                .and_then(|written| written.address)
                .map(|address| {
                    let [a, b, c, d, e, f] = vmac.address;
                    let using_vrid = matches!(address, config::VmacAddress::WithVrid(_));
                    format!(
                        "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{f:02x}{}",
                        if using_vrid { " (using VRID)" } else { "" }
                    )
                }),
        });
        let tracked_scripts = instance
            .tracked
            .scripts
            .iter()
            .map(|tracked| {
                plan.scripts
                    .iter()
                    .find(|script| script.name == tracked.name)
                    .and_then(|script| script.script.as_ref())
                    .map(command)
                    .unwrap_or_default()
            })
            .collect();
        Description {
            name: settings.name.clone(),
            interface: instance
                .vmac
                .as_ref()
                .map_or_else(|| instance.interface.clone(), |vmac| vmac.name.clone()),
            vmac,
            virtual_router_id: settings.virtual_router_id,
            version: settings.version.number(),
            base_priority: settings.priority,
            dont_track_primary: model.dont_track_primary,
            skip_check_advert_addresses: settings.skip_check_advert_addresses,
            strict: settings.strict,
            accept: settings.accept,
            nopreempt: !settings.preempt,
            preempt_delay: settings.preempt_delay,
            advert_interval: settings.advert_interval,
            garp_delay: settings.garp.master_delay,
            garp_repeat: settings.garp.master_repeat,
            garp_refresh: settings.garp.master_refresh.unwrap_or_default(),
            garp_refresh_repeat: settings.garp.master_refresh_repeat,
            garp_lower_priority_delay: settings.garp.lower_priority_delay,
            garp_lower_priority_repeat: settings.garp.lower_priority_repeat,
            lower_priority_no_advert: settings.lower_priority_no_advert,
            higher_priority_send_advert: settings.higher_priority_send_advert,
            smtp_alert: model
                .smtp_alert
                .or(global.smtp_alert_vrrp)
                .or(global.smtp_alert)
                .unwrap_or(false),
            notify_deleted: notify.deleted.is_some(),
            notify_scripts,
            virtual_addresses: model.virtual_addresses.iter().map(address).collect(),
            excluded_addresses: model.excluded_addresses.iter().map(address).collect(),
            tracked_interfaces: instance
                .tracked
                .links
                .iter()
                .map(|tracked| tracked.name.clone())
                .collect(),
            tracked_scripts,
            authentication: match &settings.authentication {
                AuthenticationSettings::None => (0, None),
                AuthenticationSettings::Password(bytes) => {
                    let end = bytes
                        .iter()
                        .position(|byte| *byte == 0)
                        .unwrap_or(bytes.len());
                    (1, Some(String::from_utf8_lossy(&bytes[..end]).into_owned()))
                }
            },
        }
    }
}

#[cfg(test)]
impl Description {
    /// Tests: an instance on eth0 with keepalived's defaults, version 2,
    /// no address, no script.
    pub fn example(name: &str, virtual_router_id: u8, base_priority: u8) -> Description {
        Description {
            name: name.to_owned(),
            interface: "eth0".to_owned(),
            vmac: None,
            virtual_router_id,
            version: 2,
            base_priority,
            dont_track_primary: false,
            skip_check_advert_addresses: false,
            strict: false,
            accept: true,
            nopreempt: false,
            preempt_delay: Duration::ZERO,
            advert_interval: Duration::from_secs(1),
            garp_delay: Duration::from_secs(5),
            garp_repeat: 5,
            garp_refresh: Duration::ZERO,
            garp_refresh_repeat: 1,
            garp_lower_priority_delay: Duration::from_secs(5),
            garp_lower_priority_repeat: 5,
            lower_priority_no_advert: false,
            higher_priority_send_advert: false,
            smtp_alert: false,
            notify_deleted: false,
            notify_scripts: Vec::new(),
            virtual_addresses: Vec::new(),
            excluded_addresses: Vec::new(),
            tracked_interfaces: Vec::new(),
            tracked_scripts: Vec::new(),
            authentication: (0, None),
        }
    }
}

/// keepalived's state numbers (vrrp.h): what its dumps and the exporters'
/// `keepalived_vrrp_state` carry.
pub fn state_number(state: State) -> u8 {
    match state {
        State::Initialize => 0,
        State::Backup => 1,
        State::Master => 2,
        State::Fault => 3,
    }
}

/// keepalived's names of its states, as its data dump and the exporters
/// write them.
pub fn state_name(state: State) -> &'static str {
    match state {
        State::Initialize => "INIT",
        State::Backup => "BACKUP",
        State::Master => "MASTER",
        State::Fault => "FAULT",
    }
}

/// A virtual address as keepalived 2.2.7's `format_ipaddress` writes it
/// (vrrp_ipaddress.c), without the trailing " set": the address, its
/// prefix unless a host's (or a peer is given), `brd`, `dev` (the
/// instance's interface unless written), `scope`, `label`, `peer`, the
/// flags, `no_track`, `track_group`, and an IPv6 address's preferred
/// lifetime (a /128 without `preferred_lft` is deprecated, as keepalived
/// gives it 0).
pub fn format_address(written: &config::VirtualAddress, interface: &str) -> String {
    let prefix = written.address;
    let full = if prefix.address.is_ipv6() { 128 } else { 32 };
    let mut text = prefix.address.to_string();
    if written.peer.is_none() && prefix.length != full {
        text.push_str(&format!("/{}", prefix.length));
    }
    if let Some(IpAddr::V4(broadcast)) = written.broadcast {
        text.push_str(&format!(" brd {broadcast}"));
    }
    text.push_str(&format!(
        " dev {}",
        written.device.as_deref().unwrap_or(interface)
    ));
    if written.use_vmac {
        text.push_str(" use_vmac");
    }
    text.push_str(&format!(" scope {}", scope_name(written.scope)));
    if let Some(label) = &written.label {
        text.push_str(&format!(" label {label}"));
    }
    if let Some(peer) = &written.peer {
        text.push_str(&format!(" peer {}/{}", peer.address, peer.length));
    }
    for (set, word) in [
        (written.home, " home"),
        (written.no_dad, " -nodad"),
        (written.manage_temporary_address, " mngtmpaddr"),
        (written.no_prefix_route, " noprefixroute"),
        (written.autojoin, " autojoin"),
        (written.no_track, " no_track"),
    ] {
        if set {
            text.push_str(word);
        }
    }
    if let Some(group) = &written.track_group {
        text.push_str(&format!(" track_group {group}"));
    }
    if prefix.address.is_ipv6() {
        match written.preferred_lifetime {
            Some(None) => text.push_str(" preferred_lft forever"),
            Some(Some(0)) => text.push_str(" deprecated"),
            Some(Some(seconds)) => text.push_str(&format!(" preferred_lft {seconds}")),
            None if prefix.length == 128 => text.push_str(" deprecated"),
            None => text.push_str(" preferred_lft forever"),
        }
    }
    text
}

/// The names of /etc/iproute2/rt_scopes that keepalived prints.
fn scope_name(scope: config::Scope) -> String {
    match scope {
        config::Scope::Global | config::Scope::Number(0) => "global".to_owned(),
        config::Scope::Site | config::Scope::Number(200) => "site".to_owned(),
        config::Scope::Link | config::Scope::Number(253) => "link".to_owned(),
        config::Scope::Host | config::Scope::Number(254) => "host".to_owned(),
        config::Scope::Nowhere | config::Scope::Number(255) => "nowhere".to_owned(),
        config::Scope::Number(number) => number.to_string(),
    }
}

/// keepalived's `keepalived.json`, on one line ending in a newline: in
/// `version` 1 (2.2.7's only one) an array of `{"data":{...},"stats":{...}}`,
/// one per instance; in version 2 that array under "vrrp", followed by the
/// tracked processes under "track_process" if there are any, as
/// keepalived 2.2.8's `vrrp_json_dump`.
pub fn keepalived_json(report: &Report, version: JsonVersion) -> String {
    let mut json = Json::default();
    if version == JsonVersion::Two {
        json.start_object();
        json.name("vrrp");
    }
    json.start_array();
    for instance in &report.instances {
        json.start_object();
        json.name("data");
        json.start_object();
        data(&mut json, instance);
        json.end_object();
        json.name("stats");
        json.start_object();
        stats(&mut json, &instance.statistics);
        json.end_object();
        json.end_object();
    }
    json.end_array();
    if version == JsonVersion::Two {
        if !report.processes.is_empty() {
            json.name("track_process");
            json.start_array();
            for process in &report.processes {
                tracked_process(&mut json, process);
            }
            json.end_array();
        }
        json.end_object();
    }
    json.text.push('\n');
    json.text
}

fn data(json: &mut Json, instance: &InstanceReport) {
    let description = &instance.description;
    let flag = |set: bool| u64::from(set);
    json.string("iname", &description.name);
    json.unsigned("dont_track_primary", flag(description.dont_track_primary));
    json.unsigned(
        "skip_check_adv_addr",
        flag(description.skip_check_advert_addresses),
    );
    json.unsigned("strict_mode", flag(description.strict));
    // keepalived's build has VMAC support: the name is there, empty
    // without use_vmac.
    json.string(
        "vmac_ifname",
        if description.vmac.is_some() {
            &description.interface
        } else {
            ""
        },
    );
    json.string("ifp_ifname", &description.interface);
    json.unsigned("master_priority", u64::from(instance.master_priority));
    json.raw(
        "last_transition",
        &format!("{:.6}", seconds(instance.last_transition)),
    );
    json.raw("garp_delay", &general(description.garp_delay.as_secs_f64()));
    json.unsigned("garp_refresh", description.garp_refresh.as_secs());
    json.unsigned("garp_rep", u64::from(description.garp_repeat));
    json.unsigned(
        "garp_refresh_rep",
        u64::from(description.garp_refresh_repeat),
    );
    json.unsigned(
        "garp_lower_prio_delay",
        description.garp_lower_priority_delay.as_secs(),
    );
    json.unsigned(
        "garp_lower_prio_rep",
        u64::from(description.garp_lower_priority_repeat),
    );
    json.unsigned(
        "lower_prio_no_advert",
        flag(description.lower_priority_no_advert),
    );
    json.unsigned(
        "higher_prio_send_advert",
        flag(description.higher_priority_send_advert),
    );
    json.unsigned("vrid", u64::from(description.virtual_router_id));
    json.unsigned("base_priority", u64::from(description.base_priority));
    json.unsigned("effective_priority", u64::from(instance.effective_priority));
    json.boolean("vipset", instance.addresses_set);
    // promote_secondaries is not acted on yet: never set.
    json.boolean("promote_secondaries", false);
    json.raw(
        "adver_int",
        &general(description.advert_interval.as_secs_f64()),
    );
    json.raw(
        "master_adver_int",
        &general(instance.master_advert_interval.as_secs_f64()),
    );
    json.unsigned("accept", flag(description.accept));
    json.boolean("nopreempt", description.nopreempt);
    json.unsigned("preempt_delay", description.preempt_delay.as_secs());
    json.unsigned("state", u64::from(state_number(instance.state)));
    json.unsigned("wantstate", u64::from(state_number(instance.wanted_state)));
    json.unsigned("version", u64::from(description.version));
    json.boolean("smtp_alert", description.smtp_alert);
    json.boolean("notify_deleted", description.notify_deleted);
    for (field, command) in &description.notify_scripts {
        json.string(field, command);
    }
    let set = if instance.addresses_set { " set" } else { "" };
    let addresses = |addresses: &[Address]| -> Vec<String> {
        addresses
            .iter()
            .map(|address| format!("{}{set}", address.text))
            .collect()
    };
    json.array("vips", &addresses(&description.virtual_addresses));
    json.array("evips", &addresses(&description.excluded_addresses));
    json.array("track_ifp", &description.tracked_interfaces);
    json.array("track_script", &description.tracked_scripts);
    json.unsigned("auth_type", u64::from(description.authentication.0));
    if let Some(password) = &description.authentication.1 {
        json.string("auth_data", password);
    }
}

fn stats(json: &mut Json, statistics: &Statistics) {
    for (field, value) in statistics.keepalived_counters() {
        json.unsigned(field, value);
    }
}

/// keepalived's `vrrp_json_vprocess_dump`.
fn tracked_process(json: &mut Json, process: &ProcessReport) {
    json.start_object();
    json.string("process", &process.name);
    if !process.parameters.is_empty() {
        json.string("parameters", &process.parameters.join(" "));
    }
    json.string("param_match", process.parameter_match.name());
    json.unsigned("min_processes", u64::from(process.quorum));
    if let Some(maximum) = process.quorum_max {
        json.unsigned("max_processes", u64::from(maximum));
    }
    json.unsigned("current_processes", u64::from(process.current_processes));
    json.boolean("have_quorum", process.have_quorum);
    let weight = if process.weight_reverse {
        -i64::from(process.weight)
    } else {
        i64::from(process.weight)
    };
    json.raw("weight", &weight.to_string());
    json.raw(
        "terminate_delay",
        &general(process.terminate_delay.as_secs_f64()),
    );
    json.raw("fork_delay", &general(process.fork_delay.as_secs_f64()));
    json.boolean("fork_delay_timer_running", process.fork_delay_timer_running);
    json.boolean(
        "terminate_delay_timer_running",
        process.terminate_delay_timer_running,
    );
    json.boolean("full_command", process.full_command);
    json.end_object();
}

/// Seconds since the epoch, as keepalived's `timeval_to_double` computes
/// them: whole microseconds (a timeval), the seconds plus the
/// microseconds over a million, in a double, so that `%f` prints the same
/// six decimals.
fn seconds(time: SystemTime) -> f64 {
    let since = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    since.as_secs() as f64 + f64::from(since.subsec_micros()) / 1_000_000.0
}

/// C's `%g`: six significant digits, trailing zeros (and a trailing
/// point) dropped; the exponent form (`1e-06`, `1.5e+07`: a sign and at
/// least two digits) when the exponent, after rounding to six digits, is
/// below -4 or above 5.
fn general(value: f64) -> String {
    const SIGNIFICANT: i32 = 6;
    if value == 0.0 {
        return "0".to_owned();
    }
    if !value.is_finite() {
        return if value.is_nan() {
            "nan".to_owned()
        } else if value > 0.0 {
            "inf".to_owned()
        } else {
            "-inf".to_owned()
        };
    }
    // The exponent `%e` would print, rounding included (999999.5 is
    // 1e+06).
    let scientific = format!("{:.*e}", (SIGNIFICANT - 1) as usize, value);
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("Rust's {:e} has an exponent");
    let exponent: i32 = exponent.parse().expect("Rust's exponent is a number");
    if (-4..SIGNIFICANT).contains(&exponent) {
        let decimals = (SIGNIFICANT - 1 - exponent) as usize;
        without_trailing_zeros(&format!("{value:.decimals$}")).to_owned()
    } else {
        format!(
            "{}e{}{:02}",
            without_trailing_zeros(mantissa),
            if exponent < 0 { '-' } else { '+' },
            exponent.abs()
        )
    }
}

/// `%g`'s trim: the zeros ending a fraction, then its point.
fn without_trailing_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// keepalived's streaming JSON writer (json_writer.c, iproute2's), not
/// pretty-printed: one separator for the whole document, as it has.
#[derive(Default)]
struct Json {
    text: String,
    /// Whether a comma goes before the next value or name (its `sep`).
    separator: bool,
}

impl Json {
    /// `jsonw_eor`: the comma owed, if any; one is owed after anything.
    fn end_of_record(&mut self) {
        if self.separator {
            self.text.push(',');
        }
        self.separator = true;
    }

    fn begin(&mut self, opening: char) {
        self.end_of_record();
        self.text.push(opening);
        self.separator = false;
    }

    fn end(&mut self, closing: char) {
        self.text.push(closing);
        self.separator = true;
    }

    fn start_object(&mut self) {
        self.begin('{');
    }

    fn end_object(&mut self) {
        self.end('}');
    }

    fn start_array(&mut self) {
        self.begin('[');
    }

    fn end_array(&mut self) {
        self.end(']');
    }

    fn name(&mut self, name: &str) {
        self.end_of_record();
        self.separator = false;
        self.quoted(name);
        self.text.push(':');
    }

    /// A value as printed (a number, `true`): `jsonw_printf`.
    fn value(&mut self, text: &str) {
        self.end_of_record();
        self.text.push_str(text);
    }

    fn raw(&mut self, name: &str, value: &str) {
        self.name(name);
        self.value(value);
    }

    fn unsigned(&mut self, name: &str, value: u64) {
        self.raw(name, &value.to_string());
    }

    fn boolean(&mut self, name: &str, value: bool) {
        self.raw(name, if value { "true" } else { "false" });
    }

    fn string(&mut self, name: &str, value: &str) {
        self.name(name);
        self.string_value(value);
    }

    fn string_value(&mut self, value: &str) {
        self.end_of_record();
        self.quoted(value);
    }

    /// Left out when empty, as keepalived's `vrrp_json_array_dump`.
    fn array(&mut self, name: &str, values: &[String]) {
        if values.is_empty() {
            return;
        }
        self.name(name);
        self.start_array();
        for value in values {
            self.string_value(value);
        }
        self.end_array();
    }

    /// keepalived's `jsonw_puts`: C escapes and `\/`; a backslash comes
    /// out as `\n` (its copy of iproute2's writer has that typo, fixed in
    /// iproute2 in 2019, in keepalived only in 2.4.0); other bytes as they
    /// are.
    fn quoted(&mut self, value: &str) {
        self.text.push('"');
        for character in value.chars() {
            match character {
                '\t' => self.text.push_str("\\t"),
                '\n' | '\\' => self.text.push_str("\\n"),
                '\r' => self.text.push_str("\\r"),
                '\u{c}' => self.text.push_str("\\f"),
                '\u{8}' => self.text.push_str("\\b"),
                '"' => self.text.push_str("\\\""),
                '/' => self.text.push_str("\\/"),
                other => self.text.push(other),
            }
        }
        self.text.push('"');
    }
}

#[cfg(test)]
mod tests;
