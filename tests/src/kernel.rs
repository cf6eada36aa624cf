//! What the guest kernel is doing when something waits on it for long.

use std::fmt::Write;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this process already reported (once is enough: a stall blocks
/// every waiter at once, and each report prints the whole kernel log).
static REPORTED: AtomicBool = AtomicBool::new(false);

/// A report of what the kernel is doing: the kernel stack of `waiting` (a
/// process that has waited too long), of every task in uninterruptible
/// sleep, and the stacks the kernel logs for its blocked tasks (`sysrq w`).
/// Only the first call of a process reports; later ones return `None`.
/// Needs root (the guest's tests run as root).
pub fn stall_report(waiting: Option<u32>) -> Option<String> {
    if REPORTED.swap(true, Ordering::Relaxed) {
        return None;
    }
    let mut report = String::new();
    if let Some(pid) = waiting {
        let stack = std::fs::read_to_string(format!("/proc/{pid}/stack")).unwrap_or_default();
        let _ = writeln!(report, "kernel stack of process {pid}:\n{stack}");
    }
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let path = entry.path();
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue;
        };
        // "pid (comm) state ...": the command may hold spaces and
        // parentheses, the state follows the last ')'.
        let Some((head, tail)) = stat.rsplit_once(')') else {
            continue;
        };
        if tail.trim_start().starts_with('D') {
            let stack = std::fs::read_to_string(path.join("stack")).unwrap_or_default();
            let _ = writeln!(report, "uninterruptible: {head}):\n{stack}");
        }
    }
    // "w": the kernel logs the stack of every blocked task.
    let _ = std::fs::write("/proc/sysrq-trigger", "w");
    if let Ok(log) = Command::new("dmesg").output() {
        let log = String::from_utf8_lossy(&log.stdout);
        let lines: Vec<&str> = log.lines().collect();
        // The end of the log: the blocked tasks, and what came before.
        let start = lines.len().saturating_sub(300);
        let _ = writeln!(report, "kernel log (last {} lines):", lines.len() - start);
        for line in &lines[start..] {
            let _ = writeln!(report, "{line}");
        }
    }
    Some(report)
}
