//! The Muxes' choices from what each published of its kernel.

use fulcrum_cluster::store::Reading;

use super::*;

const POLICY_VIP: &str = r#"{"network":"tenant-a","scheduler":"mh","dips":[
    {"address":"10.1.0.5","port":8080,"weight":1},
    {"address":"10.1.0.6","port":8080,"weight":1},
    {"address":"10.1.0.7","port":8080,"weight":1}]}"#;

/// A Mux's service with the DIPs `order` (last octets) in that list order.
fn published(order: &[u8], announced: bool) -> String {
    let destinations: Vec<String> = order
        .iter()
        .map(|octet| {
            format!(r#"{{"address":"10.1.0.{octet}","port":8080,"weight":1,"last_weight":1}}"#)
        })
        .collect();
    format!(
        r#"{{"announced":{announced},"scheduler":"mh","mh_port":true,"mh_fallback":true,"destinations":[{}]}}"#,
        destinations.join(",")
    )
}

fn state_of(entries: &[(&str, String)]) -> State {
    State::of(&Reading {
        store_revision: 7,
        entries: entries
            .iter()
            .map(|(key, value)| (key.to_string(), value.as_bytes().to_vec()))
            .collect(),
    })
}

fn base() -> Vec<(&'static str, String)> {
    vec![
        ("/fulcrum/v1/policy/revision", r#"{"revision":2}"#.into()),
        (
            "/fulcrum/v1/policy/networks/tenant-a",
            r#"{"vni":100}"#.into(),
        ),
        (
            "/fulcrum/v1/policy/vips/203.0.113.10/tcp/80",
            POLICY_VIP.into(),
        ),
        (
            "/fulcrum/v1/policy/vips/203.0.113.11/tcp/80",
            POLICY_VIP.replace("\"mh\"", "\"rr\""),
        ),
        (
            "/fulcrum/v1/live/applied/mux/m1",
            r#"{"revision":2}"#.into(),
        ),
        (
            "/fulcrum/v1/live/applied/mux/m2",
            r#"{"revision":2}"#.into(),
        ),
        (
            "/fulcrum/v1/live/applied/mux/m3",
            r#"{"revision":2}"#.into(),
        ),
    ]
}

/// The base state with VIP A's tables of m1 and m2 (m3 holds none).
fn with_tables(m1: String, m2: String) -> State {
    let mut entries = base();
    entries.push(("/fulcrum/v1/live/muxes/m1/services/203.0.113.10/tcp/80", m1));
    entries.push(("/fulcrum/v1/live/muxes/m2/services/203.0.113.10/tcp/80", m2));
    state_of(&entries)
}

fn client(port: u16) -> SocketAddr {
    SocketAddr::new("172.30.0.2".parse().unwrap(), port)
}

#[test]
fn muxes_with_the_same_table_agree_on_the_dip_the_model_chooses() {
    let state = with_tables(published(&[7, 6, 5], true), published(&[7, 6, 5], false));
    assert!(state.problems.is_empty(), "{:?}", state.problems);
    let answer = answer(&state, client(40_000), None);
    assert!(answer.agree());
    let vip = &answer.vips[0];
    assert!(vip.computed);
    let expected = Lookup::new(
        [7u8, 6, 5]
            .iter()
            .map(|octet| Entry {
                address: SocketAddr::new(IpAddr::from([10, 1, 0, *octet]), 8080),
                weight: 1,
                last_weight: 1,
            })
            .collect(),
    )
    .choose(
        client(40_000),
        Options {
            port: true,
            fallback: true,
        },
    );
    assert!(expected.is_some());
    assert_eq!(vip.muxes[0].chosen, expected);
    assert_eq!(vip.muxes[1].chosen, expected);
    // m3 holds no table for it: shown, not counted.
    assert!(!vip.muxes[2].holds);
    let text = render(&answer);
    assert!(
        text.contains(&format!("  every Mux chooses {}", expected.unwrap())),
        "{text}"
    );
    assert!(text.contains("  m2  "), "{text}");
    assert!(text.contains("(not announcing)"), "{text}");
    assert!(text.contains("  m3  holds no table for it"), "{text}");
    // Round-robin is each Mux's own: not computed, no disagreement.
    assert!(!answer.vips[1].computed);
    assert!(text.contains("only mh chooses alike everywhere"), "{text}");
}

#[test]
fn an_unknown_last_weight_or_no_mux_holding_the_vip_claims_no_agreement() {
    let unknown = published(&[7, 6, 5], true).replacen(r#","last_weight":1"#, "", 1);
    let state = with_tables(published(&[7, 6, 5], true), unknown);
    let answer = answer(&state, client(40_000), Some(state.vips[0].0));
    assert!(!answer.agree());
    assert!(answer.vips[0].muxes[0].known);
    assert!(!answer.vips[0].muxes[1].known);
    let text = render(&answer);
    assert!(
        text.contains("  cannot tell whether the Muxes agree"),
        "{text}"
    );
    assert!(text.contains("last weight is not known"), "{text}");
    let state = state_of(&base());
    let answer = super::answer(&state, client(40_000), Some(state.vips[0].0));
    assert!(!answer.agree());
    assert!(render(&answer).contains("  no Mux holds it"));
}

#[test]
fn a_mux_holding_another_order_disagrees_for_some_clients() {
    let state = with_tables(published(&[7, 6, 5], true), published(&[5, 6, 7], true));
    let only = state.vips[0].0;
    let disagreeing = (40_000..40_600)
        .filter(|port| !answer(&state, client(*port), Some(only)).agree())
        .count();
    assert!(disagreeing > 0, "the list's order is part of mh's table");
    let port = (40_000..40_600)
        .find(|port| !answer(&state, client(*port), Some(only)).agree())
        .unwrap();
    let answer = answer(&state, client(port), Some(only));
    assert_eq!(answer.vips.len(), 1);
    assert!(render(&answer).contains("the Muxes disagree"));
}
