//! The task that runs every check of a [`Plan`]: one `select!` loop over
//! timers, finished attempts and shutdown; each attempt is its own task.
//!
//! Out comes a stream of [`StateChange`]s (what `pulse` consumes): first
//! each real server's initial state, once all its checks have run, then
//! every change. A real server configured under several virtual servers
//! with identical checks changes in all of them at once, in one message.
//!
//! Shutdown follows mini-redis: a `broadcast` tells the loop to stop, and
//! the loop holds an `mpsc::Sender` that it drops when it is done, so the
//! caller knows every attempt was cancelled (dropping the `JoinSet` aborts
//! them; MISC_CHECK kills its process group on drop).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, broadcast, mpsc};
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;

use crate::driver;
use crate::machine::{Action, Machine, RealServerHealth, Timestamp, Transition};
use crate::outcome::{Failure, Outcome};
use crate::spec::{BfdSpec, CheckKind, CheckSpec, Plan, RealServerName, VirtualServerKey};

/// Told of each finished attempt: what a caller that measures the checks
/// (pulse's `pulse_check_duration_seconds`) plugs in. Called on the
/// scheduler's task, so it must be quick (a histogram's observation).
pub trait AttemptObserver: Send + Sync {
    /// `check` took `took` (from when its task first ran to its outcome)
    /// and succeeded or not.
    fn observe(&self, check: &CheckSpec, took: std::time::Duration, succeeded: bool);

    /// A check's state was decided, for one real server of one virtual
    /// server it serves (a shared check: once for each): what keepalived's
    /// checkers send their SMTP alerts from (pulse's `smtp_alert`).
    /// Nothing by default.
    fn transition(&self, _transition: &CheckTransition<'_>) {}
}

/// One check's transition as keepalived's checker for one real server of
/// one virtual server sees it.
#[derive(Debug, Clone, Copy)]
pub struct CheckTransition<'a> {
    pub check: &'a CheckSpec,
    pub real_server: &'a RealServerName,
    pub virtual_server: &'a VirtualServerKey,
    /// The check's state now.
    pub up: bool,
    /// Before (keepalived's `checker_was_up`): at the first outcome the
    /// state it started in, down with `alpha`, up otherwise.
    pub was_up: bool,
    /// The check's first outcome (keepalived's `!has_run`).
    pub initial: bool,
    /// Whether the real server's state changed with it (keepalived's
    /// `rs_was_alive != rs->alive`).
    pub server_changed: bool,
    /// The real server's state now (keepalived's `rs->alive`).
    pub server_up: bool,
    /// Why it is down.
    pub failure: Option<&'a Failure>,
}

/// A real server's state was decided or changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StateChange {
    pub real_server: RealServerName,
    /// Every virtual server where it changed (identical checks are shared).
    pub virtual_servers: Vec<VirtualServerKey>,
    pub up: bool,
    /// The first report of this real server, not a change.
    pub initial: bool,
    /// Why: the check that decided and what it found.
    pub reason: String,
    /// The weight a MISC_CHECK with `misc_dynamic` set, if any (a change of
    /// weight alone is sent too, with `up` unchanged).
    pub weight: Option<i32>,
    /// What FILE_CHECKs with a weight add to the real server's weight
    /// (0 without any; a change alone is sent too).
    pub weight_offset: i64,
}

/// Real servers changing together: server, up, weight, weight offset.
type ChangeKey = (RealServerName, bool, Option<i32>, i64);
/// Real servers reported together: server, up, reason, weight, offset.
type InitialKey = (RealServerName, bool, String, Option<i32>, i64);

/// How long past its deadline an attempt may stay unfinished before the
/// scheduler abandons it. The attempt's task enforces the attempt's limits
/// itself (`driver::run`'s attempt timeout, each driver's connect_timeout),
/// counted from when the task first runs, and a socket's answer is looked
/// at before the clock: an answer that came while the task waited to be
/// polled still counts. Only nanny can keep an attempt past that (a
/// runtime too busy to poll its task, a bug), so abandoning it says nothing
/// about the server: no verdict (a local failure), and a warning.
///
/// The machine's own deadline (the attempt timeout from when the attempt
/// was due) is not used as a verdict here: under overload, tasks wait to
/// be polled for longer than that, and the 10,000-server benchmark saw
/// nearly every healthy server taken out with "timeout after 2 s" on
/// connections its listener had accepted.
const BACKSTOP_SLACK: Duration = Duration::from_secs(30);

/// The log target of nanny's own lateness (attempts late or abandoned),
/// which `nanny` shows by default.
pub const LOAD: &str = "nanny::load";

/// An attempt whose task first runs this long after it was due is late.
const LATE: Duration = Duration::from_secs(1);

/// How often lateness is summed up in the log (when there was any).
const LATENESS_REPORT: Duration = Duration::from_secs(10);

/// How many attempts may wait for their task's first poll at once; the
/// others wait in the scheduler's queue, in the order they were due.
///
/// Under overload (more checks due than the processors can run: 10,000
/// TCP_CHECKs a second in the emulated lab), spawning every due attempt at
/// once puts thousands of tasks in the runtime's queue: each holds memory,
/// and the scheduler's own task waits behind them all, so it starts and
/// collects attempts later still. Bounded, the runtime's queue stays short
/// (the scheduler stays prompt), a queued attempt costs a few bytes, and
/// the lateness is the queue's, measured (see [`Lateness`]). Only attempts
/// not yet running count: one waiting on a server (a hanging connect, a
/// slow script) holds no permit, so a misbehaving server still costs only
/// its own check, never the others' turn.
const READY_TO_RUN: usize = 256;

/// A running attempt.
struct Attempt {
    /// Its number: attempts are numbered as they become due.
    number: u64,
    /// Its task, once spawned (`None` while it waits in the queue).
    task: Option<AbortHandle>,
    /// When it was due (its task may first run later on a busy runtime).
    due: Instant,
}

/// How late attempts started since the last report: nanny's own lateness,
/// shown rather than blamed on the servers.
#[derive(Debug, Default)]
struct Lateness {
    since: Option<Instant>,
    attempts: u64,
    late: u64,
    worst: Duration,
    abandoned: u64,
}

impl Lateness {
    /// Counts an attempt that started `lateness` after it was due; every
    /// [`LATENESS_REPORT`], a summary if any were late or abandoned.
    fn record(&mut self, lateness: Duration, now: Instant) -> Option<String> {
        let since = *self.since.get_or_insert(now);
        self.attempts += 1;
        if lateness >= LATE {
            self.late += 1;
        }
        self.worst = self.worst.max(lateness);
        let elapsed = now.saturating_duration_since(since);
        if elapsed < LATENESS_REPORT {
            return None;
        }
        let summary = (self.late > 0 || self.abandoned > 0).then(|| {
            format!(
                "behind schedule: {} of {} attempts in the last {} s started {} s or more \
                 after they were due (at worst {:.1} s), {} abandoned unfinished; checks run \
                 less often than configured (late, not failed)",
                self.late,
                self.attempts,
                elapsed.as_secs(),
                LATE.as_secs(),
                self.worst.as_secs_f64(),
                self.abandoned,
            )
        });
        *self = Lateness {
            since: Some(now),
            ..Lateness::default()
        };
        summary
    }
}

/// How the scheduler starts checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// keepalived's way: 1 s, plus a random part of each check's warmup.
    Warmup,
    /// Every check at once (`nanny --once`).
    Immediately,
}

pub struct Scheduler {
    plan: Plan,
    specs: Vec<Arc<CheckSpec>>,
    machines: Vec<Machine>,
    health: Vec<RealServerHealth>,
    /// Whether each slot's initial state was sent.
    reported: Vec<bool>,
    epoch: Instant,
    timers: BinaryHeap<Reverse<(Timestamp, usize)>>,
    /// When to abandon attempts past their deadline ([`BACKSTOP_SLACK`]),
    /// by attempt number.
    backstops: BinaryHeap<Reverse<(Instant, u64)>>,
    /// Attempts due but not spawned yet, by number, oldest first.
    queued: VecDeque<u64>,
    /// Permits to spawn an attempt ([`READY_TO_RUN`]); each attempt gives
    /// its permit back when its task first runs.
    ready_to_run: Arc<Semaphore>,
    lateness: Lateness,
    /// The running attempt of each check.
    running: Vec<Option<Attempt>>,
    /// Which check each running attempt (by number) belongs to; survives
    /// reloads, which renumber checks.
    owners: HashMap<u64, usize>,
    /// Attempts started so far, to number them.
    attempts_started: u64,
    /// Each check's last reported reason.
    reasons: Vec<String>,
    /// Each BFD session's last reported state (`None`: Up), so that a
    /// checker new in a reload starts from the truth.
    bfd_states: HashMap<BfdSpec, Option<Failure>>,
    /// Each slot's dynamic weight.
    weights: Vec<Option<i32>>,
    /// The addresses this host holds, once told ([`Command::LocalAddresses`]):
    /// checks with `ha_suspend` whose virtual address is not among them are
    /// suspended. While they are unknown (never told, or told they are
    /// being read again), see [`Scheduler::follows_addresses`].
    local_addresses: Option<HashSet<IpAddr>>,
    /// Whether the caller tells this host's addresses
    /// ([`Handle::spawn_following_addresses`]): checks with `ha_suspend`
    /// then wait while the addresses are unknown; otherwise (nanny, which
    /// never tells) nothing is suspended.
    follows_addresses: bool,
    events: mpsc::Sender<StateChange>,
    /// Told of each finished attempt, if the caller measures them.
    observer: Option<Arc<dyn AttemptObserver>>,
    /// Tests only: how long each attempt's task waits before it runs, as
    /// on a runtime too busy to poll it (a starved runtime cannot be made
    /// on demand with paused time).
    #[cfg(test)]
    starved_for: Duration,
}

impl Scheduler {
    /// A scheduler for `plan`, sending to `events`.
    pub fn new(plan: Plan, start: Start, events: mpsc::Sender<StateChange>) -> Scheduler {
        let epoch = Instant::now();
        let machines: Vec<Machine> = plan
            .checks
            .iter()
            .map(|check| match start {
                _ if matches!(check.spec.kind, CheckKind::Bfd(_)) => {
                    Machine::external(check.spec.timing.clone())
                }
                Start::Warmup => {
                    Machine::new(check.spec.timing.clone(), Timestamp::ZERO, fastrand::f64())
                }
                Start::Immediately => {
                    Machine::starting_at(check.spec.timing.clone(), Timestamp::ZERO)
                }
            })
            .collect();
        let health = plan
            .slots
            .iter()
            .map(|slot| {
                RealServerHealth::new(
                    slot.checks
                        .iter()
                        .map(|check| machines[*check].is_up())
                        .collect(),
                )
            })
            .collect();
        let timers = machines
            .iter()
            .enumerate()
            .map(|(index, machine)| Reverse((machine.poll_at(), index)))
            .collect();
        Scheduler {
            specs: plan
                .checks
                .iter()
                .map(|check| Arc::new(check.spec.clone()))
                .collect(),
            running: (0..machines.len()).map(|_| None).collect(),
            backstops: BinaryHeap::new(),
            queued: VecDeque::new(),
            ready_to_run: Arc::new(Semaphore::new(READY_TO_RUN)),
            lateness: Lateness::default(),
            owners: HashMap::new(),
            attempts_started: 0,
            reasons: vec![String::new(); machines.len()],
            bfd_states: HashMap::new(),
            reported: vec![false; plan.slots.len()],
            weights: vec![None; plan.slots.len()],
            local_addresses: None,
            follows_addresses: false,
            machines,
            health,
            plan,
            epoch,
            timers,
            events,
            observer: None,
            #[cfg(test)]
            starved_for: Duration::ZERO,
        }
    }

    fn now(&self) -> Timestamp {
        Timestamp(Instant::now() - self.epoch)
    }

    /// `None` for [`Timestamp::NEVER`] (BFD checks have no timers here).
    fn instant(&self, timestamp: Timestamp) -> Option<Instant> {
        self.epoch.checked_add(timestamp.0)
    }

    /// The BFD sessions the plan's checks need, each once.
    fn bfd_sessions(&self) -> Vec<BfdSpec> {
        let mut sessions: Vec<BfdSpec> = Vec::new();
        for spec in &self.specs {
            if let CheckKind::Bfd(bfd) = &spec.kind
                && !sessions.contains(bfd)
            {
                sessions.push(bfd.clone());
            }
        }
        sessions
    }

    /// A BFD session's state decides every checker that follows it.
    async fn bfd_report(&mut self, report: driver::bfd::Report) -> bool {
        self.bfd_states
            .insert(report.spec.clone(), report.failure.clone());
        for index in 0..self.specs.len() {
            if !matches!(&self.specs[index].kind, CheckKind::Bfd(bfd) if *bfd == report.spec) {
                continue;
            }
            let transition = self.machines[index].decide(report.failure.clone());
            if !self.publish(index, transition).await {
                return false;
            }
        }
        true
    }

    /// Runs until `shutdown` fires (or its sender is dropped), or nobody
    /// listens to the events any more. `_done` is dropped on return.
    pub async fn run(
        mut self,
        mut commands: mpsc::Receiver<Command>,
        mut shutdown: broadcast::Receiver<()>,
        _done: mpsc::Sender<()>,
    ) {
        // Each attempt's number, when its task first ran, and its outcome.
        let mut attempts: JoinSet<(u64, Instant, Outcome)> = JoinSet::new();
        // Real servers without checkers are up from the start.
        let empty: Vec<usize> = (0..self.plan.slots.len())
            .filter(|slot| self.plan.slots[*slot].checks.is_empty())
            .collect();
        if !self.send_initial(&empty).await {
            return;
        }
        // BFD sessions run in their own task, which stops when
        // `bfd_sessions` is dropped, as this function returns.
        let (bfd_sessions, mut bfd_reports) = driver::bfd::spawn();
        bfd_sessions.send_replace(self.bfd_sessions());
        let ready_to_run = self.ready_to_run.clone();
        // One timer for the loop, moved only when the next wake changes:
        // a new sleep at every turn (a turn per finished attempt, thousands
        // a second) put an entry in tokio's timer wheel and took it out
        // again each time.
        let timer = tokio::time::sleep_until(Instant::now());
        tokio::pin!(timer);
        // Where `timer` is set, while it has not fired.
        let mut timer_at: Option<Instant> = None;
        loop {
            let wake = self
                .timers
                .peek()
                .and_then(|Reverse((at, _))| self.instant(*at));
            let backstop = self.backstops.peek().map(|Reverse((at, _))| *at);
            let wake = match (wake, backstop) {
                (Some(wake), Some(backstop)) => Some(wake.min(backstop)),
                (wake, backstop) => wake.or(backstop),
            };
            if let Some(at) = wake
                && timer_at != Some(at)
            {
                timer.as_mut().reset(at);
                timer_at = Some(at);
            }
            tokio::select! {
                _ = shutdown.recv() => break,
                Some(command) = commands.recv() => match command {
                    Command::Reload(plan) => {
                        if !self.reload(plan).await {
                            break;
                        }
                        bfd_sessions.send_replace(self.bfd_sessions());
                    }
                    Command::LocalAddresses(addresses) => self.set_local_addresses(addresses),
                },
                Some(report) = bfd_reports.recv() => {
                    if !self.bfd_report(report).await {
                        break;
                    }
                }
                Some(joined) = attempts.join_next(), if !attempts.is_empty() => {
                    // One reading of the clock for the whole turn: every
                    // attempt taken in it had finished before (no task
                    // runs meanwhile), and each reading is a system call
                    // where the clock source is not the TSC (the lab's
                    // emulated HPET).
                    let now = Instant::now();
                    if !self.finished(joined, now).await {
                        break;
                    }
                    // Every other attempt finished by now, in this turn:
                    // one turn of the loop per attempt cost more than the
                    // attempt's own work.
                    let mut listening = true;
                    while let Some(joined) = attempts.try_join_next() {
                        if !self.finished(joined, now).await {
                            listening = false;
                            break;
                        }
                    }
                    if !listening {
                        break;
                    }
                }
                Ok(permit) = ready_to_run.clone().acquire_owned(), if !self.queued.is_empty() => {
                    if let Some(number) = self.queued.pop_front() {
                        self.spawn_attempt(number, permit, &mut attempts);
                    }
                    self.start_queued(&mut attempts);
                }
                _ = &mut timer, if wake.is_some() => {
                    timer_at = None;
                    if !self.fire_timers(&mut attempts).await {
                        break;
                    }
                }
            }
        }
        attempts.shutdown().await;
    }

    /// Takes a finished attempt's outcome, at `instant_now`; false when
    /// nobody listens any more.
    async fn finished(
        &mut self,
        joined: Result<(u64, Instant, Outcome), tokio::task::JoinError>,
        instant_now: Instant,
    ) -> bool {
        // A task that panicked stays owned until its backstop abandons it
        // (no verdict).
        let Ok((number, started, outcome)) = joined else {
            return true;
        };
        // An abandoned attempt (or one whose check was removed) may still
        // be joined: only current attempts count.
        let Some(index) = self.owners.remove(&number) else {
            return true;
        };
        if let Some(attempt) = self.running[index].take() {
            let lateness = started.saturating_duration_since(attempt.due);
            if let Some(summary) = self.lateness.record(lateness, instant_now) {
                tracing::warn!(target: LOAD, "{summary}");
            }
        }
        if let Some(observer) = &self.observer {
            observer.observe(
                &self.specs[index],
                instant_now.saturating_duration_since(started),
                outcome.is_ok(),
            );
        }
        if let Err(failure) = &outcome
            && self.specs[index].log_all_failures
        {
            tracing::info!("{}: attempt failed: {failure}", self.specs[index]);
        }
        let now = Timestamp(instant_now.saturating_duration_since(self.epoch));
        let transition = self.machines[index].handle(now, outcome);
        self.timers
            .push(Reverse((self.machines[index].poll_at(), index)));
        self.publish(index, transition).await
    }

    /// Handles every timer due now; false when nobody listens any more.
    async fn fire_timers(&mut self, attempts: &mut JoinSet<(u64, Instant, Outcome)>) -> bool {
        let now = self.now();
        let instant_now = self.epoch + now.0;
        while let Some(Reverse((at, number))) = self.backstops.peek().copied() {
            if at > instant_now {
                break;
            }
            self.backstops.pop();
            // Attempts that finished or were dropped are skipped.
            let Some(index) = self.owners.remove(&number) else {
                continue;
            };
            let Some(attempt) = self.running[index].take() else {
                continue;
            };
            if let Some(task) = attempt.task {
                task.abort();
            }
            self.lateness.abandoned += 1;
            let failure = Failure::Local(format!(
                "attempt unfinished {} s after it was due (nanny too busy to run it)",
                instant_now.saturating_duration_since(attempt.due).as_secs()
            ));
            tracing::warn!(target: LOAD, "{}: {failure}: no verdict", self.specs[index]);
            let transition = self.machines[index].handle(now, Err(failure));
            self.timers
                .push(Reverse((self.machines[index].poll_at(), index)));
            if !self.publish(index, transition).await {
                return false;
            }
        }
        while let Some(Reverse((at, index))) = self.timers.peek().copied() {
            if at > now {
                break;
            }
            self.timers.pop();
            // Stale entries (the machine moved on) are skipped.
            if self.machines[index].poll_at() != at {
                continue;
            }
            if self.machines[index].is_running() {
                // The machine's deadline passed: the attempt's task times
                // out by itself, from when it first ran (see
                // BACKSTOP_SLACK); only the backstop remains.
                if let Some(attempt) = &self.running[index] {
                    self.backstops
                        .push(Reverse((instant_now + BACKSTOP_SLACK, attempt.number)));
                }
                continue;
            }
            if self.suspended(index) {
                // No timer while suspended: the address's return puts it
                // back (set_local_addresses), and the check resumes where
                // its schedule stood, its state unchanged.
                continue;
            }
            if let Some(Action::Start { .. }) = self.machines[index].poll(now) {
                self.attempts_started += 1;
                let number = self.attempts_started;
                let due = self.epoch + at.0;
                self.running[index] = Some(Attempt {
                    number,
                    task: None,
                    due,
                });
                self.owners.insert(number, index);
                self.queued.push_back(number);
            }
            self.timers
                .push(Reverse((self.machines[index].poll_at(), index)));
        }
        self.start_queued(attempts);
        true
    }

    /// Spawns queued attempts while permits last ([`READY_TO_RUN`]).
    fn start_queued(&mut self, attempts: &mut JoinSet<(u64, Instant, Outcome)>) {
        while !self.queued.is_empty() {
            let Ok(permit) = self.ready_to_run.clone().try_acquire_owned() else {
                break;
            };
            if let Some(number) = self.queued.pop_front() {
                self.spawn_attempt(number, permit, attempts);
            }
        }
    }

    /// Spawns the queued attempt `number`, which gives `permit` back when
    /// its task first runs.
    fn spawn_attempt(
        &mut self,
        number: u64,
        permit: OwnedSemaphorePermit,
        attempts: &mut JoinSet<(u64, Instant, Outcome)>,
    ) {
        // Its check was removed (a reload), or it was abandoned while
        // queued: nothing to run (the permit goes back).
        let Some(&index) = self.owners.get(&number) else {
            return;
        };
        let spec = self.specs[index].clone();
        #[cfg(test)]
        let starved_for = self.starved_for;
        let task = attempts.spawn(async move {
            #[cfg(test)]
            tokio::time::sleep(starved_for).await;
            // The attempt's limits count from here, when its task first
            // runs, not from when it was due.
            let started = Instant::now();
            drop(permit);
            (number, started, driver::run(&spec, started).await)
        });
        if let Some(attempt) = &mut self.running[index] {
            attempt.task = Some(task);
        }
    }

    /// Whether check `index` waits for its virtual address (`ha_suspend`).
    fn suspended(&self, index: usize) -> bool {
        self.specs[index]
            .ha_suspend
            .is_some_and(|address| !self.is_here(&self.local_addresses, address))
    }

    /// Whether `address` is here by `local` (the addresses as told).
    fn is_here(&self, local: &Option<HashSet<IpAddr>>, address: IpAddr) -> bool {
        match local {
            Some(local) => local.contains(&address),
            None => !self.follows_addresses,
        }
    }

    /// keepalived's `update_checker_activity`: checks of a virtual server
    /// with `ha_suspend` run only while this host holds its address (a
    /// backup director does not check, nor flap its table, for addresses
    /// the master serves).
    /// `None`: the addresses are unknown again (being read again).
    fn set_local_addresses(&mut self, addresses: Option<HashSet<IpAddr>>) {
        let mut watched: Vec<IpAddr> = self
            .specs
            .iter()
            .filter_map(|spec| spec.ha_suspend)
            .collect();
        watched.sort();
        watched.dedup();
        // The first time they are told, a check that was waiting for them
        // and stays suspended is said to be, once.
        let first = self.local_addresses.is_none() && addresses.is_some();
        for address in watched {
            let was = self.is_here(&self.local_addresses, address);
            let is = self.is_here(&addresses, address);
            let still_waiting_when_first_told = first && !is;
            if was == is && !still_waiting_when_first_told {
                continue;
            }
            match (is, addresses.is_some()) {
                (true, _) => tracing::info!("{address} is here: resuming its checks (ha_suspend)"),
                (false, true) => {
                    tracing::info!("{address} is not here: suspending its checks (ha_suspend)")
                }
                (false, false) => tracing::info!(
                    "this host's addresses are being read again: suspending the checks of {address} (ha_suspend)"
                ),
            }
        }
        self.local_addresses = addresses;
        // Resumed checks get their timer back (a duplicate of one still
        // queued is skipped as stale once the first fires).
        for index in 0..self.machines.len() {
            if self.specs[index].ha_suspend.is_some() && !self.suspended(index) {
                self.timers
                    .push(Reverse((self.machines[index].poll_at(), index)));
            }
        }
    }

    /// What the FILE_CHECKs of slot `slot_index` add to its weight.
    fn weight_offset(&self, slot_index: usize) -> i64 {
        self.plan.slots.get(slot_index).map_or(0, |slot| {
            slot.checks
                .iter()
                .map(|check| self.machines[*check].weight_offset())
                .fold(0i64, i64::saturating_add)
        })
    }

    /// Moves to `plan`, as keepalived's reload: checks that are still
    /// configured identically keep their state, timers and running
    /// attempts; new ones start with their warmup; removed ones stop. Real
    /// servers already reported are reported again only if their state
    /// changed; new ones once all their checks have a state.
    async fn reload(&mut self, plan: Plan) -> bool {
        let now = self.now();
        let mut previous: HashMap<CheckSpec, usize> = self
            .specs
            .iter()
            .enumerate()
            .map(|(index, spec)| ((**spec).clone(), index))
            .collect();
        let mut specs = Vec::with_capacity(plan.checks.len());
        let mut machines = Vec::with_capacity(plan.checks.len());
        let mut running = Vec::with_capacity(plan.checks.len());
        let mut reasons = Vec::with_capacity(plan.checks.len());
        for (index, check) in plan.checks.iter().enumerate() {
            match previous.remove(&check.spec) {
                Some(old) => {
                    specs.push(self.specs[old].clone());
                    machines.push(self.machines[old].clone());
                    let attempt = self.running[old].take();
                    if let Some(attempt) = &attempt {
                        self.owners.insert(attempt.number, index);
                    }
                    running.push(attempt);
                    reasons.push(std::mem::take(&mut self.reasons[old]));
                }
                None => {
                    specs.push(Arc::new(check.spec.clone()));
                    running.push(None);
                    if let CheckKind::Bfd(bfd) = &check.spec.kind {
                        // Its session's state, known or (a new session)
                        // Down, at once: a real server already reported
                        // must not seem up (a new checker's default) until
                        // the session's report arrives.
                        let failure = self.bfd_states.get(bfd).cloned().unwrap_or_else(|| {
                            Some(Failure::Other(format!(
                                "session to {} is Down, not Up",
                                bfd.neighbor
                            )))
                        });
                        let mut machine = Machine::external(check.spec.timing.clone());
                        machine.decide(failure.clone());
                        machines.push(machine);
                        reasons.push(match failure {
                            Some(failure) => format!("{}: {failure}", check.spec),
                            None => format!("{}: session to {} up", check.spec, bfd.neighbor),
                        });
                    } else {
                        machines.push(Machine::new(
                            check.spec.timing.clone(),
                            now,
                            fastrand::f64(),
                        ));
                        reasons.push(String::new());
                    }
                }
            }
        }
        for (_, old) in previous {
            if let Some(attempt) = self.running[old].take() {
                if let Some(task) = attempt.task {
                    task.abort();
                }
                self.owners.remove(&attempt.number);
            }
        }
        let previous_slots: HashMap<(VirtualServerKey, RealServerName), usize> = self
            .plan
            .slots
            .iter()
            .enumerate()
            .map(|(index, slot)| {
                (
                    (slot.virtual_server.clone(), slot.real_server.clone()),
                    index,
                )
            })
            .collect();
        let mut health = Vec::with_capacity(plan.slots.len());
        let mut reported = Vec::with_capacity(plan.slots.len());
        let mut weights = Vec::with_capacity(plan.slots.len());
        let mut changes: BTreeMap<(RealServerName, bool, Option<i32>), Vec<VirtualServerKey>> =
            BTreeMap::new();
        // Taken now: the offsets after the reload are reported with any
        // change below.
        for machine in &mut machines {
            machine.take_weight_offset_change();
        }
        for slot in &plan.slots {
            let slot_health = RealServerHealth::new(
                slot.checks
                    .iter()
                    .map(|check| machines[*check].is_up())
                    .collect(),
            );
            let old = previous_slots
                .get(&(slot.virtual_server.clone(), slot.real_server.clone()))
                .copied();
            let was_reported = old.is_some_and(|old| self.reported[old]);
            let weight = old.and_then(|old| self.weights[old]);
            if let Some(old) = old
                && was_reported
                && self.health[old].is_up() != slot_health.is_up()
            {
                changes
                    .entry((slot.real_server.clone(), slot_health.is_up(), weight))
                    .or_default()
                    .push(slot.virtual_server.clone());
            }
            health.push(slot_health);
            reported.push(was_reported);
            weights.push(weight);
        }
        self.timers = machines
            .iter()
            .enumerate()
            .map(|(index, machine)| Reverse((machine.poll_at(), index)))
            .collect();
        self.plan = plan;
        self.specs = specs;
        // A session dropped now starts anew (Down) if configured again.
        let sessions = self.bfd_sessions();
        self.bfd_states.retain(|spec, _| sessions.contains(spec));
        self.machines = machines;
        self.running = running;
        self.reasons = reasons;
        self.health = health;
        self.reported = reported;
        self.weights = weights;
        for ((real_server, up, weight), virtual_servers) in changes {
            let slot = self
                .plan
                .slots
                .iter()
                .position(|slot| slot.real_server == real_server)
                .unwrap_or_default();
            let change = StateChange {
                weight_offset: self.weight_offset(slot),
                real_server,
                virtual_servers,
                up,
                initial: false,
                reason: "configuration reloaded".to_owned(),
                weight,
            };
            if self.events.send(change).await.is_err() {
                return false;
            }
        }
        let ready: Vec<usize> = (0..self.plan.slots.len())
            .filter(|slot| {
                !self.reported[*slot]
                    && self.plan.slots[*slot]
                        .checks
                        .iter()
                        .all(|check| self.machines[*check].has_reported())
            })
            .collect();
        self.send_initial(&ready).await
    }

    /// Applies a check's transition and weight change to its subscribers;
    /// sends what changed. False when nobody listens any more.
    async fn publish(&mut self, index: usize, transition: Option<Transition>) -> bool {
        let weight = self.machines[index].take_weight_change();
        let offset = self.machines[index].take_weight_offset_change();
        let adjusted = weight.is_some() || offset.is_some();
        if transition.is_none() && !adjusted {
            return true;
        }
        let spec = &self.specs[index];
        let reason = match &transition {
            Some(Transition {
                reason: Some(failure),
                failures,
                ..
            }) if *failures > 1 => format!("{spec}: {failure} ({failures} attempts)"),
            Some(Transition {
                reason: Some(failure),
                ..
            }) => format!("{spec}: {failure}"),
            Some(_) => match &spec.kind {
                CheckKind::Bfd(bfd) => format!("{spec}: session to {} up", bfd.neighbor),
                _ => format!("{spec}: success"),
            },
            None => match (weight, offset) {
                (Some(weight), _) => format!("{spec}: weight {weight}"),
                (None, offset) => format!("{spec}: weight offset {}", offset.unwrap_or_default()),
            },
        };
        if let Some(transition) = &transition {
            self.reasons[index] = reason.clone();
            if transition.up {
                tracing::info!("checker up: {reason}");
            } else {
                tracing::warn!("checker down: {reason}");
            }
        }
        let mut initial_slots = Vec::new();
        let mut changes: BTreeMap<ChangeKey, Vec<VirtualServerKey>> = BTreeMap::new();
        for &(slot_index, position) in &self.plan.checks[index].subscribers {
            if weight.is_some() {
                self.weights[slot_index] = weight;
            }
            let changed = transition
                .as_ref()
                .and_then(|transition| self.health[slot_index].set(position, transition.up));
            let slot = &self.plan.slots[slot_index];
            if let (Some(observer), Some(transition)) = (&self.observer, &transition) {
                observer.transition(&CheckTransition {
                    check: spec,
                    real_server: &slot.real_server,
                    virtual_server: &slot.virtual_server,
                    up: transition.up,
                    was_up: if transition.initial {
                        !spec.timing.alpha
                    } else {
                        !transition.up
                    },
                    initial: transition.initial,
                    server_changed: changed.is_some(),
                    server_up: self.health[slot_index].is_up(),
                    failure: transition.reason.as_ref(),
                });
            }
            if !self.reported[slot_index] {
                if slot
                    .checks
                    .iter()
                    .all(|check| self.machines[*check].has_reported())
                {
                    initial_slots.push(slot_index);
                }
            } else if let Some(up) = changed.or(adjusted.then(|| self.health[slot_index].is_up())) {
                changes
                    .entry((
                        slot.real_server.clone(),
                        up,
                        self.weights[slot_index],
                        self.weight_offset(slot_index),
                    ))
                    .or_default()
                    .push(slot.virtual_server.clone());
            }
        }
        if !self.send_initial(&initial_slots).await {
            return false;
        }
        for ((real_server, up, weight, weight_offset), virtual_servers) in changes {
            let change = StateChange {
                real_server,
                virtual_servers,
                up,
                initial: false,
                reason: reason.clone(),
                weight,
                weight_offset,
            };
            if self.events.send(change).await.is_err() {
                return false;
            }
        }
        true
    }

    /// Sends the initial state of `slots`, grouped by real server, state
    /// and reason.
    async fn send_initial(&mut self, slots: &[usize]) -> bool {
        let mut groups: BTreeMap<InitialKey, Vec<VirtualServerKey>> = BTreeMap::new();
        for &slot_index in slots {
            self.reported[slot_index] = true;
            let slot = &self.plan.slots[slot_index];
            let up = self.health[slot_index].is_up();
            // Down: the first check that is down says why. Up: every
            // check's success.
            let reason = if slot.checks.is_empty() {
                "no checker".to_owned()
            } else if up {
                let mut reasons: Vec<&str> = slot
                    .checks
                    .iter()
                    .map(|check| self.reasons[*check].as_str())
                    .collect();
                reasons.dedup();
                reasons.join("; ")
            } else {
                slot.checks
                    .iter()
                    .find(|check| !self.machines[**check].is_up())
                    .map(|check| self.reasons[*check].clone())
                    .unwrap_or_default()
            };
            groups
                .entry((
                    slot.real_server.clone(),
                    up,
                    reason,
                    self.weights[slot_index],
                    self.weight_offset(slot_index),
                ))
                .or_default()
                .push(slot.virtual_server.clone());
        }
        for ((real_server, up, reason, weight, weight_offset), virtual_servers) in groups {
            let change = StateChange {
                real_server,
                virtual_servers,
                up,
                initial: true,
                reason,
                weight,
                weight_offset,
            };
            if self.events.send(change).await.is_err() {
                return false;
            }
        }
        true
    }
}

/// What a running scheduler can be told.
#[derive(Debug)]
pub enum Command {
    /// Move to a new plan (a configuration reload).
    Reload(Plan),
    /// The addresses this host holds now (for `ha_suspend`); `None`: they
    /// are being read again, and are unknown until the next.
    LocalAddresses(Option<HashSet<IpAddr>>),
}

/// A running scheduler: its events, and how to steer and stop it.
pub struct Handle {
    /// The verdicts; see [`Handle::take_events`].
    pub events: mpsc::Receiver<StateChange>,
    /// Whether [`Handle::take_events`] took them.
    events_taken: bool,
    commands: mpsc::Sender<Command>,
    shutdown: broadcast::Sender<()>,
    done: mpsc::Receiver<()>,
}

impl Handle {
    /// Starts a scheduler for `plan` on the current runtime. Until it is
    /// told this host's addresses ([`Handle::local_addresses`]; nanny never
    /// tells), checks with `ha_suspend` run.
    pub fn spawn(plan: Plan, start: Start) -> Handle {
        Handle::spawn_unstarved(plan, start, false)
    }

    /// [`Handle::spawn`] for a caller that tells the scheduler this host's
    /// addresses ([`Handle::local_addresses`]): checks with `ha_suspend`
    /// wait until it has, and while it says they are being read again. A
    /// check must not run only because the addresses were not read yet:
    /// on a busy host the first reading can take longer than the warmup
    /// (in the lab on 2026-12-01, the daemon read them 4 s after it
    /// started, and a check with `ha_suspend` had run and taken its server
    /// out of a director that did not hold the address).
    pub fn spawn_following_addresses(plan: Plan, start: Start) -> Handle {
        Handle::spawn_unstarved(plan, start, true)
    }

    /// [`Handle::spawn_following_addresses`] for a scheduler that begins
    /// once `gate` is done, with the plan `plan` makes then (on the blocking
    /// pool). pulse starts its checkers once its start pass has programmed
    /// the kernel, as keepalived's checker process registers its checkers
    /// after `init_services`: building the plan and sending the first
    /// verdicts (one per real server without checkers) would otherwise take
    /// the processors from the start's batch. The handle serves at once:
    /// commands wait in its queue, and a shutdown before the scheduler
    /// begins ends it there.
    /// `observer`, if any, is told of each finished attempt.
    pub fn spawn_following_addresses_after(
        gate: impl Future<Output = ()> + Send + 'static,
        plan: impl FnOnce() -> Plan + Send + 'static,
        start: Start,
        observer: Option<Arc<dyn AttemptObserver>>,
    ) -> Handle {
        Handle::spawn_with(
            async move {
                gate.await;
                tokio::task::spawn_blocking(plan)
                    .await
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic.into_panic()))
            },
            start,
            true,
            observer,
            #[cfg(test)]
            Duration::ZERO,
            #[cfg(test)]
            READY_TO_RUN,
        )
    }

    /// A scheduler as on a runtime that polls its attempts at once (the
    /// only kind outside tests).
    fn spawn_unstarved(plan: Plan, start: Start, follows_addresses: bool) -> Handle {
        Handle::spawn_with(
            std::future::ready(plan),
            start,
            follows_addresses,
            None,
            #[cfg(test)]
            Duration::ZERO,
            #[cfg(test)]
            READY_TO_RUN,
        )
    }

    /// Tests: a scheduler whose attempts wait `starved_for` before they
    /// run, as on a starved runtime, `ready_to_run` of them at most.
    #[cfg(test)]
    fn spawn_starved(
        plan: Plan,
        start: Start,
        starved_for: Duration,
        ready_to_run: usize,
    ) -> Handle {
        Handle::spawn_with(
            std::future::ready(plan),
            start,
            false,
            None,
            starved_for,
            ready_to_run,
        )
    }

    /// Starts the scheduler once `plan` is ready (unless shut down before).
    fn spawn_with(
        plan: impl Future<Output = Plan> + Send + 'static,
        start: Start,
        follows_addresses: bool,
        observer: Option<Arc<dyn AttemptObserver>>,
        #[cfg(test)] starved_for: Duration,
        #[cfg(test)] ready_to_run: usize,
    ) -> Handle {
        let (events_sender, events) = mpsc::channel(1024);
        let (shutdown, mut shutdown_receiver) = broadcast::channel(1);
        let (done_sender, done) = mpsc::channel(1);
        let (commands, commands_receiver) = mpsc::channel(8);
        tokio::spawn(async move {
            let plan = tokio::select! {
                plan = plan => plan,
                // `done_sender` dropped on return: the shutdown ends.
                _ = shutdown_receiver.recv() => return,
            };
            let mut scheduler = Scheduler::new(plan, start, events_sender);
            scheduler.follows_addresses = follows_addresses;
            scheduler.observer = observer;
            #[cfg(test)]
            {
                scheduler.starved_for = starved_for;
                scheduler.ready_to_run = Arc::new(Semaphore::new(ready_to_run));
            }
            scheduler
                .run(commands_receiver, shutdown_receiver, done_sender)
                .await;
        });
        Handle {
            events,
            events_taken: false,
            commands,
            shutdown,
            done,
        }
    }

    /// Moves the scheduler to `plan` (see [`Scheduler`]'s reload).
    pub async fn reload(&self, plan: Plan) {
        let _ = self.commands.send(Command::Reload(plan)).await;
    }

    /// Tells the scheduler which addresses this host holds (`ha_suspend`);
    /// `None`: they are being read again (after lost events), unknown
    /// until the next call.
    pub async fn local_addresses(&self, addresses: Option<HashSet<IpAddr>>) {
        let _ = self.commands.send(Command::LocalAddresses(addresses)).await;
    }

    /// The verdicts, for a consumer of its own (the reconciler takes them
    /// straight from the scheduler, with nothing relaying them); `None` once
    /// taken. The consumer must go on receiving until [`Handle::shutdown`]
    /// returns, or drop the receiver: a scheduler waiting to send holds up
    /// the shutdown.
    pub fn take_events(&mut self) -> Option<mpsc::Receiver<StateChange>> {
        if self.events_taken {
            return None;
        }
        self.events_taken = true;
        // A closed stand-in, which `shutdown` drains at once.
        let (_, closed) = mpsc::channel(1);
        Some(std::mem::replace(&mut self.events, closed))
    }

    /// Stops the scheduler and waits until every attempt is cancelled.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(());
        // Unblock a scheduler waiting to send (unless the events were
        // taken: their consumer receives them).
        self.events.close();
        while self.events.recv().await.is_some() {}
        let _ = self.done.recv().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::tcp::tests::{closed_port, saturated_listener};
    use std::net::SocketAddr;
    use tokio::net::TcpListener;
    use tokio::sync::oneshot;

    /// The checks of `text`, its scripts reviewed (MISC_CHECK runs only
    /// reviewed scripts).
    fn plan(text: &str) -> Plan {
        let mut loaded = fulcrum_config::load_str("test.conf", text, &Default::default());
        fulcrum_scripts::review::review_here(
            &mut loaded.config,
            &[fulcrum_scripts::review::Part::Checkers],
        );
        Plan::from_config(&loaded.config)
    }

    fn service(virtual_address: &str, real: SocketAddr, extra: &str) -> String {
        format!(
            "virtual_server {virtual_address} 80 {{
    protocol TCP
    delay_loop 1
    real_server {} {} {{
        TCP_CHECK {{
            connect_timeout 3
            retry 0
            {extra}
        }}
    }}
}}
",
            real.ip(),
            real.port()
        )
    }

    /// Whether nothing is reported for a minute.
    async fn quiet(handle: &mut Handle) -> bool {
        tokio::time::timeout(Duration::from_secs(60), handle.events.recv())
            .await
            .is_err()
    }

    async fn next(handle: &mut Handle) -> StateChange {
        tokio::time::timeout(Duration::from_secs(600), handle.events.recv())
            .await
            .expect("a state change in time")
            .expect("the scheduler runs")
    }

    /// Two virtual servers with the same closed real server, checked
    /// alike, but 192.0.2.1's with `ha_suspend`.
    async fn one_of_two_suspended() -> String {
        let down = closed_port().await;
        let suspended = service("192.0.2.1", down, "")
            .replace("    delay_loop 1\n", "    delay_loop 1\n    ha_suspend\n");
        [suspended, service("192.0.2.2", down, "")].concat()
    }

    /// The next change is the first report of `virtual_server`'s check:
    /// down.
    async fn first_reported_down(handle: &mut Handle, virtual_server: &str) {
        let change = next(handle).await;
        let names: Vec<String> = change
            .virtual_servers
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(names, [virtual_server]);
        assert!(!change.up && change.initial);
    }

    /// 192.0.2.1 arrives (a VRRP takeover): its check runs and reports.
    async fn the_address_arrives(handle: &mut Handle) {
        handle
            .local_addresses(Some(HashSet::from(["192.0.2.1".parse().unwrap()])))
            .await;
        first_reported_down(handle, "192.0.2.1:80 TCP").await;
    }

    #[tokio::test(start_paused = true)]
    async fn ha_suspend_checks_run_only_while_the_virtual_address_is_here() {
        let plan = plan(&one_of_two_suspended().await);
        // The same endpoint, but not the same check: one may be suspended.
        assert_eq!(plan.checks.len(), 2);
        // Warmup: the addresses arrive before the first attempt.
        let mut handle = Handle::spawn(plan, Start::Warmup);
        handle.local_addresses(Some(HashSet::new())).await;
        first_reported_down(&mut handle, "192.0.2.2:80 TCP").await;
        // 192.0.2.1 is not here: its check does not run, nothing is said.
        assert!(quiet(&mut handle).await);
        the_address_arrives(&mut handle).await;
        handle.shutdown().await;
    }

    /// pulse's scheduler: a check with `ha_suspend` waits until it is told
    /// the addresses, however late, and while they are read again.
    #[tokio::test(start_paused = true)]
    async fn ha_suspend_checks_wait_for_the_addresses_when_they_are_followed() {
        let plan = plan(&one_of_two_suspended().await);
        let mut handle = Handle::spawn_following_addresses(plan, Start::Warmup);
        // The check without ha_suspend runs; the other waits, well past
        // its warmup, for addresses that are late.
        first_reported_down(&mut handle, "192.0.2.2:80 TCP").await;
        assert!(
            quiet(&mut handle).await,
            "checked before the addresses were known"
        );
        // Being read again (lost events): still waiting when they come back
        // with the address, then the check runs.
        handle.local_addresses(None).await;
        assert!(quiet(&mut handle).await);
        the_address_arrives(&mut handle).await;
        handle.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn shared_checks_report_once_for_every_virtual_server() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up = listener.local_addr().unwrap();
        let down = closed_port().await;
        let text = [
            service("192.0.2.1", up, ""),
            service("192.0.2.2", up, ""),
            service("192.0.2.3", down, ""),
        ]
        .concat();
        let plan = plan(&text);
        assert_eq!(plan.checks.len(), 2);
        let mut handle = Handle::spawn(plan, Start::Warmup);
        let mut changes = [next(&mut handle).await, next(&mut handle).await];
        changes.sort_by_key(|change| change.up);
        assert!(!changes[0].up && changes[0].initial);
        assert_eq!(changes[0].real_server.address, down);
        assert_eq!(
            changes[0].reason,
            format!("TCP_CHECK {down}: connection refused")
        );
        assert!(changes[1].up && changes[1].initial);
        assert_eq!(changes[1].real_server.address, up);
        assert_eq!(
            changes[1]
                .virtual_servers
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["192.0.2.1:80 TCP", "192.0.2.2:80 TCP"]
        );
        handle.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn down_and_recovery_as_the_server_goes_and_comes_back() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let mut handle = Handle::spawn(plan(&service("192.0.2.1", address, "")), Start::Warmup);
        let first = next(&mut handle).await;
        assert!(first.up && first.initial);
        drop(listener);
        let down = next(&mut handle).await;
        assert!(!down.up && !down.initial);
        assert_eq!(
            down.reason,
            format!("TCP_CHECK {address}: connection refused")
        );
        let listener = TcpListener::bind(address).await.unwrap();
        let up = next(&mut handle).await;
        assert!(up.up && !up.initial);
        assert_eq!(up.reason, format!("TCP_CHECK {address}: success"));
        drop(listener);
        assert!(!next(&mut handle).await.up);
        handle.shutdown().await;
    }

    /// Records what it is told: the check, and whether it succeeded.
    #[derive(Default)]
    struct Recorder(std::sync::Mutex<Vec<(String, bool)>>);

    impl AttemptObserver for Recorder {
        fn observe(&self, check: &CheckSpec, _took: Duration, succeeded: bool) {
            self.0.lock().unwrap().push((check.to_string(), succeeded));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_observer_is_told_of_each_attempt_and_its_outcome() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let recorder = Arc::new(Recorder::default());
        let text = service("192.0.2.1", address, "");
        let mut handle = Handle::spawn_following_addresses_after(
            async {},
            move || plan(&text),
            Start::Immediately,
            Some(recorder.clone()),
        );
        handle.local_addresses(Some(HashSet::new())).await;
        assert!(next(&mut handle).await.up);
        drop(listener);
        assert!(!next(&mut handle).await.up);
        handle.shutdown().await;
        let told = recorder.0.lock().unwrap().clone();
        let check = format!("TCP_CHECK {address}");
        assert_eq!(told.first(), Some(&(check.clone(), true)), "{told:?}");
        assert_eq!(told.last(), Some(&(check, false)), "{told:?}");
    }

    /// A transition as told: up, was up, initial, server changed, server
    /// up.
    type Told = (bool, bool, bool, bool, bool);

    /// Keeps each check transition it is told of.
    #[derive(Default)]
    struct Transitions(std::sync::Mutex<Vec<Told>>);

    impl AttemptObserver for Transitions {
        fn observe(&self, _check: &CheckSpec, _took: Duration, _succeeded: bool) {}

        fn transition(&self, transition: &CheckTransition<'_>) {
            self.0.lock().unwrap().push((
                transition.up,
                transition.was_up,
                transition.initial,
                transition.server_changed,
                transition.server_up,
            ));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_observer_is_told_of_each_transition_as_keepalived_s_checker_sees_it() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let transitions = Arc::new(Transitions::default());
        let text = service("192.0.2.1", address, "");
        let mut handle = Handle::spawn_following_addresses_after(
            async {},
            move || plan(&text),
            Start::Immediately,
            Some(transitions.clone()),
        );
        handle.local_addresses(Some(HashSet::new())).await;
        assert!(next(&mut handle).await.up);
        drop(listener);
        assert!(!next(&mut handle).await.up);
        handle.shutdown().await;
        let told = transitions.0.lock().unwrap().clone();
        // (up, was_up, initial, server_changed, server_up): the first
        // success confirms the state a checker without alpha starts in;
        // the failure changes the check and the server.
        assert_eq!(
            told,
            vec![
                (true, true, true, false, true),
                (false, true, false, true, false)
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn retries_before_down_are_counted_in_the_reason() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let text = service("192.0.2.1", address, "").replace("retry 0", "retry 2");
        let mut handle = Handle::spawn(plan(&text), Start::Immediately);
        assert!(next(&mut handle).await.up);
        drop(listener);
        let down = next(&mut handle).await;
        assert_eq!(
            down.reason,
            format!("TCP_CHECK {address}: connection refused (3 attempts)")
        );
        handle.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_hanging_connect_is_a_timeout_and_others_go_on() {
        let (_listener, _held, hanging) = saturated_listener().await;
        let healthy_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let healthy = healthy_listener.local_addr().unwrap();
        let text = [
            service("192.0.2.1", hanging, ""),
            service("192.0.2.2", healthy, ""),
        ]
        .concat();
        let mut handle = Handle::spawn(plan(&text), Start::Immediately);
        let first = next(&mut handle).await;
        assert!(first.up, "the healthy server first: {first:?}");
        assert_eq!(first.real_server.address, healthy);
        let second = next(&mut handle).await;
        assert!(!second.up);
        assert_eq!(
            second.reason,
            format!("TCP_CHECK {hanging}: timeout after 3 s")
        );
        handle.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn an_attempt_starved_past_its_deadline_is_judged_by_the_server() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        // connect_timeout 3: the machine's deadline is 4 s after an
        // attempt is due; each attempt's task first runs 10 s after.
        let starved_for = Duration::from_secs(10);
        let text = service("192.0.2.1", address, "");
        let mut handle =
            Handle::spawn_starved(plan(&text), Start::Immediately, starved_for, READY_TO_RUN);
        let first = next(&mut handle).await;
        assert!(first.up && first.initial, "{first:?}");
        assert_eq!(first.reason, format!("TCP_CHECK {address}: success"));
        // Still true when the server does go: refused, not a timeout.
        drop(listener);
        let down = next(&mut handle).await;
        assert!(!down.up && !down.initial, "{down:?}");
        assert_eq!(
            down.reason,
            format!("TCP_CHECK {address}: connection refused")
        );
        handle.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn an_attempt_starved_past_the_backstop_is_no_verdict() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        // Due at 0, deadline at 4 s, abandoned at 4 s + BACKSTOP_SLACK.
        let starved_for = Duration::from_secs(4) + BACKSTOP_SLACK + Duration::from_secs(1);
        let text = service("192.0.2.1", address, "");
        let mut handle =
            Handle::spawn_starved(plan(&text), Start::Immediately, starved_for, READY_TO_RUN);
        let first = next(&mut handle).await;
        // Reported as it stands (up: no alpha), with why it is unchecked.
        assert!(first.up && first.initial, "{first:?}");
        assert_eq!(
            first.reason,
            format!(
                "TCP_CHECK {address}: could not run the check: attempt unfinished 34 s \
                 after it was due (nanny too busy to run it)"
            )
        );
        handle.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn attempts_beyond_those_ready_to_run_wait_in_the_queue_and_are_not_failed() {
        let mut listeners = Vec::new();
        let mut text = String::new();
        for index in 0..5 {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            text.push_str(&service(
                &format!("192.0.2.{}", index + 1),
                listener.local_addr().unwrap(),
                "",
            ));
            listeners.push(listener);
        }
        // Each task runs 10 s after it is spawned; two may wait at once.
        let starved_for = Duration::from_secs(10);
        let started = Instant::now();
        let mut handle = Handle::spawn_starved(plan(&text), Start::Immediately, starved_for, 2);
        for _ in 0..5 {
            let change = next(&mut handle).await;
            assert!(change.up && change.initial, "{change:?}");
        }
        // Three turns of two (paused time: exact): the third pair was
        // spawned only once the second had started. Unbounded, all five
        // would have answered after 10 s.
        assert_eq!(Instant::now() - started, starved_for * 3);
        handle.shutdown().await;
    }

    #[test]
    fn an_attempt_holds_only_its_own_kind_of_state() {
        // Thousands wait to run at once under overload: each is small.
        let plan = plan(&service("192.0.2.1", "127.0.0.1:80".parse().unwrap(), ""));
        let spec = &plan.checks[0].spec;
        let attempt = driver::run(spec, Instant::now());
        assert!(
            std::mem::size_of_val(&attempt) < 1024,
            "{} bytes",
            std::mem::size_of_val(&attempt)
        );
    }

    /// A log writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn late_attempts_are_logged_under_the_load_target() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(format!("{LOAD}=warn")))
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        // This test's runtime has one thread: every task logs here.
        let _guard = tracing::subscriber::set_default(subscriber);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let text = service("192.0.2.1", address, "");
        let starved_for = Duration::from_secs(2);
        let mut handle =
            Handle::spawn_starved(plan(&text), Start::Immediately, starved_for, READY_TO_RUN);
        assert!(next(&mut handle).await.up);
        // Attempts every 3 s (2 s late, 1 s delay_loop), summed up every
        // 10 s: the first summary comes with the fifth attempt.
        tokio::time::sleep(Duration::from_secs(13)).await;
        handle.shutdown().await;
        let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert!(
            log.contains(&format!(
                "WARN {LOAD}: behind schedule: 5 of 5 attempts in the last 12 s started 1 s or \
                 more after they were due (at worst 2.0 s), 0 abandoned unfinished"
            )),
            "{log}"
        );
    }

    #[test]
    fn lateness_is_summed_up_only_when_there_was_some() {
        let start = Instant::now();
        let mut lateness = Lateness::default();
        assert_eq!(lateness.record(Duration::ZERO, start), None);
        assert_eq!(
            lateness.record(Duration::from_millis(10), start + LATENESS_REPORT),
            None
        );
        // Reset at the last summary: this one comes a period later.
        let later = start + LATENESS_REPORT + Duration::from_secs(1);
        assert_eq!(lateness.record(Duration::from_millis(2500), later), None);
        lateness.abandoned += 1;
        assert_eq!(
            lateness
                .record(Duration::ZERO, start + LATENESS_REPORT * 2)
                .as_deref(),
            Some(
                "behind schedule: 1 of 2 attempts in the last 10 s started 1 s or more after \
                 they were due (at worst 2.5 s), 1 abandoned unfinished; checks run less often \
                 than configured (late, not failed)"
            )
        );
    }

    #[tokio::test(start_paused = true)]
    async fn udp_silence_is_up_through_the_scheduler() {
        let silent = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let address = silent.local_addr().unwrap();
        let text = format!(
            "virtual_server 192.0.2.1 53 {{
    protocol UDP
    real_server {} {} {{
        UDP_CHECK {{
            connect_timeout 2
        }}
    }}
}}
",
            address.ip(),
            address.port()
        );
        let mut handle = Handle::spawn(plan(&text), Start::Immediately);
        let change = next(&mut handle).await;
        assert!(change.up, "{change:?}");
        assert_eq!(change.reason, format!("UDP_CHECK {address}: success"));
        handle.shutdown().await;
        drop(silent);
    }

    #[tokio::test(start_paused = true)]
    async fn http_flapping_is_reported_change_by_change_with_reasons() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let healthy = Arc::new(AtomicBool::new(true));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        {
            let healthy = healthy.clone();
            tokio::spawn(async move {
                while let Ok((mut stream, _)) = listener.accept().await {
                    let mut request = [0u8; 1024];
                    let _ = stream.read(&mut request).await;
                    let response: &[u8] = if healthy.load(Ordering::SeqCst) {
                        b"HTTP/1.0 200 OK\r\n\r\nfine"
                    } else {
                        b"HTTP/1.0 503 Service Unavailable\r\n\r\n"
                    };
                    let _ = stream.write_all(response).await;
                }
            });
        }
        let text = format!(
            "virtual_server 192.0.2.1 80 {{
    protocol TCP
    delay_loop 5
    real_server {} {} {{
        HTTP_GET {{
            url {{
                path /health
            }}
            retry 1
            delay_before_retry 2
            connect_timeout 3
        }}
    }}
}}
",
            address.ip(),
            address.port()
        );
        let mut handle = Handle::spawn(plan(&text), Start::Immediately);
        assert!(next(&mut handle).await.up);
        for _ in 0..2 {
            healthy.store(false, Ordering::SeqCst);
            let down = next(&mut handle).await;
            assert!(!down.up);
            assert_eq!(
                down.reason,
                format!("HTTP_GET {address}: status 503 (2 attempts)")
            );
            healthy.store(true, Ordering::SeqCst);
            let up = next(&mut handle).await;
            assert!(up.up);
            assert_eq!(up.reason, format!("HTTP_GET {address}: success"));
        }
        handle.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_reload_keeps_states_and_reports_only_what_is_new_or_changed() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up = listener.local_addr().unwrap();
        let down = closed_port().await;
        let mut handle = Handle::spawn(plan(&service("192.0.2.1", up, "")), Start::Immediately);
        let first = next(&mut handle).await;
        assert!(first.up && first.initial);
        // The same check under a second virtual server, and a new server.
        let text = [
            service("192.0.2.1", up, ""),
            service("192.0.2.2", up, ""),
            service("192.0.2.3", down, ""),
        ]
        .concat();
        handle.reload(plan(&text)).await;
        // The shared check already has a state: reported at once, for the
        // new virtual server only.
        let shared = next(&mut handle).await;
        assert!(shared.up && shared.initial);
        assert_eq!(shared.virtual_servers.len(), 1);
        assert_eq!(shared.virtual_servers[0].to_string(), "192.0.2.2:80 TCP");
        let new = next(&mut handle).await;
        assert!(!new.up && new.initial);
        assert_eq!(new.real_server.address, down);
        // Removing a server reports nothing; the kept one goes on.
        handle.reload(plan(&service("192.0.2.1", up, ""))).await;
        drop(listener);
        let change = next(&mut handle).await;
        assert!(!change.up && !change.initial);
        assert_eq!(change.real_server.address, up);
        assert_eq!(change.virtual_servers.len(), 1);
        handle.shutdown().await;
    }

    #[tokio::test]
    async fn misc_dynamic_weights_are_streamed() {
        let directory = std::env::temp_dir().join(format!("nanny-weight-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let code = directory.join("code");
        std::fs::write(&code, "7").unwrap();
        let text = format!(
            "virtual_server 192.0.2.1 80 {{
    protocol TCP
    delay_loop 1
    real_server 127.0.0.1 80 {{
        MISC_CHECK {{
            misc_path \"/bin/sh -c 'exit $(cat {})'\"
            misc_dynamic
            warmup 0
        }}
    }}
}}
",
            code.display()
        );
        let mut handle = Handle::spawn(plan(&text), Start::Immediately);
        let first = next(&mut handle).await;
        assert!(first.up && first.initial);
        assert_eq!(first.weight, Some(5));
        std::fs::write(&code, "12").unwrap();
        let second = next(&mut handle).await;
        assert!(second.up && !second.initial);
        assert_eq!(second.weight, Some(10));
        assert!(second.reason.ends_with(": weight 10"), "{}", second.reason);
        handle.shutdown().await;
        let _ = std::fs::remove_dir_all(&directory);
    }

    #[tokio::test(start_paused = true)]
    async fn file_check_weights_and_faults_are_streamed() {
        let directory = std::env::temp_dir().join(format!("nanny-file-w-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let status = directory.join("status");
        std::fs::write(&status, "5").unwrap();
        let text = format!(
            "track_file status {{
    file {}
    weight 2
}}
virtual_server 192.0.2.1 80 {{
    protocol TCP
    real_server 127.0.0.1 80 {{
        FILE_CHECK {{
            track_file status
        }}
    }}
}}
",
            status.display()
        );
        let mut handle = Handle::spawn(plan(&text), Start::Immediately);
        let first = next(&mut handle).await;
        assert!(first.up && first.initial);
        assert_eq!(first.weight_offset, 10);
        std::fs::write(&status, "-3").unwrap();
        let second = next(&mut handle).await;
        assert!(second.up && !second.initial);
        assert_eq!(second.weight_offset, -6);
        std::fs::write(&status, "-200").unwrap();
        let third = next(&mut handle).await;
        assert!(!third.up);
        assert_eq!(
            third.reason,
            format!(
                "FILE_CHECK {}: {} holds -200",
                status.display(),
                status.display()
            )
        );
        handle.shutdown().await;
        let _ = std::fs::remove_dir_all(&directory);
    }

    #[tokio::test(start_paused = true)]
    async fn a_real_server_without_checkers_is_up() {
        let text = "virtual_server 192.0.2.1 80 {
    protocol TCP
    real_server 127.0.0.1 80 {
    }
}
";
        let mut handle = Handle::spawn(plan(text), Start::Warmup);
        let change = next(&mut handle).await;
        assert!(change.up && change.initial);
        assert_eq!(change.reason, "no checker");
        handle.shutdown().await;
    }

    /// A scheduler started after a gate (pulse's, once its start pass is
    /// applied) makes its plan and says anything only once the gate opens;
    /// commands sent before wait; stopped before, it ends at once.
    #[tokio::test(start_paused = true)]
    async fn a_gated_scheduler_begins_when_its_gate_opens() {
        let text = "virtual_server 192.0.2.1 80 {
    protocol TCP
    real_server 127.0.0.1 80 {
    }
}
";
        let (open, gate) = oneshot::channel::<()>();
        let planned = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut handle = Handle::spawn_following_addresses_after(
            async {
                let _ = gate.await;
            },
            {
                let planned = planned.clone();
                move || {
                    planned.store(true, std::sync::atomic::Ordering::SeqCst);
                    plan(text)
                }
            },
            Start::Warmup,
            None,
        );
        handle.local_addresses(Some(HashSet::new())).await;
        assert!(quiet(&mut handle).await, "said something before the gate");
        assert!(!planned.load(std::sync::atomic::Ordering::SeqCst));
        open.send(()).unwrap();
        let change = next(&mut handle).await;
        assert!(change.up && change.initial);
        assert!(planned.load(std::sync::atomic::Ordering::SeqCst));
        handle.shutdown().await;

        let (_open, gate) = oneshot::channel::<()>();
        let handle = Handle::spawn_following_addresses_after(
            async {
                let _ = gate.await;
            },
            || -> Plan { panic!("planned though stopped before the gate") },
            Start::Warmup,
            None,
        );
        tokio::time::timeout(Duration::from_secs(1), handle.shutdown())
            .await
            .expect("a shutdown before the gate ends at once");
    }
}
