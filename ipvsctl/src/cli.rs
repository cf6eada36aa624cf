//! The command line: ipvsadm 1.31's options, parsed the way its popt 1.19
//! parser does, and checked in ipvsadm's order (`docs/ipvsadm.md` §2-§4).
//!
//! One table, [`OPTIONS`], drives the scanner (long and short names, whether
//! an option takes an argument); [`Command::matrix_row`] and
//! [`TUNNEL_MATRIX`] are ipvsadm's `commands_v_options` and
//! `tunnel_types_v_options`, checked by [`check`]. Values are kept the way
//! ipvsadm keeps them (`ipvs_service_t` and friends) so that the order
//! effects of §3 (`-M` before `-t`, `-6` after `-f`, `-r` copying the
//! service parsed so far) come out the same; `run` turns them into the
//! `ipvs` model.
//!
//! Arguments are bytes, not strings: an argument that is not UTF-8 is echoed
//! back in messages exactly as given.

use std::ffi::CString;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `ipvsadm -v`, and the first line of `ipvsadm -h`.
pub const VERSION_LINE: &str = "ipvsadm v1.31 2019/12/24 (compiled with popt and IPVS v1.2.1)\n";

/// `IPVS_SVC_PERSISTENT_TIMEOUT`: `-p` without a value.
pub const DEFAULT_PERSISTENT_TIMEOUT: u32 = 360;
/// `MAX_TIMEOUT` (31 days).
pub const MAX_TIMEOUT: i64 = 86400 * 31;
pub const DEFAULT_SCHEDULER: &[u8] = b"wlc";
pub const DEFAULT_MCAST_INTERFACE: &[u8] = b"eth0";

pub const AF_INET: u16 = libc::AF_INET as u16;
pub const AF_INET6: u16 = libc::AF_INET6 as u16;
pub const IPPROTO_TCP: u16 = libc::IPPROTO_TCP as u16;
pub const IPPROTO_UDP: u16 = libc::IPPROTO_UDP as u16;
pub const IPPROTO_SCTP: u16 = libc::IPPROTO_SCTP as u16;

pub const CONN_F_MASQ: u32 = 0;
pub const CONN_F_TUNNEL: u32 = 2;
pub const CONN_F_DROUTE: u32 = 3;

pub const SVC_F_PERSISTENT: u32 = 0x1;
pub const SVC_F_ONEPACKET: u32 = 0x4;
pub const SVC_F_SCHED1: u32 = 0x8;
pub const SVC_F_SCHED2: u32 = 0x10;
pub const SVC_F_SCHED3: u32 = 0x20;

pub const STATE_MASTER: u32 = 1;
pub const STATE_BACKUP: u32 = 2;

// The values the parser, the man page and the shell completions share:
// one list each, so that a name added here is accepted, documented and
// completed alike.

/// The schedulers ipvsadm's help lists for `-s`, with what each does. The
/// parser passes any name to the kernel unchecked (the kernel loads
/// `ip_vs_NAME`), so this list feeds only the help's claims and the
/// documentation.
pub const SCHEDULERS: [(&str, &str); 13] = [
    ("rr", "round robin"),
    ("wrr", "weighted round robin"),
    ("lc", "least connection"),
    ("wlc", "weighted least connection"),
    ("lblc", "locality-based least connection"),
    ("lblcr", "locality-based least connection with replication"),
    ("dh", "destination hashing"),
    ("sh", "source hashing"),
    ("sed", "shortest expected delay"),
    ("nq", "never queue"),
    ("fo", "weighted failover"),
    ("ovf", "weighted overflow"),
    ("mh", "Maglev hashing"),
];

/// `--start-daemon` and `--stop-daemon` states.
pub const DAEMON_STATES: [(&str, u32); 2] = [("master", STATE_MASTER), ("backup", STATE_BACKUP)];

/// `-b` flags [`parse_sched_flags`]: the name, its bit, and the scheduler
/// it needs (`None`: any).
pub const SCHED_FLAGS: [(&str, u32, Option<&str>); 7] = [
    ("flag-1", SVC_F_SCHED1, None),
    ("flag-2", SVC_F_SCHED2, None),
    ("flag-3", SVC_F_SCHED3, None),
    ("sh-fallback", SVC_F_SCHED1, Some("sh")),
    ("sh-port", SVC_F_SCHED2, Some("sh")),
    ("mh-fallback", SVC_F_SCHED1, Some("mh")),
    ("mh-port", SVC_F_SCHED2, Some("mh")),
];

/// The persistence engines ipvsadm's help names for `--pe`; like `-s`,
/// any name goes to the kernel unchecked.
pub const PERSISTENCE_ENGINES: [&str; 1] = ["sip"];

/// Whether a popt option takes an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    None,
    Required,
    /// Taken from `=value`, the rest of a short bundle, or the next word
    /// unless it starts with `-` (popt's `POPT_ARGFLAG_OPTIONAL`).
    Optional,
}

/// The commands, in ipvsadm's `CMD_*` order (the rows of the matrix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    Add,
    Edit,
    Delete,
    Flush,
    List,
    AddServer,
    DeleteServer,
    EditServer,
    Set,
    StartDaemon,
    StopDaemon,
    Restore,
    Save,
    Zero,
}

impl Command {
    pub const ALL: [Command; 14] = [
        Command::Add,
        Command::Edit,
        Command::Delete,
        Command::Flush,
        Command::List,
        Command::AddServer,
        Command::DeleteServer,
        Command::EditServer,
        Command::Set,
        Command::StartDaemon,
        Command::StopDaemon,
        Command::Restore,
        Command::Save,
        Command::Zero,
    ];

    /// `cmdnames[]`, as used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Command::Add => "add-service",
            Command::Edit => "edit-service",
            Command::Delete => "delete-service",
            Command::Flush => "flush",
            Command::List => "list",
            Command::AddServer => "add-server",
            Command::DeleteServer => "delete-server",
            Command::EditServer => "edit-server",
            Command::Set => "set",
            Command::StartDaemon => "start-daemon",
            Command::StopDaemon => "stop-daemon",
            Command::Restore => "restore",
            Command::Save => "save",
            Command::Zero => "zero",
        }
    }

    /// The command's row of `commands_v_options` (spec §4.1), one
    /// character per [`Column`]: `+` required, `x` illegal, `1` at most one
    /// of the `1`s, space optional.
    pub fn matrix_row(self) -> &'static [u8; Column::COUNT] {
        match self {
            Command::Add | Command::Edit => b"xx+   xxxxxxxxxxxxxxx   xxxxxxxxxx",
            Command::Delete => b"xx+xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            Command::Flush | Command::Set | Command::Restore => {
                b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
            }
            Command::List => b" 11xxxxxxxxx11       xxxxxxx xxxxx",
            Command::AddServer | Command::EditServer => b"xx+xxx+    xxxxxxxxxxxxxxxxxx     ",
            Command::DeleteServer => b"xx+xxx+xxxxxxxxxxxxxxxxxxxxxxxxxxx",
            Command::StartDaemon => b"xxxxxxxxxxx xxxxxxx xxxx    xxxxxx",
            Command::StopDaemon => b"xxxxxxxxxxxxxxxxxxx xxxxxxxxxxxxxx",
            Command::Save => b" xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            Command::Zero => b"xx xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        }
    }
}

/// The columns of the matrix: ipvsadm's `OPTC_*` indexes. Several options
/// share one (`-t -u --sctp-service -f`; `-g -i -m`), which is what makes
/// `-t … -f …` a "multiple" error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    Numeric,
    Connection,
    Service,
    Scheduler,
    Persistent,
    Netmask,
    RealServer,
    Forward,
    Weight,
    UThreshold,
    LThreshold,
    McastInterface,
    Timeout,
    Daemon,
    Stats,
    Rate,
    Thresholds,
    PersistentConn,
    NoSort,
    SyncId,
    Exact,
    Ops,
    Pe,
    SchedFlags,
    McastGroup,
    McastPort,
    McastTtl,
    SyncMaxlen,
    TunInfo,
    TunType,
    TunPort,
    TunNocsum,
    TunCsum,
    TunRemcsum,
}

impl Column {
    pub const COUNT: usize = 34;
    pub const ALL: [Column; Column::COUNT] = [
        Column::Numeric,
        Column::Connection,
        Column::Service,
        Column::Scheduler,
        Column::Persistent,
        Column::Netmask,
        Column::RealServer,
        Column::Forward,
        Column::Weight,
        Column::UThreshold,
        Column::LThreshold,
        Column::McastInterface,
        Column::Timeout,
        Column::Daemon,
        Column::Stats,
        Column::Rate,
        Column::Thresholds,
        Column::PersistentConn,
        Column::NoSort,
        Column::SyncId,
        Column::Exact,
        Column::Ops,
        Column::Pe,
        Column::SchedFlags,
        Column::McastGroup,
        Column::McastPort,
        Column::McastTtl,
        Column::SyncMaxlen,
        Column::TunInfo,
        Column::TunType,
        Column::TunPort,
        Column::TunNocsum,
        Column::TunCsum,
        Column::TunRemcsum,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn bit(self) -> u64 {
        1 << self.index()
    }

    /// `optnames[]`, as used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Column::Numeric => "numeric",
            Column::Connection => "connection",
            Column::Service => "service-address",
            Column::Scheduler => "scheduler",
            Column::Persistent => "persistent",
            Column::Netmask => "netmask",
            Column::RealServer => "real-server",
            Column::Forward => "forwarding-method",
            Column::Weight => "weight",
            Column::UThreshold => "u-threshold",
            Column::LThreshold => "l-threshold",
            Column::McastInterface => "mcast-interface",
            Column::Timeout => "timeout",
            Column::Daemon => "daemon",
            Column::Stats => "stats",
            Column::Rate => "rate",
            Column::Thresholds => "thresholds",
            Column::PersistentConn => "persistent-conn",
            Column::NoSort => "nosort",
            Column::SyncId => "syncid",
            Column::Exact => "exact",
            Column::Ops => "ops",
            Column::Pe => "pe",
            Column::SchedFlags => "sched-flags",
            Column::McastGroup => "mcast-group",
            Column::McastPort => "mcast-port",
            Column::McastTtl => "mcast-ttl",
            Column::SyncMaxlen => "sync-maxlen",
            Column::TunInfo => "tun-info",
            Column::TunType => "tun-type",
            Column::TunPort => "tun-port",
            Column::TunNocsum => "tun-nocsum",
            Column::TunCsum => "tun-csum",
            Column::TunRemcsum => "tun-remcsum",
        }
    }
}

/// `tunnames[]` and `tunnel_types_v_options` (spec §4.2): for each tunnel
/// type, in the order of its `--tun-type` value, its cell for each of
/// [`TUNNEL_COLUMNS`].
pub const TUNNEL_MATRIX: [(&str, &[u8; 4]); 3] =
    [("ipip", b"xxxx"), ("gue", b"+111"), ("gre", b"x11x")];
pub const TUNNEL_COLUMNS: [Column; 4] = [
    Column::TunPort,
    Column::TunNocsum,
    Column::TunCsum,
    Column::TunRemcsum,
];

/// What an entry of the option table does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    Command(Command),
    Help,
    Version,
    Numeric,
    Connection,
    TcpService,
    UdpService,
    SctpService,
    FwmarkService,
    Scheduler,
    Persistent,
    Netmask,
    RealServer,
    Gatewaying,
    Ipip,
    Masquerading,
    Weight,
    UThreshold,
    LThreshold,
    McastInterface,
    Timeout,
    Daemon,
    Stats,
    Rate,
    Thresholds,
    PersistentConn,
    NoSort,
    SyncId,
    Exact,
    Ops,
    Pe,
    SchedFlags,
    McastGroup,
    McastPort,
    McastTtl,
    SyncMaxlen,
    TunInfo,
    TunType,
    TunPort,
    TunNocsum,
    TunCsum,
    TunRemcsum,
    /// `-6`: outside the matrix.
    Ipv6,
    /// `--sort`: does nothing, accepted anywhere.
    Sort,
    /// `--atomic` (ipvsctl only, with `-R`): check every line, then apply.
    Atomic,
    /// `--json` (ipvsctl only, with `-L`): the listing as one JSON document
    /// (`docs/ipvsctl-json.md`).
    Json,
}

impl Key {
    /// The matrix column the option sets, if any.
    pub fn column(self) -> Option<Column> {
        Some(match self {
            Key::Numeric => Column::Numeric,
            Key::Connection => Column::Connection,
            Key::TcpService | Key::UdpService | Key::SctpService | Key::FwmarkService => {
                Column::Service
            }
            Key::Scheduler => Column::Scheduler,
            Key::Persistent => Column::Persistent,
            Key::Netmask => Column::Netmask,
            Key::RealServer => Column::RealServer,
            Key::Gatewaying | Key::Ipip | Key::Masquerading => Column::Forward,
            Key::Weight => Column::Weight,
            Key::UThreshold => Column::UThreshold,
            Key::LThreshold => Column::LThreshold,
            Key::McastInterface => Column::McastInterface,
            Key::Timeout => Column::Timeout,
            Key::Daemon => Column::Daemon,
            Key::Stats => Column::Stats,
            Key::Rate => Column::Rate,
            Key::Thresholds => Column::Thresholds,
            Key::PersistentConn => Column::PersistentConn,
            Key::NoSort => Column::NoSort,
            Key::SyncId => Column::SyncId,
            Key::Exact => Column::Exact,
            Key::Ops => Column::Ops,
            Key::Pe => Column::Pe,
            Key::SchedFlags => Column::SchedFlags,
            Key::McastGroup => Column::McastGroup,
            Key::McastPort => Column::McastPort,
            Key::McastTtl => Column::McastTtl,
            Key::SyncMaxlen => Column::SyncMaxlen,
            Key::TunInfo => Column::TunInfo,
            Key::TunType => Column::TunType,
            Key::TunPort => Column::TunPort,
            Key::TunNocsum => Column::TunNocsum,
            Key::TunCsum => Column::TunCsum,
            Key::TunRemcsum => Column::TunRemcsum,
            Key::Command(_)
            | Key::Help
            | Key::Version
            | Key::Ipv6
            | Key::Sort
            | Key::Atomic
            | Key::Json => {
                return None;
            }
        })
    }
}

impl Key {
    /// Whether the extension option is known on a line of `command`
    /// (`reading_stdin` for the lines `-R` reads).
    ///
    /// `--atomic` belongs to `-R` alone. `--json` is known on every command
    /// line, so that one given with the wrong command gets a message that
    /// says so rather than popt's `unknown option`; the [`check`]s then
    /// refuse it with anything but `-L`. It stays unknown on `-R`'s lines:
    /// those are ipvsadm's rules, and a restore prints no documents.
    pub fn extends(self, command: Command, reading_stdin: bool) -> bool {
        match self {
            Key::Atomic => command == Command::Restore,
            Key::Json => !reading_stdin,
            _ => false,
        }
    }

    /// The command an extension option is accepted with (ipvsctl's rule:
    /// the matrix has no column for it).
    pub fn goes_with(self) -> Option<Command> {
        match self {
            Key::Atomic => Some(Command::Restore),
            Key::Json => Some(Command::List),
            _ => None,
        }
    }
}

/// One entry of the option table (ipvsadm's `struct poptOption options[]`).
#[derive(Debug, Clone, Copy)]
pub struct OptionDef {
    /// Without the dashes; empty for a short-only option.
    pub long: &'static str,
    pub short: Option<u8>,
    pub arg: Arg,
    pub key: Key,
    /// The argument's name in the help text.
    pub value_name: &'static str,
    /// The description in the help text (empty when the help has none).
    pub help: &'static str,
    /// Not in ipvsadm: known only where ipvsctl extends it (see
    /// [`Key::extends`]); elsewhere popt's `unknown option`, as in ipvsadm.
    pub extension: bool,
}

const fn def(
    long: &'static str,
    short: Option<u8>,
    arg: Arg,
    key: Key,
    value_name: &'static str,
    help: &'static str,
) -> OptionDef {
    OptionDef {
        long,
        short,
        arg,
        key,
        value_name,
        help,
        extension: false,
    }
}

use Arg::{None as NoArg, Optional as OptArg, Required as ReqArg};

/// Every option, in ipvsadm's popt table order.
#[rustfmt::skip]
pub static OPTIONS: &[OptionDef] = &[
    def("add-service", Some(b'A'), NoArg, Key::Command(Command::Add), "", "add virtual service with options"),
    def("edit-service", Some(b'E'), NoArg, Key::Command(Command::Edit), "", "edit virtual service with options"),
    def("delete-service", Some(b'D'), NoArg, Key::Command(Command::Delete), "", "delete virtual service"),
    def("clear", Some(b'C'), NoArg, Key::Command(Command::Flush), "", "clear the whole table"),
    def("list", Some(b'L'), NoArg, Key::Command(Command::List), "", "list the table"),
    def("", Some(b'l'), NoArg, Key::Command(Command::List), "", ""),
    def("zero", Some(b'Z'), NoArg, Key::Command(Command::Zero), "", "zero counters in a service or all services"),
    def("add-server", Some(b'a'), NoArg, Key::Command(Command::AddServer), "", "add real server with options"),
    def("edit-server", Some(b'e'), NoArg, Key::Command(Command::EditServer), "", "edit real server with options"),
    def("delete-server", Some(b'd'), NoArg, Key::Command(Command::DeleteServer), "", "delete real server"),
    def("set", None, NoArg, Key::Command(Command::Set), "tcp tcpfin udp", "set connection timeout values"),
    def("restore", Some(b'R'), NoArg, Key::Command(Command::Restore), "", "restore rules from stdin"),
    def("save", Some(b'S'), NoArg, Key::Command(Command::Save), "", "save rules to stdout"),
    def("start-daemon", None, ReqArg, Key::Command(Command::StartDaemon), "master|backup", "start connection sync daemon"),
    def("stop-daemon", None, ReqArg, Key::Command(Command::StopDaemon), "master|backup", "stop connection sync daemon"),
    def("help", Some(b'h'), NoArg, Key::Help, "", "display this help message"),
    def("version", Some(b'v'), NoArg, Key::Version, "", ""),
    def("tcp-service", Some(b't'), ReqArg, Key::TcpService, "service-address", "service-address is host[:port]"),
    def("udp-service", Some(b'u'), ReqArg, Key::UdpService, "service-address", "service-address is host[:port]"),
    def("sctp-service", None, ReqArg, Key::SctpService, "service-address", "service-address is host[:port]"),
    def("fwmark-service", Some(b'f'), ReqArg, Key::FwmarkService, "fwmark", "fwmark is an integer greater than zero"),
    def("scheduler", Some(b's'), ReqArg, Key::Scheduler, "scheduler", "one of rr|wrr|lc|wlc|lblc|lblcr|dh|sh|sed|nq|fo|ovf|mh,"),
    def("persistent", Some(b'p'), OptArg, Key::Persistent, "timeout", "persistent service"),
    def("netmask", Some(b'M'), ReqArg, Key::Netmask, "netmask", "persistent granularity mask"),
    def("real-server", Some(b'r'), ReqArg, Key::RealServer, "server-address", "server-address is host (and port)"),
    def("masquerading", Some(b'm'), NoArg, Key::Masquerading, "", "masquerading (NAT)"),
    def("ipip", Some(b'i'), NoArg, Key::Ipip, "", "ipip encapsulation (tunneling)"),
    def("gatewaying", Some(b'g'), NoArg, Key::Gatewaying, "", "gatewaying (direct routing) (default)"),
    def("weight", Some(b'w'), ReqArg, Key::Weight, "weight", "capacity of real server"),
    def("u-threshold", Some(b'x'), ReqArg, Key::UThreshold, "uthreshold", "upper threshold of connections"),
    def("l-threshold", Some(b'y'), ReqArg, Key::LThreshold, "lthreshold", "lower threshold of connections"),
    def("numeric", Some(b'n'), NoArg, Key::Numeric, "", "numeric output of addresses and ports"),
    def("connection", Some(b'c'), NoArg, Key::Connection, "", "output of current IPVS connections"),
    def("mcast-interface", None, ReqArg, Key::McastInterface, "interface", "multicast interface for connection sync"),
    def("syncid", None, ReqArg, Key::SyncId, "sid", "syncid for connection sync (default=255)"),
    def("timeout", None, NoArg, Key::Timeout, "", "output of timeout (tcp tcpfin udp)"),
    def("daemon", None, NoArg, Key::Daemon, "", "output of daemon information"),
    def("stats", None, NoArg, Key::Stats, "", "output of statistics information"),
    def("rate", None, NoArg, Key::Rate, "", "output of rate information"),
    def("thresholds", None, NoArg, Key::Thresholds, "", "output of thresholds information"),
    def("persistent-conn", None, NoArg, Key::PersistentConn, "", "output of persistent connection info"),
    def("nosort", None, NoArg, Key::NoSort, "", "disable sorting output of service/server entries"),
    def("sort", None, NoArg, Key::Sort, "", "does nothing, for backwards compatibility"),
    def("ops", Some(b'o'), NoArg, Key::Ops, "", "one-packet scheduling"),
    def("pe", None, ReqArg, Key::Pe, "engine", "alternate persistence engine may be sip,"),
    def("sched-flags", Some(b'b'), ReqArg, Key::SchedFlags, "flags", "scheduler flags (comma-separated)"),
    def("mcast-group", None, ReqArg, Key::McastGroup, "address", "IPv4/IPv6 group (default=224.0.0.81)"),
    def("mcast-port", None, ReqArg, Key::McastPort, "port", "UDP port (default=8848)"),
    def("mcast-ttl", None, ReqArg, Key::McastTtl, "ttl", "Multicast TTL (default=1)"),
    def("sync-maxlen", None, ReqArg, Key::SyncMaxlen, "length", "Max sync message length (default=1472)"),
    def("tun-info", None, NoArg, Key::TunInfo, "", "output of tunnel information"),
    def("tun-type", None, ReqArg, Key::TunType, "type", "one of ipip|gue|gre,"),
    def("tun-port", None, ReqArg, Key::TunPort, "port", "tunnel destination port"),
    def("tun-nocsum", None, NoArg, Key::TunNocsum, "", "tunnel encapsulation without checksum"),
    def("tun-csum", None, NoArg, Key::TunCsum, "", "tunnel encapsulation with checksum"),
    def("tun-remcsum", None, NoArg, Key::TunRemcsum, "", "tunnel encapsulation with remote checksum"),
    def("exact", Some(b'X'), NoArg, Key::Exact, "", "expand numbers (display exact values)"),
    def("ipv6", Some(b'6'), NoArg, Key::Ipv6, "", "fwmark entry uses IPv6"),
    OptionDef {
        long: "atomic",
        short: None,
        arg: NoArg,
        key: Key::Atomic,
        value_name: "",
        help: "with -R: check every line first, apply nothing if one is wrong",
        extension: true,
    },
    OptionDef {
        long: "json",
        short: None,
        arg: NoArg,
        key: Key::Json,
        value_name: "",
        help: "with -L: the listing as one JSON document",
        extension: true,
    },
];

/// `ipvsadm -h` (Appendix C), with `%s` for `argv[0]`. Kept verbatim
/// rather than generated: its layout is hand-made (aligned columns that
/// differ per entry, wrapped descriptions). A unit test checks that every
/// description in [`OPTIONS`] appears in it.
const HELP_TEMPLATE: &str = "Usage:
  %s -A|E virtual-service [-s scheduler] [-p [timeout]] [-M netmask] [--pe persistence_engine] [-b sched-flags]
  %s -D virtual-service
  %s -C
  %s -R
  %s -S [-n]
  %s -a|e virtual-service -r server-address [options]
  %s -d virtual-service -r server-address
  %s -L|l [virtual-service] [options]
  %s -Z [virtual-service]
  %s --set tcp tcpfin udp
  %s --start-daemon {master|backup} [daemon-options]
  %s --stop-daemon {master|backup}
  %s -h

Commands:
Either long or short options are allowed.
  --add-service     -A        add virtual service with options
  --edit-service    -E        edit virtual service with options
  --delete-service  -D        delete virtual service
  --clear           -C        clear the whole table
  --restore         -R        restore rules from stdin
  --save            -S        save rules to stdout
  --add-server      -a        add real server with options
  --edit-server     -e        edit real server with options
  --delete-server   -d        delete real server
  --list            -L|-l     list the table
  --zero            -Z        zero counters in a service or all services
  --set tcp tcpfin udp        set connection timeout values
  --start-daemon              start connection sync daemon
  --stop-daemon               stop connection sync daemon
  --help            -h        display this help message

virtual-service:
  --tcp-service|-t  service-address   service-address is host[:port]
  --udp-service|-u  service-address   service-address is host[:port]
  --sctp-service    service-address   service-address is host[:port]
  --fwmark-service|-f fwmark          fwmark is an integer greater than zero

Options:
  --ipv6         -6                   fwmark entry uses IPv6
  --scheduler    -s scheduler         one of rr|wrr|lc|wlc|lblc|lblcr|dh|sh|sed|nq|fo|ovf|mh,
                                      the default scheduler is wlc.
  --pe            engine              alternate persistence engine may be sip,
                                      not set by default.
  --persistent   -p [timeout]         persistent service
  --netmask      -M netmask           persistent granularity mask
  --real-server  -r server-address    server-address is host (and port)
  --gatewaying   -g                   gatewaying (direct routing) (default)
  --ipip         -i                   ipip encapsulation (tunneling)
  --masquerading -m                   masquerading (NAT)
  --tun-type      type                one of ipip|gue|gre,
                                      the default tunnel type is ipip.
  --tun-port      port                tunnel destination port
  --tun-nocsum                        tunnel encapsulation without checksum
  --tun-csum                          tunnel encapsulation with checksum
  --tun-remcsum                       tunnel encapsulation with remote checksum
  --weight       -w weight            capacity of real server
  --u-threshold  -x uthreshold        upper threshold of connections
  --l-threshold  -y lthreshold        lower threshold of connections
  --connection   -c                   output of current IPVS connections
  --timeout                           output of timeout (tcp tcpfin udp)
  --daemon                            output of daemon information
  --stats                             output of statistics information
  --rate                              output of rate information
  --exact                             expand numbers (display exact values)
  --thresholds                        output of thresholds information
  --persistent-conn                   output of persistent connection info
  --tun-info                          output of tunnel information
  --nosort                            disable sorting output of service/server entries
  --sort                              does nothing, for backwards compatibility
  --ops          -o                   one-packet scheduling
  --numeric      -n                   numeric output of addresses and ports
  --sched-flags  -b flags             scheduler flags (comma-separated)
Daemon Options:
  --syncid sid                        syncid for connection sync (default=255)
  --sync-maxlen length                Max sync message length (default=1472)
  --mcast-interface interface         multicast interface for connection sync
  --mcast-group address               IPv4/IPv6 group (default=224.0.0.81)
  --mcast-port port                   UDP port (default=8848)
  --mcast-ttl ttl                     Multicast TTL (default=1)
";

/// The whole `-h` text for a program invoked as `program`.
pub fn help_text(program: &[u8]) -> Vec<u8> {
    let mut text = VERSION_LINE.as_bytes().to_vec();
    let mut pieces = HELP_TEMPLATE.split("%s");
    text.extend_from_slice(pieces.next().unwrap_or_default().as_bytes());
    for piece in pieces {
        text.extend_from_slice(program);
        text.extend_from_slice(piece.as_bytes());
    }
    text
}

/// How an error ends the line or the program (spec §1, §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `tryhelp_exit(argv[0], -1)`: exit 255, even from inside `-R`.
    TryHelp,
    /// A popt error (`%s: %s`): `process_options` returns -1, so 255, and
    /// `-R` goes on with the next line.
    Popt,
    /// `fail(2, …)`: exit 2, even from inside `-R`.
    Fail,
}

/// A parse or validation error: the exact bytes ipvsadm writes to stderr.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", String::from_utf8_lossy(message).trim_end())]
pub struct CliError {
    pub kind: ErrorKind,
    /// What goes to stderr, final newline(s) included.
    pub message: Vec<u8>,
}

impl CliError {
    /// The exit status when the error ends the program.
    pub fn status(&self) -> i32 {
        match self.kind {
            ErrorKind::TryHelp | ErrorKind::Popt => 255,
            ErrorKind::Fail => 2,
        }
    }

    fn fail(message: impl AsRef<[u8]>) -> Self {
        let mut message = message.as_ref().to_vec();
        message.push(b'\n');
        CliError {
            kind: ErrorKind::Fail,
            message,
        }
    }

    fn fail_with(before: &str, value: &[u8], after: &str) -> Self {
        let mut message = before.as_bytes().to_vec();
        message.extend_from_slice(value);
        message.extend_from_slice(after.as_bytes());
        CliError::fail(message)
    }

    fn try_help(program: &[u8]) -> Self {
        let mut message = b"Try `".to_vec();
        message.extend_from_slice(program);
        message.extend_from_slice(b" -h' or '");
        message.extend_from_slice(program);
        message.extend_from_slice(b" --help' for more information.\n");
        CliError {
            kind: ErrorKind::TryHelp,
            message,
        }
    }
}

/// What a command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Help,
    Version,
    Command(Box<CommandLine>),
}

/// `ipvs_service_t` as ipvsadm fills it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceArgs {
    /// 0 until a service is given.
    pub af: u16,
    pub protocol: u16,
    /// An IPv4 address is in the first 4 bytes.
    pub addr: [u8; 16],
    pub port: u16,
    pub fwmark: u32,
    /// At most 15 bytes.
    pub scheduler: Vec<u8>,
    pub flags: u32,
    pub timeout: u32,
    /// IPv4: the mask's bytes in memory order (`u32::from_ne_bytes`), as
    /// [`ipvs::Netmask::to_raw`]; IPv6: the prefix length.
    pub netmask: u32,
    /// At most 16 bytes; empty for none.
    pub pe_name: Vec<u8>,
}

impl ServiceArgs {
    pub fn address(&self) -> IpAddr {
        address(self.af, &self.addr)
    }
}

/// `ipvs_dest_t` as ipvsadm fills it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DestArgs {
    pub af: u16,
    pub addr: [u8; 16],
    pub port: u16,
    pub conn_flags: u32,
    pub weight: u32,
    pub u_threshold: u32,
    pub l_threshold: u32,
    pub tun_type: u8,
    pub tun_port: u16,
    pub tun_flags: u16,
}

impl DestArgs {
    pub fn address(&self) -> IpAddr {
        address(self.af, &self.addr)
    }
}

/// `ipvs_daemon_t` as ipvsadm fills it: 0 means "not given".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DaemonArgs {
    pub state: u32,
    /// At most 15 bytes.
    pub mcast_ifn: Vec<u8>,
    pub syncid: u32,
    pub sync_maxlen: u16,
    pub mcast_port: u16,
    pub mcast_ttl: u8,
    pub mcast_group: Option<IpAddr>,
}

/// One parsed and checked command line (or `-R` line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    pub command: Command,
    /// The matrix columns given, as bits ([`Column::bit`]).
    pub options: u64,
    pub service: ServiceArgs,
    pub dest: DestArgs,
    /// tcp, tcpfin, udp (`--set`).
    pub timeouts: [u32; 3],
    pub daemon: DaemonArgs,
    /// `-R --atomic`.
    pub atomic: bool,
    /// `-L --json`.
    pub json: bool,
}

impl CommandLine {
    fn new(command: Command) -> Self {
        CommandLine {
            command,
            options: 0,
            service: ServiceArgs {
                netmask: 0xffff_ffff,
                ..ServiceArgs::default()
            },
            dest: DestArgs {
                weight: 1,
                conn_flags: CONN_F_DROUTE,
                ..DestArgs::default()
            },
            timeouts: [0; 3],
            daemon: DaemonArgs::default(),
            atomic: false,
            json: false,
        }
    }

    pub fn has(&self, column: Column) -> bool {
        self.options & column.bit() != 0
    }

    fn set_option(&mut self, column: Column) -> Result<(), CliError> {
        if self.has(column) {
            return Err(CliError::fail(format!(
                "multiple '{}' options specified",
                column.name()
            )));
        }
        self.options |= column.bit();
        Ok(())
    }
}

fn address(af: u16, addr: &[u8; 16]) -> IpAddr {
    if af == AF_INET6 {
        IpAddr::V6(Ipv6Addr::from(*addr))
    } else {
        IpAddr::V4(Ipv4Addr::new(addr[0], addr[1], addr[2], addr[3]))
    }
}

// ---------------------------------------------------------------------
// The popt scanner.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PoptError {
    BadOption,
    NoArgument,
    UnwantedArgument,
}

impl PoptError {
    fn text(self) -> &'static str {
        match self {
            PoptError::BadOption => "unknown option",
            PoptError::NoArgument => "missing argument",
            PoptError::UnwantedArgument => "option does not take an argument",
        }
    }
}

enum Step<'a> {
    Option(&'static OptionDef, Option<&'a [u8]>),
    End,
    Error(PoptError),
}

/// popt 1.19's `poptGetNextOpt` over one argv, for ipvsadm's table (no
/// aliases, no `ONEDASH` options).
struct Scanner<'a> {
    argv: &'a [Vec<u8>],
    next: usize,
    /// The rest of a short-option bundle: (word, offset).
    next_char: Option<(usize, usize)>,
    rest_leftover: bool,
    leftovers: Vec<usize>,
    next_leftover: usize,
    /// The command and whether this is a `-R` line, once the command is
    /// read: which extension options are known ([`Key::extends`]).
    extensions_for: Option<(Command, bool)>,
}

impl<'a> Scanner<'a> {
    fn new(argv: &'a [Vec<u8>]) -> Self {
        Scanner {
            argv,
            next: 1,
            next_char: None,
            rest_leftover: false,
            leftovers: Vec::new(),
            next_leftover: 0,
            extensions_for: None,
        }
    }

    /// `poptBadOption(ctx, POPT_BADOPTION_NOALIAS)`: the last word read.
    fn bad_option(&self) -> &'a [u8] {
        let index = self.next.saturating_sub(1);
        self.argv.get(index).map(Vec::as_slice).unwrap_or_default()
    }

    /// `poptGetArg`
    fn get_arg(&mut self) -> Option<&'a [u8]> {
        let index = *self.leftovers.get(self.next_leftover)?;
        self.next_leftover += 1;
        Some(&self.argv[index])
    }

    fn known(&self, option: &OptionDef) -> bool {
        !option.extension
            || self
                .extensions_for
                .is_some_and(|(command, reading_stdin)| option.key.extends(command, reading_stdin))
    }

    fn find_long(&self, name: &[u8]) -> Option<&'static OptionDef> {
        OPTIONS.iter().find(|option| {
            !option.long.is_empty() && option.long.as_bytes() == name && self.known(option)
        })
    }

    fn find_short(&self, short: u8) -> Option<&'static OptionDef> {
        OPTIONS
            .iter()
            .find(|option| option.short == Some(short) && self.known(option))
    }

    fn next_option(&mut self) -> Step<'a> {
        loop {
            let mut long_arg: Option<&'a [u8]> = None;
            let mut found: Option<&'static OptionDef> = None;
            if self.next_char.is_none() {
                if self.next >= self.argv.len() {
                    return Step::End;
                }
                let index = self.next;
                self.next += 1;
                let word: &'a [u8] = &self.argv[index];
                if self.rest_leftover || word.first() != Some(&b'-') || word.len() == 1 {
                    self.leftovers.push(index);
                    continue;
                }
                if word == b"--" {
                    self.rest_leftover = true;
                    continue;
                }
                if word[1] == b'-' {
                    let body = &word[2..];
                    let (name, value) = match body.iter().position(|&byte| byte == b'=') {
                        Some(at) => (&body[..at], Some(&body[at + 1..])),
                        None => (body, None),
                    };
                    match self.find_long(name) {
                        Some(option) => {
                            found = Some(option);
                            long_arg = value;
                        }
                        None => return Step::Error(PoptError::BadOption),
                    }
                } else {
                    // A single dash: popt would look for a ONEDASH long
                    // option first; ipvsadm has none.
                    self.next_char = Some((index, 1));
                }
            }
            if let Some((index, offset)) = self.next_char.take() {
                let word: &'a [u8] = &self.argv[index];
                let Some(option) = word.get(offset).and_then(|&short| self.find_short(short))
                else {
                    return Step::Error(PoptError::BadOption);
                };
                found = Some(option);
                let rest = offset + 1;
                if rest < word.len() {
                    self.next_char = Some((index, rest + usize::from(word[rest] == b'=')));
                }
            }
            let option = found.expect("an option was found above");
            let value = match option.arg {
                Arg::None => {
                    let equals_follows = self
                        .next_char
                        .is_some_and(|(index, offset)| self.argv[index].get(offset) == Some(&b'='));
                    if long_arg.is_some() || equals_follows {
                        return Step::Error(PoptError::UnwantedArgument);
                    }
                    None
                }
                Arg::Required | Arg::Optional => {
                    if long_arg.is_some() {
                        long_arg
                    } else if let Some((index, offset)) = self.next_char.take() {
                        let word: &'a [u8] = &self.argv[index];
                        let skip = usize::from(word.get(offset) == Some(&b'='));
                        Some(&word[(offset + skip).min(word.len())..])
                    } else if self.next >= self.argv.len() {
                        if option.arg == Arg::Required {
                            return Step::Error(PoptError::NoArgument);
                        }
                        None
                    } else {
                        let word: &'a [u8] = &self.argv[self.next];
                        if option.arg == Arg::Optional && word.first() == Some(&b'-') {
                            None
                        } else {
                            self.next += 1;
                            Some(word)
                        }
                    }
                }
            };
            return Step::Option(option, value);
        }
    }
}

// ---------------------------------------------------------------------
// Parsing [`parse_options`].

/// Parses and checks one command line (`argv[0]` first) the way
/// `process_options` does before it acts: popt, the values, the matrix and
/// the checks of §3.8. `reading_stdin` is set for `-R` input lines.
pub fn parse_command_line(argv: &[Vec<u8>], reading_stdin: bool) -> Result<Parsed, CliError> {
    let parsed = parse(argv, reading_stdin)?;
    if let Parsed::Command(line) = &parsed {
        check(
            line,
            reading_stdin,
            argv.first().map(Vec::as_slice).unwrap_or_default(),
        )?;
    }
    Ok(match parsed {
        Parsed::Command(mut line) => {
            apply_defaults(&mut line);
            Parsed::Command(line)
        }
        other => other,
    })
}

/// The popt loops and value parsing (`parse_options`), without the checks.
/// `reading_stdin` is set for `-R` input lines.
pub fn parse(argv: &[Vec<u8>], reading_stdin: bool) -> Result<Parsed, CliError> {
    let program = argv.first().map(Vec::as_slice).unwrap_or_default();
    let mut scanner = Scanner::new(argv);
    let (option, value) = match scanner.next_option() {
        Step::Option(option, value) => (option, value),
        Step::End | Step::Error(_) => return Err(CliError::try_help(program)),
    };
    let command = match option.key {
        Key::Command(command) => command,
        Key::Help => return Ok(Parsed::Help),
        Key::Version => return Ok(Parsed::Version),
        _ => return Err(CliError::try_help(program)),
    };
    let mut line = CommandLine::new(command);
    scanner.extensions_for = Some((command, reading_stdin));
    match command {
        Command::StartDaemon | Command::StopDaemon => {
            let value = value.unwrap_or_default();
            line.daemon.state = match DAEMON_STATES
                .iter()
                .find(|(name, _)| name.as_bytes() == value)
            {
                Some((_, state)) => *state,
                None if command == Command::StartDaemon => {
                    return Err(CliError::fail("illegal start-daemon parameter specified"));
                }
                None => return Err(CliError::fail("illegal start_daemon specified")),
            };
        }
        _ => {}
    }

    let mut sched_flags: Vec<u8> = Vec::new();
    loop {
        let (option, value) = match scanner.next_option() {
            Step::Option(option, value) => (option, value),
            Step::End => break,
            Step::Error(error) => {
                let mut message = scanner.bad_option().to_vec();
                message.extend_from_slice(b": ");
                message.extend_from_slice(error.text().as_bytes());
                message.push(b'\n');
                return Err(CliError {
                    kind: ErrorKind::Popt,
                    message,
                });
            }
        };
        if let Some(column) = option.key.column() {
            line.set_option(column)?;
        }
        apply_option(&mut line, option.key, value, &mut sched_flags).map_err(
            |error| match error {
                OptionError::Invalid => {
                    CliError::fail_with("invalid option `", scanner.bad_option(), "'")
                }
                OptionError::Cli(error) => error,
            },
        )?;
    }

    if command == Command::Set {
        let (Some(tcp), Some(tcp_fin), Some(udp)) =
            (scanner.get_arg(), scanner.get_arg(), scanner.get_arg())
        else {
            return Err(CliError::fail("--set option requires 3 timeout values"));
        };
        for (slot, text) in line.timeouts.iter_mut().zip([tcp, tcp_fin, udp]) {
            *slot = parse_timeout(Some(text), 0, MAX_TIMEOUT)?;
        }
    }
    if let Some(extra) = scanner.get_arg() {
        return Err(CliError::fail_with("unexpected argument ", extra, ""));
    }
    if !sched_flags.is_empty() {
        line.service.flags |= parse_sched_flags(&line.service.scheduler, &sched_flags)?;
    }
    Ok(Parsed::Command(Box::new(line)))
}

enum OptionError {
    /// A command, `-h` or `-v` after the command.
    Invalid,
    Cli(CliError),
}

impl From<CliError> for OptionError {
    fn from(error: CliError) -> Self {
        OptionError::Cli(error)
    }
}

fn truncated(value: &[u8], max: usize) -> Vec<u8> {
    value[..value.len().min(max)].to_vec()
}

fn number(value: &[u8], min: i64, max: i64, message: &str) -> Result<i64, CliError> {
    string_to_number(value, min, max).ok_or_else(|| CliError::fail(message))
}

/// The second loop's `switch` of `parse_options` for one option; `value`
/// is `None` for options without one and for a bare `-p`.
fn apply_option(
    line: &mut CommandLine,
    key: Key,
    argument: Option<&[u8]>,
    sched_flags: &mut Vec<u8>,
) -> Result<(), OptionError> {
    let value = argument.unwrap_or_default();
    let int_max = i64::from(i32::MAX);
    match key {
        Key::Command(_) | Key::Help | Key::Version => return Err(OptionError::Invalid),
        Key::TcpService | Key::UdpService | Key::SctpService => {
            line.service.protocol = match key {
                Key::TcpService => IPPROTO_TCP,
                Key::UdpService => IPPROTO_UDP,
                _ => IPPROTO_SCTP,
            };
            if parse_service(value, &mut line.service) & SERVICE_ADDR == 0 {
                return Err(
                    CliError::fail("illegal virtual server address[:port] specified").into(),
                );
            }
        }
        Key::FwmarkService => {
            line.service.af = AF_INET;
            line.service.protocol = IPPROTO_TCP;
            line.service.fwmark = parse_fwmark(value).ok_or_else(|| {
                CliError::fail_with("invalid fwmark value `", value, "' specified")
            })?;
        }
        Key::Scheduler => line.service.scheduler = truncated(value, 15),
        Key::Persistent => {
            line.service.flags |= SVC_F_PERSISTENT;
            line.service.timeout = parse_timeout(argument, 1, MAX_TIMEOUT)?;
        }
        Key::Netmask => {
            if line.service.af != AF_INET6 {
                let mask = inet_aton(value)
                    .or_else(|| host_to_addr(value))
                    .ok_or_else(|| {
                        CliError::fail("illegal virtual server persistent mask specified")
                    })?;
                line.service.netmask = u32::from_ne_bytes(mask);
            } else {
                let prefix = atoi(value) as u32;
                if !(1..=128).contains(&prefix) {
                    return Err(CliError::fail("illegal ipv6 netmask specified").into());
                }
                line.service.netmask = prefix;
            }
        }
        Key::RealServer => {
            let mut copy = line.service.clone();
            let parse = parse_service(value, &mut copy);
            line.dest.af = copy.af;
            line.dest.addr = copy.addr;
            line.dest.port = copy.port;
            if parse & SERVICE_ADDR == 0 {
                return Err(CliError::fail("illegal real server address[:port] specified").into());
            }
            if parse == SERVICE_ADDR {
                line.dest.port = line.service.port;
            }
        }
        Key::Gatewaying => line.dest.conn_flags = CONN_F_DROUTE,
        Key::Ipip => line.dest.conn_flags = CONN_F_TUNNEL,
        Key::Masquerading => line.dest.conn_flags = CONN_F_MASQ,
        Key::Weight => {
            line.dest.weight = number(value, 0, int_max, "illegal weight specified")? as u32
        }
        Key::UThreshold => {
            line.dest.u_threshold =
                number(value, 0, int_max, "illegal u_threshold specified")? as u32
        }
        Key::LThreshold => {
            line.dest.l_threshold =
                number(value, 0, int_max, "illegal l_threshold specified")? as u32
        }
        Key::McastInterface => line.daemon.mcast_ifn = truncated(value, 15),
        Key::SyncId => {
            line.daemon.syncid = number(value, 0, 255, "illegal syncid specified")? as u32
        }
        Key::Ops => line.service.flags |= SVC_F_ONEPACKET,
        Key::Pe => line.service.pe_name = truncated(value, 16),
        Key::SchedFlags => *sched_flags = truncated(value, 127),
        Key::McastGroup => {
            let text = std::str::from_utf8(value).ok();
            if value.contains(&b':') {
                match text.and_then(|text| text.parse::<Ipv6Addr>().ok()) {
                    Some(group) if group.octets()[0] == 0xff => {
                        line.daemon.mcast_group = Some(IpAddr::V6(group))
                    }
                    _ => {
                        return Err(
                            CliError::fail_with("invalid IPv6 mcast-group `", value, "'").into(),
                        );
                    }
                }
            } else {
                match inet_pton4(value) {
                    Some(group) if group[0] & 0xf0 == 0xe0 => {
                        line.daemon.mcast_group = Some(IpAddr::V4(Ipv4Addr::from(group)))
                    }
                    _ => {
                        return Err(
                            CliError::fail_with("invalid IPv4 mcast-group `", value, "'").into(),
                        );
                    }
                }
            }
        }
        Key::McastPort => {
            line.daemon.mcast_port = number(value, 1, 65535, "illegal mcast-port specified")? as u16
        }
        Key::McastTtl => {
            line.daemon.mcast_ttl = number(value, 1, 255, "illegal mcast-ttl specified")? as u8
        }
        Key::SyncMaxlen => {
            line.daemon.sync_maxlen =
                number(value, 1, 65535 - 20 - 8, "illegal sync-maxlen specified")? as u16
        }
        Key::TunType => {
            line.dest.tun_type = TUNNEL_MATRIX
                .iter()
                .position(|(name, _)| name.as_bytes() == value)
                .ok_or_else(|| CliError::fail("illegal tunnel type specified"))?
                as u8
        }
        Key::TunPort => {
            line.dest.tun_port = number(value, 1, 65535, "illegal tunnel port specified")? as u16
        }
        Key::TunNocsum => {}
        Key::TunCsum => line.dest.tun_flags |= 1,
        Key::TunRemcsum => line.dest.tun_flags |= 2,
        Key::Ipv6 => {
            if line.service.fwmark == 0 {
                return Err(CliError::fail("-6 used before -f\n").into());
            }
            line.service.af = AF_INET6;
            line.service.netmask = 128;
        }
        Key::Atomic => line.atomic = true,
        Key::Json => {
            // Not a matrix column, so its own "multiple" check.
            if line.json {
                return Err(CliError::fail("multiple 'json' options specified").into());
            }
            line.json = true;
        }
        Key::Numeric
        | Key::Connection
        | Key::Timeout
        | Key::Daemon
        | Key::Stats
        | Key::Rate
        | Key::Thresholds
        | Key::PersistentConn
        | Key::NoSort
        | Key::Exact
        | Key::TunInfo
        | Key::Sort => {}
    }
    Ok(())
}

// ---------------------------------------------------------------------
// Checks [`process_options`, `generic_opt_check`, `tunnel_opt_check`].

/// Walks one matrix row by column and stops at the first error.
fn matrix_check(
    row: &[u8],
    columns: &[Column],
    options: u64,
    what: &str,
    name: &str,
) -> Result<(), CliError> {
    let mut first_one: Option<Column> = None;
    for (&cell, &column) in row.iter().zip(columns) {
        let given = options & column.bit() != 0;
        match cell {
            b'+' if !given => {
                return Err(CliError::fail(format!(
                    "You need to supply the '{}' option for the '{name}' {what}",
                    column.name()
                )));
            }
            b'x' if given => {
                return Err(CliError::fail(format!(
                    "Illegal '{}' option with the '{name}' {what}",
                    column.name()
                )));
            }
            b'1' if given => match first_one {
                Some(first) => {
                    return Err(CliError::fail(format!(
                        "The option '{}' conflicts with the '{}' option in the '{name}' {what}",
                        column.name(),
                        first.name()
                    )));
                }
                None => first_one = Some(column),
            },
            _ => {}
        }
    }
    Ok(())
}

/// The checks `process_options` makes after parsing, in its order (§3.8),
/// then `-R` inside `-R` (§8).
pub fn check(line: &CommandLine, reading_stdin: bool, program: &[u8]) -> Result<(), CliError> {
    let command = line.command;
    matrix_check(
        command.matrix_row(),
        &Column::ALL,
        line.options,
        "command",
        command.name(),
    )?;
    let service = &line.service;
    if matches!(command, Command::Add | Command::Edit) {
        if service.fwmark == 0 && service.port == 0 && service.flags & SVC_F_PERSISTENT == 0 {
            return Err(CliError::fail(
                "Zero port specified for non-persistent service",
            ));
        }
        if service.flags & SVC_F_ONEPACKET != 0
            && service.fwmark == 0
            && service.protocol != IPPROTO_UDP
        {
            return Err(CliError::fail(
                "One-Packet Scheduling is only for UDP virtual services",
            ));
        }
    }
    if matches!(command, Command::AddServer | Command::EditServer) {
        let dest = &line.dest;
        if dest.af != service.af && dest.conn_flags != CONN_F_TUNNEL {
            return Err(CliError::fail(
                "Different address family is allowed only for tunneling servers",
            ));
        }
        let tunnel_options = [Column::TunType, Column::TunPort]
            .iter()
            .chain(&TUNNEL_COLUMNS[1..])
            .any(|column| line.has(*column));
        if tunnel_options && dest.conn_flags != CONN_F_TUNNEL {
            return Err(CliError::fail(
                "Tunnel options conflict with forward method",
            ));
        }
        let (name, row) = TUNNEL_MATRIX[usize::from(dest.tun_type).min(2)];
        matrix_check(row, &TUNNEL_COLUMNS, line.options, "tunnel type", name)?;
    }
    if command == Command::List {
        let has = |columns: &[Column]| columns.iter().any(|column| line.has(*column));
        if (has(&[Column::Connection, Column::Timeout, Column::Daemon])
            && has(&[Column::Stats, Column::Rate, Column::Thresholds]))
            || (has(&[Column::Timeout, Column::Daemon]) && has(&[Column::PersistentConn]))
        {
            return Err(CliError::fail("options conflicts in the list command"));
        }
    }
    if command == Command::Restore && reading_stdin {
        return Err(CliError::try_help(program));
    }
    // After every ipvsadm check, so that a line ipvsadm would refuse gets
    // ipvsadm's message: `--json` is accepted exactly where the listing is.
    if line.json && Key::Json.goes_with() != Some(command) {
        return Err(CliError::fail(format!(
            "Illegal 'json' option with the '{}' command: --json goes with -L/-l only",
            command.name()
        )));
    }
    Ok(())
}

/// The defaults `process_options` fills in after its checks (§3.6, §3.8).
fn apply_defaults(line: &mut CommandLine) {
    match line.command {
        Command::Add | Command::Edit if line.service.scheduler.is_empty() => {
            line.service.scheduler = DEFAULT_SCHEDULER.to_vec();
        }
        Command::StartDaemon if line.daemon.mcast_ifn.is_empty() => {
            line.daemon.mcast_ifn = DEFAULT_MCAST_INTERFACE.to_vec();
        }
        Command::AddServer | Command::EditServer
            if line.service.fwmark == 0
                && matches!(line.dest.conn_flags, CONN_F_TUNNEL | CONN_F_DROUTE) =>
        {
            line.dest.port = line.service.port;
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------
// Values (§3).

/// C's `isspace` in the C locale.
fn c_isspace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// glibc `strtol(s, &end, 10)` on a 64-bit system: (value, end, ERANGE).
/// `end` is 0 when no digits were read.
pub fn strtol(text: &[u8]) -> (i64, usize, bool) {
    let mut at = 0;
    while at < text.len() && c_isspace(text[at]) {
        at += 1;
    }
    let mut negative = false;
    if let Some(sign @ (b'+' | b'-')) = text.get(at) {
        negative = *sign == b'-';
        at += 1;
    }
    let start = at;
    let mut magnitude: u128 = 0;
    while let Some(digit) = text.get(at).filter(|byte| byte.is_ascii_digit()) {
        magnitude = (magnitude * 10 + u128::from(digit - b'0')).min(u128::from(u64::MAX));
        at += 1;
    }
    if at == start {
        return (0, 0, false);
    }
    let value = if negative {
        -(magnitude as i128)
    } else {
        magnitude as i128
    };
    if value > i128::from(i64::MAX) {
        (i64::MAX, at, true)
    } else if value < i128::from(i64::MIN) {
        (i64::MIN, at, true)
    } else {
        (value as i64, at, false)
    }
}

/// `string_to_number(s, min, max)` (§3.1); `None` where it returns -1.
pub fn string_to_number(text: &[u8], min: i64, max: i64) -> Option<i64> {
    let (value, end, range_error) = strtol(text);
    (end == text.len() && end != 0 && !range_error && (min..=max).contains(&value)).then_some(value)
}

/// glibc `atoi`: `(int) strtol(s, NULL, 10)`.
pub fn atoi(text: &[u8]) -> i32 {
    strtol(text).0 as i32
}

/// `parse_timeout(buf, min, max)` (§3.2).
pub fn parse_timeout(text: Option<&[u8]>, min: i64, max: i64) -> Result<u32, CliError> {
    let Some(text) = text else {
        return Ok(DEFAULT_PERSISTENT_TIMEOUT);
    };
    string_to_number(text, min, max)
        .map(|value| value as u32)
        .ok_or_else(|| CliError::fail_with("invalid timeout value `", text, "' specified"))
}

/// `parse_fwmark(buf)` (§3.3): 1..=u32::MAX.
pub fn parse_fwmark(text: &[u8]) -> Option<u32> {
    let (value, end, range_error) = strtol(text);
    if end != text.len() || end == 0 || range_error {
        return None;
    }
    let value = value as u64; // into an unsigned long, as ipvsadm does
    (value != 0 && value <= u64::from(u32::MAX)).then_some(value as u32)
}

/// glibc `strtoul(s, &end, 0)` from a digit: (value, end); `None` on
/// overflow.
fn strtoul_auto(text: &[u8], start: usize) -> Option<(u64, usize)> {
    let (radix, mut at) = match (text.get(start), text.get(start + 1), text.get(start + 2)) {
        (Some(b'0'), Some(b'x' | b'X'), Some(digit)) if digit.is_ascii_hexdigit() => {
            (16, start + 2)
        }
        (Some(b'0'), _, _) => (8, start),
        _ => (10, start),
    };
    let mut value: u64 = 0;
    while let Some(digit) = text
        .get(at)
        .and_then(|byte| (*byte as char).to_digit(radix))
    {
        value = value
            .checked_mul(u64::from(radix))?
            .checked_add(u64::from(digit))?;
        at += 1;
    }
    Some((value, at))
}

/// glibc `inet_aton` (`1.2.3` is 1.2.0.3, parts in octal or hex, anything
/// after a white space ignored).
pub fn inet_aton(text: &[u8]) -> Option<[u8; 4]> {
    const MAX: [u64; 4] = [0xffff_ffff, 0xff_ffff, 0xffff, 0xff];
    let mut parts: Vec<u8> = Vec::with_capacity(3);
    let mut at = 0;
    let last = loop {
        if !text.get(at).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        let (value, end) = strtoul_auto(text, at)?;
        if value > 0xffff_ffff {
            return None;
        }
        at = end;
        if text.get(at) == Some(&b'.') {
            if parts.len() > 2 || value > 0xff {
                return None;
            }
            parts.push(value as u8);
            at += 1;
        } else {
            break value;
        }
    };
    if let Some(&byte) = text.get(at)
        && !(byte.is_ascii() && c_isspace(byte))
    {
        return None;
    }
    if last > MAX[parts.len()] {
        return None;
    }
    let mut word: u32 = 0;
    for (index, part) in parts.iter().enumerate() {
        word |= u32::from(*part) << (24 - 8 * index);
    }
    Some((word | last as u32).to_be_bytes())
}

/// glibc `inet_pton(AF_INET, …)`: exactly four decimal parts, no leading
/// zeros.
pub fn inet_pton4(text: &[u8]) -> Option<[u8; 4]> {
    let mut octets = [0u8; 4];
    let mut count = 0;
    for part in text.split(|byte| *byte == b'.') {
        if count == 4
            || part.is_empty()
            || part.len() > 3
            || !part.iter().all(u8::is_ascii_digit)
            || (part.len() > 1 && part[0] == b'0')
        {
            return None;
        }
        let value: u32 = part
            .iter()
            .fold(0, |acc, digit| acc * 10 + u32::from(digit - b'0'));
        octets[count] = u8::try_from(value).ok()?;
        count += 1;
    }
    (count == 4).then_some(octets)
}

fn inet_pton6(text: &[u8]) -> Option<Ipv6Addr> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

unsafe extern "C" {
    fn gethostbyname(name: *const libc::c_char) -> *mut libc::hostent;
}

/// `host_to_addr`: `gethostbyname`, the first address of an IPv4 answer.
pub fn host_to_addr(name: &[u8]) -> Option<[u8; 4]> {
    let name = CString::new(name).ok()?;
    // SAFETY: gethostbyname takes a NUL-terminated string and returns a
    // pointer to static storage or NULL; it is read at once, before any
    // other resolver call, and the program is single-threaded here.
    unsafe {
        let host = gethostbyname(name.as_ptr());
        if host.is_null()
            || (*host).h_addrtype != libc::AF_INET
            || (*host).h_length != 4
            || (*host).h_addr_list.is_null()
            || (*(*host).h_addr_list).is_null()
        {
            return None;
        }
        let mut address = [0u8; 4];
        std::ptr::copy_nonoverlapping((*(*host).h_addr_list).cast::<u8>(), address.as_mut_ptr(), 4);
        Some(address)
    }
}

/// `service_to_port`: `getservbyname` in the table of the protocol.
pub fn service_to_port(name: &[u8], protocol: u16) -> Option<u16> {
    let table: &[u8] = match protocol {
        IPPROTO_TCP => b"tcp\0",
        IPPROTO_UDP => b"udp\0",
        IPPROTO_SCTP => b"sctp\0",
        _ => return None,
    };
    let name = CString::new(name).ok()?;
    // SAFETY: both strings are NUL-terminated; the result points to static
    // storage, read at once.
    unsafe {
        let entry = libc::getservbyname(name.as_ptr(), table.as_ptr().cast());
        if entry.is_null() {
            return None;
        }
        Some(u16::from_be((*entry).s_port as u16))
    }
}

pub const SERVICE_NONE: u8 = 0;
pub const SERVICE_ADDR: u8 = 1;
pub const SERVICE_PORT: u8 = 2;

/// `parse_service(buf, svc)` (§3.4): fills af, addr, (netmask for IPv6)
/// and port of `service`, using its protocol for port names.
pub fn parse_service(text: &[u8], service: &mut ServiceArgs) -> u8 {
    if text.iter().all(u8::is_ascii_digit) {
        return SERVICE_NONE;
    }
    let mut host = text;
    let mut port: Option<&[u8]> = None;
    if text.first() == Some(&b'[') {
        let inner = &text[1..];
        let Some(close) = inner.iter().position(|byte| *byte == b']') else {
            return SERVICE_NONE;
        };
        if inner.get(close + 1) != Some(&b':') {
            return SERVICE_NONE;
        }
        host = &inner[..close];
        port = Some(&inner[close + 2..]);
    }
    if let Some(address) = inet_pton6(host) {
        service.addr = address.octets();
        service.af = AF_INET6;
        service.netmask = 128;
    } else {
        port = None;
        if let Some(colon) = host.iter().rposition(|byte| *byte == b':') {
            port = Some(&host[colon + 1..]);
            host = &host[..colon];
        }
        let Some(address) = inet_aton(host).or_else(|| host_to_addr(host)) else {
            return SERVICE_NONE;
        };
        service.addr = [0; 16];
        service.addr[..4].copy_from_slice(&address);
        service.af = AF_INET;
    }
    let Some(port) = port else {
        return SERVICE_ADDR;
    };
    match string_to_number(port, 0, 65535)
        .map(|number| number as u16)
        .or_else(|| service_to_port(port, service.protocol))
    {
        Some(number) => {
            service.port = number;
            SERVICE_ADDR | SERVICE_PORT
        }
        None => SERVICE_NONE,
    }
}

/// `parse_sched_flags(sched, arg)` (§3.7).
pub fn parse_sched_flags(scheduler: &[u8], argument: &[u8]) -> Result<u32, CliError> {
    let scheduler = if scheduler.is_empty() {
        DEFAULT_SCHEDULER
    } else {
        scheduler
    };
    let mut flags = 0;
    let mut tokens = argument
        .split(|byte| *byte == b',')
        .filter(|token| !token.is_empty());
    // strtok on commas only returns NULL at once: ipvsadm then compares
    // NULL (undefined behaviour); report it as an empty flag.
    let first = tokens.next().unwrap_or_default();
    for flag in std::iter::once(first).chain(tokens) {
        let Some(&(_, bit, needs)) = SCHED_FLAGS
            .iter()
            .find(|(name, ..)| name.as_bytes() == flag)
        else {
            return Err(CliError::fail_with("invalid scheduler flag `", flag, "'"));
        };
        flags |= bit;
        if needs.is_some_and(|needed| needed.as_bytes() != scheduler) {
            return Err(CliError::fail_with(
                "incompatible scheduler flag `",
                flag,
                "'",
            ));
        }
    }
    Ok(flags)
}

#[cfg(test)]
mod tests;
