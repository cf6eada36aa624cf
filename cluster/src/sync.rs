//! How far a member of the cluster (a Mux, a host agent) is behind the
//! store's policy: the revision it applied against the latest the store
//! holds, and since when it has been behind. Without I/O: the member tells
//! what it read and applied, and when.
//!
//! etcd timestamps nothing, so "since when" counts from when the member
//! first saw the newer revision (a reading, or a watch event writing
//! `policy/revision`); a member cut off from the store sees no newer one,
//! and its own "connected" says so instead.

use std::time::SystemTime;

use crate::etcd_client::WatchResponse;
use crate::schema;

/// A policy revision applied against the store's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PolicySync {
    /// The policy revision applied (none before the first application).
    pub applied: Option<u64>,
    /// The store's latest policy revision seen.
    pub store: Option<u64>,
    /// When the store was first seen with a revision not applied; none in
    /// sync.
    pub behind_since: Option<SystemTime>,
}

impl PolicySync {
    /// The store holds policy `revision` (a reading or a watch event said
    /// so at `now`).
    pub fn saw_store(&mut self, revision: u64, now: SystemTime) {
        if self.store.is_none_or(|store| revision > store) {
            self.store = Some(revision);
        }
        if self.revisions_behind() == 0 {
            self.behind_since = None;
        } else if self.behind_since.is_none() {
            self.behind_since = Some(now);
        }
    }

    /// Policy `revision` is applied, at `now`.
    pub fn applied(&mut self, revision: u64, now: SystemTime) {
        self.applied = Some(revision);
        // What was applied was read from the store: it has it.
        self.saw_store(revision, now);
    }

    /// How many policy revisions the store has that are not applied.
    pub fn revisions_behind(&self) -> u64 {
        match (self.store, self.applied) {
            (Some(store), Some(applied)) => store.saturating_sub(applied),
            // Nothing applied yet: the whole policy is behind.
            (Some(store), None) => store,
            (None, _) => 0,
        }
    }

    /// How long the store has had a revision not applied, at `now`; 0 in
    /// sync.
    pub fn seconds_behind(&self, now: SystemTime) -> f64 {
        self.behind_since.map_or(0.0, |since| {
            now.duration_since(since).unwrap_or_default().as_secs_f64()
        })
    }
}

/// The policy revision a watch response writes, if it writes one.
pub fn policy_revision_in(response: &WatchResponse) -> Option<u64> {
    let key = schema::policy_revision();
    response
        .events()
        .iter()
        .filter_map(|event| event.kv())
        .filter(|kv| kv.key() == key.as_bytes())
        .filter_map(|kv| serde_json::from_slice::<schema::PolicyRevision>(kv.value()).ok())
        .map(|written| written.revision)
        .max()
}
