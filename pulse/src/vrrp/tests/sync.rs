//! Sync groups: the coordinator alone, then with two machines wired as the
//! task wires them, time under the test's control.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use super::settings_of;
use crate::vrrp::{Action, Decision, Event, Machine, Received, State, SyncGroup};

fn instance(name: &str, virtual_router_id: u8, priority: u8, address: &str) -> Machine {
    let mut machine = Machine::new(settings_of(&format!(
        "vrrp_instance {name} {{\n  interface eth0\n  virtual_router_id {virtual_router_id}\n  \
         priority {priority}\n  advert_int 1\n  virtual_ipaddress {{\n    {address}/24\n  }}\n}}\n"
    )));
    machine.join_sync_group();
    machine
}

/// Two members, VI_1 (priority 150) and VI_2 (priority 100), run as the
/// task runs them: each member's transitions go to the group, and the
/// group's orders to the members, until none is left.
struct Pair {
    machines: [Machine; 2],
    group: SyncGroup,
    /// Every member's actions, in order, and the group's transitions.
    actions: Vec<(usize, Action)>,
    transitions: Vec<(State, State)>,
}

impl Pair {
    fn new() -> Pair {
        Pair {
            machines: [
                instance("VI_1", 51, 150, "192.0.2.100"),
                instance("VI_2", 52, 100, "192.0.2.101"),
            ],
            group: SyncGroup::new("G1", 2),
            actions: Vec::new(),
            transitions: Vec::new(),
        }
    }

    fn deliver(&mut self, now: Instant, member: usize, event: Event) {
        let mut queue = vec![(member, event)];
        while !queue.is_empty() {
            let (member, event) = queue.remove(0);
            for action in self.machines[member].handle(now, event) {
                self.actions.push((member, action));
                match action {
                    Action::EnterState(state) => {
                        let decision = self.group.entered(member, state);
                        self.follow(decision, &mut queue);
                    }
                    Action::RequestMaster => {
                        let machines = &self.machines;
                        if self
                            .group
                            .may_become_master(member, |other| machines[other].wants_master())
                        {
                            queue.push((member, Event::SyncMaster));
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    fn follow(&mut self, decision: Decision, queue: &mut Vec<(usize, Event)>) {
        self.transitions.extend(decision.transition);
        queue.extend(decision.orders);
    }

    /// A member's own tracking: its event, then the group's view.
    fn track(&mut self, now: Instant, member: usize, faulted: bool) {
        let event = if faulted {
            Event::InterfaceDown
        } else {
            Event::InterfaceUp
        };
        self.deliver(now, member, event);
        let decision = self.group.fault_changed(member, faulted);
        let mut queue = Vec::new();
        self.follow(decision, &mut queue);
        for (member, event) in queue {
            self.deliver(now, member, event);
        }
    }

    /// Runs every timer due until `until`.
    fn run_until(&mut self, until: Instant) {
        while let Some((member, at)) = (0..2)
            .filter_map(|member| Some((member, self.machines[member].poll_at()?)))
            .filter(|(_, at)| *at <= until)
            .min_by_key(|(_, at)| *at)
        {
            self.deliver(at, member, Event::Timer);
        }
    }

    fn states(&self) -> [State; 2] {
        [self.machines[0].state(), self.machines[1].state()]
    }

    fn take_actions(&mut self) -> Vec<(usize, Action)> {
        std::mem::take(&mut self.actions)
    }

    /// Both started, then both masters (nobody else on the link).
    fn masters(start: Instant) -> (Pair, Instant) {
        let mut pair = Pair::new();
        pair.deliver(start, 0, Event::Start);
        pair.deliver(start, 1, Event::Start);
        let later = start + Duration::from_secs(10);
        pair.run_until(later);
        assert_eq!(pair.states(), [State::Master, State::Master]);
        pair.take_actions();
        pair.transitions.clear();
        (pair, later)
    }
}

fn advert_from(machine: &Machine, source: IpAddr, priority: u8) -> Received {
    let mut peer = machine.settings().clone();
    peer.local_address = Some(source);
    Received {
        source,
        destination: IpAddr::V4(Ipv4Addr::new(224, 0, 0, 18)),
        hop_limit: 255,
        advert: Machine::new(peer).advert(priority),
    }
}

#[test]
fn one_member_in_fault_puts_every_member_in_fault_until_none_is() {
    let mut group = SyncGroup::new("G1", 3);
    for member in 0..3 {
        group.entered(member, State::Backup);
    }
    assert_eq!(
        group.fault_changed(1, true),
        Decision {
            transition: Some((State::Backup, State::Fault)),
            orders: vec![
                (0, Event::SyncFault),
                (1, Event::SyncFault),
                (2, Event::SyncFault)
            ],
        }
    );
    assert_eq!(group.entered(1, State::Fault), Decision::default());
    // A second member's own fault, then the first recovers: still FAULT.
    assert_eq!(group.fault_changed(2, true), Decision::default());
    assert_eq!(group.fault_changed(1, false), Decision::default());
    assert_eq!(group.state(), State::Fault);
    let cleared = group.fault_changed(2, false);
    assert_eq!(cleared.transition, None);
    assert_eq!(
        cleared.orders,
        vec![
            (0, Event::SyncFaultCleared),
            (1, Event::SyncFaultCleared),
            (2, Event::SyncFaultCleared)
        ]
    );
    assert_eq!(
        group.entered(0, State::Backup).transition,
        Some((State::Fault, State::Backup))
    );
}

#[test]
fn a_member_becoming_master_or_backup_takes_the_others_along() {
    let mut group = SyncGroup::new("G1", 3);
    assert_eq!(
        group.entered(0, State::Backup).transition,
        Some((State::Initialize, State::Backup))
    );
    group.entered(1, State::Backup);
    group.entered(2, State::Fault);
    let mut group = SyncGroup::new("G1", 3);
    for member in 0..3 {
        group.entered(member, State::Backup);
    }
    assert_eq!(
        group.entered(2, State::Master),
        Decision {
            transition: Some((State::Backup, State::Master)),
            orders: vec![(0, Event::SyncMaster), (1, Event::SyncMaster)],
        }
    );
    assert_eq!(group.entered(0, State::Master), Decision::default());
    group.entered(1, State::Master);
    // Only the masters are told to step down.
    assert_eq!(
        group.entered(1, State::Backup),
        Decision {
            transition: Some((State::Master, State::Backup)),
            orders: vec![(0, Event::SyncBackup), (2, Event::SyncBackup)],
        }
    );
}

#[test]
fn master_only_when_every_other_member_wants_it() {
    let mut group = SyncGroup::new("G1", 3);
    for member in 0..3 {
        group.entered(member, State::Backup);
    }
    assert!(!group.may_become_master(0, |other| other == 1));
    assert!(group.may_become_master(0, |other| other == 1 || other == 2));
    // What the member itself wants does not count.
    assert!(group.may_become_master(0, |other| other != 0));
    group.entered(2, State::Master);
    assert!(group.may_become_master(0, |_| false));
    group.entered(2, State::Fault);
    assert!(!group.may_become_master(0, |_| true));
}

#[test]
fn the_group_stops_with_its_last_member() {
    let mut group = SyncGroup::new("G1", 2);
    group.entered(0, State::Master);
    group.entered(1, State::Master);
    assert_eq!(group.entered(0, State::Initialize), Decision::default());
    assert_eq!(
        group.entered(1, State::Initialize).transition,
        Some((State::Master, State::Initialize))
    );
}

#[test]
fn the_first_member_to_time_out_waits_for_the_other() {
    let start = Instant::now();
    let mut pair = Pair::new();
    pair.deliver(start, 0, Event::Start);
    pair.deliver(start, 1, Event::Start);
    assert_eq!(pair.transitions, [(State::Initialize, State::Backup)]);
    pair.take_actions();
    // VI_1's skew is shorter: its down timer runs out first, and it stays
    // backup, its timer running again.
    let first = pair.machines[0].poll_at().unwrap();
    let second = pair.machines[1].poll_at().unwrap();
    assert!(first < second);
    pair.deliver(first, 0, Event::Timer);
    assert_eq!(pair.take_actions(), [(0, Action::RequestMaster)]);
    assert_eq!(pair.states(), [State::Backup, State::Backup]);
    assert!(pair.machines[0].wants_master());
    assert_eq!(
        pair.machines[0].poll_at(),
        Some(first + pair.machines[0].master_down_interval())
    );
    // VI_2's runs out: every member wants it, so VI_2 and then VI_1
    // become master, at once.
    pair.deliver(second, 1, Event::Timer);
    assert_eq!(pair.states(), [State::Master, State::Master]);
    let actions = pair.take_actions();
    assert_eq!(actions[0], (1, Action::RequestMaster));
    for member in 0..2 {
        assert!(actions.contains(&(member, Action::AddAddresses)));
        assert!(actions.contains(&(member, Action::EnterState(State::Master))));
    }
    assert_eq!(
        pair.transitions,
        [
            (State::Initialize, State::Backup),
            (State::Backup, State::Master)
        ]
    );
}

#[test]
fn a_waiting_member_that_hears_a_master_no_longer_wants_to_take_over() {
    let start = Instant::now();
    let mut pair = Pair::new();
    pair.deliver(start, 0, Event::Start);
    pair.deliver(start, 1, Event::Start);
    let first = pair.machines[0].poll_at().unwrap();
    pair.deliver(first, 0, Event::Timer);
    assert!(pair.machines[0].wants_master());
    let advert = advert_from(&pair.machines[0], IpAddr::from([192, 0, 2, 20]), 200);
    pair.deliver(first, 0, Event::Advert(advert));
    assert!(!pair.machines[0].wants_master());
    // VI_2 timing out now does not make the group master.
    let second = pair.machines[1].poll_at().unwrap();
    pair.deliver(second, 1, Event::Timer);
    assert_eq!(pair.states(), [State::Backup, State::Backup]);
}

#[test]
fn a_member_s_link_down_takes_every_member_to_fault_and_back() {
    let start = Instant::now();
    let (mut pair, now) = Pair::masters(start);
    pair.track(now, 0, true);
    assert_eq!(pair.states(), [State::Fault, State::Fault]);
    assert_eq!(pair.transitions, [(State::Master, State::Fault)]);
    // Both masters send priority 0 (keepalived's leave_master with
    // wantstate FAULT) and give their addresses up.
    let actions = pair.take_actions();
    for member in 0..2 {
        assert!(actions.contains(&(member, Action::SendAdvert { priority: 0 })));
        assert!(actions.contains(&(member, Action::RemoveAddresses)));
        assert!(actions.contains(&(member, Action::EnterState(State::Fault))));
    }
    // Nothing happens in FAULT, however long.
    pair.run_until(now + Duration::from_secs(60));
    assert!(pair.take_actions().is_empty());
    // VI_2's own link going down and coming back changes nothing while
    // VI_1's is down.
    let later = now + Duration::from_secs(61);
    pair.track(later, 1, true);
    pair.track(later, 1, false);
    assert_eq!(pair.states(), [State::Fault, State::Fault]);
    assert!(pair.take_actions().is_empty());
    // VI_1's link back: both backups, then both masters together.
    pair.track(later, 0, false);
    assert_eq!(pair.states(), [State::Backup, State::Backup]);
    assert_eq!(
        pair.take_actions(),
        [
            (0, Action::EnterState(State::Backup)),
            (1, Action::EnterState(State::Backup))
        ]
    );
    pair.run_until(later + Duration::from_secs(10));
    assert_eq!(pair.states(), [State::Master, State::Master]);
    assert_eq!(
        pair.transitions,
        [
            (State::Master, State::Fault),
            (State::Fault, State::Backup),
            (State::Backup, State::Master)
        ]
    );
}

#[test]
fn a_member_hearing_a_higher_priority_takes_the_other_to_backup() {
    let start = Instant::now();
    let (mut pair, now) = Pair::masters(start);
    let advert = advert_from(&pair.machines[1], IpAddr::from([192, 0, 2, 20]), 200);
    pair.deliver(now, 1, Event::Advert(advert));
    assert_eq!(pair.states(), [State::Backup, State::Backup]);
    assert_eq!(pair.transitions, [(State::Master, State::Backup)]);
    // VI_1 steps down without a priority 0 advert: keepalived's
    // vrrp_sync_backup leaves master without one.
    let actions = pair.take_actions();
    assert!(actions.contains(&(0, Action::RemoveAddresses)));
    assert!(actions.contains(&(0, Action::EnterState(State::Backup))));
    assert!(!actions.contains(&(0, Action::SendAdvert { priority: 0 })));
}

#[test]
fn a_member_starting_with_its_link_down_starts_the_group_in_fault() {
    let start = Instant::now();
    let mut pair = Pair::new();
    // As the task does: every member's tracking first, then the starts.
    pair.deliver(start, 0, Event::InterfaceDown);
    let decision = pair.group.fault_changed(0, true);
    let mut queue = Vec::new();
    pair.follow(decision, &mut queue);
    for (member, event) in queue {
        pair.deliver(start, member, event);
    }
    pair.deliver(start, 0, Event::Start);
    pair.deliver(start, 1, Event::Start);
    assert_eq!(pair.states(), [State::Fault, State::Fault]);
    assert_eq!(pair.transitions, [(State::Initialize, State::Fault)]);
}
