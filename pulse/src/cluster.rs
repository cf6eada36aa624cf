//! The SDN mode's commands on the cluster store (docs/sdn.md):
//! `pulse --cluster URLS --apply FILE`, `pulse --cluster URLS --status
//! [--json]` and `pulse --cluster URLS --which-dip CLIENT:PORT [--vip
//! VIP:PORT[/PROTOCOL]] [--json]`.

pub mod which_dip;

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use fulcrum_cluster::schema::Protocol;
use fulcrum_cluster::state::{State, VipKey};

use fulcrum_cluster::store::{self, Reading, Store};
use fulcrum_cluster::{policy, status};
use fulcrum_config::diagnostic::Severity;

use crate::{cli, exit, summary};

/// How long a request to the store may take: a store without quorum
/// answers nothing, and a command says so rather than wait.
const STORE_TIMEOUT: Duration = Duration::from_secs(5);

/// Runs the cluster command `arguments` asks for.
pub fn run(
    arguments: &cli::Arguments,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> std::io::Result<i32> {
    let usage = |stderr: &mut dyn Write, message: &str| -> std::io::Result<i32> {
        writeln!(stderr, "pulse: {message}")?;
        writeln!(stderr, "Try 'pulse --help' for more information.")?;
        Ok(exit::USAGE)
    };
    let commands = usize::from(arguments.apply.is_some())
        + usize::from(arguments.status)
        + usize::from(arguments.which_dip.is_some());
    if commands > 1 {
        return usage(
            stderr,
            "--apply, --status and --which-dip are three commands: give one",
        );
    }
    if arguments.json && !arguments.status && arguments.which_dip.is_none() {
        return usage(stderr, "--json goes with --status or --which-dip");
    }
    if arguments.vip.is_some() && arguments.which_dip.is_none() {
        return usage(stderr, "--vip goes with --which-dip");
    }
    let Some(cluster) = &arguments.cluster else {
        // Without the store, --status asks the pulse running here.
        if arguments.status {
            return crate::status::run(arguments, stdout, stderr);
        }
        return usage(
            stderr,
            "--apply and --which-dip need the cluster store: --cluster=URL[,URL...] (--status \
             without it asks the pulse running here)",
        );
    };
    let endpoints = store::endpoints(cluster);
    if endpoints.is_empty() {
        return usage(stderr, "--cluster names no store member");
    }
    if let Some(path) = &arguments.apply {
        return apply(arguments, &endpoints, path, stdout, stderr);
    }
    if arguments.status {
        return show_status(arguments, &endpoints, stdout, stderr);
    }
    if let Some(client) = &arguments.which_dip {
        let Ok(client) = client.parse::<SocketAddr>() else {
            return usage(
                stderr,
                &format!(
                    "--which-dip takes a client's ADDRESS:PORT ([ADDRESS]:PORT for IPv6), \
                     not '{client}'"
                ),
            );
        };
        let vip = match arguments.vip.as_deref().map(vip_key).transpose() {
            Ok(vip) => vip,
            Err(message) => return usage(stderr, &message),
        };
        return show_which_dip(arguments, &endpoints, client, vip, stdout, stderr);
    }
    stdout.flush()?;
    stderr.flush()?;
    Ok(crate::mux::run(arguments, cluster))
}

/// `--apply FILE`: the file checked as `-t` checks it, then as a policy;
/// written only if neither found an error.
fn apply(
    arguments: &cli::Arguments,
    endpoints: &[String],
    path: &std::path::Path,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> std::io::Result<i32> {
    let options = arguments.reading_options();
    let mut loaded = fulcrum_config::load(path, &options);
    let policy = if loaded.diagnostics.count(Severity::Error) == 0 {
        match policy::of(&loaded.config) {
            Ok(policy) => Some(policy),
            Err(errors) => {
                for error in errors {
                    loaded.diagnostics.push(error);
                }
                None
            }
        }
    } else {
        None
    };
    let errors = loaded.diagnostics.count(Severity::Error);
    let warnings = loaded.diagnostics.count(Severity::Warning);
    writeln!(
        stderr,
        "{}{}",
        loaded.diagnostics.render(&loaded.sources),
        summary(errors, warnings)
    )?;
    let Some(policy) = policy else {
        writeln!(stderr, "pulse: {}: nothing written", path.display())?;
        return Ok(exit::ERRORS);
    };
    let outcome = runtime()?.block_on(async {
        let mut store = Store::connect(endpoints, STORE_TIMEOUT).await?;
        let started = std::time::Instant::now();
        let written = store.apply(&policy).await?;
        Ok::<_, store::StoreError>((written, started.elapsed()))
    });
    match outcome {
        Ok((written, _)) if written.put == 0 && written.deleted == 0 => {
            writeln!(
                stdout,
                "policy unchanged at revision {} ({} networks, {} VIPs, {} DIPs)",
                written.revision, policy.networks, policy.vips, policy.dips
            )?;
            Ok(exit::CLEAN)
        }
        Ok((written, took)) => {
            writeln!(
                stdout,
                "policy revision {} written in {:.1} ms: {} keys written, {} deleted ({} \
                 networks, {} VIPs, {} DIPs)",
                written.revision,
                took.as_secs_f64() * 1000.0,
                written.put,
                written.deleted,
                policy.networks,
                policy.vips,
                policy.dips
            )?;
            Ok(exit::CLEAN)
        }
        Err(error) => {
            writeln!(stderr, "pulse: {error}")?;
            Ok(exit::FATAL)
        }
    }
}

/// `--status [--json]`.
fn show_status(
    arguments: &cli::Arguments,
    endpoints: &[String],
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> std::io::Result<i32> {
    let Some(reading) = read_store(endpoints, stderr)? else {
        return Ok(exit::FATAL);
    };
    let status = status::of(&reading);
    if arguments.json {
        let json = serde_json::to_string_pretty(&status).map_err(std::io::Error::other)?;
        writeln!(stdout, "{json}")?;
    } else {
        write!(stdout, "{}", status::render(&status))?;
    }
    for problem in &status.problems {
        writeln!(stderr, "pulse: the store's {problem}")?;
    }
    Ok(if status.problems.is_empty() {
        exit::CLEAN
    } else {
        exit::ERRORS
    })
}

/// The store read whole at one revision; `None` when it cannot be (said
/// on `stderr`).
fn read_store(endpoints: &[String], stderr: &mut dyn Write) -> std::io::Result<Option<Reading>> {
    let reading = runtime()?.block_on(async {
        let mut store = Store::connect(endpoints, STORE_TIMEOUT).await?;
        store.read().await
    });
    match reading {
        Ok(reading) => Ok(Some(reading)),
        Err(error) => {
            writeln!(stderr, "pulse: {error}")?;
            Ok(None)
        }
    }
}

/// `--vip ADDRESS:PORT[/PROTOCOL]`.
fn vip_key(text: &str) -> Result<VipKey, String> {
    let (socket, protocol) = text.split_once('/').unwrap_or((text, "tcp"));
    let protocol = Protocol::parse(protocol).map_err(|why| format!("--vip: {why}"))?;
    let socket: SocketAddr = socket.parse().map_err(|_| {
        format!("--vip takes ADDRESS:PORT[/tcp|udp|sctp] ([ADDRESS]:PORT for IPv6), not '{text}'")
    })?;
    Ok(VipKey {
        address: socket.ip(),
        protocol,
        port: socket.port(),
    })
}

/// `--which-dip CLIENT:PORT [--vip VIP] [--json]`.
fn show_which_dip(
    arguments: &cli::Arguments,
    endpoints: &[String],
    client: SocketAddr,
    vip: Option<VipKey>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> std::io::Result<i32> {
    let Some(reading) = read_store(endpoints, stderr)? else {
        return Ok(exit::FATAL);
    };
    let state = State::of(&reading);
    let answer = which_dip::answer(&state, client, vip);
    if let (Some(vip), true) = (vip, answer.vips.is_empty()) {
        writeln!(
            stderr,
            "pulse: the policy has no VIP {}/{}",
            SocketAddr::new(vip.address, vip.port),
            vip.protocol.name()
        )?;
        return Ok(exit::ERRORS);
    }
    if arguments.json {
        let json = serde_json::to_string_pretty(&answer).map_err(std::io::Error::other)?;
        writeln!(stdout, "{json}")?;
    } else {
        write!(stdout, "{}", which_dip::render(&answer))?;
    }
    for problem in &state.problems {
        writeln!(stderr, "pulse: the store's {problem}")?;
    }
    Ok(if answer.agree() && state.problems.is_empty() {
        exit::CLEAN
    } else {
        exit::ERRORS
    })
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
