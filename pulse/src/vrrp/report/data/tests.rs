use std::sync::Arc;

use super::super::{Description, InstanceReport, ScriptReport};
use super::*;
use crate::vrrp::machine::{State, Statistics};

/// What keepalived 2.2.7 (Debian 12's) wrote on SIGUSR1 for
/// `keepalived-2.2.7.conf`: both instances masters, `chk_bad` failing.
const SAMPLE: &str = include_str!("keepalived-2.2.7.data");

/// The sample's configuration, its scripts' programs resolved as the
/// daemon's review resolves them (/bin is a link to /usr/bin on Debian).
fn plan() -> Plan {
    let text = include_str!("keepalived-2.2.7.conf").replace("\"/bin/", "\"/usr/bin/");
    Plan::from_config(Arc::new(crate::vrrp::tests::configuration(&text))).unwrap()
}

fn at(seconds: u64, micros: u32) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::new(seconds, micros * 1000)
}

fn link(name: &str, index: u32, ipv4: &[&str], ipv6: &[&str], mac: &str) -> Link {
    let bytes = |text: &str| -> Vec<u8> {
        text.split(':')
            .filter(|pair| !pair.is_empty())
            .map(|pair| u8::from_str_radix(pair, 16).unwrap())
            .collect()
    };
    let loopback = name == "lo";
    Link {
        name: name.to_owned(),
        index,
        ipv4: ipv4
            .iter()
            .map(|address| address.parse().unwrap())
            .collect(),
        ipv6: ipv6
            .iter()
            .map(|address| address.parse().unwrap())
            .collect(),
        hardware_address: bytes(mac),
        broadcast_address: if loopback {
            Vec::new()
        } else {
            bytes("ff:ff:ff:ff:ff:ff")
        },
        flags: if loopback {
            (libc::IFF_UP | libc::IFF_LOOPBACK | libc::IFF_RUNNING) as u32
        } else {
            (libc::IFF_UP | libc::IFF_BROADCAST | libc::IFF_RUNNING | libc::IFF_MULTICAST) as u32
        },
        mtu: if loopback { 65536 } else { 1500 },
        hardware_type: if loopback {
            libc::ARPHRD_LOOPBACK
        } else {
            libc::ARPHRD_ETHER
        },
    }
}

/// The local time's offset from UTC now, in seconds.
fn local_offset() -> i64 {
    let seconds = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as libc::time_t;
    // SAFETY: localtime_r writes the zeroed tm given and reads the time.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&seconds, &mut tm);
        tm
    };
    tm.tm_gmtoff
}

/// The sample's lines but for the local time in parentheses of the two
/// time lines, which keepalived wrote in UTC (this machine's zone): they
/// are compared only where the zone is UTC too.
fn comparable(text: &str) -> String {
    if local_offset() == 0 {
        return text.to_owned();
    }
    text.lines()
        .map(|line| match line.split_once(" (") {
            Some((before, _))
                if line.starts_with("   Last transition")
                    || line.starts_with("   Read timeout") =>
            {
                format!("{before}\n")
            }
            _ => format!("{line}\n"),
        })
        .collect()
}

#[test]
fn the_data_dump_is_keepalived_s() {
    let plan = plan();
    let plan_data = PlanData::of(&plan);
    let descriptions: Vec<Description> = plan
        .instances
        .iter()
        .map(|instance| Description::of(&plan, instance))
        .collect();
    let instance = |position: usize, priority: u8, transition: SystemTime| InstanceReport {
        description: Arc::new(descriptions[position].clone()),
        state: State::Master,
        wanted_state: State::Master,
        effective_priority: priority,
        master_priority: 0,
        master_advert_interval: Duration::from_secs(1),
        last_transition: transition,
        addresses_set: true,
        statistics: Statistics::default(),
    };
    let report = Report {
        instances: vec![
            instance(0, 90, at(1796676731, 39677)),
            instance(1, 50, at(1796676731, 181246)),
        ],
        scripts: vec![
            ScriptReport {
                name: "chk_ok".to_owned(),
                succeeding: Some(true),
            },
            ScriptReport {
                name: "chk_bad".to_owned(),
                succeeding: Some(false),
            },
        ],
        processes: Vec::new(),
    };
    let now = (Instant::now(), at(1796676732, 0));
    let later = |time: SystemTime| now.0 + time.duration_since(now.1).unwrap();
    let moment = |read_timeout: SystemTime, down: u64| InstanceMoment {
        master_address: None,
        master_down_timer: Duration::from_micros(down),
        read_timeout: Some(later(read_timeout)),
        source_address: Some("192.168.77.1".parse().unwrap()),
        sockets: Some((13, 14)),
        interface_index: 3,
        extra_interfaces_at: None,
    };
    let moments = [
        moment(at(1796676733, 39766), 3648437),
        moment(at(1796676733, 181308), 3804687),
    ];
    let links = [
        link("lo", 1, &["127.0.0.1"], &[], ""),
        link(
            "veth1",
            2,
            &[],
            &["fe80::2815:73ff:fe5d:f03c"],
            "2a:15:73:5d:f0:3c",
        ),
        link(
            "veth0",
            3,
            &["192.168.77.1"],
            &["fe80::187b:e3ff:fe3d:9c79"],
            "1a:7b:e3:3d:9c:79",
        ),
    ];
    let mut plan_data = plan_data;
    // keepalived ran as root without a keepalived_script user.
    plan_data.global.script_account = (0, 0);
    for script in &mut plan_data.scripts {
        script.account = (0, 0);
    }
    for instance in &mut plan_data.instances {
        for script in &mut instance.notify_scripts {
            (script.2, script.3) = (0, 0);
        }
    }
    let written = keepalived_data(&Dump {
        report: &report,
        plan: &plan_data,
        moments: &moments,
        links: &links,
        garp_delays: &[],
        now,
    });
    let (written, expected) = (comparable(&written), comparable(SAMPLE));
    for (number, (ours, theirs)) in written.lines().zip(expected.lines()).enumerate() {
        assert_eq!(ours, theirs, "line {}", number + 1);
    }
    assert_eq!(written, expected);
}

#[test]
fn the_sections_follow_keepalived_s_order_and_absences() {
    // Without instances nor scripts: the global definitions and the links
    // only, as keepalived's dump_data_vrrp leaves empty lists out.
    let plan_data = PlanData::default();
    let written = keepalived_data(&Dump {
        report: &Report::default(),
        plan: &plan_data,
        moments: &[],
        links: &[link("lo", 1, &["127.0.0.1"], &[], "")],
        garp_delays: &[],
        now: (Instant::now(), SystemTime::now()),
    });
    let titles: Vec<&str> = written
        .lines()
        .filter(|line| line.starts_with("------<"))
        .collect();
    assert_eq!(
        titles,
        [
            "------< Global definitions >------",
            "------< Interfaces >------"
        ]
    );
}

#[test]
fn printf_s_general_format() {
    assert_eq!(general(5.0), "5");
    assert_eq!(general(2.5), "2.5");
    assert_eq!(general(0.001), "0.001");
    assert_eq!(general(4294.967295), "4294.97");
    assert_eq!(general(120.0), "120");
}
