//! Bytes from the wire into `vrrp::Repr::parse`, and what parses into a
//! state machine: must never panic.
//!
//! The first byte picks the IP family and the destination (multicast group
//! or unicast peer); the rest is the VRRP packet. What parses must emit the
//! same bytes again, except the version 3 reserved bits, which keepalived
//! and pulse send as zero.
//!
//! Run from pulse/fuzz (see README.md):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run -s none vrrp_parse -- -max_total_time=120`

#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use pulse::vrrp::machine::{Event, Machine, Received};
use pulse::vrrp::packet::{Family, Kind, Packet, Repr};
use pulse::vrrp::settings::{AuthenticationSettings, GarpSettings, InstanceSettings, Version};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let ipv6 = selector & 1 == 1;
    let unicast = selector & 2 == 2;
    let (source, destination) = if ipv6 {
        let source = IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2));
        let destination = if unicast {
            IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1))
        } else {
            IpAddr::V6(Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x12))
        };
        (source, destination)
    } else {
        let source = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));
        let destination = if unicast {
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1))
        } else {
            IpAddr::V4(Ipv4Addr::new(224, 0, 0, 18))
        };
        (source, destination)
    };
    let Ok(packet) = Packet::new_checked(bytes) else {
        return;
    };
    let repr = match Repr::parse(&packet, &source, &destination) {
        Ok(repr) => repr,
        Err(_) => return,
    };
    let emitted = repr.to_bytes(&source, &destination);
    let mut expected = bytes.to_vec();
    if let Kind::Version3 { .. } = repr.kind {
        // Reserved bits zeroed; the checksum changes with them.
        expected[4] &= 0x0f;
        let mut fixed = Packet::new_unchecked(&mut expected[..]);
        fixed.fill_checksum(&source, &destination);
    }
    // 0xffff and 0x0000 are the same ones'-complement checksum (minus and
    // plus zero): both verify, and pulse, like keepalived, sends 0x0000.
    if expected[6..8] == [0xff, 0xff] && emitted[6..8] == [0, 0] {
        expected[6..8].copy_from_slice(&[0, 0]);
    }
    assert_eq!(emitted, expected);
    assert_eq!(
        Repr::parse(
            &Packet::new_checked(&emitted[..]).unwrap(),
            &source,
            &destination
        ),
        Ok(repr.clone())
    );

    // Through a backup and a master of a matching instance.
    let family = if ipv6 { Family::Ipv6 } else { Family::Ipv4 };
    let settings = InstanceSettings {
        name: "fuzz".into(),
        virtual_router_id: repr.virtual_router_id,
        version: match repr.kind {
            Kind::Version2 { .. } => Version::V2,
            Kind::Version3 { .. } => Version::V3,
        },
        family,
        priority: 100,
        advert_interval: Duration::from_secs(1),
        preempt: selector & 4 == 0,
        preempt_delay: Duration::from_secs(u64::from(selector >> 5)),
        authentication: AuthenticationSettings::None,
        virtual_addresses: Vec::new(),
        unicast_peers: Vec::new(),
        local_address: Some(destination),
        check_unicast_source: false,
        skip_check_advert_addresses: selector & 8 == 8,
        lower_priority_no_advert: selector & 16 == 16,
        higher_priority_send_advert: false,
        down_timer_adverts: 3,
        garp: GarpSettings {
            master_delay: Duration::from_secs(5),
            master_repeat: 5,
            lower_priority_delay: Duration::from_secs(5),
            lower_priority_repeat: 5,
            master_refresh: None,
            master_refresh_repeat: 1,
        },
    };
    let start = Instant::now();
    for owner in [false, true] {
        let mut settings = settings.clone();
        if owner {
            settings.priority = 255;
        }
        let mut machine = Machine::new(settings);
        machine.handle(start, Event::Start);
        let received = Received {
            source,
            destination,
            hop_limit: 255,
            advert: repr.clone(),
        };
        let mut now = start;
        for _ in 0..3 {
            now += Duration::from_millis(700);
            machine.handle(now, Event::Advert(received.clone()));
            if let Some(at) = machine.poll_at() {
                now = now.max(at);
                machine.handle(now, Event::Timer);
            }
        }
    }
});
