//! One VRRP instance's state machine, without I/O: [`Machine::handle`]
//! takes the time and an [`Event`] and returns the [`Action`]s to carry
//! out; [`Machine::poll_at`] says when to call it next with
//! [`Event::Timer`].
//!
//! It follows keepalived 2.2's `vrrp.c` and `vrrp_scheduler.c` rather than
//! the RFCs' state tables where the two differ, because a pulse must be
//! able to replace one node of a running keepalived pair:
//!
//! - Skew time: version 2 uses `(256 - priority) / 256` seconds whatever
//!   the interval (RFC 3768); version 3 `(256 - priority) * interval / 256`
//!   with the master's interval in centiseconds, computed in microseconds
//!   with keepalived's integer arithmetic. The priority is the effective
//!   one (after tracking). The master down interval is `down_timer_adverts`
//!   (default 3) intervals plus the skew.
//! - Start: an address owner (priority 255) becomes master at once; any
//!   other instance starts as backup, whatever its configured `state`
//!   (keepalived 2.2.7 logs "Entering BACKUP STATE (init)" for `state
//!   MASTER` too and takes over only after the master down interval).
//! - A backup that hears a lower priority with preemption allowed ignores
//!   the advert and lets its down timer run out: it preempts at most one
//!   master down interval later, not at once. `preempt_delay` starts
//!   counting at the first lower-priority advert and, until it has passed,
//!   such adverts are accepted as a master's.
//! - A master that hears a lower priority answers with an advert right
//!   away (unless `lower_prio_no_advert`) and sends
//!   `garp_lower_prio_repeat` gratuitous ARPs, again after
//!   `garp_lower_prio_delay`; one that hears a higher priority, or an equal
//!   one from a higher address, steps down without a priority 0 advert; one
//!   that hears priority 0 answers with an advert and stays.
//! - Version 2 adverts with another interval are dropped; a version 3
//!   backup adopts the master's interval.
//! - Priority 0 on stop and on a link failure while master.
//! - `vrrp_startup_delay` ([`Machine::delay_start_until`]): until the
//!   delay has passed, a backup's down timer counts from the delay's end
//!   rather than from now, whenever it is set (keepalived's
//!   vrrp_scheduler.c `vrrp_init_instance_sands`), so that no instance
//!   takes over before the delay plus its master down interval; an address
//!   owner waits as a backup (without a transition of its own, as
//!   keepalived's `vrrp_init_state`) until the delay has passed. An advert
//!   a backup ignores or drops then pushes its timer on by as much as the
//!   delay has left, as keepalived's does (it sets the down timer to what
//!   was left of it, counted again from the delay's end).
//! - A member of a `vrrp_sync_group` ([`Machine::join_sync_group`]) whose
//!   down timer runs out does not take over by itself: it asks with
//!   [`Action::RequestMaster`], keeps wanting to until it accepts a
//!   master's advert, and becomes master on [`Event::SyncMaster`]
//!   ([`super::sync`] decides when, as keepalived's vrrp_sync.c).

use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::packet::{self, Addresses, Family, Kind, Repr};
use super::settings::{AuthenticationSettings, InstanceSettings, Version};

/// The RFC's states; `Initialize` is also where [`Event::Stop`] leaves an
/// instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Initialize,
    Backup,
    Master,
    Fault,
}

/// An advert as the receiver got it: parsed and checksummed by
/// [`Repr::parse`], with what the IP header said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    pub source: IpAddr,
    pub destination: IpAddr,
    /// IPv4 TTL or IPv6 hop limit.
    pub hop_limit: u8,
    pub advert: Repr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Start,
    /// A deadline from [`Machine::poll_at`] has come.
    Timer,
    Advert(Received),
    /// Bytes that did not parse; counted, nothing else.
    Malformed(packet::Error),
    /// The effective priority after tracking (scripts, interfaces, files)
    /// changed. An address owner keeps 255; others are held to 1..=254.
    PriorityChange(u8),
    InterfaceDown,
    InterfaceUp,
    Stop,
    /// Its sync group goes to MASTER: a backup takes over at once.
    SyncMaster,
    /// Its sync group goes to BACKUP: a master steps down, without a
    /// priority 0 advert (keepalived's vrrp_state_leave_master without
    /// `advF`).
    SyncBackup,
    /// Its sync group is in FAULT: the instance is too (a master sends
    /// priority 0 first), until [`Event::SyncFaultCleared`], whatever its
    /// own tracking says.
    SyncFault,
    SyncFaultCleared,
    /// One of its virtual addresses was deleted by someone else: a master
    /// steps down to BACKUP (priority 0 advert, addresses removed) with
    /// its down timer at the skew time, so that it takes over again, and
    /// adds them again, unless another router does first (keepalived 2.2's
    /// set_vrrp_backup).
    VirtualAddressRemoved,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Send [`Machine::advert`] with this priority to the multicast group
    /// or to every unicast peer.
    SendAdvert { priority: u8 },
    /// Add the virtual addresses, routes and rules.
    AddAddresses,
    /// Remove them.
    RemoveAddresses,
    /// Send `repeat` gratuitous ARPs (IPv4) or unsolicited neighbour
    /// advertisements (IPv6) for each virtual address, as the interfaces'
    /// pacing lets them go ([`super::garp`]).
    Announce { repeat: u32 },
    /// `garp_extra_if`: one message for the first virtual address on each
    /// interface other than the instance's.
    AnnounceExtraInterfaces,
    /// The instance entered this state (notify scripts, sync daemon).
    EnterState(State),
    /// `notify_master_rx_lower_pri`.
    MasterReceivedLowerPriority { source: IpAddr },
    /// A sync group member's down timer ran out: it wants to become
    /// master, and does on [`Event::SyncMaster`]. Meanwhile its down timer
    /// runs again.
    RequestMaster,
}

/// Why a received advert was dropped. Each is counted in [`Statistics`];
/// the first seven are the packet errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    Truncated,
    TooLong,
    WrongVersion,
    WrongType,
    BadChecksum,
    MixedFamilies,
    Version2OverIpv6,
    /// An IPv4 advert for an IPv6 instance or the reverse.
    WrongFamily,
    /// A valid version, not the instance's.
    VersionMismatch,
    WrongVirtualRouterId,
    /// Multicast: not 255 (RFC 3768 7.1); unicast: outside the peer's
    /// `min_ttl`..`max_ttl`.
    WrongTtl,
    /// Version 2 authentication type other than 0, 1 or 2.
    InvalidAuthenticationType,
    AuthenticationTypeMismatch,
    /// Wrong password.
    AuthenticationFailure,
    /// Version 2 advert interval other than the instance's.
    IntervalMismatch,
    AddressCountMismatch,
    /// A virtual address of the instance is not in the advert.
    AddressListMismatch,
    /// Multicast advert for a unicast instance or the reverse.
    UnicastMulticastMismatch,
    /// `check_unicast_src`: the source is not a unicast peer.
    NotAUnicastPeer,
}

impl DropReason {
    pub const ALL: [DropReason; 19] = [
        DropReason::Truncated,
        DropReason::TooLong,
        DropReason::WrongVersion,
        DropReason::WrongType,
        DropReason::BadChecksum,
        DropReason::MixedFamilies,
        DropReason::Version2OverIpv6,
        DropReason::WrongFamily,
        DropReason::VersionMismatch,
        DropReason::WrongVirtualRouterId,
        DropReason::WrongTtl,
        DropReason::InvalidAuthenticationType,
        DropReason::AuthenticationTypeMismatch,
        DropReason::AuthenticationFailure,
        DropReason::IntervalMismatch,
        DropReason::AddressCountMismatch,
        DropReason::AddressListMismatch,
        DropReason::UnicastMulticastMismatch,
        DropReason::NotAUnicastPeer,
    ];
}

impl From<packet::Error> for DropReason {
    fn from(error: packet::Error) -> DropReason {
        match error {
            packet::Error::Truncated => DropReason::Truncated,
            packet::Error::TooLong => DropReason::TooLong,
            packet::Error::WrongVersion(_) => DropReason::WrongVersion,
            packet::Error::WrongType(_) => DropReason::WrongType,
            packet::Error::BadChecksum => DropReason::BadChecksum,
            packet::Error::MixedFamilies => DropReason::MixedFamilies,
            packet::Error::Version2OverIpv6 => DropReason::Version2OverIpv6,
        }
    }
}

/// keepalived's per-instance counters, plus one per drop reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Statistics {
    /// Adverts that passed every check.
    pub adverts_received: u64,
    pub adverts_sent: u64,
    pub priority_zero_received: u64,
    pub priority_zero_sent: u64,
    pub became_master: u64,
    pub released_master: u64,
    drops: [u64; DropReason::ALL.len()],
}

impl Statistics {
    pub fn drops(&self, reason: DropReason) -> u64 {
        self.drops[reason as usize]
    }

    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }

    fn count_drop(&mut self, reason: DropReason) {
        self.drops[reason as usize] += 1;
    }

    /// keepalived's counters (vrrp_stats), by the names of its JSON dump,
    /// in its order. keepalived counts fewer errors than pulse: the drops
    /// it has no counter for (checksum, version, VRID, family, ...) are
    /// left out, a wrong address count is an address list error as in
    /// keepalived's vrrp_check_packet.
    pub fn keepalived_counters(&self) -> [(&'static str, u64); 14] {
        let drops = |reasons: &[DropReason]| -> u64 {
            reasons.iter().map(|reason| self.drops(*reason)).sum()
        };
        [
            ("advert_rcvd", self.adverts_received),
            ("advert_sent", self.adverts_sent),
            ("become_master", self.became_master),
            ("release_master", self.released_master),
            (
                "packet_len_err",
                drops(&[DropReason::Truncated, DropReason::TooLong]),
            ),
            (
                "advert_interval_err",
                drops(&[DropReason::IntervalMismatch]),
            ),
            ("ip_ttl_err", drops(&[DropReason::WrongTtl])),
            ("invalid_type_rcvd", drops(&[DropReason::WrongType])),
            (
                "addr_list_err",
                drops(&[
                    DropReason::AddressCountMismatch,
                    DropReason::AddressListMismatch,
                ]),
            ),
            (
                "invalid_authtype",
                drops(&[DropReason::InvalidAuthenticationType]),
            ),
            (
                "authtype_mismatch",
                drops(&[DropReason::AuthenticationTypeMismatch]),
            ),
            ("auth_failure", drops(&[DropReason::AuthenticationFailure])),
            ("pri_zero_rcvd", self.priority_zero_received),
            ("pri_zero_sent", self.priority_zero_sent),
        ]
    }

    /// Instance `name`'s block of keepalived 2.2's statistics file
    /// (vrrp_print.c's vrrp_print_stats, written on SIGUSR2), from
    /// [`Statistics::keepalived_counters`].
    pub fn keepalived_report(&self, name: &str) -> String {
        let [
            (_, received),
            (_, sent),
            (_, became_master),
            (_, released_master),
            (_, length),
            (_, interval),
            (_, ttl),
            (_, invalid_type),
            (_, address_list),
            (_, invalid_authentication_type),
            (_, authentication_type_mismatch),
            (_, authentication_failure),
            (_, priority_zero_received),
            (_, priority_zero_sent),
        ] = self.keepalived_counters();
        format!(
            "VRRP Instance: {name}\n\
             \x20 Advertisements:\n\
             \x20   Received: {received}\n\
             \x20   Sent: {sent}\n\
             \x20 Became master: {became_master}\n\
             \x20 Released master: {released_master}\n\
             \x20 Packet Errors:\n\
             \x20   Length: {length}\n\
             \x20   TTL: {ttl}\n\
             \x20   Invalid Type: {invalid_type}\n\
             \x20   Advertisement Interval: {interval}\n\
             \x20   Address List: {address_list}\n\
             \x20 Authentication Errors:\n\
             \x20   Invalid Type: {invalid_authentication_type}\n\
             \x20   Type Mismatch: {authentication_type_mismatch}\n\
             \x20   Failure: {authentication_failure}\n\
             \x20 Priority Zero:\n\
             \x20   Received: {priority_zero_received}\n\
             \x20   Sent: {priority_zero_sent}\n"
        )
    }
}

const PRIORITY_OWNER: u8 = 255;
const PRIORITY_STOP: u8 = 0;
const MULTICAST_HOP_LIMIT: u8 = 255;

/// One VRRP instance.
#[derive(Debug, Clone)]
pub struct Machine {
    settings: InstanceSettings,
    state: State,
    /// The configured priority; lowered to 254 when another owner shows up.
    base_priority: u8,
    effective_priority: u8,
    /// The master's interval, which a version 3 backup learns from adverts.
    master_advert_interval: Duration,
    interface_up: bool,
    /// A member of a sync group: takes over only when told.
    synced: bool,
    /// Held in FAULT by its sync group.
    sync_fault: bool,
    /// keepalived's `wantstate == MASTER` for a backup of a sync group:
    /// its down timer ran out and no master's advert was accepted since.
    wants_master: bool,
    /// Backup: when the master is declared down. Master: the next advert.
    deadline: Option<Instant>,
    /// keepalived's `preempt_time`: until then a backup accepts a lower
    /// priority master.
    preempt_until: Option<Instant>,
    master_address: Option<IpAddr>,
    master_priority: u8,
    /// The second gratuitous ARP round, `garp_master_delay` after taking
    /// over.
    delayed_announce: Option<Instant>,
    /// The second round after hearing a lower priority.
    lower_priority_announce: Option<Instant>,
    /// The next `garp_master_refresh` round, sent with the first advert
    /// after it.
    refresh_at: Option<Instant>,
    /// `vrrp_startup_delay`: when the delay after the daemon's start ends.
    startup_delay_until: Option<Instant>,
    /// The next `garp_extra_if` announcement, sent with the first advert
    /// after it.
    extra_interfaces_at: Option<Instant>,
    statistics: Statistics,
}

impl Machine {
    /// An instance in [`State::Initialize`], its interface up; send
    /// [`Event::InterfaceDown`] before [`Event::Start`] if it is not.
    pub fn new(settings: InstanceSettings) -> Machine {
        let priority = settings.priority;
        let interval = settings.advert_interval;
        Machine {
            settings,
            state: State::Initialize,
            base_priority: priority,
            effective_priority: priority,
            master_advert_interval: interval,
            interface_up: true,
            synced: false,
            sync_fault: false,
            wants_master: false,
            deadline: None,
            preempt_until: None,
            master_address: None,
            master_priority: 0,
            delayed_announce: None,
            lower_priority_announce: None,
            refresh_at: None,
            startup_delay_until: None,
            extra_interfaces_at: None,
            statistics: Statistics::default(),
        }
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// `vrrp_startup_delay`: no down timer runs out before `until` plus
    /// the master down interval (the rules at the top). Given before
    /// [`Event::Start`], to the instances a reload starts too while the
    /// delay lasts (keepalived's delay is one time for the whole process).
    pub fn delay_start_until(&mut self, until: Option<Instant>) {
        self.startup_delay_until = until;
    }

    /// The end of the startup delay, if it has not passed at `now`.
    fn startup_delay_left(&self, now: Instant) -> Option<Instant> {
        self.startup_delay_until.filter(|until| now < *until)
    }

    /// A backup's down timer set to run `down` from now: keepalived's
    /// vrrp_init_instance_sands, which counts from the startup delay's end
    /// while the delay lasts.
    fn backup_deadline(&self, now: Instant, down: Duration) -> Instant {
        match self.startup_delay_left(now) {
            Some(until) => until + down,
            None => now + down,
        }
    }

    /// A backup ignored or dropped an advert: keepalived sets its down
    /// timer to what is left of it and sets it again, which changes
    /// nothing once the startup delay has passed and pushes it on while
    /// the delay lasts (vrrp.c `vrrp_state_backup`, `ignore_advert`).
    fn backup_ignored_advert(&mut self, now: Instant) {
        if self.state == State::Backup
            && let Some(deadline) = self.deadline
        {
            self.deadline =
                Some(self.backup_deadline(now, deadline.saturating_duration_since(now)));
        }
    }

    /// An address owner waiting out the startup delay: a backup that
    /// takes over as soon as the delay has passed, with no transition of
    /// its own until then (keepalived's vrrp_init_state gives it a down
    /// timer of 1 µs and the state BACKUP, without a log line or notify).
    fn owner_waits(&mut self, now: Instant) -> bool {
        if self.startup_delay_left(now).is_none() {
            return false;
        }
        self.state = State::Backup;
        self.wants_master = false;
        self.preempt_until = None;
        self.deadline = Some(self.backup_deadline(now, Duration::from_micros(1)));
        true
    }

    /// Makes the instance a member of a sync group, before
    /// [`Event::Start`].
    pub fn join_sync_group(&mut self) {
        self.synced = true;
    }

    /// A sync group member ready to become master: master already, or a
    /// backup whose down timer ran out (keepalived's `wantstate`).
    pub fn wants_master(&self) -> bool {
        self.state == State::Master || (self.state == State::Backup && self.wants_master)
    }

    /// The address its adverts now go from (the interface's address
    /// changed), compared with a master's of equal priority.
    pub fn set_local_address(&mut self, address: Option<IpAddr>) {
        self.settings.local_address = address;
    }

    pub fn settings(&self) -> &InstanceSettings {
        &self.settings
    }

    pub fn effective_priority(&self) -> u8 {
        self.effective_priority
    }

    /// keepalived's STATS_CLEAR: every counter back to zero.
    pub fn clear_statistics(&mut self) {
        self.statistics = Statistics::default();
    }

    pub fn statistics(&self) -> &Statistics {
        &self.statistics
    }

    /// When `garp_extra_if` announces next (with the first advert after
    /// it), if it has been set.
    pub fn extra_interfaces_at(&self) -> Option<Instant> {
        self.extra_interfaces_at
    }

    /// The current master's address and priority as a backup last heard.
    pub fn master(&self) -> Option<(IpAddr, u8)> {
        self.master_address
            .map(|address| (address, self.master_priority))
    }

    /// The interval a backup times the master with.
    pub fn master_advert_interval(&self) -> Duration {
        self.master_advert_interval
    }

    /// keepalived's `VRRP_TIMER_SKEW`.
    pub fn skew_time(&self) -> Duration {
        let weight = 256 - u64::from(self.effective_priority);
        let micros = match self.settings.version {
            Version::V2 => weight * 1_000_000 / 256,
            Version::V3 => {
                let centiseconds = self.master_advert_interval.as_micros() as u64 / 10_000;
                // 625 / 16 = 10,000 µs per centisecond / 256, reduced as
                // keepalived does.
                weight * centiseconds * 625 / 16
            }
        };
        Duration::from_micros(micros)
    }

    /// keepalived's `VRRP_MS_DOWN_TIMER`.
    pub fn master_down_interval(&self) -> Duration {
        self.master_advert_interval * self.settings.down_timer_adverts + self.skew_time()
    }

    /// The next time [`Event::Timer`] has something to do.
    pub fn poll_at(&self) -> Option<Instant> {
        [
            self.deadline,
            self.delayed_announce,
            self.lower_priority_announce,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The advert this instance sends with `priority`.
    pub fn advert(&self, priority: u8) -> Repr {
        let kind = match self.settings.version {
            Version::V2 => {
                let (authentication_type, authentication_data) = match self.settings.authentication
                {
                    AuthenticationSettings::None => (packet::AUTHENTICATION_NONE, [0; 8]),
                    AuthenticationSettings::Password(data) => {
                        (packet::AUTHENTICATION_PASSWORD, data)
                    }
                };
                Kind::Version2 {
                    advert_interval: self.settings.advert_interval_field() as u8,
                    authentication_type,
                    authentication_data,
                }
            }
            Version::V3 => Kind::Version3 {
                max_advert_interval: self.settings.advert_interval_field(),
            },
        };
        let addresses = match self.settings.family {
            Family::Ipv4 => Addresses::Ipv4(
                self.settings
                    .virtual_addresses
                    .iter()
                    .filter_map(|address| match address {
                        IpAddr::V4(address) => Some(*address),
                        IpAddr::V6(_) => None,
                    })
                    .collect(),
            ),
            Family::Ipv6 => Addresses::Ipv6(
                self.settings
                    .virtual_addresses
                    .iter()
                    .filter_map(|address| match address {
                        IpAddr::V6(address) => Some(*address),
                        IpAddr::V4(_) => None,
                    })
                    .collect(),
            ),
        };
        Repr {
            virtual_router_id: self.settings.virtual_router_id,
            priority,
            kind,
            addresses,
        }
    }

    /// Handles `event` at `now`.
    pub fn handle(&mut self, now: Instant, event: Event) -> Vec<Action> {
        let mut actions = Vec::new();
        match event {
            Event::Start => self.start(now, &mut actions),
            Event::Timer => self.timer(now, &mut actions),
            Event::Advert(received) => self.receive(now, &received, &mut actions),
            Event::Malformed(error) => {
                self.statistics.count_drop(error.into());
                self.backup_ignored_advert(now);
            }
            Event::PriorityChange(priority) => self.change_priority(priority),
            Event::InterfaceDown => self.interface_down(&mut actions),
            Event::InterfaceUp => self.interface_up(now, &mut actions),
            Event::Stop => self.stop(&mut actions),
            Event::SyncMaster => {
                if self.state == State::Backup {
                    self.wants_master = false;
                    self.become_master(now, &mut actions);
                }
            }
            Event::SyncBackup => {
                if self.state == State::Master {
                    self.release_master(&mut actions);
                    self.master_advert_interval = self.settings.advert_interval;
                    self.enter_backup(now, &mut actions);
                }
            }
            Event::SyncFault => {
                self.sync_fault = true;
                self.leave_for_fault(&mut actions);
            }
            Event::SyncFaultCleared => {
                self.sync_fault = false;
                self.leave_fault(now, &mut actions);
            }
            Event::VirtualAddressRemoved => {
                if self.state == State::Master {
                    self.send_advert(PRIORITY_STOP, &mut actions);
                    self.release_master(&mut actions);
                    self.master_advert_interval = self.settings.advert_interval;
                    self.enter_backup(now, &mut actions);
                    self.deadline = Some(self.backup_deadline(now, self.skew_time()));
                }
            }
        }
        actions
    }

    fn start(&mut self, now: Instant, actions: &mut Vec<Action>) {
        if self.state != State::Initialize {
            return;
        }
        self.master_advert_interval = self.settings.advert_interval;
        if !self.interface_up || self.sync_fault {
            self.enter_fault(actions);
        } else if self.base_priority == PRIORITY_OWNER {
            if !self.owner_waits(now) {
                self.become_master(now, actions);
            }
        } else {
            self.enter_backup(now, actions);
        }
    }

    fn timer(&mut self, now: Instant, actions: &mut Vec<Action>) {
        match self.state {
            State::Backup => {
                if self.deadline.is_some_and(|deadline| deadline <= now) {
                    if self.synced {
                        // keepalived's vrrp_sync_can_goto_master: the
                        // down timer starts again while the group decides.
                        self.wants_master = true;
                        self.deadline =
                            Some(self.backup_deadline(now, self.master_down_interval()));
                        actions.push(Action::RequestMaster);
                    } else {
                        self.become_master(now, actions);
                    }
                }
            }
            State::Master => {
                if self.delayed_announce.is_some_and(|at| at <= now) {
                    self.delayed_announce = None;
                    self.announce(self.settings.garp.master_repeat, actions);
                }
                if self.lower_priority_announce.is_some_and(|at| at <= now) {
                    self.lower_priority_announce = None;
                    self.announce(self.settings.garp.lower_priority_repeat, actions);
                }
                if self.deadline.is_some_and(|deadline| deadline <= now) {
                    self.send_advert(self.effective_priority, actions);
                    // keepalived checks the refresh when it sends an advert,
                    // so refreshes fall on advert ticks.
                    if let (Some(at), Some(refresh)) =
                        (self.refresh_at, self.settings.garp.master_refresh)
                        && now > at
                    {
                        self.announce(self.settings.garp.master_refresh_repeat, actions);
                        self.refresh_at = Some(now + refresh);
                    }
                    // garp_extra_if likewise, after the refresh (vrrp.c
                    // vrrp_state_master_tx).
                    if let (Some(at), Some(interval)) = (
                        self.extra_interfaces_at,
                        self.settings.garp.extra_interfaces,
                    ) && now > at
                    {
                        actions.push(Action::AnnounceExtraInterfaces);
                        self.extra_interfaces_at = Some(now + interval);
                    }
                    self.deadline = Some(now + self.settings.advert_interval);
                }
            }
            State::Initialize | State::Fault => {}
        }
    }

    fn change_priority(&mut self, priority: u8) {
        if self.base_priority == PRIORITY_OWNER {
            return;
        }
        let priority = priority.clamp(1, PRIORITY_OWNER - 1);
        if priority == self.effective_priority {
            return;
        }
        let old_down = self.master_down_interval();
        self.effective_priority = priority;
        // A backup's deadline moves by the change of its skew time, as in
        // keepalived's vrrp_set_effective_priority.
        if self.state == State::Backup
            && let Some(deadline) = self.deadline
        {
            let new_down = self.master_down_interval();
            self.deadline = Some(if new_down >= old_down {
                deadline + (new_down - old_down)
            } else {
                deadline
                    .checked_sub(old_down - new_down)
                    .unwrap_or(deadline)
            });
        }
    }

    fn interface_down(&mut self, actions: &mut Vec<Action>) {
        self.interface_up = false;
        self.leave_for_fault(actions);
    }

    fn leave_for_fault(&mut self, actions: &mut Vec<Action>) {
        match self.state {
            State::Master => {
                self.send_advert(PRIORITY_STOP, actions);
                self.release_master(actions);
                self.enter_fault(actions);
            }
            State::Backup => self.enter_fault(actions),
            State::Initialize | State::Fault => {}
        }
    }

    fn interface_up(&mut self, now: Instant, actions: &mut Vec<Action>) {
        self.interface_up = true;
        self.leave_fault(now, actions);
    }

    /// Out of FAULT once neither its own tracking nor its group holds it.
    fn leave_fault(&mut self, now: Instant, actions: &mut Vec<Action>) {
        if self.state != State::Fault || !self.interface_up || self.sync_fault {
            return;
        }
        self.master_advert_interval = self.settings.advert_interval;
        if self.base_priority == PRIORITY_OWNER {
            if !self.owner_waits(now) {
                self.become_master(now, actions);
            }
        } else {
            self.enter_backup(now, actions);
        }
    }

    fn stop(&mut self, actions: &mut Vec<Action>) {
        match self.state {
            State::Initialize => return,
            State::Master => {
                // Lets the backup take over after its skew time instead of
                // the whole master down interval.
                self.send_advert(PRIORITY_STOP, actions);
                self.release_master(actions);
            }
            State::Backup | State::Fault => {}
        }
        self.state = State::Initialize;
        self.deadline = None;
        self.preempt_until = None;
        self.wants_master = false;
        actions.push(Action::EnterState(State::Initialize));
    }

    fn enter_backup(&mut self, now: Instant, actions: &mut Vec<Action>) {
        self.state = State::Backup;
        self.wants_master = false;
        self.preempt_until = None;
        self.deadline = Some(self.backup_deadline(now, self.master_down_interval()));
        actions.push(Action::EnterState(State::Backup));
    }

    fn enter_fault(&mut self, actions: &mut Vec<Action>) {
        self.state = State::Fault;
        self.deadline = None;
        actions.push(Action::EnterState(State::Fault));
    }

    fn become_master(&mut self, now: Instant, actions: &mut Vec<Action>) {
        self.state = State::Master;
        self.statistics.became_master += 1;
        self.deadline = Some(now + self.settings.advert_interval);
        self.master_address = None;
        // keepalived 2.2 sends the advert before adding the addresses, so
        // that the old master has removed them before the gratuitous ARPs.
        self.send_advert(self.effective_priority, actions);
        actions.push(Action::AddAddresses);
        self.announce(self.settings.garp.master_repeat, actions);
        self.refresh_at = self
            .settings
            .garp
            .master_refresh
            .map(|refresh| now + refresh);
        if !self.settings.garp.master_delay.is_zero() {
            self.delayed_announce = Some(now + self.settings.garp.master_delay);
        }
        self.extra_interfaces_at = self
            .settings
            .garp
            .extra_interfaces
            .map(|interval| now + interval);
        actions.push(Action::EnterState(State::Master));
    }

    /// Leaves master: the addresses go and the pending announcements with
    /// them.
    fn release_master(&mut self, actions: &mut Vec<Action>) {
        self.statistics.released_master += 1;
        self.delayed_announce = None;
        self.lower_priority_announce = None;
        self.refresh_at = None;
        // The next garp_extra_if time stays, as keepalived's
        // vmac_garp_timer (its data dump shows it): taking over sets it
        // again, and only a master looks at it.
        actions.push(Action::RemoveAddresses);
    }

    fn send_advert(&mut self, priority: u8, actions: &mut Vec<Action>) {
        self.statistics.adverts_sent += 1;
        if priority == PRIORITY_STOP {
            self.statistics.priority_zero_sent += 1;
        }
        actions.push(Action::SendAdvert { priority });
    }

    fn announce(&mut self, repeat: u32, actions: &mut Vec<Action>) {
        if repeat > 0 && !self.settings.virtual_addresses.is_empty() {
            actions.push(Action::Announce { repeat });
        }
    }

    fn receive(&mut self, now: Instant, received: &Received, actions: &mut Vec<Action>) {
        match self.state {
            State::Backup => {
                let check_addresses = !self.settings.skip_check_advert_addresses
                    || self.master_address != Some(received.source);
                if let Err(reason) = self.validate(received, check_addresses) {
                    self.statistics.count_drop(reason);
                    self.backup_ignored_advert(now);
                    return;
                }
                self.count_received(&received.advert);
                self.backup_receive(now, received);
            }
            State::Master => {
                if let Err(reason) = self.validate(received, true) {
                    self.statistics.count_drop(reason);
                    return;
                }
                self.count_received(&received.advert);
                self.master_receive(now, received, actions);
            }
            // keepalived does not read adverts in these states.
            State::Initialize | State::Fault => {}
        }
    }

    fn count_received(&mut self, advert: &Repr) {
        self.statistics.adverts_received += 1;
        if advert.priority == PRIORITY_STOP {
            self.statistics.priority_zero_received += 1;
        }
    }

    /// keepalived's vrrp_state_backup.
    fn backup_receive(&mut self, now: Instant, received: &Received) {
        let priority = received.advert.priority;
        if priority == PRIORITY_STOP {
            self.deadline = Some(self.backup_deadline(now, self.skew_time()));
            return;
        }
        let preempt_delay_running = !self.settings.preempt_delay.is_zero()
            && self.preempt_until.is_none_or(|until| until > now);
        if !self.settings.preempt || priority >= self.effective_priority || preempt_delay_running {
            if let Kind::Version3 {
                max_advert_interval,
            } = received.advert.kind
            {
                self.master_advert_interval =
                    Duration::from_millis(u64::from(max_advert_interval) * 10);
            }
            self.deadline = Some(self.backup_deadline(now, self.master_down_interval()));
            self.master_address = Some(received.source);
            self.master_priority = priority;
            // A master is heard again: no longer ready to take over.
            self.wants_master = false;
            if !self.settings.preempt_delay.is_zero() {
                if priority >= self.effective_priority {
                    self.preempt_until = None;
                } else if self.preempt_until.is_none() {
                    self.preempt_until = Some(now + self.settings.preempt_delay);
                }
            }
        } else {
            // A lower priority and preemption allowed: the advert is
            // ignored, so the down timer runs out and this backup takes
            // over.
            self.master_address = Some(received.source);
            self.backup_ignored_advert(now);
        }
    }

    /// keepalived's vrrp_state_master_rx.
    fn master_receive(&mut self, now: Instant, received: &Received, actions: &mut Vec<Action>) {
        let priority = received.advert.priority;
        let ours = self.effective_priority;
        let address_order = self
            .settings
            .local_address
            .map(|local| compare_addresses(&received.source, &local))
            .unwrap_or(std::cmp::Ordering::Equal);
        let higher =
            priority > ours || (priority == ours && address_order == std::cmp::Ordering::Greater);
        if priority == PRIORITY_STOP || (self.settings.higher_priority_send_advert && higher) {
            self.send_advert(ours, actions);
            if priority == PRIORITY_STOP {
                return;
            }
        }
        if priority == ours && address_order != std::cmp::Ordering::Equal && ours == PRIORITY_OWNER
        {
            // Two address owners: keepalived calls it a configuration error
            // and lowers its own priority.
            self.base_priority = PRIORITY_OWNER - 1;
            self.effective_priority = PRIORITY_OWNER - 1;
        }
        let ours = self.effective_priority;
        if priority < ours || (priority == ours && address_order == std::cmp::Ordering::Less) {
            if !self.settings.lower_priority_no_advert {
                self.send_advert(ours, actions);
            }
            let garp = self.settings.garp;
            if garp.lower_priority_repeat > 0 {
                self.announce(garp.lower_priority_repeat, actions);
                if !garp.lower_priority_delay.is_zero() {
                    self.lower_priority_announce = Some(now + garp.lower_priority_delay);
                }
            }
            actions.push(Action::MasterReceivedLowerPriority {
                source: received.source,
            });
            return;
        }
        if priority > ours || (priority == ours && address_order == std::cmp::Ordering::Greater) {
            if let Kind::Version3 {
                max_advert_interval,
            } = received.advert.kind
            {
                self.master_advert_interval =
                    Duration::from_millis(u64::from(max_advert_interval) * 10);
            }
            self.release_master(actions);
            self.master_address = Some(received.source);
            self.master_priority = priority;
            self.enter_backup(now, actions);
        }
    }

    /// keepalived's vrrp_check_packet, for what depends on the instance.
    fn validate(&self, received: &Received, check_addresses: bool) -> Result<(), DropReason> {
        let settings = &self.settings;
        let advert = &received.advert;
        if advert.virtual_router_id != settings.virtual_router_id {
            return Err(DropReason::WrongVirtualRouterId);
        }
        if Family::of(&received.source) != settings.family
            || advert.addresses.family() != settings.family
        {
            return Err(DropReason::WrongFamily);
        }
        if settings.unicast_peers.is_empty() {
            if received.hop_limit != MULTICAST_HOP_LIMIT {
                return Err(DropReason::WrongTtl);
            }
        } else if let Some(peer) = settings
            .unicast_peers
            .iter()
            .find(|peer| peer.address == received.source)
            && (peer.min_ttl.is_some_and(|min| received.hop_limit < min)
                || peer.max_ttl.is_some_and(|max| received.hop_limit > max))
        {
            return Err(DropReason::WrongTtl);
        }
        if advert.kind.version() != settings.version.number() {
            return Err(DropReason::VersionMismatch);
        }
        if let Kind::Version2 {
            advert_interval,
            authentication_type,
            authentication_data,
        } = &advert.kind
        {
            if *authentication_type > packet::AUTHENTICATION_IPSEC_AH {
                return Err(DropReason::InvalidAuthenticationType);
            }
            let (expected_type, expected_data) = match settings.authentication {
                AuthenticationSettings::None => (packet::AUTHENTICATION_NONE, None),
                AuthenticationSettings::Password(data) => {
                    (packet::AUTHENTICATION_PASSWORD, Some(data))
                }
            };
            if *authentication_type != expected_type {
                return Err(DropReason::AuthenticationTypeMismatch);
            }
            if let Some(expected) = expected_data
                && !constant_time_equal(&expected, authentication_data)
            {
                return Err(DropReason::AuthenticationFailure);
            }
            if u16::from(*advert_interval) != settings.advert_interval_field() {
                return Err(DropReason::IntervalMismatch);
            }
        }
        if check_addresses && advert.addresses.len() != settings.virtual_addresses.len() {
            return Err(DropReason::AddressCountMismatch);
        }
        if received.destination.is_multicast() != settings.unicast_peers.is_empty() {
            return Err(DropReason::UnicastMulticastMismatch);
        }
        if check_addresses
            && settings
                .virtual_addresses
                .iter()
                .any(|address| !advert.addresses.contains(address))
        {
            return Err(DropReason::AddressListMismatch);
        }
        if settings.check_unicast_source
            && !settings.unicast_peers.is_empty()
            && !settings
                .unicast_peers
                .iter()
                .any(|peer| peer.address == received.source)
        {
            return Err(DropReason::NotAUnicastPeer);
        }
        Ok(())
    }
}

/// keepalived's inet_inaddrcmp: addresses as big-endian numbers.
fn compare_addresses(left: &IpAddr, right: &IpAddr) -> std::cmp::Ordering {
    match (left, right) {
        (IpAddr::V4(left), IpAddr::V4(right)) => left.octets().cmp(&right.octets()),
        (IpAddr::V6(left), IpAddr::V6(right)) => left.octets().cmp(&right.octets()),
        _ => std::cmp::Ordering::Equal,
    }
}

/// Compares without stopping at the first difference, as keepalived's
/// memcmp_constant_time, so the time taken does not tell how much of a
/// guessed password was right.
fn constant_time_equal(left: &[u8; 8], right: &[u8; 8]) -> bool {
    left.iter()
        .zip(right)
        .fold(0u8, |difference, (a, b)| difference | (a ^ b))
        == 0
}
