//! What a client has exchanged with the kernel, counted in netlink
//! messages: requests sent, and answers received (replies, dump entries,
//! acknowledgements, refusals, a dump's DONE). A daemon that says how many
//! messages a change cost shows whether its traffic follows the change or
//! the size of the table.

use std::sync::atomic::{AtomicU64, Ordering};

/// A reading of a client's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    pub messages_sent: u64,
    pub messages_received: u64,
}

impl Traffic {
    /// What was exchanged between `earlier` and this reading.
    pub fn since(self, earlier: Traffic) -> Traffic {
        Traffic {
            messages_sent: self.messages_sent.saturating_sub(earlier.messages_sent),
            messages_received: self
                .messages_received
                .saturating_sub(earlier.messages_received),
        }
    }
}

impl std::fmt::Display for Traffic {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{} netlink messages sent, {} received",
            self.messages_sent, self.messages_received
        )
    }
}

/// Shared by the sockets of one client: the readers of a large table run
/// on threads of their own.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    sent: AtomicU64,
    received: AtomicU64,
}

impl Counters {
    pub(crate) fn sent(&self, messages: usize) {
        self.sent.fetch_add(messages as u64, Ordering::Relaxed);
    }

    pub(crate) fn received(&self, messages: usize) {
        self.received.fetch_add(messages as u64, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> Traffic {
        Traffic {
            messages_sent: self.sent.load(Ordering::Relaxed),
            messages_received: self.received.load(Ordering::Relaxed),
        }
    }
}
