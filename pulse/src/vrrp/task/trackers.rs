//! The tracked `vrrp_script`s and `track_file`s of the VRRP task: one task
//! each, reporting changes into a channel the loop reads; the tracked
//! processes' monitor, one task for all of them; and the tracked
//! `bfd_instance`s' sessions, those of the process (shared with the
//! checkers, [`nanny::driver::bfd::spawn`]).

use std::collections::HashMap;
use std::time::Duration;

use fulcrum_config::model as config;
use nanny::driver::bfd;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::vrrp::plan::{Plan, TrackedFile};
use crate::vrrp::process_monitor::ProcessMonitor;
use crate::vrrp::track;
use crate::vrrp::track::processes::{ProcessState, QuorumChange};

/// How often tracked files are read.
const FILE_PERIOD: Duration = Duration::from_millis(200);

/// The tracked scripts' and files' tasks, by name, each with the
/// definition it runs, so that a reload leaves an unchanged one running.
pub struct Trackers {
    pub script_changes: mpsc::Receiver<track::ScriptChange>,
    script_sender: mpsc::Sender<track::ScriptChange>,
    pub file_changes: mpsc::Receiver<track::FileChange>,
    file_sender: mpsc::Sender<track::FileChange>,
    scripts: HashMap<String, (config::VrrpScript, JoinHandle<()>)>,
    files: HashMap<String, (TrackedFile, JoinHandle<()>)>,
    /// The quorum changes of the running monitor: a channel of its own
    /// for each monitor, so that none of a stopped one's is read.
    pub process_changes: mpsc::Receiver<QuorumChange>,
    processes: Option<ProcessMonitor>,
    /// The sessions' reports, once some instance tracks a `bfd_instance`.
    pub bfd_reports: mpsc::UnboundedReceiver<bfd::Report>,
    /// The sessions asked for; `None` until some are.
    bfd_sessions: Option<watch::Sender<Vec<nanny::spec::BfdSpec>>>,
}

impl Trackers {
    pub fn new() -> Trackers {
        let (script_sender, script_changes) = mpsc::channel(64);
        let (file_sender, file_changes) = mpsc::channel(64);
        let (_, process_changes) = mpsc::channel(1);
        let (_, bfd_reports) = mpsc::unbounded_channel();
        Trackers {
            bfd_reports,
            bfd_sessions: None,
            process_changes,
            processes: None,
            script_changes,
            script_sender,
            file_changes,
            file_sender,
            scripts: HashMap::new(),
            files: HashMap::new(),
        }
    }

    /// Runs what `plan` tracks: a script or file whose definition did not
    /// change goes on with its state in `scripts` / `files`; the others
    /// start from their initial state (a file initialised with
    /// `init_file` first), and what is no longer tracked stops.
    pub fn follow(
        &mut self,
        plan: &Plan,
        scripts: &mut HashMap<String, Option<bool>>,
        files: &mut HashMap<String, i64>,
    ) {
        let mut running = std::mem::take(&mut self.scripts);
        let mut states = HashMap::new();
        for script in &plan.scripts {
            let task = match running.remove(&script.name) {
                Some((definition, task)) if definition == *script => {
                    states.insert(
                        script.name.clone(),
                        scripts.get(&script.name).copied().flatten(),
                    );
                    task
                }
                other => {
                    if let Some((_, task)) = other {
                        task.abort();
                    }
                    states.insert(script.name.clone(), script.init_fail.then_some(false));
                    tokio::spawn(track::run_script(
                        script.clone(),
                        self.script_sender.clone(),
                    ))
                }
            };
            self.scripts
                .insert(script.name.clone(), (script.clone(), task));
        }
        for (_, task) in running.into_values() {
            task.abort();
        }
        *scripts = states;
        let mut running = std::mem::take(&mut self.files);
        let mut values = HashMap::new();
        for file in &plan.files {
            let path = std::path::Path::new(&file.path);
            let task = match running.remove(&file.name) {
                Some((definition, task)) if definition == *file => {
                    values.insert(
                        file.name.clone(),
                        files
                            .get(&file.name)
                            .copied()
                            .unwrap_or_else(|| track::read_file_value(path)),
                    );
                    task
                }
                other => {
                    if let Some((_, task)) = other {
                        task.abort();
                    }
                    if let Some(init) = &file.init_file
                        && let Err(error) = track::initialise_file(path, init)
                    {
                        tracing::warn!(
                            "track_file {}: cannot write {}: {error}",
                            file.name,
                            path.display()
                        );
                    }
                    let value = track::read_file_value(path);
                    values.insert(file.name.clone(), value);
                    tokio::spawn(track::watch_file(
                        file.name.clone(),
                        path.into(),
                        value,
                        FILE_PERIOD,
                        self.file_sender.clone(),
                    ))
                }
            };
            self.files.insert(file.name.clone(), (file.clone(), task));
        }
        for (_, task) in running.into_values() {
            task.abort();
        }
        *files = values;
    }

    /// Monitors the processes `plan` tracks: a monitor tracking the same
    /// definitions goes on with its counts and quorums in `quorums`;
    /// otherwise a new one subscribes and reads /proc (keepalived reads
    /// /proc again at each reload), and the quorums are its.
    pub fn follow_processes(&mut self, plan: &Plan, quorums: &mut HashMap<String, bool>) {
        if self
            .processes
            .as_ref()
            .is_some_and(|monitor| monitor.definitions == plan.processes)
        {
            return;
        }
        if let Some(mut monitor) = self.processes.take() {
            monitor.stop();
        }
        quorums.clear();
        if plan.processes.is_empty() {
            return;
        }
        let (sender, changes) = mpsc::channel(64);
        let (monitor, started) = ProcessMonitor::start(&plan.processes, sender);
        self.process_changes = changes;
        self.processes = Some(monitor);
        *quorums = started;
    }

    /// Runs the sessions of the `bfd_instance`s `plan` tracks; `states`
    /// keeps those of the sessions still tracked (keepalived's
    /// `clear_diff_bfd` keeps a reloaded instance's state by name), and a
    /// new one starts down, as keepalived's `bfd_up` does until the BFD
    /// process says the session is up. The sessions report their states
    /// again at each change of what is asked.
    pub fn follow_bfds(&mut self, plan: &Plan, states: &mut HashMap<String, bool>) {
        states.retain(|name, _| plan.bfds.iter().any(|spec| spec.name == *name));
        if plan.bfds.is_empty() && self.bfd_sessions.is_none() {
            return;
        }
        let sessions = self.bfd_sessions.get_or_insert_with(|| {
            let (sessions, reports) = bfd::spawn();
            self.bfd_reports = reports;
            sessions
        });
        sessions.send_replace(plan.bfds.clone());
    }

    /// The tracked processes' counts as they stand (none without a
    /// monitor).
    pub fn process_states(&self) -> Vec<ProcessState> {
        self.processes
            .as_ref()
            .map(|monitor| monitor.states.borrow().clone())
            .unwrap_or_default()
    }

    pub fn stop(&mut self) {
        // The sessions stop once no client asks for them.
        self.bfd_sessions = None;
        if let Some(mut monitor) = self.processes.take() {
            monitor.stop();
        }
        for (_, task) in self.scripts.drain().map(|(_, running)| running) {
            task.abort();
        }
        for (_, task) in self.files.drain().map(|(_, running)| running) {
            task.abort();
        }
    }
}
