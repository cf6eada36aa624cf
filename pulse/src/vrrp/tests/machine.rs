//! The state machine with time under the test's control: every instant is
//! `start` plus a duration, nothing sleeps.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use crate::vrrp::packet::{self, Addresses, Family, Kind};
use crate::vrrp::settings::{AuthenticationSettings, GarpSettings, PeerSettings, Version};
use crate::vrrp::{Action, DropReason, Event, InstanceSettings, Machine, Received, State};

const LOCAL: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 10));
const LOWER_PEER: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 5));
const HIGHER_PEER: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 20));
const GROUP: IpAddr = IpAddr::V4(Ipv4Addr::new(224, 0, 0, 18));

fn seconds(value: f64) -> Duration {
    Duration::from_secs_f64(value)
}

/// A version 2 instance with a password, two addresses, multicast,
/// keepalived's defaults otherwise.
fn settings(priority: u8) -> InstanceSettings {
    InstanceSettings {
        name: "VI_1".into(),
        virtual_router_id: 51,
        version: Version::V2,
        family: Family::Ipv4,
        priority,
        advert_interval: Duration::from_secs(1),
        preempt: true,
        preempt_delay: Duration::ZERO,
        authentication: AuthenticationSettings::Password(*b"secret12"),
        virtual_addresses: vec![
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 100)),
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 101)),
        ],
        unicast_peers: Vec::new(),
        local_address: Some(LOCAL),
        check_unicast_source: false,
        skip_check_advert_addresses: false,
        lower_priority_no_advert: false,
        higher_priority_send_advert: false,
        down_timer_adverts: 3,
        garp: GarpSettings {
            master_delay: Duration::from_secs(5),
            master_repeat: 5,
            lower_priority_delay: Duration::from_secs(5),
            lower_priority_repeat: 5,
            master_refresh: None,
            master_refresh_repeat: 1,
            extra_interfaces: None,
        },
        strict: false,
        accept: true,
    }
}

fn version_3(mut settings: InstanceSettings, centiseconds: u64) -> InstanceSettings {
    settings.version = Version::V3;
    settings.authentication = AuthenticationSettings::None;
    settings.advert_interval = Duration::from_millis(centiseconds * 10);
    settings
}

/// What a peer with the same configuration and `priority` sends from
/// `source`.
fn advert_like(settings: &InstanceSettings, source: IpAddr, priority: u8) -> Received {
    let mut peer = settings.clone();
    peer.local_address = Some(source);
    Received {
        source,
        destination: GROUP,
        hop_limit: 255,
        advert: Machine::new(peer).advert(priority),
    }
}

/// A machine started at `start`, with the actions of starting.
fn started(settings: InstanceSettings, start: Instant) -> (Machine, Vec<Action>) {
    let mut machine = Machine::new(settings);
    let actions = machine.handle(start, Event::Start);
    (machine, actions)
}

/// What taking over looks like with keepalived's default garp settings.
fn become_master(priority: u8) -> Vec<Action> {
    vec![
        Action::SendAdvert { priority },
        Action::AddAddresses,
        Action::Announce { repeat: 5 },
        Action::EnterState(State::Master),
    ]
}

/// Runs the timer until `machine` is master; returns when.
fn run_until_master(machine: &mut Machine) -> Instant {
    let at = machine.poll_at().unwrap();
    let actions = machine.handle(at, Event::Timer);
    assert_eq!(actions, become_master(machine.effective_priority()));
    at
}

/// The same numbers as a keepalived 2.2.7 pair in network namespaces
/// (priorities 200 and 100, one address): the backup's first advert came
/// 0.3048 s after the master's priority 0 advert and 1.8057 s after its
/// last one when its VRRP process was killed (version 3, 0.5 s), 0.6122 s
/// and 3.6095 s with version 2 and 1 s.
#[test]
fn skew_time_follows_keepalived_formulas() {
    let start = Instant::now();
    // Version 2: (256 - priority) / 256 s, whatever the interval.
    let (machine, _) = started(settings(100), start);
    assert_eq!(machine.skew_time(), Duration::from_micros(609_375));
    assert_eq!(
        machine.master_down_interval(),
        Duration::from_micros(3_609_375)
    );
    let mut slow = settings(100);
    slow.advert_interval = Duration::from_secs(4);
    let (machine, _) = started(slow, start);
    assert_eq!(machine.skew_time(), Duration::from_micros(609_375));
    assert_eq!(
        machine.master_down_interval(),
        Duration::from_micros(12_609_375)
    );
    // Version 3: (256 - priority) * interval / 256, the interval in
    // centiseconds.
    let (machine, _) = started(version_3(settings(200), 50), start);
    assert_eq!(machine.skew_time(), Duration::from_micros(109_375));
    assert_eq!(
        machine.master_down_interval(),
        Duration::from_micros(1_609_375)
    );
    let (machine, _) = started(version_3(settings(1), 1), start);
    // 255 * 1 * 625 / 16 = 9960.9: keepalived's integer division.
    assert_eq!(machine.skew_time(), Duration::from_micros(9_960));
    // down_timer_adverts replaces the 3.
    let mut five = settings(100);
    five.down_timer_adverts = 5;
    let (machine, _) = started(five, start);
    assert_eq!(
        machine.master_down_interval(),
        Duration::from_micros(5_609_375)
    );
}

#[test]
fn starts_as_backup_and_takes_over_after_the_master_down_interval() {
    let start = Instant::now();
    let (mut machine, actions) = started(settings(100), start);
    assert_eq!(actions, [Action::EnterState(State::Backup)]);
    assert_eq!(machine.state(), State::Backup);
    let down = start + Duration::from_micros(3_609_375);
    assert_eq!(machine.poll_at(), Some(down));
    // Early timers change nothing.
    let just_before = down - Duration::from_micros(1);
    assert!(machine.handle(just_before, Event::Timer).is_empty());
    assert_eq!(machine.state(), State::Backup);
    assert_eq!(machine.handle(down, Event::Timer), become_master(100));
    assert_eq!(machine.state(), State::Master);
    // Adverts every second; the second gratuitous ARP round at 5 s.
    let mut now = down;
    for _ in 0..4 {
        now += Duration::from_secs(1);
        assert_eq!(machine.poll_at(), Some(now));
        assert_eq!(
            machine.handle(now, Event::Timer),
            [Action::SendAdvert { priority: 100 }]
        );
    }
    assert_eq!(machine.poll_at(), Some(down + Duration::from_secs(5)));
    assert_eq!(
        machine.handle(down + Duration::from_secs(5), Event::Timer),
        [
            Action::Announce { repeat: 5 },
            Action::SendAdvert { priority: 100 }
        ]
    );
    assert_eq!(machine.statistics().became_master, 1);
    assert_eq!(machine.statistics().adverts_sent, 6);
}

#[test]
fn the_address_owner_is_master_at_once() {
    let start = Instant::now();
    let (machine, actions) = started(settings(255), start);
    assert_eq!(actions, become_master(255));
    assert_eq!(machine.poll_at(), Some(start + Duration::from_secs(1)));
}

#[test]
fn a_backup_hearing_a_higher_priority_stays_backup() {
    let start = Instant::now();
    let base = settings(100);
    let (mut machine, _) = started(base.clone(), start);
    let advert = advert_like(&base, HIGHER_PEER, 150);
    for tick in 1..=20 {
        let now = start + Duration::from_secs(tick);
        assert!(
            machine
                .handle(now, Event::Advert(advert.clone()))
                .is_empty()
        );
        assert_eq!(
            machine.poll_at(),
            Some(now + machine.master_down_interval())
        );
        assert!(machine.handle(now, Event::Timer).is_empty());
    }
    assert_eq!(machine.state(), State::Backup);
    assert_eq!(machine.master(), Some((HIGHER_PEER, 150)));
    assert_eq!(machine.statistics().adverts_received, 20);
    assert_eq!(machine.statistics().total_drops(), 0);
}

#[test]
fn a_backup_preempts_a_lower_priority_master_when_its_down_timer_runs_out() {
    let start = Instant::now();
    let base = settings(150);
    let (mut machine, _) = started(base.clone(), start);
    let deadline = machine.poll_at().unwrap();
    let lower = advert_like(&base, HIGHER_PEER, 100);
    // The lower priority's adverts are ignored: the deadline stays.
    for tick in 1..=3 {
        let now = start + Duration::from_secs(tick);
        assert!(machine.handle(now, Event::Advert(lower.clone())).is_empty());
        assert_eq!(machine.poll_at(), Some(deadline));
    }
    assert_eq!(run_until_master(&mut machine), deadline);
}

#[test]
fn nopreempt_keeps_a_higher_priority_backup_as_backup() {
    let start = Instant::now();
    let mut base = settings(150);
    base.preempt = false;
    let (mut machine, _) = started(base.clone(), start);
    let lower = advert_like(&base, HIGHER_PEER, 100);
    for tick in 1..=20 {
        let now = start + Duration::from_secs(tick);
        machine.handle(now, Event::Advert(lower.clone()));
        assert_eq!(
            machine.poll_at(),
            Some(now + machine.master_down_interval())
        );
        assert!(machine.handle(now, Event::Timer).is_empty());
    }
    assert_eq!(machine.state(), State::Backup);
    assert_eq!(machine.master(), Some((HIGHER_PEER, 100)));
}

#[test]
fn preempt_delay_accepts_a_lower_priority_master_until_it_has_passed() {
    let start = Instant::now();
    let mut base = settings(150);
    base.preempt_delay = Duration::from_secs(10);
    let (mut machine, _) = started(base.clone(), start);
    let lower = advert_like(&base, HIGHER_PEER, 100);
    // The first lower-priority advert at 1 s starts the delay: until 11 s
    // they are a master's and restart the down timer.
    let mut last_accepted = start;
    for tick in 1..=10 {
        last_accepted = start + Duration::from_secs(tick);
        machine.handle(last_accepted, Event::Advert(lower.clone()));
        assert_eq!(
            machine.poll_at(),
            Some(last_accepted + machine.master_down_interval())
        );
    }
    // From 11 s on they are ignored.
    let deadline = machine.poll_at().unwrap();
    for tick in 11..=13 {
        let now = start + Duration::from_secs(tick);
        machine.handle(now, Event::Advert(lower.clone()));
        assert_eq!(machine.poll_at(), Some(deadline));
    }
    assert_eq!(
        run_until_master(&mut machine),
        last_accepted + machine.master_down_interval()
    );
}

#[test]
fn preempt_delay_stops_when_a_higher_priority_is_heard() {
    let start = Instant::now();
    let mut base = settings(150);
    base.preempt_delay = Duration::from_secs(10);
    let (mut machine, _) = started(base.clone(), start);
    let lower = advert_like(&base, HIGHER_PEER, 100);
    let higher = advert_like(&base, HIGHER_PEER, 200);
    machine.handle(start + seconds(1.0), Event::Advert(lower.clone()));
    machine.handle(start + seconds(2.0), Event::Advert(higher));
    // The delay starts again from the next lower-priority advert.
    for tick in 3..=12 {
        let now = start + Duration::from_secs(tick);
        machine.handle(now, Event::Advert(lower.clone()));
        assert_eq!(
            machine.poll_at(),
            Some(now + machine.master_down_interval()),
            "{tick} s"
        );
    }
    let now = start + seconds(13.5);
    let deadline = machine.poll_at().unwrap();
    machine.handle(now, Event::Advert(lower));
    assert_eq!(machine.poll_at(), Some(deadline));
}

#[test]
fn priority_0_makes_the_backup_take_over_after_its_skew_time() {
    let start = Instant::now();
    let base = settings(100);
    let (mut master, actions) = started(settings(255), start);
    assert_eq!(actions, become_master(255));
    let (mut backup, _) = started(base.clone(), start);
    backup.handle(
        start + seconds(0.5),
        Event::Advert(advert_like(&base, HIGHER_PEER, 255)),
    );
    let stop = start + seconds(2.0);
    assert_eq!(
        master.handle(stop, Event::Stop),
        [
            Action::SendAdvert { priority: 0 },
            Action::RemoveAddresses,
            Action::EnterState(State::Initialize),
        ]
    );
    assert_eq!(master.poll_at(), None);
    assert_eq!(master.statistics().priority_zero_sent, 1);
    assert_eq!(master.advert(0).priority, 0);
    backup.handle(stop, Event::Advert(advert_like(&base, HIGHER_PEER, 0)));
    assert_eq!(backup.statistics().priority_zero_received, 1);
    assert_eq!(backup.poll_at(), Some(stop + backup.skew_time()));
    assert_eq!(run_until_master(&mut backup), stop + seconds(0.609375));
}

#[test]
fn a_master_hearing_priority_0_answers_and_stays() {
    let start = Instant::now();
    let (mut machine, _) = started(settings(255), start);
    let next_advert = machine.poll_at();
    let actions = machine.handle(
        start + seconds(0.5),
        Event::Advert(advert_like(&settings(100), HIGHER_PEER, 0)),
    );
    assert_eq!(actions, [Action::SendAdvert { priority: 255 }]);
    assert_eq!(machine.state(), State::Master);
    assert_eq!(machine.poll_at(), next_advert);
}

#[test]
fn a_master_steps_down_for_a_higher_priority() {
    let start = Instant::now();
    let base = settings(100);
    let (mut machine, _) = started(base.clone(), start);
    let became = run_until_master(&mut machine);
    let now = became + seconds(0.3);
    let actions = machine.handle(now, Event::Advert(advert_like(&base, LOWER_PEER, 101)));
    // No priority 0 advert: the new master is already there.
    assert_eq!(
        actions,
        [Action::RemoveAddresses, Action::EnterState(State::Backup)]
    );
    assert_eq!(machine.state(), State::Backup);
    assert_eq!(
        machine.poll_at(),
        Some(now + machine.master_down_interval())
    );
    assert_eq!(machine.statistics().released_master, 1);
}

#[test]
fn equal_priorities_are_settled_by_the_primary_address() {
    let start = Instant::now();
    let base = settings(100);
    let (mut machine, _) = started(base.clone(), start);
    let became = run_until_master(&mut machine);
    // 192.0.2.5 < 192.0.2.10: ours wins; keepalived answers at once and
    // refreshes the ARP caches.
    let now = became + seconds(0.2);
    assert_eq!(
        machine.handle(now, Event::Advert(advert_like(&base, LOWER_PEER, 100))),
        [
            Action::SendAdvert { priority: 100 },
            Action::Announce { repeat: 5 },
            Action::MasterReceivedLowerPriority { source: LOWER_PEER },
        ]
    );
    assert_eq!(machine.state(), State::Master);
    // 192.0.2.20 > 192.0.2.10: it wins.
    let actions = machine.handle(
        now + seconds(0.1),
        Event::Advert(advert_like(&base, HIGHER_PEER, 100)),
    );
    assert_eq!(
        actions,
        [Action::RemoveAddresses, Action::EnterState(State::Backup)]
    );
}

#[test]
fn a_master_hearing_a_lower_priority_answers_at_once() {
    let start = Instant::now();
    let base = settings(100);
    let (mut machine, _) = started(base.clone(), start);
    let became = run_until_master(&mut machine);
    let next_advert = machine.poll_at();
    let now = became + seconds(0.4);
    assert_eq!(
        machine.handle(now, Event::Advert(advert_like(&base, HIGHER_PEER, 50))),
        [
            Action::SendAdvert { priority: 100 },
            Action::Announce { repeat: 5 },
            Action::MasterReceivedLowerPriority {
                source: HIGHER_PEER
            },
        ]
    );
    // The regular advert keeps its time; the second ARP round comes
    // garp_lower_prio_delay later.
    assert_eq!(machine.poll_at(), next_advert);
    let second_round = now + Duration::from_secs(5);
    let mut at = next_advert.unwrap();
    while at < second_round {
        machine.handle(at, Event::Timer);
        at = machine.poll_at().unwrap();
    }
    // At became + 5 s the master-delay round, at now + 5 s the lower one.
    assert_eq!(at, second_round);
    assert_eq!(
        machine.handle(at, Event::Timer),
        [Action::Announce { repeat: 5 }]
    );

    let mut quiet = base.clone();
    quiet.lower_priority_no_advert = true;
    quiet.garp.lower_priority_repeat = 0;
    let (mut machine, _) = started(quiet.clone(), start);
    let became = run_until_master(&mut machine);
    assert_eq!(
        machine.handle(
            became + seconds(0.4),
            Event::Advert(advert_like(&quiet, HIGHER_PEER, 50))
        ),
        [Action::MasterReceivedLowerPriority {
            source: HIGHER_PEER
        }]
    );
}

#[test]
fn higher_prio_send_advert_sends_one_before_stepping_down() {
    let start = Instant::now();
    let mut base = settings(100);
    base.higher_priority_send_advert = true;
    let (mut machine, _) = started(base.clone(), start);
    let became = run_until_master(&mut machine);
    assert_eq!(
        machine.handle(
            became + seconds(0.1),
            Event::Advert(advert_like(&base, LOWER_PEER, 200))
        ),
        [
            Action::SendAdvert { priority: 100 },
            Action::RemoveAddresses,
            Action::EnterState(State::Backup),
        ]
    );
}

#[test]
fn two_address_owners_one_steps_back_to_254() {
    let start = Instant::now();
    let base = settings(255);
    let (mut machine, _) = started(base.clone(), start);
    machine.handle(
        start + seconds(0.5),
        Event::Advert(advert_like(&base, HIGHER_PEER, 255)),
    );
    assert_eq!(machine.effective_priority(), 254);
    assert_eq!(machine.state(), State::Backup);
}

#[test]
fn a_version_3_backup_times_the_master_with_the_master_s_interval() {
    let start = Instant::now();
    let base = version_3(settings(100), 50);
    let (mut machine, _) = started(base.clone(), start);
    assert_eq!(
        machine.poll_at(),
        Some(start + Duration::from_micros(1_500_000 + 304_687))
    );
    // The master advertises every 2 s.
    let master = advert_like(&version_3(settings(100), 200), HIGHER_PEER, 200);
    let now = start + seconds(1.0);
    machine.handle(now, Event::Advert(master));
    assert_eq!(machine.master_advert_interval(), Duration::from_secs(2));
    // 3 * 2 s + the skew for our priority, 100, and the master's 200 cs.
    assert_eq!(
        machine.poll_at(),
        Some(now + Duration::from_micros(6_000_000 + 156 * 200 * 625 / 16))
    );
    // Its own adverts keep its own interval.
    assert_eq!(
        machine.advert(100).kind,
        Kind::Version3 {
            max_advert_interval: 50
        }
    );
}

#[test]
fn a_tracked_priority_change_moves_a_backup_s_deadline_by_the_skew_difference() {
    let start = Instant::now();
    let (mut machine, _) = started(settings(100), start);
    let deadline = machine.poll_at().unwrap();
    let skew_100 = machine.skew_time();
    assert!(machine.handle(start, Event::PriorityChange(200)).is_empty());
    assert_eq!(machine.effective_priority(), 200);
    let skew_200 = machine.skew_time();
    assert_eq!(machine.poll_at(), Some(deadline - (skew_100 - skew_200)));
    // 0 and 255 are reserved.
    machine.handle(start, Event::PriorityChange(255));
    assert_eq!(machine.effective_priority(), 254);
    machine.handle(start, Event::PriorityChange(0));
    assert_eq!(machine.effective_priority(), 1);
    // The owner keeps 255.
    let (mut owner, _) = started(settings(255), start);
    owner.handle(start, Event::PriorityChange(10));
    assert_eq!(owner.effective_priority(), 255);
}

#[test]
fn a_master_sends_with_its_new_priority() {
    let start = Instant::now();
    let (mut machine, _) = started(settings(100), start);
    run_until_master(&mut machine);
    machine.handle(start, Event::PriorityChange(90));
    let at = machine.poll_at().unwrap();
    assert_eq!(
        machine.handle(at, Event::Timer),
        [Action::SendAdvert { priority: 90 }]
    );
}

#[test]
fn interface_down_is_fault_and_up_is_backup_again() {
    let start = Instant::now();
    let (mut machine, _) = started(settings(100), start);
    let became = run_until_master(&mut machine);
    let down = became + seconds(2.0);
    assert_eq!(
        machine.handle(down, Event::InterfaceDown),
        [
            Action::SendAdvert { priority: 0 },
            Action::RemoveAddresses,
            Action::EnterState(State::Fault),
        ]
    );
    assert_eq!(machine.poll_at(), None);
    // Adverts in FAULT are not read.
    assert!(
        machine
            .handle(
                down,
                Event::Advert(advert_like(&settings(100), LOWER_PEER, 1))
            )
            .is_empty()
    );
    let up = down + seconds(10.0);
    assert_eq!(
        machine.handle(up, Event::InterfaceUp),
        [Action::EnterState(State::Backup)]
    );
    assert_eq!(machine.poll_at(), Some(up + machine.master_down_interval()));

    // Down before start: FAULT from the beginning.
    let mut machine = Machine::new(settings(100));
    assert!(machine.handle(start, Event::InterfaceDown).is_empty());
    assert_eq!(
        machine.handle(start, Event::Start),
        [Action::EnterState(State::Fault)]
    );
    // An owner comes back as master.
    let (mut owner, _) = started(settings(255), start);
    owner.handle(start, Event::InterfaceDown);
    assert_eq!(owner.handle(start, Event::InterfaceUp), become_master(255));
}

#[test]
fn garp_master_refresh_rides_on_the_adverts() {
    let start = Instant::now();
    let mut base = settings(255);
    base.garp.master_refresh = Some(seconds(2.5));
    base.garp.master_refresh_repeat = 2;
    base.garp.master_delay = Duration::ZERO;
    let (mut machine, _) = started(base, start);
    let mut refreshes = Vec::new();
    for tick in 1..=8 {
        let now = start + Duration::from_secs(tick);
        assert_eq!(machine.poll_at(), Some(now));
        let actions = machine.handle(now, Event::Timer);
        if actions.contains(&Action::Announce { repeat: 2 }) {
            refreshes.push(tick);
        }
    }
    // Due at 2.5 s, sent with the 3 s advert, next due at 5.5 s, and so on.
    assert_eq!(refreshes, [3, 6]);
}

#[test]
fn skip_check_adv_addr_trusts_the_known_master_s_address_list() {
    let start = Instant::now();
    let mut base = settings(100);
    base.skip_check_advert_addresses = true;
    let (mut machine, _) = started(base.clone(), start);
    let good = advert_like(&base, HIGHER_PEER, 150);
    let mut odd = good.clone();
    odd.advert.addresses = Addresses::Ipv4(vec![Ipv4Addr::new(10, 9, 9, 9)]);
    odd.advert = reemit(odd.advert);
    // Unknown sender: checked and dropped.
    machine.handle(start + seconds(0.5), Event::Advert(odd.clone()));
    assert_eq!(
        machine.statistics().drops(DropReason::AddressCountMismatch),
        1
    );
    machine.handle(start + seconds(1.0), Event::Advert(good));
    let now = start + seconds(2.0);
    machine.handle(now, Event::Advert(odd));
    assert_eq!(machine.statistics().total_drops(), 1);
    assert_eq!(
        machine.poll_at(),
        Some(now + machine.master_down_interval())
    );
}

/// An advert as it would be after going through the wire (it must parse).
fn reemit(advert: packet::Repr) -> packet::Repr {
    let source = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 20));
    let bytes = advert.to_bytes(&source, &GROUP);
    packet::Repr::parse(
        &packet::Packet::new_checked(&bytes[..]).unwrap(),
        &source,
        &GROUP,
    )
    .unwrap()
}

/// Hostile or mistaken adverts for a backup and for a master: each is
/// counted under its reason and changes nothing else.
#[test]
fn every_drop_reason_is_counted_and_changes_nothing() {
    let base = settings(100);
    let good = advert_like(&base, HIGHER_PEER, 200);
    let with_kind = |kind: Kind| {
        let mut received = good.clone();
        received.advert.kind = kind;
        received
    };
    let v2 = |interval: u8, authentication_type: u8, data: &[u8; 8]| {
        with_kind(Kind::Version2 {
            advert_interval: interval,
            authentication_type,
            authentication_data: *data,
        })
    };
    let mut cases: Vec<(DropReason, InstanceSettings, Event)> = Vec::new();
    let mut add = |reason, settings: &InstanceSettings, received: Received| {
        cases.push((reason, settings.clone(), Event::Advert(received)));
    };
    let mut other_router = good.clone();
    other_router.advert.virtual_router_id = 52;
    add(DropReason::WrongVirtualRouterId, &base, other_router);
    let mut ipv6 = good.clone();
    ipv6.source = IpAddr::V6(Ipv6Addr::LOCALHOST);
    add(DropReason::WrongFamily, &base, ipv6);
    let mut ipv6_addresses = good.clone();
    ipv6_addresses.advert.addresses = Addresses::Ipv6(vec![Ipv6Addr::LOCALHOST; 2]);
    add(DropReason::WrongFamily, &base, ipv6_addresses);
    let mut routed = good.clone();
    routed.hop_limit = 254;
    add(DropReason::WrongTtl, &base, routed);
    add(
        DropReason::VersionMismatch,
        &base,
        with_kind(Kind::Version3 {
            max_advert_interval: 100,
        }),
    );
    add(
        DropReason::InvalidAuthenticationType,
        &base,
        v2(1, 3, b"secret12"),
    );
    add(
        DropReason::AuthenticationTypeMismatch,
        &base,
        v2(1, 0, b"secret12"),
    );
    add(
        DropReason::AuthenticationFailure,
        &base,
        v2(1, 1, b"secret13"),
    );
    add(DropReason::IntervalMismatch, &base, v2(2, 1, b"secret12"));
    let mut fewer = good.clone();
    fewer.advert.addresses = Addresses::Ipv4(vec![Ipv4Addr::new(192, 0, 2, 100)]);
    add(DropReason::AddressCountMismatch, &base, fewer);
    let mut other_addresses = good.clone();
    other_addresses.advert.addresses = Addresses::Ipv4(vec![
        Ipv4Addr::new(192, 0, 2, 100),
        Ipv4Addr::new(192, 0, 2, 102),
    ]);
    add(DropReason::AddressListMismatch, &base, other_addresses);
    let mut unicast = good.clone();
    unicast.destination = LOCAL;
    add(DropReason::UnicastMulticastMismatch, &base, unicast);

    let mut unicast_settings = version_3(settings(100), 100);
    unicast_settings.check_unicast_source = true;
    unicast_settings.unicast_peers = vec![PeerSettings {
        address: HIGHER_PEER,
        min_ttl: Some(250),
        max_ttl: None,
    }];
    let mut unicast_good = advert_like(&unicast_settings, HIGHER_PEER, 200);
    unicast_good.destination = LOCAL;
    unicast_good.hop_limit = 251;
    let mut stranger = unicast_good.clone();
    stranger.source = LOWER_PEER;
    add(DropReason::NotAUnicastPeer, &unicast_settings, stranger);
    let mut far = unicast_good.clone();
    far.hop_limit = 249;
    add(DropReason::WrongTtl, &unicast_settings, far);
    let mut multicast = unicast_good.clone();
    multicast.destination = GROUP;
    add(
        DropReason::UnicastMulticastMismatch,
        &unicast_settings,
        multicast,
    );
    for error in [
        packet::Error::Truncated,
        packet::Error::TooLong,
        packet::Error::WrongVersion(4),
        packet::Error::WrongType(2),
        packet::Error::BadChecksum,
        packet::Error::MixedFamilies,
        packet::Error::Version2OverIpv6,
    ] {
        cases.push((error.into(), base.clone(), Event::Malformed(error)));
    }
    // Every reason has a case.
    for reason in DropReason::ALL {
        assert!(
            cases.iter().any(|(case, _, _)| *case == reason),
            "{reason:?}"
        );
    }

    for (reason, settings, event) in cases {
        let start = Instant::now();
        // The same advert from a good sender is accepted, so each case
        // fails on its own reason only.
        let (mut backup, _) = started(settings.clone(), start);
        let (mut master, _) = started(settings.clone(), start);
        run_until_master(&mut master);
        for machine in [&mut backup, &mut master] {
            let state = machine.state();
            let deadline = machine.poll_at();
            let before = machine.statistics().clone();
            let actions = machine.handle(start + seconds(0.5), event.clone());
            assert!(actions.is_empty(), "{reason:?}: {actions:?}");
            assert_eq!(machine.state(), state, "{reason:?}");
            assert_eq!(machine.poll_at(), deadline, "{reason:?}");
            assert_eq!(machine.statistics().drops(reason), 1, "{reason:?}");
            assert_eq!(machine.statistics().total_drops(), 1, "{reason:?}");
            assert_eq!(
                machine.statistics().adverts_received,
                before.adverts_received,
                "{reason:?}"
            );
        }
    }

    // The unaltered adverts are accepted by the same machines.
    let start = Instant::now();
    for (settings, received) in [(base, good), (unicast_settings, unicast_good)] {
        let (mut backup, _) = started(settings, start);
        backup.handle(start + seconds(0.5), Event::Advert(received));
        assert_eq!(backup.statistics().adverts_received, 1);
        assert_eq!(backup.statistics().total_drops(), 0);
    }
}

/// keepalived's backup accepts an equal priority as a master whatever the
/// addresses (RFC 5798 would compare them); only masters compare.
#[test]
fn a_backup_accepts_an_equal_priority_master_even_from_a_lower_address() {
    let start = Instant::now();
    let base = settings(100);
    let (mut machine, _) = started(base.clone(), start);
    for tick in 1..=10 {
        let now = start + Duration::from_secs(tick);
        machine.handle(now, Event::Advert(advert_like(&base, LOWER_PEER, 100)));
        assert_eq!(
            machine.poll_at(),
            Some(now + machine.master_down_interval())
        );
    }
    assert_eq!(machine.state(), State::Backup);
}

#[test]
fn drop_reasons_index_their_counters() {
    for (index, reason) in DropReason::ALL.into_iter().enumerate() {
        assert_eq!(reason as usize, index, "{reason:?}");
    }
}

#[test]
fn a_master_whose_virtual_address_is_deleted_steps_down_and_takes_over_again() {
    let mut machine = Machine::new(settings(100));
    let start = Instant::now();
    machine.handle(start, Event::Start);
    let at = run_until_master(&mut machine);
    let actions = machine.handle(at, Event::VirtualAddressRemoved);
    assert_eq!(
        actions,
        vec![
            Action::SendAdvert { priority: 0 },
            Action::RemoveAddresses,
            Action::EnterState(State::Backup),
        ]
    );
    // Back after the skew time, not the master down interval.
    assert_eq!(machine.poll_at(), Some(at + machine.skew_time()));
    let actions = machine.handle(at + machine.skew_time(), Event::Timer);
    assert_eq!(machine.state(), State::Master);
    assert!(actions.contains(&Action::AddAddresses), "{actions:?}");
}

#[test]
fn a_deleted_virtual_address_means_nothing_to_a_backup() {
    let start = Instant::now();
    let (mut machine, _) = started(settings(100), start);
    let deadline = machine.poll_at();
    assert!(
        machine
            .handle(start + seconds(0.5), Event::VirtualAddressRemoved)
            .is_empty()
    );
    assert_eq!(machine.state(), State::Backup);
    assert_eq!(machine.poll_at(), deadline);
}

#[test]
fn the_local_address_set_later_is_compared_with_a_masters() {
    let mut local = settings(100);
    local.local_address = None;
    let mut machine = Machine::new(local);
    machine.set_local_address(Some(LOCAL));
    assert_eq!(machine.settings().local_address, Some(LOCAL));
}

/// keepalived 2.2.7's /tmp/keepalived.stats after SIGUSR2 for a lone
/// master that had sent 3 adverts (captured in a network namespace).
const KEEPALIVED_STATS: &str = "VRRP Instance: VI_1
  Advertisements:
    Received: 0
    Sent: 3
  Became master: 1
  Released master: 0
  Packet Errors:
    Length: 0
    TTL: 0
    Invalid Type: 0
    Advertisement Interval: 0
    Address List: 0
  Authentication Errors:
    Invalid Type: 0
    Type Mismatch: 0
    Failure: 0
  Priority Zero:
    Received: 0
    Sent: 0
";

#[test]
fn the_statistics_report_is_keepalived_s() {
    let mut machine = Machine::new(settings(100));
    let start = Instant::now();
    machine.handle(start, Event::Start);
    let mut at = run_until_master(&mut machine);
    for _ in 0..2 {
        at = machine.poll_at().unwrap();
        machine.handle(at, Event::Timer);
    }
    assert_eq!(
        machine.statistics().keepalived_report("VI_1"),
        KEEPALIVED_STATS
    );
    // The drops keepalived has a line for, each on its line; a packet
    // too short is a length error.
    machine.handle(at, Event::Malformed(packet::Error::Truncated));
    machine.handle(at, Event::Malformed(packet::Error::BadChecksum));
    let report = machine.statistics().keepalived_report("VI_1");
    assert!(report.contains("    Length: 1\n"), "{report}");
    assert_eq!(
        report.replace("    Length: 1\n", "    Length: 0\n"),
        KEEPALIVED_STATS
    );
}

/// A machine with `vrrp_startup_delay` ending at `until`, started at
/// `start`.
fn started_with_delay(
    settings: InstanceSettings,
    start: Instant,
    until: Instant,
) -> (Machine, Vec<Action>) {
    let mut machine = Machine::new(settings);
    machine.delay_start_until(Some(until));
    let actions = machine.handle(start, Event::Start);
    (machine, actions)
}

#[test]
fn the_startup_delay_holds_a_backup_s_down_timer_until_it_has_passed() {
    let start = Instant::now();
    let until = start + Duration::from_secs(5);
    let down = Duration::from_micros(3_609_375);
    let (mut machine, actions) = started_with_delay(settings(100), start, until);
    // A backup as usual (keepalived logs "Entering BACKUP STATE (init)"),
    // its down timer counted from the delay's end.
    assert_eq!(actions, [Action::EnterState(State::Backup)]);
    assert_eq!(machine.poll_at(), Some(until + down));
    assert!(
        machine
            .handle(until + down - seconds(0.001), Event::Timer)
            .is_empty()
    );
    // A master heard during the delay: again from the delay's end.
    let base = settings(100);
    let higher = advert_like(&base, HIGHER_PEER, 150);
    assert!(
        machine
            .handle(start + seconds(1.0), Event::Advert(higher.clone()))
            .is_empty()
    );
    assert_eq!(machine.poll_at(), Some(until + down));
    // After it, from the advert as usual.
    let later = until + seconds(1.0);
    assert!(machine.handle(later, Event::Advert(higher)).is_empty());
    assert_eq!(machine.poll_at(), Some(later + down));
    assert_eq!(
        machine.handle(later + down, Event::Timer),
        become_master(100)
    );
}

#[test]
fn without_a_master_the_startup_delay_and_the_down_interval_pass_before_taking_over() {
    let start = Instant::now();
    let until = start + Duration::from_secs(3);
    let (mut machine, _) = started_with_delay(settings(150), start, until);
    let at = run_until_master(&mut machine);
    assert_eq!(at, until + machine.master_down_interval());
    // A delay already over changes nothing.
    let (mut machine, _) = started_with_delay(settings(150), start, start - seconds(1.0));
    assert_eq!(
        run_until_master(&mut machine),
        start + machine.master_down_interval()
    );
}

#[test]
fn an_address_owner_waits_out_the_startup_delay_without_a_transition() {
    let start = Instant::now();
    let until = start + Duration::from_secs(2);
    let (mut machine, actions) = started_with_delay(settings(255), start, until);
    // keepalived's vrrp_init_state: BACKUP with a 1 µs down timer, no log
    // line, no notify.
    assert!(actions.is_empty(), "{actions:?}");
    assert_eq!(machine.state(), State::Backup);
    let at = until + Duration::from_micros(1);
    assert_eq!(machine.poll_at(), Some(at));
    assert!(machine.handle(at - seconds(0.5), Event::Timer).is_empty());
    assert_eq!(machine.handle(at, Event::Timer), become_master(255));
}

#[test]
fn an_advert_ignored_during_the_startup_delay_pushes_the_down_timer_as_keepalived_s() {
    let start = Instant::now();
    let until = start + Duration::from_secs(5);
    let base = settings(100);
    let (mut machine, _) = started_with_delay(base.clone(), start, until);
    let deadline = machine.poll_at().unwrap();
    // A lower priority with preemption: ignored; keepalived sets the down
    // timer to what was left of it (deadline - now) from the delay's end.
    let now = start + seconds(1.0);
    let lower = advert_like(&base, LOWER_PEER, 50);
    assert!(machine.handle(now, Event::Advert(lower.clone())).is_empty());
    let pushed = until + (deadline - now);
    assert_eq!(machine.poll_at(), Some(pushed));
    // A dropped advert (another password) likewise.
    let mut wrong = advert_like(&base, HIGHER_PEER, 150);
    if let Kind::Version2 {
        authentication_data,
        ..
    } = &mut wrong.advert.kind
    {
        *authentication_data = *b"wrong!!!";
    }
    let now = start + seconds(2.0);
    assert!(machine.handle(now, Event::Advert(wrong)).is_empty());
    assert_eq!(machine.poll_at(), Some(until + (pushed - now)));
    // Once the delay has passed, an ignored advert leaves it where it is.
    let deadline = machine.poll_at().unwrap();
    assert!(
        machine
            .handle(until + seconds(0.5), Event::Advert(lower))
            .is_empty()
    );
    assert_eq!(machine.poll_at(), Some(deadline));
}

#[test]
fn garp_extra_if_announces_with_the_first_advert_after_each_interval() {
    let start = Instant::now();
    let mut base = settings(150);
    base.garp.extra_interfaces = Some(Duration::from_secs(2));
    base.garp.master_delay = Duration::ZERO;
    let (mut machine, _) = started(base, start);
    let master = run_until_master(&mut machine);
    // Adverts every second (and a little); keepalived compares with `>`:
    // the first advert after 2 s announces.
    let mut now = master;
    let mut extra = Vec::new();
    for _ in 0..7 {
        now += Duration::from_secs(1) + Duration::from_millis(1);
        let actions = machine.handle(now, Event::Timer);
        assert_eq!(actions[0], Action::SendAdvert { priority: 150 });
        if actions.contains(&Action::AnnounceExtraInterfaces) {
            extra.push((now - master).as_millis());
        }
    }
    // Adverts 1001 ms apart: 2002 ms > 2000 ms, then 2 s after that one.
    assert_eq!(extra, [2002, 4004, 6006]);
    // Not after leaving master.
    let higher = advert_like(&settings(150), HIGHER_PEER, 200);
    machine.handle(now, Event::Advert(higher));
    assert_eq!(machine.state(), State::Backup);
    assert!(
        !machine
            .handle(now + Duration::from_secs(3), Event::Timer)
            .contains(&Action::AnnounceExtraInterfaces)
    );
}
