//! One checker's schedule and up/down state, with no I/O (smoltcp style).
//!
//! The caller owns time and I/O: it asks [`Machine::poll_at`] when to come
//! back, calls [`Machine::poll`] then, which may say "start an attempt now"
//! ([`Action::Start`]), runs the attempt, and feeds its outcome to
//! [`Machine::handle`], which may report a [`Transition`].
//!
//! The semantics are keepalived's (keepalived/check/check_tcp.c `tcp_epilog`,
//! check_http.c `epilog`/`timeout_epilog`, check_data.c
//! `validate_check_config`, check_api.c `register_checkers_thread`):
//!
//! - The first attempt starts 1 s (keepalived's `BOOTSTRAP_DELAY`) plus a
//!   random part of `warmup` after start-up, so that many checks of one real
//!   server do not all fire together.
//! - Without `alpha` a checker starts up; with `alpha` it starts down.
//! - A success marks the checker up at once and schedules the next attempt
//!   a `delay_loop` later.
//! - A failure is retried `retry` times, `delay_before_retry` apart; the
//!   checker goes down on the failure after those: `retry + 1` consecutive
//!   failures. Quirk: keepalived starts the retry counter *at* `retry`
//!   ("for non alpha mode, one failure is enough initially"), so the very
//!   first attempt failing marks the checker down at once (not SMTP_CHECK:
//!   [`Timing::retries_initially`]).
//! - The first verdict is always reported (keepalived calls
//!   `update_svr_checker_state` while `!has_run`), even when it confirms the
//!   initial state.
//! - While down, TCP_CHECK and SMTP_CHECK keep their retry cadence
//!   (`delay_before_retry`, then `delay_loop` after `retry` of them) whereas
//!   HTTP_GET/SSL_GET wait the longer of `delay_before_retry` and
//!   `delay_loop` between attempts, and UDP_CHECK, DNS_CHECK, PING_CHECK
//!   and MISC_CHECK a `delay_loop` ([`DownCadence`]); MISC_CHECK counts its
//!   delays from the start of the last run ([`Timing::delay_from_start`]).
//! - A failure of this machine (no socket, cannot bind) is no verdict: the
//!   next attempt comes a `delay_loop` later (keepalived's "Rescheduling").

use std::time::Duration;

use crate::outcome::{Failure, Outcome};

/// keepalived's `BOOTSTRAP_DELAY`: one second before any first check.
pub const BOOTSTRAP_DELAY: Duration = Duration::from_secs(1);

/// A point in time, as a duration since an epoch the caller chooses (the
/// scheduler uses its start; tests use zero).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub Duration);

impl Timestamp {
    pub const ZERO: Timestamp = Timestamp(Duration::ZERO);
    /// Later than any time a caller will reach.
    pub const NEVER: Timestamp = Timestamp(Duration::MAX);

    pub fn from_secs(seconds: u64) -> Timestamp {
        Timestamp(Duration::from_secs(seconds))
    }

    pub fn from_millis(milliseconds: u64) -> Timestamp {
        Timestamp(Duration::from_millis(milliseconds))
    }
}

impl std::ops::Add<Duration> for Timestamp {
    type Output = Timestamp;
    fn add(self, duration: Duration) -> Timestamp {
        Timestamp(self.0.saturating_add(duration))
    }
}

impl std::ops::Sub<Timestamp> for Timestamp {
    type Output = Duration;
    fn sub(self, earlier: Timestamp) -> Duration {
        self.0.saturating_sub(earlier.0)
    }
}

/// How a checker already down paces its attempts (the one place where
/// keepalived's checkers differ in scheduling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DownCadence {
    /// TCP_CHECK and SMTP_CHECK: `delay_before_retry` for `retry`
    /// attempts, then a `delay_loop`, over and over.
    Retries,
    /// HTTP_GET and SSL_GET: no retries while down, the longer of
    /// `delay_before_retry` and `delay_loop` between attempts.
    Longest,
    /// UDP_CHECK, DNS_CHECK, PING_CHECK, MISC_CHECK (`udp_epilog`,
    /// `dns_final`, `icmp_epilog`, `misc_check_child_thread`): no retries
    /// while down, a `delay_loop` between attempts.
    DelayLoop,
}

/// A checker's timers and counts, resolved (see `fulcrum_config`'s
/// `CheckerCommon` for where each comes from).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Timing {
    pub delay_loop: Duration,
    pub retry: u32,
    pub delay_before_retry: Duration,
    pub warmup: Duration,
    pub alpha: bool,
    /// The most one attempt may take before it counts as a timeout. The
    /// machine's deadline counts it from when the attempt is due; a caller
    /// whose attempts may start late (the scheduler, on a busy runtime)
    /// lets the attempt enforce it from its actual start instead, and
    /// treats the machine's deadline as no verdict.
    pub attempt_timeout: Duration,
    pub down_cadence: DownCadence,
    /// Retries apply from the first attempt. Only SMTP_CHECK: its
    /// `smtp_start_check_thread` resets `retry_it` to 0 before every round,
    /// undoing the "one failure is enough initially" of the others.
    pub retries_initially: bool,
    /// The next attempt is timed from the start of the previous one, not
    /// its end. Only MISC_CHECK (check_misc.c: `last_ran` plus the delay;
    /// at once if that has passed).
    pub delay_from_start: bool,
}

impl Timing {
    /// keepalived's defaults for a TCP_CHECK (delay_loop 60 s, retry 1,
    /// delay_before_retry 1 s, warmup = delay_loop, connect_timeout 5 s).
    pub fn keepalived_default() -> Timing {
        Timing {
            delay_loop: Duration::from_secs(60),
            retry: 1,
            delay_before_retry: Duration::from_secs(1),
            warmup: Duration::from_secs(60),
            alpha: false,
            attempt_timeout: Duration::from_secs(5),
            down_cadence: DownCadence::Retries,
            retries_initially: false,
            delay_from_start: false,
        }
    }
}

/// What the caller must do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Start an attempt; it must be over by `deadline` (else report
    /// [`Failure::Timeout`], or let [`Machine::poll`] do it).
    Start { deadline: Timestamp },
}

/// A checker's state was decided: changed, or reported for the first time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub up: bool,
    /// The first outcome of this checker (it may confirm the initial state).
    pub initial: bool,
    /// `None` for up; why it went down otherwise.
    pub reason: Option<Failure>,
    /// Consecutive failed attempts that led here (0 when up).
    pub failures: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Waiting {
        until: Timestamp,
    },
    Running {
        started: Timestamp,
        deadline: Timestamp,
    },
    /// The state is decided elsewhere (BFD_CHECK: by its session), through
    /// [`Machine::decide`]; no attempts.
    External,
}

/// One checker's state machine.
#[derive(Debug, Clone)]
pub struct Machine {
    timing: Timing,
    phase: Phase,
    up: bool,
    /// A state was reported (keepalived's `has_run`, which differs only for
    /// SMTP_CHECK's retries before its first verdict).
    reported: bool,
    /// keepalived's `retry_it`.
    retry_iteration: u32,
    /// Consecutive failures, for reasons ("after 3 attempts").
    consecutive_failures: u32,
    /// The weight a MISC_CHECK with `misc_dynamic` last asked for.
    weight: Option<i32>,
    /// Whether that weight changed since [`Machine::take_weight_change`].
    weight_changed: bool,
    /// The weight offset a FILE_CHECK last asked for.
    weight_offset: i64,
    /// Whether it changed since [`Machine::take_weight_offset_change`].
    weight_offset_changed: bool,
}

impl Machine {
    /// A checker created at `now`. `warmup_fraction` (clamped to 0..=1) is
    /// the random part of the warmup, injected so that tests are exact.
    pub fn new(timing: Timing, now: Timestamp, warmup_fraction: f64) -> Machine {
        let fraction = if warmup_fraction.is_finite() {
            warmup_fraction.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let warmup = timing.warmup.mul_f64(fraction);
        Machine {
            up: !timing.alpha,
            reported: false,
            retry_iteration: if timing.retries_initially {
                0
            } else {
                timing.retry
            },
            consecutive_failures: 0,
            weight: None,
            weight_changed: false,
            weight_offset: 0,
            weight_offset_changed: false,
            phase: Phase::Waiting {
                until: now + BOOTSTRAP_DELAY + warmup,
            },
            timing,
        }
    }

    /// A checker whose first attempt is due at `at`, without bootstrap
    /// delay or warmup (`nanny --once`, tests).
    pub fn starting_at(timing: Timing, at: Timestamp) -> Machine {
        let mut machine = Machine::new(timing, at, 0.0);
        machine.phase = Phase::Waiting { until: at };
        machine
    }

    /// A checker whose state something else decides (a BFD session),
    /// through [`Machine::decide`]: it never asks for an attempt. Starts up,
    /// or down with `alpha`, like the others.
    pub fn external(timing: Timing) -> Machine {
        let mut machine = Machine::new(timing, Timestamp::ZERO, 0.0);
        machine.phase = Phase::External;
        machine
    }

    /// The state decided elsewhere: up with `None`, down with the reason.
    /// Reported the first time, then only when it changes.
    pub fn decide(&mut self, failure: Option<Failure>) -> Option<Transition> {
        let up = failure.is_none();
        let initial = !self.reported;
        if up == self.up && !initial {
            return None;
        }
        self.up = up;
        self.reported = true;
        Some(Transition {
            up,
            initial,
            failures: u32::from(!up),
            reason: failure,
        })
    }

    pub fn timing(&self) -> &Timing {
        &self.timing
    }

    /// Whether the checker counts as up now.
    pub fn is_up(&self) -> bool {
        self.up
    }

    /// Whether the checker's state was ever reported.
    pub fn has_reported(&self) -> bool {
        self.reported
    }

    /// Whether an attempt is running.
    pub fn is_running(&self) -> bool {
        matches!(self.phase, Phase::Running { .. })
    }

    /// The weight MISC_CHECK's `misc_dynamic` last set.
    pub fn weight(&self) -> Option<i32> {
        self.weight
    }

    /// The new weight, once, if `misc_dynamic` changed it (keepalived's
    /// `update_svr_wgt`, applied at every success, not only on changes of
    /// state).
    pub fn take_weight_change(&mut self) -> Option<i32> {
        std::mem::take(&mut self.weight_changed)
            .then_some(self.weight)
            .flatten()
    }

    /// The weight offset FILE_CHECK last set (0 before any).
    pub fn weight_offset(&self) -> i64 {
        self.weight_offset
    }

    /// The new weight offset, once, if it changed.
    pub fn take_weight_offset_change(&mut self) -> Option<i64> {
        std::mem::take(&mut self.weight_offset_changed).then_some(self.weight_offset)
    }

    /// When [`Machine::poll`] has something to do: the next attempt's start,
    /// or the running attempt's deadline.
    pub fn poll_at(&self) -> Timestamp {
        match self.phase {
            Phase::Waiting { until } => until,
            Phase::Running { deadline, .. } => deadline,
            Phase::External => Timestamp::NEVER,
        }
    }

    /// Advances to `now`. Returns [`Action::Start`] when an attempt is due.
    /// A running attempt past its deadline is counted as a timeout here;
    /// its transition, if any, is returned by [`Machine::poll_timeout`].
    pub fn poll(&mut self, now: Timestamp) -> Option<Action> {
        match self.phase {
            Phase::Waiting { until } if now >= until => {
                let deadline = now + self.timing.attempt_timeout;
                self.phase = Phase::Running {
                    started: now,
                    deadline,
                };
                Some(Action::Start { deadline })
            }
            _ => None,
        }
    }

    /// If the running attempt is past its deadline, counts it as a timeout
    /// (the caller drops the attempt) and returns what [`Machine::handle`]
    /// would.
    pub fn poll_timeout(&mut self, now: Timestamp) -> Option<Transition> {
        match self.phase {
            Phase::Running { started, deadline } if now >= deadline => self.handle(
                now,
                Err(Failure::Timeout {
                    after: deadline - started,
                }),
            ),
            _ => None,
        }
    }

    /// The outcome of the running attempt, at `now`. Outcomes when no
    /// attempt runs are ignored (a late answer after a timeout).
    pub fn handle(&mut self, now: Timestamp, outcome: Outcome) -> Option<Transition> {
        if !self.is_running() {
            return None;
        }
        let timing = &self.timing;
        let initial = !self.reported;
        let Phase::Running { started, .. } = self.phase else {
            return None;
        };
        let next = |delay: Duration| {
            if timing.delay_from_start {
                (started + delay).max(now)
            } else {
                now + delay
            }
        };
        match outcome {
            Ok(success) => {
                self.retry_iteration = 0;
                self.consecutive_failures = 0;
                if let Some(offset) = success.weight_offset
                    && offset != self.weight_offset
                {
                    self.weight_offset = offset;
                    self.weight_offset_changed = true;
                }
                if success.weight.is_some() && success.weight != self.weight {
                    self.weight = success.weight;
                    self.weight_changed = true;
                }
                self.phase = Phase::Waiting {
                    until: next(timing.delay_loop),
                };
                if !self.up || initial {
                    self.up = true;
                    self.reported = true;
                    return Some(Transition {
                        up: true,
                        initial,
                        reason: None,
                        failures: 0,
                    });
                }
                None
            }
            Err(failure) if failure.is_local() => {
                // keepalived: "socket bind failed. Rescheduling." No
                // verdict: the state stays, and is reported as it is (with
                // why) if it never was.
                self.phase = Phase::Waiting {
                    until: next(timing.delay_loop),
                };
                if initial {
                    self.reported = true;
                    return Some(Transition {
                        up: self.up,
                        initial,
                        reason: Some(failure),
                        failures: 0,
                    });
                }
                None
            }
            Err(failure) => {
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                let delay;
                let mut goes_down = false;
                if self.up || initial {
                    if self.retry_iteration < timing.retry {
                        self.retry_iteration += 1;
                        delay = timing.delay_before_retry;
                    } else {
                        goes_down = true;
                        delay = match timing.down_cadence {
                            DownCadence::Retries => {
                                self.retry_iteration = 0;
                                timing.delay_loop
                            }
                            DownCadence::Longest => {
                                timing.delay_before_retry.max(timing.delay_loop)
                            }
                            DownCadence::DelayLoop => {
                                self.retry_iteration = 0;
                                timing.delay_loop
                            }
                        };
                    }
                } else {
                    // Already down: keepalived does not report again, only
                    // paces the next attempt.
                    delay = match timing.down_cadence {
                        DownCadence::Retries => {
                            if self.retry_iteration < timing.retry {
                                self.retry_iteration += 1;
                                timing.delay_before_retry
                            } else {
                                self.retry_iteration = 0;
                                timing.delay_loop
                            }
                        }
                        DownCadence::Longest => timing.delay_before_retry.max(timing.delay_loop),
                        DownCadence::DelayLoop => timing.delay_loop,
                    };
                }
                self.phase = Phase::Waiting { until: next(delay) };
                if goes_down {
                    self.up = false;
                    self.reported = true;
                    return Some(Transition {
                        up: false,
                        initial,
                        reason: Some(failure),
                        failures: self.consecutive_failures,
                    });
                }
                None
            }
        }
    }
}

/// A real server's health: up when all its checkers are up (keepalived's
/// `failed_checkers` list is empty). A real server with no checker is up.
#[derive(Debug, Clone, Default)]
pub struct RealServerHealth {
    /// For each checker (by the caller's index), whether it is up.
    checkers: Vec<bool>,
}

impl RealServerHealth {
    pub fn new(initial: Vec<bool>) -> RealServerHealth {
        RealServerHealth { checkers: initial }
    }

    pub fn is_up(&self) -> bool {
        self.checkers.iter().all(|up| *up)
    }

    /// Records checker `index`'s state; returns the real server's new state
    /// if it changed.
    pub fn set(&mut self, index: usize, up: bool) -> Option<bool> {
        let before = self.is_up();
        if let Some(slot) = self.checkers.get_mut(index) {
            *slot = up;
        }
        let after = self.is_up();
        (before != after).then_some(after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Success;

    fn seconds(value: u64) -> Duration {
        Duration::from_secs(value)
    }

    fn timing(retry: u32) -> Timing {
        Timing {
            delay_loop: seconds(10),
            retry,
            delay_before_retry: seconds(2),
            warmup: seconds(0),
            alpha: false,
            attempt_timeout: seconds(3),
            down_cadence: DownCadence::Retries,
            retries_initially: false,
            delay_from_start: false,
        }
    }

    fn refused() -> Outcome {
        Err(Failure::ConnectionRefused)
    }

    fn ok() -> Outcome {
        Ok(Success::default())
    }

    /// Polls at the machine's own time, expects a start, feeds `outcome`
    /// one second later; returns the time and transition.
    fn attempt(machine: &mut Machine, outcome: Outcome) -> (Timestamp, Option<Transition>) {
        let start = machine.poll_at();
        assert_eq!(
            machine.poll(start),
            Some(Action::Start {
                deadline: start + machine.timing().attempt_timeout
            })
        );
        let end = start + seconds(1);
        (start, machine.handle(end, outcome))
    }

    #[test]
    fn first_attempt_after_bootstrap_delay_and_nothing_before() {
        let mut machine = Machine::new(timing(1), Timestamp::ZERO, 0.5);
        assert_eq!(machine.poll_at(), Timestamp::from_secs(1));
        assert_eq!(machine.poll(Timestamp::from_millis(999)), None);
        assert!(machine.poll(Timestamp::from_secs(1)).is_some());
        // Running: no second start.
        assert_eq!(machine.poll(Timestamp::from_secs(2)), None);
    }

    #[test]
    fn warmup_delays_the_first_attempt_by_its_random_part() {
        let mut settings = timing(1);
        settings.warmup = seconds(30);
        let machine = Machine::new(settings.clone(), Timestamp::ZERO, 0.5);
        assert_eq!(machine.poll_at(), Timestamp::from_secs(16));
        let machine = Machine::new(settings.clone(), Timestamp::ZERO, 1.0);
        assert_eq!(machine.poll_at(), Timestamp::from_secs(31));
        let machine = Machine::new(settings, Timestamp::ZERO, f64::NAN);
        assert_eq!(machine.poll_at(), Timestamp::from_secs(1));
    }

    #[test]
    fn starts_up_and_reports_the_first_success() {
        let mut machine = Machine::new(timing(1), Timestamp::ZERO, 0.0);
        assert!(machine.is_up());
        let (start, transition) = attempt(&mut machine, ok());
        let transition = transition.expect("the first outcome is reported");
        assert!(transition.up && transition.initial);
        assert_eq!(machine.poll_at(), start + seconds(1) + seconds(10));
        // Later successes are silent.
        let (_, transition) = attempt(&mut machine, ok());
        assert_eq!(transition, None);
    }

    #[test]
    fn first_failure_is_enough_initially() {
        // keepalived sets retry_it = retry at start-up.
        let mut machine = Machine::new(timing(3), Timestamp::ZERO, 0.0);
        let (start, transition) = attempt(&mut machine, refused());
        let transition = transition.unwrap();
        assert!(!transition.up && transition.initial);
        assert_eq!(transition.reason, Some(Failure::ConnectionRefused));
        assert!(!machine.is_up());
        assert_eq!(machine.poll_at(), start + seconds(1) + seconds(10));
    }

    #[test]
    fn smtp_retries_from_the_first_attempt() {
        let mut settings = timing(2);
        settings.retries_initially = true;
        let mut machine = Machine::new(settings, Timestamp::ZERO, 0.0);
        assert_eq!(attempt(&mut machine, refused()).1, None);
        assert_eq!(attempt(&mut machine, refused()).1, None);
        let transition = attempt(&mut machine, refused()).1.unwrap();
        assert!(!transition.up && transition.initial);
        assert_eq!(transition.failures, 3);
    }

    #[test]
    fn down_after_retry_plus_one_failures_delay_before_retry_apart() {
        let mut machine = Machine::new(timing(2), Timestamp::ZERO, 0.0);
        attempt(&mut machine, ok());
        let (start, first) = attempt(&mut machine, refused());
        assert_eq!(first, None);
        assert!(machine.is_up());
        // The retry comes delay_before_retry after the failure.
        assert_eq!(machine.poll_at(), start + seconds(1) + seconds(2));
        let (_, second) = attempt(&mut machine, refused());
        assert_eq!(second, None);
        let (_, third) = attempt(&mut machine, refused());
        let third = third.unwrap();
        assert!(!third.up && !third.initial);
        assert_eq!(third.failures, 3);
        assert!(!machine.is_up());
    }

    #[test]
    fn a_success_between_failures_resets_the_retries() {
        let mut machine = Machine::new(timing(1), Timestamp::ZERO, 0.0);
        attempt(&mut machine, ok());
        assert_eq!(attempt(&mut machine, refused()).1, None);
        assert_eq!(attempt(&mut machine, ok()).1, None);
        assert_eq!(attempt(&mut machine, refused()).1, None);
        assert!(attempt(&mut machine, refused()).1.is_some());
    }

    #[test]
    fn recovers_after_one_success() {
        let mut machine = Machine::new(timing(0), Timestamp::ZERO, 0.0);
        attempt(&mut machine, ok());
        assert!(!attempt(&mut machine, refused()).1.unwrap().up);
        let transition = attempt(&mut machine, ok()).1.unwrap();
        assert!(transition.up && !transition.initial);
        assert_eq!(transition.reason, None);
        assert!(machine.is_up());
    }

    #[test]
    fn flapping_reports_every_change_and_only_changes() {
        let mut machine = Machine::new(timing(0), Timestamp::ZERO, 0.0);
        let mut states = Vec::new();
        for outcome in [ok(), refused(), ok(), refused(), refused(), ok(), ok()] {
            if let Some(transition) = attempt(&mut machine, outcome).1 {
                states.push(transition.up);
            }
        }
        assert_eq!(states, [true, false, true, false, true]);
    }

    #[test]
    fn alpha_starts_down_and_needs_a_success() {
        let mut settings = timing(2);
        settings.alpha = true;
        let mut machine = Machine::new(settings, Timestamp::ZERO, 0.0);
        assert!(!machine.is_up());
        let transition = attempt(&mut machine, ok()).1.unwrap();
        assert!(transition.up && transition.initial);
    }

    #[test]
    fn alpha_first_failure_is_reported_as_down() {
        let mut settings = timing(2);
        settings.alpha = true;
        let mut machine = Machine::new(settings, Timestamp::ZERO, 0.0);
        let transition = attempt(&mut machine, refused()).1.unwrap();
        assert!(!transition.up && transition.initial);
        // Further failures while down are silent.
        assert_eq!(attempt(&mut machine, refused()).1, None);
    }

    #[test]
    fn tcp_cadence_while_down_keeps_retrying() {
        let mut machine = Machine::new(timing(2), Timestamp::ZERO, 0.0);
        attempt(&mut machine, refused());
        // down, retry_it reset: dbr, dbr, then delay_loop.
        let mut gaps = Vec::new();
        for _ in 0..4 {
            let (start, _) = attempt(&mut machine, refused());
            gaps.push(machine.poll_at() - (start + seconds(1)));
        }
        assert_eq!(gaps, [seconds(2), seconds(2), seconds(10), seconds(2)]);
    }

    #[test]
    fn http_cadence_while_down_waits_the_longest() {
        let mut settings = timing(1);
        settings.down_cadence = DownCadence::Longest;
        settings.delay_before_retry = seconds(15);
        let mut machine = Machine::new(settings, Timestamp::ZERO, 0.0);
        attempt(&mut machine, ok());
        let (start, none) = attempt(&mut machine, refused());
        assert_eq!(none, None);
        assert_eq!(machine.poll_at(), start + seconds(1) + seconds(15));
        assert!(attempt(&mut machine, refused()).1.is_some());
        let (start, silent) = attempt(&mut machine, refused());
        assert_eq!(silent, None);
        assert_eq!(machine.poll_at(), start + seconds(1) + seconds(15));
    }

    #[test]
    fn udp_cadence_while_down_is_the_delay_loop() {
        let mut settings = timing(2);
        settings.down_cadence = DownCadence::DelayLoop;
        let mut machine = Machine::new(settings, Timestamp::ZERO, 0.0);
        attempt(&mut machine, ok());
        assert_eq!(attempt(&mut machine, refused()).1, None);
        assert_eq!(attempt(&mut machine, refused()).1, None);
        assert!(attempt(&mut machine, refused()).1.is_some());
        for _ in 0..3 {
            let (start, silent) = attempt(&mut machine, refused());
            assert_eq!(silent, None);
            assert_eq!(machine.poll_at(), start + seconds(1) + seconds(10));
        }
        assert!(attempt(&mut machine, ok()).1.unwrap().up);
    }

    #[test]
    fn misc_times_its_next_attempt_from_the_start_of_the_last() {
        let mut settings = timing(0);
        settings.delay_from_start = true;
        let mut machine = Machine::new(settings, Timestamp::ZERO, 0.0);
        let (start, _) = attempt(&mut machine, ok());
        assert_eq!(machine.poll_at(), start + seconds(10));
        // An attempt longer than the delay: the next one is due at once.
        let start = machine.poll_at();
        machine.poll(start);
        machine.handle(start + seconds(12), ok());
        assert_eq!(machine.poll_at(), start + seconds(12));
    }

    #[test]
    fn a_local_failure_is_no_verdict() {
        let mut machine = Machine::new(timing(0), Timestamp::ZERO, 0.0);
        let local = || Err(Failure::Local("socket: too many open files".to_owned()));
        // Never reported yet: the initial state is reported, with why.
        let (start, transition) = attempt(&mut machine, local());
        let transition = transition.unwrap();
        assert!(transition.up && transition.initial);
        assert_eq!(machine.poll_at(), start + seconds(1) + seconds(10));
        // Then silence, and no retries counted.
        assert_eq!(attempt(&mut machine, local()).1, None);
        assert!(machine.is_up());
        assert!(!attempt(&mut machine, refused()).1.unwrap().up);
        assert_eq!(attempt(&mut machine, local()).1, None);
        assert!(!machine.is_up());
    }

    #[test]
    fn an_attempt_past_its_deadline_is_a_timeout() {
        let mut machine = Machine::new(timing(0), Timestamp::ZERO, 0.0);
        attempt(&mut machine, ok());
        let start = machine.poll_at();
        let Some(Action::Start { deadline }) = machine.poll(start) else {
            panic!("expected a start");
        };
        assert_eq!(machine.poll_at(), deadline);
        assert_eq!(machine.poll_timeout(start + seconds(1)), None);
        let transition = machine.poll_timeout(deadline).unwrap();
        assert_eq!(
            transition.reason,
            Some(Failure::Timeout { after: seconds(3) })
        );
        // A late answer is ignored.
        assert_eq!(machine.handle(deadline + seconds(1), ok()), None);
        assert!(!machine.is_up());
    }

    #[test]
    fn misc_dynamic_weight_is_kept() {
        let mut machine = Machine::new(timing(0), Timestamp::ZERO, 0.0);
        attempt(
            &mut machine,
            Ok(Success {
                weight: Some(7),
                ..Success::default()
            }),
        );
        assert_eq!(machine.weight(), Some(7));
        assert_eq!(machine.take_weight_change(), Some(7));
        assert_eq!(machine.take_weight_change(), None);
        attempt(
            &mut machine,
            Ok(Success {
                weight: Some(7),
                ..Success::default()
            }),
        );
        assert_eq!(machine.take_weight_change(), None, "unchanged");
        attempt(
            &mut machine,
            Ok(Success {
                weight: Some(3),
                ..Success::default()
            }),
        );
        assert_eq!(machine.take_weight_change(), Some(3));
    }

    #[test]
    fn real_server_is_up_when_all_checkers_are() {
        let mut health = RealServerHealth::new(vec![true, true]);
        assert!(health.is_up());
        assert_eq!(health.set(0, false), Some(false));
        assert_eq!(health.set(1, false), None);
        assert_eq!(health.set(0, true), None);
        assert_eq!(health.set(1, true), Some(true));
        assert!(RealServerHealth::new(Vec::new()).is_up());
    }
}
