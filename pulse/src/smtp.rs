//! keepalived's SMTP alerts (core/smtp.c): a mail to every
//! `notification_email` address through `smtp_server` when an instance or
//! a sync group changes state (vrrp_notify.c; sent by the VRRP task), a
//! checker finds a real server up or down (check_*.c) or a virtual server
//! gains or loses its quorum (ipwrapper.c; both sent from
//! [`crate::lvs::alerts`]).
//!
//! Rules:
//! - **keepalived 2.2.7's bytes.** The subject is `[ROUTER_ID] ` and what
//!   happened ([`Alert`]); the dialogue is keepalived's: `HELO`, `MAIL
//!   FROM:<…>`, one `RCPT TO:<…>` per address, `DATA`, then the headers
//!   (`Date`, `From`, `Subject`, `X-Mailer: Keepalived`, `To`), the body,
//!   `\r\n.\r\n`, and `QUIT`. keepalived's buffers cut what does not fit
//!   (the subject at 255 bytes, the body at 511, the `To` list at 1023,
//!   each command at 1023): so does pulse, so that a receiver sees the
//!   same mail.
//! - **Pure, then thin.** [`Letter`] makes the message and [`Dialogue`]
//!   answers each server reply with what to send, tested with bytes;
//!   [`Mailer::send`] only connects, reads and writes.
//! - **Never in the way.** Each alert goes in a task of its own, with
//!   keepalived's timeout (`smtp_connect_timeout`, 30 s by default) on
//!   the connection and on each reply: a slow or missing server holds up
//!   neither VRRP nor the checkers, and a failure is logged, as
//!   keepalived logs it, and forgotten.
//! - **keepalived's defaults, computed once** ([`Mailer::new`]): the host's
//!   canonical name (`getaddrinfo` of the node name with `AI_CANONNAME`,
//!   keepalived's `get_local_name`) is the default `router_id`,
//!   `smtp_helo_name`, and with the user's name the default
//!   `notification_email_from`; a `smtp_server` given by name is resolved
//!   there too (its first address), as keepalived resolves it when it
//!   reads the configuration.

use std::ffi::CStr;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fulcrum_config::model::{GlobalDefs, Protocol};
use nanny::outcome::Failure;
use nanny::scheduler::CheckTransition;
use nanny::spec::{CheckKind, VirtualServerKey};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// keepalived's `SMTP_BUFFER_MAX`: its send and receive buffers, and the
/// `To` list's.
const BUFFER_MAX: usize = 1024;
/// keepalived's `MAX_HEADERS_LENGTH`: the subject's buffer.
const SUBJECT_MAX: usize = 256;
/// keepalived's `MAX_BODY_LENGTH`.
const BODY_MAX: usize = 512;
/// keepalived's `DEFAULT_SMTP_CONNECTION_TIMEOUT`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// What keepalived names a host whose name it cannot find.
const UNKNOWN_NAME: &str = "[unknown]";

/// What an alert is about: keepalived's `smtp_msg_t` with its subject's
/// words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Alert {
    /// `SMTP_MSG_VRRP`: `VRRP Instance NAME - WHAT`.
    Instance { name: String, what: &'static str },
    /// `SMTP_MSG_VGROUP`: `VRRP Group NAME - WHAT`.
    Group { name: String, what: &'static str },
    /// `SMTP_MSG_RS` and `SMTP_MSG_RS_SHUT`: `Realserver RS of virtual
    /// server VS - UP|DOWN`, the servers as keepalived formats them.
    RealServer {
        real_server: String,
        virtual_server: String,
        up: bool,
    },
    /// `SMTP_MSG_VS`: `Virtualserver VS - UP|DOWN` (its quorum).
    VirtualServer { virtual_server: String, up: bool },
}

impl Alert {
    /// The subject after `[ROUTER_ID] `.
    fn subject(&self) -> String {
        let state = |up: bool| if up { "UP" } else { "DOWN" };
        match self {
            Alert::Instance { name, what } => format!("VRRP Instance {name} - {what}"),
            Alert::Group { name, what } => format!("VRRP Group {name} - {what}"),
            Alert::RealServer {
                real_server,
                virtual_server,
                up,
            } => format!(
                "Realserver {real_server} of virtual server {virtual_server} - {}",
                state(*up)
            ),
            Alert::VirtualServer { virtual_server, up } => {
                format!("Virtualserver {virtual_server} - {}", state(*up))
            }
        }
    }
}

/// What vrrp_notify.c `vrrp_smtp_notifier` says of an instance entering
/// `state` ("MASTER", "BACKUP", "FAULT", "STOP", "DELETED"): the
/// subject's words and the body.
pub fn instance_words(state: &str) -> Option<(&'static str, &'static str)> {
    Some(match state {
        "MASTER" => (
            "Entering MASTER state",
            "=> VRRP Instance is now owning VRRP VIPs <=",
        ),
        "BACKUP" => (
            "Entering BACKUP state",
            "=> VRRP Instance is no longer owning VRRP VIPs <=",
        ),
        "FAULT" => (
            "Entering FAULT state",
            "=> VRRP Instance is no longer owning VRRP VIPs <=",
        ),
        "STOP" => ("Stopping", "=> VRRP Instance stopping <="),
        "DELETED" => ("Deleted", "=> VRRP Deleted at reload <="),
        _ => return None,
    })
}

/// What `vrrp_sync_smtp_notifier` says of a sync group entering `state`.
pub fn group_words(state: &str) -> Option<(&'static str, &'static str)> {
    Some(match state {
        "MASTER" => (
            "Entering MASTER state",
            "=> All VRRP group instances are now in MASTER state <=",
        ),
        "BACKUP" => (
            "Entering BACKUP state",
            "=> All VRRP group instances are now in BACKUP state <=",
        ),
        "FAULT" => (
            "Entering FAULT state",
            "=> All VRRP group instances are now in FAULT state <=",
        ),
        "STOP" => (
            "Stopping",
            "=> All VRRP group instances are now stopping <=",
        ),
        _ => return None,
    })
}

/// check_*.c: the body of the alert keepalived's checker for one real
/// server sends at `transition`, if it sends one (the real server's
/// `smtp_alert` and `no_checker_emails` aside: [`checker_alert_wanted`]).
/// Each checker alerts when its own state changes; MISC_CHECK at its first
/// outcome too. FILE_CHECK never alerts. SMTP_CHECK's failure says which
/// step failed in keepalived (`=> CHECK failed on service : Connection
/// timeout to server [...] <=`); pulse's checker does not tell, and says
/// `=> CHECK failed on service <=`, keepalived's words without a step.
pub fn checker_body(kind: &CheckKind, transition: &CheckTransition<'_>) -> Option<String> {
    let changed = transition.up != transition.was_up;
    let up = transition.up;
    let either =
        |succeed: &str, failed: &str| changed.then(|| if up { succeed } else { failed }.to_owned());
    match kind {
        CheckKind::Tcp => either(
            "=> TCP CHECK succeed on service <=",
            "=> TCP CHECK failed on service <=",
        ),
        CheckKind::Http(_) => either(
            "=> CHECK succeed on service <=",
            "=> CHECK failed on service : HTTP request failed <=",
        ),
        CheckKind::Udp(_) => either(
            "=> UDP CHECK succeed on service <=",
            "=> UDP CHECK failed on service <=",
        ),
        CheckKind::Ping => either(
            "=> ICMP CHECK succeed on service <=",
            "=> ICMP CHECK failed on service <=",
        ),
        CheckKind::Dns(_) => either(
            "=> DNS_CHECK: succeed on service <=",
            "=> DNS_CHECK: failed on service <=",
        ),
        CheckKind::Smtp(_) => either(
            "=> CHECK succeed on service <=",
            "=> CHECK failed on service <=",
        ),
        CheckKind::Misc(_) => (changed || transition.initial).then(|| {
            let outcome = match transition.failure {
                None => "succeeded",
                Some(Failure::Timeout { .. }) => "timed out",
                Some(_) => "failed",
            };
            format!("=> MISC CHECK {outcome} on service <=")
        }),
        CheckKind::Bfd(bfd) => changed.then(|| {
            format!(
                "=> BFD CHECK {} {} on service <=",
                bfd.name,
                if up { "succeeded" } else { "failed" }
            )
        }),
        CheckKind::File(_) | CheckKind::Unsupported { .. } => None,
    }
}

/// ipwrapper.c `do_vs_notifies`: a virtual server's quorum alert's body,
/// keepalived's `QUORUM+HYSTERESIS=THRESHOLD` whichever way the threshold
/// was computed (`quorum - hysteresis` for a loss).
pub fn quorum_body(
    up: bool,
    initial: bool,
    quorum: u32,
    hysteresis: u32,
    threshold: i64,
    weight_sum: i64,
) -> String {
    let what = match (up, initial) {
        (true, true) => "Starting with quorum up",
        (true, false) => "Gained quorum",
        (false, true) => "Starting with quorum down",
        (false, false) => "Lost quorum",
    };
    format!("=> {what} {quorum}+{hysteresis}={threshold} <= {weight_sum} <=")
}

/// keepalived's condition around every checker alert: the real server's
/// `smtp_alert`, and with `no_checker_emails` only when the real server's
/// state changed.
pub fn checker_alert_wanted(
    smtp_alert: bool,
    no_checker_emails: bool,
    transition: &CheckTransition<'_>,
) -> bool {
    smtp_alert && (transition.server_changed || !no_checker_emails)
}

/// check_data.c `format_vs`: `[ADDRESS]:PROTOCOL:PORT`, `FWM MARK`, or
/// `[GROUP]:0` (a group's virtual server has no address of its own).
pub fn virtual_server_name(key: &VirtualServerKey) -> String {
    match key {
        VirtualServerKey::Address { address, protocol } => service_name(*address, *protocol),
        VirtualServerKey::Fwmark(mark) => format!("FWM {mark}"),
        VirtualServerKey::Group { name, .. } => format!("[{name}]:0"),
    }
}

/// `format_rs` and `inet_sockaddrtotrio`: `[ADDRESS]:PROTOCOL:PORT`, the
/// protocol the virtual server's (`none` without one).
pub fn service_name(address: SocketAddr, protocol: Option<Protocol>) -> String {
    let protocol = match protocol {
        Some(Protocol::Tcp) => "tcp",
        Some(Protocol::Udp) => "udp",
        Some(Protocol::Sctp) => "sctp",
        None => "none",
    };
    format!("[{}]:{protocol}:{}", address.ip(), address.port())
}

/// The global settings of the alerts, with keepalived's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub server: SocketAddr,
    pub recipients: Vec<String>,
    /// `None` where keepalived has none (no host name): it then writes
    /// `(null)`, as glibc's printf does.
    pub from: Option<String>,
    /// `None`: keepalived says `localhost`.
    pub helo: Option<String>,
    pub router_id: Option<String>,
    pub timeout: Duration,
}

/// One alert's message: everything [`Dialogue`] sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Letter {
    pub helo: String,
    pub from: String,
    pub recipients: Vec<String>,
    /// After `DATA`: the headers, the body, the final `.`.
    pub data: Vec<u8>,
}

impl Letter {
    /// smtp.c `smtp_alert` and `body_cmd`; `date` as
    /// [`rfc822_date`] writes it.
    pub fn new(settings: &Settings, alert: &Alert, body: &str, date: &str) -> Letter {
        let from = settings.from.as_deref().unwrap_or("(null)");
        let subject = match &settings.router_id {
            Some(router_id) => format!("[{router_id}] {}", alert.subject()),
            None => format!("[(null)] {}", alert.subject()),
        };
        let subject = cut(subject.as_bytes(), SUBJECT_MAX - 1);
        let body = cut(body.as_bytes(), BODY_MAX - 1);
        let to = to_header(&settings.recipients);
        let mut data = Vec::new();
        data.extend_from_slice(format!("Date: {date}\r\nFrom: {from}\r\nSubject: ").as_bytes());
        data.extend_from_slice(subject);
        data.extend_from_slice(b"\r\nX-Mailer: Keepalived\r\nTo: ");
        data.extend_from_slice(&to);
        data.extend_from_slice(b"\r\n\r\n");
        data.extend_from_slice(body);
        data.extend_from_slice(b"\r\n\r\n.\r\n");
        Letter {
            helo: settings
                .helo
                .clone()
                .unwrap_or_else(|| "localhost".to_owned()),
            from: from.to_owned(),
            recipients: settings.recipients.clone(),
            data: command(&data),
        }
    }
}

/// The first `limit` bytes, as keepalived's `snprintf` and `strncpy` cut.
fn cut(bytes: &[u8], limit: usize) -> &[u8] {
    &bytes[..bytes.len().min(limit)]
}

/// One command as keepalived's `snprintf` into its 1024-byte send buffer
/// leaves it.
fn command(bytes: &[u8]) -> Vec<u8> {
    cut(bytes, BUFFER_MAX - 1).to_vec()
}

/// smtp.c `build_to_header_rcpt_addrs`: the addresses joined with `, `,
/// within 1023 bytes; an address that does not fit ends the list, after
/// its separator.
fn to_header(recipients: &[String]) -> Vec<u8> {
    let mut header = Vec::new();
    let mut available = BUFFER_MAX - 1;
    for (position, address) in recipients.iter().enumerate() {
        if position > 0 {
            if available < 2 {
                break;
            }
            header.extend_from_slice(b", ");
            available -= 2;
        }
        if available < address.len() {
            break;
        }
        header.extend_from_slice(address.as_bytes());
        available -= address.len();
    }
    header
}

/// keepalived's `Date`: `strftime("%a, %d %b %Y %H:%M:%S %z")` of the
/// local time (the C locale's names: keepalived sets no locale).
pub fn rfc822_date(time: SystemTime) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let seconds = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as libc::time_t;
    // SAFETY: localtime_r writes the zeroed tm it is given and reads the
    // time given; both live through the call.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&seconds, &mut tm);
        tm
    };
    let offset = tm.tm_gmtoff / 60;
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} {}{:02}{:02}",
        DAYS[tm.tm_wday.rem_euclid(7) as usize],
        tm.tm_mday,
        MONTHS[tm.tm_mon.rem_euclid(12) as usize],
        tm.tm_year + 1900,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        if offset < 0 { '-' } else { '+' },
        offset.abs() / 60,
        offset.abs() % 60
    )
}

/// keepalived's `inet_sockaddrtopair`: `[ADDRESS]:PORT`.
pub fn server_name(server: SocketAddr) -> String {
    format!("[{}]:{}", server.ip(), server.port())
}

/// Where the dialogue stands: keepalived's `smtp_cmd_state`, from the
/// connection on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Connected: waiting for the greeting (220).
    Greeting,
    Helo,
    Mail,
    Rcpt,
    Data,
    Body,
    Quit,
    End,
}

impl Stage {
    /// The reply code the stage waits for and its name in keepalived's
    /// error line (its `SMTP_FSM`).
    fn expected(self) -> (u32, &'static str) {
        match self {
            Stage::Greeting => (220, "(E)SMTP"),
            Stage::Helo => (250, "HELO"),
            Stage::Mail => (250, "MAIL"),
            Stage::Rcpt => (250, "RCPT"),
            Stage::Data => (354, "DATA"),
            Stage::Body => (250, "BODY"),
            Stage::Quit | Stage::End => (221, "QUIT"),
        }
    }
}

/// What to do after a reply, a timeout or an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// Lines for the log, in keepalived's words.
    pub logs: Vec<Log>,
    pub action: Action,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Log {
    /// Logged always (keepalived's LOG_INFO).
    Info(String),
    /// Logged with `-D` only (keepalived's `LOG_DETAIL_BIT`).
    Detail(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Read more.
    Wait,
    /// Send these bytes, then read.
    Send(Vec<u8>),
    /// Close the connection: done or given up.
    Close,
}

/// keepalived's SMTP state machine (smtp.c `smtp_read_thread` and the
/// command handlers), without I/O.
#[derive(Debug, Clone)]
pub struct Dialogue {
    letter: Letter,
    server: String,
    stage: Stage,
    /// The next `RCPT TO`'s address.
    next_recipient: usize,
    /// What was read and not yet used (keepalived's `smtp->buffer`).
    buffer: Vec<u8>,
}

impl Dialogue {
    /// Connected to `server` ([`server_name`]): waiting for its greeting.
    pub fn new(letter: Letter, server: &str) -> Dialogue {
        Dialogue {
            letter,
            server: server.to_owned(),
            stage: Stage::Greeting,
            next_recipient: 0,
            buffer: Vec::new(),
        }
    }

    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// Bytes from the server (never none: the end of the stream is
    /// [`Dialogue::closed`]).
    pub fn read(&mut self, bytes: &[u8]) -> Turn {
        let mut logs = Vec::new();
        // keepalived reads at most what its buffer has room for; more
        // than it holds is an overflow.
        if self.buffer.len() + bytes.len() >= BUFFER_MAX {
            logs.push(Log::Info(format!(
                "Received buffer from remote SMTP server {} overflow our get read buffer length.",
                self.server
            )));
            self.buffer.clear();
            return self.quit(logs);
        }
        self.buffer.extend_from_slice(bytes);
        let Some(status) = self.reply_code() else {
            return Turn {
                logs,
                action: Action::Wait,
            };
        };
        let (expected, name) = self.stage.expected();
        if status == expected {
            match self.stage {
                // More addresses: another RCPT TO.
                Stage::Rcpt if self.next_recipient < self.letter.recipients.len() => {}
                Stage::Body => {
                    logs.push(Log::Detail("SMTP alert successfully sent.".to_owned()));
                    self.stage = Stage::Quit;
                }
                Stage::Quit => self.stage = Stage::End,
                stage => self.stage = stage.next(),
            }
        } else {
            logs.push(Log::Info(format!(
                "Error processing {name} cmd on SMTP server {}. SMTP status code = {status}",
                self.server
            )));
            self.stage = Stage::Quit;
        }
        if self.stage == Stage::End {
            return Turn {
                logs,
                action: Action::Close,
            };
        }
        Turn {
            logs,
            action: Action::Send(self.command()),
        }
    }

    /// No reply within the timeout: QUIT, or give up if that was it.
    pub fn timed_out(&mut self) -> Turn {
        let logs = vec![Log::Info(format!(
            "Timeout reading data to remote SMTP server {}.",
            self.server
        ))];
        if self.stage == Stage::Quit {
            return Turn {
                logs,
                action: Action::Close,
            };
        }
        self.quit(logs)
    }

    /// A read failed (not the end of the stream): QUIT.
    pub fn read_failed(&mut self) -> Turn {
        let logs = vec![Log::Info(format!(
            "Error reading data from remote SMTP server {}.",
            self.server
        ))];
        self.quit(logs)
    }

    fn quit(&mut self, logs: Vec<Log>) -> Turn {
        self.stage = Stage::Quit;
        Turn {
            logs,
            action: Action::Send(self.command()),
        }
    }

    /// The code of the first reply line that is not a continuation
    /// (`NNN-`), consuming up to it; `None` until a whole line came.
    /// keepalived reads the three characters as digits without checking.
    fn reply_code(&mut self) -> Option<u32> {
        let mut start = 0;
        while start < self.buffer.len() {
            let end = self.buffer[start..]
                .windows(2)
                .position(|pair| pair == b"\r\n")
                .map(|offset| start + offset);
            let Some(end) = end else {
                self.buffer.drain(..start);
                return None;
            };
            let byte = |index: usize| self.buffer.get(start + index).copied().unwrap_or(0);
            if byte(3) == b'-' {
                start = end + 2;
                continue;
            }
            let digit = |index: usize| i64::from(byte(index)) - i64::from(b'0');
            let status = digit(0) * 100 + digit(1) * 10 + digit(2);
            self.buffer.drain(..end + 2);
            return Some(status as u32);
        }
        self.buffer.clear();
        None
    }

    /// The command of the current stage.
    fn command(&mut self) -> Vec<u8> {
        let letter = &self.letter;
        match self.stage {
            Stage::Helo => command(format!("HELO {}\r\n", letter.helo).as_bytes()),
            Stage::Mail => command(format!("MAIL FROM:<{}>\r\n", letter.from).as_bytes()),
            Stage::Rcpt => {
                let address = letter
                    .recipients
                    .get(self.next_recipient)
                    .map_or("", String::as_str);
                self.next_recipient += 1;
                command(format!("RCPT TO:<{address}>\r\n").as_bytes())
            }
            Stage::Data => b"DATA\r\n".to_vec(),
            Stage::Body => letter.data.clone(),
            Stage::Greeting | Stage::Quit | Stage::End => b"QUIT\r\n".to_vec(),
        }
    }
}

impl Stage {
    fn next(self) -> Stage {
        match self {
            Stage::Greeting => Stage::Helo,
            Stage::Helo => Stage::Mail,
            Stage::Mail => Stage::Rcpt,
            Stage::Rcpt => Stage::Data,
            Stage::Data => Stage::Body,
            Stage::Body => Stage::Quit,
            Stage::Quit | Stage::End => Stage::End,
        }
    }
}

/// Sends alerts; made once per configuration.
#[derive(Debug, Clone)]
pub struct Mailer {
    settings: Arc<Settings>,
}

/// Why there is no mailer.
#[derive(Debug, thiserror::Error)]
pub enum MailerError {
    #[error("Invalid smtp server {host} {port}")]
    Unresolved { host: String, port: u16 },
}

impl Mailer {
    /// keepalived's `smtp_alert` sends nothing without addresses or a
    /// server: `None` then. Blocking: it may ask the resolver (the host's
    /// canonical name, the server's name).
    pub fn new(global: &GlobalDefs) -> Result<Option<Mailer>, MailerError> {
        let Some(server) = &global.smtp_server else {
            return Ok(None);
        };
        let address = match (server.address, &server.host) {
            (Some(address), _) => SocketAddr::new(address, server.port),
            (None, Some(host)) => {
                use std::net::ToSocketAddrs;
                (host.as_str(), server.port)
                    .to_socket_addrs()
                    .ok()
                    .and_then(|mut found| found.next())
                    .ok_or_else(|| MailerError::Unresolved {
                        host: host.clone(),
                        port: server.port,
                    })?
            }
            (None, None) => return Ok(None),
        };
        if global.notification_email.is_empty() {
            return Ok(None);
        }
        let settings = Settings::from_global(global, address, local_name, user_name);
        Ok(Some(Mailer {
            settings: Arc::new(settings),
        }))
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Sends `alert` with `body` from a task of its own; returns at once.
    pub fn send(&self, alert: Alert, body: &str) {
        let letter = Letter::new(
            &self.settings,
            &alert,
            body,
            &rfc822_date(SystemTime::now()),
        );
        let settings = self.settings.clone();
        // Called from the runtime's tasks and its blocking pool, both
        // inside the runtime; a caller outside it loses the alert, said.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move { deliver(&settings, letter).await });
            }
            Err(_) => tracing::warn!("SMTP alert not sent: no runtime to send it from"),
        }
    }
}

impl Settings {
    /// global_data.c `init_global_data`'s defaults, `local_name` and
    /// `user_name` asked only when needed, as keepalived asks.
    pub fn from_global(
        global: &GlobalDefs,
        server: SocketAddr,
        local_name: impl FnOnce() -> Option<String>,
        user_name: impl FnOnce() -> Option<String>,
    ) -> Settings {
        let needed = global.router_id.is_none()
            || global.smtp_helo_name.is_none()
            || global.notification_email_from.is_none();
        let local = if needed {
            Some(local_name().unwrap_or_else(|| UNKNOWN_NAME.to_owned()))
        } else {
            None
        };
        // The host's name when it is known (keepalived's default router_id
        // takes even "[unknown]").
        let known = local.as_deref().filter(|name| *name != UNKNOWN_NAME);
        Settings {
            server,
            recipients: global.notification_email.clone(),
            from: global.notification_email_from.clone().or_else(|| {
                let host = known?;
                Some(format!("{}@{host}", user_name()?))
            }),
            helo: global
                .smtp_helo_name
                .clone()
                .or_else(|| known.map(str::to_owned)),
            router_id: global.router_id.clone().or(local),
            timeout: global.smtp_connect_timeout.unwrap_or(DEFAULT_TIMEOUT),
        }
    }
}

/// keepalived's `get_local_name`: the canonical name of the node name.
pub fn local_name() -> Option<String> {
    // SAFETY: uname writes the zeroed struct given.
    let node = unsafe {
        let mut name: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut name) < 0 {
            return None;
        }
        CStr::from_ptr(name.nodename.as_ptr()).to_owned()
    };
    let hints = libc::addrinfo {
        ai_flags: libc::AI_CANONNAME,
        ai_family: 0,
        ai_socktype: 0,
        ai_protocol: 0,
        ai_addrlen: 0,
        ai_addr: std::ptr::null_mut(),
        ai_canonname: std::ptr::null_mut(),
        ai_next: std::ptr::null_mut(),
    };
    let mut found: *mut libc::addrinfo = std::ptr::null_mut();
    // SAFETY: the name and hints live through the call; what getaddrinfo
    // returns is read before freeaddrinfo and not after.
    unsafe {
        if libc::getaddrinfo(node.as_ptr(), std::ptr::null(), &hints, &mut found) != 0 {
            return None;
        }
        let name = (!found.is_null() && !(*found).ai_canonname.is_null()).then(|| {
            CStr::from_ptr((*found).ai_canonname)
                .to_string_lossy()
                .into_owned()
        });
        libc::freeaddrinfo(found);
        name
    }
}

/// The name of the user pulse runs as (keepalived's `getpwuid(getuid())`).
pub fn user_name() -> Option<String> {
    let mut buffer = vec![0 as libc::c_char; 4096];
    // SAFETY: getpwuid_r writes the zeroed passwd given and its strings in
    // the buffer given, whose length it is told; both outlive the reads.
    unsafe {
        let mut entry: libc::passwd = std::mem::zeroed();
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let status = libc::getpwuid_r(
            libc::getuid(),
            &mut entry,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut result,
        );
        if status != 0 || result.is_null() || entry.pw_name.is_null() {
            return None;
        }
        Some(CStr::from_ptr(entry.pw_name).to_string_lossy().into_owned())
    }
}

/// keepalived's detailed lines at debug: what pulse's `-D` shows.
fn log(entry: &Log) {
    match entry {
        Log::Info(line) => tracing::info!("{line}"),
        Log::Detail(line) => tracing::debug!("{line}"),
    }
}

/// smtp.c `smtp_connect` and the reads and writes around [`Dialogue`].
async fn deliver(settings: &Settings, letter: Letter) {
    use std::os::fd::AsRawFd;
    let server = server_name(settings.server);
    let socket = match settings.server {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
    };
    // keepalived gives up silently when it has no socket.
    let Ok(socket) = socket else { return };
    let descriptor = socket.as_raw_fd();
    let mut stream =
        match tokio::time::timeout(settings.timeout, socket.connect(settings.server)).await {
            Err(_) => {
                tracing::info!("Timeout opening connection to remote SMTP server {server}.");
                return;
            }
            // keepalived's scheduler sees the failed connection as an
            // error on its descriptor.
            Ok(Err(_)) => {
                tracing::info!("smtp fd {descriptor} returned write error");
                return;
            }
            Ok(Ok(stream)) => stream,
        };
    log(&Log::Detail(format!(
        "Remote SMTP server {server} connected."
    )));
    let mut dialogue = Dialogue::new(letter, &server);
    let mut buffer = [0u8; BUFFER_MAX];
    loop {
        let turn = match tokio::time::timeout(settings.timeout, stream.read(&mut buffer)).await {
            Err(_) => dialogue.timed_out(),
            // keepalived's scheduler reports the peer's close as a read
            // error (EPOLLRDHUP) before reading what came with it.
            Ok(Ok(0)) => {
                tracing::info!("smtp fd {descriptor} returned read error");
                return;
            }
            Ok(Ok(read)) => dialogue.read(&buffer[..read]),
            Ok(Err(_)) => dialogue.read_failed(),
        };
        for entry in &turn.logs {
            log(entry);
        }
        match turn.action {
            Action::Wait => {}
            Action::Close => return,
            Action::Send(bytes) => {
                if stream.write_all(&bytes).await.is_err() {
                    tracing::info!("Cannot send data to remote SMTP server {server}.");
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
