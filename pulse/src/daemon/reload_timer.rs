//! `reload_time_file` and `reload_repeat`: a reload scheduled by a file's
//! first line, as keepalived 2.2.7's reload_monitor.c does it, so that
//! several routers take an incompatible configuration at the same second:
//!
//! - The first line is exactly `HH:MM:SS`, `YY-MM-DD HH:MM:SS` or
//!   `YYYY-MM-DD HH:MM:SS`, with an optional `Z` for UTC (else local
//!   time); nothing before or after (`parse`, keepalived's
//!   `parse_datetime`). A time that does not exist (30 February, a local
//!   time skipped by daylight saving) is refused; a time alone already
//!   past today is tomorrow's; a date and time already past is refused.
//! - The file is read at the start and whenever it changes; a changed time
//!   reschedules (`Reload time updated from ... to ...`), a deleted file or
//!   a line refused cancels (`Cancelling reload scheduled for ...`).
//! - At the time, the file is deleted (unless `reload_repeat` and a time
//!   alone: then it stands for every day) and pulse reloads as for SIGHUP.
//!   The reload reads the settings again.
//!
//! keepalived learns of the file's changes from inotify; pulse reads it
//! once a second (the schedule is to the second; what a change moves is
//! when the reload is known, never when it happens).

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// What a reload time file's line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// Seconds since the epoch, and whether a date was given.
    At { time: i64, date_given: bool },
    /// Not one of the formats (`Reload time X format is incorrect`), or
    /// not a time (`Reload date/time X invalid`, `Reload time X is not
    /// valid`): the message.
    Refused(String),
    /// A date and time already past.
    Past(String),
}

/// keepalived's `parse_datetime` of `text` at `now` (seconds since the
/// epoch), in the process's time zone for a time without `Z`.
pub fn parse(text: &str, now: i64) -> Parsed {
    let (body, utc) = match text.strip_suffix('Z') {
        Some(body) => (body, true),
        None => (text, false),
    };
    if !matches!(body.len(), 8 | 17 | 19) {
        return Parsed::Refused(format!("Reload time {text} format is incorrect - ignoring"));
    }
    let invalid = || Parsed::Refused(format!("Reload date/time {text} invalid - ignoring"));
    // Today's date (in UTC or local time) for a time alone.
    let mut tm = broken_down(now, utc);
    let bytes = body.as_bytes();
    let number = |from: usize, digits: usize| -> Option<i32> {
        let field = body.get(from..from + digits)?;
        field
            .bytes()
            .all(|byte| byte.is_ascii_digit())
            .then(|| field.parse().ok())
            .flatten()
    };
    let time_at = match body.len() {
        8 => 0,
        17 => {
            let (Some(year), Some(month), Some(day)) = (number(0, 2), number(3, 2), number(6, 2))
            else {
                return invalid();
            };
            if bytes[2] != b'-' || bytes[5] != b'-' || bytes[8] != b' ' {
                return invalid();
            }
            // strptime's %y: 69-99 the twentieth century, else the
            // twenty-first.
            tm.tm_year = if year >= 69 { year } else { year + 100 };
            tm.tm_mon = month - 1;
            tm.tm_mday = day;
            9
        }
        _ => {
            let (Some(year), Some(month), Some(day)) = (number(0, 4), number(5, 2), number(8, 2))
            else {
                return invalid();
            };
            if bytes[4] != b'-' || bytes[7] != b'-' || bytes[10] != b' ' {
                return invalid();
            }
            tm.tm_year = year - 1900;
            tm.tm_mon = month - 1;
            tm.tm_mday = day;
            11
        }
    };
    let (Some(hour), Some(minute), Some(second)) = (
        number(time_at, 2),
        number(time_at + 3, 2),
        number(time_at + 6, 2),
    ) else {
        return invalid();
    };
    if bytes[time_at + 2] != b':' || bytes[time_at + 5] != b':' {
        return invalid();
    }
    // strptime's ranges.
    if hour > 23
        || minute > 59
        || second > 61
        || !(0..=11).contains(&tm.tm_mon)
        || !(1..=31).contains(&tm.tm_mday)
    {
        return invalid();
    }
    tm.tm_hour = hour;
    tm.tm_min = minute;
    tm.tm_sec = second;
    tm.tm_isdst = -1;
    // mktime normalises what does not exist (30 February, an hour skipped
    // by daylight saving): a time that moved is refused, as keepalived
    // refuses it (its check runs in local time, `Z` or not).
    let mut normalised = tm;
    // SAFETY: mktime reads and normalises the struct given.
    let local = unsafe { libc::mktime(&mut normalised) };
    if (normalised.tm_year, normalised.tm_mon, normalised.tm_mday)
        != (tm.tm_year, tm.tm_mon, tm.tm_mday)
        || (normalised.tm_hour, normalised.tm_min, normalised.tm_sec)
            != (tm.tm_hour, tm.tm_min, tm.tm_sec)
    {
        return Parsed::Refused(format!("Reload time {text} is not valid - ignoring"));
    }
    let to_seconds = |tm: &mut libc::tm| -> i64 {
        // SAFETY: as above.
        (if utc {
            unsafe { libc::timegm(tm) }
        } else {
            unsafe { libc::mktime(tm) }
        }) as i64
    };
    let mut time = if utc {
        to_seconds(&mut normalised)
    } else {
        local as i64
    };
    if time <= now {
        if body.len() == 8 {
            normalised.tm_mday += 1;
            time = to_seconds(&mut normalised);
        } else {
            return Parsed::Past(format!("Reload time {text} is in the past - ignoring"));
        }
    }
    Parsed::At {
        time,
        date_given: body.len() >= 17,
    }
}

/// `time` broken down in UTC or local time.
fn broken_down(time: i64, utc: bool) -> libc::tm {
    // SAFETY: an all-zero tm is valid; the _r functions fill it.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let time = time as libc::time_t;
    unsafe {
        if utc {
            libc::gmtime_r(&time, &mut tm);
        } else {
            libc::localtime_r(&time, &mut tm);
        }
    }
    tm
}

/// keepalived's `format_time_t`: local time, `%Y-%m-%d %H:%M:%S`.
pub fn format_local(time: i64) -> String {
    let tm = broken_down(time, false);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

fn now_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() as i64)
}

/// The file's first line, without its newline (keepalived's `fgets` of 20
/// characters); `None` when there is no file or no line.
fn first_line(path: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().next()?;
    Some(line.chars().take(20).collect())
}

/// Follows `path` (`reload_repeat`: `repeat`) and sends on `reloads` at
/// each scheduled time; ends with the task (a reload starts another with
/// the new settings).
pub fn spawn(path: PathBuf, repeat: bool, reloads: mpsc::Sender<()>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut read: Option<String> = None;
        let mut scheduled: Option<(i64, bool)> = None;
        loop {
            let line = first_line(&path);
            if line != read {
                read.clone_from(&line);
                let parsed = line.as_deref().map(|line| parse(line, now_seconds()));
                let next = match parsed {
                    Some(Parsed::At { time, date_given }) => Some((time, date_given)),
                    Some(Parsed::Refused(message)) => {
                        tracing::info!("{message}");
                        tracing::info!(
                            "Invalid reload time '{}' specified - ignoring",
                            line.as_deref().unwrap_or_default()
                        );
                        None
                    }
                    Some(Parsed::Past(message)) => {
                        tracing::info!("{message}");
                        tracing::info!("Reload date/time is in the past - ignoring");
                        None
                    }
                    None => None,
                };
                match (scheduled, next) {
                    (Some((old, _)), Some((new, _))) if old != new => tracing::info!(
                        "Reload time updated from {} to {}",
                        format_local(old),
                        format_local(new)
                    ),
                    (None, Some((new, _))) => {
                        tracing::info!("Scheduling reload for {}", format_local(new))
                    }
                    (Some((old, _)), None) => {
                        tracing::info!("Cancelling reload scheduled for {}", format_local(old))
                    }
                    _ => {}
                }
                scheduled = next;
            }
            let now = now_seconds();
            match scheduled {
                Some((time, date_given)) if time <= now => {
                    if !repeat || date_given {
                        let _ = std::fs::remove_file(&path);
                    }
                    if reloads.send(()).await.is_err() {
                        return;
                    }
                    // The reload starts this task again with its settings.
                    return;
                }
                Some((time, _)) if time - now <= 1 => {
                    // To the second: sleep to the time itself.
                    let until = UNIX_EPOCH + Duration::from_secs(time as u64);
                    let wait = until
                        .duration_since(SystemTime::now())
                        .unwrap_or(Duration::ZERO);
                    tokio::time::sleep(wait).await;
                }
                _ => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-07 23:30:00 UTC.
    const NOW: i64 = 1_796_686_200;

    #[test]
    fn the_formats_are_keepalived_s_exactly() {
        assert_eq!(
            parse("2026-12-08 01:00:00Z", NOW),
            Parsed::At {
                time: NOW + 5400,
                date_given: true
            }
        );
        assert_eq!(
            parse("26-12-08 01:00:00Z", NOW),
            Parsed::At {
                time: NOW + 5400,
                date_given: true
            }
        );
        // A time alone: today's, else tomorrow's.
        assert_eq!(
            parse("23:45:00Z", NOW),
            Parsed::At {
                time: NOW + 900,
                date_given: false
            }
        );
        assert_eq!(
            parse("23:00:00Z", NOW),
            Parsed::At {
                time: NOW + 86_400 - 1800,
                date_given: false
            }
        );
        for refused in [" 23:45:00", "23:45", "23:45:00 Z"] {
            assert!(
                matches!(parse(refused, NOW), Parsed::Refused(message) if message.contains("format is incorrect")),
                "{refused}"
            );
        }
        for invalid in [
            "24:00:00",
            "2026-13-01 00:00:00",
            "ab:cd:ef",
            "2026-12-08T01:00:00",
        ] {
            assert!(
                matches!(parse(invalid, NOW), Parsed::Refused(message) if message.contains("invalid")),
                "{invalid}"
            );
        }
        assert!(matches!(
            parse("2027-02-30 00:00:00Z", NOW),
            Parsed::Refused(message) if message.contains("is not valid")
        ));
        assert!(matches!(
            parse("2026-12-07 23:00:00Z", NOW),
            Parsed::Past(_)
        ));
    }

    #[test]
    fn local_time_is_the_process_s() {
        // Whatever the time zone here: a local date and time read back.
        let Parsed::At { time, .. } = parse("2030-06-01 12:00:00", NOW) else {
            panic!("refused");
        };
        assert_eq!(format_local(time), "2030-06-01 12:00:00");
    }
}
