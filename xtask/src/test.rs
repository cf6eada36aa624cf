//! `cargo xtask test`: every check and every test, lab tests included.
//!
//! Lab tests are the integration tests of targets named `lab` (a crate's
//! `tests/lab.rs` or `tests/lab/main.rs`). Each is marked `#[ignore]` with
//! the reason "runs in the lab", so a plain `cargo test` on this machine
//! lists them as ignored instead of failing for want of IPVS; here they run
//! in one guest boot, with `--ignored`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::lab::{Lab, Options};
use crate::{exit_code, guest_command};

/// The name every lab test target has.
const LAB_TARGET: &str = "lab";

pub fn run(repository: &Path) -> Result<ExitCode> {
    // Prepared first so a fresh machine installs the lab's packages before
    // anything else needs them.
    let lab = Lab::prepare(repository, Options::default())?;
    cargo_step(repository, "format", &["fmt", "--all", "--check"])?;
    cargo_step(
        repository,
        "lint",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    cargo_step(
        repository,
        "tests on this machine",
        &["test", "--workspace"],
    )?;

    let binaries = lab_test_binaries(repository)?;
    if binaries.is_empty() {
        bail!("found no lab test targets (named `{LAB_TARGET}`)");
    }
    eprintln!("xtask: lab tests: {} binaries, one guest", binaries.len());
    let started = Instant::now();
    let mut arguments = vec!["guest-test".to_owned()];
    arguments.extend(
        binaries
            .iter()
            .map(|path| path.to_string_lossy().into_owned()),
    );
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let status = lab.run(&guest_command(&arguments)?)?;
    eprintln!(
        "xtask: lab tests took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if status != 0 {
        eprintln!("xtask: lab tests failed");
        return Ok(exit_code(status));
    }
    eprintln!("xtask: all checks and tests passed");
    Ok(ExitCode::SUCCESS)
}

pub fn cargo_step(repository: &Path, name: &str, arguments: &[&str]) -> Result<()> {
    eprintln!("xtask: {name}: cargo {}", arguments.join(" "));
    let status = Command::new(cargo())
        .args(arguments)
        .current_dir(repository)
        .status()
        .with_context(|| format!("cannot run cargo {}", arguments.join(" ")))?;
    if !status.success() {
        bail!("{name} failed: cargo {} ({status})", arguments.join(" "));
    }
    Ok(())
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// Builds the test targets and returns the executables of the lab ones.
fn lab_test_binaries(repository: &Path) -> Result<Vec<PathBuf>> {
    let output = Command::new(cargo())
        .args(["test", "--workspace", "--no-run", "--message-format=json"])
        .current_dir(repository)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("cannot run cargo test --no-run")?;
    if !output.status.success() {
        bail!("building the tests failed");
    }
    let mut binaries = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if message["reason"] != "compiler-artifact" || message["target"]["name"] != LAB_TARGET {
            continue;
        }
        if let Some(executable) = message["executable"].as_str() {
            binaries.push(PathBuf::from(executable));
        }
    }
    Ok(binaries)
}

/// In the guest: runs each lab test binary's ignored tests (all of them are
/// lab tests) and fails if any fails.
pub fn run_in_guest(binaries: &[PathBuf]) -> Result<ExitCode> {
    let mut failed = Vec::new();
    for binary in binaries {
        eprintln!("xtask: running {}", binary.display());
        let status = Command::new(binary)
            .arg("--ignored")
            .status()
            .with_context(|| format!("cannot run {}", binary.display()))?;
        if !status.success() {
            failed.push(binary.display().to_string());
        }
    }
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("xtask: failed: {}", failed.join(", "));
        Ok(ExitCode::FAILURE)
    }
}
