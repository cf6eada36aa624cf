//! `pulse --status` on a director, asked of a real pulse: a VRRP instance
//! in a network namespace of this host (VRRP needs no IPVS; the lab's
//! failing-checks test asks it of real servers' health). Needs root; says
//! so and passes without it.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use labkit::Namespace;

const PULSE: &str = env!("CARGO_BIN_EXE_pulse");

fn status(arguments: &[&str]) -> Output {
    Command::new(PULSE)
        .arg("--status")
        .args(arguments)
        .output()
        .expect("pulse runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn status_shows_what_the_running_pulse_knows_and_says_when_none_runs() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping: not root (network namespaces need it)");
        return;
    }
    let directory = std::env::temp_dir().join(format!("pulse-status-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let pid_file = directory.join("director.pid");
    let pid_argument = pid_file.to_str().unwrap();

    // Nothing runs: status 3, and where it asked.
    let output = status(&["-p", pid_argument]);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains(&format!("{}", directory.join("director.sock").display())),
        "{}",
        text(&output.stderr)
    );

    let namespace = Namespace::create(&format!("status{}", std::process::id() % 100_000)).unwrap();
    namespace
        .ip("link add eth0 type veth peer name eth1\nlink set eth0 up\nlink set eth1 up\naddr add 192.0.2.1/24 dev eth0\n")
        .unwrap();
    let configuration = directory.join("keepalived.conf");
    std::fs::write(
        &configuration,
        "vrrp_instance VI_1 {\n    interface eth0\n    virtual_router_id 51\n    priority 100\n    \
         advert_int 0.1\n    version 3\n    virtual_ipaddress {\n        192.0.2.100/24\n    }\n}\n",
    )
    .unwrap();
    let log = std::fs::File::create(directory.join("pulse.log")).unwrap();
    let _pulse = Running(
        namespace
            .command(PULSE)
            .args(["-n", "-l", "-P", "-f"])
            .arg(&configuration)
            .args(["-p", pid_argument])
            .env("TMPDIR", &directory)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let read_log = || std::fs::read_to_string(directory.join("pulse.log")).unwrap_or_default();
    let started = Instant::now();
    let answer = loop {
        let output = status(&["-p", pid_argument, "--json"]);
        if output.status.code() == Some(0) && text(&output.stdout).contains("\"MASTER\"") {
            break text(&output.stdout);
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "no MASTER status: {}{}\n{}",
            text(&output.stdout),
            text(&output.stderr),
            read_log()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let document: serde_json::Value = serde_json::from_str(&answer).unwrap();
    let instance = &document["vrrp_instances"][0];
    assert_eq!(instance["name"], "VI_1", "{answer}");
    assert_eq!(instance["interface"], "eth0", "{answer}");
    assert_eq!(instance["virtual_router_id"], 51, "{answer}");
    assert_eq!(instance["priority"], 100, "{answer}");
    assert_eq!(
        instance["virtual_addresses"][0], "192.0.2.100/24 dev eth0 scope global",
        "{answer}"
    );
    assert_eq!(document["configuration"], configuration.to_str().unwrap());
    assert_eq!(document["virtual_servers"], serde_json::json!([]));

    let output = status(&["-p", pid_argument]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let shown = text(&output.stdout);
    assert!(shown.starts_with("pulse "), "{shown}");
    assert!(
        shown.contains("\nVRRP\n  VI_1  eth0  vrid 51  MASTER for "),
        "{shown}"
    );
    assert!(
        shown.contains("      192.0.2.100/24 dev eth0 scope global\n"),
        "{shown}"
    );
    assert!(
        shown.contains("virtual servers: none with a verdict"),
        "{shown}"
    );

    // The socket is the daemon's: only its owner may connect, and it goes
    // with a clean stop.
    let socket = directory.join("director.sock");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill on the pulse this test started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let started = Instant::now();
    while Path::new(&socket).exists() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the socket outlived the stop:\n{}",
            read_log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_dir_all(&directory);
}
