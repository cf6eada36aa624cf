//! The checkers of a real server (keepalived's check_tcp.c, check_http.c,
//! check_misc.c, check_smtp.c, check_dns.c, check_udp.c, check_ping.c,
//! check_file.c, check_bfd.c) and the `SSL` block.

use std::ops::RangeInclusive;
use std::time::Duration;

use super::common;
use super::{Context, Keyword, Node, values};
use crate::model::{
    BfdCheck, Checker, CheckerCommon, CheckerKind, Config, Connection, DnsCheck, DnsType,
    FileCheck, HttpCheck, HttpProtocol, MiscCheck, SmtpCheck, SslContext, UdpCheck, Url,
};

/// keepalived's default `delay_loop` (a checker's, inherited from its real
/// and virtual servers).
pub const DEFAULT_DELAY_LOOP: Duration = Duration::from_secs(60);
/// keepalived's default `connect_timeout`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The options every connecting checker has (keepalived's
/// `install_checker_common_keywords`).
macro_rules! connection_keywords {
    ($($extra:expr),* $(,)?) => {
        &[
            Keyword::leaf("connect_ip", 1, Some(1)),
            Keyword::leaf("connect_port", 1, Some(1)),
            Keyword::leaf("bindto", 1, Some(1)),
            Keyword::leaf("bind_if", 1, Some(1)),
            Keyword::leaf("bind_port", 1, Some(1)),
            Keyword::leaf("fwmark", 1, Some(1)),
            Keyword::leaf("alpha", 0, Some(1)),
            Keyword::leaf("connect_timeout", 1, Some(1)),
            Keyword::leaf("retry", 1, Some(1)),
            Keyword::leaf("delay_before_retry", 1, Some(1)),
            Keyword::leaf("warmup", 1, Some(1)),
            Keyword::leaf("delay_loop", 1, Some(1)),
            Keyword::leaf("log_all_failures", 0, Some(1)),
            $($extra,)*
        ]
    };
}

pub static TCP: &[Keyword] = connection_keywords!();
pub static PING: &[Keyword] = connection_keywords!();

pub static URL: &[Keyword] = &[
    Keyword::leaf("path", 1, None),
    Keyword::leaf("digest", 1, Some(1)),
    Keyword::leaf("status_code", 1, None),
    Keyword::leaf("virtualhost", 1, None),
    Keyword::leaf("regex", 1, None),
    Keyword::leaf("regex_no_match", 0, Some(0)),
    Keyword::leaf("regex_options", 1, None),
    // `regex_stack START [MAX]` (keepalived takes a lone start).
    Keyword::leaf("regex_stack", 1, Some(2)).not_acted_on(),
    Keyword::leaf("regex_min_offset", 1, Some(1)),
    Keyword::leaf("regex_max_offset", 1, Some(1)),
];

pub static HTTP: &[Keyword] = connection_keywords!(
    Keyword::leaf("http_protocol", 1, Some(1)),
    Keyword::leaf("fast_recovery", 0, Some(1)),
    Keyword::leaf("virtualhost", 1, None),
    Keyword::leaf("enable_sni", 0, Some(1)),
    // keepalived's old name for `retry` in HTTP_GET/SSL_GET.
    Keyword::leaf("nb_get_retry", 1, Some(1)),
    Keyword::block("url", 0, Some(0), URL),
);

pub static SSL_GET: &[Keyword] = connection_keywords!(
    Keyword::leaf("http_protocol", 1, Some(1)),
    Keyword::leaf("fast_recovery", 0, Some(1)),
    Keyword::leaf("virtualhost", 1, None),
    Keyword::leaf("nb_get_retry", 1, Some(1)),
    Keyword::leaf("enable_sni", 0, Some(1)),
    Keyword::block("url", 0, Some(0), URL),
);

/// MISC_CHECK has the common options from `alpha` on only, without
/// `connect_timeout` (`misc_timeout` plays its part).
pub static MISC: &[Keyword] = &[
    Keyword::leaf("alpha", 0, Some(1)),
    Keyword::leaf("retry", 1, Some(1)),
    Keyword::leaf("delay_before_retry", 1, Some(1)),
    Keyword::leaf("warmup", 1, Some(1)),
    Keyword::leaf("delay_loop", 1, Some(1)),
    Keyword::leaf("log_all_failures", 0, Some(1)),
    Keyword::leaf("misc_path", 1, None),
    Keyword::leaf("misc_timeout", 1, Some(1)),
    Keyword::leaf("misc_dynamic", 0, Some(0)),
    Keyword::leaf("user", 1, Some(2)),
];

pub static SMTP: &[Keyword] = connection_keywords!(
    Keyword::leaf("helo_name", 1, None),
    // Older configs wrote the connection options in `host { }` blocks.
    Keyword::block("host", 0, Some(0), TCP),
);

pub static DNS: &[Keyword] = connection_keywords!(
    Keyword::leaf("type", 1, Some(1)),
    Keyword::leaf("name", 1, Some(1)),
);

pub static UDP: &[Keyword] = connection_keywords!(
    Keyword::leaf("payload", 1, None),
    Keyword::leaf("require_reply", 0, None),
    Keyword::leaf("min_reply_length", 1, Some(1)),
    Keyword::leaf("max_reply_length", 1, Some(1)),
);

/// keepalived 2.2.7's FILE_CHECK (its man page also shows `dynamic`, which
/// 2.2.7 does not know).
pub static FILE: &[Keyword] = &[
    Keyword::leaf("track_file", 1, Some(1)),
    Keyword::leaf("weight", 1, Some(2)),
];

pub static BFD: &[Keyword] = &[
    Keyword::leaf("name", 1, Some(1)),
    Keyword::leaf("alpha", 0, Some(1)),
];

pub static SSL: &[Keyword] = &[
    Keyword::leaf("password", 1, None).not_acted_on(),
    Keyword::leaf("ca", 1, None).not_acted_on(),
    Keyword::leaf("certificate", 1, None),
    Keyword::leaf("key", 1, None),
];

pub fn is_checker(name: &str) -> bool {
    matches!(
        name,
        "TCP_CHECK"
            | "HTTP_GET"
            | "SSL_GET"
            | "MISC_CHECK"
            | "SMTP_CHECK"
            | "DNS_CHECK"
            | "UDP_CHECK"
            | "PING_CHECK"
            | "FILE_CHECK"
            | "BFD_CHECK"
    )
}

/// What a checker inherits from its real server (which inherited from its
/// virtual server).
pub struct Inherited {
    /// The real server's address (the default connect_ip).
    pub address: std::net::IpAddr,
    pub retry: Option<u32>,
    pub connect_timeout: Option<Duration>,
    pub delay_loop: Duration,
    pub warmup: Option<Duration>,
    pub delay_before_retry: Option<Duration>,
    pub alpha: bool,
    pub virtualhost: Option<String>,
}

/// A checker's own settings before inheritance.
#[derive(Default)]
struct Written {
    retry: Option<u32>,
    connect_timeout: Option<Duration>,
    delay_loop: Option<Duration>,
    warmup: Option<Duration>,
    delay_before_retry: Option<Duration>,
    alpha: Option<bool>,
}

/// Reads one checker block, resolving what it inherits (so it is read once
/// the whole virtual server is: keepalived applies the inheritance after
/// parsing, whatever the order of the keywords).
pub fn read(node: &Node, inherited: &Inherited, context: &mut Context) -> Option<Checker> {
    let mut common = CheckerCommon {
        connection: Connection::default(),
        connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        retry: 1,
        delay_before_retry: Duration::from_secs(1),
        delay_loop: DEFAULT_DELAY_LOOP,
        warmup: DEFAULT_DELAY_LOOP,
        alpha: false,
        log_all_failures: None,
    };
    let mut written = Written::default();
    let mut kind = match node.name() {
        "TCP_CHECK" => CheckerKind::Tcp,
        "HTTP_GET" => CheckerKind::Http(Box::new(new_http())),
        "SSL_GET" => CheckerKind::Ssl(Box::new(new_http())),
        "MISC_CHECK" => CheckerKind::Misc(Box::new(MiscCheck {
            path: None,
            timeout: None,
            dynamic: false,
        })),
        "SMTP_CHECK" => CheckerKind::Smtp(Box::new(SmtpCheck { helo_name: None })),
        "DNS_CHECK" => CheckerKind::Dns(Box::new(DnsCheck {
            query_type: DnsType::Soa,
            name: ".".to_string(),
        })),
        "UDP_CHECK" => CheckerKind::Udp(Box::new(UdpCheck {
            payload: None,
            require_reply: None,
            min_reply_length: 0,
            max_reply_length: 255,
        })),
        "PING_CHECK" => CheckerKind::Ping,
        "FILE_CHECK" => CheckerKind::File(Box::new(FileCheck {
            track_file: None,
            weight: None,
            reverse: false,
        })),
        "BFD_CHECK" => CheckerKind::Bfd(Box::new(BfdCheck { name: None })),
        _ => return None,
    };
    let mut misc_user: Option<(String, Option<String>)> = None;
    for child in node.children {
        if read_common(child, &mut common, &mut written, context) {
            continue;
        }
        if child.name() == "host" {
            // SMTP_CHECK's old `host { connect_ip ...; connect_port ... }`.
            for option in child.children {
                read_common(option, &mut common, &mut written, context);
            }
            continue;
        }
        let argument = child.argument(0);
        match (&mut kind, child.name()) {
            (CheckerKind::Http(http) | CheckerKind::Ssl(http), name) => {
                read_http(child, name, http, context)
            }
            (CheckerKind::Misc(misc), "misc_path") => {
                if misc.path.is_some() {
                    common::ignored_duplicate(context, child);
                } else {
                    // The user comes from MISC_CHECK's `user` keyword.
                    misc.path = common::command_words(child).first().map(|command| {
                        Box::new(crate::model::Script::new(command, None, None).at(child.span()))
                    });
                }
            }
            (CheckerKind::Misc(misc), "misc_timeout") => {
                if let Some(word) = argument {
                    misc.timeout =
                        values::whole_seconds(context, word, 0, u32::MAX.into(), "misc_timeout");
                }
            }
            (CheckerKind::Misc(misc), "misc_dynamic") => misc.dynamic = true,
            (CheckerKind::Misc(_), "user") => {
                misc_user = Some((
                    common::first(child),
                    child.argument(1).map(|word| word.text.to_string()),
                ));
            }
            (CheckerKind::Smtp(smtp), "helo_name") => smtp.helo_name = Some(common::joined(child)),
            (CheckerKind::Dns(dns), "type") => {
                if let Some(word) = argument {
                    let upper = word.text.to_ascii_uppercase();
                    let found = [
                        ("A", DnsType::A),
                        ("NS", DnsType::Ns),
                        ("CNAME", DnsType::Cname),
                        ("SOA", DnsType::Soa),
                        ("MX", DnsType::Mx),
                        ("TXT", DnsType::Txt),
                        ("AAAA", DnsType::Aaaa),
                    ]
                    .into_iter()
                    .find(|(name, _)| *name == upper);
                    match found {
                        Some((_, query_type)) => dns.query_type = query_type,
                        None => context.error(
                            word.span,
                            format!(
                                "unknown DNS query type '{}': expected A, NS, CNAME, SOA, MX, TXT or AAAA",
                                word.text
                            ),
                        ),
                    }
                }
            }
            (CheckerKind::Dns(dns), "name") => dns.name = common::first(child),
            (CheckerKind::Udp(udp), "payload") => {
                if let Some(bytes) = values::hex_bytes(
                    context,
                    &child.arguments.iter().collect::<Vec<_>>(),
                    false,
                    "payload",
                ) {
                    udp.payload = Some(
                        bytes
                            .into_iter()
                            .map(|(high, low)| (high.unwrap_or(0) << 4) | low.unwrap_or(0))
                            .collect(),
                    );
                }
            }
            (CheckerKind::Udp(udp), "require_reply") => {
                if let Some(bytes) = values::hex_bytes(
                    context,
                    &child.arguments.iter().collect::<Vec<_>>(),
                    true,
                    "require_reply",
                ) {
                    udp.require_reply = Some(bytes);
                }
            }
            (CheckerKind::Udp(udp), "min_reply_length") => {
                if let Some(value) = argument
                    .and_then(|word| values::integer(context, word, 0, 65535, "min_reply_length"))
                {
                    udp.min_reply_length = value;
                }
            }
            (CheckerKind::Udp(udp), "max_reply_length") => {
                if let Some(value) = argument
                    .and_then(|word| values::integer(context, word, 0, 65535, "max_reply_length"))
                {
                    udp.max_reply_length = value;
                }
            }
            (CheckerKind::File(file), "track_file") => {
                file.track_file = Some(common::first(child));
                context.references.push(super::Reference {
                    kind: super::ReferenceKind::File,
                    name: common::first(child),
                    span: child.arguments[0].span,
                });
            }

            (CheckerKind::File(file), "weight") => {
                let (weight, reverse) = common::weight_and_reverse(
                    context,
                    &child.words(),
                    -(i32::MAX as i128),
                    i32::MAX.into(),
                    "FILE_CHECK weight",
                );
                file.weight = weight;
                file.reverse = reverse;
            }
            (CheckerKind::Bfd(bfd), "name") => {
                bfd.name = Some(common::first(child));
                context.references.push(super::Reference {
                    kind: super::ReferenceKind::Bfd,
                    name: common::first(child),
                    span: child.arguments[0].span,
                });
            }
            _ => context.not_acted_on(child),
        }
    }
    if let CheckerKind::File(file) = &kind {
        if file.track_file.is_none() {
            context.warning(
                node.keyword.span,
                "FILE_CHECK without 'track_file': keepalived ignores it",
            );
            return None;
        }
    }
    if let CheckerKind::Bfd(bfd) = &kind {
        if bfd.name.is_none() {
            context.warning(
                node.end_span(),
                "BFD_CHECK without 'name': keepalived ignores it",
            );
            return None;
        }
    }
    if let CheckerKind::Misc(misc) = &mut kind {
        if let (Some(path), Some((user, group))) = (&mut misc.path, misc_user) {
            path.user = Some(user);
            path.group = group;
        }
        if misc.path.is_none() {
            context.warning(
                node.end_span(),
                "MISC_CHECK without 'misc_path': keepalived skips it",
            );
            return None;
        }
    }
    let no_urls =
        matches!(&kind, CheckerKind::Http(http) | CheckerKind::Ssl(http) if http.urls.is_empty());
    if no_urls {
        // keepalived: "HTTP/SSL_GET checker has no urls specified - ignoring".
        context.warning(
            node.end_span(),
            format!(
                "{} has no 'url' block: keepalived ignores the checker",
                node.name()
            ),
        );
        return None;
    }
    if matches!(&kind, CheckerKind::Udp(udp) if udp.min_reply_length > udp.max_reply_length) {
        context.warning(
            node.end_span(),
            "UDP_CHECK min_reply_length is above max_reply_length: the check will always fail",
        );
    }
    let (default_retry, default_delay_before_retry) = default_for(&kind);
    common.retry = written.retry.or(inherited.retry).unwrap_or(default_retry);
    common.connect_timeout = written
        .connect_timeout
        .or(inherited.connect_timeout)
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
    common.delay_loop = written.delay_loop.unwrap_or(inherited.delay_loop);
    common.warmup = written
        .warmup
        .or(inherited.warmup)
        .unwrap_or(common.delay_loop);
    // keepalived: the checker's, the real server's, the checker type's
    // default, else (DNS_CHECK) the delay_loop.
    common.delay_before_retry = written
        .delay_before_retry
        .or(inherited.delay_before_retry)
        .or(default_delay_before_retry)
        .unwrap_or(common.delay_loop);
    common.alpha = written.alpha.unwrap_or(inherited.alpha);
    if let CheckerKind::Http(http) | CheckerKind::Ssl(http) = &mut kind {
        if http.virtualhost.is_none() {
            http.virtualhost = inherited.virtualhost.clone();
        }
    }
    // keepalived: "bindto address ... does not match address family of
    // connect_ip - skipping".
    if let Some(bind_to) = common.connection.bind_to {
        let checked = common.connection.connect_ip.unwrap_or(inherited.address);
        if bind_to.is_ipv4() != checked.is_ipv4() {
            let span = node
                .children
                .iter()
                .find(|child| child.name() == "bindto")
                .map_or(node.keyword.span, |child| child.span());
            context.warning(
                span,
                "bindto's address family differs from the address checked: keepalived ignores bindto",
            );
            common.connection.bind_to = None;
        }
    }
    Some(Checker { common, kind })
}

fn new_http() -> HttpCheck {
    HttpCheck {
        protocol: HttpProtocol::Http10,
        fast_recovery: false,
        virtualhost: None,
        enable_sni: false,
        urls: Vec::new(),
    }
}

fn read_common(
    node: &Node,
    common: &mut CheckerCommon,
    written: &mut Written,
    context: &mut Context,
) -> bool {
    let Some(word) = node.argument(0) else {
        return match node.name() {
            "alpha" => {
                written.alpha = Some(true);
                true
            }
            "log_all_failures" => {
                common.log_all_failures = Some(true);
                true
            }
            _ => false,
        };
    };
    match node.name() {
        "connect_ip" => common.connection.connect_ip = values::address(context, word, "connect_ip"),
        "connect_port" => {
            common.connection.connect_port =
                values::integer(context, word, 1, 65535, "connect_port")
        }
        "bindto" => common.connection.bind_to = values::address(context, word, "bindto"),
        "bind_if" => common.connection.bind_interface = Some(word.text.to_string()),
        "bind_port" => common.connection.bind_port = values::port(context, word, "bind_port"),
        "fwmark" => {
            common.connection.fwmark = values::integer(context, word, 0, u32::MAX.into(), "fwmark")
        }
        "alpha" => written.alpha = values::boolean(context, word, "alpha").or(written.alpha),
        "log_all_failures" => {
            common.log_all_failures =
                values::boolean(context, word, "log_all_failures").or(common.log_all_failures)
        }
        "connect_timeout" => {
            written.connect_timeout =
                values::connect_timeout(context, word).or(written.connect_timeout)
        }
        "retry" | "nb_get_retry" => {
            if node.name() == "nb_get_retry" {
                context.warning(
                    node.keyword.span,
                    "'nb_get_retry' is deprecated: use 'retry'",
                );
            }
            written.retry =
                values::integer(context, word, 0, u32::MAX.into(), "retry").or(written.retry)
        }
        "delay_before_retry" => {
            written.delay_before_retry =
                values::timer(context, word, "delay_before_retry").or(written.delay_before_retry)
        }
        "warmup" => written.warmup = values::timer(context, word, "warmup").or(written.warmup),
        "delay_loop" => {
            written.delay_loop = values::delay_loop(context, word).or(written.delay_loop)
        }
        _ => return false,
    }
    true
}

fn read_http(node: &Node, name: &str, http: &mut HttpCheck, context: &mut Context) {
    let argument = node.argument(0);
    match name {
        "http_protocol" => {
            if let Some(word) = argument {
                http.protocol = values::choice(
                    context,
                    word,
                    &[
                        ("1.0", HttpProtocol::Http10),
                        ("1.0C", HttpProtocol::Http10Close),
                        ("1.0c", HttpProtocol::Http10Close),
                        ("1.1", HttpProtocol::Http11),
                    ],
                    "http_protocol",
                )
                .unwrap_or(http.protocol);
            }
        }
        "fast_recovery" => {
            if let Some(value) = values::optional_boolean(context, argument, "fast_recovery") {
                http.fast_recovery = value;
            }
        }
        "virtualhost" => http.virtualhost = Some(common::joined(node)),
        "enable_sni" => {
            if let Some(value) = values::optional_boolean(context, argument, "enable_sni") {
                http.enable_sni = value;
            }
        }
        "url" => {
            if let Some(url) = read_url(node, context) {
                http.urls.push(url);
            }
        }
        _ => context.not_acted_on(node),
    }
}

fn read_url(node: &Node, context: &mut Context) -> Option<Url> {
    let mut url = Url {
        path: None,
        digest: None,
        status_codes: Vec::new(),
        virtualhost: None,
        regex: None,
        regex_no_match: false,
        regex_options: Vec::new(),
        regex_stack: None,
        regex_min_offset: None,
        regex_max_offset: None,
    };
    for child in node.children {
        let argument = child.argument(0);
        match child.name() {
            "path" => url.path = Some(common::joined(child)),
            "digest" => {
                if let Some(word) = argument {
                    if word.text.len() == 32 && word.text.chars().all(|c| c.is_ascii_hexdigit()) {
                        url.digest = Some(word.text.to_ascii_lowercase());
                    } else {
                        context.error(
                            word.span,
                            format!("invalid digest '{}': expected an MD5 digest of 32 hexadecimal digits", word.text),
                        );
                    }
                }
            }
            "status_code" => {
                for word in child.arguments {
                    if let Some(range) = status_range(context, word) {
                        url.status_codes.push(range);
                    }
                }
            }
            "virtualhost" => url.virtualhost = Some(common::joined(child)),
            "regex" => url.regex = Some(common::joined(child)),
            "regex_no_match" => url.regex_no_match = true,
            "regex_options" => {
                const OPTIONS: &[&str] = &[
                    "allow_empty_class",
                    "alt_bsux",
                    "auto_callout",
                    "caseless",
                    "dollar_endonly",
                    "dotall",
                    "dupnames",
                    "extended",
                    "firstline",
                    "match_unset_backref",
                    "multiline",
                    "never_ucp",
                    "never_utf",
                    "no_auto_capture",
                    "no_auto_possess",
                    "no_dotstar_anchor",
                    "no_start_optimize",
                    "ucp",
                    "ungreedy",
                    "utf",
                    "never_backslash_c",
                    "alt_circumflex",
                    "alt_verbnames",
                    "use_offset_limit",
                ];
                for word in child.arguments {
                    if OPTIONS.contains(&word.text.as_str()) {
                        url.regex_options.push(word.text.to_string());
                    } else {
                        // keepalived 2.2.7 ignores unknown options silently.
                        let mut message =
                            format!("unknown regex option '{}' is ignored", word.text);
                        if let Some(best) = super::suggestion(&word.text, OPTIONS.iter().copied()) {
                            message.push_str(&format!(" (did you mean '{best}'?)"));
                        }
                        context.warning(word.span, message);
                    }
                }
            }
            "regex_stack" => {
                let start = values::integer(
                    context,
                    &child.arguments[0],
                    0,
                    u64::MAX.into(),
                    "regex_stack start",
                );
                let maximum = match child.arguments.get(1) {
                    Some(word) => {
                        values::integer(context, word, 0, u64::MAX.into(), "regex_stack maximum")
                    }
                    None => start,
                };
                if let (Some(start), Some(maximum)) = (start, maximum) {
                    url.regex_stack = Some((start, maximum));
                }
            }
            "regex_min_offset" => {
                if let Some(word) = argument {
                    url.regex_min_offset =
                        values::integer(context, word, 0, u64::MAX.into(), "regex_min_offset");
                }
            }
            "regex_max_offset" => {
                if let Some(word) = argument {
                    url.regex_max_offset =
                        values::integer(context, word, 0, u64::MAX.into(), "regex_max_offset");
                }
            }
            _ => context.not_acted_on(child),
        }
    }
    if url.status_codes.is_empty() {
        url.status_codes.push(200..=299);
    }
    if url.path.is_none() {
        context.warning(node.end_span(), "url without 'path': keepalived ignores it");
        return None;
    }
    Some(url)
}

/// `200`, `200-299`: HTTP status codes 100 to 599.
fn status_range(context: &mut Context, word: &crate::syntax::Word) -> Option<RangeInclusive<u16>> {
    let (start, end) = match word.text.split_once('-') {
        Some((start, end)) => (start, end),
        None => (word.text.as_str(), word.text.as_str()),
    };
    match (start.parse::<u16>(), end.parse::<u16>()) {
        (Ok(start), Ok(end))
            if (100..=599).contains(&start) && (100..=599).contains(&end) && start <= end =>
        {
            Some(start..=end)
        }
        _ => {
            context.error(
                word.span,
                format!("invalid status_code '{}': expected a code or range from 100 to 599, e.g. 200 or 200-299", word.text),
            );
            None
        }
    }
}

/// A checker type's default retry and delay_before_retry (`None`: the
/// delay_loop).
fn default_for(kind: &CheckerKind) -> (u32, Option<Duration>) {
    match kind {
        CheckerKind::Dns(_) => (3, None),
        CheckerKind::Misc(_) => (0, Some(Duration::from_secs(1))),
        CheckerKind::Http(_) | CheckerKind::Ssl(_) => (1, Some(Duration::from_secs(3))),
        _ => (1, Some(Duration::from_secs(1))),
    }
}

/// The top-level `SSL { ... }` block.
pub fn read_ssl(node: &Node, config: &mut Config, context: &mut Context) {
    if config.ssl.is_some() {
        context.warning(
            node.keyword.span,
            "SSL context already given: this one replaces it",
        );
    }
    let mut ssl = SslContext::default();
    for child in node.children {
        let value = Some(common::joined(child));
        if node
            .children
            .iter()
            .take_while(|earlier| !std::ptr::eq(*earlier, child))
            .any(|earlier| earlier.name() == child.name())
        {
            context.warning(
                child.keyword.span,
                format!("SSL {} already given: this one replaces it", child.name()),
            );
        }
        match child.name() {
            "password" => ssl.password = value,
            "ca" => ssl.ca = value,
            "certificate" => ssl.certificate = value,
            "key" => ssl.key = value,
            _ => context.not_acted_on(child),
        }
    }
    config.ssl = Some(ssl);
}
