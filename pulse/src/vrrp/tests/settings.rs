use std::time::Duration;

use super::captures::*;
use super::settings_of;
use crate::vrrp::packet::Family;
use crate::vrrp::settings::{AuthenticationSettings, Version};
use crate::vrrp::{Machine, Packet, Repr};

/// The adverts the machine builds from the captured configurations are
/// keepalived's, byte for byte.
#[test]
fn adverts_from_the_configuration_are_keepalived_s() {
    for (config, priority, bytes, source, destination) in [
        (V2_CONFIG, 150, &V2_PRIORITY_150[..], SOURCE_V4, GROUP_V4),
        (V2_CONFIG, 0, &V2_PRIORITY_0[..], SOURCE_V4, GROUP_V4),
        (V3_CONFIG, 200, &V3_PRIORITY_200[..], SOURCE_V4, GROUP_V4),
        (V3_CONFIG, 0, &V3_PRIORITY_0[..], SOURCE_V4, GROUP_V4),
        (
            V3_IPV6_CONFIG,
            120,
            &V3_IPV6_PRIORITY_120[..],
            SOURCE_V6,
            GROUP_V6,
        ),
        (
            V3_IPV6_CONFIG,
            0,
            &V3_IPV6_PRIORITY_0[..],
            SOURCE_V6,
            GROUP_V6,
        ),
        (
            V3_UNICAST_CONFIG,
            100,
            &V3_UNICAST_PRIORITY_100[..],
            SOURCE_V4,
            PEER_V4,
        ),
        (
            V3_UNICAST_CONFIG,
            0,
            &V3_UNICAST_PRIORITY_0[..],
            SOURCE_V4,
            PEER_V4,
        ),
    ] {
        let machine = Machine::new(settings_of(config));
        let advert = machine.advert(priority);
        assert_eq!(advert.to_bytes(&source, &destination), bytes);
        assert_eq!(
            Repr::parse(&Packet::new_checked(bytes).unwrap(), &source, &destination),
            Ok(advert)
        );
    }
}

#[test]
fn resolved_values() {
    let settings = settings_of(V2_CONFIG);
    assert_eq!(settings.version, Version::V2);
    assert_eq!(settings.family, Family::Ipv4);
    assert_eq!(settings.virtual_router_id, 51);
    assert_eq!(settings.priority, 150);
    assert_eq!(
        settings.authentication,
        AuthenticationSettings::Password(*b"secret12")
    );
    assert!(settings.preempt);
    assert_eq!(settings.down_timer_adverts, 3);
    assert_eq!(settings.garp.master_delay, Duration::from_secs(5));
    assert_eq!(settings.garp.master_repeat, 5);
    assert_eq!(settings.garp.lower_priority_delay, Duration::from_secs(5));
    assert_eq!(settings.garp.lower_priority_repeat, 5);
    assert_eq!(settings.garp.master_refresh, None);

    let settings = settings_of(V3_CONFIG);
    assert_eq!(settings.version, Version::V3);
    assert_eq!(settings.advert_interval, Duration::from_millis(500));
    assert_eq!(settings.advert_interval_field(), 50);

    let settings = settings_of(V3_UNICAST_CONFIG);
    assert_eq!(settings.local_address, Some(SOURCE_V4));
    assert_eq!(settings.unicast_peers.len(), 1);
    assert_eq!(settings.unicast_peers[0].address, PEER_V4);
}

#[test]
fn instance_values_override_global_ones_and_short_passwords_are_padded() {
    let settings = settings_of(
        "global_defs {
            vrrp_garp_master_delay 2
            vrrp_garp_master_repeat 3
            vrrp_garp_lower_prio_repeat 1
            vrrp_garp_master_refresh 60
        }
        vrrp_instance I {
            interface eth0
            virtual_router_id 7
            nopreempt
            preempt_delay 15
            advert_int 2.4
            garp_master_repeat 4
            down_timer_adverts 5
            authentication {
                auth_type PASS
                auth_pass abc
            }
            virtual_ipaddress {
                10.0.0.1
                fe80::1
            }
        }",
    );
    assert!(!settings.preempt);
    // keepalived resets preempt_delay under nopreempt, and so does the
    // parser.
    assert_eq!(settings.preempt_delay, Duration::ZERO);
    // Version 2: whole seconds.
    assert_eq!(settings.advert_interval, Duration::from_secs(2));
    assert_eq!(settings.down_timer_adverts, 5);
    assert_eq!(settings.garp.master_delay, Duration::from_secs(2));
    assert_eq!(settings.garp.master_repeat, 4);
    assert_eq!(settings.garp.lower_priority_delay, Duration::from_secs(2));
    assert_eq!(settings.garp.lower_priority_repeat, 1);
    assert_eq!(settings.garp.master_refresh, Some(Duration::from_secs(60)));
    assert_eq!(
        settings.authentication,
        AuthenticationSettings::Password(*b"abc\0\0\0\0\0")
    );
    // The advert carries the instance family's addresses only.
    assert_eq!(
        settings.virtual_addresses,
        ["10.0.0.1".parse::<std::net::IpAddr>().unwrap()]
    );
}

/// `vrrp_strict` as keepalived 2.2.7 resolves it: accept mode off, no
/// repeated garps nor adverts to a lower priority, whatever global_defs
/// says; an instance's own `strict_mode off` or values win.
#[test]
fn strict_mode_changes_defaults_as_keepalived_does() {
    let instance = |global: &str, lines: &str| {
        settings_of(&format!(
            "global_defs {{\n    vrrp_garp_lower_prio_repeat 4\n    vrrp_higher_prio_send_advert\n\
             {global}\n}}\nvrrp_instance VI_1 {{\n    interface eth0\n    \
             virtual_router_id 51\n    version 3\n{lines}\n    virtual_ipaddress {{\n        \
             192.0.2.100/24\n    }}\n}}\n"
        ))
    };
    let plain = instance("", "");
    assert!(!plain.strict && plain.accept);
    assert_eq!(plain.garp.lower_priority_repeat, 4);
    assert!(plain.higher_priority_send_advert && !plain.lower_priority_no_advert);
    let strict = instance("    vrrp_strict", "");
    assert!(strict.strict && !strict.accept);
    assert_eq!(strict.garp.lower_priority_repeat, 0);
    assert_eq!(strict.garp.lower_priority_delay, Duration::ZERO);
    assert!(!strict.higher_priority_send_advert && strict.lower_priority_no_advert);
    assert!(instance("    vrrp_strict", "    accept").accept);
    assert!(!instance("", "    no_accept").accept);
    let per_instance = instance("", "    strict_mode on");
    assert!(per_instance.strict && !per_instance.accept);
    let off = instance("    vrrp_strict", "    strict_mode off");
    assert!(!off.strict && off.accept);
}

/// An instance with `lines` added, after a global_defs of `globals`.
fn instance_with(globals: &str, lines: &str) -> crate::vrrp::InstanceSettings {
    settings_of(&format!(
        "global_defs {{\n{globals}}}\nvrrp_instance VI_1 {{\n    interface eth0\n    \
         virtual_router_id 51\n{lines}    virtual_ipaddress {{\n        192.0.2.100\n    }}\n}}\n"
    ))
}

#[test]
fn vrrp_min_garp_sets_what_is_still_keepalived_s_default_where_it_is_written() {
    // One message, no second round, no refresh messages.
    let settings = instance_with("    vrrp_min_garp\n", "");
    assert_eq!(settings.garp.master_repeat, 1);
    assert_eq!(settings.garp.master_delay, Duration::ZERO);
    assert_eq!(settings.garp.master_refresh_repeat, 0);
    assert_eq!(settings.garp.master_refresh, None);
    // The lower priority values follow the global ones (vrrp.c).
    assert_eq!(settings.garp.lower_priority_repeat, 1);
    assert_eq!(settings.garp.lower_priority_delay, Duration::ZERO);
    // A value written before it stays, one after it wins; a value equal to
    // the default before it is overwritten, as keepalived's handler cannot
    // tell it from the default.
    let settings = instance_with(
        "    vrrp_garp_master_repeat 3\n    vrrp_garp_master_delay 5\n    vrrp_min_garp\n    \
         vrrp_garp_master_refresh 10\n",
        "",
    );
    assert_eq!(settings.garp.master_repeat, 3);
    assert_eq!(settings.garp.master_delay, Duration::ZERO);
    assert_eq!(settings.garp.master_refresh, Some(Duration::from_secs(10)));
    // Refreshes then send nothing, as keepalived's.
    assert_eq!(settings.garp.master_refresh_repeat, 0);
    let settings = instance_with("    vrrp_min_garp\n    vrrp_garp_master_repeat 4\n", "");
    assert_eq!(settings.garp.master_repeat, 4);
    // `vrrp_min_garp false` changes nothing; the instance's own values win.
    let settings = instance_with("    vrrp_min_garp false\n", "");
    assert_eq!(settings.garp.master_repeat, 5);
    let settings = instance_with("    vrrp_min_garp\n", "    garp_master_repeat 2\n");
    assert_eq!(settings.garp.master_repeat, 2);
}

#[test]
fn lower_priority_garp_defaults_are_the_global_values_not_the_instance_s() {
    let settings = instance_with("", "    garp_master_repeat 2\n    garp_master_delay 1\n");
    assert_eq!(settings.garp.master_repeat, 2);
    assert_eq!(settings.garp.lower_priority_repeat, 5);
    assert_eq!(settings.garp.lower_priority_delay, Duration::from_secs(5));
}

#[test]
fn garp_extra_if_needs_all_and_an_address_on_another_interface() {
    let elsewhere = "    virtual_ipaddress_excluded {\n        198.51.100.1 dev eth1\n    }\n";
    let extra = |globals: &str, lines: &str| instance_with(globals, lines).garp.extra_interfaces;
    assert_eq!(
        extra("", &format!("    garp_extra_if all 3\n{elsewhere}")),
        Some(Duration::from_secs(3))
    );
    // `all` may come after the delay.
    assert_eq!(
        extra("", &format!("    garp_extra_if 3 all\n{elsewhere}")),
        Some(Duration::from_secs(3))
    );
    // Without `all` only VMAC interfaces count, which pulse has none of.
    assert_eq!(
        extra("", &format!("    garp_extra_if 3\n{elsewhere}")),
        None
    );
    // No address elsewhere: nothing to announce.
    assert_eq!(extra("", "    garp_extra_if all 3\n"), None);
    // The global default, and the instance's 0 turning it off.
    assert_eq!(
        extra("    vrrp_garp_extra_if all 7\n", elsewhere),
        Some(Duration::from_secs(7))
    );
    assert_eq!(
        extra(
            "    vrrp_garp_extra_if all 7\n",
            &format!("    garp_extra_if 0\n{elsewhere}")
        ),
        None
    );
}
