//! The audit: the whole kernel table read back now and then, so that a
//! hand edit (`ipvsadm -d ...`) is found and repaired. It is the
//! reconciler's second loop, beside the one that applies changes, and it
//! never holds that one up: it runs on its own thread with its own socket,
//! and hands the task a [`Snapshot`] to compare.
//!
//! Rules:
//! - **The cheapest read** ([`read`]): the services in one netlink dump,
//!   their destinations from the kernel's text listing (`/proc/net/ip_vs`,
//!   one read for the whole table, where netlink needs one dump per
//!   service), and over netlink only the services the listing cannot show
//!   in full: those it does not identify for certain
//!   ([`ipvs::listing::match_services`]), those whose configured
//!   destinations have what the listing lacks (thresholds, tunnel
//!   parameters: the [`Scope::precise`] keys), and a rotating slice of
//!   [`ROTATION`] others, so that every service is read in full, whatever
//!   the listing hides, once per pass of the rotation.
//! - **Spread**: the next audit starts [`PERIOD`] after the last one ended,
//!   or twice as long as that one took if that is longer, so the audit
//!   takes at most a third of a processor however large the table. The
//!   task only compares a reading with what it knew, and plans only the
//!   services that differ.
//! - **Never stale**: a snapshot carries the number of the last change
//!   pass over when its read began ([`Snapshot::since`]); the task keeps
//!   its own knowledge of every service a later pass touched.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fulcrum_config::model as config;
use ipvs::{Client, ServiceKey, Traffic};
use tokio::sync::{Notify, mpsc, oneshot, watch};

use super::desired::{Layout, Table, TableService};

/// The least time between the end of one audit and the start of the next.
pub const PERIOD: Duration = Duration::from_secs(1);

/// How many services an audit reads over netlink beyond those it must, in
/// turn: on 1,000 services a whole turn takes 16 audits.
pub const ROTATION: usize = 64;

/// What the audit reads with netlink whatever the listing says.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Services whose configured destinations have thresholds or tunnel
    /// parameters, which the listing does not show.
    pub precise: HashSet<ServiceKey>,
}

impl Scope {
    /// The scope a desired table calls for.
    pub fn of(desired: &Table) -> Scope {
        Scope {
            precise: desired
                .services
                .values()
                .filter(|entry| needs_netlink(entry))
                .map(|entry| entry.service.key)
                .collect(),
        }
    }

    /// The scope a configuration can call for, before its desired table is
    /// computed (the start reads the kernel first): the services of every
    /// virtual server with a real server or sorry server that has
    /// thresholds or is tunnelled. A superset of [`Scope::of`] the desired
    /// table, whatever the health.
    pub fn of_configuration(configuration: &config::Config, layout: &Layout) -> Scope {
        let tunnelled = |forwarding: &config::ForwardingMethod| {
            matches!(forwarding, config::ForwardingMethod::Tunnel(_))
        };
        let mut precise = HashSet::new();
        for (position, virtual_server) in configuration.virtual_servers.iter().enumerate() {
            let needs = virtual_server.real_servers.iter().any(|real_server| {
                real_server.upper_threshold != 0
                    || real_server.lower_threshold != 0
                    || tunnelled(&real_server.forwarding)
            }) || virtual_server
                .sorry_server
                .as_ref()
                .is_some_and(|sorry_server| tunnelled(&sorry_server.forwarding));
            if needs {
                precise.extend(layout.services_of(position).iter().copied());
            }
        }
        Scope { precise }
    }

    /// This scope once the services `keys` of `desired` were replaced (a
    /// reload of some virtual servers): the others keep what they had.
    pub fn updated(&self, desired: &Table, keys: &HashSet<ServiceKey>) -> Scope {
        let mut precise = self.precise.clone();
        for key in keys {
            match desired.service(key) {
                Some(entry) if needs_netlink(entry) => precise.insert(*key),
                _ => precise.remove(key),
            };
        }
        Scope { precise }
    }
}

/// Whether a service's destinations have what the listing cannot show
/// (thresholds, tunnel parameters), so that it is read over netlink.
fn needs_netlink(entry: &TableService) -> bool {
    entry.destinations.iter().any(|destination| {
        destination.upper_threshold != 0
            || destination.lower_threshold != 0
            || matches!(destination.forwarding, ipvs::Forwarding::Tunnel(_))
    })
}

/// One audit's reading of the kernel.
#[derive(Debug)]
pub struct Snapshot {
    /// The number of the last change pass over when the read began:
    /// services touched by a later pass may have changed after they were
    /// read.
    pub since: u64,
    pub table: Table,
    /// What the read cost.
    pub cost: Cost,
}

/// What one read of the whole table cost.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cost {
    pub took: Duration,
    /// Of which: the services' dump, the listing (read and parsed), the
    /// destinations dumped over netlink.
    pub services_took: Duration,
    pub listing_took: Duration,
    pub dumps_took: Duration,
    pub services: usize,
    /// Services whose destinations were dumped over netlink (the others
    /// came from the listing).
    pub dumped: usize,
    pub traffic: Traffic,
}

impl std::fmt::Display for Cost {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let milliseconds = |took: Duration| took.as_secs_f64() * 1000.0;
        write!(
            formatter,
            "in {:.1} ms: their dump {:.1} ms, the listing {:.1} ms, {} dumped over netlink in \
             {:.1} ms; {}",
            milliseconds(self.took),
            milliseconds(self.services_took),
            milliseconds(self.listing_took),
            self.dumped,
            milliseconds(self.dumps_took),
            self.traffic
        )
    }
}

/// Reads the whole table the cheapest way (see the module's rules), the
/// services from index `rotation` on being read in full too.
pub fn read(
    client: &mut Client,
    scope: &Scope,
    rotation: usize,
) -> Result<(Table, Cost), ipvs::Error> {
    let started = Instant::now();
    let traffic = client.traffic();
    let services = client.services()?;
    let services_took = started.elapsed();
    let listed = match client.listing() {
        Ok(listing) => ipvs::listing::match_services(&services, listing),
        Err(error) => {
            tracing::debug!("audit: {error}; reading every service over netlink");
            Vec::new()
        }
    };
    let listing_took = started.elapsed() - services_took;
    let count = services.len();
    let in_rotation =
        |index: usize| (index + count - rotation % count.max(1)) % count.max(1) < ROTATION;
    let mut destinations: Vec<Option<Vec<ipvs::Destination>>> = services
        .iter()
        .enumerate()
        .map(|(index, service)| {
            if scope.precise.contains(&service.key) || in_rotation(index) {
                return None;
            }
            listed.get(index)?.as_ref().map(|listed| {
                listed
                    .iter()
                    .map(ipvs::listing::ListedDestination::to_destination)
                    .collect()
            })
        })
        .collect();
    let dumped: Vec<usize> = (0..count)
        .filter(|&index| destinations[index].is_none())
        .collect();
    let keys: Vec<ServiceKey> = dumped.iter().map(|&index| services[index].key).collect();
    let dumping = Instant::now();
    for (index, read) in dumped.iter().zip(client.destinations_of(&keys)?) {
        destinations[*index] = Some(read);
    }
    let dumps_took = dumping.elapsed();
    let timeouts = client.timeouts()?;
    let table = Table::of(
        services
            .into_iter()
            .zip(destinations)
            .map(|(service, destinations)| kept(service, destinations.unwrap_or_default())),
        timeouts,
    );
    Ok((
        table,
        Cost {
            took: started.elapsed(),
            services_took,
            listing_took,
            dumps_took,
            services: count,
            dumped: keys.len(),
            traffic: client.traffic().since(traffic),
        },
    ))
}

/// A service read from the kernel as the reconciler keeps it: without the
/// statistics of the service and its destinations, which it never compares.
pub fn kept(mut service: ipvs::Service, mut destinations: Vec<ipvs::Destination>) -> TableService {
    service.statistics = None;
    for destination in &mut destinations {
        destination.statistics = None;
    }
    TableService {
        service,
        destinations,
    }
}

/// One reading asked of the reading thread.
type ReadRequest = (
    Arc<Scope>,
    usize,
    oneshot::Sender<Result<(Table, Cost), ipvs::Error>>,
);

/// The thread that reads for the audit (so that the runtime's blocking pool
/// stays free for the change loop): it ends when the loop drops its end of
/// the channel.
///
/// Not at a lower priority: tried at nice +10, it starved in a busy lab
/// guest (no repair within 10 s while other tests ran), and a repair must
/// come within a second or two.
fn spawn_reader(mut client: Client) -> std::io::Result<std::sync::mpsc::Sender<ReadRequest>> {
    let (requests, received) = std::sync::mpsc::channel::<ReadRequest>();
    std::thread::Builder::new()
        .name("ipvs-audit".into())
        .spawn(move || {
            for (scope, rotation, reply) in received {
                let _ = reply.send(read(&mut client, &scope, rotation));
            }
        })?;
    Ok(requests)
}

/// The audit's loop: reads the table (on a thread of its own), hands the snapshot over, waits, until the task stops
/// listening. `now` asks for an audit at once (after a change too large to
/// read back service by service).
pub async fn run(
    client: Client,
    mut scope: watch::Receiver<Arc<Scope>>,
    passes: Arc<AtomicU64>,
    now: Arc<Notify>,
    snapshots: mpsc::Sender<Snapshot>,
) {
    let reader = match spawn_reader(client) {
        Ok(reader) => reader,
        Err(error) => {
            tracing::error!("no audit of the IPVS table: cannot start its thread: {error}");
            return;
        }
    };
    let mut rotation = 0;
    let mut pause = PERIOD;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = now.notified() => {}
            _ = snapshots.closed() => return,
        }
        let since = passes.load(Ordering::Acquire);
        let current = scope.borrow_and_update().clone();
        let (reply, outcome) = oneshot::channel();
        if reader.send((current, rotation, reply)).is_err() {
            return;
        }
        let Ok(outcome) = outcome.await else {
            // The thread went down (a panic, reported by it).
            return;
        };
        match outcome {
            Ok((table, cost)) => {
                rotation = rotation.wrapping_add(ROTATION);
                pause = PERIOD.max(cost.took * 2);
                tracing::debug!("audit: {} services read {cost}", cost.services);
                let snapshot = Snapshot { since, table, cost };
                if snapshots.send(snapshot).await.is_err() {
                    return;
                }
            }
            Err(error) => {
                tracing::error!("audit: cannot read the IPVS table: {error}");
                pause = PERIOD;
            }
        }
    }
}
