//! `vrrp_track_process` counting, without I/O, as keepalived 2.2.7's
//! track_process.c: which processes match which tracked process, how many
//! each has, and when its quorum is gained or lost, with the fork and
//! terminate delays. The caller reads /proc and the kernel's process
//! events and says what time it is.
//!
//! keepalived's rules, each where its source has it:
//!
//! - A process matches by its name (/proc/PID/comm, 15 characters at most)
//!   equal to `process`, or with `full_command` by its command line's first
//!   word, then its parameters as `param_match` says (`check_params`).
//!   Zombies are not counted (`read_procs`).
//! - Quorum: `quorum <= count <= quorum_max`. Only crossing a bound
//!   changes it: reaching `quorum` or `quorum_max + 1` on a new process,
//!   leaving `quorum` or reaching `quorum_max` on one gone.
//! - A process that execs or renames itself is matched again at once
//!   (`check_process`, `check_process_comm_change`): no delay. One forked by
//!   a counted process counts for what its parent counts for, and a change
//!   of quorum it makes waits `fork_delay` (`check_process_fork`); one that
//!   exits makes its change wait `terminate_delay`
//!   (`check_process_termination`). A change the other way while a delay
//!   runs cancels the delay, and the state is set at once from the count.
//! - After lost events (the socket's buffer overrun), /proc is read again:
//!   a gained quorum applies at once, a lost one after `terminate_delay`
//!   (`reinitialise_track_processes`).
//!
//! Where keepalived counts a process twice for one tracked process (an
//! exec into the same name, a fork seen both in a rescan and as an event),
//! a process counts once here: keepalived's count is a list of references,
//! and those cases add a second one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use fulcrum_config::model as config;

/// What /proc says of a process: its name (`comm`) and, when some tracked
/// process matches command lines, its command line (/proc/PID/cmdline:
/// each word followed by a NUL).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub comm: Option<Vec<u8>>,
    pub command_line: Option<Vec<u8>>,
}

/// A `vrrp_track_process`, resolved for matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matcher {
    pub name: String,
    /// The process name, or the command's first word.
    path: Vec<u8>,
    /// The parameters, each followed by a NUL, as in /proc/PID/cmdline;
    /// `None` without any.
    parameters: Option<Vec<u8>>,
    param_match: Option<config::ParamMatch>,
    full_command: bool,
    quorum: u32,
    quorum_max: u32,
    fork_delay: Option<Duration>,
    terminate_delay: Option<Duration>,
}

impl Matcher {
    pub fn new(process: &config::TrackProcess) -> Matcher {
        let words = process.process.clone().unwrap_or_default();
        let (path, parameters) = match words.split_first() {
            Some((path, parameters)) => (path.as_bytes().to_vec(), parameters),
            None => (Vec::new(), &[][..]),
        };
        let parameters = (!parameters.is_empty()).then(|| {
            parameters
                .iter()
                .flat_map(|word| word.bytes().chain([0]))
                .collect()
        });
        Matcher {
            name: process.name.clone(),
            path,
            parameters,
            param_match: process.param_match,
            full_command: process.full_command,
            quorum: process.quorum,
            quorum_max: process.quorum_max.unwrap_or(u32::MAX),
            fork_delay: process.fork_delay,
            terminate_delay: process.terminate_delay,
        }
    }

    /// Whether it reads command lines rather than names.
    pub fn full_command(&self) -> bool {
        self.full_command
    }

    /// How many bytes of a command line can decide a match (keepalived's
    /// vrrp_max_process_name_len): the path, the parameters, a NUL each,
    /// and one more to see that a command line is longer.
    pub fn command_line_needed(&self) -> usize {
        self.path.len() + 1 + self.parameters.as_ref().map_or(0, Vec::len) + 1
    }

    fn in_quorum(&self, count: u32) -> bool {
        count >= self.quorum && count <= self.quorum_max
    }

    /// Whether a process with `identity` is one of these. `None` when the
    /// identity lacks what is compared (a comm event for a command line
    /// matcher).
    fn matches(&self, identity: &Identity) -> Option<bool> {
        if !self.full_command {
            return Some(identity.comm.as_deref()? == self.path);
        }
        let command_line = identity.command_line.as_deref()?;
        let (first, parameters) = match command_line.iter().position(|byte| *byte == 0) {
            Some(end) => (&command_line[..end], &command_line[end + 1..]),
            None => (command_line, &[][..]),
        };
        if first != self.path {
            return Some(false);
        }
        Some(match self.param_match {
            None => true,
            Some(matching) => check_parameters(self.parameters.as_deref(), matching, parameters),
        })
    }
}

/// keepalived's check_params: `actual` is what follows the command's first
/// word and its NUL.
fn check_parameters(wanted: Option<&[u8]>, matching: config::ParamMatch, actual: &[u8]) -> bool {
    use config::ParamMatch;
    let Some(wanted) = wanted else {
        // No parameters given: exact means none.
        return matching != ParamMatch::Exact || actual.is_empty();
    };
    match matching {
        ParamMatch::Exact => actual == wanted,
        ParamMatch::Partial => actual.starts_with(wanted),
        // The last parameter given may be the start of the process's: its
        // NUL is not compared.
        ParamMatch::Initial => actual.starts_with(&wanted[..wanted.len() - 1]),
    }
}

/// A tracked process's count as it stands, for the dumps (keepalived's
/// `num_cur_proc`, `have_quorum` and its two timers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessState {
    pub name: String,
    pub count: u32,
    pub have_quorum: bool,
    pub fork_timer_running: bool,
    pub terminate_timer_running: bool,
}

/// A tracked process gained or lost its quorum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumChange {
    pub name: String,
    pub have_quorum: bool,
}

#[derive(Debug, Clone)]
struct Counter {
    matcher: Matcher,
    count: u32,
    have_quorum: bool,
    /// When a quorum change a fork made applies.
    fork_timer: Option<Instant>,
    /// When a quorum change an exit made applies.
    terminate_timer: Option<Instant>,
}

/// How a process came to count.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Added {
    /// Forked by a counted process: `fork_delay`.
    Fork,
    /// Found with its name or command line (exec, rename): at once.
    Matched,
}

/// How a process stopped counting.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Removed {
    /// It exited: `terminate_delay`.
    Exit,
    /// It no longer matches (exec, rename): at once.
    Unmatched,
}

/// The processes that count, and each tracked process's quorum.
#[derive(Debug, Clone)]
pub struct ProcessTable {
    counters: Vec<Counter>,
    /// For each counted process (by pid, which is the tgid), the tracked
    /// processes it counts for, as positions in `counters`.
    pids: HashMap<i32, Vec<usize>>,
}

impl ProcessTable {
    pub fn new(processes: &[config::TrackProcess]) -> ProcessTable {
        ProcessTable {
            counters: processes
                .iter()
                .map(|process| Counter {
                    matcher: Matcher::new(process),
                    count: 0,
                    // No process yet: a quorum of 0 holds.
                    have_quorum: process.quorum == 0,
                    fork_timer: None,
                    terminate_timer: None,
                })
                .collect(),
            pids: HashMap::new(),
        }
    }

    /// Whether some tracked process reads names (comm), or command lines.
    pub fn reads(&self) -> (bool, bool) {
        let command_lines = self
            .counters
            .iter()
            .any(|counter| counter.matcher.full_command);
        let names = self
            .counters
            .iter()
            .any(|counter| !counter.matcher.full_command);
        (names, command_lines)
    }

    /// How much of a command line to read.
    pub fn command_line_needed(&self) -> usize {
        self.counters
            .iter()
            .map(|counter| counter.matcher.command_line_needed())
            .max()
            .unwrap_or(0)
    }

    /// Each tracked process's count, quorum and timers, in the
    /// configuration's order.
    pub fn states(&self) -> Vec<ProcessState> {
        self.counters
            .iter()
            .map(|counter| ProcessState {
                name: counter.matcher.name.clone(),
                count: counter.count,
                have_quorum: counter.have_quorum,
                fork_timer_running: counter.fork_timer.is_some(),
                terminate_timer_running: counter.terminate_timer.is_some(),
            })
            .collect()
    }

    /// Each tracked process's quorum, by name.
    pub fn quorums(&self) -> HashMap<String, bool> {
        self.counters
            .iter()
            .map(|counter| (counter.matcher.name.clone(), counter.have_quorum))
            .collect()
    }

    pub fn have_quorum(&self, name: &str) -> Option<bool> {
        self.counters
            .iter()
            .find(|counter| counter.matcher.name == name)
            .map(|counter| counter.have_quorum)
    }

    /// How many processes count for `name`.
    pub fn count(&self, name: &str) -> Option<u32> {
        self.counters
            .iter()
            .find(|counter| counter.matcher.name == name)
            .map(|counter| counter.count)
    }

    /// The first reading of /proc, at start (keepalived's read_procs and
    /// initialise_process_tracking_priorities): the counts, and the quorums
    /// from them with no delay and no change reported.
    pub fn scan(&mut self, processes: impl IntoIterator<Item = (i32, Identity)>) {
        self.count_afresh(processes);
        for counter in &mut self.counters {
            counter.have_quorum = counter.matcher.in_quorum(counter.count);
        }
    }

    /// /proc read again after lost events: the counts afresh, their
    /// timers cancelled; a quorum gained applies at once, one lost after
    /// `terminate_delay`.
    pub fn rescan(
        &mut self,
        processes: impl IntoIterator<Item = (i32, Identity)>,
        now: Instant,
    ) -> Vec<QuorumChange> {
        self.count_afresh(processes);
        let mut changes = Vec::new();
        for index in 0..self.counters.len() {
            let counter = &mut self.counters[index];
            let quorum = counter.matcher.in_quorum(counter.count);
            match counter.matcher.terminate_delay {
                Some(delay) if !quorum && counter.have_quorum => {
                    counter.terminate_timer = Some(now + delay)
                }
                _ => self.update(index, quorum, &mut changes),
            }
        }
        changes
    }

    fn count_afresh(&mut self, processes: impl IntoIterator<Item = (i32, Identity)>) {
        self.pids.clear();
        for counter in &mut self.counters {
            counter.count = 0;
            counter.fork_timer = None;
            counter.terminate_timer = None;
        }
        for (pid, identity) in processes {
            for index in 0..self.counters.len() {
                let counter = &mut self.counters[index];
                if counter.matcher.matches(&identity) == Some(true) {
                    let counted = self.pids.entry(pid).or_default();
                    if !counted.contains(&index) {
                        counted.push(index);
                        counter.count += 1;
                    }
                }
            }
        }
    }

    /// A process forked: the child counts for what the parent counts for.
    pub fn fork(&mut self, parent: i32, child: i32, now: Instant) -> Vec<QuorumChange> {
        let mut changes = Vec::new();
        let Some(indexes) = self.pids.get(&parent).cloned() else {
            return changes;
        };
        for index in indexes {
            self.add(child, index, Added::Fork, now, &mut changes);
        }
        changes
    }

    /// A process exec'd: matched again with what /proc now says of it
    /// (`None`: it could not be read, and nothing changes, as in
    /// keepalived).
    pub fn exec(
        &mut self,
        pid: i32,
        identity: Option<&Identity>,
        now: Instant,
    ) -> Vec<QuorumChange> {
        let mut changes = Vec::new();
        let Some(identity) = identity else {
            return changes;
        };
        for index in 0..self.counters.len() {
            match self.counters[index].matcher.matches(identity) {
                Some(true) => self.add(pid, index, Added::Matched, now, &mut changes),
                Some(false) => self.remove(pid, index, Removed::Unmatched, now, &mut changes),
                None => {}
            }
        }
        changes
    }

    /// A process renamed itself: matched again by name (command lines are
    /// not read again: a process hardly changes its own).
    pub fn comm(&mut self, pid: i32, comm: &[u8], now: Instant) -> Vec<QuorumChange> {
        let identity = Identity {
            comm: Some(comm.to_vec()),
            command_line: None,
        };
        self.exec(pid, Some(&identity), now)
    }

    /// A process exited.
    pub fn exit(&mut self, pid: i32, now: Instant) -> Vec<QuorumChange> {
        let mut changes = Vec::new();
        let Some(indexes) = self.pids.get(&pid).cloned() else {
            return changes;
        };
        for index in indexes {
            self.remove(pid, index, Removed::Exit, now, &mut changes);
        }
        changes
    }

    /// The earliest delay's end.
    pub fn poll_at(&self) -> Option<Instant> {
        self.counters
            .iter()
            .flat_map(|counter| [counter.fork_timer, counter.terminate_timer])
            .flatten()
            .min()
    }

    /// The delays ended by `now`: each tracked process's quorum set from
    /// its count then.
    pub fn poll(&mut self, now: Instant) -> Vec<QuorumChange> {
        let mut changes = Vec::new();
        for index in 0..self.counters.len() {
            let counter = &mut self.counters[index];
            let mut ended = false;
            for timer in [&mut counter.fork_timer, &mut counter.terminate_timer] {
                if timer.is_some_and(|at| at <= now) {
                    *timer = None;
                    ended = true;
                }
            }
            if ended {
                let quorum = counter.matcher.in_quorum(counter.count);
                self.update(index, quorum, &mut changes);
            }
        }
        changes
    }

    fn add(
        &mut self,
        pid: i32,
        index: usize,
        how: Added,
        now: Instant,
        changes: &mut Vec<QuorumChange>,
    ) {
        let counted = self.pids.entry(pid).or_default();
        if counted.contains(&index) {
            return;
        }
        counted.push(index);
        let counter = &mut self.counters[index];
        counter.count += 1;
        let count = u64::from(counter.count);
        let quorum = u64::from(counter.matcher.quorum);
        let maximum = u64::from(counter.matcher.quorum_max);
        if count != quorum && count != maximum + 1 {
            return;
        }
        let now_up = count == quorum;
        // A change back before a delay ends cancels the delay.
        if counter.terminate_timer.take().is_none()
            && how == Added::Fork
            && let Some(delay) = counter.matcher.fork_delay
        {
            counter.fork_timer = Some(now + delay);
            return;
        }
        self.update(index, now_up, changes);
    }

    fn remove(
        &mut self,
        pid: i32,
        index: usize,
        how: Removed,
        now: Instant,
        changes: &mut Vec<QuorumChange>,
    ) {
        let Some(counted) = self.pids.get_mut(&pid) else {
            return;
        };
        let Some(place) = counted.iter().position(|counted| *counted == index) else {
            return;
        };
        counted.swap_remove(place);
        if counted.is_empty() {
            self.pids.remove(&pid);
        }
        let counter = &mut self.counters[index];
        let before = counter.count;
        counter.count -= 1;
        if before != counter.matcher.quorum && counter.count != counter.matcher.quorum_max {
            return;
        }
        let now_up = counter.count == counter.matcher.quorum_max;
        if counter.fork_timer.take().is_none()
            && how == Removed::Exit
            && let Some(delay) = counter.matcher.terminate_delay
        {
            counter.terminate_timer = Some(now + delay);
            return;
        }
        self.update(index, now_up, changes);
    }

    fn update(&mut self, index: usize, now_up: bool, changes: &mut Vec<QuorumChange>) {
        let counter = &mut self.counters[index];
        if counter.have_quorum == now_up {
            return;
        }
        counter.have_quorum = now_up;
        changes.push(QuorumChange {
            name: counter.matcher.name.clone(),
            have_quorum: now_up,
        });
    }
}

#[cfg(test)]
mod tests;
