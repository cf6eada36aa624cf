//! A reading of the store as the cluster's status.

use super::*;

fn reading(entries: &[(&str, &str)]) -> Reading {
    Reading {
        store_revision: 42,
        entries: entries
            .iter()
            .map(|(key, value)| (key.to_string(), value.as_bytes().to_vec()))
            .collect(),
    }
}

const VIP: &str = r#"{"network":"tenant-a","scheduler":"mh","dips":[
    {"address":"10.1.0.5","port":8080,"weight":1},
    {"address":"10.1.0.6","port":8080,"weight":2},
    {"address":"10.1.0.7","port":8080,"weight":1}]}"#;

#[test]
fn dips_are_shown_with_their_host_and_health_and_writers_with_their_revisions() {
    let status = of(&reading(&[
        ("/fulcrum/v1/policy/revision", r#"{"revision":3}"#),
        ("/fulcrum/v1/policy/networks/tenant-a", r#"{"vni":100}"#),
        ("/fulcrum/v1/policy/vips/203.0.113.10/tcp/80", VIP),
        ("/fulcrum/v1/live/hosts/host1", r#"{"vtep":"192.0.2.21"}"#),
        ("/fulcrum/v1/live/hosts/host2", r#"{"vtep":"192.0.2.22"}"#),
        (
            "/fulcrum/v1/live/dips/host1/tenant-a/10.1.0.5",
            r#"{"vni":100,"mac":"02:00:00:00:00:05"}"#,
        ),
        (
            "/fulcrum/v1/live/dips/host1/tenant-a/10.1.0.6",
            r#"{"vni":100,"mac":"02:00:00:00:00:06"}"#,
        ),
        (
            "/fulcrum/v1/live/health/host1/tenant-a/10.1.0.5/8080",
            r#"{"up":true}"#,
        ),
        (
            "/fulcrum/v1/live/health/host1/tenant-a/10.1.0.6/8080",
            r#"{"up":false}"#,
        ),
        ("/fulcrum/v1/live/applied/agent/host1", r#"{"revision":3}"#),
        ("/fulcrum/v1/live/applied/mux/mux1", r#"{"revision":2}"#),
        ("/fulcrum/v1/live/applied/mux/mux2", r#"{"revision":3}"#),
        (
            "/fulcrum/v1/live/muxes/mux1/services/203.0.113.10/tcp/80",
            r#"{"announced":true,"scheduler":"mh","destinations":[]}"#,
        ),
        (
            "/fulcrum/v1/live/muxes/mux2/services/203.0.113.10/tcp/80",
            r#"{"announced":false,"scheduler":"mh","destinations":[]}"#,
        ),
    ]));
    assert!(status.problems.is_empty(), "{:?}", status.problems);
    let text = render(&status);
    assert_eq!(
        text,
        "cluster store revision 42, policy revision 3 (schema v1)

networks
  tenant-a  vni 100

VIPs
  203.0.113.10:80/tcp  tenant-a  mh  announced by mux1
    10.1.0.5:8080  weight 1  host1  up
    10.1.0.6:8080  weight 2  host1  down
    10.1.0.7:8080  weight 1  not found on any host  unknown

hosts
  host1  vtep 192.0.2.21  2 DIPs  applied revision 3
  host2  vtep 192.0.2.22  0 DIPs  applied nothing yet

muxes
  mux1  applied revision 2 (behind 3)
  mux2  applied revision 3
"
    );
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["vips"][0]["dips"][1]["health"], "down");
    assert_eq!(json["muxes"][0]["applied"], 2);
    assert_eq!(json["vips"][0]["announced_by"], serde_json::json!(["mux1"]));
}

#[test]
fn what_the_schema_cannot_read_is_a_problem_named_by_its_key() {
    let status = of(&reading(&[
        ("/fulcrum/v1/policy/revision", r#"{"revision":1}"#),
        ("/fulcrum/v1/policy/networks/tenant-a", r#"{"vni":"many"}"#),
        ("/fulcrum/v1/policy/vips/203.0.113.10/tcp/80", VIP),
        ("/fulcrum/v1/policy/vips/not-an-address/tcp/80", VIP),
        (
            "/fulcrum/v1/live/dips/host1/tenant-a/10.1.0.5",
            r#"{"vni":100,"mac":"x"}"#,
        ),
        (
            "/fulcrum/v1/live/dips/host2/tenant-a/10.1.0.5",
            r#"{"vni":100,"mac":"y"}"#,
        ),
    ]));
    assert_eq!(status.vips.len(), 1);
    assert_eq!(status.problems.len(), 4, "{:?}", status.problems);
    assert!(
        status.problems[0].starts_with("/fulcrum/v1/policy/networks/tenant-a: unreadable value")
    );
    assert_eq!(
        status.problems[1],
        "/fulcrum/v1/policy/vips/not-an-address/tcp/80: 'not-an-address' is not an IP address"
    );
    assert_eq!(
        status.problems[2],
        "DIP 10.1.0.5 of network tenant-a is found on several hosts: host1, host2"
    );
    assert_eq!(
        status.problems[3],
        "/fulcrum/v1/policy/vips/203.0.113.10/tcp/80: its network 'tenant-a' is not in the policy"
    );
}
