//! keepalived's signals: `pulse --signum=NAME` answers as keepalived 2.2.7
//! does (compared with Debian's keepalived when it is installed, as the
//! lab's packages install it), and the daemon lives through keepalived's
//! dump signals without VRRP instances, which would otherwise end it.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const PULSE: &str = env!("CARGO_BIN_EXE_pulse");

fn run(program: &str, arguments: &[&str]) -> Output {
    Command::new(program)
        .args(arguments)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program}: {error}"))
}

/// (status, standard output, standard error).
fn said(output: &Output) -> (Option<i32>, String, String) {
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn signum_prints_what_keepalived_prints() {
    let expected = [
        ("STOP", Some(libc::SIGTERM)),
        ("RELOAD", Some(libc::SIGHUP)),
        ("DATA", Some(libc::SIGUSR1)),
        ("STATS", Some(libc::SIGUSR2)),
        ("STATS_CLEAR", Some(libc::SIGRTMAX() - 1)),
        ("JSON", Some(libc::SIGRTMIN() + 2)),
        // Debian's keepalived is built without THREAD_DUMP; names are
        // case-sensitive.
        ("TDATA", None),
        ("stop", None),
        ("NOSUCH", None),
    ];
    let compare = labkit::installed("keepalived");
    if !compare {
        eprintln!("keepalived is not installed: compared with the C library's numbers alone");
    }
    for (function, number) in expected {
        let argument = format!("--signum={function}");
        let pulse = said(&run(PULSE, &[&argument]));
        let wanted = match number {
            Some(number) => (Some(0), format!("{number}\n"), String::new()),
            None => (
                Some(1),
                String::new(),
                format!("Unknown sigfunc {function}\n"),
            ),
        };
        assert_eq!(pulse, wanted, "{argument}");
        if compare {
            assert_eq!(pulse, said(&run("keepalived", &[&argument])), "{argument}");
        }
    }
}

#[test]
fn signum_ends_the_command_line_where_keepalived_does() {
    // What follows --signum is never read; what precedes it is.
    for arguments in [
        &["--signum=STOP", "--no-such-option"][..],
        &["--signum", "JSON", "-f"][..],
        &["-v", "--signum=STOP"][..],
        &["-l", "--sig=DATA"][..],
    ] {
        let pulse = said(&run(PULSE, arguments));
        assert_eq!(pulse.0, Some(0), "{arguments:?}: {pulse:?}");
        if labkit::installed("keepalived") {
            let keepalived = said(&run("keepalived", arguments));
            assert_eq!(pulse.0, keepalived.0, "{arguments:?}");
            // -v: each prints its own version; the number otherwise.
            if arguments[0] != "-v" {
                assert_eq!(pulse.1, keepalived.1, "{arguments:?}");
            }
        }
    }
    assert_eq!(
        run(PULSE, &["--signum="]).status.code(),
        Some(1),
        "an empty name is a missing argument, as keepalived has it"
    );
}

#[test]
fn the_daemon_lives_through_keepalived_s_dump_signals() {
    let directory = std::env::temp_dir().join(format!("pulse-signals-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let configuration = directory.join("keepalived.conf");
    std::fs::write(&configuration, "global_defs {\n    router_id signals\n}\n").unwrap();
    let log = directory.join("pulse.log");
    let mut daemon = Command::new(PULSE)
        .args(["-n", "-l", "-G", "-f"])
        .arg(&configuration)
        .arg("-p")
        .arg(directory.join("pulse.pid"))
        .env("NO_COLOR", "1")
        .env("TMPDIR", &directory)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    let started = Instant::now();
    while !read().contains("starting pulse") {
        assert!(started.elapsed() < Duration::from_secs(10), "{}", read());
        std::thread::sleep(Duration::from_millis(20));
    }
    // The handlers are installed as the daemon starts; a moment for them.
    std::thread::sleep(Duration::from_millis(500));
    let pid = daemon.id() as libc::pid_t;
    // SIGUSR1 (keepalived.data), SIGRTMIN+2 (keepalived.json) and
    // SIGRTMAX-1 (the statistics reset) write nothing without VRRP
    // instances, as keepalived's VRRP process does not run then (its parent
    // writes keepalived_parent.data, which pulse does not).
    for signal in [libc::SIGUSR1, libc::SIGRTMIN() + 2, libc::SIGRTMAX() - 1] {
        // SAFETY: kill on our own child.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            daemon.try_wait().unwrap().is_none(),
            "signal {signal} ended the daemon: {}",
            read()
        );
    }
    for dump in ["keepalived.data", "keepalived.json", "keepalived.stats"] {
        assert!(
            !directory.join(dump).exists(),
            "{dump} written without VRRP instances: {}",
            read()
        );
    }
    // SAFETY: kill on our own child.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let status = daemon.wait().unwrap();
    assert!(status.success(), "{status}: {}", read());
    let _ = std::fs::remove_dir_all(&directory);
}

/// `pulse -v` as mehdy/keepalived-exporter reads `keepalived -v`: the
/// first line's second word, its `v` dropped, is the keepalived version
/// whose signals it uses (2.2.7's), and from its 1.6.1 the whole output
/// must hold `--enable-json` for its JSON mode to start (seen with the
/// exporter's 1.7.1 against pulse: without it, it exits).
#[test]
fn the_exporters_read_pulse_s_version_as_keepalived_2_2_7_with_json() {
    let output = run(PULSE, &["-v"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stdout.is_empty(), "keepalived -v writes to stderr");
    let text = String::from_utf8_lossy(&output.stderr);
    let first = text.lines().next().unwrap_or_default();
    let version = first.split_whitespace().nth(1).unwrap_or_default();
    assert_eq!(version.trim_start_matches('v'), "2.2.7", "{text}");
    assert!(text.contains("--enable-json"), "{text}");
    if labkit::installed("keepalived") {
        // The same words where keepalived has them.
        let keepalived = run("keepalived", &["-v"]);
        let keepalived = String::from_utf8_lossy(&keepalived.stderr);
        for line in ["configure options: ", "Config options:  "] {
            assert!(
                text.lines().any(|said| said.starts_with(line))
                    && keepalived.lines().any(|said| said.starts_with(line)),
                "{line:?} in\n{text}\nand\n{keepalived}"
            );
        }
    }
}
