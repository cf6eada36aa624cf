//! `cargo xtask dashboard-picture`: docs/images/dashboard.png, the picture
//! of the dashboard's main panels in docs/observability.md, made in the lab
//! by pulse's lab test `observability::on_request_the_dashboard_s_picture` (two
//! directors running pulse with `--metrics`, a real Prometheus scraping
//! them through a scenario, headless chromium photographing Prometheus'
//! graph page).
//!
//! `cargo xtask test` passes over that test (an `on_request_` one): it is
//! minutes of scenario that rewrites a file of the repository.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Result, bail};

use crate::lab::{Lab, Options, prerequisites};

/// The test that makes the picture, as libtest names it.
const TEST: &str = "observability::on_request_the_dashboard_s_picture";

pub fn run(repository: &Path) -> Result<ExitCode> {
    // The guest runs what this machine has installed (its root, read-only),
    // so the browser is installed here, before the boot.
    if !labkit::installed("chromium") {
        eprintln!("xtask: installing chromium");
        prerequisites::apt_get(&["update", "-q"])?;
        prerequisites::apt_get(&["install", "-y", "-q", "chromium"])?;
    }
    // The scenario takes about three minutes under emulation, the browser
    // one more: a quarter of an hour is "stuck".
    let options = Options {
        timeout: Duration::from_secs(900),
        ..Options::default()
    };
    let lab = Lab::prepare(repository, options)?;
    let binaries = crate::cargo::executables(
        repository,
        &["test", "-p", "pulse", "--test", "lab", "--no-run"],
        |target| target["name"] == "lab" && target["kind"] == serde_json::json!(["test"]),
    )?;
    let [binary] = &binaries[..] else {
        bail!("expected pulse's one lab test binary, cargo reported {binaries:?}");
    };
    let command = [
        binary.to_string_lossy().into_owned(),
        "--ignored".to_owned(),
        "--exact".to_owned(),
        TEST.to_owned(),
        "--nocapture".to_owned(),
    ];
    let status = lab.run(&command)?;
    if status == 0 {
        eprintln!(
            "xtask: wrote {}",
            repository.join("docs/images/dashboard.png").display()
        );
    }
    Ok(crate::exit_code(status))
}
