//! `cargo xtask test`: every check and every test, lab tests included.
//!
//! Lab tests are the integration tests of targets named `lab` (a crate's
//! `tests/lab.rs` or `tests/lab/main.rs`). Each is marked `#[ignore]` with
//! the reason "runs in the lab", so a plain `cargo test` on this machine
//! lists them as ignored instead of failing for want of IPVS; here they run
//! in one guest boot, with `--ignored`. Those named `first_*` run before
//! any other, one at a time, in the guest as it booted: the `first_` tests
//! of every binary, then the others of each binary. Those named
//! `on_request_*` do not run here: they make something on request (the
//! dashboard's picture, `cargo xtask dashboard-picture`).

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::lab::{Lab, Options};
use crate::{exit_code, guest_command};

/// The name every lab test target has.
const LAB_TARGET: &str = "lab";

pub fn run(repository: &Path) -> Result<ExitCode> {
    // Prepared first so a fresh machine installs the lab's packages before
    // anything else needs them.
    // The suite took about six minutes on the first machines, and 12.6 on
    // a slower one (2026-12-01, 10 of them ipvsctl's differential corpus:
    // two processes per command under emulation): a run well over twice
    // as long is stuck (the guest's own watchdog reports a stuck test
    // binary before this).
    let options = Options {
        timeout: Duration::from_secs(1800),
        ..Options::default()
    };
    let lab = Lab::prepare(repository, options)?;
    crate::cargo::step(repository, "format", &["fmt", "--all", "--check"])?;
    crate::cargo::step(
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
    crate::cargo::step(
        repository,
        "tests on this machine",
        &["test", "--workspace"],
    )?;

    lab_self_check(&lab)?;
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

    // The Debian package: built from release binaries, lintian clean,
    // installed, removed and purged in the guest (`cargo xtask package
    // --check`).
    let started = Instant::now();
    let package = crate::package::build(repository)?;
    let status = crate::package::check_in_lab(&lab, &package)?;
    eprintln!(
        "xtask: the package took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if status != 0 {
        eprintln!("xtask: the package's check failed");
        return Ok(exit_code(status));
    }

    // The Ansible collection: lint and its templates checked by the real
    // tools. Its Molecule scenarios (hosts with real systemd in a guest of
    // their own, about half an hour under emulation) would take CI past
    // its time: `cargo xtask ansible` runs them.
    let started = Instant::now();
    crate::ansible::run(
        repository,
        &crate::ansible::Options {
            package: Some(package),
            scenarios: Vec::new(),
            lint_only: true,
        },
    )?;
    eprintln!(
        "xtask: the Ansible collection's lint and templates took {:.1} s; \
         its Molecule scenarios run with `cargo xtask ansible`",
        started.elapsed().as_secs_f64()
    );
    eprintln!("xtask: all checks and tests passed");
    Ok(ExitCode::SUCCESS)
}

/// The lab itself, in one short boot: the guest runs a program from this
/// machine's filesystem that needs the kernel's IPVS (loaded on demand),
/// and its exit status comes back.
fn lab_self_check(lab: &Lab) -> Result<()> {
    eprintln!("xtask: lab self-check: ipvsadm -Ln in the guest, then exit 3");
    let command = ["sh", "-c", "ipvsadm -Ln > /dev/null && exit 3"].map(str::to_owned);
    match lab.run(&command)? {
        3 => Ok(()),
        status => bail!("the lab self-check exited {status}, expected 3"),
    }
}

/// Builds the test targets and returns the executables of the lab ones.
fn lab_test_binaries(repository: &Path) -> Result<Vec<PathBuf>> {
    crate::cargo::executables(repository, &["test", "--workspace", "--no-run"], |target| {
        target["name"] == LAB_TARGET && target["kind"] == serde_json::json!(["test"])
    })
}

/// Lab tests whose names start with this run alone, one at a time, before
/// any other lab test of any binary: for tests that need the guest as it
/// booted (ip_vs not loaded yet, say).
const FIRST: &str = "first_";

/// Lab tests whose names start with this run only when asked for by name
/// (their own `cargo xtask` command), never in `cargo xtask test`.
const ON_REQUEST: &str = "on_request_";

/// How long one run of a lab test binary may take before the watchdog
/// reports it stuck, by default. The longest, ipvsctl's differential
/// corpus, takes about five minutes on an idle machine, ten on a loaded one.
pub const STUCK_AFTER_SECONDS: u64 = 1200;

/// How long the output of a test binary may stay open after it exits (a
/// process it started and left behind holds it) before we stop waiting.
const OUTPUT_GRACE: Duration = Duration::from_secs(5);

/// In the guest: runs the lab test binaries' ignored tests (all of them are
/// lab tests): first the `first_` tests of every binary, one at a time,
/// then each binary's others; fails if any fails.
pub fn run_in_guest(binaries: &[PathBuf], stuck_after: Duration) -> Result<ExitCode> {
    let mut runs = Vec::new();
    let mut rest = Vec::new();
    for binary in binaries {
        let (on_request, lab_tests) = list_lab_tests(binary)?
            .into_iter()
            .partition::<BTreeSet<String>, _>(|name| is_on_request(name));
        let (first, others) = lab_tests
            .into_iter()
            .partition::<BTreeSet<String>, _>(|name| is_first(name));
        // Filters are substrings unless --exact, and no filter at all runs
        // everything: name each test, and skip a binary without any.
        if !first.is_empty() {
            let mut arguments = vec!["--ignored", "--test-threads=1", "--exact"];
            arguments.extend(first.iter().map(String::as_str));
            runs.push((binary, to_owned(&arguments), first.clone()));
        }
        let mut arguments = vec!["--ignored", "--exact"];
        for name in first.iter().chain(&on_request) {
            arguments.extend(["--skip", name.as_str()]);
        }
        rest.push((binary, to_owned(&arguments), others));
    }
    let first_runs = runs.len();
    runs.extend(rest);

    let mut failed = Vec::new();
    for (index, (binary, arguments, tests)) in runs.into_iter().enumerate() {
        if index == first_runs {
            load_ipvs_modules()?;
        }
        if index > 0 {
            // The `first_` tests need the guest as it booted: no IPVS
            // command among them, which would load ip_vs.
            settle_namespaces(index >= first_runs)?;
        }
        let description = format!("{} {}", binary.display(), arguments.join(" "));
        eprintln!("xtask: running {description}");
        if !run_watched(binary, &arguments, tests, stuck_after)? {
            failed.push(description);
        }
    }
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("xtask: failed: {}", failed.join(", "));
        Ok(ExitCode::FAILURE)
    }
}

/// Loads IPVS's schedulers and persistence engines, after the `first_`
/// tests (they need IPVS as the guest booted). The kernel loads a scheduler
/// on a service's first use holding IPVS's lock, and the module's init
/// registers per-namespace state, which waits for namespaces being
/// dismantled; dismantling one waits for IPVS's lock: a deadlock that only
/// ends when the waiting command is killed (every IPVS command of ipvsctl's
/// first cases waited 125 s in CI, 300 s here, 2026-11-30; the kernel's
/// stacks showed ip_vs_scheduler_get -> request_module, modprobe in
/// register_pernet_subsys, cleanup_net in ip_vs_dst_event).
fn load_ipvs_modules() -> Result<()> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .context("cannot read the kernel's release")?;
    let directory = Path::new("/lib/modules")
        .join(release.trim())
        .join("kernel/net/netfilter/ipvs");
    let mut modules: Vec<String> = std::fs::read_dir(&directory)
        .with_context(|| format!("cannot list {}", directory.display()))?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|file| file.split('.').next().map(str::to_owned))
        // Schedulers and persistence engines; not the FTP helper, which
        // changes what port 21 services do.
        .filter(|module| module.starts_with("ip_vs_") && module != "ip_vs_ftp")
        .collect();
    modules.sort();
    let status = Command::new("modprobe")
        .arg("-a")
        .args(&modules)
        .status()
        .context("cannot run modprobe")?;
    if !status.success() {
        bail!("modprobe -a {} failed ({status})", modules.join(" "));
    }
    eprintln!("xtask: loaded {}", modules.join(" "));
    Ok(())
}

/// How long the kernel may take to dismantle a test binary's namespaces
/// before the guest logs its blocked tasks (it still waits).
const SLOW_SETTLING: Duration = Duration::from_secs(30);

/// Waits until the kernel has dismantled the namespaces of the test binary
/// that just ran. The kernel does that after the processes are gone, on one
/// ordered work queue, and dismantling IPVS (services, connections, sync
/// daemons) holds IPVS's lock: every IPVS command of the next binary's first
/// tests waited for it, once over two minutes (CI, 2026-11-30), and timed
/// out. A marker namespace is deleted last, so the queue reaches it after
/// the others; once its veth's peer is gone from this namespace, one IPVS
/// command in a fresh namespace (`probe_ipvs`) waits for whatever IPVS work
/// remains.
fn settle_namespaces(probe_ipvs: bool) -> Result<()> {
    const MARKER: &str = "xtask-settle";
    const PEER: &str = "xtask-settle0";
    let started = Instant::now();
    let run = |program: &str, arguments: &[&str]| -> Result<()> {
        let status = Command::new(program)
            .args(arguments)
            .status()
            .with_context(|| format!("cannot run {program}"))?;
        if !status.success() {
            bail!("{program} {} failed ({status})", arguments.join(" "));
        }
        Ok(())
    };
    run("ip", &["netns", "add", MARKER])?;
    run(
        "ip",
        &[
            "link", "add", PEER, "type", "veth", "peer", "name", "eth0", "netns", MARKER,
        ],
    )?;
    run("ip", &["netns", "delete", MARKER])?;
    let peer = Path::new("/sys/class/net").join(PEER);
    let report_if_slow = |what: &str| {
        // stall_report answers once per process, None after.
        if started.elapsed() > SLOW_SETTLING {
            if let Some(report) = labkit::kernel::stall_report(None) {
                eprintln!(
                    "xtask: the kernel is still {what} after {} s:\n{report}",
                    started.elapsed().as_secs()
                );
            }
        }
    };
    while peer.exists() {
        report_if_slow("dismantling namespaces");
        thread::sleep(Duration::from_millis(100));
    }
    if probe_ipvs {
        wait_for_ipvs(&report_if_slow)?;
    }
    eprintln!(
        "xtask: the kernel dismantled the previous tests' namespaces in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// One IPVS command in a fresh namespace: it waits for the IPVS work the
/// kernel still does (`report_if_slow` says so if that takes long).
fn wait_for_ipvs(report_if_slow: &dyn Fn(&str)) -> Result<()> {
    // The command blocks on IPVS's lock while the kernel holds it; a thread
    // reports if that takes long.
    let (answered, waiting) = mpsc::channel::<()>();
    let probe = thread::spawn(move || {
        let status = Command::new("unshare")
            .args([
                "--net",
                "ipvsadm",
                "--add-service",
                "--tcp-service",
                "10.255.255.1:80",
            ])
            .status();
        drop(answered);
        status
    });
    while let Err(mpsc::RecvTimeoutError::Timeout) = waiting.recv_timeout(Duration::from_secs(1)) {
        report_if_slow("holding IPVS");
    }
    let status = probe
        .join()
        .expect("the probe thread does not panic")
        .context("cannot run unshare --net ipvsadm")?;
    if !status.success() {
        bail!("an IPVS command in a fresh namespace failed ({status})");
    }
    Ok(())
}

/// Whether a test (`module::name`) runs only on request.
fn is_on_request(test: &str) -> bool {
    test.rsplit("::")
        .next()
        .unwrap_or(test)
        .starts_with(ON_REQUEST)
}

/// Whether a test (`module::name`) is one of the `first_` ones.
fn is_first(test: &str) -> bool {
    test.rsplit("::").next().unwrap_or(test).starts_with(FIRST)
}

fn to_owned(arguments: &[&str]) -> Vec<String> {
    arguments
        .iter()
        .map(|argument| argument.to_string())
        .collect()
}

/// The ignored tests of a test binary: its lab tests.
fn list_lab_tests(binary: &Path) -> Result<BTreeSet<String>> {
    let listing = Command::new(binary)
        .args(["--ignored", "--list", "--format", "terse"])
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot run {} --ignored --list", binary.display()))?;
    if !listing.status.success() {
        bail!(
            "{} --ignored --list failed ({})",
            binary.display(),
            listing.status
        );
    }
    Ok(String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter_map(|line| line.strip_suffix(": test"))
        .map(str::to_owned)
        .collect())
}

/// Runs a test binary in a process group of its own, forwarding its output;
/// `unfinished` are the tests the run includes. If it is still running after
/// `stuck_after`, names the tests that have not finished, has the kernel log
/// its blocked tasks, prints the kernel log and kills the whole group (the
/// processes the tests started included). A stuck test then costs minutes
/// and says where, instead of CI's whole budget.
fn run_watched(
    binary: &Path,
    arguments: &[String],
    mut unfinished: BTreeSet<String>,
    stuck_after: Duration,
) -> Result<bool> {
    let mut child = Command::new(binary)
        .args(arguments)
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    // The child leads its new group: the group's id is its pid.
    let group = libc::pid_t::try_from(child.id()).expect("pids fit pid_t");
    let stdout = child.stdout.take().expect("stdout is piped");
    let (finished_sender, finished) = mpsc::channel();
    let (done_sender, done) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            println!("{line}");
            // libtest prints "test NAME ... ok" (or FAILED, ignored) when a
            // test ends.
            if let Some(name) = line
                .strip_prefix("test ")
                .and_then(|rest| rest.split(" ... ").next())
            {
                let _ = finished_sender.send(name.to_owned());
            }
        }
        let _ = done_sender.send(());
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > stuck_after {
            break None;
        }
        thread::sleep(Duration::from_millis(100));
    };
    let Some(status) = status else {
        for name in finished.try_iter() {
            unfinished.remove(&name);
        }
        eprintln!(
            "xtask: {} is stuck after {} s; unfinished: {}",
            binary.display(),
            stuck_after.as_secs(),
            unfinished.into_iter().collect::<Vec<_>>().join(", ")
        );
        // "w": the kernel logs the stack of every blocked task.
        let _ = std::fs::write("/proc/sysrq-trigger", "w");
        let _ = Command::new("dmesg").stdout(std::io::stderr()).status();
        // The group's leader is not reaped yet, so its id is still ours.
        // SAFETY: killpg sends a signal; no memory is involved.
        unsafe { libc::killpg(group, libc::SIGKILL) };
        let _ = child.wait();
        if done.recv_timeout(OUTPUT_GRACE).is_err() {
            eprintln!("xtask: the output of {} stays open", binary.display());
        }
        return Ok(false);
    };
    if done.recv_timeout(OUTPUT_GRACE).is_err() {
        // Something the tests started outlived them and holds their output.
        // If it is still in the group, the group's id is still in use and
        // cannot have gone to another process.
        eprintln!(
            "xtask: {} exited but a process it started still holds its output: killing its process group",
            binary.display()
        );
        // SAFETY: as above.
        unsafe { libc::killpg(group, libc::SIGKILL) };
        return Ok(false);
    }
    Ok(status.success())
}
