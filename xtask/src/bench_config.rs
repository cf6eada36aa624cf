//! `cargo xtask bench-config`: `pulse -t` against `keepalived -t` on the same
//! generated keepalived.conf, on this machine (a config check needs no
//! IPVS): 10,000 virtual servers x 10 real servers, each with a TCP_CHECK.
//! Prints both tools' wall times, processor times (user and system, every
//! thread) and peak memory, and the ratios, from one run; never asserts on
//! them.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

const VIRTUAL_SERVERS: usize = 10_000;
const REAL_SERVERS: usize = 10;
// Seven: on a shared 2-CPU machine one round in three can be off by a
// quarter, and the median of three then moves with it.
const ROUNDS: usize = 7;
const KEEPALIVED: &str = "/usr/sbin/keepalived";

pub fn run(repository: &Path) -> Result<()> {
    // keepalived is one of the lab's packages; the check itself runs here.
    crate::lab::prerequisites::ensure()?;
    let pulse = crate::cargo::executables(
        repository,
        &["build", "--release", "--package", "pulse"],
        |target| target["name"] == "pulse" && target["kind"] == serde_json::json!(["bin"]),
    )?
    .into_iter()
    .next()
    .context("cargo build reported no pulse binary")?;
    let folder = repository.join("target").join("bench-config");
    std::fs::create_dir_all(&folder)?;
    let config = folder.join("keepalived.conf");
    std::fs::write(&config, generate())?;
    let lines = std::fs::read_to_string(&config)?.lines().count();
    println!(
        "{VIRTUAL_SERVERS} virtual servers x {REAL_SERVERS} real servers with TCP_CHECK: \
         {lines} lines, {ROUNDS} rounds"
    );
    println!(
        "{:>5}  {:>14}  {:>9}  {:>12}  {:>12}  {:>9}  {:>12}  {:>8}  {:>8}  {:>8}",
        "round", "keepalived -t", "cpu", "peak", "pulse -t", "cpu", "peak", "time", "cpu", "memory"
    );
    let mut time_ratios = Vec::new();
    let mut processor_ratios = Vec::new();
    let mut memory_ratios = Vec::new();
    for round in 1..=ROUNDS {
        let reference = measure(
            Command::new(KEEPALIVED)
                .args(["-t", "-l", "-n", "-f"])
                .arg(&config),
        )?;
        let ours = measure(Command::new(&pulse).arg("-t").arg("-f").arg(&config))?;
        // Both must judge the file clean, or the comparison means nothing.
        for (name, outcome) in [("keepalived -t", &reference), ("pulse -t", &ours)] {
            if outcome.status != Some(0) {
                bail!(
                    "{name} did not accept the generated config (status {:?}):\n{}",
                    outcome.status,
                    outcome.errors
                );
            }
        }
        let time_ratio = reference.elapsed.as_secs_f64() / ours.elapsed.as_secs_f64();
        let processor_ratio =
            reference.processor.as_secs_f64() / ours.processor.as_secs_f64().max(1e-6);
        let memory_ratio = reference.peak_kib as f64 / ours.peak_kib as f64;
        println!(
            "{round:>5}  {:>12.3} s  {:>7.3} s  {:>8} MiB  {:>10.3} s  {:>7.3} s  {:>8} MiB  {time_ratio:>7.1}x  {processor_ratio:>7.1}x  {memory_ratio:>7.1}x",
            reference.elapsed.as_secs_f64(),
            reference.processor.as_secs_f64(),
            reference.peak_kib / 1024,
            ours.elapsed.as_secs_f64(),
            ours.processor.as_secs_f64(),
            ours.peak_kib / 1024,
        );
        time_ratios.push(time_ratio);
        processor_ratios.push(processor_ratio);
        memory_ratios.push(memory_ratio);
    }
    println!(
        "median: pulse -t is {:.1}x as fast as keepalived -t ({:.1}x in processor time); keepalived's peak memory is {:.1}x pulse's",
        median(&mut time_ratios),
        median(&mut processor_ratios),
        median(&mut memory_ratios)
    );
    println!(
        "(peak: the largest resident set among the process and the children it waited for; \
         keepalived -t checks in its parent process)"
    );
    Ok(())
}

/// A config like a large site's: every virtual server with its own
/// addresses, scheduler, method and a TCP_CHECK per real server.
fn generate() -> String {
    let mut text = String::from("global_defs {\n    router_id bench\n}\n\n");
    for index in 0..VIRTUAL_SERVERS {
        let (high, low) = (index / 250, index % 250 + 1);
        let _ = writeln!(
            text,
            "virtual_server 10.{}.{}.{low} 80 {{\n    delay_loop 6\n    lb_algo wrr\n    \
             lb_kind NAT\n    persistence_timeout 50\n    protocol TCP\n",
            100 + high / 250,
            high % 250,
        );
        for real in 0..REAL_SERVERS {
            let _ = writeln!(
                text,
                "    real_server 172.16.{}.{} 8080 {{\n        weight {}\n        \
                 TCP_CHECK {{\n            connect_timeout 3\n            retry 2\n            \
                 delay_before_retry 1\n        }}\n    }}",
                index / 200,
                (index % 200) + real + 1,
                real + 1
            );
        }
        text.push_str("}\n");
    }
    text
}

struct Outcome {
    status: Option<i32>,
    elapsed: Duration,
    /// User and system time of the process and the children it waited
    /// for (pulse -t lexes on a second thread: wall time alone hides it).
    processor: Duration,
    peak_kib: i64,
    errors: String,
}

/// Runs a command to its end: its wall time, and its peak resident set
/// from wait4(2) (the process's own, or its largest waited-for child's).
fn measure(command: &mut Command) -> Result<Outcome> {
    let started = Instant::now();
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {command:?}"))?;
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.context("no stderr pipe")?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 on our own child's pid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::wait4(pid, &mut status, 0, &mut usage) } < 0 {
        return Err(std::io::Error::last_os_error()).context("wait4");
    }
    let elapsed = started.elapsed();
    let errors = reader.join().unwrap_or_default();
    Ok(Outcome {
        status: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        elapsed,
        processor: duration(usage.ru_utime) + duration(usage.ru_stime),
        peak_kib: usage.ru_maxrss.max(1),
        errors: errors.lines().take(20).collect::<Vec<_>>().join("\n"),
    })
}

fn duration(time: libc::timeval) -> Duration {
    Duration::from_secs(time.tv_sec.max(0) as u64)
        + Duration::from_micros(time.tv_usec.max(0) as u64)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
