//! Building with cargo and finding what it built: the binaries the lab,
//! the benchmarks, the demo and the package run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// The cargo running xtask (`CARGO`), else the one on the path.
pub fn program() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// Runs `cargo ARGUMENTS` in the repository as the step `name` of a run
/// (`cargo xtask test`, `cargo xtask ansible`): said before it starts, an
/// error naming it if it fails.
pub fn step(repository: &Path, name: &str, arguments: &[&str]) -> Result<()> {
    eprintln!("xtask: {name}: cargo {}", arguments.join(" "));
    let status = Command::new(program())
        .args(arguments)
        .current_dir(repository)
        .status()
        .with_context(|| format!("cannot run cargo {}", arguments.join(" ")))?;
    if !status.success() {
        bail!("{name} failed: cargo {} ({status})", arguments.join(" "));
    }
    Ok(())
}

/// Runs a cargo command that builds (`build`, `test --no-run`...) with
/// `--message-format=json` and returns the executables it reports for the
/// targets `wanted` picks (`wanted` sees an artifact's `target` object:
/// `name`, `kind`...). Cargo's own target folder holds them, wherever
/// CARGO_TARGET_DIR or the configuration puts it.
pub fn executables(
    repository: &Path,
    arguments: &[&str],
    wanted: impl Fn(&serde_json::Value) -> bool,
) -> Result<Vec<PathBuf>> {
    let command = format!("cargo {} --message-format=json", arguments.join(" "));
    eprintln!("xtask: {command}");
    let output = Command::new(program())
        .args(arguments)
        .arg("--message-format=json")
        .current_dir(repository)
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot run {command}"))?;
    if !output.status.success() {
        bail!("{command} failed ({})", output.status);
    }
    let mut executables = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if message["reason"] != "compiler-artifact" || !wanted(&message["target"]) {
            continue;
        }
        if let Some(executable) = message["executable"].as_str() {
            executables.push(PathBuf::from(executable));
        }
    }
    Ok(executables)
}

/// Builds the binaries of these packages (each package's binary has its
/// name) and returns their paths in the same order; `release` for
/// benchmarks, which measure the optimised build.
pub fn binaries(repository: &Path, names: &[&str], release: bool) -> Result<Vec<PathBuf>> {
    let mut arguments = vec!["build"];
    if release {
        arguments.push("--release");
    }
    for name in names {
        arguments.extend(["--package", name]);
    }
    let executables = executables(repository, &arguments, |target| {
        target["kind"] == serde_json::json!(["bin"])
            && names.iter().any(|name| target["name"] == *name)
    })?;
    names
        .iter()
        .map(|name| {
            executables
                .iter()
                .find(|path| path.file_name().is_some_and(|file| file == *name))
                .cloned()
                .with_context(|| format!("cargo build reported no {name} in {executables:?}"))
        })
        .collect()
}
