//! The SDN mode's Mux (docs/sdn.md): `pulse -f FILE --cluster URLS`, FILE
//! holding `mux { vtep ADDRESS }`. It watches the cluster store and keeps
//! the kernel as the store's policy and live state say ([`desired`] says
//! what, [`kernel`] does it); it sends no probe of its own.
//!
//! Rules of the loop (one task, one `select!`):
//! - **Whole readings.** Each change the store reports is followed by a
//!   reading of the whole schema at one revision, from which the overlay
//!   is computed again: a watch window missed (compacted, or the store
//!   lost) means a full read, never a guess from the events.
//! - **Fail static.** Without the store the kernel keeps what it last
//!   applied: forwarding and the tenants' tables stay, and the Mux tries
//!   the store again every [`RETRY`] until it answers, then catches up.
//! - **Applied revision.** After each application the Mux writes the
//!   policy revision it applied under `live/applied/mux/VTEP`, and what
//!   changed of what its kernel holds of each VIP (its destinations in
//!   the kernel's order, whether it is announced) under
//!   `live/muxes/VTEP/services/...`, in one write, on a lease of
//!   [`LEASE_SECONDS`] renewed by a task of its own (a slow change never
//!   starves it): a dead Mux's entries expire.
//! - **systemd.** With `NOTIFY_SOCKET` set (pulse.service is Type=notify),
//!   `READY=1` once the VTEP and the tables are up, `STOPPING=1` at stop.
//! - **Observed.** The loop publishes a [`report::MuxReport`] on a
//!   `watch` channel (the policy revision applied against the store's,
//!   the last application, the tenants and VIPs announced); with
//!   `--metrics ADDRESS:PORT`, bound before the runtime starts, `/metrics`
//!   serves it ([`metrics`]) on the Mux's runtime.
//! - **Clean stop.** SIGTERM or SIGINT withdraws every VIP first, waits
//!   `withdraw_delay` for the routers to move the flows to the other
//!   Muxes, then removes every namespace, device and route the Mux made
//!   (a restart adopts them instead, when killed).

pub mod desired;
pub mod kernel;
pub mod maglev;
pub mod metrics;
pub mod namespace;
pub mod report;

use std::net::IpAddr;
use std::time::{Duration, Instant, SystemTime};

use fulcrum_cluster::schema::{self, Applied, Role};
use fulcrum_cluster::store::{self, Lease, Store, StoreError};
use fulcrum_config::diagnostic::Severity;
use fulcrum_overlay::KernelError;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use crate::{cli, exit};

use report::MuxReport;

/// How long between attempts to reach a store that does not answer.
pub const RETRY: Duration = Duration::from_secs(1);

/// The lifetime of the Mux's live keys without renewal.
pub const LEASE_SECONDS: i64 = 6;

/// How long a request to the store may take.
const STORE_TIMEOUT: Duration = Duration::from_secs(3);

/// Runs the Mux; returns the exit status.
pub fn run(arguments: &cli::Arguments, cluster: &str) -> i32 {
    crate::daemon::logging::init(crate::daemon::logging::Destinations {
        console: true,
        syslog: !arguments.no_syslog,
        detail: arguments.log_detail,
    });
    let options = arguments.reading_options();
    let loaded = fulcrum_config::load(&arguments.config_file, &options);
    if loaded.diagnostics.count(Severity::Error) > 0 {
        eprint!("{}", loaded.diagnostics.render(&loaded.sources));
        return exit::ERRORS;
    }
    let Some(mux) = loaded.config.mux else {
        eprintln!(
            "pulse: {} has no 'mux {{ vtep ADDRESS }}': the Mux needs its tunnel endpoint",
            arguments.config_file.display()
        );
        return exit::ERRORS;
    };
    let endpoints = store::endpoints(cluster);
    // Bound before the runtime starts, so that a taken port fails the
    // start with a status, as for a director.
    let metrics = match fulcrum_metrics::bind_if_asked(arguments.metrics) {
        Ok(listener) => listener,
        Err(why) => {
            tracing::error!("{why}");
            return exit::FATAL;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("pulse: cannot start: {error}");
            return exit::FATAL;
        }
    };
    let announcements = Announcements {
        table: mux
            .announce_table
            .unwrap_or(fulcrum_config::model::DEFAULT_ANNOUNCE_TABLE),
        withdraw_delay: mux
            .withdraw_delay
            .unwrap_or(fulcrum_config::model::DEFAULT_WITHDRAW_DELAY),
    };
    match runtime.block_on(serve(mux.vtep, announcements, endpoints, metrics)) {
        Ok(()) => exit::CLEAN,
        Err(error) => {
            tracing::error!("mux: {error}");
            exit::FATAL
        }
    }
}

/// Where the Mux announces its VIPs, and how long it waits on a clean stop
/// between withdrawing them and removing what forwards.
#[derive(Debug, Clone, Copy)]
struct Announcements {
    table: u32,
    withdraw_delay: Duration,
}

/// What ended the inner loop.
enum Ended {
    Stop,
    /// The store failed or the watch ended: read it whole again.
    Again(String),
}

async fn serve(
    vtep: IpAddr,
    announcements: Announcements,
    endpoints: Vec<String>,
    metrics: Option<std::net::TcpListener>,
) -> Result<(), KernelError> {
    let id = vtep.to_string();
    let (report, reports) = watch::channel(MuxReport::new(&id));
    // Served to the end, the clean stop's withdrawal included.
    let (_stop_serving, serving_stopped) = watch::channel(false);
    if let Some(listener) = metrics {
        metrics::spawn(listener, reports, serving_stopped);
    }
    let mut stop = StopSignals {
        terminate: signal(SignalKind::terminate()).map_err(io_error)?,
        interrupt: signal(SignalKind::interrupt()).map_err(io_error)?,
    };
    // keepalived's other signals end no Mux: it follows the store, so a
    // SIGHUP has nothing to read again, and it writes no dump.
    let mut others = vec![(libc::SIGHUP, "SIGHUP")];
    if let Some(clear) = crate::signals::number("STATS_CLEAR") {
        others.push((clear, "SIGRTMAX-1 (keepalived's statistics reset)"));
    }
    others.push((libc::SIGUSR1, "SIGUSR1 (keepalived's data dump)"));
    others.push((libc::SIGUSR2, "SIGUSR2 (keepalived's statistics)"));
    if let Some(json) = crate::signals::number("JSON") {
        others.push((json, "SIGRTMIN+2 (keepalived's JSON dump)"));
    }
    crate::signals::listen_without_acting(
        &others,
        "the Mux follows the cluster store, it has nothing to reload or dump",
    );
    let mut kernel = kernel::Kernel::start(vtep, announcements.table).await?;
    tracing::info!("mux {id}: started, cluster store {}", endpoints.join(","));
    // Ready once its VTEP and tables are up, not once the store answers:
    // a Mux without its store fails static (it forwards as last applied),
    // so an unreachable store must not fail the unit's start. pulse.service
    // is Type=notify for the director and the Mux alike.
    crate::daemon::tell_systemd(&[
        sd_notify::NotifyState::Ready,
        sd_notify::NotifyState::Status(&format!(
            "Mux {id}: following the cluster store {}",
            endpoints.join(",")
        )),
    ]);
    // Leases of lost connections, ended once the next one has written this
    // Mux's keys again.
    let mut left_behind: Vec<i64> = Vec::new();
    loop {
        let attempt = async {
            let mut store = Store::connect(&endpoints, STORE_TIMEOUT).await?;
            let lease = store.lease(LEASE_SECONDS).await?;
            Ok::<_, StoreError>((store, lease))
        };
        let (mut store, mut lease) = tokio::select! {
            connected = attempt => match connected {
                Ok(connected) => connected,
                Err(error) => {
                    report.send_modify(|report| report.connected = false);
                    tracing::warn!("mux {id}: {error}; forwarding as last applied, trying again");
                    tokio::select! {
                        () = tokio::time::sleep(RETRY) => continue,
                        () = stop.received() => break,
                    }
                }
            },
            () = stop.received() => break,
        };
        let ended = follow(
            &mut store,
            &mut lease,
            &mut kernel,
            &id,
            &mut left_behind,
            &mut stop,
            &report,
        )
        .await;
        report.send_modify(|report| report.connected = false);
        match ended {
            Ended::Stop => {
                let _ = store.revoke(lease.id).await;
                break;
            }
            Ended::Again(why) => {
                left_behind.push(lease.id);
                tracing::warn!("mux {id}: {why}; forwarding as last applied, reading again");
                tokio::time::sleep(RETRY).await;
            }
        }
    }
    crate::daemon::tell_systemd(&[sd_notify::NotifyState::Stopping]);
    // Withdrawn first: the routers move the flows to the other Muxes while
    // this one still forwards what reaches it; then removed.
    tracing::info!(
        "mux {id}: stopping: withdrawing its VIPs, removing what it made in {:.1} s",
        announcements.withdraw_delay.as_secs_f64()
    );
    kernel.withdraw().await?;
    tokio::time::sleep(announcements.withdraw_delay).await;
    kernel.clear().await
}

/// Reads the store whole, applies it, and follows its changes until the
/// store fails or a signal comes.
async fn follow(
    store: &mut Store,
    lease: &mut Lease,
    kernel: &mut kernel::Kernel,
    id: &str,
    left_behind: &mut Vec<i64>,
    stop: &mut StopSignals,
    report: &watch::Sender<MuxReport>,
) -> Ended {
    let mut reading = match store.read().await {
        Ok(reading) => reading,
        Err(error) => return Ended::Again(error.to_string()),
    };
    let mut watch = match store.watch(reading.store_revision + 1).await {
        Ok(watch) => watch,
        Err(error) => return Ended::Again(error.to_string()),
    };
    // What this Mux wrote of its kernel under this lease (a new lease
    // starts with nothing: the old one's keys expire with it).
    let mut published: std::collections::BTreeMap<String, String> = Default::default();
    let applied_key = schema::applied(Role::Mux, id);
    loop {
        let started = Instant::now();
        let overlay = desired::overlay(&reading);
        report.send_modify(|report| {
            report.connected = true;
            report.sync.saw_store(overlay.revision, SystemTime::now());
        });
        for problem in &overlay.problems {
            tracing::warn!("mux {id}: the store's {problem}");
        }
        if let Err(error) = kernel.apply(&overlay).await {
            // The next change or the next reading tries again; what was
            // applied stays.
            tracing::error!("mux {id}: {error}");
            report.send_modify(MuxReport::apply_failed);
        } else {
            let took = started.elapsed();
            // The revision applied before, as the report holds it (set
            // only by an application that succeeded).
            let applied_revision = report.borrow().sync.applied;
            report.send_modify(|report| {
                report.applied(
                    overlay.revision,
                    kernel.tenants(&overlay),
                    took,
                    SystemTime::now(),
                )
            });
            if applied_revision != Some(overlay.revision) {
                tracing::info!(
                    "mux {id}: policy revision {} applied (store revision {}) in {:.1} ms",
                    overlay.revision,
                    reading.store_revision,
                    started.elapsed().as_secs_f64() * 1000.0
                );
            } else {
                tracing::debug!(
                    "mux {id}: store revision {} applied in {:.1} ms",
                    reading.store_revision,
                    started.elapsed().as_secs_f64() * 1000.0
                );
            }
            // What changed of what this Mux says its kernel holds, and the
            // revision applied (last), in one write; none when nothing
            // changed: every Mux and agent reads what the others write.
            let mut now = kernel.published(id);
            now.insert(
                applied_key.clone(),
                schema::to_json(&Applied {
                    revision: overlay.revision,
                }),
            );
            let mut puts: Vec<(String, String)> = now
                .iter()
                .filter(|(key, value)| published.get(*key) != Some(*value))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect();
            // The revision applied last: never seen before what it covers.
            puts.sort_by_key(|(key, _)| *key == applied_key);
            let deletes: Vec<String> = published
                .keys()
                .filter(|key| !now.contains_key(*key))
                .cloned()
                .collect();
            if !puts.is_empty() || !deletes.is_empty() {
                if let Err(error) = store.write_live(&puts, &deletes, lease).await {
                    return Ended::Again(error.to_string());
                }
            }
            published = now;
            store.revoke_left_behind(left_behind).await;
        }
        // The next change: the watch's events say only that something
        // changed; the reading says what.
        loop {
            tokio::select! {
                message = watch.message() => match message {
                    Ok(Some(response)) => match store::watch_ended(&response) {
                        Some(why) => return Ended::Again(why),
                        // Nothing the Mux acts on: no event, or only the
                        // daemons' bookkeeping (applied revisions, the
                        // Muxes' published tables).
                        None if !store::changes_state(&response) => continue,
                        None => {
                            // Behind from the moment the store is heard
                            // of, whether or not its reading succeeds.
                            if let Some(revision) = fulcrum_cluster::sync::policy_revision_in(&response) {
                                report.send_modify(|report| {
                                    report.sync.saw_store(revision, SystemTime::now())
                                });
                            }
                            break;
                        }
                    },
                    Ok(None) => return Ended::Again("the store closed the watch".into()),
                    Err(error) => return Ended::Again(format!("the watch failed: {error}")),
                },
                why = lease.lost() => return Ended::Again(format!("the Mux's {why}")),
                () = stop.received() => return Ended::Stop,
            }
        }
        reading = match store.read().await {
            Ok(reading) => reading,
            Err(error) => return Ended::Again(error.to_string()),
        };
    }
}

/// SIGTERM and SIGINT, either of which stops the Mux.
struct StopSignals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl StopSignals {
    /// Waits for either. Cancel-safe, as `Signal::recv` is.
    async fn received(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}

fn io_error(error: std::io::Error) -> KernelError {
    fulcrum_overlay::io_failed("cannot set up signals")(error)
}
