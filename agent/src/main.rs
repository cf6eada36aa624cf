//! `fulcrum-agent -f FILE --cluster URLS` and `fulcrum-agent -t -f FILE`.
//!
//! Exit statuses, as pulse's: 0 clean, 1 bad command line, 3 cannot run
//! (the store is not what stops it: it waits for one), 4 errors in FILE, 5
//! warnings only with `-t`.

use std::process::ExitCode;

use clap::Parser;
use fulcrum_agent::cli::Arguments;
use fulcrum_agent::desired::Segment;
use fulcrum_agent::{Settings, serve};
use fulcrum_config::diagnostic::{Diagnostic, Severity};
use fulcrum_config::lexer::Options;

fn main() -> ExitCode {
    let arguments = match Arguments::try_parse() {
        Ok(arguments) => arguments,
        Err(error) if !error.use_stderr() => {
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(1);
        }
    };
    let mut loaded = fulcrum_config::load(&arguments.file, &Options::default());
    let settings = settings(&mut loaded);
    let errors = loaded.diagnostics.count(Severity::Error);
    let warnings = loaded.diagnostics.count(Severity::Warning);
    if arguments.config_test || errors > 0 {
        eprint!("{}", loaded.diagnostics.render(&loaded.sources));
        eprintln!("{errors} error(s), {warnings} warning(s)");
        return ExitCode::from(if errors > 0 {
            4
        } else if warnings > 0 {
            5
        } else {
            0
        });
    }
    let settings = settings.expect("no error: settings made");
    init_logging();
    let endpoints = fulcrum_cluster::store::endpoints(arguments.cluster.as_deref().unwrap_or(""));
    // Bound before the runtime starts, so that a taken port fails the start
    // with a status.
    let metrics = match fulcrum_metrics::bind_if_asked(arguments.metrics) {
        Ok(listener) => listener,
        Err(why) => {
            tracing::error!("agent: {why}");
            return ExitCode::from(3);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("fulcrum-agent: cannot start: {error}");
            return ExitCode::from(3);
        }
    };
    match runtime.block_on(serve(settings, endpoints, metrics)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("agent: {error:#}");
            ExitCode::from(3)
        }
    }
}

/// The agent's settings from its file; what they lack is an error added
/// to the file's diagnostics.
fn settings(loaded: &mut fulcrum_config::Loaded) -> Option<Settings> {
    let whole_file = fulcrum_config::syntax::Span {
        file: fulcrum_config::syntax::FileId(0),
        line: 0,
        start: 0,
        end: 0,
    };
    let config = &loaded.config;
    let vtep = config.host_agent.map(|agent| agent.vtep);
    let mut problems = Vec::new();
    if vtep.is_none() {
        problems.push("an agent's file needs 'host_agent { vtep ADDRESS }'".to_owned());
    }
    let mut segments = Vec::new();
    for (position, network) in config.virtual_networks.iter().enumerate() {
        match &network.interface {
            Some(interface) => segments.push(Segment {
                network: network.name.clone(),
                vni: network.vni,
                interface: interface.clone(),
                // The file's order: a network's zone stays while the file
                // keeps it where it is, whatever the policy serves.
                zone: u16::try_from(position + 1).unwrap_or(u16::MAX),
            }),
            None => problems.push(format!(
                "virtual_network '{}' needs 'interface IF': the segment its DIPs attach to",
                network.name
            )),
        }
    }
    if !config.virtual_servers.is_empty() {
        problems.push(
            "an agent's file has no virtual_server: the policy comes from the cluster store"
                .to_owned(),
        );
    }
    for problem in &problems {
        loaded
            .diagnostics
            .push(Diagnostic::error(whole_file, problem.clone()));
    }
    if !problems.is_empty() {
        return None;
    }
    Some(Settings {
        vtep: vtep?,
        segments,
    })
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .init();
}
