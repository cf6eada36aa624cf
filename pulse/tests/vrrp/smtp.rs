//! SMTP alerts against keepalived's: the same file run by keepalived, then
//! by pulse, in node `a`, alone (each becomes master), with `smtp_server`
//! pointing at a mail server in node `c` that keeps what each connection
//! sent, byte for byte (a small Python server, below: it answers as a mail
//! server does and records the whole dialogue, from HELO to QUIT). Both
//! go through the same transitions; the messages must be the same.
//!
//! Normalised: the `Date:` header's value (the time of sending), and the
//! order of the messages (each alert goes on a connection of its own, at
//! the same moment as its neighbour's: the server sees them in either
//! order). Left out: connections that sent nothing. keepalived opens one
//! for each "Stopping" alert as it exits, and exits before the greeting;
//! pulse opens none.
//!
//! Two rounds. IPv4, nothing but the addresses and the server written:
//! keepalived's defaults (`router_id`, `smtp_helo_name`,
//! `notification_email_from` from the host's canonical name and the user;
//! the two daemons run on the same host, so the same defaults), a sync
//! group of one instance (the group's alerts and the instance's), and a
//! tracked file of weight 0 that puts the instance in FAULT and out
//! again. IPv6, everything written (and `smtp_alert` on the instances
//! only, the global one off): two instances, BACKUP, then MASTER, then a
//! reload (SIGHUP) without the second, which keepalived tells as FAULT.

use super::*;

/// The mail server: `python3 SCRIPT ADDRESS PORT DIRECTORY`. Each
/// connection's bytes go to DIRECTORY/mail-NNN once it closes; `ready`
/// appears once it listens.
const RECORDER: &str = r#"
import os, socket, socketserver, sys, threading
host, port, directory = sys.argv[1], int(sys.argv[2]), sys.argv[3]
lock = threading.Lock()
count = [0]
class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        with lock:
            count[0] += 1
            number = count[0]
        record = bytearray()
        self.wfile.write(b"220 recorder ESMTP\r\n")
        in_data = False
        while True:
            line = self.rfile.readline()
            if not line:
                break
            record += line
            if in_data:
                if line == b".\r\n":
                    in_data = False
                    self.wfile.write(b"250 2.0.0 queued\r\n")
                continue
            word = line[:4].upper()
            if word == b"DATA":
                in_data = True
                self.wfile.write(b"354 End data with <CR><LF>.<CR><LF>\r\n")
            elif word == b"QUIT":
                self.wfile.write(b"221 2.0.0 Bye\r\n")
                break
            else:
                self.wfile.write(b"250 ok\r\n")
        path = os.path.join(directory, "mail-%03d" % number)
        with open(path + ".tmp", "wb") as output:
            output.write(bytes(record))
        os.rename(path + ".tmp", path)
class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True
    address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
server = Server((host, port), Handler)
open(os.path.join(directory, "ready"), "w").close()
server.serve_forever()
"#;

/// The recorder, killed when dropped.
struct Recorder {
    child: Child,
    directory: PathBuf,
}

impl Recorder {
    fn start(namespace: &Namespace, directory: &Path, address: IpAddr) -> Result<Recorder> {
        let _ = fs::remove_dir_all(directory);
        fs::create_dir_all(directory)?;
        let script = directory.join("recorder.py");
        fs::write(&script, RECORDER)?;
        let child = namespace
            .command("python3")
            .arg(&script)
            .arg(address.to_string())
            .arg("2525")
            .arg(directory)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(directory.join("recorder.log"))?)
            .spawn()
            .context("cannot start python3")?;
        let recorder = Recorder {
            child,
            directory: directory.to_owned(),
        };
        wait_for("the mail server listens", Duration::from_secs(10), || {
            Ok(directory.join("ready").exists())
        })?;
        Ok(recorder)
    }

    /// The messages received so far, non-empty ones only, `Date:`
    /// normalised, sorted.
    fn messages(&self) -> Result<Vec<String>> {
        let mut messages = Vec::new();
        for entry in fs::read_dir(&self.directory)? {
            let path = entry?.path();
            let name = path.file_name().and_then(|name| name.to_str());
            if !name.is_some_and(|name| name.starts_with("mail-") && !name.ends_with(".tmp")) {
                continue;
            }
            let bytes = fs::read(&path)?;
            if bytes.is_empty() {
                continue;
            }
            let text = String::from_utf8(bytes).context("a message is not UTF-8")?;
            messages.push(normalise_date(&text));
        }
        messages.sort();
        Ok(messages)
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `Date: ...` with its value replaced, after checking its form
/// (`Tue, 08 Dec 2026 00:17:47 +0000`).
fn normalise_date(text: &str) -> String {
    text.split_inclusive("\r\n")
        .map(|line| match line.strip_prefix("Date: ") {
            Some(value) => {
                let words: Vec<&str> = value.trim_end().split(' ').collect();
                let well_formed = words.len() == 6
                    && words[0].ends_with(',')
                    && words[1].len() == 2
                    && words[4].len() == 8
                    && (words[5].starts_with('+') || words[5].starts_with('-'));
                if well_formed {
                    "Date: DATE\r\n".to_owned()
                } else {
                    format!("Date: MALFORMED {value}")
                }
            }
            None => line.to_owned(),
        })
        .collect()
}

/// The transitions of a round, driven the same way for both daemons.
fn drive(segment: &Segment, kind: Kind, round: &Round, recorder: &Recorder) -> Result<Vec<String>> {
    let directory = &segment.directory;
    let name = format!("{}-{kind}", round.name);
    if let Some(flag) = &round.flag {
        fs::write(flag, "0\n")?;
    }
    let mut daemon = Daemon::start_with(kind, &segment.a, directory, &name, &round.configuration)?;
    let result = (|| -> Result<Vec<String>> {
        let address = segment.ipv4(100);
        let bound = Duration::from_secs(10);
        wait_for(&format!("{kind} becomes master"), bound, || {
            Ok(
                ip_output(&segment.a, &["-4", "addr", "show", "dev", "eth0"])?
                    .contains(&format!("{address}/")),
            )
        })?;
        // The alerts of the start: BACKUP and MASTER, both kinds.
        wait_for(
            &format!("{kind}'s first {} alerts", round.at_master),
            bound,
            || Ok(recorder.messages()?.len() >= round.at_master),
        )?;
        if let Some(flag) = &round.flag {
            fs::write(flag, "1\n")?;
            wait_for(&format!("{kind} leaves master for FAULT"), bound, || {
                Ok(
                    !ip_output(&segment.a, &["-4", "addr", "show", "dev", "eth0"])?
                        .contains(&format!("{address}/")),
                )
            })?;
            fs::write(flag, "0\n")?;
            wait_for(&format!("{kind} is master again"), bound, || {
                Ok(
                    ip_output(&segment.a, &["-4", "addr", "show", "dev", "eth0"])?
                        .contains(&format!("{address}/")),
                )
            })?;
        }
        if let Some(reloaded) = &round.reloaded {
            wait_for(
                &format!("{kind}'s {} alerts before the reload", round.before_reload),
                bound,
                || Ok(recorder.messages()?.len() >= round.before_reload),
            )?;
            fs::write(directory.join(format!("{name}.conf")), reloaded)?;
            signal(daemon.child.id() as i32, libc::SIGHUP);
        }
        wait_for(
            &format!("{kind}'s {} alerts", round.expected),
            bound,
            || Ok(recorder.messages()?.len() >= round.expected),
        )?;
        daemon.terminate()?;
        // Whatever a stop would still send.
        thread::sleep(Duration::from_millis(500));
        recorder.messages()
    })();
    result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))
}

struct Round {
    name: &'static str,
    configuration: String,
    /// The track_file, if the round goes through FAULT.
    flag: Option<PathBuf>,
    /// How many alerts once master.
    at_master: usize,
    /// The file the daemon reads again (SIGHUP) once `before_reload`
    /// alerts came, if any.
    reloaded: Option<String>,
    before_reload: usize,
    /// How many in all.
    expected: usize,
}

/// See the module's documentation.
pub fn alerts(segment: &Segment, _scenario: &str) -> Result<()> {
    let address = segment.ipv4(100);
    let flag = segment.directory.join("flag");
    let defaults = Round {
        name: "defaults",
        configuration: format!(
            "global_defs {{\n    notification_email {{\n        ops@example.com\n        \
             noc@example.com\n    }}\n    smtp_server {} 2525\n    smtp_alert\n}}\n\
             vrrp_track_file flag {{\n    file {}\n    weight 0\n}}\n\
             vrrp_sync_group G {{\n    group {{\n        VI_1\n    }}\n}}\n{}",
            segment.ipv4(3),
            flag.display(),
            Instance {
                extra: "    track_file {\n        flag\n    }\n".to_owned(),
                ..Instance::v3(100, format!("{address}/24"))
            }
            .configuration()
        ),
        flag: Some(flag),
        // BACKUP and MASTER, the instance's and the group's; then FAULT,
        // BACKUP and MASTER again.
        at_master: 4,
        reloaded: None,
        before_reload: 0,
        expected: 10,
    };
    let global = format!(
        "global_defs {{\n    router_id lb-{}\n    notification_email {{\n        \
         alerts@example.org\n    }}\n    notification_email_from pulse@example.org\n    \
         smtp_server {} 2525\n    smtp_helo_name helo.example.org\n    \
         smtp_connect_timeout 5\n    smtp_alert false\n}}\n",
        segment.subnet,
        segment.ipv6(3),
    );
    let first = Instance {
        extra: "    smtp_alert\n".to_owned(),
        ..Instance::v3(100, format!("{address}/24"))
    }
    .configuration();
    // A second instance, which the reload removes.
    let second = Instance {
        extra: "    smtp_alert\n".to_owned(),
        ..Instance::v3(100, format!("{}/24", segment.ipv4(101)))
    }
    .configuration()
    .replace("VI_1", "VI_2")
    .replace("virtual_router_id 51", "virtual_router_id 52");
    let written = Round {
        name: "written",
        configuration: format!("{global}{first}{second}"),
        flag: None,
        at_master: 2,
        // Each instance's BACKUP and MASTER, then the removed one's
        // FAULT (keepalived's "deleted" alert without notify_deleted).
        reloaded: Some(format!("{global}{first}")),
        before_reload: 4,
        expected: 5,
    };
    for (round, server) in [(defaults, segment.ipv4(3)), (written, segment.ipv6(3))] {
        let mut received = Vec::new();
        for kind in [Kind::Keepalived, Kind::Pulse] {
            let recorder = Recorder::start(
                &segment.c,
                &segment
                    .directory
                    .join(format!("mail-{}-{kind}", round.name)),
                server,
            )?;
            let messages = drive(segment, kind, &round, &recorder)
                .with_context(|| format!("round {}", round.name))?;
            received.push(messages);
        }
        let (keepalived, pulse) = (&received[0], &received[1]);
        ensure!(
            keepalived.len() == round.expected,
            "round {}: keepalived sent {} messages, not {}:\n{}",
            round.name,
            keepalived.len(),
            round.expected,
            keepalived.join("\n")
        );
        if keepalived != pulse {
            bail!(
                "round {}: pulse's messages differ from keepalived's\n\
                 keepalived:\n{}\npulse:\n{}",
                round.name,
                keepalived.join("\n"),
                pulse.join("\n")
            );
        }
    }
    Ok(())
}
