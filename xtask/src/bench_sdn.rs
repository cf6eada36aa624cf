//! `cargo xtask bench-sdn`: the scale-out figures of the SDN mode in one
//! lab run. They are what pulse's lab test
//! `ecmp::muxes_behind_ecmp_keep_connections_when_one_dies_is_cut_added_or_stopped`
//! measures as it goes (three Muxes behind an ECMP router, then a fourth,
//! 50 long-lived connections and new ones all along): connections lost
//! when a Mux is killed and when one is cut off, the router's convergence
//! each time, the share of other flows a DIP's removal remaps, and the
//! time from a policy write to the slowest Mux forwarding by it. The test
//! prints each beside its anchor; this runs it alone, in one boot, and
//! never asserts on a figure (the test asserts only what must hold: no
//! connection lost beyond one, every new connection answered).
//!
//! The debug build is measured, as `cargo xtask test` runs it: these
//! figures are the kernel's, BIRD's and etcd's under emulation more than
//! pulse's own code.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::exit_code;
use crate::lab::{Lab, Options};

/// The lab test that measures them.
const TEST: &str = "ecmp::muxes_behind_ecmp_keep_connections_when_one_dies_is_cut_added_or_stopped";

pub fn run(repository: &Path) -> Result<ExitCode> {
    let lab = Lab::prepare(repository, Options::default())?;
    // The whole workspace: the test starts fulcrum-agent, built beside pulse.
    let binaries =
        crate::cargo::executables(repository, &["test", "--workspace", "--no-run"], |target| {
            target["name"] == "lab"
                && target["src_path"]
                    .as_str()
                    .is_some_and(|path| path.ends_with("pulse/tests/lab.rs"))
        })?;
    let [binary] = binaries.as_slice() else {
        bail!("expected pulse's lab test binary, found {binaries:?}");
    };
    let binary = binary.to_string_lossy().into_owned();
    Ok(exit_code(lab.run(&[
        binary,
        "--ignored".to_owned(),
        "--exact".to_owned(),
        TEST.to_owned(),
        "--nocapture".to_owned(),
    ])?))
}
