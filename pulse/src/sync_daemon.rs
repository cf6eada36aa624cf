//! `lvs_sync_daemon`: the kernel's connection synchronisation daemon,
//! which keepalived runs as master while the VRRP instance it names is
//! MASTER and as backup otherwise, so that the backup director knows the
//! connections and a failover keeps them (ipvswrapper.c
//! `ipvs_syncd_master`/`ipvs_syncd_backup`: stop the daemon of the other
//! state, then start this one).

use std::time::Duration;

use fulcrum_config::model as config;
use ipvs::{Client, SyncDaemon, SyncState};
use tokio::sync::oneshot;

/// What the follower's thread is asked.
enum Request {
    /// Run `settings`'s daemon in this state (`None`: none at all).
    Follow(config::LvsSyncDaemon, Option<SyncState>, u8),
    /// Answer once every request before it is carried out.
    Barrier(oneshot::Sender<()>),
}

/// The kernel's sync daemon following one VRRP instance: master while it
/// is MASTER, backup otherwise, none once stopped.
///
/// The IPVS calls run in order on a thread of its own, over one client,
/// and the VRRP loop never waits for them: stopping a sync daemon waits
/// for the kernel's thread to end, which has been seen to take over 30 s
/// in the emulated lab, and adverts must go out meanwhile.
pub struct Follower {
    requests: std::sync::mpsc::Sender<Request>,
}

impl Follower {
    /// Starts the thread with `client` (connected by the caller, so that a
    /// kernel without IPVS is known at start).
    pub fn start(mut client: Client) -> std::io::Result<Follower> {
        let (requests, received) = std::sync::mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("sync-daemon".into())
            .spawn(move || {
                for request in received {
                    let (settings, state, virtual_router_id) = match request {
                        Request::Follow(settings, state, virtual_router_id) => {
                            (settings, state, virtual_router_id)
                        }
                        Request::Barrier(done) => {
                            let _ = done.send(());
                            continue;
                        }
                    };
                    let outcome = match state {
                        Some(state) => {
                            follow(&mut client, &daemon(&settings, state, virtual_router_id))
                        }
                        None => stop(&mut client),
                    };
                    if let Err(error) = outcome {
                        tracing::error!("lvs_sync_daemon: {error}");
                    }
                }
            })?;
        Ok(Follower { requests })
    }

    /// The followed instance entered `state` (`None`: it stopped).
    pub fn follow(
        &self,
        settings: &config::LvsSyncDaemon,
        state: Option<SyncState>,
        virtual_router_id: u8,
    ) {
        let _ = self
            .requests
            .send(Request::Follow(settings.clone(), state, virtual_router_id));
    }

    /// Waits, at most `limit`, until the daemon has followed every state
    /// given so far (at stop: keepalived's daemons stop with it); whether
    /// it did.
    pub async fn settled(&self, limit: Duration) -> bool {
        let (done, settled) = oneshot::channel();
        if self.requests.send(Request::Barrier(done)).is_err() {
            return false;
        }
        matches!(tokio::time::timeout(limit, settled).await, Ok(Ok(())))
    }
}

/// The daemon `settings` describe, in `state`; `virtual_router_id` (the
/// followed instance's) is the sync id unless `id` gives one, as in
/// keepalived.
pub fn daemon(
    settings: &config::LvsSyncDaemon,
    state: SyncState,
    virtual_router_id: u8,
) -> SyncDaemon {
    SyncDaemon {
        state,
        interface: settings.interface.clone(),
        sync_id: u32::from(settings.sync_id.unwrap_or(virtual_router_id)),
        max_length: settings.max_length,
        group: settings.group,
        port: settings.port,
        ttl: settings.ttl,
    }
}

/// Makes the kernel run `wanted` and no daemon of the other state. A
/// daemon already running as wanted is left alone (restarting it would
/// drop sync messages); one in the same state with other settings is
/// restarted.
pub fn follow(client: &mut Client, wanted: &SyncDaemon) -> Result<(), ipvs::Error> {
    let other = match wanted.state {
        SyncState::Master => SyncState::Backup,
        SyncState::Backup => SyncState::Master,
    };
    let running = client.daemons()?;
    if running.iter().any(|daemon| daemon.state == other) {
        tracing::info!("stopping the {other} sync daemon");
        client.stop_daemon(other)?;
    }
    match running.iter().find(|daemon| daemon.state == wanted.state) {
        Some(current) if same_settings(current, wanted) => return Ok(()),
        Some(_) => {
            tracing::info!(
                "restarting the {} sync daemon with new settings",
                wanted.state
            );
            client.stop_daemon(wanted.state)?;
        }
        None => {}
    }
    tracing::info!(
        "starting the {} sync daemon on {} (sync id {})",
        wanted.state,
        wanted.interface,
        wanted.sync_id
    );
    client.start_daemon(wanted)
}

/// Stops both daemons, as keepalived does at stop.
pub fn stop(client: &mut Client) -> Result<(), ipvs::Error> {
    for daemon in client.daemons()? {
        tracing::info!("stopping the {} sync daemon", daemon.state);
        client.stop_daemon(daemon.state)?;
    }
    Ok(())
}

/// The kernel reports its defaults for what was not given (maxlen, port,
/// ttl, group): only what was asked for is compared.
fn same_settings(running: &SyncDaemon, wanted: &SyncDaemon) -> bool {
    running.interface == wanted.interface
        && running.sync_id == wanted.sync_id
        && wanted
            .max_length
            .is_none_or(|length| running.max_length == Some(length))
        && wanted.port.is_none_or(|port| running.port == Some(port))
        && wanted.ttl.is_none_or(|ttl| running.ttl == Some(ttl))
        && wanted
            .group
            .is_none_or(|group| running.group == Some(group))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instance_vrid_is_the_default_sync_id() {
        let loaded = fulcrum_config::load_str(
            "test.conf",
            "global_defs {\n lvs_sync_daemon eth1 VI_1 port 8848\n}\n",
            &Default::default(),
        );
        let settings = loaded.config.global.lvs_sync_daemon.unwrap();
        let master = daemon(&settings, SyncState::Master, 51);
        assert_eq!(master.sync_id, 51);
        assert_eq!(master.port, Some(8848));
        assert_eq!(master.interface, "eth1");
        let with_id = config::LvsSyncDaemon {
            sync_id: Some(7),
            ..settings
        };
        assert_eq!(daemon(&with_id, SyncState::Backup, 51).sync_id, 7);
        // The kernel's defaults do not count as a difference.
        let running = SyncDaemon {
            max_length: Some(1472),
            ttl: Some(1),
            group: Some("224.0.0.81".parse().unwrap()),
            ..master.clone()
        };
        assert!(same_settings(&running, &master));
        assert!(!same_settings(
            &SyncDaemon {
                port: Some(8849),
                ..running
            },
            &master
        ));
    }
}
