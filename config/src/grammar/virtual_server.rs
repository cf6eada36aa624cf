//! `virtual_server_group`, `virtual_server` and `real_server`
//! (keepalived's check_parser.c), with the checks of keepalived's
//! `validate_check_config` (check_data.c) as warnings.

use std::net::IpAddr;
use std::time::Duration;

use nom::Parser;
use nom::bytes::complete::take_while1;
use nom::character::complete::char;
use nom::combinator::{all_consuming, opt};

use super::checkers::DEFAULT_DELAY_LOOP;
use super::common::{self, ignored_duplicate};
use super::{Context, Keyword, Node, checkers, values};
use crate::model::GlobalDefs;
use crate::model::{
    CheckDefaults, Config, Family, ForwardingMethod, Granularity, GroupEntry, Protocol, RealServer,
    Scheduler, ServiceFlags, SorryServer, Tunnel, TunnelChecksum, TunnelKind, VirtualServer,
    VirtualServerAddress, VirtualServerGroup, WrittenDefaults,
};
use crate::syntax::{Span, Word};

/// keepalived's `IPVS_SVC_PERSISTENT_TIMEOUT`: a bare `persistence_timeout`.
pub const DEFAULT_PERSISTENCE_TIMEOUT: Duration = Duration::from_secs(360);
/// keepalived's `IPVS_WEIGHT_MAX`.
const WEIGHT_MAXIMUM: i128 = i32::MAX as i128;

/// Keywords shared by virtual servers and real servers (the real server's
/// value overrides the virtual server's, the checker's the real server's).
const CHECK_DEFAULTS: [Keyword; 8] = [
    Keyword::leaf("retry", 1, Some(1)),
    Keyword::leaf("delay_before_retry", 1, Some(1)),
    Keyword::leaf("warmup", 1, Some(1)),
    Keyword::leaf("delay_loop", 1, Some(1)),
    Keyword::leaf("connect_timeout", 1, Some(1)),
    Keyword::leaf("inhibit_on_failure", 0, Some(1)),
    Keyword::leaf("virtualhost", 1, None),
    Keyword::leaf("snmp_name", 1, None).not_acted_on(),
];

/// A block's table: the shared keywords, then its own (sized by the
/// compiler: the arrays' lengths are in their types).
const fn with_check_defaults<const TOTAL: usize>(own: &[Keyword]) -> [Keyword; TOTAL] {
    assert!(CHECK_DEFAULTS.len() + own.len() == TOTAL);
    let mut table = [Keyword::leaf("", 0, None); TOTAL];
    let mut index = 0;
    while index < TOTAL {
        table[index] = if index < CHECK_DEFAULTS.len() {
            CHECK_DEFAULTS[index]
        } else {
            own[index - CHECK_DEFAULTS.len()]
        };
        index += 1;
    }
    table
}

const LVS_METHOD_WORDS: Option<u8> = Some(6);

const VIRTUAL_SERVER_OWN: [Keyword; 32] = [
    // Its quorum's SMTP alerts.
    Keyword::leaf("smtp_alert", 0, Some(1)),
    Keyword::leaf("ip_family", 1, Some(1)),
    Keyword::leaf("lb_algo", 1, Some(1)),
    Keyword::leaf("lvs_sched", 1, Some(1)),
    Keyword::leaf("hashed", 0, Some(0)),
    Keyword::leaf("ops", 0, Some(0)),
    Keyword::leaf("flag-1", 0, Some(0)),
    Keyword::leaf("flag-2", 0, Some(0)),
    Keyword::leaf("flag-3", 0, Some(0)),
    Keyword::leaf("sh-port", 0, Some(0)),
    Keyword::leaf("sh-fallback", 0, Some(0)),
    Keyword::leaf("mh-port", 0, Some(0)),
    Keyword::leaf("mh-fallback", 0, Some(0)),
    Keyword::leaf("lb_kind", 1, LVS_METHOD_WORDS),
    Keyword::leaf("lvs_method", 1, LVS_METHOD_WORDS),
    Keyword::leaf("persistence_engine", 1, Some(1)),
    Keyword::leaf("virtual_network", 1, Some(1)),
    Keyword::leaf("persistence_timeout", 0, Some(1)),
    Keyword::leaf("persistence_granularity", 1, Some(1)),
    Keyword::leaf("protocol", 1, Some(1)),
    Keyword::leaf("ha_suspend", 0, Some(0)),
    Keyword::leaf("alpha", 0, Some(0)),
    Keyword::leaf("omega", 0, Some(0)),
    Keyword::leaf("quorum_up", 1, None),
    Keyword::leaf("quorum_down", 1, None),
    Keyword::leaf("quorum", 1, Some(1)),
    Keyword::leaf("hysteresis", 1, Some(1)),
    Keyword::leaf("weight", 1, Some(1)),
    Keyword::leaf("sorry_server", 1, Some(2)),
    Keyword::leaf("sorry_server_inhibit", 0, Some(1)),
    Keyword::leaf("sorry_server_lvs_method", 1, LVS_METHOD_WORDS),
    Keyword::block("real_server", 1, Some(2), REAL_SERVER),
];

pub static VIRTUAL_SERVER: &[Keyword] = &with_check_defaults::<
    { CHECK_DEFAULTS.len() + VIRTUAL_SERVER_OWN.len() },
>(&VIRTUAL_SERVER_OWN);

const REAL_SERVER_OWN: [Keyword; 18] = [
    // A real server's own: its checkers' SMTP alerts (keepalived does not
    // take it from the virtual server's).
    Keyword::leaf("smtp_alert", 0, Some(1)),
    Keyword::leaf("weight", 1, Some(1)),
    Keyword::leaf("lvs_method", 1, LVS_METHOD_WORDS),
    Keyword::leaf("uthreshold", 1, Some(1)),
    Keyword::leaf("lthreshold", 1, Some(1)),
    Keyword::leaf("notify_up", 1, None),
    Keyword::leaf("notify_down", 1, None),
    Keyword::leaf("alpha", 0, Some(1)),
    Keyword::block("TCP_CHECK", 0, Some(0), checkers::TCP),
    Keyword::block("HTTP_GET", 0, Some(0), checkers::HTTP),
    Keyword::block("SSL_GET", 0, Some(0), checkers::SSL_GET),
    Keyword::block("MISC_CHECK", 0, Some(0), checkers::MISC),
    Keyword::block("SMTP_CHECK", 0, Some(0), checkers::SMTP),
    Keyword::block("DNS_CHECK", 0, Some(0), checkers::DNS),
    Keyword::block("UDP_CHECK", 0, Some(0), checkers::UDP),
    Keyword::block("PING_CHECK", 0, Some(0), checkers::PING),
    Keyword::block("FILE_CHECK", 0, Some(0), checkers::FILE),
    Keyword::block("BFD_CHECK", 0, Some(0), checkers::BFD),
];

pub static REAL_SERVER: &[Keyword] =
    &with_check_defaults::<{ CHECK_DEFAULTS.len() + REAL_SERVER_OWN.len() }>(&REAL_SERVER_OWN);

/// Reads a value shared by virtual servers, real servers and checkers.
/// Returns false if the keyword is not one of them.
pub fn read_check_default(
    node: &Node,
    defaults: &mut CheckDefaults,
    context: &mut Context,
) -> bool {
    let argument = node.argument(0);
    match node.name() {
        "retry" => {
            // keepalived: "retry value invalid" for 0 or non-numbers.
            if let Some(word) = argument {
                defaults.retry =
                    values::integer(context, word, 1, u32::MAX.into(), "retry").or(defaults.retry);
            }
        }
        "delay_before_retry" => {
            if let Some(word) = argument {
                defaults.delay_before_retry = values::timer(context, word, "delay_before_retry")
                    .or(defaults.delay_before_retry);
            }
        }
        "warmup" => {
            if let Some(word) = argument {
                defaults.warmup = values::timer(context, word, "warmup").or(defaults.warmup);
            }
        }
        "delay_loop" => {
            if let Some(word) = argument {
                defaults.delay_loop = values::delay_loop(context, word).or(defaults.delay_loop);
            }
        }
        "connect_timeout" => {
            if let Some(word) = argument {
                defaults.connect_timeout =
                    values::connect_timeout(context, word).or(defaults.connect_timeout);
            }
        }
        "inhibit_on_failure" => {
            if let Some(value) = values::optional_boolean(context, argument, "inhibit_on_failure") {
                defaults.inhibit_on_failure = Some(value);
            }
        }
        "smtp_alert" => {
            if let Some(value) = values::optional_boolean(context, argument, "smtp_alert") {
                defaults.smtp_alert = Some(value);
            }
        }
        "virtualhost" => defaults.virtualhost = Some(common::joined(node)),
        _ => return false,
    }
    true
}

/// `virtual_server_group NAME { <IPADDR>[-<END>|/<LEN>] [<PORT>] | fwmark N [inet|inet6] }`.
pub fn read_group(node: &Node, config: &mut Config, context: &mut Context) {
    let mut group = VirtualServerGroup {
        name: common::first(node),
        entries: Vec::new(),
    };
    for line in node.children {
        if line.name() == "fwmark" {
            let Some(mark_word) = line.argument(0) else {
                context.error(line.keyword.span, "'fwmark' needs a mark number");
                continue;
            };
            let Some(mark) =
                values::integer::<u32>(context, mark_word, 0, u32::MAX.into(), "fwmark")
            else {
                continue;
            };
            if mark == 0 {
                // keepalived accepts it; IPVS has no service for mark 0.
                context.warning(mark_word.span, "fwmark 0 matches no packet");
            }
            let family = match line.argument(1) {
                None => None,
                Some(word) => values::choice(
                    context,
                    word,
                    &[("inet", Family::Inet), ("inet6", Family::Inet6)],
                    "address family",
                ),
            };
            warn_extra(
                context,
                &line.arguments.iter().collect::<Vec<_>>(),
                2,
                "a fwmark entry",
            );
            group.entries.push(GroupEntry::Fwmark { mark, family });
            continue;
        }
        let Some((first, last)) = address_range(context, line.keyword) else {
            continue;
        };
        let port = match line.argument(0) {
            None => None,
            Some(word) => match values::port(context, word, "port") {
                Some(port) => Some(port),
                None => continue,
            },
        };
        warn_extra(
            context,
            &line.arguments.iter().collect::<Vec<_>>(),
            1,
            "an address entry",
        );
        group
            .entries
            .push(GroupEntry::Addresses { first, last, port });
    }
    if group.entries.is_empty() {
        context.warning(
            node.end_span(),
            format!(
                "virtual server group '{}' has no entries; keepalived removes it",
                group.name
            ),
        );
        return;
    }
    if config
        .virtual_server_groups
        .iter()
        .any(|existing| existing.name == group.name)
    {
        context.warning(
            node.keyword.span,
            format!("virtual server group '{}' defined twice", group.name),
        );
    }
    config.virtual_server_groups.push(group);
}

fn warn_extra(context: &mut Context, words: &[&Word], allowed: usize, what: &str) {
    if let Some(span) = words.get(allowed..).and_then(super::span_of) {
        context.warning(span, format!("extra words after {what} ignored"));
    }
}

/// `A.B.C.D`, `A.B.C.D-E` (last byte, or last group for IPv6),
/// `A.B.C.D-E.F.G.H`, `A.B.C.D/NN`.
fn address_range(context: &mut Context, word: &Word) -> Option<(IpAddr, IpAddr)> {
    let text = word.text.as_str();
    let address_text = || {
        take_while1::<_, &str, nom::error::Error<&str>>(|character: char| {
            character.is_ascii_hexdigit() || ".:".contains(character)
        })
    };
    let parsed: nom::IResult<&str, (&str, Option<char>, Option<&str>)> = all_consuming((
        address_text(),
        opt(char('-').or(char('/'))),
        opt(address_text()),
    ))
    .parse(text);
    let fail = |context: &mut Context| {
        context.error(
            word.span,
            format!(
                "invalid virtual server group entry '{text}': expected an address, a range \
                 (A.B.C.D-E or A.B.C.D-E.F.G.H), a prefix (A.B.C.D/NN) or 'fwmark N'"
            ),
        );
        None
    };
    let Ok((_, (start_text, separator, end_text))) = parsed else {
        return fail(context);
    };
    let Some(first) = values::parse_address(start_text) else {
        return fail(context);
    };
    match (separator, end_text) {
        (None, None) => Some((first, first)),
        (Some('/'), Some(length)) => {
            let prefix = values::parse_prefix(&format!("{start_text}/{length}")).ok()?;
            Some(network_range(prefix.address, prefix.length))
        }
        (Some('-'), Some(end)) => {
            let last = if let Some(address) = values::parse_address(end) {
                address
            } else {
                // Only the last byte (IPv4) or group (IPv6) is given.
                match first {
                    IpAddr::V4(start) => {
                        let Ok(byte) = end.parse::<u8>() else {
                            return fail(context);
                        };
                        let mut octets = start.octets();
                        octets[3] = byte;
                        IpAddr::from(octets)
                    }
                    IpAddr::V6(start) => {
                        let Ok(group) = u16::from_str_radix(end, 16) else {
                            return fail(context);
                        };
                        let mut segments = start.segments();
                        segments[7] = group;
                        IpAddr::from(segments)
                    }
                }
            };
            if last.is_ipv4() != first.is_ipv4() || last < first {
                context.error(
                    word.span,
                    format!("invalid address range '{text}': the end must be the same family and not below the start"),
                );
                return None;
            }
            Some((first, last))
        }
        _ => fail(context),
    }
}

fn network_range(address: IpAddr, length: u8) -> (IpAddr, IpAddr) {
    match address {
        IpAddr::V4(address) => {
            let bits = u32::from(address);
            let mask = if length == 0 {
                0
            } else {
                u32::MAX << (32 - length)
            };
            (
                IpAddr::from((bits & mask).to_be_bytes()),
                IpAddr::from((bits | !mask).to_be_bytes()),
            )
        }
        IpAddr::V6(address) => {
            let bits = u128::from(address);
            let mask = if length == 0 {
                0
            } else {
                u128::MAX << (128 - length)
            };
            (
                IpAddr::from((bits & mask).to_be_bytes()),
                IpAddr::from((bits | !mask).to_be_bytes()),
            )
        }
    }
}

/// `NAT|DR|TUN [type ipip|gue port N|gre] [nocsum|csum|remcsum]`.
fn forwarding_method(context: &mut Context, words: &[&Word]) -> Option<ForwardingMethod> {
    let method = words.first()?;
    match method.text.as_str() {
        "NAT" => {
            warn_extra(context, words, 1, "NAT");
            Some(ForwardingMethod::Nat)
        }
        "DR" => {
            warn_extra(context, words, 1, "DR");
            Some(ForwardingMethod::DirectRouting)
        }
        "TUN" => {
            let mut tunnel = Tunnel {
                kind: TunnelKind::Ipip,
                checksum: TunnelChecksum::NoChecksum,
            };
            let mut index = 1;
            while index < words.len() {
                let word = words[index];
                match word.text.as_str() {
                    "type" => {
                        let Some(kind) = words.get(index + 1) else {
                            context.error(word.span, "'type' needs ipip, gue or gre");
                            return None;
                        };
                        index += 1;
                        tunnel.kind = match kind.text.as_str() {
                            "ipip" => TunnelKind::Ipip,
                            "gre" => TunnelKind::Gre,
                            "gue" => {
                                let port = match (words.get(index + 1), words.get(index + 2)) {
                                    (Some(keyword), Some(value)) if keyword.text == "port" => {
                                        index += 2;
                                        values::integer(context, value, 1, 65535, "GUE port")?
                                    }
                                    _ => {
                                        context.error(kind.span, "tunnel type gue needs 'port N'");
                                        return None;
                                    }
                                };
                                TunnelKind::Gue { port }
                            }
                            _ => {
                                context.error(
                                    kind.span,
                                    format!(
                                        "unknown tunnel type '{}': expected ipip, gue or gre",
                                        kind.text
                                    ),
                                );
                                return None;
                            }
                        };
                    }
                    "nocsum" => tunnel.checksum = TunnelChecksum::NoChecksum,
                    "csum" => tunnel.checksum = TunnelChecksum::Checksum,
                    "remcsum" => tunnel.checksum = TunnelChecksum::RemoteChecksum,
                    other => {
                        context.error(
                            word.span,
                            format!("unexpected '{other}' after TUN: expected 'type ...' or nocsum, csum, remcsum"),
                        );
                        return None;
                    }
                }
                index += 1;
            }
            if tunnel.checksum != TunnelChecksum::NoChecksum
                && !matches!(tunnel.kind, TunnelKind::Gue { .. } | TunnelKind::Gre)
            {
                context.warning(
                    method.span,
                    "a tunnel checksum option only applies to gue and gre tunnels",
                );
            }
            if tunnel.checksum == TunnelChecksum::RemoteChecksum && tunnel.kind == TunnelKind::Gre {
                context.error(method.span, "remcsum is not supported with gre tunnels");
                return None;
            }
            Some(ForwardingMethod::Tunnel(tunnel))
        }
        other => {
            let mut message =
                format!("unknown forwarding method '{other}': expected NAT, DR or TUN");
            if let Some(best) = super::suggestion(other, ["NAT", "DR", "TUN"].into_iter()) {
                message.push_str(&format!(" (did you mean '{best}'?)"));
            }
            context.error(method.span, message);
            None
        }
    }
}

/// What a virtual server's reader keeps beyond the model, for the checks
/// made once the whole file is read.
pub struct Pending {
    pub span: Span,
    pub forwarding_written: bool,
    pub scheduler_written: bool,
    pub protocol_span: Option<Span>,
    pub real_server_spans: Vec<Span>,
    /// Where `virtual_network NAME` names its network.
    pub virtual_network: Option<Span>,
}

/// `virtual_server <IPADDR> [<PORT>] | fwmark <N> | group <NAME> { ... }`.
pub fn read(node: &Node, config: &mut Config, context: &mut Context) {
    let Some(address) = virtual_server_address(node, context) else {
        return;
    };
    let mut server = VirtualServer {
        address,
        ip_family: None,
        scheduler: Scheduler::Wlc,
        flags: ServiceFlags::default(),
        forwarding: ForwardingMethod::Nat,
        persistence_engine: None,
        persistence_timeout: None,
        persistence_granularity: None,
        protocol: None,
        fwmark_protocol: None,
        ha_suspend: false,
        snmp_name: None,
        alpha: false,
        omega: false,
        quorum: 1,
        hysteresis: 0,
        quorum_up: None,
        quorum_down: None,
        weight: 1,
        sorry_server: None,
        defaults: CheckDefaults::default(),
        real_servers: Vec::new(),
        virtual_network: None,
        place: crate::model::Place(Some(node.span())),
    };
    let mut pending = Pending {
        span: node.span(),
        forwarding_written: false,
        scheduler_written: false,
        protocol_span: None,
        real_server_spans: Vec::new(),
        virtual_network: None,
    };
    let mut scheduler_name: Option<String> = None;
    let mut sorry: Option<(IpAddr, Option<u16>, Option<ForwardingMethod>, bool)> = None;
    let mut sorry_inhibit_before = false;
    // At most one real server per child: no growth by doubling.
    let mut real_servers: Vec<(RealServer, &Node)> = Vec::with_capacity(node.children.len());
    for child in node.children {
        if read_check_default(child, &mut server.defaults, context) {
            if child.name() == "snmp_name" {
                server.snmp_name = Some(common::joined(child));
            }
            continue;
        }
        let argument = child.argument(0);
        match child.name() {
            "snmp_name" => server.snmp_name = Some(common::joined(child)),
            "ip_family" => {
                if let Some(word) = argument {
                    let family = values::choice(
                        context,
                        word,
                        &[("inet", Family::Inet), ("inet6", Family::Inet6)],
                        "ip_family",
                    );
                    if let (Some(family), VirtualServerAddress::Address { address, .. }) =
                        (family, &server.address)
                    {
                        if address.is_ipv4() != (family == Family::Inet) {
                            context.warning(
                                word.span,
                                "ip_family conflicts with the virtual server's address: keepalived ignores it",
                            );
                            continue;
                        }
                    }
                    server.ip_family = family;
                }
            }
            "lb_algo" | "lvs_sched" => {
                if let Some(word) = argument {
                    // keepalived checks the name ("Invalid lvs_scheduler").
                    let Some(scheduler) = Scheduler::from_name(&word.text) else {
                        let mut message = format!(
                            "unknown scheduler '{}': expected one of {}",
                            word.text,
                            Scheduler::NAMES.join(", ")
                        );
                        if let Some(best) =
                            super::suggestion(&word.text, Scheduler::NAMES.iter().copied())
                        {
                            message.push_str(&format!(" (did you mean '{best}'?)"));
                        }
                        context.error(word.span, message);
                        continue;
                    };
                    scheduler_name = Some(word.text.to_string());
                    server.scheduler = scheduler;
                    pending.scheduler_written = true;
                }
            }
            "hashed" => server.flags.hashed = true,
            "ops" => server.flags.one_packet = true,
            "flag-1" => server.flags.flag_1 = true,
            "flag-2" => server.flags.flag_2 = true,
            "flag-3" => server.flags.flag_3 = true,
            // keepalived checks the scheduler when it reads the flag, so these
            // must come after `lvs_sched`: sh-fallback/mh-fallback are
            // flag-1, sh-port/mh-port flag-2.
            name @ ("sh-port" | "sh-fallback" | "mh-port" | "mh-fallback") => {
                let wanted = &name[..2];
                if scheduler_name.as_deref() == Some(wanted) {
                    if name.ends_with("fallback") {
                        server.flags.flag_1 = true;
                    } else {
                        server.flags.flag_2 = true;
                    }
                } else {
                    context.warning(
                        child.keyword.span,
                        format!(
                            "'{name}' only applies to the {wanted} scheduler and is ignored{}",
                            if scheduler_name.is_none() {
                                format!(" (keepalived reads it in order: put it after 'lvs_sched {wanted}')")
                            } else {
                                String::new()
                            }
                        ),
                    );
                }
            }
            "lb_kind" | "lvs_method" => {
                if let Some(method) =
                    forwarding_method(context, &child.arguments.iter().collect::<Vec<_>>())
                {
                    server.forwarding = method;
                    pending.forwarding_written = true;
                }
            }
            "persistence_engine" => server.persistence_engine = Some(common::first(child)),
            "virtual_network" => {
                if let Some(word) = argument {
                    server.virtual_network = Some(word.text.to_string());
                    pending.virtual_network = Some(word.span);
                }
            }
            "persistence_timeout" => match argument {
                None => server.persistence_timeout = Some(DEFAULT_PERSISTENCE_TIMEOUT),
                Some(word) => {
                    // keepalived's limit: 31 days.
                    if let Some(value) =
                        values::whole_seconds(context, word, 1, 2_678_400, "persistence_timeout")
                    {
                        server.persistence_timeout = Some(value);
                    }
                }
            },
            "persistence_granularity" => {
                if let Some(word) = argument {
                    read_granularity(context, word, &mut server);
                }
            }
            "protocol" => {
                if let Some(word) = argument {
                    let protocol = match word.text.to_ascii_uppercase().as_str() {
                        "TCP" => Some(Protocol::Tcp),
                        "UDP" => Some(Protocol::Udp),
                        "SCTP" => Some(Protocol::Sctp),
                        _ => {
                            context.error(
                                word.span,
                                format!(
                                    "unknown protocol '{}': expected TCP, UDP or SCTP",
                                    word.text
                                ),
                            );
                            None
                        }
                    };
                    if protocol.is_some() {
                        server.protocol = protocol;
                        pending.protocol_span = Some(child.span());
                    }
                }
            }
            // keepalived ignores any word after these (`alpha no` still
            // sets alpha); the tree warns about the extra words.
            "ha_suspend" => server.ha_suspend = true,
            "alpha" => server.alpha = true,
            "omega" => server.omega = true,
            "quorum_up" => {
                if server.quorum_up.is_some() {
                    ignored_duplicate(context, child);
                } else {
                    server.quorum_up = common::script_checked(child, Some(context)).map(Box::new);
                }
            }
            "quorum_down" => {
                if server.quorum_down.is_some() {
                    ignored_duplicate(context, child);
                } else {
                    server.quorum_down = common::script_checked(child, Some(context)).map(Box::new);
                }
            }
            "quorum" => {
                if let Some(value) = argument.and_then(|word| {
                    values::integer::<u32>(context, word, 1, u32::MAX.into(), "quorum")
                }) {
                    server.quorum = value;
                }
            }
            "hysteresis" => {
                if let Some(value) = argument.and_then(|word| {
                    values::integer::<u32>(context, word, 0, u32::MAX.into(), "hysteresis")
                }) {
                    server.hysteresis = value;
                }
            }
            "weight" => {
                if let Some(value) = argument.and_then(|word| {
                    values::integer::<u32>(context, word, 1, WEIGHT_MAXIMUM, "weight")
                }) {
                    server.weight = value;
                }
            }
            "sorry_server" => {
                if let Some((address, port)) = address_and_port(context, child, "sorry server") {
                    sorry = Some((address, port, None, sorry_inhibit_before));
                }
            }
            "sorry_server_inhibit" => {
                let value = values::optional_boolean(context, argument, "sorry_server_inhibit")
                    .unwrap_or(true);
                match &mut sorry {
                    Some(sorry) => sorry.3 = value,
                    None => {
                        // keepalived: "Ignoring sorry_server inhibit used
                        // before or without sorry_server".
                        context.warning(
                            child.keyword.span,
                            "'sorry_server_inhibit' before or without 'sorry_server' is ignored",
                        );
                        sorry_inhibit_before = false;
                    }
                }
            }
            "sorry_server_lvs_method" => match &mut sorry {
                Some(sorry) => {
                    if let Some(method) =
                        forwarding_method(context, &child.arguments.iter().collect::<Vec<_>>())
                    {
                        sorry.2 = Some(method);
                    }
                }
                None => context.warning(
                    child.keyword.span,
                    "'sorry_server_lvs_method' used without 'sorry_server' is ignored",
                ),
            },
            "real_server" => {
                if let Some(real_server) = read_real_server(child, context) {
                    real_servers.push((real_server, child));
                }
            }
            _ => context.not_acted_on(child),
        }
    }

    // keepalived's validate_check_config, in its order.
    let is_fwmark = matches!(server.address, VirtualServerAddress::Fwmark(_));
    if server.ha_suspend && is_fwmark {
        context.warning(
            pending.span,
            "ha_suspend cannot be used with fwmarks; keepalived clears it",
        );
        server.ha_suspend = false;
    }
    if let VirtualServerAddress::Address { port, .. } = server.address {
        protocol_and_ops(&mut server, pending.span, context);
        if server.persistence_timeout.is_none() && port == 0 {
            context.warning(
                pending.span,
                "a zero port is only valid for persistent services: keepalived sets persistence_timeout 360",
            );
            server.persistence_timeout = Some(DEFAULT_PERSISTENCE_TIMEOUT);
        }
    }
    if is_fwmark && server.protocol.is_some() {
        context.warning(
            pending.protocol_span.unwrap_or(pending.span),
            "a protocol is ignored for fwmark virtual servers",
        );
        server.fwmark_protocol = server.protocol.take();
    }
    if !pending.scheduler_written {
        context.warning(
            pending.span,
            "no scheduler set (lvs_sched): keepalived uses 'wlc'",
        );
    }

    let virtual_port = match server.address {
        VirtualServerAddress::Address { port, .. } => Some(port),
        _ => None,
    };
    let mut weight_sum: u64 = 0;
    let mut warned_forwarding = false;
    let mut family_so_far: Option<bool> = None;
    // Room for every real server read, at once: the vectors are then
    // neither grown nor (below) shrunk by reallocation.
    server.real_servers.reserve_exact(real_servers.len());
    pending.real_server_spans.reserve_exact(real_servers.len());
    for (mut real_server, real_node) in real_servers {
        if server.real_servers.iter().any(|other| {
            other.address == real_server.address && other.written_port == real_server.written_port
        }) {
            context.warning(
                real_node.span(),
                "real server duplicated; keepalived removes this second one",
            );
            continue;
        }
        // Real servers must be of the virtual server's family, unless
        // tunnelled (keepalived: "Address family of virtual server and real
        // server ... don't match - skipping real server").
        let tunnelled = matches!(real_server.forwarding, ForwardingMethod::Tunnel(_))
            || (!real_node
                .children
                .iter()
                .any(|child| child.name() == "lvs_method")
                && matches!(server.forwarding, ForwardingMethod::Tunnel(_)));
        if !tunnelled {
            let family = match (&server.address, family_so_far) {
                (VirtualServerAddress::Address { address, .. }, _) => Some(address.is_ipv4()),
                (_, Some(family)) => Some(family),
                _ => None,
            };
            match family {
                Some(is_ipv4) if is_ipv4 != real_server.address.is_ipv4() => {
                    context.warning(
                        real_node.end_span(),
                        "the real server's address family differs from the virtual server's: keepalived skips this real server",
                    );
                    continue;
                }
                Some(_) => {}
                None => family_so_far = Some(real_server.address.is_ipv4()),
            }
        }
        let forwarding_written = real_node
            .children
            .iter()
            .any(|child| child.name() == "lvs_method");
        if !forwarding_written {
            // A tenant's virtual server has no method to set (grammar/sdn.rs).
            if !pending.forwarding_written && !warned_forwarding && server.virtual_network.is_none()
            {
                context.warning(
                    pending.span,
                    "no forwarding method set (lvs_method): keepalived uses NAT",
                );
                warned_forwarding = true;
            }
            real_server.forwarding = server.forwarding;
        }
        resolve_real_server(&mut real_server, &server, real_node, context);
        weight_sum += u64::from(real_server.weight);
        // Ports: with NAT an omitted port is the virtual server's; with DR or
        // TUN the real server must use the virtual server's port.
        let is_nat = real_server.forwarding == ForwardingMethod::Nat;
        match (virtual_port, real_server.written_port) {
            (Some(virtual_port), None) => real_server.port = virtual_port,
            (Some(virtual_port), Some(written)) if !is_nat && written != virtual_port => {
                context.warning(
                    real_node.span(),
                    format!(
                        "with {} forwarding the real server must use the virtual server's port: keepalived resets {written} to {virtual_port}",
                        if real_server.forwarding == ForwardingMethod::DirectRouting { "DR" } else { "TUN" }
                    ),
                );
                real_server.port = virtual_port;
            }
            (None, Some(written)) if is_fwmark && !is_nat && written != 0 => {
                context.warning(
                    real_node.span(),
                    "a fwmark virtual server's real server with DR or TUN forwarding takes no port: keepalived clears it",
                );
                real_server.port = 0;
            }
            _ => {}
        }
        pending.real_server_spans.push(real_node.span());
        server.real_servers.push(real_server);
    }
    // Kept for the whole run: no room for more.
    server.real_servers.shrink_to_fit();
    pending.real_server_spans.shrink_to_fit();

    if let Some((address, port, forwarding, inhibit)) = sorry {
        let forwarding = forwarding.unwrap_or(server.forwarding);
        let mut port = port.unwrap_or(0);
        if forwarding != ForwardingMethod::Nat {
            if is_fwmark {
                if port != 0 {
                    context.warning(
                        pending.span,
                        "a fwmark virtual server's sorry server with DR or TUN forwarding takes no port: keepalived clears it",
                    );
                }
                port = 0;
            } else if let Some(virtual_port) = virtual_port {
                if port != 0 && port != virtual_port {
                    context.warning(
                        pending.span,
                        "the virtual server and sorry server ports differ with DR or TUN forwarding: keepalived resets the sorry server's",
                    );
                }
                port = virtual_port;
            }
        }
        // A NAT sorry server without a port keeps port 0: unlike a real
        // server's, keepalived never gives it the virtual server's
        // (`validate_check_config` corrects only DR and TUN sorry servers;
        // seen in the lab: `-r 10.0.9.9:0 -m`).
        server.sorry_server = Some(SorryServer {
            address,
            port,
            forwarding,
            inhibit,
        });
    }

    if server.real_servers.is_empty() {
        context.warning(
            pending.span,
            "virtual server has no real servers: keepalived ignores it",
        );
        return;
    }
    if u64::from(server.quorum) > weight_sum {
        context.warning(
            pending.span,
            format!(
                "quorum {} exceeds the real servers' total weight {weight_sum}: keepalived reduces it",
                server.quorum
            ),
        );
        server.quorum = weight_sum as u32;
    }
    if server.hysteresis >= server.quorum {
        // `quorum - 1` in unsigned arithmetic: a quorum reduced to 0 (real
        // servers weighing 0 in all) gives a hysteresis of 4294967295, and
        // then quorum can never be reached, so keepalived serves the sorry
        // server (seen in the lab with keepalived 2.2.7).
        context.warning(
            pending.span,
            format!(
                "hysteresis {} must be below the quorum {}: keepalived sets it to {}",
                server.hysteresis,
                server.quorum,
                server.quorum.wrapping_sub(1)
            ),
        );
        server.hysteresis = server.quorum.wrapping_sub(1);
    }
    config.virtual_servers.push(server);
    context.virtual_servers.push(pending);
}

fn read_granularity(context: &mut Context, word: &Word, server: &mut VirtualServer) {
    let text = word.text.as_str();
    let is_ipv4 = match (&server.address, server.ip_family) {
        (VirtualServerAddress::Address { address, .. }, _) => address.is_ipv4(),
        (_, Some(Family::Inet)) => true,
        (_, Some(Family::Inet6)) => false,
        (_, None) => text.contains('.'),
    };
    if is_ipv4 {
        let Some(mask) = inet_aton(text) else {
            context.error(
                word.span,
                format!("invalid IPv4 persistence_granularity '{text}': expected a netmask such as 255.255.255.0"),
            );
            return;
        };
        let bits = u32::from(mask);
        // keepalived: the netmask must be "solid" (ones then zeros).
        if bits.leading_ones() + bits.trailing_zeros() != 32 {
            // keepalived 2.2.7 accepts it silently; IPVS masks with it as is.
            context.warning(
                word.span,
                format!("IPv4 persistence_granularity netmask '{text}' is not a solid netmask (ones then zeros)"),
            );
        }
        server.persistence_granularity = Some(Granularity::Netmask(mask));
    } else {
        let Some(length) =
            values::integer::<u8>(context, word, 1, 128, "IPv6 persistence_granularity")
        else {
            return;
        };
        server.persistence_granularity = Some(Granularity::PrefixLength(length));
    }
    // keepalived turns persistence on when a granularity is given.
    if server.persistence_timeout.is_none() {
        server.persistence_timeout = Some(DEFAULT_PERSISTENCE_TIMEOUT);
    }
}

/// The IPv4 forms `inet_aton` accepts with decimal parts (`a.b.c.d`,
/// `a.b.c`, `a.b`, `a`: the last part fills the remaining bytes), which is
/// how keepalived reads a granularity netmask.
fn inet_aton(text: &str) -> Option<std::net::Ipv4Addr> {
    let parts: Vec<u64> = text
        .split('.')
        .map(|part| part.parse::<u64>().ok())
        .collect::<Option<_>>()?;
    let (last, leading) = parts.split_last()?;
    if leading.len() > 3 || leading.iter().any(|part| *part > 255) {
        return None;
    }
    let remaining_bits = 8 * (4 - leading.len() as u32);
    if remaining_bits < 64 && *last >= 1u64 << remaining_bits {
        return None;
    }
    let mut value: u64 = 0;
    for part in leading {
        value = (value << 8) | part;
    }
    value = (value << remaining_bits) | last;
    u32::try_from(value).ok().map(std::net::Ipv4Addr::from)
}

fn virtual_server_address(node: &Node, context: &mut Context) -> Option<VirtualServerAddress> {
    let first = node.argument(0)?;
    match first.text.as_str() {
        "fwmark" => {
            let Some(word) = node.argument(1) else {
                context.error(first.span, "'virtual_server fwmark' needs a mark number");
                return None;
            };
            values::integer::<u32>(context, word, 1, u32::MAX.into(), "fwmark")
                .map(VirtualServerAddress::Fwmark)
        }
        "group" => {
            let Some(word) = node.argument(1) else {
                context.error(first.span, "'virtual_server group' needs a group name");
                return None;
            };
            Some(VirtualServerAddress::Group(word.text.to_string()))
        }
        _ => {
            let (address, port) = address_and_port(context, node, "virtual server")?;
            Some(VirtualServerAddress::Address {
                address,
                port: port.unwrap_or(0),
            })
        }
    }
}

/// `<IPADDR> [<PORT>]` (keepalived's `inet_stosockaddr`).
fn address_and_port(
    context: &mut Context,
    node: &Node,
    what: &str,
) -> Option<(IpAddr, Option<u16>)> {
    let address_word = node.argument(0)?;
    let address = values::address(context, address_word, format_args!("{what} address"))?;
    let port = match node.argument(1) {
        None => None,
        Some(word) => Some(values::port(context, word, format_args!("{what} port"))?),
    };
    Some((address, port))
}

fn read_real_server(node: &Node, context: &mut Context) -> Option<RealServer> {
    let (address, port) = address_and_port(context, node, "real server")?;
    // keepalived reads a written port 0 as no port (`alloc_rs`: "inet_stosockaddr
    // rejects port 0"), so NAT gives it the virtual server's port too.
    let port = port.filter(|port| *port != 0);
    let mut real_server = RealServer {
        address,
        port: port.unwrap_or(0),
        written_port: port,
        weight: 1,
        written_weight: None,
        forwarding: ForwardingMethod::Nat,
        upper_threshold: 0,
        lower_threshold: 0,
        notify_up: None,
        notify_down: None,
        snmp_name: None,
        inhibit_on_failure: false,
        alpha: false,
        smtp_alert: true,
        defaults: WrittenDefaults::default(),
        checkers: Vec::new(),
    };
    // Gathered apart, and stored once: the real server holds them on the
    // heap only if any is written.
    let mut defaults = CheckDefaults::default();
    for child in node.children {
        if read_check_default(child, &mut defaults, context) {
            if child.name() == "snmp_name" {
                real_server.snmp_name = Some(common::joined(child));
            }
            continue;
        }
        let argument = child.argument(0);
        match child.name() {
            "snmp_name" => real_server.snmp_name = Some(common::joined(child)),
            "weight" => {
                if let Some(value) = argument.and_then(|word| {
                    values::integer::<u32>(context, word, 0, WEIGHT_MAXIMUM, "weight")
                }) {
                    real_server.written_weight = Some(value);
                }
            }
            "lvs_method" => {
                if let Some(method) =
                    forwarding_method(context, &child.arguments.iter().collect::<Vec<_>>())
                {
                    real_server.forwarding = method;
                }
            }
            "uthreshold" => {
                if let Some(value) = argument.and_then(|word| {
                    values::integer::<u32>(context, word, 0, u32::MAX.into(), "uthreshold")
                }) {
                    real_server.upper_threshold = value;
                }
            }
            "lthreshold" => {
                if let Some(value) = argument.and_then(|word| {
                    values::integer::<u32>(context, word, 0, u32::MAX.into(), "lthreshold")
                }) {
                    real_server.lower_threshold = value;
                }
            }
            "notify_up" => {
                if real_server.notify_up.is_some() {
                    ignored_duplicate(context, child);
                } else {
                    real_server.notify_up =
                        common::script_checked(child, Some(context)).map(Box::new);
                }
            }
            "notify_down" => {
                if real_server.notify_down.is_some() {
                    ignored_duplicate(context, child);
                } else {
                    real_server.notify_down =
                        common::script_checked(child, Some(context)).map(Box::new);
                }
            }
            "alpha" => {
                if let Some(value) = values::optional_boolean(context, argument, "alpha") {
                    defaults.alpha = Some(value);
                }
            }
            // Read by `resolve_real_server`, once the virtual server's
            // values they inherit are known.
            _ if checkers::is_checker(child.name()) => {}
            _ => context.not_acted_on(child),
        }
    }
    real_server.defaults = defaults.into();
    if real_server.upper_threshold != 0 && real_server.lower_threshold > real_server.upper_threshold
    {
        context.warning(node.span(), "lthreshold is above uthreshold");
    }
    Some(real_server)
}

/// Applies the virtual server's values to a real server and resolves its
/// checkers' timers (keepalived's validate_check_config).
fn resolve_real_server(
    real_server: &mut RealServer,
    server: &VirtualServer,
    real_node: &Node,
    context: &mut Context,
) {
    real_server.weight = real_server.written_weight.unwrap_or(server.weight);
    let vs = &server.defaults;
    // Cheap: nothing to copy when nothing is written.
    let rs = real_server.defaults.clone();
    real_server.inhibit_on_failure = rs
        .inhibit_on_failure
        .or(vs.inhibit_on_failure)
        .unwrap_or(false);
    real_server.alpha = rs.alpha.or(Some(server.alpha)).unwrap_or(false);
    // keepalived: real servers default to smtp_alert on "to maintain
    // backwards compatibility" (global smtp_alert settings are applied by
    // the global pass).
    real_server.smtp_alert = rs.smtp_alert.unwrap_or(true);
    let retry = rs.retry.or(vs.retry);
    let connect_timeout = rs.connect_timeout.or(vs.connect_timeout);
    let delay_loop = rs
        .delay_loop
        .or(vs.delay_loop)
        .unwrap_or(DEFAULT_DELAY_LOOP);
    let warmup = rs.warmup.or(vs.warmup);
    let delay_before_retry = rs.delay_before_retry.or(vs.delay_before_retry);
    let virtualhost = rs.virtualhost.clone().or(vs.virtualhost.clone());
    let inherited = checkers::Inherited {
        address: real_server.address,
        retry,
        connect_timeout,
        delay_loop,
        warmup,
        delay_before_retry,
        alpha: real_server.alpha,
        virtualhost,
    };
    // Most real servers have one checker: counted first, so that the vector
    // is allocated once, at its size.
    let checker_nodes = || {
        real_node
            .children
            .iter()
            .filter(|child| checkers::is_checker(child.name()))
    };
    real_server.checkers.reserve_exact(checker_nodes().count());
    for node in checker_nodes() {
        if let Some(checker) = checkers::read(node, &inherited, context) {
            real_server.checkers.push(checker);
        }
    }
}

/// Checks that need the whole file: virtual servers naming a group.
pub fn finish(config: &mut Config, context: &mut Context) {
    let pending = std::mem::take(&mut context.virtual_servers);
    let groups = std::mem::take(&mut config.virtual_server_groups);
    let global = &config.global;
    for (server, pending) in config.virtual_servers.iter_mut().zip(pending.iter()) {
        finish_one(
            server,
            pending,
            &groups,
            global,
            &config.virtual_networks,
            context,
        );
    }
    config.virtual_server_groups = groups;
}

/// [`finish`] for one virtual server, given the file's groups and global
/// settings: what a reload that reads one block again needs.
pub(crate) fn finish_one(
    server: &mut VirtualServer,
    pending: &Pending,
    groups: &[VirtualServerGroup],
    global: &GlobalDefs,
    networks: &[crate::model::VirtualNetwork],
    context: &mut Context,
) {
    finish_group(server, pending, groups, context);
    super::sdn::check_virtual_server(
        server,
        super::sdn::Written {
            virtual_network: pending.virtual_network,
            forwarding: pending.forwarding_written,
            real_servers: &pending.real_server_spans,
        },
        networks,
        context,
    );
    // keepalived 2.2.7 (check_data.c): a real server's smtp_alert, when
    // it has none written, is the global smtp_alert_checker, else the
    // global smtp_alert, else on; the virtual server's is its own (its
    // quorum's alerts), never its real servers'.
    if let Some(global) = global.smtp_alert_checker.or(global.smtp_alert) {
        for real_server in &mut server.real_servers {
            if real_server.defaults.smtp_alert.is_none() {
                real_server.smtp_alert = global;
            }
        }
    }
}

/// keepalived's defaults for an address service: UDP when no protocol is
/// set, and `ops` (one-packet scheduling) only with UDP.
fn protocol_and_ops(server: &mut VirtualServer, span: Span, context: &mut Context) {
    if server.protocol.is_none() {
        context.warning(
            span,
            "no protocol set: keepalived defaults to UDP (the kernel's default); add 'protocol TCP' if that is what you mean",
        );
        server.protocol = Some(Protocol::Udp);
    }
    if server.flags.one_packet && server.protocol != Some(Protocol::Udp) {
        context.warning(
            span,
            "one-packet scheduling ('ops') requires UDP; keepalived resets it",
        );
        server.flags.one_packet = false;
    }
}

/// What a virtual server naming a group takes from it.
fn finish_group(
    server: &mut VirtualServer,
    pending: &Pending,
    groups: &[VirtualServerGroup],
    context: &mut Context,
) {
    let VirtualServerAddress::Group(name) = &server.address else {
        return;
    };
    let Some(group) = groups.iter().find(|group| &group.name == name) else {
        context.warning(
            pending.span,
            format!(
                "virtual server group '{name}' is not defined: this virtual server has no addresses"
            ),
        );
        return;
    };
    let has_addresses = group
        .entries
        .iter()
        .any(|entry| matches!(entry, GroupEntry::Addresses { .. }));
    let has_fwmarks = group
        .entries
        .iter()
        .any(|entry| matches!(entry, GroupEntry::Fwmark { .. }));
    if server.ha_suspend && has_fwmarks {
        context.warning(
            pending.span,
            "ha_suspend cannot be used with fwmarks; keepalived clears it",
        );
        server.ha_suspend = false;
    }
    if has_addresses {
        protocol_and_ops(server, pending.span, context);
        let portless = group
            .entries
            .iter()
            .any(|entry| matches!(entry, GroupEntry::Addresses { port: None, .. }));
        if server.persistence_timeout.is_none() && portless {
            context.warning(
                pending.span,
                "a group entry without a port is only valid for persistent services: keepalived sets persistence_timeout 360",
            );
            server.persistence_timeout = Some(DEFAULT_PERSISTENCE_TIMEOUT);
        }
    } else if server.protocol.is_some() {
        context.warning(
            pending.protocol_span.unwrap_or(pending.span),
            "a protocol is ignored for fwmark virtual servers",
        );
        server.fwmark_protocol = server.protocol.take();
    }
    // Real server ports with a group: keepalived only warns.
    for (real_server, span) in server
        .real_servers
        .iter()
        .zip(pending.real_server_spans.iter())
    {
        if real_server.forwarding == ForwardingMethod::Nat {
            return;
        }
        if has_fwmarks && real_server.written_port.is_some_and(|port| port != 0) {
            context.warning(
                *span,
                "fwmark virtual server's real server has a port: it is ignored with DR or TUN",
            );
        }
        for entry in &group.entries {
            if let GroupEntry::Addresses {
                port: Some(port), ..
            } = entry
                && real_server
                    .written_port
                    .is_some_and(|written| written != *port)
            {
                context.warning(
                    *span,
                    format!("virtual server group port {port} and real server port don't match with DR or TUN"),
                );
                break;
            }
        }
    }
}
