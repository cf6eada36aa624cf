//! A daemon back after a lost connection ends the lease it left behind
//! once its keys are written again under the new one: what it wrote
//! before and no longer writes goes at once, what it wrote again stays.
//! Against a real etcd (labkit starts one; skipped where etcd is not
//! installed).

use std::time::Duration;

use fulcrum_cluster::schema;
use fulcrum_cluster::store::Store;
use labkit::etcd::Etcd;

fn keys(entries: &[(String, Vec<u8>)]) -> Vec<&str> {
    entries.iter().map(|(key, _)| key.as_str()).collect()
}

#[test]
fn the_lease_a_lost_connection_left_behind_is_ended_once_the_keys_are_written_again() {
    if !labkit::installed("etcd") {
        eprintln!("skipped: etcd is not installed");
        return;
    }
    let etcd = Etcd::start(1).unwrap();
    let endpoints: Vec<String> = etcd.urls().split(',').map(str::to_owned).collect();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let kept = schema::host("kept");
        let dropped = schema::host("dropped");
        let value = |name: &str| (name.to_owned(), "{}".to_owned());

        // The first connection writes two keys, then is lost: its lease
        // (a minute) outlives it in the store.
        let mut first = Store::connect(&endpoints, Duration::from_secs(5))
            .await
            .unwrap();
        let old = first.lease(60).await.unwrap();
        first
            .write_live(&[value(&kept), value(&dropped)], &[], &old)
            .await
            .unwrap();
        let mut left_behind = vec![old.id];
        drop(old);
        drop(first);

        // The next one writes one of them again, then ends the old lease.
        let mut second = Store::connect(&endpoints, Duration::from_secs(5))
            .await
            .unwrap();
        let new = second.lease(60).await.unwrap();
        second.write_live(&[value(&kept)], &[], &new).await.unwrap();
        let before = second.read().await.unwrap();
        assert_eq!(keys(&before.entries), [dropped.as_str(), kept.as_str()]);
        second.revoke_left_behind(&mut left_behind).await;
        assert!(left_behind.is_empty());
        let after = second.read().await.unwrap();
        assert_eq!(keys(&after.entries), [kept.as_str()]);

        // A lease that is gone already (expired, or ended before) is no
        // error: it is dropped from the list all the same.
        let mut gone = vec![0x1234_5678];
        second.revoke_left_behind(&mut gone).await;
        assert!(gone.is_empty());
        assert_eq!(keys(&second.read().await.unwrap().entries), [kept.as_str()]);
    });
}
