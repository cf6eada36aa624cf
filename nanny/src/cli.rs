//! nanny's command line: one definition for its parser, its help, and
//! the man page and shell completions `cargo xtask generate` writes from
//! it (nanny/doc/).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::driver::tcp::CheckMode;

#[derive(Parser)]
#[command(
    version,
    about = "Health checkers for real servers, with keepalived's semantics"
)]
pub struct Arguments {
    /// The configuration (keepalived's -f).
    #[arg(
        short = 'f',
        long = "use-file",
        default_value = "/etc/keepalived/keepalived.conf"
    )]
    pub file: PathBuf,
    /// One round of checks, then exit: non-zero if any real server is down.
    /// Without it, nanny runs until SIGINT or SIGTERM, and SIGHUP reloads
    /// the configuration.
    #[arg(long)]
    pub once: bool,
    /// One JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,
    /// How TCP_CHECK asks a server. half-open: up when the server's kernel
    /// answers the SYN with SYN-ACK (what keepalived's connect succeeding
    /// tells), refused on its reset, timeout on silence; this machine's
    /// kernel then resets the half-open request, so the server's
    /// application never accepts a connection (keepalived's check makes
    /// one, which the server accepts and may log). Needs CAP_NET_RAW;
    /// without it nanny connects, and says so once on stderr. HTTP_GET,
    /// SSL_GET and SMTP_CHECK always connect.
    #[arg(long, value_enum, default_value_t = CheckMode::HalfOpen)]
    pub tcp_check: CheckMode,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Print the MD5 digest of a URL's body, as keepalived's genhash does.
    Digest {
        /// http[s]://HOST[:PORT][/PATH]
        url: String,
        /// Seconds before giving up.
        #[arg(long, default_value_t = 5)]
        timeout: u64,
    },
}

/// The man page's sections after the options.
pub const MAN_SECTIONS: &[(&str, &str)] = &[("EXIT STATUS", EXIT_STATUS)];

/// The man page's EXIT STATUS section.
const EXIT_STATUS: &str = "0: every real server up after --once's round, a digest \
printed, or a stop on SIGINT or SIGTERM. 1: a real server down after --once's round. \
2: nanny could not run (a bad command line, a configuration it cannot read, a URL it \
cannot reach).";
