//! `pulse -f keepalived.conf`: the daemon. It runs the configuration's
//! health checkers (nanny) and the [reconciler](crate::lvs::task) that
//! keeps the kernel's IPVS table what the configuration and the checks
//! say, with keepalived's conventions around them:
//!
//! - It forks into the background unless `-n`; the command then exits once
//!   the daemon has programmed the table (0), or with the status the
//!   daemon failed with, so scripts starting it learn of failures.
//! - A pid file (`-p`, default [`process::DEFAULT_PID_FILE`]) refuses a
//!   second pulse on the same file.
//! - systemd's notify protocol when `NOTIFY_SOCKET` is set: `READY=1` once
//!   the start pass is applied, `RELOADING=1` and `READY=1` around each
//!   reload, `STOPPING=1`, and `STATUS=` lines saying what happened.
//! - SIGHUP reloads: the new file is loaded and checked first; with errors
//!   they are all logged and the running configuration stays, the kernel
//!   untouched; otherwise the reconciler applies only the difference and
//!   nanny keeps the state of the checks that did not change.
//! - SIGTERM and SIGINT stop: VRRP first (priority 0 adverts, addresses
//!   removed), then pulse's services are withdrawn as keepalived withdraws
//!   its own, unless `--dont-release-ipvs`, which leaves the table for the
//!   next pulse to adopt.
//! - Its two parts run as keepalived's children do: the checkers and IPVS
//!   where the configuration has a `virtual_server` (and not `-P`), the
//!   `vrrp_instance` blocks in the [VRRP task](crate::vrrp::task) where it
//!   has one (and not `-C`). A configuration without virtual servers never
//!   touches IPVS, so VRRP alone runs on a kernel without it; one with
//!   virtual servers where the kernel has no IPVS does not start. A reload
//!   starts a part the new configuration calls for, keeps the state of
//!   VRRP instances that did not change and restarts the others.
//!
//! One `select!` loop owns the signals and the reloads; the LVS part
//! ([`Lvs`]: nanny, the reconciler, the script runner) and VRRP run as
//! tasks of their own.

pub mod logging;
pub mod priorities;
pub mod process;
pub mod reload_timer;

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use fulcrum_config::diagnostic::Severity;
use fulcrum_config::lexer::Options;
use fulcrum_config::model as config;
use fulcrum_scripts::review::Part;
use ipvs::Client;
use nanny::scheduler::{Handle, Start};
use nanny::spec::Plan;
use sd_notify::NotifyState;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::{mpsc, oneshot, watch};

use crate::cli::Arguments;
use crate::exit;
use crate::lvs::alerts::CheckerAlerts;
use crate::lvs::report::LvsReport;
use crate::lvs::task::{
    self as reconciler, Applied, Channels, PassOutcome, Reconciler, Running, StopMode,
};
use crate::metrics::{CheckDurations, Reloads};
use crate::vrrp::netlink_events::AddressMonitor;
use crate::vrrp::report::Report;
use crate::vrrp::{Vrrp, VrrpError};
use process::{Detached, PidFile};

/// What the daemon needs from the command line.
#[derive(Debug, Clone)]
pub struct Settings {
    pub config_file: PathBuf,
    pub options: Options,
    pub pid_file: PathBuf,
    pub stop_mode: StopMode,
    /// The logs reach standard error already.
    pub logs_on_stderr: bool,
    /// `-D`: keepalived's detailed log messages.
    pub detail: bool,
    /// The checkers and IPVS may run (not `-P` alone), where the
    /// configuration has virtual servers.
    pub checkers: bool,
    /// VRRP may run (not `-C` alone), where the configuration has
    /// instances.
    pub vrrp: bool,
    /// `-V`: VRRP leaves its virtual state when it stops.
    pub keep_vrrp_state: bool,
}

/// keepalived's file creation mask without `umask` (lib/utils.c
/// `umask_val`: `S_IXUSR | S_IRWXG | S_IRWXO`).
const DEFAULT_UMASK: u32 = 0o177;

/// Runs the daemon; returns the process's exit status.
pub fn run(arguments: &Arguments) -> i32 {
    let logs_on_stderr = logging::init(logging::Destinations {
        console: arguments.log_console,
        syslog: !arguments.no_syslog,
        detail: arguments.log_detail,
    });
    for option in &arguments.not_yet_supported {
        tracing::warn!("option {option} is accepted but not acted on yet");
    }
    let settings = Settings {
        config_file: arguments.config_file.clone(),
        options: arguments.reading_options(),
        pid_file: arguments
            .pid_file
            .clone()
            .unwrap_or_else(|| PathBuf::from(process::DEFAULT_PID_FILE)),
        stop_mode: if arguments.dont_release_ipvs {
            StopMode::Keep
        } else {
            StopMode::Clear
        },
        logs_on_stderr,
        detail: arguments.log_detail,
        // As keepalived: `-P` and `-C` each select their part, both
        // together or neither run everything.
        checkers: arguments.check_only || !arguments.vrrp_only,
        vrrp: arguments.vrrp_only || !arguments.check_only,
        keep_vrrp_state: arguments.dont_release_vrrp,
    };
    tracing::info!(
        "starting pulse {} with {}",
        env!("CARGO_PKG_VERSION"),
        settings.config_file.display()
    );
    // Before forking, so that a configuration or a kernel that cannot work
    // is reported to whoever started pulse, with a status.
    let (configuration, last_read) = load(&settings, true, None);
    let Some(configuration) = configuration else {
        return exit::ERRORS;
    };
    if let Err(error) = nanny::raise_open_file_limit() {
        tracing::warn!("cannot raise the open file limit: {error}");
    }
    if arguments.tcp_check_half_open {
        // Logs the mode in effect (connect when raw sockets are refused).
        nanny::driver::tcp::set_check_mode(nanny::driver::tcp::CheckMode::HalfOpen);
    }
    // Bound before forking, so that a taken port fails the start with a
    // status, as a configuration that cannot work does.
    let metrics = match fulcrum_metrics::bind_if_asked(arguments.metrics) {
        Ok(listener) => listener,
        Err(why) => {
            tracing::error!("{why}");
            return exit::FATAL;
        }
    };
    // `net_namespace`: everything from here on runs in that namespace
    // (the threads started after take this one's), as keepalived moves
    // itself there at its start; the metrics listener stays where pulse
    // was started, reachable by a scraper outside.
    if let Some(name) = &configuration.net_namespace {
        let path = fulcrum_netns::path(name);
        let Some(namespace) = fulcrum_netns::open(name) else {
            tracing::error!("Failed to open {}", path.display());
            return exit::FATAL;
        };
        if let Err(error) = fulcrum_netns::enter(&namespace) {
            tracing::error!("setns() failed with error {error}");
            return exit::FATAL;
        }
        tracing::info!("running in network namespace {name}");
    }
    let parts = Parts::of(&settings, &configuration);
    // Only a configuration with virtual servers reaches for IPVS: asking
    // the kernel for its IPVS family loads ip_vs (Linux 5.16 and later),
    // and most keepalived configurations run VRRP alone.
    let client = if parts.lvs {
        match crate::ipvs_start::connect() {
            Ok(client) => Some(client),
            Err(why) => {
                // keepalived's checker process fails there, and keepalived
                // ends with it, VRRP included (status 1; pulse's is 3).
                tracing::error!("{why}");
                return exit::FATAL;
            }
        }
    } else {
        None
    };
    // keepalived's umask: the command line's, else the configuration's,
    // else 0177 (files made by pulse and its scripts: owner only).
    let mask = match (arguments.umask, configuration.global.umask) {
        (Some(bits), Some(_)) => {
            tracing::info!("umask command line option specified, ignoring config option");
            bits
        }
        (Some(bits), None) | (None, Some(bits)) => bits,
        (None, None) => DEFAULT_UMASK,
    };
    // SAFETY: umask has no preconditions.
    unsafe {
        libc::umask(mask as libc::mode_t);
    }
    let mut detached = if arguments.dont_fork {
        Detached::foreground()
    } else {
        match process::detach(arguments.log_console) {
            Ok(detached) => detached,
            Err(error) => {
                tracing::error!("cannot fork into the background: {error}");
                return exit::FATAL;
            }
        }
    };
    let _pid_file = match PidFile::create(&settings.pid_file) {
        Ok(pid_file) => pid_file,
        Err(why) => {
            tracing::error!("{why}");
            detached.started(exit::FATAL as u8);
            return exit::FATAL;
        }
    };
    // Once the pid file is ours: the socket beside it is then ours too.
    // Without it pulse runs on; only --status cannot ask.
    let mut status_socket = crate::status::StatusSocket::bind(&settings.pid_file)
        .inspect_err(|error| {
            tracing::warn!(
                "cannot listen on {} for --status: {error}",
                crate::status::socket_path(&settings.pid_file).display()
            )
        })
        .ok();
    let status_listener = status_socket
        .as_mut()
        .and_then(|socket| socket.take_listener());
    // Before the runtime's threads, which take this thread's nice value.
    let parts = Parts::of(&settings, &configuration);
    priorities::Priorities::of(&configuration, parts.vrrp, parts.lvs).apply();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!("cannot start the runtime: {error}");
            detached.started(exit::FATAL as u8);
            return exit::FATAL;
        }
    };
    let status = runtime.block_on(serve(
        settings,
        configuration,
        last_read,
        client,
        Listeners {
            metrics,
            status: status_listener,
        },
        &mut detached,
    ));
    detached.started(status as u8);
    // Scripts still running are the system's now, as keepalived leaves
    // its notify scripts.
    runtime.shutdown_background();
    status
}

/// Which parts of pulse a configuration runs, as keepalived decides which
/// children to start (main.c `running_checker`, `running_vrrp`): the LVS
/// part (checkers and IPVS) where the command line allows it (`-C`, or not
/// `-P`) and the configuration has a `virtual_server`; VRRP where the
/// command line allows it (`-P`, or not `-C`) and it has a
/// `vrrp_instance` or a `static_*` block. A part that a reload calls for
/// starts then, as keepalived starts a child at SIGHUP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Parts {
    lvs: bool,
    vrrp: bool,
}

impl Parts {
    fn of(settings: &Settings, configuration: &config::Config) -> Parts {
        Parts {
            lvs: settings.checkers && !configuration.virtual_servers.is_empty(),
            // keepalived's VRRP process runs for static blocks alone too
            // (vrrp_parser.c sets `have_vrrp_config` for each).
            vrrp: settings.vrrp
                && !(configuration.vrrp_instances.is_empty()
                    && configuration.static_addresses.is_empty()
                    && configuration.static_routes.is_empty()
                    && configuration.static_rules.is_empty()),
        }
    }
}

/// Loads and checks the configuration; logs every problem. `None` if it
/// has errors. At start, the rendered problems (with their source lines)
/// also go to standard error, where whoever started pulse looks. Given the
/// last load (`previous`), reads only the block an edit is in where
/// [`fulcrum_config::load_again`] can; returns this load to be given the
/// next time, when it can serve so.
fn load(
    settings: &Settings,
    at_start: bool,
    previous: Option<fulcrum_config::Loaded>,
) -> (Option<Arc<config::Config>>, Option<fulcrum_config::Loaded>) {
    let started = std::time::Instant::now();
    let (mut loaded, how) = match previous {
        Some(previous) => {
            fulcrum_config::load_again(previous, &settings.config_file, &settings.options)
        }
        None => (
            fulcrum_config::load_on_two_threads(&settings.config_file, &settings.options),
            fulcrum_config::Reread::Whole,
        ),
    };
    let read = started.elapsed();
    let errors = loaded.diagnostics.count(Severity::Error);
    let warnings = loaded.diagnostics.count(Severity::Warning);
    let mut items: Vec<_> = loaded.diagnostics.items.iter().collect();
    items.sort_by_key(|item| (item.span.file, item.span.line, item.span.start));
    for diagnostic in items {
        let single = fulcrum_config::diagnostic::Diagnostics {
            items: vec![diagnostic.clone()],
        };
        let text = single.render(&loaded.sources);
        let text = text.trim_end();
        match diagnostic.severity {
            Severity::Error => tracing::error!("{text}"),
            Severity::Warning => tracing::warn!("{text}"),
            Severity::Note => tracing::debug!("{text}"),
        }
    }
    if errors > 0 {
        let what = if at_start {
            "not starting"
        } else {
            "keeping the running configuration; the kernel is untouched"
        };
        tracing::error!(
            "{}: {}; {what}",
            settings.config_file.display(),
            crate::summary(errors, warnings)
        );
        if at_start && !settings.logs_on_stderr {
            // The log may be far away (syslog): whoever started pulse sees
            // the problems here too.
            // Ignoring a failure: stderr may be closed, and eprint! would
            // panic.
            let _ = write!(
                std::io::stderr(),
                "{}",
                loaded.diagnostics.render(&loaded.sources)
            );
        }
        return (None, kept(loaded));
    }
    // The model is changed below (scripts reviewed): a load kept for the
    // next keeps its own copy.
    let (mut configuration, next) = if loaded.can_read_one_block_again() {
        (loaded.config.clone(), Some(loaded))
    } else {
        (std::mem::take(&mut loaded.config), None)
    };
    if !at_start {
        // Run once, at start: keepalived does not check it again either.
        configuration.global.startup_script = None;
    }
    // The scripts of the parts that will run, reviewed as keepalived's
    // processes review theirs: what may not run is taken out.
    let parts = Parts::of(settings, &configuration);
    let reviewed: Vec<Part> = [
        (true, Part::StartStop),
        (parts.lvs, Part::Checkers),
        (parts.vrrp, Part::Vrrp),
    ]
    .into_iter()
    .filter_map(|(runs, part)| runs.then_some(part))
    .collect();
    crate::scripts::log(&fulcrum_scripts::review::review_here(
        &mut configuration,
        &reviewed,
    ));
    tracing::debug!(
        "{}: read in {:.1} ms ({}), its scripts reviewed in {:.1} ms",
        settings.config_file.display(),
        read.as_secs_f64() * 1000.0,
        match how {
            fulcrum_config::Reread::Unchanged => "unchanged",
            fulcrum_config::Reread::OneBlock => "one virtual server block read again",
            fulcrum_config::Reread::Whole => "whole",
        },
        (started.elapsed() - read).as_secs_f64() * 1000.0
    );
    (Some(Arc::new(configuration)), next)
}

/// A load kept for the next one, if it can serve it.
fn kept(loaded: fulcrum_config::Loaded) -> Option<fulcrum_config::Loaded> {
    loaded.can_read_one_block_again().then_some(loaded)
}

/// Whether a virtual server of `configuration` has `ha_suspend`, so that
/// the checks need to know the host's addresses.
fn wants_addresses(configuration: &config::Config) -> bool {
    configuration
        .virtual_servers
        .iter()
        .any(|virtual_server| virtual_server.ha_suspend)
}

/// The running VRRP task and the way to stop it.
struct RunningVrrp {
    task: tokio::task::JoinHandle<()>,
    stop: oneshot::Sender<()>,
    reloads: mpsc::Sender<Arc<config::Config>>,
}

impl RunningVrrp {
    /// Starts VRRP for the configuration's `vrrp_instance` blocks.
    /// Its [`Report`] goes to `report`.
    async fn start(
        configuration: &Arc<config::Config>,
        report: &watch::Sender<Arc<Report>>,
        keep_state: bool,
    ) -> Result<RunningVrrp, VrrpError> {
        let mut vrrp = Vrrp::prepare(configuration.clone(), report.clone()).await?;
        if keep_state {
            vrrp.keep_state_at_stop();
        }
        tracing::info!("VRRP: {} instance(s)", vrrp.len());
        let (stop, stopped) = oneshot::channel();
        let (reloads, reloaded) = mpsc::channel(4);
        Ok(RunningVrrp {
            task: tokio::spawn(vrrp.run(stopped, reloaded)),
            stop,
            reloads,
        })
    }

    /// Stops every instance (priority 0 adverts, addresses removed, the
    /// sync daemon following) and waits until done.
    async fn stop(self) {
        let _ = self.stop.send(());
        if let Err(error) = self.task.await {
            tracing::error!("VRRP failed: {error}");
        }
    }
}

/// The LVS part running: nanny's checkers, the reconciler keeping the IPVS
/// table (which takes nanny's verdicts straight from it), the runner of
/// their scripts, and, for `ha_suspend`, this host's addresses followed.
/// Each runs as its own task; the configuration they run is the one value
/// of [`Lvs::running`].
struct Lvs {
    checkers: Handle,
    /// The checkers' SMTP alerts, told of each configuration.
    alerts: Arc<CheckerAlerts>,
    /// The configuration running: a new value is a reload.
    running: watch::Sender<Running>,
    /// Whether it has `ha_suspend`: derived once per configuration, not at
    /// every turn of the loop.
    watch_addresses: bool,
    /// The last generation whose pass is over.
    applied: watch::Receiver<Applied>,
    /// Opens once a configuration asks for it (`ha_suspend`).
    address_monitor: Option<AddressMonitor>,
    /// Opens it: at once, then a second after a failure.
    open_retry: tokio::time::Interval,
    stop: oneshot::Sender<StopMode>,
    reconciler: tokio::task::JoinHandle<Reconciler>,
    scripts: tokio::task::JoinHandle<()>,
    /// The notify FIFOs: the global one and `lvs_notify_fifo`.
    fifos: crate::notify_fifo::NotifyFifos,
    /// The generation whose pass the daemon waits for: the start's, then
    /// a reload's.
    awaited: Option<u64>,
}

/// What the LVS part tells the daemon's loop.
enum LvsEvent {
    /// The pass of the awaited generation is over: the start's, or a
    /// reload's.
    Applied(PassOutcome),
    /// The checkers or the reconciler ended: pulse stops.
    Ended,
}

impl Lvs {
    /// What it knows of the real servers and its passes goes to
    /// `published`, and how long the checks take.
    fn start(configuration: Arc<config::Config>, client: Client, published: &Published) -> Lvs {
        let watch_addresses = wants_addresses(&configuration);
        let (running, configurations) = watch::channel(Running {
            generation: 1,
            configuration: configuration.clone(),
        });
        let (applied_sender, applied) = watch::channel(Applied::default());
        let (stop, stop_receiver) = oneshot::channel();
        let (notifications, notifications_receiver) = mpsc::channel(1024);
        // As keepalived's checker process opens them, before its checks.
        let global = &configuration.global;
        let fifos = crate::notify_fifo::NotifyFifos::open(
            global,
            global.fifos.lvs.as_ref(),
            global.fifo_scripts.lvs.as_ref(),
            "lvs_",
        );
        // nanny begins once the start pass is applied, as keepalived's
        // checker process registers its checkers after programming IPVS
        // (`init_services`): the start needs no verdict, and nanny's plan
        // and first verdicts (one per real server without checkers) would
        // take the processors from the start's batch. Told this host's
        // addresses whenever a configuration has `ha_suspend`: until then,
        // such checks wait.
        let mut started = applied.clone();
        let alerts = Arc::new(CheckerAlerts::new(published.check_durations.clone()));
        let mut checkers = Handle::spawn_following_addresses_after(
            async move {
                // Also when the reconciler ended (pulse stops then).
                let _ = started.wait_for(|applied| applied.generation >= 1).await;
            },
            {
                let configuration = configuration.clone();
                let alerts = alerts.clone();
                move || {
                    alerts.configure(&configuration);
                    Plan::from_config(&configuration)
                }
            },
            Start::Warmup,
            Some(alerts.clone() as Arc<dyn nanny::scheduler::AttemptObserver>),
        );
        let reconciler = tokio::spawn(reconciler::run(
            Reconciler::new(client, configuration.clone()).alerting(alerts.clone()),
            Channels {
                states: checkers.take_events().expect("a new handle has its events"),
                configurations,
                applied: applied_sender,
                stop: stop_receiver,
                notifications,
                fifo: fifos.lines(),
                report: published.lvs.clone(),
            },
        ));
        let scripts = tokio::spawn(crate::scripts::run(notifications_receiver));
        let mut open_retry = tokio::time::interval(std::time::Duration::from_secs(1));
        open_retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Lvs {
            alerts,
            checkers,
            running,
            watch_addresses,
            applied,
            address_monitor: None,
            open_retry,
            stop,
            reconciler,
            scripts,
            fifos,
            awaited: Some(1),
        }
    }

    /// Hands a reloaded configuration to the checkers and the reconciler;
    /// [`Lvs::next`] then says when its pass is over.
    async fn reload(&mut self, configuration: Arc<config::Config>) {
        // keepalived's checker process closes its notify FIFOs at a
        // reload and opens them again with the new configuration.
        let global = &configuration.global;
        self.fifos
            .reopen(
                global,
                global.fifos.lvs.as_ref(),
                global.fifo_scripts.lvs.as_ref(),
                "lvs_",
            )
            .await;
        self.watch_addresses = wants_addresses(&configuration);
        if !self.watch_addresses && self.address_monitor.take().is_some() {
            // Not followed from here on: a later configuration with
            // `ha_suspend` waits for a new reading.
            self.checkers.local_addresses(None).await;
        }
        // The reconciler first: it plans the new table while the checkers'
        // plan is built and handed over (each is a walk of the whole
        // configuration, and neither needs the other).
        let generation = self.running.borrow().generation + 1;
        self.running.send_replace(Running {
            generation,
            configuration: configuration.clone(),
        });
        self.awaited = Some(generation);
        let alerts = self.alerts.clone();
        let plan = tokio::task::spawn_blocking(move || {
            alerts.configure(&configuration);
            Plan::from_config(&configuration)
        })
        .await
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()));
        self.checkers.reload(plan).await;
    }

    /// Carries this host's addresses to the checkers, until something the
    /// daemon must act on. Cancel-safe.
    async fn next(&mut self) -> LvsEvent {
        let Lvs {
            checkers,
            applied,
            address_monitor,
            open_retry,
            awaited,
            watch_addresses,
            ..
        } = self;
        let watch_addresses = *watch_addresses;
        loop {
            tokio::select! {
                changed = applied.changed() => {
                    // The reconciler's end closes the channel.
                    if changed.is_err() {
                        return LvsEvent::Ended;
                    }
                    let applied = applied.borrow_and_update();
                    if let (Some(generation), Some(outcome)) = (*awaited, &applied.outcome)
                        && applied.generation >= generation
                    {
                        *awaited = None;
                        return LvsEvent::Applied(outcome.clone());
                    }
                }
                changed = async { address_monitor.as_mut().expect("guarded").changed().await },
                    if watch_addresses && address_monitor.is_some() =>
                {
                    match changed {
                        Some(addresses) => checkers.local_addresses(Some(addresses)).await,
                        None => {
                            tracing::warn!(
                                "rtnetlink's address events stopped or overflowed: reading the \
                                 addresses again"
                            );
                            *address_monitor = None;
                            // What is known may be stale: the checks with
                            // `ha_suspend` wait for the new reading.
                            checkers.local_addresses(None).await;
                        }
                    }
                }
                _ = open_retry.tick(), if watch_addresses && address_monitor.is_none() => {
                    match AddressMonitor::open().await {
                        Ok(monitor) => {
                            checkers.local_addresses(Some(monitor.addresses())).await;
                            *address_monitor = Some(monitor);
                        }
                        Err(error) => {
                            tracing::warn!("cannot follow this host's addresses: {error}")
                        }
                    }
                }
            }
        }
    }

    /// The checks first, so that no health change reaches a table being
    /// withdrawn; then the reconciler leaves the table as `stop_mode`
    /// says; then the scripts it asked for are started. Whether all ended
    /// well.
    async fn stop(self, stop_mode: StopMode) -> bool {
        // keepalived's checker process sends SIGTERM to its scripts, the
        // FIFOs' among them, before it clears the table.
        self.fifos.terminate_scripts();
        self.checkers.shutdown().await;
        if stop_mode == StopMode::Keep {
            tracing::info!("leaving the IPVS table as it is (--dont-release-ipvs)");
        }
        let _ = self.stop.send(stop_mode);
        drop(self.running);
        let ended = self.reconciler.await;
        // The reconciler's end dropped its lines: closed last, as
        // keepalived's checker_terminate_phase2.
        self.fifos.close().await;
        if let Err(error) = ended {
            tracing::error!("the reconciler failed: {error}");
            return false;
        }
        // The reconciler's end closed the notifications: the runner has
        // started every script it was given.
        let _ = self.scripts.await;
        true
    }
}

/// The start of a reload: systemd told, the file loaded and checked on the
/// blocking pool (every problem logged); `None` if it has errors.
async fn reload(
    settings: &Settings,
    last_read: &mut Option<fulcrum_config::Loaded>,
) -> Option<Arc<config::Config>> {
    tell_systemd(&[
        NotifyState::Reloading,
        NotifyState::monotonic_usec_now().expect("CLOCK_MONOTONIC"),
        NotifyState::Status("reloading the configuration"),
    ]);
    tracing::info!("reloading {}", settings.config_file.display());
    let settings = settings.clone();
    let previous = last_read.take();
    let (configuration, read) =
        tokio::task::spawn_blocking(move || load(&settings, false, previous))
            .await
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()));
    *last_read = read;
    configuration
}

/// SIGHUP, SIGTERM and SIGINT, as streams; `None` (logged) if the
/// runtime cannot listen for them.
fn signals() -> Option<(Signal, Signal, Signal)> {
    // SIGUSR2 asks VRRP for its statistics (the VRRP task listens); a
    // handler installed here, never unregistered, keeps its default
    // action (ending the process) away when VRRP does not run.
    let _ = signal(SignalKind::user_defined2());
    // SIGUSR1 likewise: VRRP writes keepalived.data. Without VRRP,
    // keepalived writes no keepalived.data either (its parent writes its
    // global definitions to keepalived_parent.data, which pulse does not).
    let _ = signal(SignalKind::user_defined1());
    // SIGRTMIN+2 (keepalived's SIGJSON) likewise: VRRP writes
    // keepalived.json; without VRRP, keepalived writes nothing either.
    if let Some(json) = crate::signals::number("JSON") {
        let _ = signal(SignalKind::from_raw(json));
    }
    // SIGRTMAX-1 (keepalived's STATS_CLEAR) likewise: VRRP clears its
    // counters.
    if let Some(clear) = crate::signals::number("STATS_CLEAR") {
        let _ = signal(SignalKind::from_raw(clear));
    }
    match (
        signal(SignalKind::hangup()),
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(hangup), Ok(terminate), Ok(interrupt)) => Some((hangup, terminate, interrupt)),
        _ => {
            tracing::error!("cannot listen for signals");
            None
        }
    }
}

/// Sends systemd a notification if it asked for them (`NOTIFY_SOCKET`).
pub(crate) fn tell_systemd(states: &[NotifyState<'_>]) {
    if std::env::var_os("NOTIFY_SOCKET").is_some()
        && let Err(error) = sd_notify::notify(false, states)
    {
        tracing::warn!("cannot notify the service manager: {error}");
    }
}

fn pass_status(what: &str, outcome: &PassOutcome) -> String {
    match outcome {
        Ok(0) => format!("{what}: the IPVS table was already as configured"),
        Ok(1) => format!("{what}: 1 IPVS change applied"),
        Ok(count) => format!("{what}: {count} IPVS changes applied"),
        Err(error) => format!("{what}: {error}"),
    }
}

/// Where the daemon's parts publish what /metrics and --status read.
struct Published {
    vrrp: watch::Sender<Arc<Report>>,
    lvs: watch::Sender<LvsReport>,
    /// The checks' durations, observed by nanny as they finish.
    check_durations: Arc<CheckDurations>,
}

/// What the daemon serves besides its parts, bound before the runtime
/// starts.
struct Listeners {
    /// `--metrics`.
    metrics: Option<std::net::TcpListener>,
    /// `--status`, beside the pid file.
    status: Option<std::os::unix::net::UnixListener>,
}

/// Runs the parts the configuration calls for ([`Parts`]) until SIGTERM or
/// SIGINT; SIGHUP reloads, starting a part the new configuration calls
/// for. With the LVS part, READY waits for its start pass.
async fn serve(
    settings: Settings,
    configuration: Arc<config::Config>,
    // The load the next reload compares its file with.
    mut last_read: Option<fulcrum_config::Loaded>,
    client: Option<Client>,
    listeners: Listeners,
    detached: &mut Detached,
) -> i32 {
    let Some((mut hangup, mut terminate, mut interrupt)) = signals() else {
        return exit::FATAL;
    };
    // What the parts publish, read by /metrics and the dumps.
    let (vrrp_report, vrrp_reports) = watch::channel(Arc::new(Report::default()));
    let check_durations = Arc::new(CheckDurations::default());
    let (reloads, reloads_read) = watch::channel(Reloads::new(SystemTime::now()));
    let (lvs_report, lvs_reports) = watch::channel(LvsReport::default());
    let published = Published {
        vrrp: vrrp_report,
        lvs: lvs_report,
        check_durations: check_durations.clone(),
    };
    let observed = crate::metrics::Observed {
        vrrp: vrrp_reports,
        lvs: lvs_reports,
        reloads: reloads_read,
    };
    // /metrics and --status, served to the end, so that a scrape or a
    // question during the stop is answered.
    let (stop_serving, serving_stopped) = watch::channel(false);
    let mut servers = Vec::new();
    if let Some(listener) = listeners.metrics {
        let registry = crate::metrics::registry(observed.clone(), &check_durations);
        servers.push(tokio::spawn(fulcrum_metrics::serve(
            listener,
            Arc::new(registry),
            serving_stopped.clone(),
        )));
    }
    if let Some(listener) = listeners.status {
        servers.push(tokio::spawn(crate::status::serve(
            listener,
            observed,
            settings.config_file.clone(),
            serving_stopped,
        )));
    }
    // Before anything starts, as keepalived's parent runs it before its
    // children.
    if let Some(script) = &configuration.global.startup_script {
        fulcrum_scripts::run::run_and_wait(
            script,
            "startup",
            configuration
                .global
                .startup_script_timeout
                .unwrap_or(START_STOP_SCRIPT_TIMEOUT),
            settings.detail,
        )
        .await;
    }
    let parts = Parts::of(&settings, &configuration);
    let mut vrrp = None;
    if parts.vrrp {
        match RunningVrrp::start(&configuration, &published.vrrp, settings.keep_vrrp_state).await {
            Ok(running) => vrrp = Some(running),
            Err(error) => {
                tracing::error!("VRRP cannot start: {error}");
                return exit::FATAL;
            }
        }
    }
    let mut lvs = client.map(|client| Lvs::start(configuration.clone(), client, &published));
    if lvs.is_none() {
        if vrrp.is_none() {
            // keepalived's line; it waits for a reload too.
            tracing::warn!("Warning - keepalived has no configuration to run");
        }
        let status = if vrrp.is_some() {
            "VRRP running"
        } else {
            "nothing to run: no virtual_server, no vrrp_instance"
        };
        tell_systemd(&[NotifyState::Ready, NotifyState::Status(status)]);
        detached.started(exit::CLEAN as u8);
    }
    // The pass the daemon waits for, if any: the LVS part's start, or a
    // reload's; further SIGHUPs wait.
    let mut awaited: Option<&'static str> = lvs.as_ref().map(|_| "started");
    let mut reload_pending = false;
    // reload_time_file: its follower, started again after each reload
    // with the settings then in force.
    let (timer_reloads, mut timed_reloads) = mpsc::channel(1);
    let timer_settings = |configuration: &config::Config| {
        let global = &configuration.global;
        global
            .reload_time_file
            .as_ref()
            .map(|path| (PathBuf::from(path), global.reload_repeat))
    };
    let mut reload_timer_settings = timer_settings(&configuration);
    let start_timer = |settings: &Option<(PathBuf, bool)>| {
        settings
            .clone()
            .map(|(path, repeat)| reload_timer::spawn(path, repeat, timer_reloads.clone()))
    };
    let mut reload_timer = start_timer(&reload_timer_settings);
    // The shutdown script of the configuration running at the stop.
    let mut shutdown_script = shutdown_script_of(&configuration);
    drop(configuration);
    let stop_mode = loop {
        if reload_pending && awaited.is_none() {
            reload_pending = false;
            if let Some(timer) = reload_timer.take() {
                timer.abort();
            }
            match self::reload(&settings, &mut last_read).await {
                Some(configuration) => {
                    let next_shutdown = shutdown_script_of(&configuration);
                    let next_timer = timer_settings(&configuration);
                    match apply_reload(&settings, configuration, &mut vrrp, &mut lvs, &published)
                        .await
                    {
                        Ok(lvs_pass) => {
                            reloads.send_modify(|reloads| reloads.record(true, SystemTime::now()));
                            shutdown_script = next_shutdown;
                            reload_timer_settings = next_timer;
                            if lvs_pass {
                                awaited = Some("reloaded");
                            } else {
                                tell_systemd(&[
                                    NotifyState::Ready,
                                    NotifyState::Status("reloaded"),
                                ]);
                            }
                        }
                        Err(why) => {
                            reloads.send_modify(|reloads| reloads.record(false, SystemTime::now()));
                            tracing::error!("{why}; keeping the running configuration");
                            tell_systemd(&[
                                NotifyState::Ready,
                                NotifyState::Status(&format!("reload refused: {why}")),
                            ]);
                        }
                    }
                }
                None => {
                    reloads.send_modify(|reloads| reloads.record(false, SystemTime::now()));
                    tell_systemd(&[
                        NotifyState::Ready,
                        NotifyState::Status(
                            "reload refused: the configuration has errors (see the log)",
                        ),
                    ])
                }
            }
            reload_timer = start_timer(&reload_timer_settings);
        }
        tokio::select! {
            event = async { lvs.as_mut().expect("guarded").next().await }, if lvs.is_some() => {
                match event {
                    LvsEvent::Applied(outcome) => {
                        let what = awaited.take().unwrap_or("applied");
                        let status = pass_status(what, &outcome);
                        tracing::info!("{status}");
                        tell_systemd(&[NotifyState::Ready, NotifyState::Status(&status)]);
                        if what == "started" {
                            detached.started(exit::CLEAN as u8);
                        }
                    }
                    LvsEvent::Ended => break settings.stop_mode,
                }
            }
            _ = hangup.recv() => reload_pending = true,
            Some(()) = timed_reloads.recv() => {
                tracing::info!("Reload time reached: reloading");
                reload_pending = true;
            }
            _ = terminate.recv() => {
                tracing::info!("SIGTERM: stopping");
                break settings.stop_mode;
            }
            _ = interrupt.recv() => {
                tracing::info!("SIGINT: stopping");
                break settings.stop_mode;
            }
        }
    };
    tell_systemd(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
    // VRRP first, as keepalived stops its VRRP process before the
    // checkers: the backup takes the addresses while the services are
    // still here.
    if let Some(vrrp) = vrrp {
        vrrp.stop().await;
    }
    let stopped = match lvs {
        Some(lvs) => lvs.stop(stop_mode).await,
        None => true,
    };
    // After everything, as keepalived's parent runs it once its children
    // are gone.
    if let Some((script, timeout)) = shutdown_script {
        fulcrum_scripts::run::run_and_wait(&script, "shutdown", timeout, settings.detail).await;
    }
    stop_serving.send_replace(true);
    for server in servers {
        let _ = server.await;
    }
    if !stopped {
        return exit::FATAL;
    }
    tracing::info!("stopped");
    exit::CLEAN
}

/// keepalived's default wait for `startup_script` and `shutdown_script`.
const START_STOP_SCRIPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A configuration's `shutdown_script` (reviewed), with how long to wait
/// for it.
fn shutdown_script_of(
    configuration: &config::Config,
) -> Option<(config::Script, std::time::Duration)> {
    let global = &configuration.global;
    let timeout = global
        .shutdown_script_timeout
        .unwrap_or(START_STOP_SCRIPT_TIMEOUT);
    global
        .shutdown_script
        .clone()
        .map(|script| (script, timeout))
}

/// Hands a reloaded configuration to the running parts, starting those it
/// now calls for; whether the LVS part has a pass to wait for. A part that
/// cannot start refuses the whole reload, before anything changes (a new
/// `virtual_server` on a kernel without IPVS: keepalived's checker process
/// would fail, and keepalived with it).
async fn apply_reload(
    settings: &Settings,
    configuration: Arc<config::Config>,
    vrrp: &mut Option<RunningVrrp>,
    lvs: &mut Option<Lvs>,
    published: &Published,
) -> Result<bool, String> {
    let parts = Parts::of(settings, &configuration);
    let client = match (parts.lvs, &lvs) {
        (true, None) => Some(crate::ipvs_start::connect()?),
        _ => None,
    };
    match vrrp {
        Some(running) => {
            let _ = running.reloads.send(configuration.clone()).await;
        }
        None if parts.vrrp => {
            tracing::info!("the reload brings VRRP instances or static blocks: starting VRRP");
            *vrrp = Some(
                RunningVrrp::start(&configuration, &published.vrrp, settings.keep_vrrp_state)
                    .await
                    .map_err(|error| format!("VRRP cannot start: {error}"))?,
            );
        }
        None => {}
    }
    Ok(match (lvs.as_mut(), client) {
        (Some(running), _) => {
            running.reload(configuration).await;
            true
        }
        (None, Some(client)) => {
            tracing::info!("the reload brings virtual servers: starting the checkers and IPVS");
            // Its start pass, awaited like a reload's.
            *lvs = Some(Lvs::start(configuration, client, published));
            true
        }
        (None, None) => false,
    })
}
