//! The `nanny` binary against servers on loopback.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;

fn nanny() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nanny"))
}

/// A minimal HTTP server answering `body` to every connection, on a thread.
fn http_server(body: &'static str) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request);
            let _ = write!(stream, "HTTP/1.0 200 OK\r\n\r\n{body}");
        }
    });
    address
}

#[test]
fn once_reports_every_real_server_and_fails_when_one_is_down() {
    let up = http_server("hello\n");
    let down = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let directory = std::env::temp_dir().join(format!("nanny-cli-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let config = directory.join("keepalived.conf");
    std::fs::write(
        &config,
        format!(
            "virtual_server 192.0.2.1 80 {{
    protocol TCP
    real_server {} {} {{
        HTTP_GET {{
            url {{
                path /
                digest b1946ac92492d2347c6235b4d2611184
            }}
            connect_timeout 2
        }}
    }}
    real_server {} {} {{
        TCP_CHECK {{
            connect_timeout 2
        }}
    }}
}}
",
            up.ip(),
            up.port(),
            down.ip(),
            down.port()
        ),
    )
    .unwrap();
    let output = nanny()
        .args(["-f", config.to_str().unwrap(), "--once", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let mut lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    lines.sort_by_key(|line| line["up"].as_bool());
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(lines[0]["real_server"], down.to_string());
    assert_eq!(
        lines[0]["reason"],
        format!("TCP_CHECK {down}: connection refused")
    );
    assert_eq!(lines[1]["real_server"], up.to_string());
    assert_eq!(lines[1]["up"], true);
    let _ = std::fs::remove_dir_all(&directory);
}

#[test]
fn digest_prints_what_genhash_prints() {
    let address = http_server("hello\n");
    let output = nanny()
        .args(["digest", &format!("http://{address}/")])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "b1946ac92492d2347c6235b4d2611184\n"
    );
}

/// `nanny -f FILE | head`: when the reader goes away nanny stops, quietly
/// (println! panicked there: "failed printing to stdout: Broken pipe").
#[test]
fn a_reader_going_away_ends_nanny_quietly() {
    let directory = std::env::temp_dir().join(format!("nanny-closed-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let config = directory.join("keepalived.conf");
    // The check takes half a second, so the pipe is closed before nanny
    // first writes.
    std::fs::write(
        &config,
        "virtual_server 192.0.2.1 80 {
    protocol TCP
    real_server 192.0.2.2 80 {
        MISC_CHECK {
            misc_path \"/bin/sleep 0.5\"
        }
    }
}
",
    )
    .unwrap();
    let mut child = nanny()
        .args(["-f", config.to_str().unwrap(), "--once"])
        .env("RUST_BACKTRACE", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!said.contains("panicked"), "{said}");
    assert!(!said.contains("Broken pipe"), "{said}");
    assert_eq!(output.status.code(), Some(0), "{said}");
    let _ = std::fs::remove_dir_all(&directory);
}

/// A network namespace of this test's own, deleted on drop.
struct Namespace(String);

impl Namespace {
    /// `None` where namespaces cannot be made (not root, no `ip`).
    fn new(name: &str) -> Option<Namespace> {
        let made = Command::new("ip")
            .args(["netns", "add", name])
            .status()
            .is_ok_and(|status| status.success());
        made.then(|| Namespace(name.to_owned()))
    }

    fn run(&self, command: &str) -> std::process::Output {
        Command::new("ip")
            .args(["netns", "exec", &self.0, "sh", "-c", command])
            .output()
            .unwrap()
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

#[test]
fn ping_check_up_and_timeout_in_a_namespace_without_datagram_icmp() {
    // A fresh namespace refuses datagram ICMP sockets (ping_group_range
    // "1 0"), so this also takes the raw socket path. 192.0.2.2 is routed
    // to the namespace's loopback, where nothing answers: a timeout, and no
    // packet leaves the namespace.
    let Some(namespace) = Namespace::new(&format!("nanny-ping-{}", std::process::id())) else {
        eprintln!("skipped: cannot make a network namespace here (root and ip needed)");
        return;
    };
    let directory = std::env::temp_dir().join(format!("nanny-ping-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let config = directory.join("keepalived.conf");
    std::fs::write(
        &config,
        "virtual_server 192.0.2.10 80 {
    protocol TCP
    real_server 192.0.2.2 80 {
        PING_CHECK {
            connect_timeout 1
        }
    }
    real_server 127.0.0.1 80 {
        PING_CHECK {
            connect_timeout 1
        }
    }
}
",
    )
    .unwrap();
    let output = namespace.run(&format!(
        "ip link set lo up && ip route add 192.0.2.0/24 dev lo && {} -f {} --once --json",
        env!("CARGO_BIN_EXE_nanny"),
        config.display()
    ));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let mut lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    lines.sort_by_key(|line| line["up"].as_bool());
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(lines[0]["real_server"], "192.0.2.2:80");
    assert_eq!(
        lines[0]["reason"],
        "PING_CHECK 192.0.2.2: timeout after 1 s"
    );
    assert_eq!(lines[1]["real_server"], "127.0.0.1:80");
    assert_eq!(lines[1]["up"], true);
    let _ = std::fs::remove_dir_all(&directory);
}

/// Whether this process may open raw sockets (CAP_NET_RAW; root here).
fn raw_sockets() -> bool {
    socket2::Socket::new(
        socket2::Domain::IPV4,
        socket2::Type::RAW,
        Some(socket2::Protocol::TCP),
    )
    .is_ok()
}

/// `nanny --once` with one TCP_CHECK of a listener and `arguments`: its
/// stdout, stderr, and how many connections the listener accepted.
fn tcp_check_once(arguments: &[&str]) -> (String, String, usize) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap();
    let directory = std::env::temp_dir().join(format!(
        "nanny-cli-tcp-{}-{}",
        std::process::id(),
        arguments.len()
    ));
    std::fs::create_dir_all(&directory).unwrap();
    let config = directory.join("keepalived.conf");
    std::fs::write(
        &config,
        format!(
            "virtual_server 192.0.2.1 80 {{
    protocol TCP
    real_server {} {} {{
        TCP_CHECK {{
            connect_timeout 2
        }}
    }}
}}
",
            address.ip(),
            address.port()
        ),
    )
    .unwrap();
    let output = nanny()
        .args(["-f", config.to_str().unwrap(), "--once", "--json"])
        .args(arguments)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&directory);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let accepted = std::iter::from_fn(|| listener.accept().ok()).count();
    (
        stdout,
        String::from_utf8_lossy(&output.stderr).into_owned(),
        accepted,
    )
}

#[test]
fn tcp_check_is_half_open_by_default_and_connects_when_told() {
    let (stdout, stderr, accepted) = tcp_check_once(&[]);
    assert!(stdout.contains("\"up\":true"), "{stdout}");
    if raw_sockets() {
        // The listener's kernel answered the SYN; its application got no
        // connection.
        assert!(stderr.contains("TCP_CHECK: half-open"), "{stderr}");
        assert_eq!(accepted, 0);
    } else {
        assert!(
            stderr.contains("full connect instead of half-open"),
            "{stderr}"
        );
        assert_eq!(accepted, 1);
    }
    let (stdout, stderr, accepted) = tcp_check_once(&["--tcp-check", "connect"]);
    assert!(stdout.contains("\"up\":true"), "{stdout}");
    assert!(!stderr.contains("half-open"), "{stderr}");
    assert_eq!(accepted, 1);
}
