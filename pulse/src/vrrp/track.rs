//! Tracking: `vrrp_script` checks run periodically, and the weights that
//! tracked scripts and interfaces add to an instance's priority.

use std::time::Duration;

use fulcrum_config::model as config;
use tokio::sync::mpsc;

/// What a tracked object does to an instance, as keepalived's
/// vrrp_track.c: weight 0 and down means FAULT (with `reverse`: up); a
/// positive weight is added while up, a negative one while down; `reverse`
/// negates the weight (keepalived's `weight_multiplier` of -1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Fault,
    Adjust(i32),
}

pub fn effect(up: bool, weight: i32, reverse: bool) -> Effect {
    let multiplier = if reverse { -1 } else { 1 };
    match weight {
        0 if up == reverse => Effect::Fault,
        weight if weight > 0 && up => Effect::Adjust(weight * multiplier),
        weight if weight < 0 && !up => Effect::Adjust(weight * multiplier),
        _ => Effect::Adjust(0),
    }
}

/// A `vrrp_script`'s rise and fall counting, without I/O, as keepalived's
/// (vrrp_scheduler.c): a script starts unknown, and its first result
/// decides at once; `init_fail` starts it failed instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptState {
    rise: u32,
    fall: u32,
    /// `None` until the first result.
    ok: Option<bool>,
    /// Consecutive results against the current state.
    against: u32,
}

impl ScriptState {
    pub fn new(script: &config::VrrpScript) -> ScriptState {
        ScriptState {
            rise: script.rise.max(1),
            fall: script.fall.max(1),
            ok: script.init_fail.then_some(false),
            against: 0,
        }
    }

    pub fn ok(&self) -> Option<bool> {
        self.ok
    }

    /// Records one run; the new state when it changes: `rise` successes
    /// in a row make a failed script good, `fall` failures a good one
    /// failed.
    pub fn record(&mut self, success: bool) -> Option<bool> {
        let Some(ok) = self.ok else {
            self.ok = Some(success);
            return Some(success);
        };
        if success == ok {
            self.against = 0;
            return None;
        }
        self.against += 1;
        let needed = if ok { self.fall } else { self.rise };
        if self.against >= needed {
            self.ok = Some(success);
            self.against = 0;
            return Some(success);
        }
        None
    }
}

/// A script's state changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptChange {
    pub name: String,
    pub ok: bool,
}

/// Runs `script` every `interval` until `changes` closes, sending each
/// change of its state. A run that outlasts `timeout` (default: the
/// interval) is killed and counts as a failure, as in keepalived.
pub async fn run_script(
    script: config::VrrpScript,
    global: config::GlobalDefs,
    changes: mpsc::Sender<ScriptChange>,
) {
    let Some(command_line) = script.script.clone() else {
        return;
    };
    let mut state = ScriptState::new(&script);
    let timeout = script.timeout.unwrap_or(script.interval);
    let mut ticks = tokio::time::interval(script.interval.max(Duration::from_millis(10)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        if changes.is_closed() {
            return;
        }
        let success = match crate::scripts::command(&command_line, &global) {
            Ok(mut command) => {
                command.kill_on_drop(true);
                match command.spawn() {
                    Ok(mut child) => match tokio::time::timeout(timeout, child.wait()).await {
                        Ok(Ok(status)) => status.success(),
                        Ok(Err(error)) => {
                            tracing::warn!("{}: {error}", command_line.command);
                            false
                        }
                        Err(_) => {
                            tracing::warn!(
                                "VRRP_Script({}) timed out after {timeout:?}",
                                script.name
                            );
                            let _ = child.kill().await;
                            false
                        }
                    },
                    Err(error) => {
                        tracing::error!("cannot run {}: {error}", command_line.command);
                        false
                    }
                }
            }
            Err(why) => {
                tracing::error!("cannot run {}: {why}", command_line.command);
                false
            }
        };
        if let Some(ok) = state.record(success) {
            tracing::info!(
                "VRRP_Script({}) {}",
                script.name,
                if ok { "succeeded" } else { "failed" }
            );
            let change = ScriptChange {
                name: script.name.clone(),
                ok,
            };
            if changes.send(change).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(rise: u32, fall: u32, init_fail: bool) -> config::VrrpScript {
        config::VrrpScript {
            name: "check".into(),
            script: None,
            interval: Duration::from_secs(1),
            timeout: None,
            weight: 0,
            weight_reverse: false,
            rise,
            fall,
            init_fail,
        }
    }

    #[test]
    fn the_first_result_decides() {
        let mut state = ScriptState::new(&script(3, 3, false));
        assert_eq!(state.ok(), None);
        assert_eq!(state.record(false), Some(false));
        let mut state = ScriptState::new(&script(3, 3, false));
        assert_eq!(state.record(true), Some(true));
    }

    #[test]
    fn fall_failures_in_a_row_fail_a_good_script() {
        let mut state = ScriptState::new(&script(2, 3, false));
        assert_eq!(state.record(true), Some(true));
        assert_eq!(state.record(false), None);
        assert_eq!(state.record(false), None);
        // A success in between starts the count again.
        assert_eq!(state.record(true), None);
        assert_eq!(state.record(false), None);
        assert_eq!(state.record(false), None);
        assert_eq!(state.record(false), Some(false));
        assert_eq!(state.record(true), None);
        assert_eq!(state.record(true), Some(true));
    }

    #[test]
    fn init_fail_starts_failed() {
        let mut state = ScriptState::new(&script(2, 1, true));
        assert_eq!(state.ok(), Some(false));
        assert_eq!(state.record(false), None);
        assert_eq!(state.record(true), None);
        assert_eq!(state.record(true), Some(true));
    }

    #[test]
    fn weights_apply_in_their_state_and_reverse_negates() {
        assert_eq!(effect(false, 0, false), Effect::Fault);
        assert_eq!(effect(true, 0, false), Effect::Adjust(0));
        assert_eq!(effect(true, 0, true), Effect::Fault);
        assert_eq!(effect(false, 0, true), Effect::Adjust(0));
        assert_eq!(effect(true, 10, false), Effect::Adjust(10));
        assert_eq!(effect(false, 10, false), Effect::Adjust(0));
        assert_eq!(effect(false, -10, false), Effect::Adjust(-10));
        assert_eq!(effect(true, -10, false), Effect::Adjust(0));
        assert_eq!(effect(true, 10, true), Effect::Adjust(-10));
        assert_eq!(effect(false, -10, true), Effect::Adjust(10));
    }
}
