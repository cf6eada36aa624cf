//! `cargo xtask bench-nanny`: nanny against keepalived's checker on the same
//! keepalived.conf, in one lab run (keepalived's checker programs IPVS,
//! which this machine's kernel lacks).
//!
//! In the guest, this process binds one TCP listener per real server on
//! 127.10.0.0/16 (all of 127.0.0.0/8 is local), accepts each connection
//! and closes it at once, and counts them. The generated configuration
//! checks every real server every second (`delay_loop 1`, `connect_timeout
//! 1`, `retry 0`: the first failed check takes a real server out).
//!
//! The emulated guest's speed drifts with this machine's load (keepalived's
//! own figure moved by half between runs measured one after the other), so
//! the two tools are measured in alternating windows of one boot:
//!
//! 1. nanny starts and takes every real server in (its initial reports),
//!    and is stopped (SIGSTOP); then keepalived does (every destination in
//!    IPVS). Both then run on the same listeners, never at once;
//! 2. `2 * rounds + 1` windows, keepalived's and nanny's in turn (K N K ...
//!    K): before each, the other tool is stopped (keepalived's checker
//!    child: the parent only watches it) and this one continued (SIGCONT),
//!    then runs `resettle` seconds (`settle` before its first window), so
//!    that the burst of checks that fell due while it was stopped is not
//!    counted. Over each window: the processor time it used (utime + stime
//!    from /proc/PID/stat; keepalived's parent and checker child together),
//!    the checks it made (the connections the guest opened, `ActiveOpens`,
//!    plus the half-open requests reset, `EmbryonicRsts`: nanny's default
//!    TCP_CHECK sends a bare SYN and opens no connection; see
//!    `TcpCounters`. The running tool is the only process making any,
//!    which the stopped tool's processor time over the window, printed,
//!    confirms), and how many the listeners accepted (none of the
//!    half-open checks);
//! 3. each of nanny's windows is compared with the mean of keepalived's on
//!    either side (a drift linear over the three cancels out): the aim
//!    (at most half keepalived's processor time per check) is met when
//!    every such share is at most 50%, not met when every one is over,
//!    and undecided otherwise;
//! 4. for each tool alone (the other stopped): some listeners close at once
//!    and the time until the tool reports each down (nanny: its JSON line;
//!    keepalived: the destination leaving IPVS, polled every 10 ms), its
//!    peak resident memory (VmHWM; keepalived's checker child, the process
//!    doing the checks), and the listeners reopen.
//!
//! Prints every window's figures, each tool's median, range and pooled
//! (all its windows together) processor time per 10,000 checks, the shares
//! and the aims' verdicts; never asserts on them.
//!
//! Other work on this machine slows the guest's processors (QEMU's
//! threads), and the guest, which sees no steal time under emulation,
//! charges the lost time to whatever ran: per check, a tool measured while
//! this machine was busy looks up to twice as costly. So the host side
//! samples this machine's processor time meanwhile and, per window (the
//! guest lists them in `WINDOWS_FILE`), prints the processors busy outside
//! QEMU and each tool's processor time corrected for it (`print_host_load`),
//! with the shares and the verdict on the corrected figures.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, Write as _};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use ipvs::{Client, Protocol, ServiceKey};

/// Real servers per virtual server.
const REAL_SERVERS_PER_VIRTUAL_SERVER: usize = 10;
const REAL_SERVER_PORT: u16 = 8080;
const DELAY_LOOP: Duration = Duration::from_secs(1);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
const KEEPALIVED: &str = "keepalived";
/// Where the guest side keeps its files (the guest's tmpfs).
const DIRECTORY: &str = "/run/fulcrum-bench-nanny";
/// How long a tool may take to take every real server in.
const READY_TIMEOUT: Duration = Duration::from_secs(600);
/// How long after closing a listener a tool may take to report it down
/// before it counts as not detected.
/// At least; longer when the tool checks each real server less often.
const DETECTION_TIMEOUT: Duration = Duration::from_secs(20);
/// How often IPVS is read while waiting for keepalived's removals.
const IPVS_POLL: Duration = Duration::from_millis(10);
/// Where the guest side lists its windows (`ListedWindow`), relative to
/// the repository: the guest runs there, and the host side reads it after
/// the run.
const WINDOWS_FILE: &str = "target/bench-nanny/windows.tsv";
/// How often the host side samples this machine's processor time.
const HOST_SAMPLE: Duration = Duration::from_millis(500);

/// What to measure, shared by the host side and the guest side.
#[derive(clap::Args, Clone, Debug)]
pub struct Settings {
    /// Real servers (listeners), a multiple of 10: 10 per virtual server.
    #[arg(long, default_value_t = 10_000, value_parser = parse_servers)]
    pub servers: usize,
    /// Seconds each tool runs after taking every real server in, before its
    /// first measured window.
    #[arg(long, default_value_t = 10)]
    pub settle: u64,
    /// Seconds of each measured window.
    #[arg(long, default_value_t = 30)]
    pub window: u64,
    /// nanny's windows; keepalived has one more, one before each of
    /// nanny's and one after the last (K N K N ... K).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=50))]
    pub rounds: u64,
    /// Seconds a tool runs after each resume (SIGCONT), before its window:
    /// the checks that fell due while it was stopped come in a burst.
    #[arg(long, default_value_t = 5)]
    pub resettle: u64,
    /// Listeners closed at once to time detection.
    #[arg(long, default_value_t = 20)]
    pub closed: usize,
    /// nanny's `--tcp-check`: half-open (a SYN, its default) or connect
    /// (keepalived's full connection).
    #[arg(long, default_value = "half-open", value_parser = ["half-open", "connect"])]
    pub tcp_check: String,
}

fn parse_servers(text: &str) -> Result<usize, String> {
    let servers: usize = text.parse().map_err(|error| format!("{error}"))?;
    if servers == 0 || servers % REAL_SERVERS_PER_VIRTUAL_SERVER != 0 || servers > 62_500 {
        return Err(format!(
            "a multiple of {REAL_SERVERS_PER_VIRTUAL_SERVER} between 10 and 62,500"
        ));
    }
    Ok(servers)
}

impl Settings {
    /// The same settings as arguments of the guest-side subcommand.
    pub fn arguments(&self) -> Vec<String> {
        vec![
            format!("--servers={}", self.servers),
            format!("--settle={}", self.settle),
            format!("--window={}", self.window),
            format!("--rounds={}", self.rounds),
            format!("--resettle={}", self.resettle),
            format!("--closed={}", self.closed),
            format!("--tcp-check={}", self.tcp_check),
        ]
    }

    fn virtual_servers(&self) -> usize {
        self.servers / REAL_SERVERS_PER_VIRTUAL_SERVER
    }
}

/// The real server `index` (0-based): 127.10.x.y, 250 to a /24.
fn real_server(index: usize) -> SocketAddr {
    let address = Ipv4Addr::new(127, 10, (index / 250) as u8, (index % 250) as u8 + 1);
    SocketAddr::new(IpAddr::V4(address), REAL_SERVER_PORT)
}

/// The virtual server `index` (0-based): 10.100.x.y port 80.
fn virtual_server(index: usize) -> ServiceKey {
    ServiceKey::Address {
        protocol: Protocol::Tcp,
        address: IpAddr::V4(Ipv4Addr::new(
            10,
            100,
            (index / 250) as u8,
            (index % 250) as u8 + 1,
        )),
        port: 80,
    }
}

/// The configuration both tools run.
fn generate(settings: &Settings) -> String {
    let mut text = String::from("global_defs {\n    router_id bench-nanny\n}\n\n");
    for index in 0..settings.virtual_servers() {
        let ServiceKey::Address { address, port, .. } = virtual_server(index) else {
            unreachable!("virtual servers are addresses");
        };
        let _ = writeln!(
            text,
            "virtual_server {address} {port} {{\n    delay_loop {}\n    lb_algo rr\n    \
             lb_kind NAT\n    protocol TCP\n",
            DELAY_LOOP.as_secs()
        );
        for real in 0..REAL_SERVERS_PER_VIRTUAL_SERVER {
            let server = real_server(index * REAL_SERVERS_PER_VIRTUAL_SERVER + real);
            // retry 0: the first failed check takes the real server out, so
            // detection takes at most delay_loop (the next check) plus
            // connect_timeout (a check that hangs); a closed port answers
            // at once.
            let _ = writeln!(
                text,
                "    real_server {} {} {{\n        TCP_CHECK {{\n            connect_timeout {}\n            \
                 retry 0\n        }}\n    }}",
                server.ip(),
                server.port(),
                CONNECT_TIMEOUT.as_secs()
            );
        }
        text.push_str("}\n");
    }
    text
}

/// On the host: build nanny and this program in release, boot the lab and
/// run the guest side, sampling this machine's processor time meanwhile;
/// then, per window the guest listed, this machine's load and the figures
/// corrected for it.
pub fn run(repository: &Path, options: crate::lab::Options, settings: &Settings) -> Result<i32> {
    let lab = crate::lab::Lab::prepare(repository, options)?;
    // Measured in release: nanny's speed, not the debug build's.
    let [xtask, nanny] = <[std::path::PathBuf; 2]>::try_from(crate::cargo::binaries(
        repository,
        &["xtask", "nanny"],
        true,
    )?)
    .expect("two names, two paths");
    let mut command = vec![
        xtask.to_string_lossy().into_owned(),
        "guest-bench-nanny".to_owned(),
    ];
    command.extend(settings.arguments());
    command.push(nanny.to_string_lossy().into_owned());
    let windows_file = repository.join(WINDOWS_FILE);
    let _ = std::fs::remove_file(&windows_file);
    let sampler = HostSampler::start();
    let status = lab.run(&command);
    let samples = sampler.stop();
    if let Ok(text) = std::fs::read_to_string(&windows_file) {
        print_host_load(&text, &samples);
    }
    status
}

/// This machine's processor time at one moment, in clock ticks.
#[derive(Clone, Copy, Debug)]
struct HostSample {
    /// Seconds since the Unix epoch.
    at: f64,
    /// Every processor's busy time (/proc/stat).
    busy: u64,
    /// QEMU's (utime + stime), 0 before it started.
    qemu: u64,
}

/// Samples this machine's processor time on a thread of its own: the
/// guest's processors are QEMU's threads, and other work here slows them,
/// which inflates the guest's own processor accounting (no steal time
/// under emulation).
struct HostSampler {
    stop: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<Vec<HostSample>>,
}

impl HostSampler {
    fn start() -> HostSampler {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut samples = Vec::new();
            let mut qemu = None;
            loop {
                if qemu.is_none() {
                    qemu = find_child("qemu-system");
                }
                if let Ok(busy) = MachineProcessorTime::read() {
                    let qemu_ticks = qemu
                        .and_then(|pid| Some(stat_field(pid, 14).ok()? + stat_field(pid, 15).ok()?))
                        .unwrap_or(0);
                    samples.push(HostSample {
                        at: unix_seconds(),
                        busy: busy.busy,
                        qemu: qemu_ticks,
                    });
                }
                if stopped.recv_timeout(HOST_SAMPLE) != Err(mpsc::RecvTimeoutError::Timeout) {
                    return samples;
                }
            }
        });
        HostSampler { stop, thread }
    }

    fn stop(self) -> Vec<HostSample> {
        let _ = self.stop.send(());
        self.thread.join().unwrap_or_default()
    }
}

/// A child process of this one whose command name starts with `name`.
fn find_child(name: &str) -> Option<u32> {
    let parent = std::process::id();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (head, tail) = text.rsplit_once(')')?;
            let command = head.split_once('(')?.1;
            let ppid: u32 = tail.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == parent && command.starts_with(name)).then_some(pid)
        })
}

/// This machine's processors busy outside QEMU, and QEMU's, over
/// `began..ended` (Unix seconds), in processors; None without samples
/// around it.
fn host_load(samples: &[HostSample], began: f64, ended: f64) -> Option<(f64, f64)> {
    let first = samples.iter().find(|sample| sample.at >= began)?;
    let last = samples.iter().rev().find(|sample| sample.at <= ended)?;
    let seconds = last.at - first.at;
    if seconds <= 0.0 || first.qemu == 0 {
        return None;
    }
    // SAFETY: sysconf has no preconditions.
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let busy = last.busy.saturating_sub(first.busy) as f64 / ticks_per_second;
    let qemu = last.qemu.saturating_sub(first.qemu) as f64 / ticks_per_second;
    Some(((busy - qemu).max(0.0) / seconds, qemu / seconds))
}

/// Per window the guest listed, this machine's load outside QEMU, and
/// each tool's processor time per check corrected for it.
///
/// The guest counts a processor busy for as long as its task held it,
/// whether or not QEMU's thread for it ran meanwhile (emulated processors
/// report no steal time), so other work here inflates every task's
/// processor time alike. Over a window, QEMU's processor time over the
/// guest's busy time (its processors times the share busy) is the share
/// the guest's busy time really ran; a tool's processor time times it is
/// what the tool would have been charged with its processors to itself.
/// That assumes the loss falls evenly on everything busy in the guest.
fn print_host_load(windows: &str, samples: &[HostSample]) {
    let processors = std::thread::available_parallelism().map_or(0, usize::from);
    println!(
        "\nthis machine ({processors} processors) during each window: processors busy outside \
         QEMU, QEMU's (its threads for the guest's processors and its own), the share of the \
         guest's busy time QEMU ran, and the tool's processor time per check times that share"
    );
    println!(
        "{:>6}  {:<10}  {:>7}  {:>5}  {:>5}  {:>19}",
        "window", "tool", "others", "QEMU", "ran", "corrected s/10k chk"
    );
    let mut loaded = Vec::new();
    let mut corrected = Vec::new();
    for line in windows.lines() {
        let Some(listed) = ListedWindow::parse(line) else {
            continue;
        };
        let number = listed.number;
        let tool = TOOL_NAMES[listed.window.tool];
        let Some((others, qemu)) =
            host_load(samples, listed.window.began_at, listed.window.ended_at)
        else {
            println!(
                "{number:>6}  {tool:<10}  {:>7}  {:>5}  {:>5}  {:>19}",
                "-", "-", "-", "-"
            );
            continue;
        };
        let busy = listed.guest_processors as f64 * listed.window.guest_busy;
        let ran = if busy > 0.0 { qemu / busy } else { f64::NAN };
        let mut window = listed.window;
        window.cpu *= ran;
        println!(
            "{number:>6}  {tool:<10}  {others:>7.2}  {qemu:>5.2}  {:>4.0}%  {:>17.3} s",
            100.0 * ran,
            window.cpu_per_10k_checks()
        );
        if others > 0.2 {
            loaded.push(number.to_string());
        }
        corrected.push(window);
    }
    if !loaded.is_empty() {
        println!(
            "(other work here during windows {}: the guest's processors ran slower then, which \
             inflates the guest's processor time per check)",
            loaded.join(", ")
        );
    }
    let shares: Vec<f64> = bracketed_shares(&corrected)
        .into_iter()
        .map(|(_, share)| share)
        .collect();
    if shares.is_empty() {
        return;
    }
    let each: Vec<String> = shares
        .iter()
        .map(|share| format!("{:.0}%", 100.0 * share))
        .collect();
    let lowest = shares.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = shares.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    println!(
        "corrected for this machine's load, nanny's processor time per check as a share of \
         keepalived's in the windows either side: {} (median {:.0}%)",
        each.join(", "),
        100.0 * median(&shares)
    );
    println!(
        "aim, corrected for this machine's load: nanny's processor time per check at most half \
         keepalived's: {} (windows {:.0}% to {:.0}%)",
        share_verdict(&shares, 0.5),
        100.0 * lowest,
        100.0 * highest
    );
}

/// A window as the guest lists it for the host side.
struct ListedWindow {
    /// 1-based.
    number: usize,
    /// The guest's processors.
    guest_processors: usize,
    /// Its tool, bounds, processor time, checks and the guest's busy share.
    window: Window,
}

impl ListedWindow {
    fn line(number: usize, guest_processors: usize, window: &Window) -> String {
        format!(
            "{number}\t{}\t{:.3}\t{:.3}\t{:.3}\t{}\t{:.4}\t{guest_processors}",
            TOOL_NAMES[window.tool],
            window.began_at,
            window.ended_at,
            window.cpu,
            window.checks,
            window.guest_busy
        )
    }

    fn parse(line: &str) -> Option<ListedWindow> {
        let fields: Vec<&str> = line.split('\t').collect();
        let [number, tool, began, ended, cpu, checks, busy, processors] = fields[..] else {
            return None;
        };
        Some(ListedWindow {
            number: number.parse().ok()?,
            guest_processors: processors.parse().ok()?,
            window: Window {
                tool: TOOL_NAMES.iter().position(|name| *name == tool)?,
                seconds: ended.parse::<f64>().ok()? - began.parse::<f64>().ok()?,
                checks: checks.parse().ok()?,
                half_open: 0,
                resets_sent: 0,
                accepted: 0,
                cpu: cpu.parse().ok()?,
                user: 0.0,
                other_cpu: 0.0,
                guest_busy: busy.parse().ok()?,
                downs: 0,
                began_at: began.parse().ok()?,
                ended_at: ended.parse().ok()?,
            },
        })
    }
}

/// In the guest: the benchmark itself, of keepalived's checker and of the
/// nanny at `nanny`.
pub fn run_in_guest(nanny: &Path, settings: &Settings) -> Result<()> {
    // 10,000 listeners here, and as many sockets in each tool if servers
    // hang; the guest's PID 1 leaves the kernel's default hard limit (4,096),
    // which root may raise, and the tools inherit it.
    raise_open_file_limit(1 << 18)?;
    let directory = PathBuf::from(DIRECTORY);
    std::fs::create_dir_all(&directory)?;
    let config = directory.join("keepalived.conf");
    std::fs::write(&config, generate(settings))?;

    let mut listeners = Listeners::open(settings.servers)?;
    let closed = closed_indexes(settings);
    println!(
        "{} real servers ({} virtual servers x {REAL_SERVERS_PER_VIRTUAL_SERVER}) with TCP_CHECK, \
         delay_loop {} s, connect_timeout {} s, retry 0: {} checks/s configured",
        settings.servers,
        settings.virtual_servers(),
        DELAY_LOOP.as_secs(),
        CONNECT_TIMEOUT.as_secs(),
        settings.servers as u64 / DELAY_LOOP.as_secs(),
    );
    println!(
        "both tools started on the same listeners, one at a time; then {} windows of {} s, \
         keepalived and nanny alternating, the other stopped (SIGSTOP), each tool settling {} s \
         before its first window and {} s after each resume; then, for each tool alone, {} \
         listeners closed at once",
        window_count(settings),
        settings.window,
        settings.settle,
        settings.resettle,
        closed.len()
    );

    // Connecting resolves the IPVS family, which loads ip_vs now rather
    // than in keepalived's start-up.
    let mut observer = Client::connect().context("cannot reach IPVS")?;
    let mut keepalived = Keepalived::new(&config, &directory, &mut observer, settings);
    let mut nanny = Nanny::new(nanny, &config, &directory, &settings.tcp_check);
    let mut contenders = [Contender::new(&mut keepalived), Contender::new(&mut nanny)];
    let outcome = compare(&mut contenders, &mut listeners, settings, &closed);
    // Both stopped even when the measurement failed.
    let stopped: Vec<Result<()>> = contenders.iter_mut().map(Contender::stop).collect();
    let comparison = outcome?;
    for stopped in stopped {
        stopped?;
    }
    report(settings, &comparison);
    Ok(())
}

/// Which listeners are closed to time detection: one in each of
/// `closed` equal blocks, at varied places within their virtual servers.
fn closed_indexes(settings: &Settings) -> Vec<usize> {
    let count = settings.closed.clamp(1, settings.servers);
    let block = settings.servers / count;
    (0..count)
        .map(|index| index * block + (index % REAL_SERVERS_PER_VIRTUAL_SERVER).min(block - 1))
        .collect()
}

/// The tools' places in `Contender` arrays and in `Window::tool`.
const KEEPALIVED_TOOL: usize = 0;
const NANNY_TOOL: usize = 1;
const TOOL_NAMES: [&str; 2] = ["keepalived", "nanny"];

/// Windows in all: keepalived's first and last, so that each of nanny's
/// `rounds` windows has one of keepalived's on either side.
fn window_count(settings: &Settings) -> usize {
    2 * settings.rounds as usize + 1
}

/// Which tool the window `number` (0-based) measures.
fn window_tool(number: usize) -> usize {
    if number % 2 == 0 {
        KEEPALIVED_TOOL
    } else {
        NANNY_TOOL
    }
}

/// What one window measured, of the one tool running in it.
struct Window {
    tool: usize,
    /// Its length, in seconds.
    seconds: f64,
    /// The tool's checks: TCP connections the guest opened (`ActiveOpens`)
    /// plus half-open requests reset (`EmbryonicRsts`), see
    /// [`TcpCounters`].
    checks: u64,
    /// Of which half-open requests reset.
    half_open: u64,
    /// Resets the guest sent (`OutRsts`): for half-open checks, one per
    /// SYN-ACK (a cross-check of `half_open`).
    resets_sent: u64,
    /// Connections the listeners accepted.
    accepted: u64,
    /// The tool's processor time, all and in user space alone, in seconds.
    cpu: f64,
    user: f64,
    /// The stopped tool's processor time over the window (none expected).
    other_cpu: f64,
    /// Share of the guest's processors busy (anything).
    guest_busy: f64,
    /// Real servers the tool had down at the window's end.
    downs: usize,
    /// When it began and ended, in seconds since the Unix epoch (the
    /// guest's clock follows this machine's), for the host side to match
    /// with this machine's load.
    began_at: f64,
    ended_at: f64,
}

impl Window {
    fn cpu_per_10k_checks(&self) -> f64 {
        per_10k_checks(self.cpu, self.checks)
    }
}

/// One tool's detection of the closed listeners, and what it held.
struct Detection {
    /// Per closed listener, the time to its report, if it came.
    detections: Vec<Option<Duration>>,
    /// How long they were waited for.
    timeout: Duration,
    /// Real servers reported down before any listener closed.
    false_downs: usize,
    peak_kib: u64,
    /// Anything else worth printing.
    notes: Vec<String>,
}

/// Everything measured.
struct Comparison {
    windows: Vec<Window>,
    /// Per tool (`KEEPALIVED_TOOL`, `NANNY_TOOL`).
    detections: [Detection; 2],
}

/// What the measurement needs from each tool.
trait Tool {
    fn name(&self) -> &'static str;
    fn start(&mut self) -> Result<()>;
    /// Blocks until every real server is in.
    fn wait_until_ready(&mut self, servers: usize) -> Result<()>;
    /// The processes whose processor time counts.
    fn processes(&self) -> Vec<u32>;
    /// The processes SIGSTOP holds while the other tool is measured: those
    /// that check.
    fn checking_processes(&self) -> Vec<u32>;
    /// The process whose peak memory is reported.
    fn memory_process(&self) -> u32;
    /// Real servers reported down so far (none should be), and what the
    /// tool said about the first of them.
    fn downs_so_far(&mut self) -> Result<(usize, Vec<String>)>;
    /// When each of `servers` was reported down, from now to `limit`.
    fn wait_for_downs(
        &mut self,
        servers: &[SocketAddr],
        limit: Instant,
    ) -> Result<HashMap<SocketAddr, Instant>>;
    fn notes(&self) -> Vec<String>;
    /// What the tool said about the first of the closed `servers`.
    fn said(&self, servers: &[SocketAddr]) -> Vec<String>;
    fn stop(&mut self) -> Result<()>;
}

/// A tool, and whether it is stopped (SIGSTOP) now.
struct Contender<'t> {
    tool: &'t mut (dyn Tool + 't),
    paused: bool,
}

impl<'t> Contender<'t> {
    fn new(tool: &'t mut (dyn Tool + 't)) -> Contender<'t> {
        Contender {
            tool,
            paused: false,
        }
    }

    /// Stops its checking processes, and returns once the kernel has: no
    /// connection of its own opens after this.
    fn pause(&mut self) -> Result<()> {
        if self.paused {
            return Ok(());
        }
        let processes = self.tool.checking_processes();
        for &pid in &processes {
            signal(pid, libc::SIGSTOP)?;
        }
        self.paused = true;
        let limit = Instant::now() + Duration::from_secs(10);
        for &pid in &processes {
            // "T": stopped by a signal.
            while process_state(pid)? != 'T' {
                if Instant::now() >= limit {
                    bail!("{} (pid {pid}) did not stop within 10 s", self.tool.name());
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok(())
    }

    /// Lets it run again; whether it was stopped.
    fn resume(&mut self) -> Result<bool> {
        if !self.paused {
            return Ok(false);
        }
        for pid in self.tool.checking_processes() {
            signal(pid, libc::SIGCONT)?;
        }
        self.paused = false;
        Ok(true)
    }

    /// Ends it (resumed first: a stopped process would not act on SIGTERM).
    fn stop(&mut self) -> Result<()> {
        let resumed = self.resume();
        let stopped = self.tool.stop();
        resumed?;
        stopped
    }
}

/// The two contenders, the one at `index` first.
fn this_and_other<'c, 't>(
    contenders: &'c mut [Contender<'t>; 2],
    index: usize,
) -> (&'c mut Contender<'t>, &'c mut Contender<'t>) {
    let [keepalived, nanny] = contenders;
    if index == KEEPALIVED_TOOL {
        (keepalived, nanny)
    } else {
        (nanny, keepalived)
    }
}

fn signal(pid: u32, signal: libc::c_int) -> Result<()> {
    // SAFETY: kill(2) on a process we started and have not reaped.
    if unsafe { libc::kill(pid as libc::pid_t, signal) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("cannot signal process {pid}"));
    }
    Ok(())
}

/// The state letter of /proc/PID/stat (R, S, T, ...).
fn process_state(pid: u32) -> Result<char> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    text.rsplit_once(')')
        .and_then(|(_, after_name)| after_name.trim_start().chars().next())
        .with_context(|| format!("{path}: no state"))
}

fn compare(
    contenders: &mut [Contender<'_>; 2],
    listeners: &mut Listeners,
    settings: &Settings,
    closed: &[usize],
) -> Result<Comparison> {
    // nanny first and stopped once ready, so that keepalived, whose first
    // window comes next, starts alone.
    for index in [NANNY_TOOL, KEEPALIVED_TOOL] {
        let contender = &mut contenders[index];
        let name = contender.tool.name();
        println!("\n{name}: starting");
        let started = Instant::now();
        contender.tool.start()?;
        contender
            .tool
            .wait_until_ready(settings.servers)
            .with_context(|| format!("starting {name}"))?;
        println!(
            "{name}: every real server in after {:.1} s",
            started.elapsed().as_secs_f64()
        );
        if index == NANNY_TOOL {
            contender.pause()?;
        }
    }

    println!(
        "\n{:>6}  {:<10}  {:>7}  {:>9}  {:>7}  {:>8}  {:>6}  {:>7}  {:>7}  {:>13}  {:>5}  {:>5}  {:>9}  {:>5}",
        "window",
        "tool",
        "checks",
        "half-open",
        "RSTs out",
        "accepted",
        "length",
        "CPU",
        "user",
        "CPU s/10k chk",
        "CPU",
        "guest",
        "stopped's",
        "down"
    );
    // Written as they end, for the host side (the repository is shared).
    let _ = std::fs::create_dir_all(Path::new(WINDOWS_FILE).parent().unwrap_or(Path::new(".")));
    let mut windows_file =
        File::create(WINDOWS_FILE).with_context(|| format!("cannot create {WINDOWS_FILE}"))?;
    let guest_processors = std::thread::available_parallelism().map_or(1, usize::from);
    let mut windows: Vec<Window> = Vec::new();
    for number in 0..window_count(settings) {
        let index = window_tool(number);
        let first = !windows.iter().any(|window| window.tool == index);
        let (this, other) = this_and_other(contenders, index);
        other.pause()?;
        let resumed = this.resume()?;
        // The first time, what is left of its start; after a resume, the
        // burst of checks that fell due while it was stopped.
        if first {
            std::thread::sleep(Duration::from_secs(settings.settle));
        } else if resumed {
            std::thread::sleep(Duration::from_secs(settings.resettle));
        }
        let window = measure_window(index, this, other, listeners, settings)
            .with_context(|| format!("measuring {} in window {}", TOOL_NAMES[index], number + 1))?;
        println!(
            "{:>6}  {:<10}  {:>7}  {:>9}  {:>8}  {:>7.1}%  {:>4.1} s  {:>5.2} s  {:>5.2} s  {:>11.3} s  {:>4.0}%  {:>4.0}%  {:>7.2} s  {:>5}",
            number + 1,
            TOOL_NAMES[index],
            window.checks,
            window.half_open,
            window.resets_sent,
            100.0 * window.accepted as f64 / window.checks.max(1) as f64,
            window.seconds,
            window.cpu,
            window.user,
            window.cpu_per_10k_checks(),
            100.0 * window.cpu / window.seconds,
            100.0 * window.guest_busy,
            window.other_cpu,
            window.downs
        );
        writeln!(
            windows_file,
            "{}",
            ListedWindow::line(number + 1, guest_processors, &window)
        )?;
        windows.push(window);
    }

    let mut detections = Vec::new();
    for index in [KEEPALIVED_TOOL, NANNY_TOOL] {
        let (this, other) = this_and_other(contenders, index);
        other.pause()?;
        if this.resume()? {
            std::thread::sleep(Duration::from_secs(settings.resettle));
        }
        let pooled = Pooled::of(&windows, index);
        let detection = detect(
            this.tool,
            listeners,
            settings,
            closed,
            pooled.checks_per_second(),
        )
        .with_context(|| format!("timing {}'s detection", TOOL_NAMES[index]))?;
        detections.push(detection);
    }
    let Ok(detections) = <[Detection; 2]>::try_from(detections) else {
        unreachable!("one detection per tool");
    };
    Ok(Comparison {
        windows,
        detections,
    })
}

/// One window of `this` running alone (`other` stopped).
fn measure_window(
    tool: usize,
    this: &mut Contender<'_>,
    other: &Contender<'_>,
    listeners: &Listeners,
    settings: &Settings,
) -> Result<Window> {
    let processes = this.tool.processes();
    let others = other.tool.processes();
    let cpu_before = ProcessorTime::of(&processes)?;
    let other_before = ProcessorTime::of(&others)?;
    let guest_before = MachineProcessorTime::read()?;
    let accepted_before = listeners.accepted();
    let counted_before = TcpCounters::read()?;
    let began_at = unix_seconds();
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(settings.window));
    let counted_after = TcpCounters::read()?;
    let ended_at = unix_seconds();
    let accepted_after = listeners.accepted();
    let seconds = started.elapsed().as_secs_f64();
    let cpu_after = ProcessorTime::of(&processes)?;
    let other_after = ProcessorTime::of(&others)?;
    let guest_busy = MachineProcessorTime::read()?.busy_since(&guest_before);
    let (downs, _) = this.tool.downs_so_far()?;
    Ok(Window {
        tool,
        seconds,
        // The tool is the only process here that makes checks (the other
        // is stopped): see TcpCounters.
        checks: counted_after.checks() - counted_before.checks(),
        half_open: counted_after.embryonic_resets - counted_before.embryonic_resets,
        resets_sent: counted_after.resets_sent - counted_before.resets_sent,
        accepted: accepted_after - accepted_before,
        cpu: cpu_after.total() - cpu_before.total(),
        user: cpu_after.user - cpu_before.user,
        other_cpu: other_after.total() - other_before.total(),
        guest_busy,
        downs,
        began_at,
        ended_at,
    })
}

fn unix_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64())
}

/// Closes the `closed` listeners with `tool` alone running, times its
/// reports, reads its peak memory and reopens them.
fn detect(
    tool: &mut dyn Tool,
    listeners: &mut Listeners,
    settings: &Settings,
    closed: &[usize],
    checks_per_second: f64,
) -> Result<Detection> {
    let name = tool.name();
    println!();
    let (false_downs, false_down_reasons) = tool.downs_so_far()?;
    if false_downs > 0 {
        println!("{name}: {false_downs} real servers down before any listener closed");
        for line in &false_down_reasons {
            println!("{name}: | {line}");
        }
    }
    let addresses: Vec<SocketAddr> = closed.iter().map(|&index| real_server(index)).collect();
    let closed_at = listeners.close(closed)?;
    // Three times the mean interval between two checks of a real server,
    // when a saturated tool checks each less often than configured.
    let interval = settings.servers as f64 / checks_per_second.max(1.0);
    let timeout = DETECTION_TIMEOUT.max(Duration::from_secs_f64(3.0 * interval));
    let found = tool.wait_for_downs(&addresses, Instant::now() + timeout)?;
    let detections = addresses
        .iter()
        .zip(&closed_at)
        .map(|(address, closed)| {
            found
                .get(address)
                .map(|reported| reported.saturating_duration_since(*closed))
        })
        .collect::<Vec<_>>();
    let (median, max, missed) = detection_summary(&detections);
    println!(
        "{name}: {} of {} closed listeners reported down, after {} (median) and {} (max)",
        detections.len() - missed,
        detections.len(),
        seconds(median),
        seconds(max)
    );
    let mut sorted = detections.clone();
    // Those not reported (None) last.
    sorted.sort_by_key(|detection| (detection.is_none(), *detection));
    let each: Vec<String> = sorted.iter().map(|detection| seconds(*detection)).collect();
    println!("{name}: each: {}", each.join(", "));
    for line in tool.said(&addresses) {
        println!("{name}: | {line}");
    }
    let peak_kib = peak_memory_kib(tool.memory_process())?;
    listeners.reopen(closed)?;
    Ok(Detection {
        detections,
        timeout,
        false_downs,
        peak_kib,
        notes: tool.notes(),
    })
}

fn per_10k_checks(seconds: f64, checks: u64) -> f64 {
    if checks == 0 {
        f64::NAN
    } else {
        seconds / checks as f64 * 10_000.0
    }
}

/// One tool's windows taken together.
struct Pooled {
    seconds: f64,
    checks: u64,
    accepted: u64,
    cpu: f64,
    user: f64,
    guest_busy: f64,
    /// Each window's processor seconds per 10,000 checks, in order.
    per_window: Vec<f64>,
}

impl Pooled {
    fn of(windows: &[Window], tool: usize) -> Pooled {
        let mine: Vec<&Window> = windows
            .iter()
            .filter(|window| window.tool == tool)
            .collect();
        let seconds: f64 = mine.iter().map(|window| window.seconds).sum();
        Pooled {
            seconds,
            checks: mine.iter().map(|window| window.checks).sum(),
            accepted: mine.iter().map(|window| window.accepted).sum(),
            cpu: mine.iter().map(|window| window.cpu).sum(),
            user: mine.iter().map(|window| window.user).sum(),
            guest_busy: mine
                .iter()
                .map(|window| window.guest_busy * window.seconds)
                .sum::<f64>()
                / seconds,
            per_window: mine
                .iter()
                .map(|window| window.cpu_per_10k_checks())
                .collect(),
        }
    }

    fn checks_per_second(&self) -> f64 {
        self.checks as f64 / self.seconds
    }
}

/// The median of `values` (the mean of the middle two when even); NaN for
/// none.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    match sorted.len() {
        0 => f64::NAN,
        length if length % 2 == 1 => sorted[middle],
        _ => (sorted[middle - 1] + sorted[middle]) / 2.0,
    }
}

/// Each of nanny's windows' processor time per check as a share of the
/// mean of keepalived's in the windows either side of it: a drift of
/// the guest's speed that is linear over the three windows cancels out.
fn bracketed_shares(windows: &[Window]) -> Vec<(usize, f64)> {
    (1..windows.len().saturating_sub(1))
        .filter(|&number| {
            windows[number].tool == NANNY_TOOL
                && windows[number - 1].tool == KEEPALIVED_TOOL
                && windows[number + 1].tool == KEEPALIVED_TOOL
        })
        .map(|number| {
            let reference = (windows[number - 1].cpu_per_10k_checks()
                + windows[number + 1].cpu_per_10k_checks())
                / 2.0;
            (number, windows[number].cpu_per_10k_checks() / reference)
        })
        .collect()
}

/// Whether the aim (a share of keepalived's at most `limit`) is met by
/// every bracketed share, by none, or by some.
fn share_verdict(shares: &[f64], limit: f64) -> &'static str {
    let finite: Vec<f64> = shares
        .iter()
        .copied()
        .filter(|share| share.is_finite())
        .collect();
    if finite.is_empty() || finite.len() < shares.len() {
        "undecided (a window without checks)"
    } else if finite.iter().all(|share| *share <= limit) {
        "met"
    } else if finite.iter().all(|share| *share > limit) {
        "NOT met"
    } else {
        "undecided (the windows' shares fall on both sides)"
    }
}

fn report(settings: &Settings, comparison: &Comparison) {
    let configured = settings.servers as f64 / DELAY_LOOP.as_secs_f64();
    let bound = DELAY_LOOP + CONNECT_TIMEOUT;
    let pooled = [
        Pooled::of(&comparison.windows, KEEPALIVED_TOOL),
        Pooled::of(&comparison.windows, NANNY_TOOL),
    ];
    println!();
    println!(
        "{:<10}  {:>7}  {:>8}  {:>8}  {:>8}  {:>24}  {:>8}  {:>10}  {:>5}  {:>5}  {:>11}  {:>9}  {:>9}",
        "tool",
        "windows",
        "checks/s",
        "accepted",
        "interval",
        "CPU s/10k chk: median",
        "pooled",
        "user space",
        "CPU",
        "guest",
        "peak memory",
        "detection",
        "max"
    );
    for index in [KEEPALIVED_TOOL, NANNY_TOOL] {
        let figures = &pooled[index];
        let detection = &comparison.detections[index];
        let (median_detection, max_detection, _) = detection_summary(&detection.detections);
        let lowest = figures
            .per_window
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let highest = figures
            .per_window
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        println!(
            "{:<10}  {:>7}  {:>8.0}  {:>7.1}%  {:>6.2} s  {:>24}  {:>6.3} s  {:>8.3} s  {:>4.0}%  {:>4.0}%  {:>7.1} MiB  {:>9}  {:>9}",
            TOOL_NAMES[index],
            figures.per_window.len(),
            figures.checks_per_second(),
            100.0 * figures.accepted as f64 / figures.checks.max(1) as f64,
            settings.servers as f64 / figures.checks_per_second(),
            format!(
                "{:.3} s ({:.2}-{:.2})",
                median(&figures.per_window),
                lowest,
                highest
            ),
            per_10k_checks(figures.cpu, figures.checks),
            per_10k_checks(figures.user, figures.checks),
            100.0 * figures.cpu / figures.seconds,
            100.0 * figures.guest_busy,
            detection.peak_kib as f64 / 1024.0,
            seconds(median_detection),
            seconds(max_detection),
        );
    }

    let bracketed = bracketed_shares(&comparison.windows);
    let shares: Vec<f64> = bracketed.iter().map(|(_, share)| *share).collect();
    let each: Vec<String> = bracketed
        .iter()
        .map(|(number, share)| format!("window {}: {:.0}%", number + 1, 100.0 * share))
        .collect();
    println!(
        "nanny's processor time per check as a share of keepalived's in the windows either side: {}",
        each.join(", ")
    );
    let [keepalived, nanny] = &pooled;
    let pooled_share =
        per_10k_checks(nanny.cpu, nanny.checks) / per_10k_checks(keepalived.cpu, keepalived.checks);
    let user_share = per_10k_checks(nanny.user, nanny.checks)
        / per_10k_checks(keepalived.user, keepalived.checks);
    let lowest = shares.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = shares.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let [keepalived_detection, nanny_detection] = &comparison.detections;
    let memory_ratio = keepalived_detection.peak_kib as f64 / nanny_detection.peak_kib as f64;
    let mut line = format!(
        "nanny / keepalived: processor time per check {:.0}% (median of {} windows; from {:.0}% \
         to {:.0}%; pooled {:.0}%, user space alone {:.0}%); keepalived / nanny: peak memory {memory_ratio:.2}x",
        100.0 * median(&shares),
        shares.len(),
        100.0 * lowest,
        100.0 * highest,
        100.0 * pooled_share,
        100.0 * user_share,
    );
    let (keepalived_median, _, _) = detection_summary(&keepalived_detection.detections);
    let (nanny_median, _, _) = detection_summary(&nanny_detection.detections);
    if let (Some(reference), Some(ours)) = (keepalived_median, nanny_median) {
        let _ = write!(
            line,
            ", median detection {:.2}x",
            reference.as_secs_f64() / ours.as_secs_f64()
        );
    }
    println!("{line}");
    for index in [KEEPALIVED_TOOL, NANNY_TOOL] {
        let name = TOOL_NAMES[index];
        let figures = &pooled[index];
        let detection = &comparison.detections[index];
        for note in &detection.notes {
            println!("({name}: {note})");
        }
        // A check starts delay_loop after the previous one ended (both
        // tools), so the interval is a little over delay_loop even when
        // idle; far over it, the tool (or the guest) is saturated.
        if figures.checks_per_second() < 0.8 * configured {
            println!(
                "({name}: did not keep up: {:.0} checks/s of the {configured:.0} configured, \
                 each real server checked every {:.2} s instead of every {} s; the guest's \
                 processors were {:.0}% busy)",
                figures.checks_per_second(),
                settings.servers as f64 / figures.checks_per_second(),
                DELAY_LOOP.as_secs(),
                100.0 * figures.guest_busy,
            );
        }
        if detection.false_downs > 0 {
            println!(
                "({name}: {} real servers reported down before any listener closed)",
                detection.false_downs
            );
        }
        let (_, _, missed) = detection_summary(&detection.detections);
        if missed > 0 {
            println!(
                "({name}: {missed} of {} closed listeners not reported down within {} s)",
                detection.detections.len(),
                detection.timeout.as_secs()
            );
        }
    }
    let stopped_cpu: f64 = comparison
        .windows
        .iter()
        .map(|window| window.other_cpu)
        .sum();
    if stopped_cpu > 0.0 {
        println!(
            "(the stopped tool used {stopped_cpu:.2} processor seconds over all windows: its \
             processes other than those stopped)"
        );
    }
    println!(
        "aim: nanny's processor time per check at most half keepalived's: {} (median {:.0}%, \
         windows {:.0}% to {:.0}%)",
        share_verdict(&shares, 0.5),
        100.0 * median(&shares),
        100.0 * lowest,
        100.0 * highest,
    );
    let (_, nanny_max, nanny_missed) = detection_summary(&nanny_detection.detections);
    let within = nanny_missed == 0 && nanny_max.is_some_and(|max| max <= bound);
    println!(
        "aim: nanny detects every closed listener within delay_loop + connect_timeout ({} s): {} (max {})",
        bound.as_secs(),
        verdict(within),
        seconds(nanny_max)
    );
    println!(
        "(checks: TCP connections opened in the guest plus half-open requests reset (only the \
         running tool makes any), half-open: of which requests reset (EmbryonicRsts), RSTs out: \
         resets the guest sent (for half-open checks one per SYN-ACK), accepted: by the \
         listeners (none for half-open checks); interval: between two checks of a real server, on average; \
         CPU: utime + stime over the window, keepalived's parent and checker together, user \
         space: utime alone; stopped's: the other tool's over the window; guest: all of the \
         guest's processors busy, listeners included; median and range over the tool's \
         windows, pooled: all its windows' processor time over all their checks; detection: \
         median from a listener's close to nanny's JSON line, or to the destination leaving \
         IPVS for keepalived, read every {} ms)",
        IPVS_POLL.as_millis()
    );
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

fn seconds(duration: Option<Duration>) -> String {
    duration.map_or_else(
        || "-".to_owned(),
        |duration| format!("{:.3} s", duration.as_secs_f64()),
    )
}

/// Median and maximum of the detections that came, and how many did not.
fn detection_summary(
    detections: &[Option<Duration>],
) -> (Option<Duration>, Option<Duration>, usize) {
    let mut found: Vec<Duration> = detections.iter().flatten().copied().collect();
    found.sort();
    let missed = detections.len() - found.len();
    (
        found.get(found.len() / 2).copied(),
        found.last().copied(),
        missed,
    )
}

/// Where a listener told to close answers with its index and the instant
/// it closed.
type ClosedReply = mpsc::Sender<(usize, Instant)>;

/// The listeners, on a runtime of their own: each accepts connections,
/// counts and closes them, until told to close.
struct Listeners {
    runtime: tokio::runtime::Runtime,
    accepted: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
    /// Per listener, the way to tell it to close.
    closers: Vec<Option<tokio::sync::oneshot::Sender<ClosedReply>>>,
}

impl Listeners {
    fn open(count: usize) -> Result<Listeners> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        let mut listeners = Listeners {
            runtime,
            accepted: Arc::new(AtomicU64::new(0)),
            failures: Arc::new(AtomicU64::new(0)),
            closers: (0..count).map(|_| None).collect(),
        };
        listeners.reopen(&(0..count).collect::<Vec<_>>())?;
        Ok(listeners)
    }

    /// Binds the listeners `indexes` (again) and starts serving them.
    fn reopen(&mut self, indexes: &[usize]) -> Result<()> {
        for &index in indexes {
            let address = real_server(index);
            let listener = self
                .runtime
                .block_on(tokio::net::TcpListener::bind(address))
                .with_context(|| format!("cannot listen on {address}"))?;
            let (closer, close) = tokio::sync::oneshot::channel();
            self.runtime.spawn(serve(
                index,
                listener,
                self.accepted.clone(),
                self.failures.clone(),
                close,
            ));
            self.closers[index] = Some(closer);
        }
        Ok(())
    }

    fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// Closes the listeners `indexes` at once; when each closed, in order.
    fn close(&mut self, indexes: &[usize]) -> Result<Vec<Instant>> {
        let (sender, receiver) = mpsc::channel();
        for &index in indexes {
            let closer = self.closers[index]
                .take()
                .with_context(|| format!("listener {index} is not open"))?;
            if closer.send(sender.clone()).is_err() {
                bail!("listener {index} stopped on its own");
            }
        }
        drop(sender);
        let closed: HashMap<usize, Instant> = receiver.iter().collect();
        indexes
            .iter()
            .map(|index| {
                closed
                    .get(index)
                    .copied()
                    .with_context(|| format!("listener {index} did not say when it closed"))
            })
            .collect()
    }
}

impl Drop for Listeners {
    fn drop(&mut self) {
        let failures = self.failures.load(Ordering::Relaxed);
        if failures > 0 {
            eprintln!("bench-nanny: the listeners' accept failed {failures} times");
        }
    }
}

async fn serve(
    index: usize,
    listener: tokio::net::TcpListener,
    accepted: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
    mut close: tokio::sync::oneshot::Receiver<ClosedReply>,
) {
    loop {
        tokio::select! {
            result = listener.accept() => match result {
                // A TCP_CHECK only connects; closing at once frees the
                // socket (an unaccepted connection would fill the backlog).
                Ok((stream, _)) => {
                    drop(stream);
                    accepted.fetch_add(1, Ordering::Relaxed);
                }
                Err(_) => {
                    // Out of descriptors, say: counted, and no busy loop.
                    failures.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            answer = &mut close => {
                drop(listener);
                if let Ok(answer) = answer {
                    let _ = answer.send((index, Instant::now()));
                }
                return;
            }
        }
    }
}

/// nanny, read through its JSON lines.
struct Nanny {
    program: PathBuf,
    /// Its `--tcp-check`.
    tcp_check: String,
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    /// Each state change as it was read: when, which, up, initial.
    changes: Option<mpsc::Receiver<Change>>,
    initial: HashSet<SocketAddr>,
    downs: HashSet<SocketAddr>,
    /// What nanny said about the first closed listeners.
    said: Vec<String>,
    /// What nanny said about the first real servers down.
    first_downs: Vec<String>,
}

/// A state change nanny printed, when it was read.
struct Change {
    at: Instant,
    server: SocketAddr,
    up: bool,
    initial: bool,
    reason: String,
}

impl Nanny {
    fn new(program: &Path, config: &Path, directory: &Path, tcp_check: &str) -> Nanny {
        Nanny {
            program: program.to_owned(),
            tcp_check: tcp_check.to_owned(),
            config: config.to_owned(),
            log: directory.join("nanny.log"),
            child: None,
            changes: None,
            initial: HashSet::new(),
            downs: HashSet::new(),
            said: Vec::new(),
            first_downs: Vec::new(),
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Takes the changes read so far, or waits up to `limit` for one.
    fn receive(&mut self, limit: Option<Instant>) -> Result<Vec<Change>> {
        let changes = self.changes.as_ref().context("nanny is not running")?;
        let mut received = Vec::new();
        if let Some(limit) = limit {
            let wait = limit.saturating_duration_since(Instant::now());
            match changes.recv_timeout(wait) {
                Ok(change) => received.push(change),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    bail!("nanny stopped; its log:\n{}", tail(&self.log))
                }
            }
        }
        received.extend(changes.try_iter());
        let mut changes = Vec::new();
        for change in received {
            if change.initial {
                self.initial.insert(change.server);
            }
            if change.up {
                self.downs.remove(&change.server);
            } else {
                self.downs.insert(change.server);
                if self.first_downs.len() < 3 {
                    self.first_downs
                        .push(format!("{} is down: {}", change.server, change.reason));
                }
            }
            changes.push(change);
        }
        Ok(changes)
    }
}

impl Tool for Nanny {
    fn name(&self) -> &'static str {
        "nanny"
    }

    fn start(&mut self) -> Result<()> {
        let mut child = Command::new(&self.program)
            .arg("-f")
            .arg(&self.config)
            .arg("--json")
            .arg(format!("--tcp-check={}", self.tcp_check))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(File::create(&self.log)?)
            .spawn()
            .with_context(|| format!("cannot start {}", self.program.display()))?;
        let stdout = child.stdout.take().context("no stdout pipe")?;
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let at = Instant::now();
                let Ok(change) = serde_json::from_str::<serde_json::Value>(&line) else {
                    eprintln!("bench-nanny: nanny printed a line that is not JSON: {line}");
                    continue;
                };
                let server = change["real_server"]
                    .as_str()
                    .and_then(|text| text.parse::<SocketAddr>().ok());
                let (Some(server), Some(up)) = (server, change["up"].as_bool()) else {
                    eprintln!(
                        "bench-nanny: nanny printed a change without a server or state: {line}"
                    );
                    continue;
                };
                let change = Change {
                    at,
                    server,
                    up,
                    initial: change["initial"].as_bool().unwrap_or(false),
                    reason: change["reason"].as_str().unwrap_or_default().to_owned(),
                };
                if sender.send(change).is_err() {
                    break;
                }
            }
        });
        self.child = Some(child);
        self.changes = Some(receiver);
        Ok(())
    }

    fn wait_until_ready(&mut self, servers: usize) -> Result<()> {
        let limit = Instant::now() + READY_TIMEOUT;
        while self.initial.len() < servers {
            if Instant::now() >= limit {
                bail!(
                    "nanny reported {} of {servers} real servers in {} s",
                    self.initial.len(),
                    READY_TIMEOUT.as_secs()
                );
            }
            self.receive(Some(limit))?;
        }
        Ok(())
    }

    fn processes(&self) -> Vec<u32> {
        vec![self.pid()]
    }

    fn checking_processes(&self) -> Vec<u32> {
        vec![self.pid()]
    }

    fn memory_process(&self) -> u32 {
        self.pid()
    }

    fn downs_so_far(&mut self) -> Result<(usize, Vec<String>)> {
        self.receive(None)?;
        Ok((self.downs.len(), self.first_downs.clone()))
    }

    fn wait_for_downs(
        &mut self,
        servers: &[SocketAddr],
        limit: Instant,
    ) -> Result<HashMap<SocketAddr, Instant>> {
        let wanted: HashSet<SocketAddr> = servers.iter().copied().collect();
        let mut found = HashMap::new();
        while found.len() < wanted.len() && Instant::now() < limit {
            for change in self.receive(Some(limit))? {
                if !change.up && wanted.contains(&change.server) {
                    found.entry(change.server).or_insert(change.at);
                    if self.said.len() < 3 {
                        self.said
                            .push(format!("{} is down: {}", change.server, change.reason));
                    }
                }
            }
        }
        Ok(found)
    }

    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    fn said(&self, _servers: &[SocketAddr]) -> Vec<String> {
        self.said.clone()
    }

    fn stop(&mut self) -> Result<()> {
        let Some(child) = self.child.take() else {
            return Ok(());
        };
        terminate(child, "nanny")
    }
}

/// keepalived's checker (`keepalived -C`), read through IPVS.
struct Keepalived<'a> {
    config: PathBuf,
    pid_file: PathBuf,
    checker_pid_file: PathBuf,
    log: PathBuf,
    observer: &'a mut Client,
    keys: Vec<ServiceKey>,
    child: Option<Child>,
    checker: u32,
    parent_peak_kib: u64,
}

impl<'a> Keepalived<'a> {
    fn new(
        config: &Path,
        directory: &Path,
        observer: &'a mut Client,
        settings: &Settings,
    ) -> Keepalived<'a> {
        Keepalived {
            config: config.to_owned(),
            pid_file: directory.join("keepalived.pid"),
            checker_pid_file: directory.join("checkers.pid"),
            log: directory.join("keepalived.log"),
            observer,
            keys: (0..settings.virtual_servers())
                .map(virtual_server)
                .collect(),
            child: None,
            checker: 0,
            parent_peak_kib: 0,
        }
    }

    fn parent(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The real servers of our virtual servers in IPVS now, or None while
    /// keepalived has not created every virtual server yet.
    fn destinations(&mut self) -> Result<Option<HashSet<SocketAddr>>> {
        let services = self.observer.services()?;
        let present: HashSet<ServiceKey> = services.iter().map(|service| service.key).collect();
        if !self.keys.iter().all(|key| present.contains(key)) {
            return Ok(None);
        }
        Ok(Some(
            self.observer
                .destinations_of(&self.keys)?
                .iter()
                .flatten()
                .map(|destination| destination.socket_address())
                .collect(),
        ))
    }

    fn check_running(&mut self) -> Result<()> {
        let Some(child) = &mut self.child else {
            bail!("keepalived is not running");
        };
        if let Some(status) = child.try_wait()? {
            bail!(
                "keepalived exited ({status}); its log:\n{}",
                tail(&self.log)
            );
        }
        Ok(())
    }
}

impl Tool for Keepalived<'_> {
    fn name(&self) -> &'static str {
        "keepalived"
    }

    fn start(&mut self) -> Result<()> {
        let _ = std::fs::remove_file(&self.pid_file);
        let _ = std::fs::remove_file(&self.checker_pid_file);
        let log = File::create(&self.log)?;
        let child = Command::new(KEEPALIVED)
            .args(["-C", "-n", "-l", "-D", "-f"])
            .arg(&self.config)
            .arg("-p")
            .arg(&self.pid_file)
            .arg("-c")
            .arg(&self.checker_pid_file)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("cannot start keepalived")?;
        self.child = Some(child);
        Ok(())
    }

    fn wait_until_ready(&mut self, servers: usize) -> Result<()> {
        let limit = Instant::now() + READY_TIMEOUT;
        loop {
            self.check_running()?;
            if self.checker == 0 {
                // Written once the checker child runs.
                self.checker = std::fs::read_to_string(&self.checker_pid_file)
                    .ok()
                    .and_then(|text| text.trim().parse().ok())
                    .unwrap_or(0);
            }
            let present = self.destinations()?.map_or(0, |set| set.len());
            if self.checker != 0 && present == servers {
                return Ok(());
            }
            if Instant::now() >= limit {
                bail!(
                    "keepalived put {present} of {servers} real servers in IPVS in {} s \
                     (checker pid {}); its log:\n{}",
                    READY_TIMEOUT.as_secs(),
                    self.checker,
                    tail(&self.log)
                );
            }
            // Reading 1,000 virtual servers' destinations costs the guest
            // too; keepalived's start-up needs it more.
            std::thread::sleep(Duration::from_secs(2));
        }
    }

    fn processes(&self) -> Vec<u32> {
        vec![self.parent(), self.checker]
    }

    fn checking_processes(&self) -> Vec<u32> {
        // The checker child alone: the parent only watches it (and does not
        // take a stopped child for a dead one: it waits without WUNTRACED).
        vec![self.checker]
    }

    fn memory_process(&self) -> u32 {
        self.checker
    }

    fn downs_so_far(&mut self) -> Result<(usize, Vec<String>)> {
        self.check_running()?;
        let present = self.destinations()?.map_or(0, |set| set.len());
        let said = std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains("failed") || line.contains("timeout"))
            .take(3)
            .map(str::to_owned)
            .collect();
        Ok((
            self.keys.len() * REAL_SERVERS_PER_VIRTUAL_SERVER - present,
            said,
        ))
    }

    fn wait_for_downs(
        &mut self,
        servers: &[SocketAddr],
        limit: Instant,
    ) -> Result<HashMap<SocketAddr, Instant>> {
        // Only the virtual servers of the closed listeners are read: a
        // dump each, so the poll stays short.
        let index_of: HashMap<SocketAddr, usize> = (0..self.keys.len()
            * REAL_SERVERS_PER_VIRTUAL_SERVER)
            .map(|index| (real_server(index), index))
            .collect();
        let keys: Vec<ServiceKey> = servers
            .iter()
            .map(|server| self.keys[index_of[server] / REAL_SERVERS_PER_VIRTUAL_SERVER])
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        let mut found = HashMap::new();
        while found.len() < servers.len() && Instant::now() < limit {
            let present: HashSet<SocketAddr> = self
                .observer
                .destinations_of(&keys)?
                .iter()
                .flatten()
                .map(|destination| destination.socket_address())
                .collect();
            let at = Instant::now();
            for server in servers {
                if !present.contains(server) {
                    found.entry(*server).or_insert(at);
                }
            }
            std::thread::sleep(IPVS_POLL);
        }
        // The parent's peak, for the notes, while it still runs.
        self.parent_peak_kib = peak_memory_kib(self.parent()).unwrap_or(0);
        Ok(found)
    }

    fn said(&self, servers: &[SocketAddr]) -> Vec<String> {
        // keepalived writes addresses as [127.10.0.1]:tcp:8080.
        let Some(first) = servers.first() else {
            return Vec::new();
        };
        let needle = format!("[{}]", first.ip());
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|line| line.contains(&needle))
            .take(3)
            .map(str::to_owned)
            .collect()
    }

    fn notes(&self) -> Vec<String> {
        vec![format!(
            "peak memory is the checker child's; the parent's is {:.1} MiB more",
            self.parent_peak_kib as f64 / 1024.0
        )]
    }

    fn stop(&mut self) -> Result<()> {
        let Some(child) = self.child.take() else {
            return Ok(());
        };
        // keepalived withdraws its virtual servers on SIGTERM.
        terminate(child, "keepalived")
    }
}

/// SIGTERM, then its end; SIGKILL after a minute.
fn terminate(mut child: Child, name: &str) -> Result<()> {
    // SAFETY: kill(2) on our own child's pid, not yet reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let limit = Instant::now() + Duration::from_secs(60);
    while Instant::now() < limit {
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill()?;
    child.wait()?;
    bail!("{name} did not stop within 60 s of SIGTERM")
}

/// The processor time of some processes, in seconds.
struct ProcessorTime {
    user: f64,
    system: f64,
}

impl ProcessorTime {
    fn total(&self) -> f64 {
        self.user + self.system
    }

    /// utime and stime of `processes`, summed.
    fn of(processes: &[u32]) -> Result<ProcessorTime> {
        // SAFETY: sysconf has no preconditions.
        let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let mut ticks = [0_u64; 2];
        for pid in processes {
            ticks[0] += stat_field(*pid, 14)?;
            ticks[1] += stat_field(*pid, 15)?;
        }
        Ok(ProcessorTime {
            user: ticks[0] as f64 / ticks_per_second,
            system: ticks[1] as f64 / ticks_per_second,
        })
    }
}

/// Field `number` (1-based, as proc(5) numbers them) of /proc/PID/stat.
fn stat_field(pid: u32, number: usize) -> Result<u64> {
    let path = format!("/proc/{pid}/stat");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    // The command name, in parentheses, may hold spaces; the fields after
    // it start with the third (state).
    let after_name = text
        .rsplit_once(')')
        .with_context(|| format!("{path}: no command name"))?
        .1;
    after_name
        .split_whitespace()
        .nth(number - 3)
        .and_then(|value| value.parse::<u64>().ok())
        .with_context(|| format!("{path}: no field {number}"))
}

/// The kernel's TCP counters that tell the checks made, whichever tool and
/// whichever kind of TCP_CHECK: read from /proc, kernel-side, and costing
/// neither tool anything per packet (an nftables counter of SYNs to the
/// listeners would: a rule run on every packet of both, and keepalived's
/// full exchange has more packets than a half-open probe).
///
/// - A connect, answered or not, is one `ActiveOpens` (/proc/net/snmp):
///   keepalived's checks, and nanny's with `--tcp-check connect`.
/// - A half-open probe sends a SYN from a raw socket, which opens nothing.
///   The listener's kernel makes a request socket, answers SYN-ACK, and
///   this kernel's reset (no socket owns the 4-tuple) removes it: one
///   `EmbryonicRsts` (/proc/net/netstat TcpExt, counted in tcp_check_req),
///   for each probe answered; the listeners are in this namespace. A probe
///   whose SYN the listener drops counts nowhere: a tool then looks more
///   costly per check, never less.
/// - `OutRsts` (/proc/net/snmp): the resets this kernel sent, for the
///   half-open probes one per SYN-ACK; printed to cross-check
///   `EmbryonicRsts`, not counted (a refused connect and a reset of an
///   orphaned connection are resets too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TcpCounters {
    active_opens: u64,
    embryonic_resets: u64,
    resets_sent: u64,
}

impl TcpCounters {
    fn read() -> Result<TcpCounters> {
        let snmp = std::fs::read_to_string("/proc/net/snmp")?;
        let netstat = std::fs::read_to_string("/proc/net/netstat")?;
        TcpCounters::parse(&snmp, &netstat)
    }

    fn parse(snmp: &str, netstat: &str) -> Result<TcpCounters> {
        Ok(TcpCounters {
            active_opens: counter(snmp, "Tcp:", "ActiveOpens")
                .context("/proc/net/snmp: no Tcp ActiveOpens")?,
            resets_sent: counter(snmp, "Tcp:", "OutRsts")
                .context("/proc/net/snmp: no Tcp OutRsts")?,
            embryonic_resets: counter(netstat, "TcpExt:", "EmbryonicRsts")
                .context("/proc/net/netstat: no TcpExt EmbryonicRsts")?,
        })
    }

    /// The checks counted so far (see above).
    fn checks(&self) -> u64 {
        self.active_opens + self.embryonic_resets
    }
}

/// The counter `name` of `section` ("Tcp:") in /proc/net/snmp's or
/// /proc/net/netstat's format: two lines per section, the names, then the
/// values.
fn counter(text: &str, section: &str, name: &str) -> Option<u64> {
    let mut lines = text.lines().filter(|line| line.starts_with(section));
    let (names, values) = (lines.next()?, lines.next()?);
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(known, _)| *known == name)
        .and_then(|(_, value)| value.parse().ok())
}

/// VmHWM, the process's peak resident set, in KiB.
fn peak_memory_kib(pid: u32) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    text.lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .with_context(|| format!("{path}: no VmHWM"))
}

/// The machine's processor time (in the guest, the guest's), from
/// /proc/stat's first line.
struct MachineProcessorTime {
    busy: u64,
    total: u64,
}

impl MachineProcessorTime {
    fn read() -> Result<MachineProcessorTime> {
        let text = std::fs::read_to_string("/proc/stat")?;
        let values: Vec<u64> = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("cpu "))
            .context("/proc/stat: no cpu line")?
            .split_whitespace()
            .filter_map(|value| value.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal...: idle and
        // iowait are the idle ones.
        let total: u64 = values.iter().sum();
        let idle = values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
        Ok(MachineProcessorTime {
            busy: total - idle,
            total,
        })
    }

    fn busy_since(&self, before: &MachineProcessorTime) -> f64 {
        let total = self.total.saturating_sub(before.total);
        if total == 0 {
            return 0.0;
        }
        self.busy.saturating_sub(before.busy) as f64 / total as f64
    }
}

fn raise_open_file_limit(wanted: u64) -> Result<()> {
    let limit = libc::rlimit {
        rlim_cur: wanted,
        rlim_max: wanted,
    };
    // SAFETY: setrlimit and getrlimit read and write the structure given.
    unsafe {
        if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
            return Ok(());
        }
        // Without CAP_SYS_RESOURCE (outside the lab): as far as allowed.
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                return Ok(());
            }
        }
    }
    Err(std::io::Error::last_os_error()).context("cannot raise RLIMIT_NOFILE")
}

/// The last lines of a log file, for an error.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(servers: usize, closed: usize) -> Settings {
        Settings {
            servers,
            settle: 0,
            window: 0,
            rounds: 1,
            resettle: 0,
            closed,
            tcp_check: "half-open".to_owned(),
        }
    }

    #[test]
    fn checks_are_connections_plus_half_open_requests_reset() {
        // Shortened from a guest's /proc/net/snmp and /proc/net/netstat.
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
            Tcp: RtoAlgorithm ActiveOpens PassiveOpens AttemptFails OutRsts\n\
            Tcp: 1 120 7 3 45\n";
        let netstat = "TcpExt: SyncookiesSent EmbryonicRsts PruneCalled\n\
            TcpExt: 0 40 2\n\
            IpExt: InNoRoutes EmbryonicRsts\nIpExt: 0 99\n";
        let counters = TcpCounters::parse(snmp, netstat).unwrap();
        assert_eq!(
            counters,
            TcpCounters {
                active_opens: 120,
                embryonic_resets: 40,
                resets_sent: 45,
            }
        );
        assert_eq!(counters.checks(), 160);
        assert!(TcpCounters::parse(snmp, "IpExt: A\nIpExt: 1\n").is_err());
    }

    #[test]
    fn every_real_server_has_its_own_address() {
        let addresses: HashSet<SocketAddr> = (0..62_500).map(real_server).collect();
        assert_eq!(addresses.len(), 62_500);
        assert!(addresses.iter().all(|address| address.ip().is_loopback()));
    }

    #[test]
    fn closed_listeners_are_distinct_existing_servers() {
        for (servers, closed) in [(10, 20), (200, 5), (10_000, 20)] {
            let indexes: HashSet<usize> = closed_indexes(&settings(servers, closed))
                .into_iter()
                .collect();
            assert_eq!(indexes.len(), closed.min(servers));
            assert!(indexes.iter().all(|index| *index < servers));
        }
    }

    #[test]
    fn the_configuration_has_every_real_server_once() {
        let text = generate(&settings(200, 5));
        assert_eq!(text.matches("virtual_server ").count(), 20);
        for index in 0..200 {
            let server = real_server(index);
            let line = format!("real_server {} {} {{", server.ip(), server.port());
            assert_eq!(text.matches(&line).count(), 1, "{line}");
        }
    }

    fn window(tool: usize, cpu: f64, checks: u64) -> Window {
        Window {
            tool,
            seconds: 30.0,
            checks,
            half_open: 0,
            resets_sent: 0,
            accepted: checks,
            cpu,
            user: cpu / 10.0,
            other_cpu: 0.0,
            guest_busy: 1.0,
            downs: 0,
            began_at: 0.0,
            ended_at: 30.0,
        }
    }

    #[test]
    fn windows_alternate_with_keepalived_either_side_of_each_of_nanny() {
        for rounds in [1, 3, 4] {
            let settings = Settings {
                rounds,
                ..settings(10, 1)
            };
            let tools: Vec<usize> = (0..window_count(&settings)).map(window_tool).collect();
            assert_eq!(tools.first(), Some(&KEEPALIVED_TOOL));
            assert_eq!(tools.last(), Some(&KEEPALIVED_TOOL));
            assert!(tools.windows(2).all(|pair| pair[0] != pair[1]), "{tools:?}");
            let nanny = tools.iter().filter(|tool| **tool == NANNY_TOOL).count();
            assert_eq!(nanny as u64, rounds);
        }
    }

    #[test]
    fn each_nanny_window_is_compared_with_the_mean_of_its_neighbours() {
        // keepalived 10, 14, 10 s per 10,000 checks; nanny 5 and 6.
        let windows = [
            window(KEEPALIVED_TOOL, 10.0, 10_000),
            window(NANNY_TOOL, 2.5, 5_000),
            window(KEEPALIVED_TOOL, 7.0, 5_000),
            window(NANNY_TOOL, 6.0, 10_000),
            window(KEEPALIVED_TOOL, 10.0, 10_000),
        ];
        let shares = bracketed_shares(&windows);
        assert_eq!(shares.len(), 2);
        assert_eq!(shares[0].0, 1);
        assert!((shares[0].1 - 5.0 / 12.0).abs() < 1e-9, "{shares:?}");
        assert_eq!(shares[1].0, 3);
        assert!((shares[1].1 - 0.5).abs() < 1e-9, "{shares:?}");
        let pooled = Pooled::of(&windows, KEEPALIVED_TOOL);
        assert_eq!(pooled.checks, 25_000);
        assert!((per_10k_checks(pooled.cpu, pooled.checks) - 10.8).abs() < 1e-9);
        assert_eq!(pooled.per_window, vec![10.0, 14.0, 10.0]);
    }

    #[test]
    fn the_verdict_waits_for_every_window_to_agree() {
        assert_eq!(share_verdict(&[0.41, 0.5, 0.45], 0.5), "met");
        assert_eq!(share_verdict(&[0.51, 0.7], 0.5), "NOT met");
        assert!(share_verdict(&[0.45, 0.55], 0.5).starts_with("undecided"));
        assert!(share_verdict(&[0.45, f64::NAN], 0.5).starts_with("undecided"));
        assert!(share_verdict(&[], 0.5).starts_with("undecided"));
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn a_stopped_process_reads_as_stopped_until_continued() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let wait_for = |wanted: bool| {
            let limit = Instant::now() + Duration::from_secs(10);
            while (process_state(pid).unwrap() == 'T') != wanted {
                assert!(Instant::now() < limit, "stopped should be {wanted}");
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        signal(pid, libc::SIGSTOP).unwrap();
        wait_for(true);
        signal(pid, libc::SIGCONT).unwrap();
        wait_for(false);
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn host_load_is_what_qemu_did_not_use_between_the_samples_within_the_window() {
        // SAFETY: sysconf has no preconditions.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
        let sample = |at: f64, busy: u64, qemu: u64| HostSample {
            at,
            busy: busy * ticks,
            qemu: qemu * ticks,
        };
        let samples = [
            sample(99.0, 0, 1),
            sample(100.0, 10, 5),
            sample(110.0, 30, 20),
            sample(120.0, 50, 35),
            sample(121.0, 60, 36),
        ];
        let (others, qemu) = host_load(&samples, 99.5, 120.5).unwrap();
        assert!((others - 0.5).abs() < 1e-9, "{others}");
        assert!((qemu - 1.5).abs() < 1e-9, "{qemu}");
        assert!(host_load(&samples, 130.0, 140.0).is_none());
        // Before QEMU started, nothing to tell apart.
        assert!(host_load(&[sample(1.0, 1, 0), sample(2.0, 2, 0)], 0.0, 3.0).is_none());
    }

    #[test]
    fn a_listed_window_reads_back() {
        let mut window = window(NANNY_TOOL, 12.5, 40_000);
        window.began_at = 1_700_000_000.25;
        window.ended_at = 1_700_000_030.5;
        window.guest_busy = 0.875;
        let listed = ListedWindow::parse(&ListedWindow::line(4, 2, &window)).unwrap();
        assert_eq!(listed.number, 4);
        assert_eq!(listed.guest_processors, 2);
        assert_eq!(listed.window.tool, NANNY_TOOL);
        assert_eq!(listed.window.checks, 40_000);
        assert!((listed.window.cpu - 12.5).abs() < 1e-9);
        assert!((listed.window.guest_busy - 0.875).abs() < 1e-9);
        assert!((listed.window.seconds - 30.25).abs() < 1e-6);
        assert!(ListedWindow::parse("4\tnanny\t1").is_none());
        assert!(ListedWindow::parse("4\tsomething\t1\t2\t3\t4\t0.5\t2").is_none());
    }

    #[test]
    fn a_child_is_found_by_its_command_name() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let limit = Instant::now() + Duration::from_secs(10);
        // Its name is sleep's once it has executed it.
        while find_child("sleep") != Some(child.id()) {
            assert!(Instant::now() < limit, "sleep not found");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(find_child("no-such-program"), None);
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn servers_come_ten_to_a_virtual_server() {
        assert!(parse_servers("10000").is_ok());
        assert!(parse_servers("15").is_err());
        assert!(parse_servers("0").is_err());
    }
}
