//! Tracking: `vrrp_script` checks run periodically, `track_file` files
//! read, and the weights that tracked scripts, files and interfaces add to
//! an instance's priority.

pub mod processes;

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

/// What a `track_file` value does, as keepalived's vrrp_track.c: with
/// weight 0 any value but 0 means FAULT; otherwise the value times the
/// weight (negated by `reverse`) is added, and -254 or less means FAULT.
pub fn file_effect(value: i64, weight: i32, reverse: bool) -> Effect {
    let status = if weight == 0 {
        if value == 0 { 0 } else { -254 }
    } else {
        let weight = if reverse { -weight } else { weight };
        value.saturating_mul(i64::from(weight)).clamp(-254, 253)
    };
    if status <= -254 {
        Effect::Fault
    } else {
        Effect::Adjust(status as i32)
    }
}

/// A tracked file's value: the integer it starts with (decimal, or hex
/// after 0x), clamped to -254..=254; 0 when the file is missing or says
/// nothing else, as keepalived reads it (strtol).
pub fn read_file_value(path: &std::path::Path) -> i64 {
    let Ok(text) = std::fs::read_to_string(path) else {
        return 0;
    };
    let text = text.trim_start();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (radix, digits) = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => (16, hex),
        None => (10, digits),
    };
    let end = digits
        .find(|character: char| !character.is_digit(radix))
        .unwrap_or(digits.len());
    let value = i64::from_str_radix(&digits[..end], radix).unwrap_or(0);
    let value = if negative { -value } else { value };
    value.clamp(-254, 254)
}

/// `init_file [VALUE] [overwrite]`: writes VALUE (default 0) into a
/// missing file, or into any with `overwrite`.
pub fn initialise_file(path: &std::path::Path, init: &[String]) -> std::io::Result<()> {
    let overwrite = init.iter().any(|word| word == "overwrite");
    let value = init
        .iter()
        .find(|word| *word != "overwrite")
        .map_or("0", String::as_str);
    if overwrite || !path.exists() {
        std::fs::write(path, format!("{value}\n"))?;
    }
    Ok(())
}

/// A tracked file's value changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub name: String,
    pub value: i64,
}

/// Reads `path` every `period` until `changes` closes, sending each new
/// value. keepalived watches with inotify; reading a small file a few
/// times a second costs as little and sees the same changes.
pub async fn watch_file(
    name: String,
    path: std::path::PathBuf,
    mut value: i64,
    period: Duration,
    changes: mpsc::Sender<FileChange>,
) {
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let read = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || read_file_value(&path))
                .await
                .unwrap_or(0)
        };
        if read != value {
            value = read;
            tracing::info!("track_file {name}: {} now says {value}", path.display());
            let change = FileChange {
                name: name.clone(),
                value,
            };
            if changes.send(change).await.is_err() {
                return;
            }
        }
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
pub async fn run_script(script: config::VrrpScript, changes: mpsc::Sender<ScriptChange>) {
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
        let success = match fulcrum_scripts::run::command(&command_line, &[]) {
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

    /// keepalived's vrrp_track.c `initialise_track_bfd_state` and
    /// vrrp_scheduler.c `vrrp_handle_bfd_event`, which scripts and
    /// processes share: weight 0 faults while down (reversed: while up); a
    /// positive weight counts while up, a negative one while down, both
    /// negated by `reverse`.
    #[test]
    fn a_tracked_bfd_weighs_as_keepalived_s() {
        assert_eq!(effect(false, 0, false), Effect::Fault);
        assert_eq!(effect(true, 0, false), Effect::Adjust(0));
        assert_eq!(effect(true, 0, true), Effect::Fault);
        assert_eq!(effect(false, 0, true), Effect::Adjust(0));
        assert_eq!(effect(true, 10, false), Effect::Adjust(10));
        assert_eq!(effect(false, 10, false), Effect::Adjust(0));
        assert_eq!(effect(true, 10, true), Effect::Adjust(-10));
        assert_eq!(effect(false, -20, false), Effect::Adjust(-20));
        assert_eq!(effect(true, -20, false), Effect::Adjust(0));
        assert_eq!(effect(false, -20, true), Effect::Adjust(20));
    }

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
    fn file_values_times_weights() {
        assert_eq!(file_effect(0, 0, false), Effect::Adjust(0));
        assert_eq!(file_effect(3, 0, false), Effect::Fault);
        assert_eq!(file_effect(-5, 10, false), Effect::Adjust(-50));
        assert_eq!(file_effect(-5, 10, true), Effect::Adjust(50));
        assert_eq!(file_effect(100, 10, false), Effect::Adjust(253));
        assert_eq!(file_effect(-100, 10, false), Effect::Fault);
    }

    #[test]
    fn file_values_read_as_strtol() {
        let directory = std::env::temp_dir().join(format!("pulse-track-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join("value");
        for (text, value) in [
            ("12\n", 12),
            ("  -7 trailing", -7),
            ("0x10", 16),
            ("nothing", 0),
            ("99999", 254),
        ] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(read_file_value(&path), value, "{text:?}");
        }
        assert_eq!(read_file_value(&directory.join("missing")), 0);
        initialise_file(&path, &["5".into()]).unwrap();
        assert_eq!(read_file_value(&path), 254, "kept without overwrite");
        initialise_file(&path, &["5".into(), "overwrite".into()]).unwrap();
        assert_eq!(read_file_value(&path), 5);
        std::fs::remove_dir_all(&directory).unwrap();
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
