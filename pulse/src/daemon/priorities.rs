//! The process settings keepalived gives its VRRP and checker children
//! (lib/process.c `set_process_priorities`): `vrrp_priority` and
//! `checker_priority`, a nice value; `vrrp_no_swap` and `checker_no_swap`,
//! the memory locked (`mlockall`). pulse is one process for both halves,
//! so:
//!
//! - the nice value is the lowest (the most favoured) of the halves that
//!   run ([`Parts`](super::Parts): VRRP with instances and not `-C`, the
//!   checkers with virtual servers and not `-P`); none given, pulse's stays;
//! - the memory is locked when a half that runs asks for it;
//! - they are set once, before the runtime's threads start (Linux keeps a
//!   nice value per thread, and a new thread takes its creator's), as
//!   keepalived sets them once when a child starts: a reload does not
//!   change them;
//! - scripts start with the nice value pulse had before
//!   (fulcrum_scripts::run::set_script_priority), as keepalived's children
//!   put theirs back before they run one (notify.c).
//!
//! Not done: `vrrp_rt_priority`, `checker_rt_priority` (a real-time
//! scheduling class) and the `*_rlimit_rttime` limits that go with them.

use fulcrum_config::model as config;

/// What pulse sets for itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Priorities {
    /// A nice value, -20..19; `None`: left as it is.
    pub nice: Option<i32>,
    /// Lock the process's memory (`MCL_CURRENT | MCL_FUTURE`).
    pub lock_memory: bool,
}

impl Priorities {
    /// From the configuration, for the halves that run.
    pub fn of(configuration: &config::Config, vrrp: bool, checkers: bool) -> Priorities {
        let global = &configuration.global;
        let mut nice = None;
        let mut lock_memory = false;
        if vrrp {
            nice = global.vrrp.priority;
            lock_memory |= global.vrrp.no_swap;
        }
        if checkers {
            nice = match (nice, global.checker_priority) {
                (Some(vrrp), Some(checkers)) => Some(vrrp.min(checkers)),
                (either, other) => either.or(other),
            };
            lock_memory |= global.checker_no_swap;
        }
        Priorities { nice, lock_memory }
    }

    /// Sets them for this thread (and the threads it starts after) and
    /// the process, logging what the kernel refuses with keepalived's
    /// words; scripts keep the nice value there was.
    pub fn apply(self) {
        if let Some(nice) = self.nice {
            // SAFETY: plain system calls on this thread.
            let before = unsafe {
                *libc::__errno_location() = 0;
                libc::getpriority(libc::PRIO_PROCESS, 0)
            };
            fulcrum_scripts::run::set_script_priority(before);
            if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } == -1 {
                tracing::warn!(
                    "Unable to set process priority to {nice} - errno {}",
                    std::io::Error::last_os_error()
                );
            }
        }
        if self.lock_memory && unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) } == -1
        {
            tracing::warn!(
                "Unable to lock process in memory - {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configuration(text: &str) -> config::Config {
        fulcrum_config::load_str("keepalived.conf", text, &Default::default()).config
    }

    #[test]
    fn the_halves_that_run_give_the_settings() {
        let both = configuration(
            "global_defs {\n  vrrp_priority -5\n  vrrp_no_swap\n  checker_priority -10\n}\n",
        );
        assert_eq!(
            Priorities::of(&both, true, true),
            Priorities {
                nice: Some(-10),
                lock_memory: true
            }
        );
        assert_eq!(
            Priorities::of(&both, true, false),
            Priorities {
                nice: Some(-5),
                lock_memory: true
            }
        );
        assert_eq!(
            Priorities::of(&both, false, true),
            Priorities {
                nice: Some(-10),
                lock_memory: false
            }
        );
        assert_eq!(Priorities::of(&both, false, false), Priorities::default());
        let checkers = configuration("global_defs {\n  checker_no_swap\n}\n");
        assert_eq!(
            Priorities::of(&checkers, true, true),
            Priorities {
                nice: None,
                lock_memory: true
            }
        );
    }
}
