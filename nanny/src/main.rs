//! `nanny`: runs a keepalived.conf's health checkers and prints what they
//! find; `nanny digest URL` prints what keepalived's genhash prints.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use nanny::cli::{Arguments, Command};
use nanny::driver::tcp;
use nanny::driver::{half_open, http};
use nanny::scheduler::{Handle, Start, StateChange};
use nanny::spec::{Endpoint, HttpVersion, Plan, TlsSpec, UrlSpec};

/// Writes to stderr, ignoring a failure: with `2>&1 | head` stderr's
/// reader may be gone too, and `eprintln!` would panic there.
macro_rules! report {
    ($($argument:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($argument)*);
    }};
}

/// [`report!`] without the newline.
macro_rules! report_text {
    ($($argument:tt)*) => {{
        let _ = write!(std::io::stderr(), $($argument)*);
    }};
}

fn main() -> ExitCode {
    let arguments = Arguments::parse();
    // stdout carries the states; stderr the logs, by default only those
    // saying nanny itself is behind (checks late, attempts abandoned):
    // that is not the servers' doing, and nowhere else to be seen; and
    // the one line saying how TCP_CHECK runs.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!(
            "{}=warn,{}=info",
            nanny::scheduler::LOAD,
            half_open::TARGET
        ))
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    if let Err(error) = nanny::raise_open_file_limit() {
        report!("nanny: cannot raise the open file limit: {error}");
    }
    if arguments.command.is_none() {
        tcp::set_check_mode(arguments.tcp_check);
    }
    // One thread, as keepalived's checker: with thousands of checks a
    // second, each a socket's few system calls, a multi-threaded runtime
    // spent more on its threads (wake-ups through futexes and eventfds,
    // work stealing, results handed across threads) than on the checks;
    // the checks' time is the kernel's TCP, which more threads do not
    // shorten. Every driver's I/O is non-blocking (tokio::fs and
    // tokio::process hand their blocking parts to tokio's blocking pool).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            report!("nanny: {error}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(async {
        match &arguments.command {
            Some(Command::Digest { url, timeout }) => digest(url, *timeout).await,
            None => run(&arguments).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(error) => {
            report!("nanny: {error:#}");
            ExitCode::from(2)
        }
    }
}

async fn digest(url: &str, timeout: u64) -> anyhow::Result<ExitCode> {
    let parsed = http::parse_url(url)?;
    let address: SocketAddr = tokio::net::lookup_host((parsed.host.as_str(), parsed.port))
        .await
        .with_context(|| format!("resolving {}", parsed.host))?
        .next()
        .with_context(|| format!("{} has no address", parsed.host))?;
    let endpoint = Endpoint {
        address,
        bind_address: None,
        bind_port: None,
        bind_interface: None,
        fwmark: None,
    };
    // A name is sent as the virtual host, an address as address:port, as
    // genhash does with and without -V.
    let virtualhost = parsed
        .host
        .parse::<std::net::IpAddr>()
        .is_err()
        .then(|| parsed.host.clone());
    let url_spec = UrlSpec {
        path: parsed.path,
        digest: None,
        status_codes: Vec::new(),
        virtualhost,
        regex: None,
    };
    // https: genhash's -S, without certificate verification; the name,
    // if any, as SNI.
    let tls = parsed.tls.then(|| TlsSpec {
        server_name: url_spec.virtualhost.clone(),
        verify: false,
        ca_file: None,
        client_certificate: None,
    });
    let response = http::fetch(
        &endpoint,
        &url_spec,
        HttpVersion::Http10,
        tls.as_ref(),
        Duration::from_secs(timeout),
    )
    .await
    .map_err(|failure| anyhow::anyhow!("{url}: {failure}"))?;
    quietly_if_closed(writeln!(
        std::io::stdout(),
        "{}",
        http::hex(&response.digest)
    ))?;
    Ok(ExitCode::SUCCESS)
}

async fn run(arguments: &Arguments) -> anyhow::Result<ExitCode> {
    if !arguments.file.exists() {
        bail!("{}: no such file", arguments.file.display());
    }
    let loaded = load(&arguments.file);
    let plan = Plan::from_config(&loaded.config);
    let slots = plan.slots.len();
    if slots == 0 {
        report!(
            "nanny: {}: no real server to check",
            arguments.file.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let start = if arguments.once {
        Start::Immediately
    } else {
        Start::Warmup
    };
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("listening for SIGTERM")?;
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .context("listening for SIGHUP")?;
    let mut handle = Handle::spawn(plan, start);
    let mut reported = 0usize;
    let mut any_down = false;
    loop {
        tokio::select! {
            change = handle.events.recv() => {
                let Some(change) = change else { break };
                if let Err(error) = print_change(&change, arguments.json) {
                    if error.kind() == std::io::ErrorKind::BrokenPipe {
                        // The reader is done (`nanny -f FILE | head`): stop
                        // as at SIGINT, quietly.
                        break;
                    }
                    return Err(error.into());
                }
                if change.initial {
                    reported += change.virtual_servers.len();
                    any_down |= !change.up;
                }
                if arguments.once && reported >= slots {
                    break;
                }
            }
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
            // keepalived's reload signal: unchanged checks keep their state.
            _ = hangup.recv(), if !arguments.once => {
                let loaded = load(&arguments.file);
                handle.reload(Plan::from_config(&loaded.config)).await;
            }
        }
    }
    handle.shutdown().await;
    Ok(if arguments.once && any_down {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Loads the configuration (its errors on stderr) with the checkers'
/// scripts reviewed as keepalived's checker process reviews them
/// (`enable_script_security`, the script user): a MISC_CHECK keepalived
/// would not run is taken out, and the review's lines go to stderr.
fn load(file: &std::path::Path) -> fulcrum_config::Loaded {
    let mut loaded = fulcrum_config::load(file, &Default::default());
    if loaded.diagnostics.has_errors() {
        report_text!("{}", loaded.diagnostics.render(&loaded.sources));
    }
    let review = fulcrum_scripts::review::review_here(
        &mut loaded.config,
        &[fulcrum_scripts::review::Part::Checkers],
    );
    for line in &review.lines {
        report!("nanny: {}", line.text);
    }
    loaded
}

/// A write to stdout whose failure because the reader went away is no
/// error: the command's work is done and it ends quietly (Rust ignores
/// SIGPIPE, so the write fails with EPIPE instead of ending the process).
fn quietly_if_closed(result: std::io::Result<()>) -> std::io::Result<()> {
    match result {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        result => result,
    }
}

/// Prints one change on stdout; an error (a broken pipe included) is the
/// caller's to judge.
fn print_change(change: &StateChange, json: bool) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    if json {
        let line = serde_json::to_string(change).map_err(std::io::Error::other)?;
        return writeln!(stdout, "{line}");
    }
    let state = if change.up { "UP" } else { "DOWN" };
    let what = if change.initial { "is" } else { "went" };
    let virtual_servers: Vec<String> = change
        .virtual_servers
        .iter()
        .map(|name| name.to_string())
        .collect();
    let mut weight = change
        .weight
        .map(|weight| format!(", weight {weight}"))
        .unwrap_or_default();
    if change.weight_offset != 0 {
        weight.push_str(&format!(", weight {:+}", change.weight_offset));
    }
    writeln!(
        stdout,
        "{} {what} {state}{weight} (virtual server {}): {}",
        change.real_server,
        virtual_servers.join(", "),
        change.reason
    )
}
