//! fulcrum-agent's command line: one definition for its parser, its help,
//! and the man page and shell completions `cargo xtask generate` writes
//! from it (agent/doc/).

use std::path::PathBuf;

use clap::Parser;

/// The SDN mode's host agent (docs/sdn.md).
#[derive(Debug, Parser)]
#[command(name = "fulcrum-agent", version)]
pub struct Arguments {
    /// The agent's file: `host_agent { vtep ADDRESS }` and
    /// `virtual_network NAME { vni N interface IF }` blocks.
    #[arg(short = 'f', long = "use-file", value_name = "FILE")]
    pub file: PathBuf,
    /// The cluster store's members (etcd client URLs).
    #[arg(
        long,
        value_name = "URL[,URL...]",
        required_unless_present = "config_test"
    )]
    pub cluster: Option<String>,
    /// Serve Prometheus metrics at http://ADDRESS:PORT/metrics (its DIPs
    /// and their health, its translations, its sync lag; bound before it
    /// starts: a taken port exits 3).
    #[arg(long, value_name = "ADDRESS:PORT")]
    pub metrics: Option<std::net::SocketAddr>,
    /// Check FILE and exit, as `pulse -t` does.
    #[arg(short = 't', long = "config-test")]
    pub config_test: bool,
}

/// The man page's sections after the options.
pub const MAN_SECTIONS: &[(&str, &str)] = &[("EXIT STATUS", EXIT_STATUS)];

/// The man page's EXIT STATUS section (pulse's numbers).
const EXIT_STATUS: &str = "0: a clean stop, or FILE checked clean with -t. 1: a bad \
command line. 3: cannot run (not what the cluster store does: the agent waits for one). \
4: errors in FILE. 5: warnings only, with -t.";
