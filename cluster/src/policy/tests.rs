//! A policy file as the store's keys.

use fulcrum_config::diagnostic::Severity;
use fulcrum_config::lexer::Options;

use super::*;

const POLICY: &str = "virtual_network tenant-a {
    vni 100
}
virtual_network tenant-b {
    vni 200
}
virtual_server 203.0.113.10 80 {
    protocol TCP
    lb_algo mh
    delay_loop 2
    virtual_network tenant-a
    real_server 10.1.0.5 8080 {
        weight 3
        TCP_CHECK {
            connect_timeout 1
        }
    }
    real_server 10.1.0.6 8080 {
        HTTP_GET {
            url {
                path /health
                status_code 200
            }
        }
    }
}
virtual_server 203.0.113.20 80 {
    protocol TCP
    lb_algo mh
    virtual_network tenant-b
    real_server 10.1.0.5 8080 {
    }
}
";

fn load(text: &str) -> fulcrum_config::Loaded {
    let loaded = fulcrum_config::load_str("policy.conf", text, &Options::default());
    assert_eq!(
        loaded.diagnostics.count(Severity::Error),
        0,
        "{}",
        loaded.diagnostics.render(&loaded.sources)
    );
    loaded
}

#[test]
fn a_policy_is_its_networks_and_vips_with_resolved_probes() {
    let policy = of(&load(POLICY).config).unwrap();
    assert_eq!((policy.networks, policy.vips, policy.dips), (2, 2, 3));
    let keys: Vec<&str> = policy.entries.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "/fulcrum/v1/policy/networks/tenant-a",
            "/fulcrum/v1/policy/networks/tenant-b",
            "/fulcrum/v1/policy/vips/203.0.113.10/tcp/80",
            "/fulcrum/v1/policy/vips/203.0.113.20/tcp/80",
        ]
    );
    assert_eq!(
        policy.entries["/fulcrum/v1/policy/networks/tenant-b"],
        r#"{"vni":200}"#
    );
    let vip: Vip =
        serde_json::from_str(&policy.entries["/fulcrum/v1/policy/vips/203.0.113.10/tcp/80"])
            .unwrap();
    assert_eq!(vip.network, "tenant-a");
    assert_eq!(vip.scheduler, "mh");
    assert_eq!(vip.dips.len(), 2);
    assert_eq!(
        (vip.dips[0].address.to_string(), vip.dips[0].port),
        ("10.1.0.5".to_owned(), 8080)
    );
    assert_eq!(vip.dips[0].weight, 3);
    // The virtual server's delay_loop, inherited as keepalived resolves it.
    let Probe::Tcp { timing } = &vip.dips[0].probes[0] else {
        panic!("{:?}", vip.dips[0].probes);
    };
    assert_eq!((timing.delay_loop, timing.connect_timeout), (2.0, 1.0));
    let Probe::Http { http, .. } = &vip.dips[1].probes[0] else {
        panic!("{:?}", vip.dips[1].probes);
    };
    assert_eq!(http.urls[0].path.as_deref(), Some("/health"));
    assert_eq!(http.urls[0].status_codes, [[200, 200]]);
    // No probe: up while found.
    let other: Vip =
        serde_json::from_str(&policy.entries["/fulcrum/v1/policy/vips/203.0.113.20/tcp/80"])
            .unwrap();
    assert!(other.dips[0].probes.is_empty());
}

#[test]
fn a_server_of_the_lvs_mode_is_no_policy() {
    let text = format!(
        "{POLICY}virtual_server 10.0.0.1 80 {{\n    protocol TCP\n    real_server 10.0.0.2 80 {{\n    }}\n}}\n"
    );
    let errors = of(&load(&text).config).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].span.line, 34);
    assert!(errors[0].message.contains("names no 'virtual_network'"));
}

#[test]
fn what_the_store_cannot_carry_is_an_error_where_it_was_written() {
    let text = POLICY.replace(
        "                status_code 200\n",
        "                status_code 200\n                regex \"ok\"\n",
    );
    let errors = of(&load(&text).config).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].span.line, 7);
    assert!(errors[0].message.contains("'regex'"));
}
