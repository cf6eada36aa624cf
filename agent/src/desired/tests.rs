//! The policy as one host agent sees it.

use fulcrum_config::diagnostic::Severity;
use fulcrum_config::model::CheckerKind;

use super::*;

fn reading(entries: &[(&str, &str)]) -> Reading {
    Reading {
        store_revision: 3,
        entries: entries
            .iter()
            .map(|(key, value)| (key.to_string(), value.as_bytes().to_vec()))
            .collect(),
    }
}

const STORE: &[(&str, &str)] = &[
    ("/fulcrum/v1/policy/revision", r#"{"revision":2}"#),
    ("/fulcrum/v1/policy/networks/tenant-a", r#"{"vni":100}"#),
    ("/fulcrum/v1/policy/networks/tenant-b", r#"{"vni":200}"#),
    (
        "/fulcrum/v1/policy/vips/203.0.113.10/tcp/80",
        r#"{"network":"tenant-a","scheduler":"mh","dips":[
            {"address":"10.1.0.5","port":8080,"weight":1,"probes":[{"type":"HTTP_GET",
             "delay_loop":2,"connect_timeout":1.5,"retry":1,"delay_before_retry":1,"warmup":0,
             "http_protocol":"1.1","urls":[{"path":"/health check","status_codes":[[200,299]]}]}]},
            {"address":"10.1.0.6","port":8080,"weight":1}]}"#,
    ),
    (
        "/fulcrum/v1/policy/vips/203.0.113.20/tcp/80",
        r#"{"network":"tenant-b","scheduler":"mh","dips":[
            {"address":"10.1.0.5","port":8080,"weight":1,"probes":[{"type":"TCP_CHECK",
             "delay_loop":1,"connect_timeout":1,"retry":0,"delay_before_retry":1,"warmup":0}]}]}"#,
    ),
];

fn segment(network: &str, vni: u32, interface: &str) -> Segment {
    Segment {
        network: network.into(),
        vni,
        interface: interface.into(),
        zone: 1,
    }
}

#[test]
fn an_agent_looks_for_its_networks_dips_and_probes_them_on_their_segment() {
    let local = local(
        &reading(STORE),
        &[
            segment("tenant-a", 100, "br100"),
            segment("tenant-c", 300, "br300"),
        ],
    );
    assert_eq!(local.revision, 2);
    assert_eq!(local.segments, [segment("tenant-a", 100, "br100")]);
    assert_eq!(
        local.problems,
        ["network tenant-c is not in the policy: not served"]
    );
    let dips: Vec<String> = local
        .dips
        .iter()
        .map(|(network, address)| format!("{network} {address}"))
        .collect();
    assert_eq!(dips, ["tenant-a 10.1.0.5", "tenant-a 10.1.0.6"]);
    assert_eq!(local.vips.len(), 1);
    let translations: Vec<String> = local
        .translations
        .iter()
        .map(|translation| format!("{} -> {}", translation.vip, translation.dip))
        .collect();
    assert_eq!(
        translations,
        [
            "203.0.113.10:80 -> 10.1.0.5:8080",
            "203.0.113.10:80 -> 10.1.0.6:8080"
        ]
    );
    // Only DIPs found on this host are probed.
    assert_eq!(probes(&local, &BTreeMap::new()), "");
    let found = BTreeMap::from([(
        ("tenant-a".to_owned(), "10.1.0.5".parse().unwrap()),
        [2, 0, 0, 0, 1, 5],
    )]);
    let text = probes(&local, &found);
    // The probes read back as keepalived reads them.
    let loaded =
        fulcrum_config::load_str("probes", &text, &fulcrum_config::lexer::Options::default());
    assert_eq!(
        loaded.diagnostics.count(Severity::Error),
        0,
        "{}\n{}",
        text,
        loaded.diagnostics.render(&loaded.sources)
    );
    let server = &loaded.config.virtual_servers[0];
    assert_eq!(server.real_servers.len(), 1, "{text}");
    let real_server = &server.real_servers[0];
    assert_eq!(
        (real_server.address.to_string(), real_server.port),
        ("10.1.0.5".to_owned(), 8080)
    );
    let checker = &real_server.checkers[0];
    assert_eq!(
        checker.common.connection.bind_interface.as_deref(),
        Some("br100")
    );
    assert_eq!(checker.common.connect_timeout.as_secs_f64(), 1.5);
    assert_eq!(checker.common.delay_loop.as_secs_f64(), 2.0);
    let CheckerKind::Http(http) = &checker.kind else {
        panic!("{:?}", checker.kind);
    };
    assert_eq!(http.urls[0].path.as_deref(), Some("/health check"));
}

#[test]
fn a_network_whose_vni_differs_from_the_policy_is_not_served() {
    let local = local(&reading(STORE), &[segment("tenant-b", 201, "br200")]);
    assert!(local.segments.is_empty());
    assert!(local.dips.is_empty());
    assert_eq!(
        local.problems,
        ["network tenant-b has VNI 200 in the policy, 201 in this agent's file: not served"]
    );
}
