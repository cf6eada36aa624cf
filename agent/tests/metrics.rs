//! fulcrum-agent's `/metrics` without a kernel: a collector's text read by
//! promtool (when installed: Debian's prometheus package), and a taken
//! port refusing the start.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::process::Command;
use std::time::{Duration, SystemTime};

use fulcrum_agent::metrics::text;
use fulcrum_agent::report::AgentReport;

const AGENT: &str = env!("CARGO_BIN_EXE_fulcrum-agent");

#[test]
fn promtool_reads_the_collectors_text() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let mut report = AgentReport::new("172.30.3.2");
    report.connected = true;
    report.sync.applied(1, now);
    report.sync.saw_store(2, now);
    report.networks = vec!["tenant-a".to_owned(), "tenant-b".to_owned()];
    report.found = BTreeSet::from([("tenant-b".to_owned(), IpAddr::from([10, 1, 0, 5]))]);
    report.verdict(
        "tenant-b",
        SocketAddr::new(IpAddr::from([10, 1, 0, 5]), 8080),
        true,
        "TCP_CHECK 10.1.0.5:8080: success",
        now,
    );
    report.translations.insert("tenant-b".to_owned(), 1);
    let text = text(&report, now + Duration::from_secs(3));
    assert!(
        text.contains("fulcrum_agent_sync_lag_seconds{host=\"172.30.3.2\"} 3.0"),
        "{text}"
    );
    if !labkit::prometheus::check_metrics(&text).unwrap() {
        println!("promtool is not installed: the text is not checked by it");
    }
}

#[test]
fn a_taken_metrics_port_refuses_the_start() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let path = std::env::temp_dir().join(format!("fulcrum-agent-metrics-{}", std::process::id()));
    std::fs::write(
        &path,
        "host_agent {\n    vtep 192.0.2.21\n}\nvirtual_network tenant-a {\n    vni 100\n    interface br100\n}\n",
    )
    .unwrap();
    let output = Command::new(AGENT)
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
