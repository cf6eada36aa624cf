//! `cargo xtask bench-pulse`: the pulse daemon against keepalived's checker
//! process (`keepalived -C`) on the same kernel, in one lab run.
//!
//! The configuration: 1,000 virtual servers x 10 real servers (NAT, wlc,
//! weight 1) and no checkers, so both daemons take every real server as up
//! and program all of it at start. Each round runs each daemon alone in a
//! fresh network namespace and measures:
//!
//! - **start**: from spawning the daemon to the kernel holding all 10,000
//!   destinations. The kernel is polled every [`POLL_INTERVAL`] by dumping
//!   the destinations of the last virtual server only (both daemons
//!   program in configuration order); once it has all ten, the whole table
//!   is read once and checked, untimed. Should it be incomplete, the whole
//!   table is polled instead and the time is taken when a read finds it
//!   complete.
//! - **reload**: one real server's weight changed in the file, then from
//!   SIGHUP to the kernel showing the new weight, polling that virtual
//!   server's destinations only. The first SIGHUP is sent as soon as the
//!   table is complete (and READY=1 seen, for a daemon that sends it), so
//!   it also waits for whatever the daemon still does after its start; a
//!   second one, right after the first is applied, measures a reload
//!   alone.
//! - **hand edits**: [`HAND_EDITS`] times, one real server deleted in the
//!   kernel behind the daemon's back (as `ipvsadm -d` would), then to the
//!   kernel holding it again, polling that virtual server's destinations;
//!   each edit lands somewhere else in the daemon's audit cycle, so their
//!   median and maximum are printed. A daemon that has not put the first
//!   back within [`REPAIR_PATIENCE`] is reported so, and not given the
//!   others.
//!
//! Each run also gets a NOTIFY_SOCKET, and the times at which the daemon
//! said READY=1 (systemd's notify protocol) after start and after SIGHUP
//! are printed beside, when it did.
//!
//! Both run with their pid files, logs on a file, and `--dont-release-ipvs`
//! so that stopping them (SIGTERM) does not spend minutes emptying the
//! table. Prints every round and the median ratios; timings are printed,
//! never asserted.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use ipvs::{Client, Protocol, ServiceKey};
use labkit::Namespace;

/// The sizes measured (virtual servers of [`REAL_SERVERS`] each), with the
/// rounds at each: keepalived takes about half a minute to start the
/// larger one under emulation.
const SIZES: [(usize, usize); 2] = [(1000, 5), (10000, 2)];
const REAL_SERVERS: usize = 10;
/// The sleep between two polls of the kernel (each poll is one netlink
/// dump of ten destinations, well under a millisecond).
const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// How long either daemon may take to program the table or apply a reload
/// under emulation before the benchmark gives up.
const GIVE_UP_AFTER: Duration = Duration::from_secs(600);

/// How long to wait for a READY=1 once the kernel shows what it announces
/// (keepalived, not run by systemd, sends none).
const READY_PATIENCE: Duration = Duration::from_secs(3);

/// The virtual server and real server whose weight the reload changes, and
/// the new weight.
const RELOADED_SERVICE: usize = 500;
const RELOADED_REAL_SERVER: usize = 5;
const RELOADED_WEIGHT: u32 = 7;

/// How many hand edits each round makes, one after the other (a real
/// server deleted, as an operator's `ipvsadm -d` would, in virtual servers
/// spread over the table), which real server, and how long a daemon has
/// to put each back.
const HAND_EDITS: usize = 5;
const EDITED_REAL_SERVER: usize = 2;
const REPAIR_PATIENCE: Duration = Duration::from_secs(15);

/// One of the two daemons.
struct Daemon {
    name: &'static str,
    program: PathBuf,
    /// Its command line, given the configuration and a directory of its
    /// own for pid files.
    arguments: fn(&Path, &Path) -> Vec<String>,
}

/// What one run of a daemon measured.
struct Figures {
    start: Duration,
    /// How the start was seen: polling the last service, or the whole
    /// table.
    start_seen_by: &'static str,
    reload: Duration,
    /// A second reload (weight changed again) right after the first was
    /// applied.
    second_reload: Duration,
    /// When the daemon said READY=1 (systemd's notify protocol, on the
    /// NOTIFY_SOCKET each run gets) after spawning and after SIGHUP, if it
    /// did.
    ready_at_start: Option<Duration>,
    ready_after_reload: Option<Duration>,
    /// The peak resident memory of the daemon's processes, in KiB (the sum
    /// of each one's peak: keepalived's parent and checker child).
    peak_memory_kib: u64,
    /// From the checked real server's listener closing to the kernel
    /// without it (the check's own delay included).
    verdict_seen: Duration,
    /// From each real server deleted by hand (in the kernel, behind the
    /// daemon's back) to the kernel holding it again; None if not within
    /// [`REPAIR_PATIENCE`] (then the edits stop).
    hand_edits_repaired: Vec<Option<Duration>>,
    /// What pulse said of its passes: the second reload's netlink messages
    /// (sent, received) and the verdict's time to the kernel's
    /// acknowledgement, from its log.
    said: Said,
}

/// Figures pulse logs of its own passes (keepalived logs none).
#[derive(Default)]
struct Said {
    reload_messages: Option<(u64, u64)>,
    verdict_to_kernel: Option<String>,
    /// Its line on finding the last hand edit (told by its netlink tap, or
    /// an audit's): what the reading cost.
    edit_found: Option<String>,
}

/// In the guest: the benchmark.
pub fn run_in_guest(pulse: &Path) -> Result<()> {
    // Installed where keepalived is, in the guest's root filesystem, as
    // `cargo xtask bench` installs ipvsctl: the repository is a 9p mount
    // without a page cache, so a binary started from there reads its pages
    // from the host again at each start, which keepalived does not pay.
    let installed = Path::new("/usr/local/sbin/pulse");
    std::fs::copy(pulse, installed)
        .with_context(|| format!("copy {} to {}", pulse.display(), installed.display()))?;
    let pulse = installed;
    let daemons = [
        Daemon {
            name: "keepalived",
            program: PathBuf::from("keepalived"),
            arguments: |configuration, directory| {
                vec![
                    "-C".into(),
                    "-n".into(),
                    "-l".into(),
                    "--dont-release-ipvs".into(),
                    "-f".into(),
                    configuration.display().to_string(),
                    "-p".into(),
                    directory.join("keepalived.pid").display().to_string(),
                    "-c".into(),
                    directory.join("checkers.pid").display().to_string(),
                ]
            },
        },
        Daemon {
            name: "pulse",
            program: pulse.to_owned(),
            arguments: |configuration, directory| {
                vec![
                    "-n".into(),
                    "-l".into(),
                    "--dont-release-ipvs".into(),
                    "-f".into(),
                    configuration.display().to_string(),
                    "-p".into(),
                    directory.join("pulse.pid").display().to_string(),
                ]
            },
        },
    ];
    let directory =
        std::env::temp_dir().join(format!("fulcrum-bench-pulse-{}", std::process::id()));
    std::fs::create_dir_all(&directory)?;
    warm_up(&daemons, &directory)?;
    for (services, rounds) in SIZES {
        measure_size(&daemons, &directory, services, rounds)?;
    }
    if std::env::var_os("FULCRUM_BENCH_KEEP").is_some() {
        println!("kept: {} (configurations, logs)", directory.display());
    } else {
        let _ = std::fs::remove_dir_all(&directory);
    }
    Ok(())
}

/// The rounds at one size, and their medians.
fn measure_size(
    daemons: &[Daemon],
    directory: &Path,
    services: usize,
    rounds: usize,
) -> Result<()> {
    println!(
        "\n{services} virtual servers x {REAL_SERVERS} real servers, and one more with a TCP_CHECK, \
         {rounds} rounds; the kernel polled every {} ms (one dump of the last virtual server's \
         destinations; on reload, of the changed one's)",
        POLL_INTERVAL.as_millis()
    );
    println!(
        "{:>5}  {:>14}  {:>14}  {:>8}  {:>14}  {:>14}  {:>8}",
        "round", "keepalived", "pulse", "ratio", "keepalived", "pulse", "ratio"
    );
    println!(
        "{:>5}  {:>40}  {:>40}",
        "",
        format!("start to {} destinations", services * REAL_SERVERS),
        "SIGHUP to one new weight"
    );
    let mut start_ratios = Vec::new();
    let mut reload_ratios = Vec::new();
    let mut kernel_times = Vec::new();
    let mut all = Vec::new();
    for round in 1..=rounds {
        let mut figures = Vec::new();
        for daemon in daemons {
            let run_directory = directory.join(format!("{}-{services}-{round}", daemon.name));
            std::fs::create_dir_all(&run_directory)?;
            figures.push(
                measure(daemon, services, &run_directory)
                    .with_context(|| format!("{} in round {round}", daemon.name))?,
            );
        }
        let kernel = kernel_alone(services).context("the kernel alone")?;
        let (keepalived, pulse) = (&figures[0], &figures[1]);
        let start_ratio = keepalived.start.as_secs_f64() / pulse.start.as_secs_f64();
        let reload_ratio = keepalived.reload.as_secs_f64() / pulse.reload.as_secs_f64();
        println!(
            "{round:>5}  {:>12.3} s  {:>12.3} s  {start_ratio:>7.1}x  {:>12.3} s  {:>12.3} s  {reload_ratio:>7.1}x",
            keepalived.start.as_secs_f64(),
            pulse.start.as_secs_f64(),
            keepalived.reload.as_secs_f64(),
            pulse.reload.as_secs_f64(),
        );
        let ready = |figures: &Figures| {
            let show = |time: Option<Duration>| {
                time.map_or("-".to_owned(), |time| {
                    format!("{:.3} s", time.as_secs_f64())
                })
            };
            format!(
                "{} after start, {} after SIGHUP",
                show(figures.ready_at_start),
                show(figures.ready_after_reload)
            )
        };
        println!(
            "       the kernel alone (the library applying the start's {} operations into a \
             fresh namespace): {:.3} s, so no daemon starts more than {:.1}x as fast as \
             keepalived here",
            services * (REAL_SERVERS + 1) + 2,
            kernel.as_secs_f64(),
            keepalived.start.as_secs_f64() / kernel.as_secs_f64()
        );
        kernel_times.push(kernel.as_secs_f64());
        println!(
            "       READY=1: keepalived {}; pulse {}",
            ready(keepalived),
            ready(pulse)
        );
        println!(
            "       a second SIGHUP right after: keepalived {:.3} s, pulse {:.3} s",
            keepalived.second_reload.as_secs_f64(),
            pulse.second_reload.as_secs_f64()
        );
        println!(
            "       peak memory: keepalived {:.1} MiB, pulse {:.1} MiB",
            keepalived.peak_memory_kib as f64 / 1024.0,
            pulse.peak_memory_kib as f64 / 1024.0
        );
        println!(
            "       a real server's check failing to the kernel without it: keepalived {:.3} s, \
             pulse {:.3} s (the check's delay included); pulse's verdict to the kernel's \
             acknowledgement: {}",
            keepalived.verdict_seen.as_secs_f64(),
            pulse.verdict_seen.as_secs_f64(),
            pulse
                .said
                .verdict_to_kernel
                .as_deref()
                .unwrap_or("not logged")
        );
        let repaired = |figures: &Figures| {
            let mut times: Vec<f64> = figures
                .hand_edits_repaired
                .iter()
                .flatten()
                .map(Duration::as_secs_f64)
                .collect();
            if times.len() < figures.hand_edits_repaired.len() || times.is_empty() {
                return format!("not within {} s", REPAIR_PATIENCE.as_secs());
            }
            let each: Vec<String> = times.iter().map(|time| format!("{time:.2}")).collect();
            format!(
                "median {:.3} s, at most {:.3} s ({} s)",
                median(&mut times),
                times.iter().copied().fold(0.0, f64::max),
                each.join(", ")
            )
        };
        println!(
            "       {HAND_EDITS} real servers deleted by hand, one at a time, each to the kernel \
             holding it again: keepalived {}; pulse {} (pulse on the last one: {})",
            repaired(keepalived),
            repaired(pulse),
            pulse.said.edit_found.as_deref().unwrap_or("not logged")
        );
        if let Some((sent, received)) = pulse.said.reload_messages {
            println!(
                "       pulse's second reload: {sent} netlink messages sent, {received} received"
            );
        }
        for (daemon, figures) in daemons.iter().zip(&figures) {
            if figures.start_seen_by != "last service" {
                println!(
                    "       ({}'s start was seen by polling the {})",
                    daemon.name, figures.start_seen_by
                );
            }
        }
        start_ratios.push(start_ratio);
        reload_ratios.push(reload_ratio);
        all.push(figures);
    }
    // Seconds, or whatever else `pick` reads as a number.
    let median_of = |index: usize, pick: fn(&Figures) -> f64| {
        let mut values: Vec<f64> = all.iter().map(|figures| pick(&figures[index])).collect();
        median(&mut values)
    };
    println!(
        "median start: keepalived {:.3} s, pulse {:.3} s: pulse is {:.1}x as fast",
        median_of(0, |figures| figures.start.as_secs_f64()),
        median_of(1, |figures| figures.start.as_secs_f64()),
        median(&mut start_ratios)
    );
    let kernel = median(&mut kernel_times);
    println!(
        "median of the kernel alone: {kernel:.3} s: the best start ratio this kernel allows is \
         {:.1}x",
        median_of(0, |figures| figures.start.as_secs_f64()) / kernel
    );
    println!(
        "median reload: keepalived {:.3} s, pulse {:.3} s: pulse is {:.1}x as fast",
        median_of(0, |figures| figures.reload.as_secs_f64()),
        median_of(1, |figures| figures.reload.as_secs_f64()),
        median(&mut reload_ratios)
    );
    let mut second_ratios: Vec<f64> = all
        .iter()
        .map(|figures| {
            figures[0].second_reload.as_secs_f64() / figures[1].second_reload.as_secs_f64()
        })
        .collect();
    println!(
        "median second reload: keepalived {:.3} s, pulse {:.3} s: pulse is {:.1}x as fast",
        median_of(0, |figures| figures.second_reload.as_secs_f64()),
        median_of(1, |figures| figures.second_reload.as_secs_f64()),
        median(&mut second_ratios)
    );
    println!(
        "median peak memory: keepalived {:.1} MiB, pulse {:.1} MiB",
        median_of(0, |figures| figures.peak_memory_kib as f64) / 1024.0,
        median_of(1, |figures| figures.peak_memory_kib as f64) / 1024.0
    );
    let repaired_by = |index: usize| -> Option<Vec<f64>> {
        all.iter()
            .flat_map(|figures| &figures[index].hand_edits_repaired)
            .map(|repaired| repaired.map(|took| took.as_secs_f64()))
            .collect()
    };
    match (repaired_by(0), repaired_by(1)) {
        (keepalived, Some(mut pulse)) if !pulse.is_empty() => println!(
            "hand edits repaired: pulse median {:.3} s, at most {:.3} s, over {} edits; \
             keepalived {}",
            median(&mut pulse),
            pulse.iter().copied().fold(0.0, f64::max),
            pulse.len(),
            match keepalived {
                Some(mut times) if !times.is_empty() =>
                    format!("median {:.3} s", median(&mut times)),
                _ => format!("did not repair within {} s", REPAIR_PATIENCE.as_secs()),
            }
        ),
        _ => println!(
            "pulse did not repair every hand edit within {} s",
            REPAIR_PATIENCE.as_secs()
        ),
    }
    println!(
        "(both include starting the process under emulation, 0.1-0.3 s, and reading the \
         configuration; both log to a file)"
    );
    Ok(())
}

/// The start's IPVS work with no daemon: the library applying the same
/// operations the start programs (the checked virtual server and its real
/// server, then every virtual server and its real servers) as one batch
/// into a fresh namespace. What the kernel itself takes bounds any
/// daemon's start.
fn kernel_alone(services: usize) -> Result<Duration> {
    let namespace = Namespace::create("bench-kernel")?;
    let mut client = namespace.run(Client::connect)??;
    let mut operations = Vec::with_capacity(services * (REAL_SERVERS + 1) + 2);
    let checked = checked_key();
    operations.push(ipvs::Operation::CreateService(ipvs::Service::new(
        checked, "wlc",
    )));
    operations.push(ipvs::Operation::CreateDestination(
        checked,
        ipvs::Destination::new(
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 9),
            ipvs::Forwarding::Masquerade,
        ),
    ));
    for index in 0..services {
        let key = service_key(index);
        operations.push(ipvs::Operation::CreateService(ipvs::Service::new(
            key, "wlc",
        )));
        for real_server in 0..REAL_SERVERS {
            operations.push(ipvs::Operation::CreateDestination(
                key,
                ipvs::Destination::new(
                    real_server_address(real_server),
                    ipvs::Forwarding::Masquerade,
                ),
            ));
        }
    }
    let started = Instant::now();
    client
        .apply(&operations)
        .map_err(|error| anyhow::anyhow!("{error}"))?;
    let took = started.elapsed();
    drop(client);
    drop(namespace);
    Ok(took)
}

/// One small untimed run of each daemon: the guest reads each binary's
/// pages over 9p on first touch, and the kernel loads the scheduler module
/// on first use; neither belongs in the comparison.
fn warm_up(daemons: &[Daemon], directory: &Path) -> Result<()> {
    for daemon in daemons {
        let run_directory = directory.join(format!("{}-warm-up", daemon.name));
        std::fs::create_dir_all(&run_directory)?;
        measure(daemon, 2, &run_directory)
            .with_context(|| format!("{}'s warm-up run", daemon.name))?;
    }
    Ok(())
}

/// Runs `daemon` on a generated configuration of `services` virtual
/// servers in a fresh namespace: its start and reload times.
fn measure(daemon: &Daemon, services: usize, directory: &Path) -> Result<Figures> {
    let configuration = directory.join("keepalived.conf");
    let namespace = Namespace::create(&format!("bench-{}", daemon.name))?;
    // The checked real server: a listener in the namespace, which the
    // TCP_CHECK finds open until the benchmark closes it.
    let listener = namespace.run(|| std::net::TcpListener::bind("127.0.0.1:0"))??;
    let checked_port = listener.local_addr()?.port();
    std::fs::write(&configuration, generate(services, None, checked_port))?;
    let mut client = namespace.run(Client::connect)??;
    let log = directory.join("daemon.log");
    let arguments = (daemon.arguments)(&configuration, directory);

    let notify_path = directory.join("notify.socket");
    let _ = std::fs::remove_file(&notify_path);
    let readiness = Readiness::listen(&notify_path)?;
    let (mut child, started) = namespace.run(|| -> Result<(Child, Instant)> {
        let file = std::fs::File::create(&log)?;
        let mut command = Command::new(&daemon.program);
        command
            .args(&arguments)
            .env("NOTIFY_SOCKET", &notify_path)
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file);
        let started = Instant::now();
        let child = command
            .spawn()
            .with_context(|| format!("cannot run {}", daemon.program.display()))?;
        Ok((child, started))
    })??;
    let outcome = (|| -> Result<Figures> {
        let (start, start_seen_by) = wait_for_start(&mut client, services, started, &mut child)?;

        // pulse says READY=1 once its start pass is applied, which may be
        // a little after the kernel showed the last destination.
        let ready_at_start = readiness.first_after(started, READY_PATIENCE);
        let mut reload = |weight: u32| -> Result<(Duration, Option<Duration>)> {
            std::fs::write(
                directory.join("keepalived.conf.new"),
                generate(services, Some(weight), checked_port),
            )?;
            std::fs::rename(directory.join("keepalived.conf.new"), &configuration)?;
            let reloaded = service_key(RELOADED_SERVICE.min(services - 1));
            let real_server = real_server_address(RELOADED_REAL_SERVER);
            let started = Instant::now();
            signal(&child, libc::SIGHUP)?;
            let took = poll(&mut child, started, "the new weight", || {
                Ok(client.destinations(&reloaded)?.iter().any(|destination| {
                    destination.socket_address() == real_server && destination.weight == weight
                }))
            })?;
            // Untimed: the reload left everything else in place.
            if !table_complete(&mut client, services, Some(weight))? {
                bail!("after the reload the table is not the configuration's");
            }
            // A daemon that spoke the protocol at start says READY=1 once
            // the reload is applied, possibly after the kernel showed it.
            let ready = match ready_at_start {
                Some(_) => readiness.first_after(started, READY_PATIENCE),
                None => None,
            };
            Ok((took, ready))
        };
        let (reload_time, ready_after_reload) = reload(RELOADED_WEIGHT)?;
        // Once the first reload is applied, whatever the daemon still had to
        // do after its start is done too: the second one is a reload alone.
        let (second_reload, _) = reload(RELOADED_WEIGHT + 1)?;
        let peak_memory_kib = peak_memory(&child, directory);
        // The check fails once the listener is gone (connection refused).
        let closed = Instant::now();
        drop(listener);
        let checked = checked_key();
        let verdict_seen = poll(
            &mut child,
            closed,
            "the failed real server's removal",
            || Ok(client.destinations(&checked)?.is_empty()),
        )?;
        // Hand edits: one real server deleted behind the daemon's back at
        // a time, in services spread over the table; each lands somewhere
        // in the daemon's audit cycle. A daemon that does not repair the
        // first is not given the others.
        let mut hand_edits_repaired = Vec::new();
        for edit in 0..HAND_EDITS {
            let edited = service_key((2 * edit + 1) * services / (2 * HAND_EDITS));
            let edited_real_server = real_server_address(EDITED_REAL_SERVER);
            client.delete_destination(&edited, edited_real_server)?;
            let deleted = Instant::now();
            let repaired = loop {
                if client
                    .destinations(&edited)?
                    .iter()
                    .any(|destination| destination.socket_address() == edited_real_server)
                {
                    break Some(deleted.elapsed());
                }
                if deleted.elapsed() > REPAIR_PATIENCE {
                    break None;
                }
                if let Some(status) = child.try_wait()? {
                    bail!("the daemon exited ({status}) after a hand edit");
                }
                std::thread::sleep(POLL_INTERVAL);
            };
            hand_edits_repaired.push(repaired);
            if repaired.is_none() {
                break;
            }
        }
        // pulse logs the pass right after the kernel acknowledged it.
        std::thread::sleep(Duration::from_millis(300));
        Ok(Figures {
            start,
            start_seen_by,
            reload: reload_time,
            second_reload,
            ready_at_start,
            ready_after_reload,
            peak_memory_kib,
            verdict_seen,
            hand_edits_repaired,
            said: said(&log),
        })
    })();
    stop(&mut child);
    readiness.close();
    outcome.map_err(|error| {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        error.context(format!("the last lines of its log:\n{}", tail.join("\n")))
    })
}

/// The peak resident memory of the daemon and of keepalived's checker
/// child (its pid file), in KiB: each one's `VmHWM`, summed.
fn peak_memory(child: &Child, directory: &Path) -> u64 {
    let of = |pid: u32| -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|status| {
                status
                    .lines()
                    .find_map(|line| line.strip_prefix("VmHWM:"))
                    .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            })
            .unwrap_or(0)
    };
    let checker = std::fs::read_to_string(directory.join("checkers.pid"))
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok());
    of(child.id()) + checker.map_or(0, of)
}

/// What pulse's log says of the second reload's netlink traffic and of the
/// verdict's pass (keepalived logs neither).
fn said(log: &Path) -> Said {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let reload_messages = text
        .lines()
        .rev()
        .find(|line| line.contains(" reload: ") && line.contains(" applied and verified in "))
        .and_then(|line| {
            let counts = line.rsplit_once('(')?.1;
            let mut numbers = counts
                .split(|c: char| !c.is_ascii_digit())
                .filter(|part| !part.is_empty())
                .map(|part| part.parse::<u64>());
            Some((numbers.next()?.ok()?, numbers.next()?.ok()?))
        });
    let verdict_to_kernel = text
        .lines()
        .rev()
        .find(|line| line.contains("health change: applied in "))
        .and_then(|line| line.split_once("health change: applied in "))
        .map(|(_, rest)| rest.to_owned());
    let edit_found = text
        .lines()
        .rev()
        .find(|line| line.contains(" differed from what pulse applied"))
        .and_then(|line| {
            line.split_once("told: ")
                .map(|(_, rest)| format!("told: {rest}"))
                .or_else(|| {
                    line.split_once("audit: ")
                        .map(|(_, rest)| format!("audit: {rest}"))
                })
        });
    Said {
        reload_messages,
        verdict_to_kernel,
        edit_found,
    }
}

/// The READY=1 messages a daemon sends to its NOTIFY_SOCKET, timestamped
/// as they arrive by a thread.
struct Readiness {
    times: Arc<Mutex<Vec<Instant>>>,
    done: Arc<AtomicBool>,
    reader: std::thread::JoinHandle<()>,
}

impl Readiness {
    fn listen(path: &Path) -> Result<Readiness> {
        let socket =
            UnixDatagram::bind(path).with_context(|| format!("cannot bind {}", path.display()))?;
        socket.set_read_timeout(Some(Duration::from_millis(100)))?;
        let times = Arc::new(Mutex::new(Vec::new()));
        let done = Arc::new(AtomicBool::new(false));
        let reader = {
            let (times, done) = (times.clone(), done.clone());
            std::thread::spawn(move || {
                let mut buffer = [0_u8; 4096];
                while !done.load(Ordering::Relaxed) {
                    if let Ok(length) = socket.recv(&mut buffer)
                        && String::from_utf8_lossy(&buffer[..length])
                            .lines()
                            .any(|line| line == "READY=1")
                    {
                        times.lock().unwrap().push(Instant::now());
                    }
                }
            })
        };
        Ok(Readiness {
            times,
            done,
            reader,
        })
    }

    /// How long after `since` the first READY=1 after it came, waiting up
    /// to `patience` for one.
    fn first_after(&self, since: Instant, patience: Duration) -> Option<Duration> {
        let deadline = Instant::now() + patience;
        loop {
            let first = self
                .times
                .lock()
                .unwrap()
                .iter()
                .find(|time| **time >= since)
                .map(|time| time.duration_since(since));
            if first.is_some() || Instant::now() >= deadline {
                return first;
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    fn close(self) {
        self.done.store(true, Ordering::Relaxed);
        let _ = self.reader.join();
    }
}

/// From spawn to a complete table: the time, and how it was seen.
fn wait_for_start(
    client: &mut Client,
    services: usize,
    started: Instant,
    child: &mut Child,
) -> Result<(Duration, &'static str)> {
    let last = service_key(services - 1);
    let seen = poll(child, started, "the last service's destinations", || {
        Ok(client
            .destinations(&last)
            .is_ok_and(|destinations| destinations.len() == REAL_SERVERS))
    })?;
    if table_complete(client, services, None)? {
        return Ok((seen, "last service"));
    }
    let seen = poll(child, started, "the whole table", || {
        table_complete(client, services, None)
    })?;
    Ok((seen, "whole table"))
}

/// Polls `done` every [`POLL_INTERVAL`] until it holds: the time since
/// `started` when it did.
fn poll(
    child: &mut Child,
    started: Instant,
    what: &str,
    mut done: impl FnMut() -> Result<bool>,
) -> Result<Duration> {
    loop {
        if done()? {
            return Ok(started.elapsed());
        }
        if let Some(status) = child.try_wait()? {
            bail!("the daemon exited ({status}) before {what}");
        }
        if started.elapsed() > GIVE_UP_AFTER {
            bail!("no {what} after {GIVE_UP_AFTER:?}");
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// Whether the kernel holds exactly the generated table (`reloaded`: with
/// that weight for the real server the reloads change).
fn table_complete(client: &mut Client, services: usize, reloaded: Option<u32>) -> Result<bool> {
    let kernel = client.services()?;
    // The checked virtual server besides.
    if kernel.len() != services + 1 {
        return Ok(false);
    }
    let keys: Vec<ServiceKey> = kernel
        .iter()
        .map(|service| service.key)
        .filter(|key| *key != checked_key())
        .collect();
    let destinations = client.destinations_of(&keys)?;
    for (key, destinations) in keys.iter().zip(&destinations) {
        if destinations.len() != REAL_SERVERS {
            return Ok(false);
        }
        for destination in destinations {
            let expected = match reloaded {
                Some(weight)
                    if *key == service_key(RELOADED_SERVICE.min(services - 1))
                        && destination.socket_address()
                            == real_server_address(RELOADED_REAL_SERVER) =>
                {
                    weight
                }
                _ => 1,
            };
            if destination.weight != expected {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// SIGTERM, then SIGKILL if it lingers; keepalived's parent stops its
/// checker child.
fn stop(child: &mut Child) {
    let _ = signal(child, libc::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn signal(child: &Child, signal: libc::c_int) -> Result<()> {
    // SAFETY: signalling our own child, not yet reaped.
    if unsafe { libc::kill(child.id() as libc::pid_t, signal) } != 0 {
        return Err(std::io::Error::last_os_error()).context("kill");
    }
    Ok(())
}

fn service_address(index: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(
        10,
        100,
        (index / 250) as u8,
        (index % 250) as u8 + 1,
    ))
}

/// The virtual server whose real server is checked.
fn checked_key() -> ServiceKey {
    ServiceKey::Address {
        protocol: Protocol::Tcp,
        address: IpAddr::V4(Ipv4Addr::new(10, 101, 0, 1)),
        port: 80,
    }
}

fn service_key(index: usize) -> ServiceKey {
    ServiceKey::Address {
        protocol: Protocol::Tcp,
        address: service_address(index),
        port: 80,
    }
}

fn real_server_address(index: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 200, 0, index as u8 + 1)), 8080)
}

/// The configuration: first a virtual server whose one real server, on
/// `checked_port` of 127.0.0.1, has a TCP_CHECK, then `services` virtual
/// servers of [`REAL_SERVERS`] real servers each, without checkers; with
/// `reloaded`, that weight for the one real server the reload changes.
fn generate(services: usize, reloaded: Option<u32>, checked_port: u16) -> String {
    let mut text = String::new();
    writeln!(
        text,
        "virtual_server 10.101.0.1 80 {{\n    protocol TCP\n    lvs_sched wlc\n    lvs_method NAT\n    \
         delay_loop 1\n    real_server 127.0.0.1 {checked_port} {{\n        TCP_CHECK {{\n            \
         connect_timeout 1\n        }}\n    }}\n}}"
    )
    .unwrap();
    for index in 0..services {
        writeln!(
            text,
            "virtual_server {} 80 {{\n    protocol TCP\n    lvs_sched wlc\n    lvs_method NAT",
            service_address(index)
        )
        .unwrap();
        for real_server in 0..REAL_SERVERS {
            let weight = match reloaded {
                Some(weight)
                    if index == RELOADED_SERVICE.min(services - 1)
                        && real_server == RELOADED_REAL_SERVER =>
                {
                    weight
                }
                _ => 1,
            };
            let address = real_server_address(real_server);
            writeln!(
                text,
                "    real_server {} {} {{\n        weight {weight}\n    }}",
                address.ip(),
                address.port()
            )
            .unwrap();
        }
        text.push_str("}\n");
    }
    text
}

/// The middle value; of an even count, the mean of the two middle ones (the
/// 10,000 size runs two rounds: the upper one alone flattered either side).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 0 {
        (values[middle - 1] + values[middle]) / 2.0
    } else {
        values[middle]
    }
}
