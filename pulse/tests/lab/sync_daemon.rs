//! `lvs_sync_daemon` against the kernel: following a VRRP state starts the
//! daemon of that state and stops the other's, as keepalived does.

use ipvs::{Client, SyncState};
use labkit::Namespace;
use pulse::sync_daemon::{daemon, follow, stop};

#[test]
#[ignore = "runs in the lab"]
fn the_sync_daemon_follows_the_instance_state() {
    labkit::require_lab();
    let namespace = Namespace::create("pulse-syncd").unwrap();
    // The daemon's multicast interface must exist and be up.
    namespace
        .ip("link add sync0 type dummy\nlink set sync0 up\naddr add 10.0.7.1/24 dev sync0\n")
        .unwrap();
    let mut client = namespace.run(Client::connect).unwrap().unwrap();
    let loaded = fulcrum_config::load_str(
        "test.conf",
        "global_defs {\n lvs_sync_daemon sync0 VI_1 port 8848\n}\n",
        &Default::default(),
    );
    let settings = loaded.config.global.lvs_sync_daemon.unwrap();
    let states = |client: &mut Client| -> Vec<(SyncState, u32, Option<u16>)> {
        client
            .daemons()
            .unwrap()
            .into_iter()
            .map(|running| (running.state, running.sync_id, running.port))
            .collect()
    };

    follow(&mut client, &daemon(&settings, SyncState::Backup, 51)).unwrap();
    assert_eq!(states(&mut client), [(SyncState::Backup, 51, Some(8848))]);
    // Again: nothing to do (starting it twice would be EEXIST).
    follow(&mut client, &daemon(&settings, SyncState::Backup, 51)).unwrap();
    follow(&mut client, &daemon(&settings, SyncState::Master, 51)).unwrap();
    assert_eq!(states(&mut client), [(SyncState::Master, 51, Some(8848))]);
    // Another sync id: the master daemon is restarted with it.
    follow(&mut client, &daemon(&settings, SyncState::Master, 52)).unwrap();
    assert_eq!(states(&mut client), [(SyncState::Master, 52, Some(8848))]);
    stop(&mut client).unwrap();
    assert!(states(&mut client).is_empty());
}
