//! The store itself: etcd, through `etcd-client`. Thin effects around the
//! pure parts: [`crate::policy`] says what a policy's keys are,
//! [`crate::status`] what a reading of the store means.

use std::collections::BTreeMap;
use std::time::Duration;

use etcd_client::{Client, Compare, CompareOp, ConnectOptions, GetOptions, Txn, TxnOp};

use crate::policy::Policy;
use crate::schema::{self, PolicyRevision};

/// How many times a policy is read and written again when another writer
/// changed it in between.
const ATTEMPTS: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no cluster store address given")]
    NoEndpoint,
    #[error("cannot reach the cluster store at {endpoints} (no member answered: {failures})")]
    Connect { endpoints: String, failures: String },
    #[error("the cluster store failed to {what}: {}", brief(source))]
    Request {
        what: &'static str,
        source: etcd_client::Error,
    },
    #[error("the store's {key}: {problem}")]
    Contents { key: String, problem: String },
    #[error(
        "the policy changed under this write {ATTEMPTS} times (another writer): nothing was written"
    )]
    Contended,
}

/// What [`Store::apply`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// The policy's revision now (unchanged if nothing was written).
    pub revision: u64,
    /// Keys written and keys deleted; both 0: the store had this policy.
    pub put: usize,
    pub deleted: usize,
}

/// Every key of the schema at one store revision.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// The store's revision the reading was made at.
    pub store_revision: i64,
    pub entries: Vec<(String, Vec<u8>)>,
}

/// A connection to the cluster store.
pub struct Store {
    client: Client,
}

impl Store {
    /// Connects to the members `endpoints` (`http://HOST:PORT` or
    /// `HOST:PORT`, as many as the cluster has).
    pub async fn connect(endpoints: &[String], timeout: Duration) -> Result<Store, StoreError> {
        if endpoints.is_empty() {
            return Err(StoreError::NoEndpoint);
        }
        let options = ConnectOptions::new()
            .with_connect_timeout(timeout)
            .with_timeout(timeout);
        // One member at a time, the first that answers a read: the
        // client's balanced channel over all of them sends a request to a
        // member that is down and fails it ("tcp connect error") rather
        // than try another, and a member without quorum answers nothing.
        let mut failures = Vec::new();
        for endpoint in endpoints {
            let attempt = async {
                let mut client = Client::connect([endpoint], Some(options.clone())).await?;
                client
                    .get(
                        schema::policy_revision(),
                        Some(GetOptions::new().with_count_only()),
                    )
                    .await?;
                Ok::<_, etcd_client::Error>(client)
            };
            match attempt.await {
                Ok(client) => return Ok(Store { client }),
                Err(error) => failures.push(format!("{endpoint}: {}", brief(&error))),
            }
        }
        Err(StoreError::Connect {
            endpoints: endpoints.join(","),
            failures: failures.join("; "),
        })
    }

    /// Makes `policy` the store's, in one transaction that holds only if
    /// no other writer changed the policy since it was read (then it is
    /// read and tried again): keys it no longer has are deleted, keys
    /// whose values differ written, and the revision raised. Nothing is
    /// written when the store has this policy already.
    pub async fn apply(&mut self, policy: &Policy) -> Result<Written, StoreError> {
        let revision_key = schema::policy_revision();
        for _ in 0..ATTEMPTS {
            let response = self
                .client
                .get(
                    schema::policy_prefix(),
                    Some(GetOptions::new().with_prefix()),
                )
                .await
                .map_err(request("read the policy"))?;
            let mut current = BTreeMap::new();
            let mut revision = PolicyRevision { revision: 0 };
            let mut revision_written_at = 0;
            for entry in response.kvs() {
                let key = String::from_utf8_lossy(entry.key()).into_owned();
                if key == revision_key {
                    revision = serde_json::from_slice(entry.value()).map_err(|error| {
                        StoreError::Contents {
                            key: key.clone(),
                            problem: format!("not a policy revision ({error})"),
                        }
                    })?;
                    revision_written_at = entry.mod_revision();
                } else {
                    current.insert(key, entry.value().to_vec());
                }
            }
            let deletes: Vec<&String> = current
                .keys()
                .filter(|key| !policy.entries.contains_key(*key))
                .collect();
            let puts: Vec<(&String, &String)> = policy
                .entries
                .iter()
                .filter(|(key, value)| {
                    current.get(*key).map(Vec::as_slice) != Some(value.as_bytes())
                })
                .collect();
            if deletes.is_empty() && puts.is_empty() {
                return Ok(Written {
                    revision: revision.revision,
                    put: 0,
                    deleted: 0,
                });
            }
            let next = PolicyRevision {
                revision: revision.revision + 1,
            };
            let mut operations: Vec<TxnOp> = deletes
                .iter()
                .map(|key| TxnOp::delete(key.as_str(), None))
                .collect();
            operations.extend(
                puts.iter()
                    .map(|(key, value)| TxnOp::put(key.as_str(), value.as_str(), None)),
            );
            operations.push(TxnOp::put(
                revision_key.as_str(),
                schema::to_json(&next),
                None,
            ));
            // A key that does not exist compares with revision 0.
            let transaction = Txn::new()
                .when([Compare::mod_revision(
                    revision_key.as_str(),
                    CompareOp::Equal,
                    revision_written_at,
                )])
                .and_then(operations);
            let outcome = self
                .client
                .txn(transaction)
                .await
                .map_err(request("write the policy"))?;
            if outcome.succeeded() {
                return Ok(Written {
                    revision: next.revision,
                    put: puts.len(),
                    deleted: deletes.len(),
                });
            }
        }
        Err(StoreError::Contended)
    }

    /// Every key of the schema, read at one revision of the store.
    pub async fn read(&mut self) -> Result<Reading, StoreError> {
        let response = self
            .client
            .get(schema::ROOT, Some(GetOptions::new().with_prefix()))
            .await
            .map_err(request("read the cluster's state"))?;
        Ok(Reading {
            store_revision: response.header().map_or(0, |header| header.revision()),
            entries: response
                .kvs()
                .iter()
                .map(|entry| {
                    (
                        String::from_utf8_lossy(entry.key()).into_owned(),
                        entry.value().to_vec(),
                    )
                })
                .collect(),
        })
    }

    /// Watches every key of the schema from store revision `from` on
    /// (inclusive). A revision compacted away ends the watch with
    /// [`etcd_client::WatchResponse::compact_revision`] set: the watcher
    /// then reads the whole store again.
    pub async fn watch(&mut self, from: i64) -> Result<etcd_client::WatchStream, StoreError> {
        self.client
            .watch(
                schema::ROOT,
                Some(
                    etcd_client::WatchOptions::new()
                        .with_prefix()
                        .with_start_revision(from),
                ),
            )
            .await
            .map_err(request("watch the cluster's state"))
    }

    /// A lease of `ttl` seconds, for a daemon's live keys, and what keeps
    /// it alive.
    pub async fn lease(&mut self, ttl: i64) -> Result<Lease, StoreError> {
        let granted = self
            .client
            .lease_grant(ttl, None)
            .await
            .map_err(request("grant a lease"))?;
        let (keeper, answers) = self
            .client
            .lease_keep_alive(granted.id())
            .await
            .map_err(request("keep a lease alive"))?;
        let (lost_sender, lost) = tokio::sync::oneshot::channel();
        let every = Duration::from_millis((ttl.max(1) as u64) * 1000 / 3);
        let keeper = tokio::spawn(keep(keeper, answers, every, lost_sender));
        Ok(Lease {
            id: granted.id(),
            keeper,
            lost,
        })
    }

    /// Writes a live key under `lease`.
    pub async fn put_live(
        &mut self,
        key: &str,
        value: &impl serde::Serialize,
        lease: &Lease,
    ) -> Result<(), StoreError> {
        let value = schema::to_json(value);
        self.client
            .put(
                key,
                value,
                Some(etcd_client::PutOptions::new().with_lease(lease.id)),
            )
            .await
            .map_err(request("write a live key"))?;
        Ok(())
    }

    /// Deletes `deletes` and writes `puts` (key, value) under `lease`, in
    /// that order, in as few transactions as the store allows (at most
    /// [`MAX_TRANSACTION`] operations and [`MAX_TRANSACTION_BYTES`] each;
    /// one when they fit, so that a reader sees all of a small change or
    /// none of it): an agent's keys, written again on reconnecting, are
    /// one round trip, not one per key, well within the lease's life. The
    /// last put is in the last transaction: a writer puts its applied
    /// revision last, so that it is never seen before what it covers.
    pub async fn write_live(
        &mut self,
        puts: &[(String, String)],
        deletes: &[String],
        lease: &Lease,
    ) -> Result<(), StoreError> {
        let options = etcd_client::PutOptions::new().with_lease(lease.id);
        let operations = deletes
            .iter()
            .map(|key| (key.len(), TxnOp::delete(key.as_str(), None)))
            .chain(puts.iter().map(|(key, value)| {
                (
                    key.len() + value.len(),
                    TxnOp::put(key.as_str(), value.as_str(), Some(options.clone())),
                )
            }));
        let mut chunk = Vec::new();
        let mut bytes = 0;
        for (size, operation) in operations {
            if !chunk.is_empty()
                && (chunk.len() == MAX_TRANSACTION || bytes + size > MAX_TRANSACTION_BYTES)
            {
                self.client
                    .txn(Txn::new().and_then(std::mem::take(&mut chunk)))
                    .await
                    .map_err(request("write live keys"))?;
                bytes = 0;
            }
            chunk.push(operation);
            bytes += size;
        }
        if !chunk.is_empty() {
            self.client
                .txn(Txn::new().and_then(chunk))
                .await
                .map_err(request("write live keys"))?;
        }
        Ok(())
    }

    /// Deletes a live key (one whose object is gone before its writer's
    /// lease).
    pub async fn delete(&mut self, key: &str) -> Result<(), StoreError> {
        self.client
            .delete(key, None)
            .await
            .map_err(request("delete a live key"))?;
        Ok(())
    }

    /// Ends the lease `lease` (its id): its keys go at once. A clean stop
    /// ends its own; a daemon back after a lost connection ends the one it
    /// left behind once its keys are written again under the new one, so
    /// what it no longer writes goes at once rather than when that lease
    /// expires (etcd keeps a lease through its own restart, renewed).
    pub async fn revoke(&mut self, lease: i64) -> Result<(), StoreError> {
        self.client
            .lease_revoke(lease)
            .await
            .map_err(request("revoke a lease"))?;
        Ok(())
    }

    /// Ends the leases `left_behind` by lost connections, once a daemon's
    /// keys are written again under its new lease: what it no longer
    /// writes (a DIP the policy dropped meanwhile) goes now, not when they
    /// expire. Each is tried once: one that expired is gone already, and
    /// one the store cannot end now expires in its time.
    pub async fn revoke_left_behind(&mut self, left_behind: &mut Vec<i64>) {
        for lease in left_behind.drain(..) {
            if let Err(error) = self.revoke(lease).await {
                tracing::debug!("lease {lease:x}, left behind: {error}");
            }
        }
    }

    /// The underlying client, for what this module does not wrap.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// A lease on the store and its keep-alive stream.
pub struct Lease {
    pub id: i64,
    /// The task renewing it, aborted when the lease is dropped.
    keeper: tokio::task::JoinHandle<()>,
    /// Why the keeper stopped: the lease expired, or the store failed.
    lost: tokio::sync::oneshot::Receiver<String>,
}

impl Lease {
    /// Waits until the lease is lost (expired, or not renewed: the store
    /// failed), and says why.
    pub async fn lost(&mut self) -> String {
        match (&mut self.lost).await {
            Ok(reason) => reason,
            Err(_) => "the lease's keeper stopped".into(),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.keeper.abort();
    }
}

/// Renews a lease every `every` (a third of its life) until it is lost,
/// on a task of its own: a slow step of its holder's loop (a kernel
/// change, a probe reloaded) never starves it.
async fn keep(
    mut keeper: etcd_client::LeaseKeeper,
    mut answers: etcd_client::LeaseKeepAliveStream,
    every: Duration,
    lost: tokio::sync::oneshot::Sender<String>,
) {
    let reason = loop {
        tokio::time::sleep(every).await;
        if let Err(error) = keeper.keep_alive().await {
            break format!("cannot renew the lease: {error}");
        }
        match answers.message().await {
            Ok(Some(answer)) if answer.ttl() > 0 => {}
            Ok(Some(_)) => break "the lease expired".to_owned(),
            Ok(None) => break "the store closed the lease's stream".to_owned(),
            Err(error) => break format!("cannot renew the lease: {error}"),
        }
    };
    let _ = lost.send(reason);
}

/// etcd's default limit of operations in one transaction
/// (`--max-txn-ops`).
pub const MAX_TRANSACTION: usize = 128;

/// The bytes of keys and values one transaction of [`Store::write_live`]
/// carries at most: etcd refuses a request over 1.5 MiB
/// (`--max-request-bytes`), and a large VIP's published table is tens of
/// kilobytes.
pub const MAX_TRANSACTION_BYTES: usize = 1024 * 1024;

/// Maps a client error to [`StoreError::Request`] saying what failed.
fn request(what: &'static str) -> impl FnOnce(etcd_client::Error) -> StoreError {
    move |source| StoreError::Request { what, source }
}

/// Whether `response` reports a change that a daemon's desired state can
/// depend on: any event but those on the daemons' own bookkeeping
/// (`live/applied/...`, `live/muxes/...`), which no Mux or agent reads to
/// decide anything. Each Mux and agent writes that bookkeeping after it
/// applies a change, so a watcher woken by it would read, apply and write
/// again, and wake the others: with several daemons, without end.
pub fn changes_state(response: &etcd_client::WatchResponse) -> bool {
    let applied = format!("{}live/applied/", schema::ROOT);
    let muxes = format!("{}live/muxes/", schema::ROOT);
    response.events().iter().any(|event| {
        event.kv().is_none_or(|kv| {
            let key = kv.key();
            !key.starts_with(applied.as_bytes()) && !key.starts_with(muxes.as_bytes())
        })
    })
}

/// Why the store ended a watch, if `response` says it did: a watcher then
/// reads the whole store again (a compacted revision is never guessed at).
pub fn watch_ended(response: &etcd_client::WatchResponse) -> Option<String> {
    if response.canceled() || response.compact_revision() > 0 {
        Some(format!(
            "the store ended the watch (compacted to {}{})",
            response.compact_revision(),
            match response.cancel_reason() {
                "" => String::new(),
                reason => format!(": {reason}"),
            }
        ))
    } else {
        None
    }
}

/// `URL[,URL...]` as the list of members.
pub fn endpoints(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|endpoint| !endpoint.is_empty())
        .map(str::to_owned)
        .collect()
}

/// An etcd client error in a line: a gRPC status's code and message
/// (its `Display` adds the transport's whole chain of sources).
fn brief(error: &etcd_client::Error) -> String {
    match error {
        etcd_client::Error::GRpcStatus(status) => {
            format!("{} ({:?})", status.message(), status.code())
        }
        other => other.to_string(),
    }
}
