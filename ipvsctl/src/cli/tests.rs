use super::*;

fn argv(args: &[&str]) -> Vec<Vec<u8>> {
    std::iter::once("ipvsadm")
        .chain(args.iter().copied())
        .map(|arg| arg.as_bytes().to_vec())
        .collect()
}

fn ok(args: &[&str]) -> CommandLine {
    match parse_command_line(&argv(args), false) {
        Ok(Parsed::Command(line)) => *line,
        other => panic!("{args:?}: {other:?}"),
    }
}

/// The message (without its final newline) and exit status.
fn error(args: &[&str]) -> (String, i32) {
    error_in(args, false)
}

fn error_in(args: &[&str], reading_stdin: bool) -> (String, i32) {
    match parse_command_line(&argv(args), reading_stdin) {
        Err(error) => {
            let message = String::from_utf8(error.message.clone()).unwrap();
            let message = message.strip_suffix('\n').expect("ends in a newline");
            (message.to_owned(), error.status())
        }
        Ok(parsed) => panic!("{args:?} parsed: {parsed:?}"),
    }
}

fn fails(args: &[&str], message: &str) {
    assert_eq!(error(args), (message.to_owned(), 2), "{args:?}");
}

const TRY_HELP: &str = "Try `ipvsadm -h' or 'ipvsadm --help' for more information.";

// --- The table --------------------------------------------------------

#[test]
fn the_table_has_unique_names() {
    let mut longs = std::collections::HashSet::new();
    let mut shorts = std::collections::HashSet::new();
    for option in OPTIONS {
        assert!(
            option.long.is_empty() || longs.insert(option.long),
            "{}",
            option.long
        );
        if let Some(short) = option.short {
            assert!(shorts.insert(short), "-{}", short as char);
        }
    }
}

#[test]
fn every_column_and_command_is_reachable_from_the_table() {
    for column in Column::ALL {
        assert!(
            OPTIONS
                .iter()
                .any(|option| option.key.column() == Some(column)),
            "{column:?}"
        );
    }
    for command in Command::ALL {
        assert!(
            OPTIONS
                .iter()
                .any(|option| option.key == Key::Command(command))
        );
    }
    for (index, column) in Column::ALL.iter().enumerate() {
        assert_eq!(column.index(), index);
    }
}

#[test]
fn the_help_describes_every_option_of_the_table() {
    let help = String::from_utf8(help_text(b"ipvsadm")).unwrap();
    for option in OPTIONS.iter().filter(|option| !option.extension) {
        assert!(
            help.contains(option.help),
            "{}: {}",
            option.long,
            option.help
        );
        if !option.long.is_empty() && option.key != Key::Version {
            assert!(
                help.contains(&format!("--{}", option.long)),
                "{}",
                option.long
            );
        }
    }
}

#[test]
fn the_help_names_every_short_option_and_value_of_the_table() {
    let help = String::from_utf8(help_text(b"ipvsadm")).unwrap();
    for option in OPTIONS.iter().filter(|option| !option.extension) {
        // ipvsadm's help leaves out `-X` (spec §2.2) and `-v`.
        if let Some(short) = option.short
            && !matches!(option.key, Key::Exact | Key::Version)
        {
            let short = format!("-{}", short as char);
            assert!(
                help.split([' ', '|', '\n', '[']).any(|word| word == short),
                "{short}"
            );
        }
        assert!(help.contains(option.value_name), "{}", option.value_name);
    }
}

/// The value tables the man page and the completions use are the lists
/// ipvsadm's help gives.
#[test]
fn the_value_tables_are_the_help_s_lists() {
    let help_of = |key: Key| {
        OPTIONS
            .iter()
            .find(|option| option.key == key)
            .expect("in the table")
    };
    let schedulers: Vec<&str> = SCHEDULERS.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        help_of(Key::Scheduler).help,
        format!("one of {},", schedulers.join("|"))
    );
    let types: Vec<&str> = TUNNEL_MATRIX.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        help_of(Key::TunType).help,
        format!("one of {},", types.join("|"))
    );
    let states: Vec<&str> = DAEMON_STATES.iter().map(|(name, _)| *name).collect();
    for command in [Command::StartDaemon, Command::StopDaemon] {
        assert_eq!(help_of(Key::Command(command)).value_name, states.join("|"));
    }
    assert_eq!(
        help_of(Key::Pe).help,
        format!(
            "alternate persistence engine may be {},",
            PERSISTENCE_ENGINES.join("|")
        )
    );
    assert!(
        SCHEDULERS
            .iter()
            .any(|(name, _)| name.as_bytes() == DEFAULT_SCHEDULER)
    );
    // Each flag needs a scheduler of the list, if any.
    for (_, _, scheduler) in SCHED_FLAGS {
        assert!(scheduler.is_none_or(|needed| schedulers.contains(&needed)));
    }
}

#[test]
fn help_text_is_appendix_c() {
    let help = String::from_utf8(help_text(b"/usr/sbin/ipvsadm")).unwrap();
    assert!(help.starts_with(
        "ipvsadm v1.31 2019/12/24 (compiled with popt and IPVS v1.2.1)\nUsage:\n  \
         /usr/sbin/ipvsadm -A|E virtual-service [-s scheduler] [-p [timeout]] [-M netmask] \
         [--pe persistence_engine] [-b sched-flags]\n"
    ));
    assert!(help.ends_with("  --mcast-ttl ttl                     Multicast TTL (default=1)\n"));
    assert_eq!(help.matches("/usr/sbin/ipvsadm ").count(), 13);
}

/// Byte for byte the block of `docs/ipvsadm.md` Appendix C.
#[test]
fn help_text_matches_the_spec_verbatim() {
    let spec = include_str!("../../../docs/ipvsadm.md");
    let appendix = &spec[spec.find("## Appendix C.").expect("Appendix C")..];
    let start = appendix.find("```\n").expect("code block") + 4;
    let end = start + appendix[start..].find("```").expect("end of block");
    let expected: String = appendix[start..end]
        .lines()
        .map(|line| {
            format!(
                "{}\n",
                line.strip_suffix('$').expect("$ at the end of each line")
            )
        })
        .collect();
    assert_eq!(String::from_utf8(help_text(b"ipvsadm")).unwrap(), expected);
}

#[test]
fn matrix_rows_match_the_spec() {
    // Spot checks of §4.1 "things worth noticing".
    let row = |command: Command, column: Column| command.matrix_row()[column.index()];
    assert_eq!(row(Command::List, Column::SyncId), b' ');
    assert_eq!(row(Command::List, Column::TunInfo), b' ');
    assert_eq!(row(Command::List, Column::Ops), b'x');
    assert_eq!(row(Command::Save, Column::Numeric), b' ');
    assert_eq!(row(Command::Save, Column::NoSort), b'x');
    assert_eq!(row(Command::Zero, Column::Service), b' ');
    assert_eq!(row(Command::StopDaemon, Column::SyncId), b' ');
    assert_eq!(row(Command::StartDaemon, Column::SyncMaxlen), b' ');
    assert_eq!(row(Command::AddServer, Column::TunRemcsum), b' ');
    for command in Command::ALL {
        assert_eq!(command.matrix_row().len(), Column::COUNT);
    }
}

// --- Commands ---------------------------------------------------------

#[test]
fn every_command_parses() {
    let cases: &[(&[&str], Command)] = &[
        (&["-A", "-t", "10.0.0.1:80"], Command::Add),
        (&["--add-service", "-t", "10.0.0.1:80"], Command::Add),
        (&["-E", "-t", "10.0.0.1:80"], Command::Edit),
        (&["-D", "-t", "10.0.0.1:80"], Command::Delete),
        (&["-C"], Command::Flush),
        (&["--clear"], Command::Flush),
        (&["-L"], Command::List),
        (&["-l"], Command::List),
        (&["--list"], Command::List),
        (&["-Z"], Command::Zero),
        (
            &["-a", "-t", "10.0.0.1:80", "-r", "10.0.0.2"],
            Command::AddServer,
        ),
        (
            &["-e", "-t", "10.0.0.1:80", "-r", "10.0.0.2"],
            Command::EditServer,
        ),
        (
            &["-d", "-t", "10.0.0.1:80", "-r", "10.0.0.2"],
            Command::DeleteServer,
        ),
        (&["--set", "1", "2", "3"], Command::Set),
        (&["-R"], Command::Restore),
        (&["-S"], Command::Save),
        (&["--start-daemon", "master"], Command::StartDaemon),
        (&["--stop-daemon", "backup"], Command::StopDaemon),
    ];
    for (args, command) in cases {
        assert_eq!(ok(args).command, *command, "{args:?}");
    }
}

#[test]
fn help_and_version_stop_at_once() {
    for args in [
        &["-h"][..],
        &["--help"],
        &["-h", "extra", "--bogus"],
        &["-hL"],
    ] {
        assert_eq!(
            parse_command_line(&argv(args), false),
            Ok(Parsed::Help),
            "{args:?}"
        );
    }
    for args in [&["-v"][..], &["--version"], &["-v", "-L"]] {
        assert_eq!(parse_command_line(&argv(args), false), Ok(Parsed::Version));
    }
    assert_eq!(
        VERSION_LINE,
        "ipvsadm v1.31 2019/12/24 (compiled with popt and IPVS v1.2.1)\n"
    );
}

#[test]
fn the_command_must_come_first() {
    for args in [
        &[][..],
        &["-nL"],
        &["-n", "-L"],
        &["-t", "10.0.0.1:80"],
        &["--bogus"],
        &["-X"],
        &["-Q"],
        &["--list=x"],
        &["extra"],
        &["--start-daemon"],
        &["--atomic", "-R"],
    ] {
        assert_eq!(error(args), (TRY_HELP.to_owned(), 255), "{args:?}");
    }
    let program = vec![b"/usr/sbin/ipvsadm".to_vec(), b"-nL".to_vec()];
    let error = parse_command_line(&program, false).unwrap_err();
    assert_eq!(
        error.message,
        b"Try `/usr/sbin/ipvsadm -h' or '/usr/sbin/ipvsadm --help' for more information.\n"
    );
}

#[test]
fn positional_words_before_the_command_are_left_over() {
    fails(&["extra", "-L"], "unexpected argument extra");
}

#[test]
fn a_second_command_names_the_last_word_read() {
    fails(&["-A", "-E"], "invalid option `-E'");
    fails(&["-L", "-h"], "invalid option `-h'");
    fails(&["-L", "-v"], "invalid option `-v'");
    fails(&["-LZ"], "invalid option `-LZ'");
    fails(
        &["--start-daemon", "master", "--start-daemon", "backup"],
        "invalid option `backup'",
    );
}

#[test]
fn daemon_states() {
    fails(
        &["--start-daemon", "slave"],
        "illegal start-daemon parameter specified",
    );
    fails(
        &["--stop-daemon", "Master"],
        "illegal start_daemon specified",
    );
    assert_eq!(ok(&["--start-daemon=backup"]).daemon.state, STATE_BACKUP);
}

// --- popt -------------------------------------------------------------

#[test]
fn popt_errors() {
    assert_eq!(
        error(&["-L", "--bogus"]),
        ("--bogus: unknown option".into(), 255)
    );
    assert_eq!(
        error(&["-L", "--tcp"]),
        ("--tcp: unknown option".into(), 255)
    );
    assert_eq!(
        error(&["-A", "-t", "1.2.3.4:80", "-p", "-5"]),
        ("-5: unknown option".into(), 255)
    );
    assert_eq!(
        error(&["--set", "-1", "2", "3"]),
        ("-1: unknown option".into(), 255)
    );
    assert_eq!(
        error(&["-A", "-t", "1.2.3.4:80", "-s"]),
        ("-s: missing argument".into(), 255)
    );
    assert_eq!(
        error(&["-A", "-t", "1.2.3.4:80", "--pe"]),
        ("--pe: missing argument".into(), 255)
    );
    assert_eq!(error(&["-At"]), ("-At: missing argument".into(), 255));
    assert_eq!(
        error(&["-L", "--stats=1"]),
        ("--stats=1: option does not take an argument".into(), 255)
    );
    assert_eq!(
        error(&["-L", "--stats="]),
        ("--stats=: option does not take an argument".into(), 255)
    );
    assert_eq!(error(&["-L", "-n=1"]), ("-n=1: unknown option".into(), 255));
    assert_eq!(
        error(&["-L", "-n==1"]),
        ("-n==1: option does not take an argument".into(), 255)
    );
    assert_eq!(error(&["-L", "-nq"]), ("-nq: unknown option".into(), 255));
    assert_eq!(error(&["-L", "---n"]), ("---n: unknown option".into(), 255));
    // popt errors come after the options before them were applied.
    fails(
        &["-L", "-n", "-n", "--bogus"],
        "multiple 'numeric' options specified",
    );
    // --atomic is known only to -R.
    assert_eq!(
        error(&["-L", "--atomic"]),
        ("--atomic: unknown option".into(), 255)
    );
}

#[test]
fn popt_error_kinds() {
    let error = parse_command_line(&argv(&["-L", "--bogus"]), false).unwrap_err();
    assert_eq!(error.kind, ErrorKind::Popt);
    let error = parse_command_line(&argv(&["-L", "-L"]), false).unwrap_err();
    assert_eq!(error.kind, ErrorKind::Fail);
    let error = parse_command_line(&argv(&["-n"]), false).unwrap_err();
    assert_eq!(error.kind, ErrorKind::TryHelp);
}

#[test]
fn bundling_and_attached_values() {
    let line = ok(&["-Ln"]);
    assert!(line.has(Column::Numeric));
    let line = ok(&["-Lnt", "10.0.0.1:80"]);
    assert!(line.has(Column::Service));
    assert_eq!(line.service.port, 80);
    let line = ok(&["-At", "1.2.3.4:80"]);
    assert_eq!(line.service.addr[..4], [1, 2, 3, 4]);
    let line = ok(&["-A", "-t1.2.3.4:80", "-swrr"]);
    assert_eq!(line.service.scheduler, b"wrr");
    let line = ok(&["-A", "-t", "1.2.3.4:80", "-s=rr"]);
    assert_eq!(line.service.scheduler, b"rr");
    let line = ok(&["-A", "-t", "1.2.3.4:80", "-s==rr"]);
    assert_eq!(line.service.scheduler, b"rr");
    let line = ok(&["-A", "--tcp-service=1.2.3.4:80", "--scheduler", "sh"]);
    assert_eq!(line.service.scheduler, b"sh");
    let line = ok(&["-A", "-t", "1.2.3.4:80", "--scheduler="]);
    assert_eq!(line.service.scheduler, b"wlc", "empty means the default");
}

#[test]
fn a_required_value_may_start_with_a_dash() {
    fails(
        &["-A", "-t", "-s"],
        "illegal virtual server address[:port] specified",
    );
}

#[test]
fn persistent_takes_an_optional_value() {
    let timeout = |args: &[&str]| ok(args).service.timeout;
    assert_eq!(timeout(&["-A", "-t", "1.2.3.4:0", "-p"]), 360);
    assert_eq!(timeout(&["-A", "-t", "1.2.3.4:0", "-p60"]), 60);
    assert_eq!(timeout(&["-A", "-t", "1.2.3.4:0", "-p=59"]), 59);
    assert_eq!(timeout(&["-A", "-t", "1.2.3.4:0", "--persistent=61"]), 61);
    assert_eq!(
        timeout(&["-A", "-t", "1.2.3.4:0", "--persistent", "62"]),
        62
    );
    assert_eq!(timeout(&["-A", "-t", "1.2.3.4:0", "-p", "-s", "rr"]), 360);
    assert_eq!(timeout(&["-A", "-p", "-t", "1.2.3.4:0"]), 360);
    assert_eq!(
        ok(&["-A", "-t", "1.2.3.4:0", "-p"]).service.flags,
        SVC_F_PERSISTENT
    );
    fails(
        &["-A", "-t", "1.2.3.4:0", "-p", "rr"],
        "invalid timeout value `rr' specified",
    );
    fails(
        &["-A", "-t", "1.2.3.4:0", "-p", ""],
        "invalid timeout value `' specified",
    );
    fails(
        &["-A", "-t", "1.2.3.4:0", "-p0"],
        "invalid timeout value `0' specified",
    );
    fails(
        &["-A", "-t", "1.2.3.4:0", "-p2678401"],
        "invalid timeout value `2678401' specified",
    );
    assert_eq!(timeout(&["-A", "-t", "1.2.3.4:0", "-p2678400"]), 2678400);
}

#[test]
fn double_dash_ends_the_options() {
    fails(&["-L", "--", "-n"], "unexpected argument -n");
    fails(&["-L", "-"], "unexpected argument -");
}

// --- Options and values -------------------------------------------------

#[test]
fn repeated_options_share_an_index() {
    fails(
        &["-A", "-t", "1.2.3.4:80", "-u", "1.2.3.4:80"],
        "multiple 'service-address' options specified",
    );
    fails(
        &["-A", "-t", "1.2.3.4:80", "-f", "1"],
        "multiple 'service-address' options specified",
    );
    fails(
        &["-a", "-t", "1.2.3.4:80", "-r", "1.1.1.1", "-m", "-g"],
        "multiple 'forwarding-method' options specified",
    );
    fails(
        &["-L", "--stats", "--stats"],
        "multiple 'stats' options specified",
    );
    // Checked before the value.
    fails(
        &["-A", "-s", "rr", "-s", ""],
        "multiple 'scheduler' options specified",
    );
}

#[test]
fn sort_and_ipv6_are_outside_the_matrix() {
    assert_eq!(ok(&["-C", "--sort", "--sort"]).command, Command::Flush);
    let line = ok(&["-D", "-f", "1", "-6", "-6"]);
    assert_eq!(line.service.af, AF_INET6);
    fails(&["-A", "-6", "-f", "1"], "-6 used before -f\n");
    fails(&["-Z", "-t", "1.2.3.4:80", "-6"], "-6 used before -f\n");
}

#[test]
fn string_to_number_is_strtol() {
    for (text, expected) in [
        (" 5", Some(5)),
        ("+5", Some(5)),
        ("007", Some(7)),
        ("-0", Some(0)),
        ("5 ", None),
        ("0x10", None),
        ("1.5", None),
        ("", None),
        ("+", None),
        (" ", None),
        ("99999999999999999999", None),
    ] {
        assert_eq!(
            string_to_number(text.as_bytes(), 0, i64::from(i32::MAX)),
            expected,
            "{text:?}"
        );
    }
}

#[test]
fn weights_and_thresholds() {
    assert_eq!(
        ok(&[
            "-a",
            "-t",
            "1.2.3.4:80",
            "-r",
            "1.1.1.1",
            "-w",
            "2147483647"
        ])
        .dest
        .weight,
        2147483647
    );
    assert_eq!(
        ok(&["-a", "-t", "1.2.3.4:80", "-r", "1.1.1.1", "-w", "0"])
            .dest
            .weight,
        0
    );
    fails(
        &[
            "-a",
            "-t",
            "1.2.3.4:80",
            "-r",
            "1.1.1.1",
            "-w",
            "2147483648",
        ],
        "illegal weight specified",
    );
    fails(
        &["-a", "-t", "1.2.3.4:80", "-r", "1.1.1.1", "-w", "-1"],
        "illegal weight specified",
    );
    fails(
        &["-a", "-t", "1.2.3.4:80", "-r", "1.1.1.1", "-x", "x"],
        "illegal u_threshold specified",
    );
    fails(
        &["-a", "-t", "1.2.3.4:80", "-r", "1.1.1.1", "-y", "1e3"],
        "illegal l_threshold specified",
    );
    let line = ok(&[
        "-e",
        "-t",
        "1.2.3.4:80",
        "-r",
        "1.1.1.1",
        "-x",
        "10",
        "-y",
        "20",
    ]);
    assert_eq!((line.dest.u_threshold, line.dest.l_threshold), (10, 20));
}

#[test]
fn fwmarks() {
    assert_eq!(ok(&["-A", "-f", "4294967295"]).service.fwmark, u32::MAX);
    assert_eq!(ok(&["-A", "-f", " 1"]).service.fwmark, 1);
    for bad in ["0", "4294967296", "12abc", "-1", "", "-0"] {
        fails(
            &["-A", "-f", bad],
            &format!("invalid fwmark value `{bad}' specified"),
        );
    }
    let line = ok(&["-A", "-f", "1"]);
    assert_eq!(
        (line.service.af, line.service.protocol),
        (AF_INET, IPPROTO_TCP)
    );
}

#[test]
fn service_addresses() {
    let service = |text: &str| {
        let mut service = ServiceArgs {
            protocol: IPPROTO_TCP,
            ..ServiceArgs::default()
        };
        let result = parse_service(text.as_bytes(), &mut service);
        (result, service.address().to_string(), service.port)
    };
    assert_eq!(service("10.0.0.1:80"), (3, "10.0.0.1".into(), 80));
    assert_eq!(service("10.0.0.1"), (1, "10.0.0.1".into(), 0));
    assert_eq!(service("1.2.3"), (1, "1.2.0.3".into(), 0));
    assert_eq!(service("0x0a000001:80"), (3, "10.0.0.1".into(), 80));
    assert_eq!(service("[::1]:80"), (3, "::1".into(), 80));
    assert_eq!(service("::1"), (1, "::1".into(), 0));
    assert_eq!(service("2001:db8::1:80"), (1, "2001:db8::1:80".into(), 0));
    assert_eq!(service("[10.0.0.1]:80"), (1, "10.0.0.1".into(), 0));
    assert_eq!(service("10.0.0.1:").0, SERVICE_NONE);
    assert_eq!(service("10.0.0.1:80:90").0, SERVICE_NONE);
    assert_eq!(service("1234").0, SERVICE_NONE);
    assert_eq!(service("").0, SERVICE_NONE);
    assert_eq!(service("[::1]80").0, SERVICE_NONE);
    assert_eq!(service("[::1").0, SERVICE_NONE);
    assert_eq!(service("10.0.0.1:65536").0, SERVICE_NONE);
    assert_eq!(service("localhost:80"), (3, "127.0.0.1".into(), 80));
    let mut ipv6 = ServiceArgs::default();
    parse_service(b"[2001:db8::1]:443", &mut ipv6);
    assert_eq!((ipv6.af, ipv6.netmask), (AF_INET6, 128));
}

#[test]
fn service_names_use_the_protocol_parsed_so_far() {
    if service_to_port(b"http", IPPROTO_TCP) != Some(80) {
        return; // no /etc/services here
    }
    assert_eq!(ok(&["-A", "-t", "10.0.0.1:http"]).service.port, 80);
    assert_eq!(ok(&["-A", "-u", "10.0.0.1:domain"]).service.port, 53);
    // -r before any service: protocol 0, names are not looked up.
    fails(
        &["-a", "-r", "10.0.0.2:http", "-t", "10.0.0.1:80"],
        "illegal real server address[:port] specified",
    );
    // A fwmark is TCP for -r.
    assert_eq!(ok(&["-a", "-f", "1", "-r", "10.0.0.2:http"]).dest.port, 80);
}

#[test]
fn inet_aton_is_glibc() {
    let aton = |text: &str| inet_aton(text.as_bytes()).map(Ipv4Addr::from);
    assert_eq!(aton("1.2.3.4"), Some(Ipv4Addr::new(1, 2, 3, 4)));
    assert_eq!(aton("24"), Some(Ipv4Addr::new(0, 0, 0, 24)));
    assert_eq!(aton("1.2.3"), Some(Ipv4Addr::new(1, 2, 0, 3)));
    assert_eq!(aton("1.65535"), Some(Ipv4Addr::new(1, 0, 255, 255)));
    assert_eq!(aton("010.0.0.1"), Some(Ipv4Addr::new(8, 0, 0, 1)));
    assert_eq!(aton("0x7f.1"), Some(Ipv4Addr::new(127, 0, 0, 1)));
    assert_eq!(aton("1.2.3.4 junk"), Some(Ipv4Addr::new(1, 2, 3, 4)));
    assert_eq!(aton("1.2.3.256"), None);
    assert_eq!(aton("1.2.3.4.5"), None);
    assert_eq!(aton("08"), None);
    assert_eq!(aton("1."), None);
    assert_eq!(aton(" 1.2.3.4"), None);
    assert_eq!(aton("4294967296"), None);
}

#[test]
fn netmasks_depend_on_the_family_so_far() {
    let netmask = |args: &[&str]| ok(args).service.netmask;
    assert_eq!(
        netmask(&["-A", "-t", "1.2.3.4:80", "-M", "24"]),
        u32::from_ne_bytes([0, 0, 0, 24])
    );
    assert_eq!(
        netmask(&["-A", "-t", "1.2.3.4:80", "-M", "255.255.255.0"]),
        u32::from_ne_bytes([255, 255, 255, 0])
    );
    assert_eq!(netmask(&["-A", "-t", "1.2.3.4:80"]), 0xffff_ffff);
    assert_eq!(netmask(&["-A", "-M", "64", "-t", "[2001:db8::1]:80"]), 128);
    assert_eq!(
        netmask(&["-A", "-t", "[2001:db8::1]:80", "-M", "64abc"]),
        64
    );
    assert_eq!(netmask(&["-A", "-f", "1", "-M", "24", "-6"]), 128);
    fails(
        &["-A", "-t", "1.2.3.4:80", "-M", "bad mask!"],
        "illegal virtual server persistent mask specified",
    );
    fails(
        &["-A", "-f", "1", "-6", "-M", "255.255.255.0"],
        "illegal ipv6 netmask specified",
    );
    fails(
        &["-A", "-t", "[::1]:80", "-M", "0"],
        "illegal ipv6 netmask specified",
    );
    fails(
        &["-A", "-t", "[::1]:80", "-M", "129"],
        "illegal ipv6 netmask specified",
    );
}

#[test]
fn names_are_truncated() {
    let line = ok(&[
        "-A",
        "-t",
        "1.2.3.4:80",
        "-s",
        "abcdefghijklmnopqrstuvwxyz",
        "--pe",
        "abcdefghijklmnopqrstuvwxyz",
    ]);
    assert_eq!(line.service.scheduler, b"abcdefghijklmno");
    assert_eq!(line.service.pe_name, b"abcdefghijklmnop");
    let line = ok(&[
        "--start-daemon",
        "master",
        "--mcast-interface",
        "abcdefghijklmnopqrstuvwxyz",
    ]);
    assert_eq!(line.daemon.mcast_ifn, b"abcdefghijklmno");
}

#[test]
fn sched_flags() {
    let flags = |args: &[&str]| ok(args).service.flags;
    assert_eq!(
        flags(&["-A", "-t", "1.2.3.4:80", "-b", "flag-1,flag-3"]),
        0x28
    );
    assert_eq!(
        flags(&["-A", "-t", "1.2.3.4:80", "-b", "sh-port", "-s", "sh"]),
        0x10
    );
    assert_eq!(
        flags(&[
            "-A",
            "-t",
            "1.2.3.4:80",
            "-s",
            "mh",
            "-b",
            ",,mh-fallback,,"
        ]),
        0x08
    );
    assert_eq!(flags(&["-A", "-t", "1.2.3.4:80", "-b", ""]), 0);
    fails(
        &["-A", "-t", "1.2.3.4:80", "-b", "sh-port"],
        "incompatible scheduler flag `sh-port'",
    );
    fails(
        &["-A", "-t", "1.2.3.4:80", "-b", "flag-1,bogus,nope"],
        "invalid scheduler flag `bogus'",
    );
    fails(
        &["-A", "-t", "1.2.3.4:80", "-b", ","],
        "invalid scheduler flag `'",
    );
    // Parsed before the matrix check.
    fails(
        &["-a", "-t", "1.2.3.4:80", "-r", "1.1.1.1", "-b", "bogus"],
        "invalid scheduler flag `bogus'",
    );
}

#[test]
fn daemon_options() {
    let line = ok(&[
        "--start-daemon",
        "master",
        "--syncid",
        "255",
        "--mcast-group",
        "ff02::1",
        "--mcast-port",
        "65535",
        "--mcast-ttl",
        "255",
        "--sync-maxlen",
        "65507",
    ]);
    assert_eq!(line.daemon.syncid, 255);
    assert_eq!(line.daemon.mcast_group, Some("ff02::1".parse().unwrap()));
    assert_eq!(
        (
            line.daemon.mcast_port,
            line.daemon.mcast_ttl,
            line.daemon.sync_maxlen
        ),
        (65535, 255, 65507)
    );
    let start = |extra: &[&str]| {
        let mut args = vec!["--start-daemon", "master"];
        args.extend_from_slice(extra);
        error(&args)
    };
    let message = |text: &str| (text.to_owned(), 2);
    assert_eq!(
        start(&["--syncid", "256"]),
        message("illegal syncid specified")
    );
    assert_eq!(
        start(&["--mcast-port", "0"]),
        message("illegal mcast-port specified")
    );
    assert_eq!(
        start(&["--mcast-ttl", "256"]),
        message("illegal mcast-ttl specified")
    );
    assert_eq!(
        start(&["--sync-maxlen", "65508"]),
        message("illegal sync-maxlen specified")
    );
    assert_eq!(
        start(&["--mcast-group", "10.0.0.1"]),
        message("invalid IPv4 mcast-group `10.0.0.1'")
    );
    assert_eq!(
        start(&["--mcast-group", "224.0.0.081"]),
        message("invalid IPv4 mcast-group `224.0.0.081'")
    );
    assert_eq!(
        start(&["--mcast-group", "::1"]),
        message("invalid IPv6 mcast-group `::1'")
    );
    assert_eq!(ok(&["--start-daemon", "master"]).daemon.mcast_ifn, b"eth0");
    assert_eq!(
        ok(&["--stop-daemon", "master", "--syncid", "3"])
            .daemon
            .syncid,
        3
    );
}

#[test]
fn tunnel_values() {
    let base = ["-a", "-t", "1.2.3.4:80", "-r", "1.1.1.1", "-i"];
    fn with_base<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        args
    }
    let with = |extra: &[&'static str]| with_base(&base, extra);
    fails(
        &with(&["--tun-type", "vxlan"]),
        "illegal tunnel type specified",
    );
    fails(
        &with(&["--tun-type", "gue", "--tun-port", "0"]),
        "illegal tunnel port specified",
    );
    let line = ok(&with(&["--tun-type", "gre", "--tun-csum"]));
    assert_eq!((line.dest.tun_type, line.dest.tun_flags), (2, 1));
    let line = ok(&with(&[
        "--tun-type",
        "gue",
        "--tun-port",
        "6080",
        "--tun-remcsum",
    ]));
    assert_eq!(
        (line.dest.tun_type, line.dest.tun_port, line.dest.tun_flags),
        (1, 6080, 2)
    );
}

#[test]
fn set_takes_three_timeouts() {
    assert_eq!(
        ok(&["--set", "900", "120", "300"]).timeouts,
        [900, 120, 300]
    );
    assert_eq!(
        ok(&["--set", "0", "0", "2678400"]).timeouts,
        [0, 0, 2678400]
    );
    fails(
        &["--set", "1", "2"],
        "--set option requires 3 timeout values",
    );
    fails(&["--set"], "--set option requires 3 timeout values");
    fails(&["--set", "1", "2", "3", "4"], "unexpected argument 4");
    fails(
        &["--set", "1", "x", "y"],
        "invalid timeout value `x' specified",
    );
    fails(
        &["--set", "1", "2", "2678401"],
        "invalid timeout value `2678401' specified",
    );
}

#[test]
fn unexpected_arguments() {
    fails(&["-L", "1"], "unexpected argument 1");
    fails(&["-C", "extra", "more"], "unexpected argument extra");
}

// --- The matrix and §3.8 ----------------------------------------------

#[test]
fn matrix_messages() {
    fails(
        &["-A"],
        "You need to supply the 'service-address' option for the 'add-service' command",
    );
    fails(
        &["-A", "-r", "1.2.3.4"],
        "You need to supply the 'service-address' option for the 'add-service' command",
    );
    fails(
        &["-a", "-t", "1.2.3.4:80"],
        "You need to supply the 'real-server' option for the 'add-server' command",
    );
    fails(
        &["-C", "-n"],
        "Illegal 'numeric' option with the 'flush' command",
    );
    fails(
        &["-S", "--nosort"],
        "Illegal 'nosort' option with the 'save' command",
    );
    fails(
        &["-S", "--exact"],
        "Illegal 'exact' option with the 'save' command",
    );
    fails(
        &["-L", "-o"],
        "Illegal 'ops' option with the 'list' command",
    );
    fails(
        &["-R", "-n"],
        "Illegal 'numeric' option with the 'restore' command",
    );
    fails(
        &["-Z", "-n"],
        "Illegal 'numeric' option with the 'zero' command",
    );
    fails(
        &["--set", "1", "2", "3", "-n"],
        "Illegal 'numeric' option with the 'set' command",
    );
    fails(
        &["--stop-daemon", "master", "--mcast-interface", "eth0"],
        "Illegal 'mcast-interface' option with the 'stop-daemon' command",
    );
    fails(
        &["-d", "-t", "1.2.3.4:80", "-r", "1.1.1.1", "-w", "1"],
        "Illegal 'weight' option with the 'delete-server' command",
    );
    fails(
        &["-D", "-t", "1.2.3.4:80", "-s", "rr"],
        "Illegal 'scheduler' option with the 'delete-service' command",
    );
    fails(
        &["-E", "-t", "1.2.3.4:80", "-r", "1.1.1.1"],
        "Illegal 'real-server' option with the 'edit-service' command",
    );
    fails(
        &["-L", "-c", "--timeout"],
        "The option 'timeout' conflicts with the 'connection' option in the 'list' command",
    );
    fails(
        &["-L", "--daemon", "--timeout"],
        "The option 'daemon' conflicts with the 'timeout' option in the 'list' command",
    );
    fails(
        &["-L", "-t", "1.2.3.4:80", "-c"],
        "The option 'service-address' conflicts with the 'connection' option in the 'list' command",
    );
    // -L accepts --syncid and --tun-info.
    ok(&["-L", "--syncid", "3", "--tun-info"]);
    ok(&["-S", "-n"]);
    ok(&["-Z", "-f", "1", "-6"]);
}

#[test]
fn list_conflicts_come_after_the_matrix() {
    fails(
        &["-L", "-c", "--stats"],
        "options conflicts in the list command",
    );
    fails(
        &["-L", "--timeout", "--rate"],
        "options conflicts in the list command",
    );
    fails(
        &["-L", "--daemon", "--thresholds"],
        "options conflicts in the list command",
    );
    fails(
        &["-L", "--daemon", "--persistent-conn"],
        "options conflicts in the list command",
    );
    ok(&["-L", "-c", "--persistent-conn"]);
    ok(&["-L", "--stats", "--rate", "--exact"]);
    ok(&["-L", "--daemon", "--tun-info"]);
}

#[test]
fn add_and_edit_service_checks() {
    fails(
        &["-A", "-t", "1.2.3.4"],
        "Zero port specified for non-persistent service",
    );
    fails(
        &["-E", "-t", "1.2.3.4:0"],
        "Zero port specified for non-persistent service",
    );
    ok(&["-A", "-t", "1.2.3.4", "-p"]);
    ok(&["-A", "-f", "1"]);
    fails(
        &["-A", "-t", "1.2.3.4:80", "-o"],
        "One-Packet Scheduling is only for UDP virtual services",
    );
    fails(
        &["-A", "--sctp-service", "1.2.3.4:80", "-o"],
        "One-Packet Scheduling is only for UDP virtual services",
    );
    ok(&["-A", "-u", "1.2.3.4:53", "-o"]);
    ok(&["-A", "-f", "1", "-o"]);
    // The zero port check comes before the ops one.
    fails(
        &["-A", "-t", "1.2.3.4", "-o"],
        "Zero port specified for non-persistent service",
    );
    assert_eq!(ok(&["-E", "-t", "1.2.3.4:80"]).service.scheduler, b"wlc");
    assert_eq!(ok(&["-D", "-t", "1.2.3.4:80"]).service.scheduler, b"");
}

#[test]
fn server_ports() {
    let port = |args: &[&str]| ok(args).dest.port;
    assert_eq!(
        port(&["-a", "-t", "1.2.3.4:80", "-r", "5.6.7.8:8080", "-g"]),
        80
    );
    assert_eq!(port(&["-a", "-t", "1.2.3.4:80", "-r", "5.6.7.8:8080"]), 80);
    assert_eq!(
        port(&["-a", "-t", "1.2.3.4:80", "-r", "5.6.7.8:8080", "-i"]),
        80
    );
    assert_eq!(
        port(&["-a", "-t", "1.2.3.4:80", "-r", "5.6.7.8:8080", "-m"]),
        8080
    );
    assert_eq!(port(&["-a", "-t", "1.2.3.4:80", "-r", "5.6.7.8", "-m"]), 80);
    assert_eq!(port(&["-a", "-r", "5.6.7.8", "-t", "1.2.3.4:80", "-m"]), 0);
    assert_eq!(port(&["-a", "-f", "1", "-r", "5.6.7.8:8080", "-g"]), 8080);
    assert_eq!(port(&["-a", "-f", "1", "-r", "5.6.7.8"]), 0);
    assert_eq!(
        port(&["-d", "-t", "1.2.3.4:80", "-r", "5.6.7.8:8080"]),
        8080
    );
    assert_eq!(port(&["-d", "-t", "1.2.3.4:80", "-r", "5.6.7.8"]), 80);
    assert_eq!(
        port(&["-a", "-t", "1.2.3.4:80", "-r", "[10.0.0.1]:90", "-m"]),
        80
    );
}

#[test]
fn server_checks() {
    fails(
        &["-a", "-t", "[2001:db8::1]:80", "-r", "1.1.1.1"],
        "Different address family is allowed only for tunneling servers",
    );
    fails(
        &["-a", "-f", "1", "-6", "-r", "1.1.1.1", "-m"],
        "Different address family is allowed only for tunneling servers",
    );
    ok(&["-a", "-t", "[2001:db8::1]:80", "-r", "1.1.1.1", "-i"]);
    fails(
        &[
            "-a",
            "-t",
            "1.2.3.4:80",
            "-r",
            "1.1.1.1",
            "--tun-type",
            "gre",
        ],
        "Tunnel options conflict with forward method",
    );
    fails(
        &[
            "-e",
            "-t",
            "1.2.3.4:80",
            "-r",
            "1.1.1.1",
            "-m",
            "--tun-csum",
        ],
        "Tunnel options conflict with forward method",
    );
    fails(
        &[
            "-a",
            "-t",
            "1.2.3.4:80",
            "-r",
            "1.1.1.1",
            "-i",
            "--tun-type",
            "gue",
        ],
        "You need to supply the 'tun-port' option for the 'gue' tunnel type",
    );
    fails(
        &[
            "-a",
            "-t",
            "1.2.3.4:80",
            "-r",
            "1.1.1.1",
            "-i",
            "--tun-port",
            "6080",
        ],
        "Illegal 'tun-port' option with the 'ipip' tunnel type",
    );
    fails(
        &[
            "-a",
            "-t",
            "1.2.3.4:80",
            "-r",
            "1.1.1.1",
            "-i",
            "--tun-type",
            "gue",
            "--tun-port",
            "1",
            "--tun-csum",
            "--tun-remcsum",
        ],
        "The option 'tun-remcsum' conflicts with the 'tun-csum' option in the 'gue' tunnel type",
    );
    fails(
        &[
            "-a",
            "-t",
            "1.2.3.4:80",
            "-r",
            "1.1.1.1",
            "-i",
            "--tun-type",
            "gre",
            "--tun-remcsum",
        ],
        "Illegal 'tun-remcsum' option with the 'gre' tunnel type",
    );
    fails(
        &[
            "-a",
            "-t",
            "1.2.3.4:80",
            "-r",
            "1.1.1.1",
            "-i",
            "--tun-nocsum",
        ],
        "Illegal 'tun-nocsum' option with the 'ipip' tunnel type",
    );
    ok(&[
        "-a",
        "-t",
        "1.2.3.4:80",
        "-r",
        "1.1.1.1",
        "-i",
        "--tun-type",
        "gue",
        "--tun-port",
        "1",
        "--tun-nocsum",
    ]);
    ok(&[
        "-a",
        "-t",
        "1.2.3.4:80",
        "-r",
        "1.1.1.1",
        "-i",
        "--tun-type",
        "ipip",
    ]);
}

// --- -R lines ---------------------------------------------------------

#[test]
fn restore_inside_restore_is_tryhelp() {
    assert_eq!(error_in(&["-R"], true), (TRY_HELP.to_owned(), 255));
    // The matrix comes first.
    assert_eq!(
        error_in(&["-R", "-n"], true),
        (
            "Illegal 'numeric' option with the 'restore' command".to_owned(),
            2
        )
    );
    assert!(ok(&["-R", "--atomic"]).atomic);
}

#[test]
fn restore_lines_parse_like_command_lines() {
    // What a `#` line and a trailing comment become (§8).
    assert_eq!(
        error_in(&["#", "a", "comment"], true),
        (TRY_HELP.to_owned(), 255)
    );
    // With a command after it, the `#` is a left-over word.
    assert_eq!(
        error_in(&["#", "-C"], true),
        ("unexpected argument #".to_owned(), 2)
    );
    assert_eq!(
        error_in(&["-C", "#", "comment"], true),
        ("unexpected argument #".to_owned(), 2)
    );
    assert_eq!(
        error_in(&["-A", "-t", "\"10.0.0.1:80\""], true),
        (
            "illegal virtual server address[:port] specified".to_owned(),
            2
        )
    );
    let line = parse_command_line(
        &argv(&["-a", "-t", "10.0.0.1:80", "-r", "10.0.0.2", "-m", "-w", "3"]),
        true,
    );
    assert!(matches!(line, Ok(Parsed::Command(_))));
}

#[test]
fn non_utf8_arguments_are_echoed_as_given() {
    let mut args = argv(&["-L"]);
    args.push(b"\xff\xfe".to_vec());
    let error = parse_command_line(&args, false).unwrap_err();
    assert_eq!(error.message, b"unexpected argument \xff\xfe\n");
}

// --- --json (an ipvsctl extension) --------------------------------------

#[test]
fn json_goes_with_every_listing() {
    for args in [
        &["-L", "--json"][..],
        &["-l", "--json"],
        &["--list", "--json"],
        &["-L", "-n", "--json"],
        &["-Ln", "--json"],
        &["-L", "--json", "-n"],
        &["-L", "-t", "10.0.0.1:80", "--json"],
        &["-L", "-u", "10.0.0.1:53", "--json", "--stats"],
        &["-L", "--sctp-service", "10.0.0.1:80", "--json"],
        &["-L", "-f", "1", "-6", "--json"],
        &["-L", "--stats", "--rate", "--exact", "--json"],
        &["-L", "--thresholds", "--json"],
        &["-L", "--persistent-conn", "--json"],
        &["-L", "--tun-info", "--json"],
        &["-L", "--nosort", "--json"],
        &["-L", "-c", "--json"],
        &["-Lc", "--persistent-conn", "-n", "--json"],
        &["-L", "--timeout", "--json"],
        &["-L", "--daemon", "--json"],
        &["-L", "--json", "--sort", "--syncid", "7"],
    ] {
        assert!(ok(args).json, "{args:?}");
    }
    assert!(!ok(&["-L"]).json);
    assert!(!ok(&["-L", "-c"]).json);
}

#[test]
fn json_comes_after_ipvsadms_own_checks() {
    fails(
        &["-L", "-c", "--stats", "--json"],
        "options conflicts in the list command",
    );
    fails(
        &["-L", "--timeout", "--persistent-conn", "--json"],
        "options conflicts in the list command",
    );
    fails(
        &["-L", "--json", "-r", "10.0.0.2"],
        "Illegal 'real-server' option with the 'list' command",
    );
    fails(
        &["-L", "--json", "-t", "10.0.0.1:80", "-f", "1"],
        "multiple 'service-address' options specified",
    );
    fails(&["-L", "--json", "extra"], "unexpected argument extra");
    fails(
        &["-A", "--json"],
        "You need to supply the 'service-address' option for the 'add-service' command",
    );
    fails(
        &["-L", "--json", "--json"],
        "multiple 'json' options specified",
    );
    assert_eq!(
        error(&["-L", "--json=1"]),
        ("--json=1: option does not take an argument".into(), 255)
    );
}

#[test]
fn json_with_a_command_that_lists_nothing_is_a_usage_error() {
    let service = ["-t", "10.0.0.1:80"];
    let server = ["-t", "10.0.0.1:80", "-r", "10.0.0.2"];
    for (args, command) in [
        (&["-S", "--json"][..], "save"),
        (&["-Sn", "--json"], "save"),
        (&["-A", service[0], service[1], "--json"], "add-service"),
        (&["-E", service[0], service[1], "--json"], "edit-service"),
        (&["-D", service[0], service[1], "--json"], "delete-service"),
        (&["-C", "--json"], "flush"),
        (
            &["-a", server[0], server[1], server[2], server[3], "--json"],
            "add-server",
        ),
        (
            &["-e", server[0], server[1], server[2], server[3], "--json"],
            "edit-server",
        ),
        (
            &["-d", server[0], server[1], server[2], server[3], "--json"],
            "delete-server",
        ),
        (&["--set", "1", "2", "3", "--json"], "set"),
        (&["--start-daemon", "master", "--json"], "start-daemon"),
        (&["--stop-daemon", "backup", "--json"], "stop-daemon"),
        (&["-R", "--json"], "restore"),
        (&["-R", "--atomic", "--json"], "restore"),
        (&["-Z", "--json"], "zero"),
    ] {
        fails(
            args,
            &format!(
                "Illegal 'json' option with the '{command}' command: --json goes with -L/-l only"
            ),
        );
    }
}

#[test]
fn json_is_unknown_before_the_command_and_on_restore_lines() {
    assert_eq!(error(&["--json", "-L"]), (TRY_HELP.to_owned(), 255));
    assert_eq!(error(&["--json"]), (TRY_HELP.to_owned(), 255));
    // A restore's lines are ipvsadm's rules: a popt error, and the restore
    // goes on.
    assert_eq!(
        error_in(&["-L", "--json"], true),
        ("--json: unknown option".into(), 255)
    );
    let restore_line =
        parse_command_line(&argv(&["-A", "-t", "10.0.0.1:80", "--json"]), true).unwrap_err();
    assert_eq!(restore_line.kind, ErrorKind::Popt);
    // --atomic stays -R's alone.
    assert_eq!(
        error(&["-L", "--json", "--atomic"]),
        ("--atomic: unknown option".into(), 255)
    );
}

#[test]
fn the_help_is_ipvsadms_without_the_extensions() {
    let help = String::from_utf8(help_text(b"ipvsadm")).unwrap();
    for option in OPTIONS.iter().filter(|option| option.extension) {
        assert!(
            !help.contains(&format!("--{}", option.long)),
            "{}",
            option.long
        );
    }
}
