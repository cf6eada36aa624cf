//! `cargo xtask package`: the Debian package `fulcrum`, as pulse's
//! Cargo.toml describes it (`[package.metadata.deb]`), built with
//! cargo-deb from release binaries and checked with lintian (both installed
//! when missing). `--check` then installs it in the lab's guest with
//! apt-get, checks what it put where, and removes and purges it: the guest
//! runs on a throw-away overlay of this machine's root, so this machine is
//! never changed.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::lab::prerequisites;

/// The binaries the package holds.
const BINARIES: [&str; 4] = ["pulse", "ipvsctl", "nanny", "fulcrum-agent"];

/// Builds the package into target/debian/ and checks it with lintian: its
/// path.
pub fn build(repository: &Path) -> Result<PathBuf> {
    ensure_tools()?;
    crate::cargo::binaries(repository, &BINARIES, true)?;
    let output = Command::new(crate::cargo::program())
        .current_dir(repository)
        .args(["deb", "-p", "pulse", "--no-build", "--strip", "--output"])
        .arg(repository.join("target/debian"))
        .output()
        .context("cannot run cargo deb")?;
    if !output.status.success() {
        bail!(
            "cargo deb failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // cargo deb prints the package's path last.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let package = PathBuf::from(
        stdout
            .lines()
            .last()
            .context("cargo deb named no package")?
            .trim(),
    );
    let lintian = Command::new("lintian")
        .args(["--fail-on", "error,warning", "--allow-root"])
        .arg(&package)
        .status()
        .context("cannot run lintian")?;
    if !lintian.success() {
        bail!("lintian finds problems in {}", package.display());
    }
    eprintln!("xtask: {} built, lintian clean", package.display());
    Ok(package)
}

/// cargo-deb and lintian, installed when missing.
fn ensure_tools() -> Result<()> {
    let has_cargo_deb = Command::new(crate::cargo::program())
        .args(["deb", "--version"])
        .output()
        .is_ok_and(|output| output.status.success());
    if !has_cargo_deb {
        eprintln!("xtask: installing cargo-deb");
        let status = Command::new(crate::cargo::program())
            .args(["install", "cargo-deb", "--locked"])
            .status()
            .context("cannot run cargo install")?;
        if !status.success() {
            bail!("cargo install cargo-deb failed ({status})");
        }
    }
    if !labkit::installed("lintian") {
        eprintln!("xtask: installing lintian");
        prerequisites::apt_get(&["update", "-q"])?;
        prerequisites::apt_get(&["install", "-y", "-q", "--no-install-recommends", "lintian"])?;
    }
    Ok(())
}

/// Boots `lab` to check `package` there ([`check_in_guest`]): the guest's
/// exit status.
pub fn check_in_lab(lab: &crate::lab::Lab, package: &Path) -> Result<i32> {
    lab.run(&crate::guest_command(&[
        "guest-package-check",
        &package.to_string_lossy(),
    ])?)
}

/// In the guest: installs `package`, checks it, removes it, purges it.
pub fn check_in_guest(package: &Path) -> Result<()> {
    let installed = [
        "/usr/sbin/pulse",
        "/usr/sbin/ipvsctl",
        "/usr/sbin/nanny",
        "/usr/sbin/fulcrum-agent",
        "/usr/share/man/man8/pulse.8.gz",
        "/usr/share/man/man8/ipvsctl.8.gz",
        "/usr/share/man/man8/nanny.8.gz",
        "/usr/share/man/man8/fulcrum-agent.8.gz",
        "/usr/share/bash-completion/completions/pulse",
        "/usr/share/zsh/vendor-completions/_pulse",
        "/usr/share/fish/vendor_completions.d/pulse.fish",
        "/usr/lib/systemd/system/pulse.service",
        "/usr/lib/systemd/system/fulcrum-agent.service",
        "/usr/share/doc/fulcrum/examples/keepalived.conf",
    ];
    let configuration = ["/etc/default/pulse", "/etc/default/fulcrum-agent"];
    // Neither unit is enabled at install: pulse.service conflicts with
    // keepalived.service.
    let enabled = [
        "/etc/systemd/system/multi-user.target.wants/pulse.service",
        "/etc/systemd/system/multi-user.target.wants/fulcrum-agent.service",
    ];

    let path = package
        .to_str()
        .context("the package's path is not UTF-8")?;
    prerequisites::apt_get(&["install", "-y", "-q", path])?;
    for path in installed.iter().chain(&configuration) {
        if !Path::new(path).exists() {
            bail!("installed, the package has no {path}");
        }
    }
    for path in enabled {
        if Path::new(path).exists() {
            bail!("installed, the package enabled {path}");
        }
    }
    for (program, arguments) in [
        ("/usr/sbin/pulse", &["--version"][..]),
        (
            "/usr/sbin/pulse",
            &[
                "-t",
                "-f",
                "/usr/share/doc/fulcrum/examples/keepalived.conf",
            ][..],
        ),
        ("/usr/sbin/ipvsctl", &["--version"][..]),
        ("/usr/sbin/nanny", &["--version"][..]),
        ("/usr/sbin/fulcrum-agent", &["--version"][..]),
    ] {
        let status = Command::new(program)
            .args(arguments)
            .status()
            .with_context(|| format!("cannot run {program}"))?;
        if !status.success() {
            bail!(
                "installed, {program} {} failed ({status})",
                arguments.join(" ")
            );
        }
    }
    eprintln!("xtask: installed: every file in place, no unit enabled, each binary runs");

    prerequisites::apt_get(&["remove", "-y", "-q", "fulcrum"])?;
    for path in installed {
        if Path::new(path).exists() {
            bail!("removed, the package left {path}");
        }
    }
    for path in configuration {
        if !Path::new(path).exists() {
            bail!("removed (not purged), the package took its configuration {path}");
        }
    }
    prerequisites::apt_get(&["purge", "-y", "-q", "fulcrum"])?;
    for path in configuration {
        if Path::new(path).exists() {
            bail!("purged, the package left {path}");
        }
    }
    let status = Command::new("dpkg-query")
        .args(["--show", "--showformat=${db:Status-Status}", "fulcrum"])
        .output()
        .context("cannot run dpkg-query")?;
    let state = String::from_utf8_lossy(&status.stdout);
    if status.status.success() && state.trim() != "not-installed" {
        bail!("purged, dpkg still has fulcrum as {state:?}");
    }
    eprintln!("xtask: removed, then purged: nothing of it left");
    Ok(())
}
