//! The Mux's `/metrics` without a kernel: a collector's text read by
//! promtool (when installed: Debian's prometheus package), and a taken
//! port refusing the Mux's start before it touches anything.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::process::Command;
use std::time::{Duration, SystemTime};

use pulse::mux::metrics::{ServiceTraffic, Traffic, text};
use pulse::mux::report::{MuxReport, TenantReport};

const PULSE: &str = env!("CARGO_BIN_EXE_pulse");

#[test]
fn promtool_reads_the_collectors_text() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let vip = |last: u8| IpAddr::from([203, 0, 113, last]);
    let mut report = MuxReport::new("172.30.1.2");
    report.connected = true;
    report.applied(
        3,
        vec![TenantReport::new(
            100,
            "tenant-a",
            "fulcrum-vni100",
            &BTreeSet::from([vip(10), vip(11)]),
            &BTreeSet::from([vip(10)]),
        )],
        Duration::from_millis(30),
        now,
    );
    let traffic = Traffic {
        read_at: Some(now),
        services: vec![ServiceTraffic {
            network: "tenant-a".to_owned(),
            service: "203.0.113.10:80/tcp".to_owned(),
            destinations: vec![(
                SocketAddr::new(IpAddr::from([10, 1, 0, 5]), 8080),
                ipvs::Statistics {
                    connections: 4,
                    incoming_packets: 40,
                    incoming_bytes: 4000,
                    ..ipvs::Statistics::default()
                },
            )],
        }],
    };
    let text = text(&report, &traffic, now);
    assert!(
        text.contains("pulse_mux_sync_lag_seconds{mux=\"172.30.1.2\"} 0.0"),
        "{text}"
    );
    if !labkit::prometheus::check_metrics(&text).unwrap() {
        println!("promtool is not installed: the text is not checked by it");
    }
}

#[test]
fn a_taken_metrics_port_refuses_the_muxs_start() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let path = std::env::temp_dir().join(format!("pulse-mux-metrics-{}", std::process::id()));
    std::fs::write(&path, "mux {\n    vtep 192.0.2.1\n}\n").unwrap();
    let output = Command::new(PULSE)
        .arg("-G")
        .arg("-f")
        .arg(&path)
        .arg("--cluster=http://127.0.0.1:9")
        .arg(format!("--metrics={address}"))
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{said}");
    assert!(
        said.contains(&format!("cannot listen on {address} for /metrics")),
        "{said}"
    );
}
