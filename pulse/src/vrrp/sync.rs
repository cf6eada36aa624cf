//! `vrrp_sync_group`: instances that change state together, without I/O.
//!
//! A [`SyncGroup`] is told what its members do ([`SyncGroup::entered`],
//! [`SyncGroup::fault_changed`]) and answers with a [`Decision`]: the
//! group's own new state, for its log line and notify scripts, and the
//! [`Event`]s to give the other members. It follows keepalived 2.2's
//! vrrp_sync.c:
//!
//! - One member in FAULT puts the group in FAULT, and every member with
//!   it (a master sends priority 0 first). The group leaves FAULT once no
//!   member's own tracking holds it there; the members then start again
//!   as backups.
//! - One member becoming MASTER makes the others MASTER at once.
//! - One member going to BACKUP (a master hearing a higher priority) makes
//!   the others step down too.
//! - A backup whose down timer runs out becomes master only when every
//!   other member wants to as well (or is master already): keepalived
//!   prefers BACKUP to thrashing ([`SyncGroup::may_become_master`]).

use super::machine::{Event, State};

/// What the group decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    /// The group's state before and after, when it changed.
    pub transition: Option<(State, State)>,
    /// Events for members, by their index in the group, in order.
    pub orders: Vec<(usize, Event)>,
}

/// One sync group's view of its members.
#[derive(Debug, Clone)]
pub struct SyncGroup {
    name: String,
    /// `Initialize` before the members start and once they all stopped.
    state: State,
    /// The members' states as last entered.
    members: Vec<State>,
    /// Members whose own tracking (links, scripts, files) is in FAULT.
    own_faults: Vec<bool>,
    /// The state the group's last SMTP alert told (keepalived's
    /// `last_email_state`), kept here so that it follows the group
    /// through a reload.
    pub last_alert: Option<&'static str>,
}

impl SyncGroup {
    pub fn new(name: &str, members: usize) -> SyncGroup {
        SyncGroup {
            name: name.to_owned(),
            state: State::Initialize,
            members: vec![State::Initialize; members],
            own_faults: vec![false; members],
            last_alert: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// A member's own tracking went into FAULT or out of it. Give it
    /// after the member's own event ([`Event::InterfaceDown`] /
    /// [`Event::InterfaceUp`]).
    pub fn fault_changed(&mut self, member: usize, faulted: bool) -> Decision {
        self.own_faults[member] = faulted;
        if faulted {
            self.enter_fault()
        } else if self.state == State::Fault && !self.own_faults.contains(&true) {
            // Every member leaves FAULT; the first to enter BACKUP (or
            // MASTER, an address owner) takes the group with it.
            Decision {
                transition: None,
                orders: (0..self.members.len())
                    .map(|member| (member, Event::SyncFaultCleared))
                    .collect(),
            }
        } else {
            Decision::default()
        }
    }

    /// A member entered `state` (its machine's [`super::Action::EnterState`]).
    pub fn entered(&mut self, member: usize, state: State) -> Decision {
        self.members[member] = state;
        match state {
            State::Fault => self.enter_fault(),
            State::Master if self.state != State::Master => {
                let from = std::mem::replace(&mut self.state, State::Master);
                Decision {
                    transition: Some((from, State::Master)),
                    orders: self.others(member, |other| other != State::Master, Event::SyncMaster),
                }
            }
            State::Backup if self.state != State::Backup => {
                let from = std::mem::replace(&mut self.state, State::Backup);
                Decision {
                    transition: Some((from, State::Backup)),
                    orders: self.others(member, |other| other == State::Master, Event::SyncBackup),
                }
            }
            State::Initialize
                if self.state != State::Initialize
                    && self.members.iter().all(|state| *state == State::Initialize) =>
            {
                let from = std::mem::replace(&mut self.state, State::Initialize);
                Decision {
                    transition: Some((from, State::Initialize)),
                    orders: Vec::new(),
                }
            }
            _ => Decision::default(),
        }
    }

    /// A member's down timer ran out ([`super::Action::RequestMaster`]):
    /// whether it may become master now. `wants_master` tells, for each
    /// member, whether it is master or a backup whose down timer ran out
    /// too ([`super::Machine::wants_master`]).
    pub fn may_become_master(&self, member: usize, wants_master: impl Fn(usize) -> bool) -> bool {
        match self.state {
            State::Master => true,
            State::Fault => false,
            State::Backup | State::Initialize => (0..self.members.len())
                .filter(|other| *other != member)
                .all(wants_master),
        }
    }

    fn enter_fault(&mut self) -> Decision {
        if self.state == State::Fault {
            return Decision::default();
        }
        let from = std::mem::replace(&mut self.state, State::Fault);
        // Every member, the one in FAULT too: it stays there until the
        // whole group may leave.
        Decision {
            transition: Some((from, State::Fault)),
            orders: (0..self.members.len())
                .map(|member| (member, Event::SyncFault))
                .collect(),
        }
    }

    fn others(
        &self,
        member: usize,
        which: impl Fn(State) -> bool,
        event: Event,
    ) -> Vec<(usize, Event)> {
        self.members
            .iter()
            .enumerate()
            .filter(|(other, state)| *other != member && which(**state))
            .map(|(other, _)| (other, event.clone()))
            .collect()
    }
}
