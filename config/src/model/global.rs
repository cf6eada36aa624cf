//! `global_defs`.

use std::net::IpAddr;
use std::time::Duration;

use serde::Serialize;

use super::{RawSetting, Script};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GlobalDefs {
    /// Default: the host name.
    pub router_id: Option<String>,
    pub notification_email: Vec<String>,
    /// Default `USER@HOST`: the user pulse runs as, the host's canonical
    /// name (keepalived's `set_default_email_from`).
    pub notification_email_from: Option<String>,
    pub smtp_server: Option<SmtpServer>,
    /// Default: the host name.
    pub smtp_helo_name: Option<String>,
    /// Default 30 s.
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub smtp_connect_timeout: Option<Duration>,
    /// `smtp_alert`, `smtp_alert_vrrp`, `smtp_alert_checker`: `None` = unset
    /// (each object then has its own default).
    pub smtp_alert: Option<bool>,
    pub smtp_alert_vrrp: Option<bool>,
    pub smtp_alert_checker: Option<bool>,
    /// `no_email_faults`: no alert for an instance or a sync group
    /// entering FAULT.
    pub no_email_faults: bool,
    /// `no_checker_emails`: a checker's alert only when its real server's
    /// state changes.
    pub no_checker_emails: bool,
    pub enable_script_security: bool,
    /// `script_user USER [GROUP]`; default `keepalived_script`, else root.
    pub script_user: Option<(String, Option<String>)>,
    /// Where `script_user` is written, for the reports about it.
    #[serde(skip)]
    pub script_user_span: Option<crate::syntax::Span>,
    pub default_interface: Option<String>,
    pub dynamic_interfaces: bool,
    pub lvs_flush: bool,
    pub lvs_flush_on_stop: Option<String>,
    /// `lvs_timeouts [tcp T] [tcpfin T] [udp T]`.
    pub lvs_timeouts: LvsTimeouts,
    /// `lvs_sync_daemon IFNAME INSTANCE [id N] [maxlen N] [port N] [ttl N]
    /// [group ADDR]`.
    pub lvs_sync_daemon: Option<LvsSyncDaemon>,
    pub vrrp: VrrpDefaults,
    pub startup_script: Option<Script>,
    pub shutdown_script: Option<Script>,
    /// How long the start waits for `startup_script`; default 10 s.
    /// `notify_fifo`, `vrrp_notify_fifo`, `lvs_notify_fifo`: the FIFOs
    /// keepalived writes its state changes to, one line each.
    pub fifos: NotifyFifos,
    /// `fifo_write_vrrp_states_on_reload`: after a reload, the notify
    /// FIFOs get the state of each instance and sync group that kept it.
    pub fifo_write_vrrp_states_on_reload: bool,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub startup_script_timeout: Option<Duration>,
    /// How long the stop waits for `shutdown_script`; default 10 s.
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub shutdown_script_timeout: Option<Duration>,
    /// The notify FIFOs' scripts.
    pub fifo_scripts: FifoScripts,
    /// `reload_time_file`: a file whose first line schedules a reload.
    pub reload_time_file: Option<String>,
    /// `reload_repeat`: a time alone in it reloads every day.
    pub reload_repeat: bool,
    /// `umask`: the daemon's file creation mask; `None`: keepalived's
    /// 0177 (a command line's `-u` comes first).
    pub umask: Option<u32>,
    /// `checker_priority`: the checkers' nice value (-20..19).
    pub checker_priority: Option<i32>,
    /// `checker_no_swap`: the checkers' memory locked.
    pub checker_no_swap: bool,
    /// `json_version` (keepalived 2.2.8): keepalived.json's shape, 1 (the
    /// instances' array, 2.2.7's only one) or 2 (the array under "vrrp",
    /// the tracked processes beside it). Default 1.
    pub json_version: Option<u8>,
    /// Where the signals' dumps go.
    pub dump_files: DumpFiles,
    /// Every other keyword, stored as written and reported as "accepted,
    /// not yet acted on".
    pub other: Vec<RawSetting>,
}

/// `notify_fifo_script`, `vrrp_notify_fifo_script`,
/// `lvs_notify_fifo_script`: the scripts reading the notify FIFOs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FifoScripts {
    pub any: Option<Script>,
    pub vrrp: Option<Script>,
    pub lvs: Option<Script>,
}

/// `notify_fifo`, `vrrp_notify_fifo`, `lvs_notify_fifo`: `any` gets the
/// lines of VRRP and of the checkers, the others their part's only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct NotifyFifos {
    pub any: Option<NotifyFifo>,
    pub vrrp: Option<NotifyFifo>,
    pub lvs: Option<NotifyFifo>,
}

/// `notify_fifo PATH [USER [GROUP]]`: the FIFO, created if missing and
/// then given to `USER` (and `GROUP`, else the user's own), by default the
/// default script user (global_parser.c `notify_fifo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotifyFifo {
    pub path: String,
    pub owner: Option<(String, Option<String>)>,
}

/// `state_dump_file`, `stats_dump_file`, `json_dump_file` (keepalived
/// 2.3.3), as written: where keepalived.data (SIGUSR1), keepalived.stats
/// (SIGUSR2, STATS_CLEAR) and keepalived.json (SIGRTMIN+2) go instead of
/// the temporary directory. A path ending in '/' is a directory for the
/// usual name; a relative one is a name in the temporary directory.
/// keepalived's man page calls them `*_file_location`, a name its parser
/// does not know.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DumpFiles {
    pub state: Option<String>,
    pub statistics: Option<String>,
    pub json: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SmtpServer {
    pub address: Option<IpAddr>,
    /// A host name when not an address.
    pub host: Option<String>,
    /// Default 25.
    pub port: u16,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LvsTimeouts {
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub tcp: Option<Duration>,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub tcp_fin: Option<Duration>,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub udp: Option<Duration>,
}

/// The `vrrp_*` defaults of global_defs, which instances inherit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VrrpDefaults {
    /// `disable_local_igmp`: an IPv4 macvlan's IGMP reports are left
    /// alone (no rule moves them to its base).
    pub disable_local_igmp: bool,
    /// `nftables [NAME]`: the firewall's table name; `None`: keepalived's
    /// `keepalived`.
    pub nftables: Option<String>,
    /// `nftables_priority`: the base chains' priority; `None`: -1.
    pub nftables_priority: Option<i32>,
    /// `nftables_counters`: a counter in every rule.
    pub nftables_counters: bool,
    pub mcast_group4: Option<IpAddr>,
    pub mcast_group6: Option<IpAddr>,
    /// Default 5 s.
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub garp_master_delay: Option<Duration>,
    /// Default 5.
    pub garp_master_repeat: Option<u32>,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub garp_lower_prio_delay: Option<Duration>,
    pub garp_lower_prio_repeat: Option<u32>,
    /// Default 0 (no refresh).
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub garp_master_refresh: Option<Duration>,
    pub garp_master_refresh_repeat: Option<u32>,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub garp_interval: Option<Duration>,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub gna_interval: Option<Duration>,
    pub min_garp: bool,
    /// `vrrp_garp_extra_if [all] DELAY`: the default of the instances'
    /// `garp_extra_if`.
    pub garp_extra_if: Option<super::GarpExtraInterfaces>,
    /// Default 2.
    pub version: Option<u8>,
    pub strict: bool,
    pub skip_check_adv_addr: bool,
    pub check_unicast_src: bool,
    pub iptables: Option<Vec<String>>,
    pub priority: Option<i32>,
    pub no_swap: bool,
    pub lower_prio_no_advert: Option<bool>,
    pub higher_prio_send_advert: Option<bool>,
    #[serde(serialize_with = "super::seconds::serialize_option")]
    pub startup_delay: Option<Duration>,
    pub down_timer_adverts: Option<u32>,
    pub notify_priority_changes: Option<bool>,
}

impl VrrpDefaults {
    /// `vrrp_min_garp` where it is written (keepalived's
    /// vrrp_min_garp_handler): one gratuitous ARP round of one message on
    /// becoming master, no second round, no refresh messages. Each value
    /// changes only while it is still keepalived's default, so that one
    /// written before the keyword stays (unless it equals the default) and
    /// one written after it wins. The refresh interval's default, 0, is
    /// what the keyword sets.
    pub fn apply_min_garp(&mut self) {
        if matches!(self.garp_master_repeat, None | Some(5)) {
            self.garp_master_repeat = Some(1);
        }
        if matches!(self.garp_master_refresh_repeat, None | Some(1)) {
            self.garp_master_refresh_repeat = Some(0);
        }
        if self
            .garp_master_delay
            .is_none_or(|delay| delay == Duration::from_secs(5))
        {
            self.garp_master_delay = Some(Duration::ZERO);
        }
    }
}

/// `lvs_sync_daemon`: IPVS's connection synchronisation daemon, which
/// keepalived runs as master while the named VRRP instance is MASTER and as
/// backup otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LvsSyncDaemon {
    pub interface: String,
    /// The vrrp_instance it follows.
    pub instance: String,
    /// `id`: the sync id; keepalived's default is the instance's
    /// virtual_router_id.
    pub sync_id: Option<u8>,
    /// `maxlen`: the largest sync message (the kernel's default otherwise).
    pub max_length: Option<u16>,
    pub port: Option<u16>,
    pub ttl: Option<u8>,
    /// `group`: the multicast group (the kernel's default otherwise).
    pub group: Option<std::net::IpAddr>,
}
