//! The SDN mode's commands on the cluster store (docs/sdn.md):
//! `pulse --cluster URLS --apply FILE` and `pulse --cluster URLS --status
//! [--json]`.

use std::io::Write;
use std::time::Duration;

use fulcrum_cluster::store::{self, Store};
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
    if arguments.json && !arguments.status {
        return usage(stderr, "--json goes with --status");
    }
    if arguments.apply.is_some() && arguments.status {
        return usage(stderr, "--apply and --status are two commands: give one");
    }
    let Some(cluster) = &arguments.cluster else {
        return usage(
            stderr,
            "--apply and --status need the cluster store: --cluster=URL[,URL...]",
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
    let reading = runtime()?.block_on(async {
        let mut store = Store::connect(endpoints, STORE_TIMEOUT).await?;
        store.read().await
    });
    let reading = match reading {
        Ok(reading) => reading,
        Err(error) => {
            writeln!(stderr, "pulse: {error}")?;
            return Ok(exit::FATAL);
        }
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

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
