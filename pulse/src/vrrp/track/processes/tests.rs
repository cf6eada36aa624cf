use super::*;

fn process(name: &str, words: &[&str]) -> config::TrackProcess {
    config::TrackProcess {
        name: name.into(),
        process: Some(words.iter().map(|word| word.to_string()).collect()),
        quorum: 1,
        quorum_max: None,
        weight: 0,
        weight_reverse: false,
        terminate_delay: None,
        fork_delay: None,
        full_command: false,
        param_match: None,
    }
}

fn named(comm: &str) -> Identity {
    Identity {
        comm: Some(comm.as_bytes().to_vec()),
        command_line: None,
    }
}

fn command(words: &[&str]) -> Identity {
    Identity {
        comm: None,
        command_line: Some(
            words
                .iter()
                .flat_map(|word| word.bytes().chain([0]))
                .collect(),
        ),
    }
}

fn change(name: &str, have_quorum: bool) -> Vec<QuorumChange> {
    vec![QuorumChange {
        name: name.into(),
        have_quorum,
    }]
}

const SECOND: Duration = Duration::from_secs(1);

#[test]
fn the_first_scan_sets_quorums_without_changes() {
    let mut table = ProcessTable::new(&[
        process("web", &["nginx"]),
        config::TrackProcess {
            quorum: 2,
            ..process("pair", &["haproxy"])
        },
    ]);
    table.scan([
        (10, named("nginx")),
        (11, named("haproxy")),
        (12, named("bash")),
    ]);
    assert_eq!(table.have_quorum("web"), Some(true));
    assert_eq!(table.have_quorum("pair"), Some(false));
    assert_eq!(table.count("pair"), Some(1));
}

#[test]
fn exec_and_exit_change_the_quorum_at_once_without_delays() {
    let start = Instant::now();
    let mut table = ProcessTable::new(&[process("web", &["nginx"])]);
    table.scan([]);
    assert_eq!(table.have_quorum("web"), Some(false));
    // A shell forks (untracked), then execs nginx.
    assert_eq!(table.fork(1, 20, start), vec![]);
    assert_eq!(
        table.exec(20, Some(&named("nginx")), start),
        change("web", true)
    );
    // The same exec seen twice counts once.
    assert_eq!(table.exec(20, Some(&named("nginx")), start), vec![]);
    assert_eq!(table.count("web"), Some(1));
    assert_eq!(table.exit(20, start), change("web", false));
    assert_eq!(table.count("web"), Some(0));
    // An exit of a process never counted changes nothing.
    assert_eq!(table.exit(21, start), vec![]);
    assert_eq!(table.poll_at(), None);
}

#[test]
fn terminate_delay_holds_a_lost_quorum_and_a_new_process_cancels_it() {
    let start = Instant::now();
    let mut table = ProcessTable::new(&[config::TrackProcess {
        terminate_delay: Some(2 * SECOND),
        ..process("web", &["nginx"])
    }]);
    table.scan([(30, named("nginx"))]);
    assert_eq!(table.exit(30, start), vec![]);
    assert_eq!(table.poll_at(), Some(start + 2 * SECOND));
    assert_eq!(table.poll(start + SECOND), vec![]);
    assert_eq!(table.have_quorum("web"), Some(true));
    assert_eq!(table.poll(start + 2 * SECOND), change("web", false));
    assert_eq!(table.poll_at(), None);
    // Restarted within the delay: the delay is cancelled, the quorum kept.
    table.exec(31, Some(&named("nginx")), start + 3 * SECOND);
    assert_eq!(table.have_quorum("web"), Some(true));
    assert_eq!(table.exit(31, start + 4 * SECOND), vec![]);
    assert_eq!(
        table.exec(32, Some(&named("nginx")), start + 5 * SECOND),
        vec![]
    );
    assert_eq!(table.poll_at(), None);
    assert_eq!(table.poll(start + 10 * SECOND), vec![]);
    assert_eq!(table.have_quorum("web"), Some(true));
}

#[test]
fn fork_delay_holds_a_quorum_a_fork_gains() {
    let start = Instant::now();
    let mut table = ProcessTable::new(&[config::TrackProcess {
        quorum: 2,
        fork_delay: Some(SECOND / 2),
        ..process("workers", &["nginx"])
    }]);
    table.scan([(40, named("nginx"))]);
    assert_eq!(table.have_quorum("workers"), Some(false));
    // A thread is not a fork: the I/O part passes only processes. A
    // process's child counts for what its parent counts for.
    assert_eq!(table.fork(40, 41, start), vec![]);
    assert_eq!(table.count("workers"), Some(2));
    assert_eq!(table.poll_at(), Some(start + SECOND / 2));
    assert_eq!(table.poll(start + SECOND / 2), change("workers", true));
    // The child exits before a second one's delay ends: the delay is
    // cancelled and the quorum set from the count at once.
    assert_eq!(table.exit(41, start + SECOND), change("workers", false));
    assert_eq!(table.fork(40, 42, start + SECOND), vec![]);
    assert_eq!(table.exit(42, start + SECOND), vec![]);
    assert_eq!(table.poll_at(), None);
    assert_eq!(table.have_quorum("workers"), Some(false));
}

#[test]
fn quorum_max_counts_too_many_as_a_loss() {
    let start = Instant::now();
    let mut table = ProcessTable::new(&[config::TrackProcess {
        quorum_max: Some(1),
        ..process("single", &["sleep"])
    }]);
    table.scan([(50, named("sleep"))]);
    assert_eq!(table.have_quorum("single"), Some(true));
    assert_eq!(
        table.exec(51, Some(&named("sleep")), start),
        change("single", false)
    );
    assert_eq!(table.exit(50, start), change("single", true));
    // quorum_max 0: the process must not run.
    let mut table = ProcessTable::new(&[config::TrackProcess {
        quorum: 0,
        quorum_max: Some(0),
        ..process("absent", &["rogue"])
    }]);
    table.scan([]);
    assert_eq!(table.have_quorum("absent"), Some(true));
    assert_eq!(
        table.exec(60, Some(&named("rogue")), start),
        change("absent", false)
    );
    assert_eq!(table.exit(60, start), change("absent", true));
}

#[test]
fn a_rename_is_matched_at_once_by_name_only() {
    let start = Instant::now();
    let mut table = ProcessTable::new(&[
        config::TrackProcess {
            terminate_delay: Some(SECOND),
            ..process("web", &["nginx"])
        },
        config::TrackProcess {
            full_command: true,
            ..process("full", &["/usr/sbin/nginx"])
        },
    ]);
    let identity = Identity {
        comm: Some(b"nginx".to_vec()),
        command_line: command(&["/usr/sbin/nginx", "-g", "daemon off;"]).command_line,
    };
    table.scan([(70, identity)]);
    assert_eq!(
        table.quorums().values().filter(|quorum| **quorum).count(),
        2
    );
    // Renamed: no longer counted by name, at once (no terminate delay);
    // its command line still counts.
    assert_eq!(
        table.comm(70, b"nginx: worker", start),
        change("web", false)
    );
    assert_eq!(table.have_quorum("full"), Some(true));
    assert_eq!(table.comm(70, b"nginx", start), change("web", true));
}

#[test]
fn parameters_match_as_param_match_says() {
    use config::ParamMatch;
    let matcher = |words: &[&str], matching| {
        Matcher::new(&config::TrackProcess {
            full_command: true,
            param_match: matching,
            ..process("p", words)
        })
    };
    let line = command(&["/usr/bin/python3", "-m", "http.server", "8080"]);
    let bare = command(&["/usr/bin/python3"]);
    let exact = matcher(
        &["/usr/bin/python3", "-m", "http.server", "8080"],
        Some(ParamMatch::Exact),
    );
    assert_eq!(exact.matches(&line), Some(true));
    assert_eq!(exact.matches(&bare), Some(false));
    let fewer = matcher(&["/usr/bin/python3", "-m"], Some(ParamMatch::Exact));
    assert_eq!(fewer.matches(&line), Some(false));
    let partial = matcher(&["/usr/bin/python3", "-m"], Some(ParamMatch::Partial));
    assert_eq!(partial.matches(&line), Some(true));
    // Partial compares whole words; initial lets the last be a start.
    let start = matcher(
        &["/usr/bin/python3", "-m", "http.ser"],
        Some(ParamMatch::Partial),
    );
    assert_eq!(start.matches(&line), Some(false));
    let initial = matcher(
        &["/usr/bin/python3", "-m", "http.ser"],
        Some(ParamMatch::Initial),
    );
    assert_eq!(initial.matches(&line), Some(true));
    // `param_match` alone: no parameters at all.
    let none = matcher(&["/usr/bin/python3"], Some(ParamMatch::Exact));
    assert_eq!(none.matches(&bare), Some(true));
    assert_eq!(none.matches(&line), Some(false));
    // full_command alone: the first word, whatever follows.
    let first_word = matcher(&["/usr/bin/python3"], None);
    assert_eq!(first_word.matches(&line), Some(true));
    assert_eq!(first_word.matches(&command(&["python3"])), Some(false));
    // A name event says nothing of command lines.
    assert_eq!(first_word.matches(&named("python3")), None);
    assert_eq!(
        first_word.command_line_needed(),
        "/usr/bin/python3".len() + 2
    );
}

#[test]
fn an_exec_into_another_program_stops_counting() {
    let start = Instant::now();
    let mut table = ProcessTable::new(&[process("web", &["nginx"])]);
    table.scan([(80, named("nginx"))]);
    assert_eq!(
        table.exec(80, Some(&named("sh")), start),
        change("web", false)
    );
    // An exec whose /proc could not be read changes nothing.
    assert_eq!(table.exec(80, None, start), vec![]);
    assert_eq!(table.count("web"), Some(0));
}

#[test]
fn a_rescan_after_lost_events_gains_at_once_and_loses_after_the_delay() {
    let start = Instant::now();
    let mut table = ProcessTable::new(&[
        config::TrackProcess {
            terminate_delay: Some(SECOND),
            ..process("web", &["nginx"])
        },
        process("cache", &["varnishd"]),
    ]);
    table.scan([(90, named("nginx"))]);
    // The events of nginx's exit and varnishd's start were lost.
    assert_eq!(
        table.rescan([(91, named("varnishd"))], start),
        change("cache", true)
    );
    assert_eq!(table.have_quorum("web"), Some(true));
    assert_eq!(table.poll(start + SECOND), change("web", false));
    assert_eq!(table.count("cache"), Some(1));
}
