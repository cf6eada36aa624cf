//! `pulse --cluster URLS --apply FILE` and `--status` against a real etcd
//! (labkit starts Debian's etcd-server on this machine's loopback: the
//! store needs no IPVS, so these tests need no lab).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use fulcrum_cluster::store::{Reading, Store, endpoints};
use labkit::etcd::Etcd;

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
        TCP_CHECK {
            connect_timeout 1
        }
    }
    real_server 10.1.0.6 8080 {
        TCP_CHECK {
            connect_timeout 1
        }
    }
}
virtual_server 203.0.113.20 80 {
    protocol TCP
    lb_algo mh
    virtual_network tenant-b
    real_server 10.1.0.5 8080 {
        TCP_CHECK {
            connect_timeout 1
        }
    }
}
";

struct Files {
    directory: PathBuf,
}

impl Files {
    fn new(name: &str) -> Files {
        let directory =
            std::env::temp_dir().join(format!("fulcrum-cluster-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        Files { directory }
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.directory.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.directory);
    }
}

fn pulse(arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pulse"))
        .args(arguments)
        .output()
        .expect("pulse runs")
}

fn apply(etcd: &Etcd, file: &Path) -> Output {
    pulse(&[
        &format!("--cluster={}", etcd.urls()),
        "--apply",
        file.to_str().unwrap(),
    ])
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn read(etcd: &Etcd) -> Reading {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let mut store = Store::connect(&endpoints(&etcd.urls()), Duration::from_secs(5))
                .await
                .unwrap();
            store.read().await.unwrap()
        })
}

fn keys(reading: &Reading) -> Vec<String> {
    reading.entries.iter().map(|(key, _)| key.clone()).collect()
}

fn put(etcd: &Etcd, key: &str, value: &str) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let mut store = Store::connect(&endpoints(&etcd.urls()), Duration::from_secs(5))
                .await
                .unwrap();
            store.client().put(key, value, None).await.unwrap();
        });
}

#[test]
fn a_policy_is_written_whole_changed_by_its_difference_and_shown() {
    let etcd = Etcd::start(1).unwrap();
    let files = Files::new("apply");
    let first = files.write("policy.conf", POLICY);
    let output = apply(&etcd, &first);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let said = text(&output.stdout);
    assert!(
        said.starts_with("policy revision 1 written in ")
            && said.ends_with(": 4 keys written, 0 deleted (2 networks, 2 VIPs, 3 DIPs)\n"),
        "{said}"
    );
    assert_eq!(
        keys(&read(&etcd)),
        [
            "/fulcrum/v1/policy/networks/tenant-a",
            "/fulcrum/v1/policy/networks/tenant-b",
            "/fulcrum/v1/policy/revision",
            "/fulcrum/v1/policy/vips/203.0.113.10/tcp/80",
            "/fulcrum/v1/policy/vips/203.0.113.20/tcp/80",
        ]
    );

    // The same policy again: nothing written.
    let before = read(&etcd).store_revision;
    let output = apply(&etcd, &first);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        text(&output.stdout),
        "policy unchanged at revision 1 (2 networks, 2 VIPs, 3 DIPs)\n"
    );
    assert_eq!(read(&etcd).store_revision, before);

    // A DIP added, a weight changed, tenant-b and its VIP gone: one
    // transaction (one store revision) deletes two keys and writes two.
    let changed = POLICY
        .replace(
            "    real_server 10.1.0.6 8080 {\n",
            "    real_server 10.1.0.6 8080 {\n        weight 5\n",
        )
        .replace(
            "    virtual_network tenant-a\n",
            "    virtual_network tenant-a\n    real_server 10.1.0.7 8080 {\n    }\n",
        );
    let changed = changed[..changed.find("virtual_server 203.0.113.20").unwrap()]
        .replace("virtual_network tenant-b {\n    vni 200\n}\n", "");
    let second = files.write("changed.conf", &changed);
    let output = apply(&etcd, &second);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let said = text(&output.stdout);
    assert!(
        said.starts_with("policy revision 2 written in ")
            && said.ends_with(": 1 keys written, 2 deleted (1 networks, 1 VIPs, 3 DIPs)\n"),
        "{said}"
    );
    let after = read(&etcd);
    assert_eq!(after.store_revision, before + 1, "one transaction");
    assert_eq!(
        keys(&after),
        [
            "/fulcrum/v1/policy/networks/tenant-a",
            "/fulcrum/v1/policy/revision",
            "/fulcrum/v1/policy/vips/203.0.113.10/tcp/80",
        ]
    );

    // What a host agent and a Mux would write, then the status.
    put(
        &etcd,
        "/fulcrum/v1/live/hosts/host1",
        r#"{"vtep":"192.0.2.21"}"#,
    );
    put(
        &etcd,
        "/fulcrum/v1/live/dips/host1/tenant-a/10.1.0.5",
        r#"{"vni":100,"mac":"02:00:00:00:00:05"}"#,
    );
    put(
        &etcd,
        "/fulcrum/v1/live/health/host1/tenant-a/10.1.0.5/8080",
        r#"{"up":true}"#,
    );
    put(
        &etcd,
        "/fulcrum/v1/live/applied/mux/mux1",
        r#"{"revision":1}"#,
    );
    let output = pulse(&[&format!("--cluster={}", etcd.urls()), "--status"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let shown = text(&output.stdout);
    for line in [
        "  203.0.113.10:80/tcp  tenant-a  mh  announced by no Mux",
        "    10.1.0.5:8080  weight 1  host1  up",
        "    10.1.0.6:8080  weight 5  not found on any host  unknown",
        "  host1  vtep 192.0.2.21  1 DIP  applied nothing yet",
        "  mux1  applied revision 1 (behind 2)",
    ] {
        assert!(
            shown.lines().any(|shown| shown == line),
            "{line:?} in\n{shown}"
        );
    }
    let output = pulse(&[&format!("--cluster={}", etcd.urls()), "--status", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["policy_revision"], 2);
    assert_eq!(json["vips"][0]["dips"][0]["address"], "10.1.0.7");
}

#[test]
fn a_broken_policy_writes_nothing_and_exits_4() {
    let etcd = Etcd::start(1).unwrap();
    let files = Files::new("broken");
    let good = files.write("good.conf", POLICY);
    assert_eq!(apply(&etcd, &good).status.code(), Some(0));
    let before = read(&etcd);
    // A grammar error, then a policy error (a server of the LVS mode).
    for (name, broken) in [
        ("typo.conf", POLICY.replace("vni 200", "vni 20000000")),
        (
            "lvs.conf",
            format!(
                "{POLICY}virtual_server 10.0.0.1 80 {{\n    protocol TCP\n    real_server 10.0.0.2 80 {{\n    }}\n}}\n"
            ),
        ),
    ] {
        let path = files.write(name, &broken);
        let output = apply(&etcd, &path);
        assert_eq!(output.status.code(), Some(4), "{name}");
        let said = text(&output.stderr);
        assert!(said.contains("error"), "{said}");
        assert!(said.ends_with(": nothing written\n"), "{said}");
        assert!(output.stdout.is_empty());
        let after = read(&etcd);
        assert_eq!(after.store_revision, before.store_revision, "{name}");
        assert_eq!(after.entries, before.entries, "{name}");
    }
    // The status says what the schema cannot read, by key, and exits 4.
    put(&etcd, "/fulcrum/v1/policy/networks/odd", "not json");
    let output = pulse(&[&format!("--cluster={}", etcd.urls()), "--status"]);
    assert_eq!(output.status.code(), Some(4));
    assert!(
        text(&output.stderr)
            .starts_with("pulse: the store's /fulcrum/v1/policy/networks/odd: unreadable value"),
        "{}",
        text(&output.stderr)
    );
}

#[test]
fn three_members_take_a_policy_with_one_lost_and_refuse_it_without_quorum() {
    let mut etcd = Etcd::start(3).unwrap();
    let files = Files::new("quorum");
    let first = files.write("policy.conf", POLICY);
    etcd.stop_member(0);
    let output = apply(&etcd, &first);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    etcd.stop_member(1);
    // One member of three: no quorum, the write cannot commit. It is
    // refused within the store's timeout, and says so: the two members
    // down refuse connections, the third answers nothing.
    let changed = files.write("changed.conf", &POLICY.replace("vni 200", "vni 201"));
    let output = apply(&etcd, &changed);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stdout));
    let said = text(&output.stderr);
    assert!(
        said.contains("pulse: cannot reach the cluster store at ")
            || said.contains("pulse: the cluster store failed to write the policy"),
        "{said}"
    );
    etcd.start_member(0).unwrap();
    etcd.start_member(1).unwrap();
    etcd.wait_healthy(Duration::from_secs(30)).unwrap();
    // Nothing of the refused write was committed.
    let reading = read(&etcd);
    let network = reading
        .entries
        .iter()
        .find(|(key, _)| key == "/fulcrum/v1/policy/networks/tenant-b")
        .unwrap();
    assert_eq!(network.1, br#"{"vni":200}"#);
    let output = apply(&etcd, &changed);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stdout).starts_with("policy revision 2 written"));
}

#[test]
fn the_cluster_commands_need_the_store_and_one_command() {
    for (arguments, message) in [
        (
            &["--apply", "x.conf"][..],
            "pulse: --apply and --which-dip need the cluster store: --cluster=URL[,URL...] \
             (--status without it asks the pulse running here)",
        ),
        (
            &["--cluster=http://127.0.0.1:1", "--json"][..],
            "pulse: --json goes with --status or --which-dip",
        ),
        (
            &["--cluster=http://127.0.0.1:1", "--status", "--apply=x"][..],
            "pulse: --apply, --status and --which-dip are three commands: give one",
        ),
        (
            &["--cluster=http://127.0.0.1:1", "--vip=203.0.113.10:80"][..],
            "pulse: --vip goes with --which-dip",
        ),
        (
            &["--cluster=http://127.0.0.1:1", "--which-dip=172.30.0.2"][..],
            "pulse: --which-dip takes a client's ADDRESS:PORT ([ADDRESS]:PORT for IPv6), not \
             '172.30.0.2'",
        ),
        (
            &[
                "--cluster=http://127.0.0.1:1",
                "--which-dip=172.30.0.2:4000",
                "--vip=203.0.113.10:80/icmp",
            ][..],
            "pulse: --vip: 'icmp' is not tcp, udp or sctp",
        ),
    ] {
        let output = pulse(arguments);
        assert_eq!(output.status.code(), Some(1), "{arguments:?}");
        assert_eq!(
            text(&output.stderr).lines().next(),
            Some(message),
            "{arguments:?}"
        );
    }
}

/// `-t` on a Mux's command line checks its file and starts nothing: no
/// store is reached (none listens on port 1) and the verdict is the file's.
#[test]
fn a_config_test_beside_cluster_checks_the_file_and_starts_no_mux() {
    let files = Files::new("config-test");
    let good = files.write(
        "mux.conf",
        "mux {\n    vtep 192.0.2.1\n    announce_table 100\n}\n",
    );
    let bad = files.write("broken.conf", "mux {\n    vtep not-an-address\n}\n");
    let cluster = "--cluster=http://127.0.0.1:1";
    let output = pulse(&["-t", "-f", good.to_str().unwrap(), cluster]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let output = pulse(&["-t", "-f", bad.to_str().unwrap(), cluster]);
    assert_ne!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("not-an-address"),
        "{}",
        text(&output.stderr)
    );
}
