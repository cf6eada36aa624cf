//! The SDN mode's blocks.

use crate::diagnostic::Severity;
use crate::grammar::tests::check;

fn errors(text: &str) -> Vec<(u32, String)> {
    check(text)
        .1
        .items
        .into_iter()
        .filter(|item| item.severity == Severity::Error)
        .map(|item| (item.span.line, item.message))
        .collect()
}

const TENANT_A: &str = "virtual_server 203.0.113.10 80 {
  protocol TCP
  lb_algo mh
  virtual_network tenant-a
  real_server 10.1.0.5 8080 {
    TCP_CHECK {
      connect_timeout 2
    }
  }
}
";

#[test]
fn a_tenants_virtual_server_keeps_its_network_and_backend_ports() {
    let text = format!(
        "virtual_network tenant-a {{\n  vni 100\n}}\nmux {{\n  vtep 192.0.2.1\n}}\n{TENANT_A}"
    );
    let (config, diagnostics) = check(&text);
    assert!(
        diagnostics
            .items
            .iter()
            .all(|item| item.severity != Severity::Error),
        "{diagnostics:?}"
    );
    assert_eq!(config.virtual_networks.len(), 1);
    assert_eq!(config.virtual_networks[0].vni, 100);
    assert_eq!(config.mux.unwrap().vtep.to_string(), "192.0.2.1");
    let server = &config.virtual_servers[0];
    assert_eq!(server.virtual_network.as_deref(), Some("tenant-a"));
    // NAT, keepalived's default: the real server's port is kept.
    assert_eq!(server.real_servers[0].port, 8080);
}

#[test]
fn a_network_may_be_defined_after_the_servers_in_it() {
    let text = format!("{TENANT_A}virtual_network tenant-a {{\n  vni 100\n}}\n");
    assert_eq!(errors(&text), vec![]);
}

#[test]
fn an_unknown_network_is_an_error_with_a_suggestion() {
    let text = format!("virtual_network tenant-b {{\n  vni 200\n}}\n{TENANT_A}");
    assert_eq!(
        errors(&text),
        vec![(
            7,
            "virtual_network 'tenant-a' is not defined (did you mean 'tenant-b'?)".to_owned()
        )]
    );
    let (config, _) = check(&text);
    assert_eq!(config.virtual_servers[0].virtual_network, None);
    assert_eq!(
        errors(TENANT_A)[0].1,
        "virtual_network 'tenant-a' is not defined: define it with 'virtual_network NAME { vni N }'"
    );
}

#[test]
fn networks_need_a_vni_in_range_and_unique_names_and_vnis() {
    let text = "virtual_network a {\n  vni 0\n}\nvirtual_network b {\n  vni 16777216\n}\n\
                virtual_network c {\n  vni 7\n}\nvirtual_network c {\n  vni 8\n}\n\
                virtual_network d {\n  vni 7\n}\nvirtual_network e {\n}\n";
    assert_eq!(
        errors(text),
        vec![
            (
                2,
                "vni '0' is out of range: expected 1 to 16777215".to_owned()
            ),
            (
                3,
                "virtual_network 'a' has no valid 'vni': it is ignored".to_owned()
            ),
            (
                5,
                "vni '16777216' is out of range: expected 1 to 16777215".to_owned()
            ),
            (
                6,
                "virtual_network 'b' has no valid 'vni': it is ignored".to_owned()
            ),
            (
                10,
                "virtual_network 'c' is defined twice: this one is ignored".to_owned()
            ),
            (
                13,
                "virtual_network 'd' has vni 7, which 'c' has already: this one is ignored"
                    .to_owned()
            ),
            (
                17,
                "virtual_network 'e' has no valid 'vni': it is ignored".to_owned()
            ),
        ]
    );
    let (config, _) = check(text);
    let kept: Vec<_> = config
        .virtual_networks
        .iter()
        .map(|network| (network.name.as_str(), network.vni))
        .collect();
    assert_eq!(kept, [("c", 7)]);
}

#[test]
fn a_tenants_virtual_server_takes_no_method_and_is_an_address() {
    let network = "virtual_network tenant-a {\n  vni 100\n}\n";
    let with_method = TENANT_A.replace("  lb_algo mh\n", "  lb_algo mh\n  lb_kind DR\n");
    let found = errors(&format!("{network}{with_method}"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, 8);
    assert!(found[0].1.contains("takes no 'lb_kind'"), "{found:?}");
    let fwmark = TENANT_A.replace("203.0.113.10 80", "fwmark 7");
    let found = errors(&format!("{network}{fwmark}"));
    assert!(
        found
            .iter()
            .any(|(line, message)| *line == 7 && message.contains("not a fwmark or a group")),
        "{found:?}"
    );
}

#[test]
fn an_endpoint_needs_a_vtep_and_comes_once() {
    let text = "host_agent {\n  vtep 192.0.2.7\n}\nhost_agent {\n  vtep 192.0.2.8\n}\nmux {\n}\n";
    assert_eq!(
        errors(text),
        vec![
            (
                4,
                "'host_agent' is given twice: this one is ignored".to_owned()
            ),
            (
                8,
                "'mux' needs a valid 'vtep' address: it is ignored".to_owned()
            ),
        ]
    );
    let (config, _) = check(text);
    assert_eq!(config.host_agent.unwrap().vtep.to_string(), "192.0.2.7");
    assert!(config.mux.is_none());
}

#[test]
fn a_host_agents_network_names_its_segment() {
    let (config, diagnostics) =
        check("virtual_network tenant-a {\n  vni 100\n  interface br-a\n}\n");
    assert!(diagnostics.items.is_empty(), "{diagnostics:?}");
    assert_eq!(
        config.virtual_networks[0].interface.as_deref(),
        Some("br-a")
    );
}

#[test]
fn a_tenants_probes_are_those_host_agents_run() {
    let network = "virtual_network tenant-a {\n  vni 100\n}\n";
    let misc = TENANT_A.replace(
        "    TCP_CHECK {\n      connect_timeout 2\n    }\n",
        "    MISC_CHECK {\n      misc_path /bin/true\n    }\n",
    );
    let found = errors(&format!("{network}{misc}"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, 8);
    assert!(
        found[0]
            .1
            .ends_with("its MISC_CHECK is not carried to hosts"),
        "{found:?}"
    );
    let http = TENANT_A.replace(
        "    TCP_CHECK {\n      connect_timeout 2\n    }\n",
        "    HTTP_GET {\n      url {\n        path /health\n      }\n    }\n",
    );
    assert_eq!(errors(&format!("{network}{http}")), vec![]);
}

#[test]
fn a_mux_announces_in_its_table_and_waits_its_withdraw_delay() {
    let (config, diagnostics) =
        check("mux {\n  vtep 192.0.2.1\n}\nhost_agent {\n  vtep 192.0.2.2\n}\n");
    assert!(diagnostics.items.is_empty(), "{:?}", diagnostics.items);
    let mux = config.mux.unwrap();
    assert_eq!(
        mux.announce_table,
        Some(crate::model::DEFAULT_ANNOUNCE_TABLE)
    );
    assert_eq!(
        mux.withdraw_delay,
        Some(crate::model::DEFAULT_WITHDRAW_DELAY)
    );
    assert_eq!(config.host_agent.unwrap().announce_table, None);

    let text = "mux {\n  vtep 192.0.2.1\n  announce_table 100\n  withdraw_delay 0.5\n}\n";
    let (config, diagnostics) = check(text);
    assert!(diagnostics.items.is_empty(), "{:?}", diagnostics.items);
    let mux = config.mux.unwrap();
    assert_eq!(mux.announce_table, Some(100));
    assert_eq!(
        mux.withdraw_delay,
        Some(std::time::Duration::from_millis(500))
    );

    let text = "mux {\n  vtep 192.0.2.1\n  announce_table 254\n  withdraw_delay -1\n}\n";
    let messages = errors(text);
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0].0, 3);
    assert!(messages[0].1.contains("254 main"), "{messages:?}");
    assert_eq!(messages[1].0, 4);
    assert_eq!(
        check(text).0.mux.unwrap().announce_table,
        Some(crate::model::DEFAULT_ANNOUNCE_TABLE)
    );
    // A host agent announces nothing.
    let (_, diagnostics) = check("host_agent {\n  vtep 192.0.2.2\n  announce_table 100\n}\n");
    assert_eq!(diagnostics.items.len(), 1, "{:?}", diagnostics.items);
}
