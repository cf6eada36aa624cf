//! keepalived 2.2.7's command line, parsed the way its `getopt_long` does.
//!
//! Hand-written rather than with clap: keepalived's `-t`/`--config-test`
//! takes an *optional* argument that must be attached (`-tFILE`,
//! `--config-test=FILE`; in `-t FILE`, FILE is a stray argument), short
//! options group (`-ln`), and long options may be abbreviated to any
//! unambiguous prefix. clap cannot express the attached-only optional
//! argument of a short option, and users' scripts pass exactly these forms.
//!
//! Every keepalived option is known here so that existing command lines
//! parse; the ones pulse does not act on yet are collected in
//! [`Arguments::not_yet_supported`] for later issues.

use std::ffi::OsString;
use std::path::PathBuf;

/// keepalived's default configuration file.
pub const DEFAULT_CONFIG_FILE: &str = "/etc/keepalived/keepalived.conf";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    Nothing,
    Required,
    /// Only when attached: `-tX`, `--config-test=X`.
    Optional,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flag {
    UseFile,
    ConfigTest,
    ConfigId,
    AllConfig,
    DumpConfig,
    Version,
    Help,
    DontFork,
    NoSyslog,
    LogConsole,
    LogDetail,
    PidFile,
    DontReleaseIpvs,
    DontReleaseVrrp,
    /// `-C`: the checker (LVS) part only.
    CheckOnly,
    /// `-P`: the VRRP part only.
    VrrpOnly,
    /// `--tcp-check=connect|half-open`: pulse's own, how TCP_CHECK asks.
    TcpCheck,
    /// `--cluster=URL[,URL...]`: the SDN mode's cluster store.
    Cluster,
    /// `--apply=FILE`: write a policy to the cluster store.
    Apply,
    /// `--status`: show the cluster's state.
    Status,
    /// `--json`: `--status` or `--which-dip` as JSON.
    Json,
    /// `--which-dip=CLIENT:PORT`: the DIP each Mux chooses for a client.
    WhichDip,
    /// `--signum=NAME`: the number of keepalived's signal for NAME.
    Signum,
    /// `--vip=ADDRESS:PORT[/PROTOCOL]`: the one VIP `--which-dip` asks of.
    Vip,
    /// `--metrics=ADDRESS:PORT`: serve Prometheus' /metrics there.
    Metrics,
    /// `-u MASK`, `--umask=MASK`: the file creation mask.
    Umask,
    /// A keepalived option pulse accepts but does not act on yet.
    Other,
}

struct Spec {
    short: Option<char>,
    long: &'static str,
    takes: Takes,
    flag: Flag,
    /// The value's name in the help (`FILE`), for an option that takes one.
    value: &'static str,
    /// What the option does, one line per help line; empty for the
    /// keepalived options pulse accepts without acting on them (left out
    /// of the help, named together at its end).
    help: &'static str,
}

const fn option(short: Option<char>, long: &'static str, takes: Takes, flag: Flag) -> Spec {
    Spec {
        short,
        long,
        takes,
        flag,
        value: "",
        help: "",
    }
}

impl Spec {
    /// The option as the help shows it: its value named `value`, doing
    /// `help`.
    const fn described(self, value: &'static str, help: &'static str) -> Spec {
        Spec {
            value,
            help,
            ..self
        }
    }
}

use Flag::*;
use Takes::*;

/// keepalived 2.2.7's options (`keepalived --help`), plus `--dump-config`
/// and `--tcp-check`.
const OPTIONS: &[Spec] = &[
    option(Some('f'), "use-file", Required, UseFile).described(
        "FILE",
        "Use the specified configuration file\n(default '/etc/keepalived/keepalived.conf')",
    ),
    option(Some('P'), "vrrp", Nothing, VrrpOnly).described(
        "",
        "Only run VRRP (no checkers, no IPVS)",
    ),
    option(Some('C'), "check", Nothing, CheckOnly).described(
        "",
        "Only run the checkers and IPVS",
    ),
    option(Some('B'), "no_bfd", Nothing, Other),
    option(None, "all", Nothing, Other),
    option(Some('l'), "log-console", Nothing, LogConsole).described(
        "",
        "Log messages to the console (stderr)",
    ),
    option(Some('D'), "log-detail", Nothing, LogDetail).described(
        "",
        "Detailed log messages",
    ),
    option(Some('S'), "log-facility", Required, Other),
    option(Some('G'), "no-syslog", Nothing, NoSyslog).described(
        "",
        "Don't log via syslog",
    ),
    option(Some('u'), "umask", Required, Umask).described(
        "MASK",
        "The file creation mask (C's notation: 022, 0x12),\nbefore the configuration's umask; default 0177",
    ),
    option(Some('X'), "release-vips", Nothing, Other),
    option(Some('V'), "dont-release-vrrp", Nothing, DontReleaseVrrp).described(
        "",
        "Don't remove VRRP VIPs and VROUTEs on daemon stop",
    ),
    option(Some('I'), "dont-release-ipvs", Nothing, DontReleaseIpvs).described(
        "",
        "Don't remove the IPVS services pulse programmed\nwhen it stops (the next pulse adopts them)",
    ),
    option(Some('R'), "dont-respawn", Nothing, Other),
    option(Some('n'), "dont-fork", Nothing, DontFork).described(
        "",
        "Don't fork the daemon process",
    ),
    option(Some('d'), "dump-conf", Nothing, Other),
    option(Some('p'), "pid", Required, PidFile).described(
        "FILE",
        "Use the specified pidfile (default /run/pulse.pid)",
    ),
    option(Some('r'), "vrrp_pid", Required, Other),
    option(Some('T'), "genhash", Nothing, Other),
    option(Some('c'), "checkers_pid", Required, Other),
    option(Some('a'), "address-monitoring", Nothing, Other),
    option(Some('b'), "bfd_pid", Required, Other),
    option(Some('x'), "snmp", Nothing, Other),
    option(Some('A'), "snmp-agent-socket", Required, Other),
    option(Some('s'), "namespace", Required, Other),
    option(Some('m'), "core-dump", Nothing, Other),
    option(Some('M'), "core-dump-pattern", Optional, Other),
    option(Some('e'), "all-config", Nothing, AllConfig).described(
        "",
        "Error if any configuration file is missing (as if\nevery include were includea)",
    ),
    option(Some('i'), "config-id", Required, ConfigId).described(
        "ID",
        "Skip any configuration lines beginning '@' that don't\nmatch ID, or any lines beginning @^ that do match.\nThe config-id defaults to the node name up to its\nfirst dot",
    ),
    option(None, "signum", Required, Signum).described(
        "SIGFUNC",
        "Print the number of the signal that asks for\nSIGFUNC (STOP, RELOAD, DATA, STATS,\nSTATS_CLEAR, JSON), as keepalived does",
    ),
    option(Some('t'), "config-test", Optional, ConfigTest).described(
        "LOG_FILE",
        "Check the configuration and exit; the report goes\nto stderr, or to LOG_FILE",
    ),
    option(Some('v'), "version", Nothing, Version).described(
        "",
        "Display the version number",
    ),
    option(Some('h'), "help", Nothing, Help).described(
        "",
        "Display this help message",
    ),
    option(None, "dump-config", Nothing, DumpConfig).described(
        "",
        "Print the resolved configuration (after includes,\ndefinitions, conditionals and defaults) as JSON",
    ),
    option(None, "metrics", Required, Metrics).described(
        "ADDRESS:PORT",
        "Serve Prometheus metrics at http://ADDRESS:PORT/metrics\n(VRRP under the keepalived exporters' names,\nreal servers' health, reloads; a Mux's sync lag,\nVIPs and tenants' IPVS counters;\ndocs/observability.md)",
    ),
    option(None, "tcp-check", Required, TcpCheck).described(
        "MODE",
        "How TCP_CHECK asks a real server: connect (the\ndefault, keepalived's full connection, which the\nserver accepts) or half-open (a bare SYN: up on\nthe server's SYN-ACK, down on its reset; the\nserver's application never sees a connection;\nneeds CAP_NET_RAW, else connect, logged once)",
    ),
    // The SDN mode's (docs/sdn.md). None is a prefix of a keepalived
    // option, nor has one as a prefix: every abbreviation that meant one
    // of keepalived's still does.
    option(None, "cluster", Required, Cluster).described(
        "URL[,URL...]",
        "The SDN mode's cluster store (etcd members), for\n--apply and --status (docs/sdn.md)",
    ),
    option(None, "apply", Required, Apply).described(
        "FILE",
        "Check FILE, a policy (keepalived.conf syntax with\nvirtual_network blocks), and write it to the\ncluster store in one transaction; with an error\nnothing is written (exit 4)",
    ),
    option(None, "status", Nothing, Status).described(
        "",
        "Show what the pulse running here knows (its\npid file's, -p): VRRP instances, real servers'\nhealth and why; with --cluster, the cluster:\nVIPs, DIPs, hosts, health, and the policy\nrevision each Mux and agent applied",
    ),
    option(None, "json", Nothing, Json).described(
        "",
        "--status or --which-dip as one JSON document",
    ),
    option(None, "which-dip", Required, WhichDip).described(
        "ADDRESS:PORT",
        "For a client's address and port, the DIP each Mux\nchooses for each VIP (mh: computed from the\ntable each Mux's kernel holds), and whether\nthey agree",
    ),
    option(None, "vip", Required, Vip).described(
        "ADDRESS:PORT[/tcp|udp|sctp]",
        "The one VIP --which-dip asks of (tcp unless\nwritten)",
    ),
];

/// Where `-t` writes its report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigTest {
    Stderr,
    /// `-tFILE` / `--config-test=FILE`: keepalived writes the report there.
    File(PathBuf),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arguments {
    pub config_file: PathBuf,
    pub config_test: Option<ConfigTest>,
    pub config_id: Option<String>,
    pub all_config: bool,
    pub dump_config: bool,
    pub version: bool,
    pub help: bool,
    /// `-n`: stay in the foreground.
    pub dont_fork: bool,
    /// `-l`: log to the console (stderr) too.
    pub log_console: bool,
    /// `-G`: not to the system log.
    pub no_syslog: bool,
    /// `-D`: detailed logs.
    pub log_detail: bool,
    /// `-p FILE`: the pid file.
    pub pid_file: Option<PathBuf>,
    /// `--dont-release-ipvs`: leave the IPVS table as it is at stop.
    pub dont_release_ipvs: bool,
    /// `-u`: the file creation mask, before the configuration's `umask`.
    pub umask: Option<u32>,
    /// `-V`: VRRP's virtual addresses, routes and rules, and its macvlans,
    /// stay when pulse stops (no priority 0 advert either).
    pub dont_release_vrrp: bool,
    pub check_only: bool,
    pub vrrp_only: bool,
    /// `--tcp-check`: TCP_CHECK by a half-open SYN probe rather than
    /// keepalived's full connection (the default).
    pub tcp_check_half_open: bool,
    /// `--cluster`: the cluster store's members.
    pub cluster: Option<String>,
    /// `--apply FILE`.
    pub apply: Option<PathBuf>,
    pub status: bool,
    pub json: bool,
    /// `--which-dip CLIENT:PORT`, as written.
    pub which_dip: Option<String>,
    /// `--metrics`: where /metrics is served.
    pub metrics: Option<std::net::SocketAddr>,
    /// `--vip ADDRESS:PORT[/PROTOCOL]`, as written.
    pub vip: Option<String>,
    /// `--signum NAME`, as written.
    pub signum: Option<String>,
    /// keepalived options accepted but not acted on yet, as written.
    pub not_yet_supported: Vec<String>,
    /// Arguments that are not options: keepalived reports them and goes on.
    pub unexpected: Vec<String>,
}

impl Arguments {
    /// How the configuration is read (`-i`, `-e`).
    pub fn reading_options(&self) -> fulcrum_config::lexer::Options {
        fulcrum_config::lexer::Options {
            config_id: self.config_id.clone(),
            all_config: self.all_config,
            random_seed: None,
        }
    }
}

impl Default for Arguments {
    fn default() -> Self {
        Arguments {
            config_file: PathBuf::from(DEFAULT_CONFIG_FILE),
            config_test: None,
            config_id: None,
            all_config: false,
            dump_config: false,
            version: false,
            help: false,
            dont_fork: false,
            log_console: false,
            no_syslog: false,
            log_detail: false,
            pid_file: None,
            dont_release_ipvs: false,
            dont_release_vrrp: false,
            umask: None,
            check_only: false,
            vrrp_only: false,
            tcp_check_half_open: false,
            cluster: None,
            apply: None,
            status: false,
            json: false,
            which_dip: None,
            metrics: None,
            vip: None,
            signum: None,
            not_yet_supported: Vec::new(),
            unexpected: Vec::new(),
        }
    }
}

/// A command line keepalived would refuse (it exits with status 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Parses the arguments after the program name.
pub fn parse(arguments: impl IntoIterator<Item = OsString>) -> Result<Arguments, UsageError> {
    let arguments: Vec<String> = arguments
        .into_iter()
        .map(|argument| argument.to_string_lossy().into_owned())
        .collect();
    let mut parsed = Arguments::default();
    let mut index = 0;
    let mut only_operands = false;
    while index < arguments.len() {
        let argument = &arguments[index];
        index += 1;
        if only_operands || argument == "-" || !argument.starts_with('-') {
            parsed.unexpected.push(argument.clone());
            continue;
        }
        if argument == "--" {
            only_operands = true;
            continue;
        }
        if let Some(long) = argument.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (long, None),
            };
            let spec = find_long(name)?;
            let value = match spec.takes {
                Nothing => {
                    if attached.is_some() {
                        return Err(UsageError(format!(
                            "option '--{}' doesn't allow an argument",
                            spec.long
                        )));
                    }
                    None
                }
                Optional => attached,
                Required => match attached {
                    Some(value) => Some(value),
                    None => {
                        let Some(value) = arguments.get(index) else {
                            return Err(UsageError(format!(
                                "option '--{}' requires an argument",
                                spec.long
                            )));
                        };
                        index += 1;
                        Some(value.clone())
                    }
                },
            };
            apply(&mut parsed, spec, value, argument)?;
            if ends_parsing(spec) {
                return Ok(parsed);
            }
            continue;
        }
        // A group of short options: `-ln`, `-fFILE`, `-tFILE`.
        let group: Vec<char> = argument[1..].chars().collect();
        let mut position = 0;
        while position < group.len() {
            let letter = group[position];
            position += 1;
            let Some(spec) = OPTIONS.iter().find(|spec| spec.short == Some(letter)) else {
                return Err(UsageError(format!("invalid option -- '{letter}'")));
            };
            let rest: String = group[position..].iter().collect();
            let value = match spec.takes {
                Nothing => None,
                Optional => {
                    position = group.len();
                    (!rest.is_empty()).then_some(rest)
                }
                Required => {
                    position = group.len();
                    if !rest.is_empty() {
                        Some(rest)
                    } else if let Some(value) = arguments.get(index) {
                        index += 1;
                        Some(value.clone())
                    } else {
                        return Err(UsageError(format!(
                            "option requires an argument -- '{letter}'"
                        )));
                    }
                }
            };
            apply(&mut parsed, spec, value, &format!("-{letter}"))?;
            if ends_parsing(spec) {
                return Ok(parsed);
            }
        }
    }
    Ok(parsed)
}

/// Whether keepalived exits as it reads this option (`-v`, `-h`,
/// `--signum`), so that nothing after it is read, right or wrong.
fn ends_parsing(spec: &Spec) -> bool {
    matches!(spec.flag, Version | Help | Signum)
}

/// getopt_long: an exact name, or an unambiguous prefix.
fn find_long(name: &str) -> Result<&'static Spec, UsageError> {
    if let Some(spec) = OPTIONS.iter().find(|spec| spec.long == name) {
        return Ok(spec);
    }
    let candidates: Vec<&Spec> = OPTIONS
        .iter()
        .filter(|spec| !name.is_empty() && spec.long.starts_with(name))
        .collect();
    match candidates.as_slice() {
        [spec] => Ok(spec),
        [] => Err(UsageError(format!("unrecognized option '--{name}'"))),
        _ => Err(UsageError(format!("option '--{name}' is ambiguous"))),
    }
}

fn apply(
    parsed: &mut Arguments,
    spec: &Spec,
    value: Option<String>,
    written: &str,
) -> Result<(), UsageError> {
    match spec.flag {
        UseFile => parsed.config_file = PathBuf::from(value.unwrap_or_default()),
        ConfigTest => {
            parsed.config_test = Some(match value {
                Some(file) => ConfigTest::File(PathBuf::from(file)),
                None => ConfigTest::Stderr,
            })
        }
        ConfigId => parsed.config_id = value,
        AllConfig => parsed.all_config = true,
        DumpConfig => parsed.dump_config = true,
        Version => parsed.version = true,
        Help => parsed.help = true,
        DontFork => parsed.dont_fork = true,
        LogConsole => parsed.log_console = true,
        NoSyslog => parsed.no_syslog = true,
        LogDetail => parsed.log_detail = true,
        PidFile => parsed.pid_file = value.map(PathBuf::from),
        DontReleaseIpvs => parsed.dont_release_ipvs = true,
        DontReleaseVrrp => parsed.dont_release_vrrp = true,
        CheckOnly => parsed.check_only = true,
        VrrpOnly => parsed.vrrp_only = true,
        TcpCheck => {
            parsed.tcp_check_half_open = match value.as_deref() {
                Some("half-open") => true,
                Some("connect") => false,
                other => {
                    return Err(UsageError(format!(
                        "option '--tcp-check' takes connect or half-open, not '{}'",
                        other.unwrap_or_default()
                    )));
                }
            }
        }
        Cluster => parsed.cluster = value,
        Apply => parsed.apply = value.map(PathBuf::from),
        Status => parsed.status = true,
        Json => parsed.json = true,
        WhichDip => parsed.which_dip = value,
        Signum => match value {
            Some(function) if !function.is_empty() => parsed.signum = Some(function),
            _ => {
                return Err(UsageError(
                    "option '--signum' requires an argument".to_owned(),
                ));
            }
        },
        Vip => parsed.vip = value,
        // keepalived's set_umask: strtoll in C's notation, within 0777;
        // otherwise said on stderr and left out.
        Umask => {
            let written = value.unwrap_or_default();
            match fulcrum_config::grammar::global_defs::umask_number(&written) {
                Some(bits) => parsed.umask = Some(bits),
                None => eprint!("Invalid --umask option {written}"),
            }
        }
        Metrics => {
            let written = value.unwrap_or_default();
            parsed.metrics = Some(written.parse().map_err(|_| {
                UsageError(format!(
                    "option '--metrics' takes ADDRESS:PORT (such as 127.0.0.1:9650 or [::1]:9650), not '{written}'"
                ))
            })?)
        }
        Other => parsed.not_yet_supported.push(match value {
            Some(value) => format!("{written} {value}"),
            None => written.to_string(),
        }),
    }
    Ok(())
}

/// What `pulse --help` says after the options, and the man page's
/// DESCRIPTION.
const ABOUT: &str = "keepalived's daemon for IPVS and VRRP: the same command line, \
configuration, checkers and signals, driving the kernel's IPVS (Fulcrum)";

/// What `pulse --help` says after the options.
const SIGNALS: &str = "\
Signals: SIGHUP reloads the configuration (refused, with the old one kept, if
it has errors); SIGTERM and SIGINT stop; SIGUSR2 writes keepalived.stats and
SIGRTMIN+2 keepalived.json to $TMPDIR (else /tmp), as keepalived 2.2.7 does.
Every other keepalived 2.2.7 option is accepted; pulse does not act on them yet.";

/// The exit statuses, for the help and the man page.
const EXIT_STATUS: &str = "\
Exit status: 0 clean, 1 bad command line, 3 cannot run (no IPVS, pid file
held, the cluster store unreachable), 4 configuration errors (--apply: nothing
written; --status: the store holds what its schema cannot read; --which-dip:
the Muxes disagree, or no such VIP), 5 warnings
only with -t (docs/pulse.md).";

/// The man page's sections after the options.
pub const MAN_SECTIONS: &[(&str, &str)] = &[("SIGNALS", SIGNALS), ("EXIT STATUS", EXIT_STATUS)];

/// Where an option's description starts in the help.
const HELP_COLUMN: usize = 31;

/// `pulse --help`: the options pulse acts on, from [`OPTIONS`], as
/// keepalived lays its help out.
pub fn help() -> String {
    let mut text = String::from("Usage: pulse [OPTION...]\n");
    for spec in OPTIONS.iter().filter(|spec| !spec.help.is_empty()) {
        let short = spec
            .short
            .map_or_else(|| "    ".to_owned(), |short| format!("-{short}, "));
        let value = match spec.takes {
            Nothing => String::new(),
            Required => format!("={}", spec.value),
            Optional => format!("[={}]", spec.value),
        };
        let left = format!("  {short}--{}{value}", spec.long);
        let mut lines = spec.help.lines();
        let first = lines.next().unwrap_or_default();
        if left.len() < HELP_COLUMN {
            text.push_str(&format!("{left:HELP_COLUMN$}{first}\n"));
        } else {
            text.push_str(&format!("{left}\n{:HELP_COLUMN$}{first}\n", ""));
        }
        for line in lines {
            text.push_str(&format!("{:width$}{line}\n", "", width = HELP_COLUMN + 1));
        }
    }
    text.push_str(&format!("\n{SIGNALS}\n{EXIT_STATUS}\n"));
    text
}

/// The command line as a clap command, from [`OPTIONS`] too, for its man
/// page and shell completions (`cargo xtask generate`): not a parser
/// (keepalived's forms are parsed here, see the module's documentation).
pub fn command() -> clap::Command {
    let mut command = clap::Command::new("pulse")
        .about(ABOUT)
        .version(env!("CARGO_PKG_VERSION"))
        .disable_help_flag(true)
        .disable_version_flag(true);
    for spec in OPTIONS.iter().filter(|spec| !spec.help.is_empty()) {
        let mut argument = clap::Arg::new(spec.long)
            .long(spec.long)
            .help(spec.help.replace('\n', " "));
        if let Some(short) = spec.short {
            argument = argument.short(short);
        }
        argument = match spec.takes {
            Nothing => argument.action(clap::ArgAction::SetTrue),
            Required => argument.value_name(spec.value).num_args(1),
            Optional => argument
                .value_name(spec.value)
                .num_args(0..=1)
                .require_equals(true),
        };
        command = command.arg(argument);
    }
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option pulse acts on is in the help, the man page and the
    /// completions (they come from its description); the keepalived
    /// options it only accepts are not.
    #[test]
    fn every_option_pulse_acts_on_is_described() {
        let help = help();
        let command = command();
        for spec in OPTIONS {
            let described = !spec.help.is_empty();
            assert_eq!(described, spec.flag != Other, "--{}", spec.long);
            // A whole name: `--all` is not `--all-config`.
            let needle = format!("--{}", spec.long);
            let in_help = help.match_indices(&needle).any(|(at, _)| {
                help[at + needle.len()..].chars().next().is_none_or(|next| {
                    !(next.is_ascii_alphanumeric() || next == '-' || next == '_')
                })
            });
            assert_eq!(in_help, described, "--{} in the help", spec.long);
            assert_eq!(
                command
                    .get_arguments()
                    .any(|argument| argument.get_long() == Some(spec.long)),
                described,
                "--{} in the man page",
                spec.long
            );
            if described {
                assert_eq!(
                    spec.value.is_empty(),
                    spec.takes == Nothing,
                    "--{}: a value is named where one is taken",
                    spec.long
                );
            }
        }
        command.debug_assert();
    }
}
