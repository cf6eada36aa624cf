//! Developer tasks for Fulcrum: `cargo xtask <task>`.
//!
//! - `lab -- CMD...`: run CMD as root in a guest with Debian's kernel (real IPVS).
//! - `test`: every check and test, lab tests included (what CI runs).
//! - `demo`: the main job, in the lab, for a person to watch.
//! - `bench`, `bench-config`, `bench-pulse`, `bench-nanny`: benchmarks
//!   against ipvsadm and keepalived, printing both figures and the ratios,
//!   never asserting on them; `bench-sdn`: the SDN mode's scale-out
//!   figures beside their anchors.
//! - `dashboard-picture`: docs/images/dashboard.png, the dashboard's main
//!   panels on Prometheus' graph page after a scenario in the lab.
//! - `generate`: the man pages and shell completions of ipvsctl, pulse,
//!   nanny and fulcrum-agent, into each one's `doc/`.
//! - `package [--check]`: the Debian package `fulcrum`, checked with
//!   lintian, and with --check installed and removed in the lab's guest.
//! - `hosts up|down`: hosts with real systemd in a lab guest that keeps
//!   running, reached over ssh from here (Ansible's managed hosts).
//! - `ansible`: the `fulcrum.lvs` collection's lint, templates and Molecule
//!   scenarios (hosts with real systemd in the lab's guest).

mod ansible;
mod bench;
mod bench_config;
mod bench_nanny;
mod bench_pulse;
mod bench_sdn;
mod capture;
mod cargo;
mod dashboard_picture;
mod demo;
mod demo_sdn;
mod generate;
mod hosts;
mod lab;
mod package;
mod test;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Fulcrum's developer tasks")]
struct Arguments {
    #[command(subcommand)]
    task: Task,
}

/// The demo's acts.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Act {
    /// keepalived.conf on two directors: health checks, VRRP failover.
    Lvs,
    /// The cloud load balancer: three Muxes behind an ECMP router, host
    /// agents, tenants on VXLAN.
    Sdn,
}

#[derive(Subcommand)]
enum Task {
    /// Boot Debian's kernel under QEMU and run a command in it, as root, from
    /// the repository root; exits with the command's status.
    Lab {
        #[command(flatten)]
        options: LabArguments,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// The main job in the lab, for a person to watch. The LVS act: pulse
    /// runs a keepalived.conf with two real servers behind a virtual
    /// address; the answers alternate, the rotation follows a server that
    /// stops and comes back, a second director takes over. The SDN act:
    /// three Muxes and two host agents serve two tenants with the same DIP
    /// address over VXLAN, the replies bypassing the Muxes; BGP spreads the
    /// flows over the Muxes, one is killed and the connections go on. Both
    /// acts unless one is named.
    Demo {
        #[arg(value_enum)]
        act: Option<Act>,
    },
    /// In the guest: the demo itself, with the binaries to run.
    #[command(hide = true)]
    GuestDemo {
        pulse: PathBuf,
        agent: PathBuf,
        #[arg(value_enum)]
        act: Option<Act>,
    },
    /// 1,000 services x 10 destinations through the library and through
    /// `ipvsadm -R` in one lab run: both times and the ratio.
    Bench,
    /// `pulse -t` against `keepalived -t` on a generated config of 10,000
    /// virtual servers x 10 real servers, here (no IPVS needed): both
    /// times, peak memory and the ratios.
    BenchConfig,
    /// The pulse daemon against keepalived's checker process (`keepalived
    /// -C`) in one lab run, on 1,000 virtual servers x 10 real servers:
    /// from start to the full table, and from SIGHUP to one changed weight
    /// applied; both times and the ratios.
    BenchPulse,
    /// Several active Muxes behind an ECMP router, in one lab run (pulse's
    /// scale-out lab test alone): connections lost when a Mux is killed or
    /// cut off, the router's convergence, the share of flows a DIP's
    /// removal remaps, a policy write to the slowest Mux; each beside its
    /// anchor.
    BenchSdn,
    /// In the guest: the pulse benchmark itself.
    #[command(hide = true)]
    GuestBenchPulse {
        /// The pulse binary to measure.
        pulse: PathBuf,
    },
    /// nanny against keepalived's checker in one lab run: 10,000 real
    /// servers (listeners on 127.10.0.0/16) with TCP_CHECK every second;
    /// processor time per 10,000 checks in alternating windows (the other
    /// tool stopped), peak memory, time to detect a closed listener, and
    /// the ratios.
    BenchNanny {
        #[command(flatten)]
        settings: bench_nanny::Settings,
        /// Guest memory in MiB.
        #[arg(long, default_value_t = 2048)]
        memory: u32,
        /// Guest CPUs.
        #[arg(long, default_value_t = 2)]
        cpus: u32,
    },
    /// In the guest: the nanny benchmark itself.
    #[command(hide = true)]
    GuestBenchNanny {
        #[command(flatten)]
        settings: bench_nanny::Settings,
        /// The nanny to measure.
        nanny: PathBuf,
    },
    /// In the guest: the benchmark itself.
    #[command(hide = true)]
    GuestBench {
        /// The ipvsctl to measure.
        ipvsctl: PathBuf,
    },
    /// Run every check and test: format, lint, unit tests here, and the lab
    /// tests in one guest boot. What CI runs.
    Test,
    /// In the guest: run lab test binaries.
    #[command(hide = true)]
    GuestTest {
        /// Seconds after which a test binary counts as stuck.
        #[arg(long, default_value_t = test::STUCK_AFTER_SECONDS)]
        stuck_after: u64,
        binaries: Vec<PathBuf>,
    },
    /// Capture the IPVS netlink traffic of reference ipvsadm commands in the
    /// lab, into ipvs/tests/captured/ (the library's round-trip fixtures).
    Capture,
    /// In the guest: the capture itself.
    #[command(hide = true)]
    GuestCapture { output: PathBuf },
    /// Make docs/images/dashboard.png in the lab: two directors run pulse
    /// with --metrics through a scenario (a real server down and up, an
    /// ipvsadm edit repaired, a reload, a failover and back), a real
    /// Prometheus scrapes them, and headless chromium photographs its graph
    /// page with the dashboard's main expressions (pulse's lab test
    /// observability::the_dashboard_s_picture).
    DashboardPicture,
    /// Write the man pages and bash, zsh and fish completions of ipvsctl
    /// and pulse (from their option tables), nanny and fulcrum-agent (from
    /// their clap definitions) into each one's doc/ (a test fails when
    /// they are stale).
    Generate,
    /// Build the Debian package `fulcrum` into target/debian/ (cargo-deb,
    /// from release binaries; lintian must find nothing); with --check,
    /// also install, check, remove and purge it in the lab's guest.
    Package {
        #[arg(long)]
        check: bool,
    },
    #[command(hide = true)]
    GuestPackageCheck { package: PathBuf },
    /// Hosts for Ansible in a lab guest that keeps running: each booted by
    /// real systemd in namespaces of its own, all on one segment
    /// (192.168.100.0/24), reached over ssh through forwarded ports of
    /// 127.0.0.1. `up` writes an ssh key, ssh_config and inventory.yml into
    /// the state folder; `down` powers the guest off.
    Hosts {
        #[command(subcommand)]
        action: hosts::Action,
    },
    /// The Ansible collection fulcrum.lvs (ansible/): yamllint,
    /// ansible-lint, its templates checked by the real tools, then its
    /// Molecule scenarios against hosts with real systemd in the lab's
    /// guest, installing the Debian package.
    Ansible {
        /// The package to install (default: build it, as `package` does).
        #[arg(long)]
        package: Option<PathBuf>,
        /// Run only this scenario (repeatable).
        #[arg(long = "scenario")]
        scenarios: Vec<String>,
        /// Lint and check the templates only: no Molecule.
        #[arg(long)]
        lint_only: bool,
    },
}

#[derive(clap::Args)]
struct LabArguments {
    /// Seconds the command may run before the guest is stopped.
    #[arg(long, default_value_t = 3600)]
    timeout: u64,
    /// Seconds the guest may take to boot.
    #[arg(long, default_value_t = 120)]
    boot_timeout: u64,
    /// Guest memory in MiB.
    #[arg(long, default_value_t = 2048)]
    memory: u32,
    /// Guest CPUs.
    #[arg(long, default_value_t = 2)]
    cpus: u32,
    /// Keep the run folder under target/lab/runs (console log, scripts).
    #[arg(long)]
    keep: bool,
}

impl LabArguments {
    fn options(&self) -> lab::Options {
        lab::Options {
            boot_timeout: Duration::from_secs(self.boot_timeout),
            timeout: Duration::from_secs(self.timeout),
            memory_megabytes: self.memory,
            cpus: self.cpus,
            keep: self.keep,
            network: None,
        }
    }
}

/// The release binaries of these packages, as strings for a lab command.
fn release_binaries<const N: usize>(repository: &Path, names: [&str; N]) -> Result<[String; N]> {
    let paths = crate::cargo::binaries(repository, &names, true)?;
    Ok(std::array::from_fn(|index| {
        paths[index].to_string_lossy().into_owned()
    }))
}

fn main() -> ExitCode {
    let arguments = Arguments::parse();
    match run(arguments.task) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("xtask: error: {error:#}");
            ExitCode::from(2)
        }
    }
}

fn run(task: Task) -> Result<ExitCode> {
    let repository = repository_root()?;
    match task {
        Task::Lab { options, command } => {
            let lab = lab::Lab::prepare(&repository, options.options())?;
            let status = lab.run(&command)?;
            Ok(exit_code(status))
        }
        Task::Demo { act } => {
            let lab = lab::Lab::prepare(&repository, lab::Options::default())?;
            let [pulse, agent] = <[PathBuf; 2]>::try_from(crate::cargo::binaries(
                &repository,
                &["pulse", "fulcrum-agent"],
                false,
            )?)
            .expect("two names, two paths");
            let pulse = pulse.to_str().context("a pulse path that is not UTF-8")?;
            let agent = agent.to_str().context("an agent path that is not UTF-8")?;
            let mut command = vec!["guest-demo", pulse, agent];
            let act = act.map(|act| act.to_possible_value().expect("no skipped act"));
            if let Some(act) = &act {
                command.push(act.get_name());
            }
            Ok(exit_code(lab.run(&guest_command(&command)?)?))
        }
        Task::GuestDemo { pulse, agent, act } => {
            if act != Some(Act::Sdn) {
                demo::run_in_guest(&pulse)?;
            }
            if act != Some(Act::Lvs) {
                demo_sdn::run_in_guest(&pulse, &agent)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Task::Bench => {
            let lab = lab::Lab::prepare(&repository, lab::Options::default())?;
            // Measured in release: the library's speed, not the debug build's.
            let [xtask, ipvsctl] = release_binaries(&repository, ["xtask", "ipvsctl"])?;
            Ok(exit_code(lab.run(&[
                xtask,
                "guest-bench".to_owned(),
                ipvsctl,
            ])?))
        }
        Task::GuestBench { ipvsctl } => {
            bench::run_in_guest(&ipvsctl)?;
            Ok(ExitCode::SUCCESS)
        }
        Task::BenchPulse => {
            let lab = lab::Lab::prepare(&repository, lab::Options::default())?;
            // Measured in release, as keepalived is.
            let [xtask, pulse] = release_binaries(&repository, ["xtask", "pulse"])?;
            Ok(exit_code(lab.run(&[
                xtask,
                "guest-bench-pulse".to_owned(),
                pulse,
            ])?))
        }
        Task::GuestBenchPulse { pulse } => {
            bench_pulse::run_in_guest(&pulse)?;
            Ok(ExitCode::SUCCESS)
        }
        Task::BenchNanny {
            settings,
            memory,
            cpus,
        } => {
            let options = lab::Options {
                memory_megabytes: memory,
                cpus,
                ..lab::Options::default()
            };
            Ok(exit_code(bench_nanny::run(
                &repository,
                options,
                &settings,
            )?))
        }
        Task::GuestBenchNanny { settings, nanny } => {
            bench_nanny::run_in_guest(&nanny, &settings)?;
            Ok(ExitCode::SUCCESS)
        }
        Task::BenchSdn => bench_sdn::run(&repository),
        Task::BenchConfig => {
            bench_config::run(&repository)?;
            Ok(ExitCode::SUCCESS)
        }
        Task::Test => test::run(&repository),
        Task::Hosts { action } => {
            hosts::run(&repository, &action)?;
            Ok(ExitCode::SUCCESS)
        }
        Task::Ansible {
            package,
            scenarios,
            lint_only,
        } => {
            ansible::run(
                &repository,
                &ansible::Options {
                    package,
                    scenarios,
                    lint_only,
                },
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Task::GuestTest {
            stuck_after,
            binaries,
        } => test::run_in_guest(&binaries, Duration::from_secs(stuck_after)),
        Task::Capture => {
            let lab = lab::Lab::prepare(&repository, lab::Options::default())?;
            let output = repository.join("ipvs/tests/captured");
            let status = lab.run(&guest_command(&[
                "guest-capture",
                &output.to_string_lossy(),
            ])?)?;
            Ok(exit_code(status))
        }
        Task::DashboardPicture => dashboard_picture::run(&repository),
        Task::GuestCapture { output } => {
            capture::run_in_guest(&output)?;
            Ok(ExitCode::SUCCESS)
        }
        Task::Package { check } => {
            let package = package::build(&repository)?;
            if !check {
                return Ok(ExitCode::SUCCESS);
            }
            let lab = lab::Lab::prepare(&repository, lab::Options::default())?;
            Ok(exit_code(package::check_in_lab(&lab, &package)?))
        }
        Task::GuestPackageCheck { package } => {
            package::check_in_guest(&package)?;
            Ok(ExitCode::SUCCESS)
        }
        Task::Generate => {
            let directory = repository
                .join("ipvsctl")
                .join(ipvsctl::generate::DIRECTORY);
            let changed = ipvsctl::generate::write_all(&directory)
                .with_context(|| format!("cannot write into {}", directory.display()))?;
            if changed.is_empty() {
                eprintln!("xtask: {} is up to date", directory.display());
            }
            for name in changed {
                eprintln!("xtask: wrote {}", directory.join(name).display());
            }
            let changed = generate::write_all(&repository)?;
            if changed.is_empty() {
                eprintln!(
                    "xtask: pulse's, nanny's and fulcrum-agent's man pages and completions are up to date"
                );
            }
            for path in changed {
                eprintln!("xtask: wrote {}", path.display());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// This very binary, with `arguments`, as a command for the guest: xtask's
/// guest-side tasks are hidden subcommands of itself.
fn guest_command(arguments: &[&str]) -> Result<Vec<String>> {
    let executable = std::env::current_exe()?;
    let mut command = vec![executable.to_string_lossy().into_owned()];
    command.extend(arguments.iter().map(|argument| argument.to_string()));
    Ok(command)
}

fn exit_code(status: i32) -> ExitCode {
    ExitCode::from(u8::try_from(status).unwrap_or(1))
}

/// The workspace root: xtask lives one level below it. Canonical, so that
/// a checkout reached through a symbolic link has the same path in the guest
/// (which mounts it at its path here) as every path derived from it.
fn repository_root() -> Result<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is inside the workspace");
    fs::canonicalize(root).with_context(|| format!("cannot resolve {}", root.display()))
}
