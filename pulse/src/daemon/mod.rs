//! `pulse -f keepalived.conf`: the daemon. It runs the configuration's
//! health checkers (nanny) and the [`reconciler`](crate::reconciler) that
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
//! - The `vrrp_instance` blocks run in the [VRRP task](crate::vrrp::task)
//!   unless `-C`; `-P` runs VRRP alone, without IPVS. A reload keeps the
//!   state of instances that did not change and restarts the others.
//!
//! One `select!` loop owns the signals and the plumbing between nanny, the
//! reconciler and the script runner; each of those runs as its own task.

pub mod logging;
pub mod process;

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use fulcrum_config::diagnostic::Severity;
use fulcrum_config::lexer::Options;
use fulcrum_config::model as config;
use ipvs::Client;
use nanny::scheduler::{Handle, Start};
use nanny::spec::Plan;
use sd_notify::NotifyState;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::{mpsc, oneshot};

use crate::cli::Arguments;
use crate::exit;
use crate::reconciler::{self, Channels, PassOutcome, Reconciler, Reload, StopMode};
use crate::vrrp::Vrrp;
use crate::vrrp::netlink_events::AddressMonitor;
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
    /// The checkers and IPVS run (not `-P` alone).
    pub checkers: bool,
    /// VRRP runs (not `-C` alone).
    pub vrrp: bool,
}

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
        options: Options {
            config_id: arguments.config_id.clone(),
            all_config: arguments.all_config,
            random_seed: None,
        },
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
        // As keepalived: `-P` and `-C` each select their part, both
        // together or neither run everything.
        checkers: arguments.check_only || !arguments.vrrp_only,
        vrrp: arguments.vrrp_only || !arguments.check_only,
    };
    tracing::info!(
        "starting pulse {} with {}",
        env!("CARGO_PKG_VERSION"),
        settings.config_file.display()
    );
    // Before forking, so that a configuration or a kernel that cannot work
    // is reported to whoever started pulse, with a status.
    let Some(configuration) = load(&settings, true) else {
        return exit::ERRORS;
    };
    if let Err(error) = nanny::raise_open_file_limit() {
        tracing::warn!("cannot raise the open file limit: {error}");
    }
    if arguments.tcp_check_half_open {
        // Logs the mode in effect (connect when raw sockets are refused).
        nanny::driver::tcp::set_check_mode(nanny::driver::tcp::CheckMode::HalfOpen);
    }
    let client = if settings.checkers {
        match Client::connect() {
            Ok(client) => Some(client),
            Err(ipvs::Error::Unavailable) => {
                tracing::error!(
                    "IPVS is not available: this kernel has no ip_vs module loaded and did not \
                     load it (is the ip_vs module installed? `modprobe ip_vs` says why not; \
                     -P runs VRRP alone)"
                );
                return exit::FATAL;
            }
            Err(error) => {
                tracing::error!("cannot reach the kernel's IPVS: {error}");
                return exit::FATAL;
            }
        }
    } else {
        None
    };
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
    let status = runtime.block_on(async {
        let vrrp = if settings.vrrp {
            match start_vrrp(&configuration).await {
                Ok(vrrp) => vrrp,
                Err(status) => return status,
            }
        } else {
            None
        };
        match client {
            Some(client) => serve(settings, configuration, client, vrrp, &mut detached).await,
            None => serve_vrrp_only(&settings, vrrp, &mut detached).await,
        }
    });
    detached.started(status as u8);
    // Scripts still running are the system's now, as keepalived leaves
    // its notify scripts.
    runtime.shutdown_background();
    status
}

/// Loads and checks the configuration; logs every problem. `None` if it
/// has errors. At start, the rendered problems (with their source lines)
/// also go to standard error, where whoever started pulse looks.
fn load(settings: &Settings, at_start: bool) -> Option<Arc<config::Config>> {
    let loaded = fulcrum_config::load(&settings.config_file, &settings.options);
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
        return None;
    }
    Some(Arc::new(loaded.config))
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
    /// Stops every instance (priority 0 adverts, addresses removed, the
    /// sync daemon following) and waits until done.
    async fn stop(self) {
        let _ = self.stop.send(());
        if let Err(error) = self.task.await {
            tracing::error!("VRRP failed: {error}");
        }
    }
}

/// Starts VRRP for the configuration's `vrrp_instance` blocks, if any; the
/// exit status if it cannot.
async fn start_vrrp(configuration: &Arc<config::Config>) -> Result<Option<RunningVrrp>, i32> {
    if configuration.vrrp_instances.is_empty() {
        return Ok(None);
    }
    match Vrrp::prepare(configuration.clone()).await {
        Ok(vrrp) => {
            tracing::info!("VRRP: {} instance(s)", vrrp.len());
            let (stop, stopped) = oneshot::channel();
            let (reloads, reloaded) = mpsc::channel(4);
            Ok(Some(RunningVrrp {
                task: tokio::spawn(vrrp.run(stopped, reloaded)),
                stop,
                reloads,
            }))
        }
        Err(error) => {
            tracing::error!("VRRP cannot start: {error}");
            Err(exit::FATAL)
        }
    }
}

/// The start of a reload: systemd told, the file loaded and checked on the
/// blocking pool (every problem logged); `None` if it has errors.
async fn reload(settings: &Settings) -> Option<Arc<config::Config>> {
    tell_systemd(&[
        NotifyState::Reloading,
        NotifyState::monotonic_usec_now().expect("CLOCK_MONOTONIC"),
        NotifyState::Status("reloading the configuration"),
    ]);
    tracing::info!("reloading {}", settings.config_file.display());
    let settings = settings.clone();
    tokio::task::spawn_blocking(move || load(&settings, false))
        .await
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()))
}

/// SIGHUP, SIGTERM and SIGINT, as streams; `None` (logged) if the
/// runtime cannot listen for them.
fn signals() -> Option<(Signal, Signal, Signal)> {
    // SIGUSR2 asks VRRP for its statistics (the VRRP task listens); a
    // handler installed here, never unregistered, keeps its default
    // action (ending the process) away when VRRP does not run.
    let _ = signal(SignalKind::user_defined2());
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

/// `-P`: VRRP alone, until SIGTERM or SIGINT. SIGHUP reloads: a
/// configuration with errors is refused and the running one stays.
async fn serve_vrrp_only(
    settings: &Settings,
    vrrp: Option<RunningVrrp>,
    detached: &mut Detached,
) -> i32 {
    let Some((mut hangup, mut terminate, mut interrupt)) = signals() else {
        return exit::FATAL;
    };
    tell_systemd(&[NotifyState::Ready, NotifyState::Status("VRRP running")]);
    detached.started(exit::CLEAN as u8);
    loop {
        tokio::select! {
            _ = hangup.recv() => {
                let status = match (reload(settings).await, &vrrp) {
                    (Some(configuration), Some(vrrp)) => {
                        let _ = vrrp.reloads.send(configuration).await;
                        "reloaded"
                    }
                    (Some(configuration), None) if !configuration.vrrp_instances.is_empty() => {
                        tracing::warn!(
                            "the reload adds VRRP instances to a pulse started without any: \
                             restart pulse to run them"
                        );
                        "reloaded; new VRRP instances need a restart"
                    }
                    (Some(_), None) => "reloaded",
                    _ => "reload refused: the configuration has errors (see the log)",
                };
                tell_systemd(&[NotifyState::Ready, NotifyState::Status(status)]);
            }
            _ = terminate.recv() => {
                tracing::info!("SIGTERM: stopping");
                break;
            }
            _ = interrupt.recv() => {
                tracing::info!("SIGINT: stopping");
                break;
            }
        }
    }
    tell_systemd(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
    if let Some(vrrp) = vrrp {
        vrrp.stop().await;
    }
    tracing::info!("stopped");
    exit::CLEAN
}

/// Sends systemd a notification if it asked for them (`NOTIFY_SOCKET`).
fn tell_systemd(states: &[NotifyState<'_>]) {
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

async fn serve(
    settings: Settings,
    configuration: Arc<config::Config>,
    client: Client,
    vrrp: Option<RunningVrrp>,
    detached: &mut Detached,
) -> i32 {
    let Some((mut hangup, mut terminate, mut interrupt)) = signals() else {
        return exit::FATAL;
    };
    let current = Arc::new(Mutex::new(configuration.clone()));
    // Derived once per configuration, not at every turn of the loop.
    let mut watch_addresses = wants_addresses(&configuration);
    // Told this host's addresses (below) whenever a configuration has
    // `ha_suspend`: until then, such checks wait.
    let mut checkers =
        Handle::spawn_following_addresses(Plan::from_config(&configuration), Start::Warmup);
    let (states_sender, states) = mpsc::channel(1024);
    let (reloads_sender, reloads) = mpsc::channel(4);
    let (started_sender, mut started) = oneshot::channel();
    let (stop_sender, stop) = oneshot::channel();
    let (notifications_sender, notifications) = mpsc::channel(1024);
    let reconciler_task = tokio::spawn(reconciler::run(
        Reconciler::new(client, configuration),
        Channels {
            states,
            reloads,
            started: Some(started_sender),
            stop,
            notifications: notifications_sender,
        },
    ));
    let scripts_configuration = current.clone();
    let scripts_task = tokio::spawn(crate::scripts::run(notifications, move || {
        scripts_configuration
            .lock()
            .expect("never poisoned")
            .clone()
    }));
    // ha_suspend: the checks learn which addresses are here, now (before
    // their first attempt, after the warmup) and at each change the
    // kernel reports. The monitor opens once a configuration asks for it.
    let mut address_monitor: Option<AddressMonitor> = None;
    // Opens it: at once, then a second after a failure.
    let mut open_retry = tokio::time::interval(std::time::Duration::from_secs(1));
    open_retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut started_open = true;
    // The reload whose pass is awaited, if any; further SIGHUPs wait.
    let mut reload_applied: Option<oneshot::Receiver<PassOutcome>> = None;
    let mut reload_pending = false;
    let stop_mode = loop {
        if reload_pending && reload_applied.is_none() {
            reload_pending = false;
            match reload(&settings).await {
                Some(configuration) => {
                    if let Some(vrrp) = &vrrp {
                        let _ = vrrp.reloads.send(configuration.clone()).await;
                    } else if settings.vrrp && !configuration.vrrp_instances.is_empty() {
                        tracing::warn!(
                            "the reload adds VRRP instances to a pulse started without any: \
                             restart pulse to run them"
                        );
                    }
                    *current.lock().expect("never poisoned") = configuration.clone();
                    watch_addresses = wants_addresses(&configuration);
                    if !watch_addresses && address_monitor.take().is_some() {
                        // Not followed from here on: a later configuration
                        // with `ha_suspend` waits for a new reading.
                        checkers.local_addresses(None).await;
                    }
                    checkers.reload(Plan::from_config(&configuration)).await;
                    let (applied_sender, applied) = oneshot::channel();
                    if reloads_sender
                        .send(Reload {
                            configuration,
                            applied: Some(applied_sender),
                        })
                        .await
                        .is_ok()
                    {
                        reload_applied = Some(applied);
                    }
                }
                None => tell_systemd(&[
                    NotifyState::Ready,
                    NotifyState::Status(
                        "reload refused: the configuration has errors (see the log)",
                    ),
                ]),
            }
        }
        tokio::select! {
            outcome = &mut started, if started_open => {
                started_open = false;
                let outcome = outcome.unwrap_or_else(|_| Err("the reconciler stopped".into()));
                let status = pass_status("started", &outcome);
                tracing::info!("{status}");
                tell_systemd(&[NotifyState::Ready, NotifyState::Status(&status)]);
                detached.started(exit::CLEAN as u8);
            }
            outcome = async { reload_applied.as_mut().expect("guarded").await },
                if reload_applied.is_some() =>
            {
                reload_applied = None;
                let outcome = outcome.unwrap_or_else(|_| Err("the reconciler stopped".into()));
                let status = pass_status("reloaded", &outcome);
                tracing::info!("{status}");
                tell_systemd(&[NotifyState::Ready, NotifyState::Status(&status)]);
            }
            change = checkers.events.recv() => match change {
                Some(change) => {
                    // nanny logged the checker's verdict already.
                    tracing::debug!(
                        "{} {} {}: {}",
                        change.real_server,
                        if change.initial { "is" } else { "went" },
                        if change.up { "up" } else { "down" },
                        change.reason
                    );
                    if states_sender.send(change).await.is_err() {
                        break settings.stop_mode;
                    }
                }
                None => break settings.stop_mode,
            },
            changed = async { address_monitor.as_mut().expect("guarded").changed().await },
                if watch_addresses && address_monitor.is_some() =>
            {
                match changed {
                    Some(addresses) => checkers.local_addresses(Some(addresses)).await,
                    None => {
                        tracing::warn!(
                            "rtnetlink's address events stopped or overflowed: reading the addresses again"
                        );
                        address_monitor = None;
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
                        address_monitor = Some(monitor);
                    }
                    Err(error) => {
                        tracing::warn!("cannot follow this host's addresses: {error}")
                    }
                }
            }
            _ = hangup.recv() => reload_pending = true,
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
    // Then the checks, so that no health change reaches a table being
    // withdrawn.
    checkers.shutdown().await;
    if stop_mode == StopMode::Keep {
        tracing::info!("leaving the IPVS table as it is (--dont-release-ipvs)");
    }
    let _ = stop_sender.send(stop_mode);
    drop(states_sender);
    drop(reloads_sender);
    if let Err(error) = reconciler_task.await {
        tracing::error!("the reconciler failed: {error}");
        return exit::FATAL;
    }
    // The reconciler's end closed the notifications: the runner has
    // started every script it was given.
    let _ = scripts_task.await;
    tracing::info!("stopped");
    exit::CLEAN
}
