//! One BFD session in asynchronous mode (RFC 5880), without I/O.
//!
//! The caller owns time and sockets: it feeds each accepted control packet
//! for this session to [`Session::handle`] as [`Event::Received`], calls it
//! with [`Event::Timer`] at [`Session::poll_at`], and sends the packet each
//! returned [`Actions`] holds. The session says when its state changed.
//!
//! - States AdminDown, Down, Init, Up and the three-way handshake (RFC 5880
//!   section 6.2): Down hearing Down goes Init, Down hearing Init goes Up,
//!   Init hearing Init or Up goes Up, Up hearing Down (or AdminDown) goes
//!   Down with "neighbor signaled session down".
//! - Detection (6.8.4): in Init or Up, no packet for the remote multiplier
//!   times the agreed interval (the larger of our required min RX and its
//!   desired min TX) is "control detection time expired". The remote
//!   discriminator is then forgotten (6.8.1, `bfd.RemoteDiscr`).
//! - Transmission (6.8.2, 6.8.7): every larger of our desired min TX and
//!   its required min RX, less 0-25 % of jitter (10-25 % with a multiplier
//!   of 1); our desired min TX is the idle rate, at least 1 s, until Up
//!   (6.8.3), then `min_tx`. No periodic packets while the remote's
//!   required min RX is 0. A passive session sends only in Init and Up
//!   (keepalived's `passive`: RFC 5880 6.1, it waits to hear first).
//! - Poll sequences (6.5): entering Up changes our desired min TX, so
//!   packets carry P until one with F comes back; a packet with P is
//!   answered at once with F, outside the periodic schedule.
//!
//! keepalived (bfd_scheduler.c) behaves the same way on the wire; it takes
//! a new local discriminator when leaving Up, which RFC 5880 does not ask
//! for ("never reinitialized"): nanny keeps its own.

use std::time::Duration;

use super::packet::{Diagnostic, Repr, State};
use crate::machine::Timestamp;

/// RFC 5880 6.8.3: while not Up, the desired min TX is at least 1 s.
pub const SLOWEST_IDLE_MINIMUM: Duration = Duration::from_secs(1);

/// A session's own parameters (keepalived's `bfd_instance`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Config {
    /// `min_tx`: the desired min TX interval once Up.
    pub desired_min_tx: Duration,
    /// `min_rx`: the required min RX interval.
    pub required_min_rx: Duration,
    /// `idle_tx`: the desired min TX interval until Up (at least 1 s).
    pub idle_tx: Duration,
    /// `multiplier`.
    pub detect_multiplier: u8,
    /// `passive`: send nothing until the remote is heard.
    pub passive: bool,
}

impl Config {
    /// keepalived's defaults (bfd.h): min_rx and min_tx 10 ms, idle_tx 1 s,
    /// multiplier 5, active.
    pub fn keepalived_default() -> Config {
        Config {
            desired_min_tx: Duration::from_millis(10),
            required_min_rx: Duration::from_millis(10),
            idle_tx: Duration::from_secs(1),
            detect_multiplier: 5,
            passive: false,
        }
    }
}

/// What happens to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// A control packet accepted by [`Repr::parse`] and demultiplexed to
    /// this session.
    Received(&'a Repr),
    /// The time [`Session::poll_at`] named (or any time: nothing happens
    /// early).
    Timer,
}

/// A change of the session's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    pub from: State,
    pub to: State,
    /// Why, when it went down.
    pub diagnostic: Diagnostic,
}

/// What the caller must do after [`Session::handle`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Actions {
    /// Send this control packet to the remote now.
    pub send: Option<Repr>,
    /// The state changed.
    pub change: Option<Change>,
}

/// One session's state variables (RFC 5880 6.8.1) and timers.
#[derive(Debug, Clone)]
pub struct Session {
    config: Config,
    state: State,
    remote_state: State,
    local_discriminator: u32,
    remote_discriminator: u32,
    diagnostic: Diagnostic,
    /// `bfd.RemoteMinRxInterval`: 1 µs until heard (6.8.1).
    remote_min_rx: Duration,
    /// The remote's last desired min TX.
    remote_desired_tx: Duration,
    /// The remote's last detect multiplier; 0 until heard.
    remote_multiplier: u8,
    remote_demand: bool,
    /// A poll sequence is running: periodic packets carry P.
    polling: bool,
    /// When the next periodic packet is due; `None` while not sending.
    next_transmit: Option<Timestamp>,
    /// When the remote was last heard.
    last_received: Option<Timestamp>,
    random: fastrand::Rng,
}

impl Session {
    /// A session created at `now`, Down, with `local_discriminator` (not
    /// 0, unique among this system's sessions: the caller's to ensure) and
    /// `seed` for its jitter. An active session sends its first packet at
    /// once, as keepalived does.
    pub fn new(config: Config, local_discriminator: u32, now: Timestamp, seed: u64) -> Session {
        assert_ne!(local_discriminator, 0, "a discriminator is never 0");
        Session {
            next_transmit: (!config.passive).then_some(now),
            config,
            state: State::Down,
            remote_state: State::Down,
            local_discriminator,
            remote_discriminator: 0,
            diagnostic: Diagnostic::None,
            remote_min_rx: Duration::from_micros(1),
            remote_desired_tx: Duration::ZERO,
            remote_multiplier: 0,
            remote_demand: false,
            polling: false,
            last_received: None,
            random: fastrand::Rng::with_seed(seed),
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn remote_state(&self) -> State {
        self.remote_state
    }

    /// Why the session last went down (`None` once it rose again).
    pub fn diagnostic(&self) -> Diagnostic {
        self.diagnostic
    }

    pub fn local_discriminator(&self) -> u32 {
        self.local_discriminator
    }

    /// 0 until the remote is heard, and again after a detection time of
    /// silence.
    pub fn remote_discriminator(&self) -> u32 {
        self.remote_discriminator
    }

    /// Whether a poll sequence runs.
    pub fn is_polling(&self) -> bool {
        self.polling
    }

    /// Whether the remote asked for demand mode (nanny does not run it:
    /// it keeps sending and expecting periodic packets).
    pub fn remote_demand(&self) -> bool {
        self.remote_demand
    }

    /// The desired min TX interval sent now.
    pub fn advertised_min_tx(&self) -> Duration {
        if self.state == State::Up {
            self.config.desired_min_tx
        } else {
            self.config.idle_tx.max(SLOWEST_IDLE_MINIMUM)
        }
    }

    /// The interval between periodic packets, before jitter (6.8.7).
    pub fn transmit_interval(&self) -> Duration {
        self.advertised_min_tx().max(self.remote_min_rx)
    }

    /// How long the remote may stay silent (6.8.4); `None` until heard.
    pub fn detection_time(&self) -> Option<Duration> {
        (self.remote_multiplier != 0).then(|| {
            self.config
                .required_min_rx
                .max(self.remote_desired_tx)
                .saturating_mul(u32::from(self.remote_multiplier))
        })
    }

    /// When [`Session::handle`] with [`Event::Timer`] has something to do.
    pub fn poll_at(&self) -> Option<Timestamp> {
        let expiry = self
            .last_received
            .zip(self.detection_time())
            .map(|(heard, detection)| heard + detection);
        match (
            self.sending().then_some(self.next_transmit).flatten(),
            expiry,
        ) {
            (Some(transmit), Some(expiry)) => Some(transmit.min(expiry)),
            (transmit, expiry) => transmit.or(expiry),
        }
    }

    /// Whether periodic packets go out now.
    fn sending(&self) -> bool {
        let role_allows = !self.config.passive || matches!(self.state, State::Init | State::Up);
        role_allows && self.state != State::AdminDown && !self.remote_min_rx.is_zero()
    }

    /// One interval less its jitter (6.8.7): 0-25 %, or 10-25 % with a
    /// multiplier of 1 (no more than 90 % of the interval).
    fn jittered(&mut self, interval: Duration) -> Duration {
        let reduction = if self.config.detect_multiplier == 1 {
            0.10 + 0.15 * self.random.f64()
        } else {
            0.25 * self.random.f64()
        };
        interval.mul_f64(1.0 - reduction)
    }

    fn packet(&self, final_: bool) -> Repr {
        Repr {
            diagnostic: self.diagnostic,
            state: self.state,
            // P and F never together (4.1): the poll goes on in the next
            // periodic packet.
            poll: self.polling && !final_,
            final_,
            control_plane_independent: false,
            demand: false,
            detect_multiplier: self.config.detect_multiplier,
            my_discriminator: self.local_discriminator,
            your_discriminator: self.remote_discriminator,
            desired_min_tx: self.advertised_min_tx(),
            required_min_rx: self.config.required_min_rx,
            required_min_echo_rx: Duration::ZERO,
        }
    }

    fn set_state(&mut self, to: State, diagnostic: Diagnostic) -> Option<Change> {
        let from = self.state;
        if from == to {
            return None;
        }
        self.state = to;
        self.diagnostic = diagnostic;
        // Entering Up lowers our desired min TX from the idle rate: the
        // remote learns it through a poll sequence (6.8.3).
        if to == State::Up && self.config.desired_min_tx != self.advertised_idle() {
            self.polling = true;
        }
        if to != State::Up {
            self.polling = false;
        }
        Some(Change {
            from,
            to,
            diagnostic,
        })
    }

    fn advertised_idle(&self) -> Duration {
        self.config.idle_tx.max(SLOWEST_IDLE_MINIMUM)
    }

    /// Advances the session to `now` with `event`.
    pub fn handle(&mut self, now: Timestamp, event: Event<'_>) -> Actions {
        let interval_before = self.transmit_interval();
        let sending_before = self.sending();
        let mut actions = Actions::default();
        match event {
            Event::Received(repr) => {
                if !self.receive(now, repr, &mut actions) {
                    return actions;
                }
            }
            Event::Timer => {
                if let (Some(heard), Some(detection)) = (self.last_received, self.detection_time())
                    && now >= heard + detection
                {
                    self.forget_remote();
                    if matches!(self.state, State::Init | State::Up) {
                        actions.change =
                            self.set_state(State::Down, Diagnostic::ControlDetectionTimeExpired);
                    }
                }
            }
        }
        // Sending starts (a passive session heard the remote), or the
        // interval shrank (Up, or the remote asks for more): the next
        // packet comes no later than one new interval from now.
        let interval = self.transmit_interval();
        if self.sending() {
            if !sending_before || self.next_transmit.is_none() {
                self.next_transmit = Some(now + self.jittered(interval));
            } else if interval < interval_before {
                let sooner = now + self.jittered(interval);
                self.next_transmit = self.next_transmit.map(|next| next.min(sooner));
            }
        }
        if matches!(event, Event::Timer)
            && self.sending()
            && self.next_transmit.is_some_and(|next| next <= now)
        {
            actions.send = Some(self.packet(false));
            self.next_transmit = Some(now + self.jittered(interval));
        }
        if !self.sending() && self.config.passive {
            self.next_transmit = None;
        }
        actions
    }

    /// Detection time passed in silence: the remote is unknown again.
    fn forget_remote(&mut self) {
        self.remote_discriminator = 0;
        self.remote_state = State::Down;
        self.remote_min_rx = Duration::from_micros(1);
        self.remote_desired_tx = Duration::ZERO;
        self.remote_multiplier = 0;
        self.remote_demand = false;
        self.last_received = None;
    }

    /// RFC 5880 6.8.6 from "select the session" on; false when the packet
    /// is not this session's or is discarded.
    fn receive(&mut self, now: Timestamp, repr: &Repr, actions: &mut Actions) -> bool {
        if repr.your_discriminator != 0 && repr.your_discriminator != self.local_discriminator {
            return false;
        }
        if self.state == State::AdminDown {
            return false;
        }
        self.remote_discriminator = repr.my_discriminator;
        self.remote_state = repr.state;
        self.remote_demand = repr.demand;
        self.remote_min_rx = repr.required_min_rx;
        self.remote_desired_tx = repr.desired_min_tx;
        self.remote_multiplier = repr.detect_multiplier;
        self.last_received = Some(now);
        if repr.final_ {
            self.polling = false;
        }
        actions.change = match (repr.state, self.state) {
            (State::AdminDown, State::Down) => None,
            (State::AdminDown, _) => {
                self.set_state(State::Down, Diagnostic::NeighborSignaledSessionDown)
            }
            (State::Down, State::Down) => self.set_state(State::Init, Diagnostic::None),
            (State::Init, State::Down) => self.set_state(State::Up, Diagnostic::None),
            (State::Init | State::Up, State::Init) => self.set_state(State::Up, Diagnostic::None),
            (State::Down, State::Up) => {
                self.set_state(State::Down, Diagnostic::NeighborSignaledSessionDown)
            }
            _ => None,
        };
        if repr.poll {
            actions.send = Some(self.packet(true));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAST: Duration = Duration::from_millis(100);

    fn config() -> Config {
        Config {
            desired_min_tx: FAST,
            required_min_rx: FAST,
            idle_tx: Duration::from_secs(1),
            detect_multiplier: 3,
            passive: false,
        }
    }

    fn millis(value: u64) -> Timestamp {
        Timestamp::from_millis(value)
    }

    /// Runs both sessions, delivering each packet after `delay`, until
    /// `until`; returns every change with its time and side (0 or 1).
    fn run_pair(
        sessions: &mut [Session; 2],
        start: Timestamp,
        until: Timestamp,
        delay: Duration,
        deliver: impl Fn(usize, Timestamp) -> bool,
    ) -> Vec<(Timestamp, usize, Change)> {
        let mut in_flight: Vec<(Timestamp, usize, Repr)> = Vec::new();
        let mut changes = Vec::new();
        let mut now = start;
        while now < until {
            let mut next = until;
            for session in sessions.iter() {
                if let Some(at) = session.poll_at() {
                    next = next.min(at);
                }
            }
            for (at, _, _) in &in_flight {
                next = next.min(*at);
            }
            now = next.max(now);
            if now >= until {
                break;
            }
            let (due, later): (Vec<_>, Vec<_>) =
                in_flight.into_iter().partition(|(at, _, _)| *at <= now);
            in_flight = later;
            let mut outputs = Vec::new();
            for (_, to, repr) in due {
                outputs.push((to, sessions[to].handle(now, Event::Received(&repr))));
            }
            for (side, session) in sessions.iter_mut().enumerate() {
                outputs.push((side, session.handle(now, Event::Timer)));
            }
            for (side, actions) in outputs {
                if let Some(change) = actions.change {
                    changes.push((now, side, change));
                }
                if let Some(repr) = actions.send
                    && deliver(side, now)
                {
                    in_flight.push((now + delay, 1 - side, repr));
                }
            }
        }
        changes
    }

    fn pair() -> [Session; 2] {
        [
            Session::new(config(), 0x1111, Timestamp::ZERO, 1),
            Session::new(config(), 0x2222, Timestamp::ZERO, 2),
        ]
    }

    #[test]
    fn three_way_handshake_comes_up_and_polls_to_the_fast_rate() {
        let mut sessions = pair();
        let changes = run_pair(
            &mut sessions,
            Timestamp::ZERO,
            millis(5000),
            Duration::from_millis(1),
            |_, _| true,
        );
        let mut states: Vec<(usize, State)> = changes
            .iter()
            .map(|(_, side, change)| (*side, change.to))
            .collect();
        // Both send Down at once; each hears Down and goes Init, then hears
        // Init and goes Up (in whichever order the packets cross).
        states.sort_by_key(|(side, _)| *side);
        assert_eq!(
            states,
            [
                (0, State::Init),
                (0, State::Up),
                (1, State::Init),
                (1, State::Up)
            ]
        );
        for session in &sessions {
            assert_eq!(session.state(), State::Up);
            assert!(!session.is_polling(), "the poll sequence ended");
            assert_eq!(session.transmit_interval(), FAST);
            assert_eq!(session.detection_time(), Some(FAST * 3));
        }
        assert_eq!(sessions[0].remote_discriminator(), 0x2222);
        assert_eq!(sessions[1].remote_discriminator(), 0x1111);
    }

    #[test]
    fn silence_is_control_detection_time_expired_and_recovery_follows() {
        let mut sessions = pair();
        run_pair(
            &mut sessions,
            Timestamp::ZERO,
            millis(5000),
            Duration::ZERO,
            |_, _| true,
        );
        assert_eq!(sessions[0].state(), State::Up);
        // Side 1 goes silent at 5 s.
        let changes = run_pair(
            &mut sessions,
            millis(5000),
            millis(6000),
            Duration::ZERO,
            |side, _| side == 0,
        );
        let (at, side, change) = changes[0];
        assert_eq!(side, 0);
        assert_eq!(
            change,
            Change {
                from: State::Up,
                to: State::Down,
                diagnostic: Diagnostic::ControlDetectionTimeExpired,
            }
        );
        // Last heard at most one (jittered) interval before 5 s, expired
        // one detection time (300 ms) after that.
        assert!(at > millis(5200) && at <= millis(5300), "{at:?}");
        assert_eq!(sessions[0].remote_discriminator(), 0);
        assert_eq!(
            sessions[0].diagnostic(),
            Diagnostic::ControlDetectionTimeExpired
        );
        assert_eq!(sessions[0].transmit_interval(), Duration::from_secs(1));
        // Side 1 hears the Down packet (diag 1) and goes down too; then
        // both come up again.
        let changes = run_pair(
            &mut sessions,
            millis(6000),
            millis(12000),
            Duration::ZERO,
            |_, _| true,
        );
        assert_eq!(sessions[0].state(), State::Up, "{changes:?}");
        assert_eq!(sessions[1].state(), State::Up);
    }

    #[test]
    fn a_restarted_peer_with_a_new_discriminator_is_taken_down_and_back_up() {
        let mut sessions = pair();
        run_pair(
            &mut sessions,
            Timestamp::ZERO,
            millis(3000),
            Duration::ZERO,
            |_, _| true,
        );
        // The peer restarts: a new session, Down, knowing nothing.
        sessions[1] = Session::new(config(), 0x3333, millis(3000), 3);
        let changes = run_pair(
            &mut sessions,
            millis(3000),
            millis(8000),
            Duration::ZERO,
            |_, _| true,
        );
        assert_eq!(
            changes[0].2,
            Change {
                from: State::Up,
                to: State::Down,
                diagnostic: Diagnostic::NeighborSignaledSessionDown,
            }
        );
        assert_eq!(sessions[0].state(), State::Up);
        assert_eq!(sessions[0].remote_discriminator(), 0x3333);
    }

    #[test]
    fn packets_are_jittered_within_rfc_bounds() {
        for (multiplier, low, high) in [(3u8, 0.75, 1.0), (1, 0.75, 0.90)] {
            let mut session = Session::new(
                Config {
                    detect_multiplier: multiplier,
                    ..config()
                },
                1,
                Timestamp::ZERO,
                7,
            );
            let mut now = Timestamp::ZERO;
            let mut sent = Vec::new();
            while sent.len() < 200 {
                let actions = session.handle(now, Event::Timer);
                if actions.send.is_some() {
                    sent.push(now);
                }
                now = session.poll_at().unwrap();
            }
            let intervals: Vec<f64> = sent
                .windows(2)
                .map(|pair| (pair[1] - pair[0]).as_secs_f64())
                .collect();
            let lowest = intervals.iter().copied().fold(f64::MAX, f64::min);
            let highest = intervals.iter().copied().fold(0.0, f64::max);
            // Down: the idle 1 s rate.
            assert!(
                lowest >= low - 1e-9 && highest <= high + 1e-9,
                "{lowest} {highest}"
            );
            assert!(highest - lowest > 0.05, "jittered, not constant");
        }
    }

    #[test]
    fn a_poll_is_answered_at_once_with_final() {
        let mut session = Session::new(config(), 9, Timestamp::ZERO, 1);
        let first = session.handle(Timestamp::ZERO, Event::Timer).send.unwrap();
        assert_eq!((first.state, first.your_discriminator), (State::Down, 0));
        assert_eq!(first.desired_min_tx, Duration::from_secs(1));
        let remote = Repr {
            state: State::Init,
            poll: true,
            your_discriminator: 9,
            my_discriminator: 77,
            ..first
        };
        let actions = session.handle(millis(10), Event::Received(&remote));
        assert_eq!(actions.change.unwrap().to, State::Up);
        let answer = actions.send.unwrap();
        assert!(answer.final_ && !answer.poll);
        assert_eq!(answer.state, State::Up);
        assert_eq!(answer.your_discriminator, 77);
        assert_eq!(answer.desired_min_tx, FAST);
        // Our own poll (entering Up) goes on in the periodic packets.
        assert!(session.is_polling());
        let now = session.poll_at().unwrap();
        let periodic = session.handle(now, Event::Timer).send.unwrap();
        assert!(periodic.poll && !periodic.final_);
    }

    #[test]
    fn foreign_discriminators_and_remote_admin_down() {
        let mut session = Session::new(config(), 9, Timestamp::ZERO, 1);
        let template = session.handle(Timestamp::ZERO, Event::Timer).send.unwrap();
        let foreign = Repr {
            state: State::Init,
            your_discriminator: 10,
            my_discriminator: 5,
            ..template
        };
        assert_eq!(
            session.handle(millis(1), Event::Received(&foreign)),
            Actions::default()
        );
        assert_eq!(session.remote_discriminator(), 0);
        let init = Repr {
            your_discriminator: 9,
            ..foreign
        };
        assert_eq!(
            session
                .handle(millis(2), Event::Received(&init))
                .change
                .unwrap()
                .to,
            State::Up
        );
        let admin_down = Repr {
            state: State::AdminDown,
            ..init
        };
        let change = session
            .handle(millis(3), Event::Received(&admin_down))
            .change
            .unwrap();
        assert_eq!(change.to, State::Down);
        assert_eq!(change.diagnostic, Diagnostic::NeighborSignaledSessionDown);
        // AdminDown heard while Down keeps it Down (it does not go Init).
        assert_eq!(
            session
                .handle(millis(4), Event::Received(&admin_down))
                .change,
            None
        );
    }

    #[test]
    fn a_remote_asking_for_no_packets_gets_none() {
        let mut session = Session::new(config(), 9, Timestamp::ZERO, 1);
        let template = session.handle(Timestamp::ZERO, Event::Timer).send.unwrap();
        // RFC 5880 6.8.7: no periodic packets while the remote's required
        // min RX is 0; detection goes on.
        let quiet = Repr {
            my_discriminator: 5,
            required_min_rx: Duration::ZERO,
            ..template
        };
        session.handle(millis(10), Event::Received(&quiet));
        assert_eq!(session.state(), State::Init);
        assert_eq!(session.poll_at(), Some(millis(10) + Duration::from_secs(3)));
        for probe in [millis(500), millis(1500), millis(3009)] {
            assert_eq!(session.handle(probe, Event::Timer), Actions::default());
        }
        // Expired: the remote is forgotten, its 0 with it, and packets go
        // out again at the idle rate, saying why.
        let actions = session.handle(millis(3010), Event::Timer);
        assert_eq!(actions.change.unwrap().to, State::Down);
        let next = session.poll_at().unwrap();
        assert!(next > millis(3010) && next <= millis(4010), "{next:?}");
        let sent = session.handle(next, Event::Timer).send.unwrap();
        assert_eq!(sent.diagnostic, Diagnostic::ControlDetectionTimeExpired);
        assert_eq!(sent.your_discriminator, 0);
    }

    #[test]
    fn a_passive_session_waits_to_hear_the_remote() {
        let mut session = Session::new(
            Config {
                passive: true,
                ..config()
            },
            9,
            Timestamp::ZERO,
            1,
        );
        assert_eq!(session.poll_at(), None);
        assert_eq!(
            session.handle(millis(5000), Event::Timer),
            Actions::default()
        );
        let down = Repr {
            diagnostic: Diagnostic::None,
            state: State::Down,
            poll: false,
            final_: false,
            control_plane_independent: false,
            demand: false,
            detect_multiplier: 3,
            my_discriminator: 4,
            your_discriminator: 0,
            desired_min_tx: Duration::from_secs(1),
            required_min_rx: FAST,
            required_min_echo_rx: Duration::ZERO,
        };
        let actions = session.handle(millis(5000), Event::Received(&down));
        assert_eq!(actions.change.unwrap().to, State::Init);
        // Sending now, within one idle interval.
        let next = session.poll_at().unwrap();
        assert!(next > millis(5000) && next <= millis(6000), "{next:?}");
        let packet = session.handle(next, Event::Timer).send.unwrap();
        assert_eq!((packet.state, packet.your_discriminator), (State::Init, 4));
        // Silence: back to Down (3 s detection at the remote's 1 s), and
        // quiet again.
        let mut now = next;
        let mut change = None;
        while change.is_none() {
            now = session.poll_at().unwrap();
            change = session.handle(now, Event::Timer).change;
        }
        assert_eq!(now, millis(8000));
        assert_eq!(session.poll_at(), None);
    }
}
