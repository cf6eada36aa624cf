//! The overlay a reading of the store describes.

use super::*;

fn reading(entries: &[(&str, &str)]) -> Reading {
    Reading {
        store_revision: 9,
        entries: entries
            .iter()
            .map(|(key, value)| (key.to_string(), value.as_bytes().to_vec()))
            .collect(),
    }
}

const POLICY: &[(&str, &str)] = &[
    ("/fulcrum/v1/policy/revision", r#"{"revision":4}"#),
    ("/fulcrum/v1/policy/networks/tenant-a", r#"{"vni":100}"#),
    ("/fulcrum/v1/policy/networks/tenant-b", r#"{"vni":200}"#),
    (
        "/fulcrum/v1/policy/vips/203.0.113.10/tcp/80",
        r#"{"network":"tenant-a","scheduler":"mh","dips":[
            {"address":"10.1.0.5","port":8080,"weight":1},
            {"address":"10.1.0.6","port":8080,"weight":2},
            {"address":"10.1.0.7","port":8080,"weight":1},
            {"address":"10.1.0.9","port":8080,"weight":1}]}"#,
    ),
    (
        "/fulcrum/v1/policy/vips/203.0.113.20/tcp/80",
        r#"{"network":"tenant-b","scheduler":"mh","persistence_timeout":300,"dips":[
            {"address":"10.1.0.5","port":8080,"weight":1,"probes":[{"type":"TCP_CHECK",
             "delay_loop":1,"connect_timeout":1,"retry":1,"delay_before_retry":1,
             "warmup":0,"alpha":true}]}]}"#,
    ),
    ("/fulcrum/v1/live/hosts/host1", r#"{"vtep":"192.0.2.21"}"#),
    ("/fulcrum/v1/live/hosts/host2", r#"{"vtep":"192.0.2.22"}"#),
    (
        "/fulcrum/v1/live/dips/host1/tenant-a/10.1.0.5",
        r#"{"vni":100,"mac":"02:00:00:00:01:05"}"#,
    ),
    (
        "/fulcrum/v1/live/dips/host1/tenant-a/10.1.0.6",
        r#"{"vni":100,"mac":"02:00:00:00:01:06"}"#,
    ),
    (
        "/fulcrum/v1/live/dips/host2/tenant-a/10.1.0.7",
        r#"{"vni":100,"mac":"02:00:00:00:01:07"}"#,
    ),
    (
        "/fulcrum/v1/live/dips/host2/tenant-b/10.1.0.5",
        r#"{"vni":200,"mac":"02:00:00:00:02:05"}"#,
    ),
    (
        "/fulcrum/v1/live/health/host1/tenant-a/10.1.0.6/8080",
        r#"{"up":false}"#,
    ),
];

fn destinations(tenant: &Tenant, vip: &str) -> Vec<(String, u32)> {
    let key = ServiceKey::Address {
        protocol: ipvs::Protocol::Tcp,
        address: vip.parse().unwrap(),
        port: 80,
    };
    tenant
        .table
        .service(&key)
        .unwrap()
        .destinations
        .iter()
        .map(|destination| {
            (
                format!("{}:{}", destination.address, destination.port),
                destination.weight,
            )
        })
        .collect()
}

#[test]
fn each_tenant_gets_its_registered_dips_and_serves_those_not_down_a_down_one_at_weight_0_under_mh()
{
    let overlay = overlay(&reading(POLICY));
    assert!(overlay.problems.is_empty(), "{:?}", overlay.problems);
    assert_eq!(overlay.revision, 4);
    let a = &overlay.tenants[&100];
    assert_eq!(a.network, "tenant-a");
    assert_eq!(
        a.vips.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["203.0.113.10"]
    );
    // .9 is registered by no host: not reachable. .6 is reachable but
    // down.
    let reachable: Vec<String> = a.dips.keys().map(ToString::to_string).collect();
    assert_eq!(reachable, ["10.1.0.5", "10.1.0.6", "10.1.0.7"]);
    assert_eq!(
        a.dips[&"10.1.0.7".parse().unwrap()].vtep.to_string(),
        "192.0.2.22"
    );
    // The VIP's scheduler is mh: the down DIP stays, at weight 0, created
    // at its policy weight first (its share of Maglev's table kept).
    assert_eq!(
        destinations(a, "203.0.113.10"),
        [
            ("10.1.0.5:8080".to_owned(), 1),
            ("10.1.0.6:8080".to_owned(), 0),
            ("10.1.0.7:8080".to_owned(), 1)
        ]
    );
    let vip_a = a.table.services.keys().next().copied().unwrap();
    assert_eq!(
        a.creation_weights,
        CreationWeights::from([((vip_a, "10.1.0.6:8080".parse().unwrap()), 2)])
    );
    // The same address in tenant-b is another DIP, behind another host;
    // its probe is alpha and nothing was reported: not served yet.
    let b = &overlay.tenants[&200];
    assert_eq!(b.dips[&"10.1.0.5".parse().unwrap()].mac, [2, 0, 0, 0, 2, 5]);
    assert_eq!(
        destinations(b, "203.0.113.20"),
        [("10.1.0.5:8080".to_owned(), 0)]
    );
    let service = &b.table.services.values().next().unwrap().service;
    assert_eq!(service.timeout, 300);
    assert!(service.flags.contains(ServiceFlags::PERSISTENT));
    let mut up = POLICY.to_vec();
    up.push((
        "/fulcrum/v1/live/health/host2/tenant-b/10.1.0.5/8080",
        r#"{"up":true}"#,
    ));
    let overlay = super::overlay(&reading(&up));
    assert_eq!(
        destinations(&overlay.tenants[&200], "203.0.113.20"),
        [("10.1.0.5:8080".to_owned(), 1)]
    );
}

#[test]
fn a_dip_two_hosts_register_or_whose_host_is_gone_is_not_reachable() {
    let mut entries: Vec<(&str, &str)> = POLICY
        .iter()
        .copied()
        .filter(|(key, _)| *key != "/fulcrum/v1/live/hosts/host2")
        .collect();
    entries.push((
        "/fulcrum/v1/live/dips/host2/tenant-a/10.1.0.5",
        r#"{"vni":100,"mac":"02:00:00:00:09:05"}"#,
    ));
    entries.push((
        "/fulcrum/v1/live/dips/host1/tenant-a/10.1.0.8",
        r#"{"vni":100,"mac":"zz"}"#,
    ));
    let overlay = overlay(&reading(&entries));
    let reachable: Vec<String> = overlay.tenants[&100]
        .dips
        .keys()
        .map(ToString::to_string)
        .collect();
    assert_eq!(reachable, ["10.1.0.6"]);
    let mut problems = overlay.problems.clone();
    problems.sort();
    assert_eq!(
        problems,
        [
            "/fulcrum/v1/live/dips/host1/tenant-a/10.1.0.8: 'zz' is not a MAC address",
            "DIP 10.1.0.5 of network tenant-a is registered by several hosts: host1, host2",
            "DIP 10.1.0.5 of network tenant-b: its host host2 is not registered",
            "DIP 10.1.0.7 of network tenant-a: its host host2 is not registered",
        ]
    );
}

#[test]
fn an_mh_service_falls_back_and_hashes_the_port_unless_persistent() {
    let mut entries = POLICY.to_vec();
    entries.push((
        "/fulcrum/v1/policy/vips/203.0.113.30/tcp/80",
        r#"{"network":"tenant-a","scheduler":"wlc","dips":[
            {"address":"10.1.0.5","port":8080,"weight":1}]}"#,
    ));
    let overlay = overlay(&reading(&entries));
    assert!(overlay.problems.is_empty(), "{:?}", overlay.problems);
    let flags = |vip: &str| {
        let key = ServiceKey::Address {
            protocol: ipvs::Protocol::Tcp,
            address: vip.parse().unwrap(),
            port: 80,
        };
        overlay.tenants[&100]
            .table
            .service(&key)
            .unwrap()
            .service
            .flags
    };
    assert_eq!(
        flags("203.0.113.10"),
        ServiceFlags::SH_FALLBACK | ServiceFlags::SH_PORT
    );
    // Another scheduler is left as written.
    assert_eq!(flags("203.0.113.30"), ServiceFlags::empty());
    // Persistent: the client's address alone is hashed (its connections
    // go to one DIP from every Mux).
    let service = &overlay.tenants[&200]
        .table
        .services
        .values()
        .next()
        .unwrap()
        .service;
    assert_eq!(
        service.flags,
        ServiceFlags::PERSISTENT | ServiceFlags::SH_FALLBACK
    );
}

#[test]
fn under_another_scheduler_a_down_dip_is_not_a_destination() {
    let policy: Vec<(&str, String)> = POLICY
        .iter()
        .map(|(key, value)| {
            (
                *key,
                value.replace(r#""scheduler":"mh""#, r#""scheduler":"wlc""#),
            )
        })
        .collect();
    let entries: Vec<(&str, &str)> = policy
        .iter()
        .map(|(key, value)| (*key, value.as_str()))
        .collect();
    let overlay = overlay(&reading(&entries));
    let a = &overlay.tenants[&100];
    assert_eq!(
        destinations(a, "203.0.113.10"),
        [
            ("10.1.0.5:8080".to_owned(), 1),
            ("10.1.0.7:8080".to_owned(), 1)
        ]
    );
    assert!(a.creation_weights.is_empty());
}

#[test]
fn a_vip_is_announced_while_one_of_its_dips_serves() {
    // tenant-a's VIP has .5 and .7 up; tenant-b's one DIP is not served yet
    // (alpha, nothing reported): not announced.
    let overlay = overlay(&reading(POLICY));
    let announced = |overlay: &Overlay, vni: u32| -> Vec<String> {
        overlay.tenants[&vni]
            .announced
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(announced(&overlay, 100), ["203.0.113.10"]);
    assert!(announced(&overlay, 200).is_empty());
    let mut up = POLICY.to_vec();
    up.push((
        "/fulcrum/v1/live/health/host2/tenant-b/10.1.0.5/8080",
        r#"{"up":true}"#,
    ));
    assert_eq!(
        announced(&super::overlay(&reading(&up)), 200),
        ["203.0.113.20"]
    );
    // Every DIP of tenant-a's VIP down (at weight 0 under mh): withdrawn,
    // its VIP still local and routed (a flow under way still reaches it).
    let mut down = POLICY.to_vec();
    down.push((
        "/fulcrum/v1/live/health/host1/tenant-a/10.1.0.5/8080",
        r#"{"up":false}"#,
    ));
    down.push((
        "/fulcrum/v1/live/health/host2/tenant-a/10.1.0.7/8080",
        r#"{"up":false}"#,
    ));
    let overlay = super::overlay(&reading(&down));
    assert!(announced(&overlay, 100).is_empty());
    assert_eq!(overlay.tenants[&100].vips.len(), 1);
}
