use super::*;

fn switch(key: Key) -> Switch {
    switches()
        .into_iter()
        .find(|switch| switch.key == key)
        .unwrap_or_else(|| panic!("no switch for {key:?}"))
}

fn generated(name: &str) -> String {
    files()
        .into_iter()
        .find(|file| file.name == name)
        .unwrap_or_else(|| panic!("no generated file {name}"))
        .contents
}

// --- The model ----------------------------------------------------------

#[test]
fn switches_gather_the_entries_of_one_key() {
    let list = switch(Key::Command(Command::List));
    assert_eq!(list.words(), ["-L", "-l", "--list"]);
    assert_eq!(list.name(), "-L");
    assert_eq!(list.help, "list the table");
    assert_eq!(switch(Key::SctpService).name(), "--sctp-service");
    // Every entry of the table is in exactly one switch.
    let spellings: usize = switches().iter().map(|switch| switch.words().len()).sum();
    let entries: usize = OPTIONS
        .iter()
        .map(|option| usize::from(option.short.is_some()) + usize::from(!option.long.is_empty()))
        .sum();
    assert_eq!(spellings, entries);
}

#[test]
fn acceptance_follows_the_matrix() {
    for command in Command::ALL {
        let row = command.matrix_row();
        for switch in switches().iter().filter(|switch| !switch.is_command()) {
            let Some(column) = switch.column() else {
                continue;
            };
            let expected = match row[column.index()] {
                b'+' => Acceptance::Required,
                b'1' => Acceptance::OneOf,
                b'x' => Acceptance::Illegal,
                _ => Acceptance::Optional,
            };
            assert_eq!(
                acceptance(command, switch),
                expected,
                "{command:?} {switch:?}"
            );
        }
    }
}

#[test]
fn acceptance_outside_the_matrix_asks_the_parser() {
    for command in Command::ALL {
        assert_eq!(
            acceptance(command, &switch(Key::Ipv6)),
            Acceptance::Optional
        );
        assert_eq!(
            acceptance(command, &switch(Key::Sort)),
            Acceptance::Optional
        );
        let atomic = if command == Command::Restore {
            Acceptance::Optional
        } else {
            Acceptance::Illegal
        };
        assert_eq!(
            acceptance(command, &switch(Key::Atomic)),
            atomic,
            "{command:?}"
        );
        // Commands, -h and -v are never taken after a command.
        assert_eq!(acceptance(command, &switch(Key::Help)), Acceptance::Illegal);
        assert_eq!(
            acceptance(command, &switch(Key::Command(Command::List))),
            Acceptance::Illegal
        );
    }
}

#[test]
fn every_switch_after_a_command_is_taken_by_one() {
    for switch in switches().iter().filter(|switch| !switch.is_command()) {
        assert!(!accepted_by(switch).is_empty(), "{switch:?}");
    }
}

#[test]
fn ipv6_is_offered_only_where_a_mark_may_come_before_it() {
    for command in Command::ALL {
        let offered = switches_of(command)
            .iter()
            .any(|switch| switch.key == Key::Ipv6);
        let takes_a_mark = acceptance(command, &switch(Key::FwmarkService)) != Acceptance::Illegal;
        assert_eq!(offered, takes_a_mark, "{command:?}");
    }
}

#[test]
fn command_groups_cover_every_command_once() {
    let grouped: Vec<Command> = command_groups()
        .into_iter()
        .flat_map(|(commands, _)| commands)
        .collect();
    assert_eq!(grouped.len(), Command::ALL.len());
    for command in Command::ALL {
        assert!(grouped.contains(&command), "{command:?}");
    }
}

#[test]
fn values_come_from_the_parser_tables() {
    assert_eq!(
        switch(Key::Scheduler).values(),
        Values::OneOf(SCHEDULERS.to_vec())
    );
    assert_eq!(
        switch(Key::Command(Command::StartDaemon)).values(),
        Values::OneOf(vec![("master", ""), ("backup", "")])
    );
    assert_eq!(
        switch(Key::TunType).values(),
        Values::OneOf(vec![("ipip", ""), ("gue", ""), ("gre", "")])
    );
    assert_eq!(switch(Key::Pe).values(), Values::OneOf(vec![("sip", "")]));
    assert_eq!(
        switch(Key::SchedFlags).values(),
        Values::CommaSeparated(SCHED_FLAGS.iter().map(|(name, ..)| *name).collect())
    );
    assert_eq!(switch(Key::McastInterface).values(), Values::Interface);
    assert_eq!(switch(Key::TcpService).values(), Values::Free);
    assert_eq!(switch(Key::Numeric).values(), Values::None);
    // --set's value name stands for positional arguments, not a value.
    assert_eq!(switch(Key::Command(Command::Set)).values(), Values::None);
}

// --- The man page -------------------------------------------------------

#[test]
fn the_man_page_documents_every_switch() {
    let page = generated("ipvsctl.8");
    for switch in switches() {
        for word in switch.words() {
            assert!(
                page.contains(&format!("\\fB{}\\fR", word.replace('-', "\\-"))),
                "{word} is not in the man page"
            );
        }
    }
}

#[test]
fn ipvsadm_switches_have_their_own_text() {
    // Extensions may make do with their help line; ipvsadm's own options
    // deserve more than its terse help.
    for switch in switches().iter().filter(|switch| !switch.extension) {
        assert!(man::details(switch.key).is_some(), "{switch:?}");
    }
}

#[test]
fn the_man_page_places_extensions_in_their_section() {
    let page = generated("ipvsctl.8");
    let extensions = &page[page.find(".SH EXTENSIONS").unwrap()..page.find(".SH \"EXIT").unwrap()];
    assert!(extensions.contains("\\fB\\-\\-atomic\\fR"));
    assert!(extensions.contains("Accepted by \\fB\\-R\\fR."));
    let options = &page[page.find(".SH OPTIONS").unwrap()..page.find(".SH EXTENSIONS").unwrap()];
    assert!(!options.contains("atomic"));
    // The synopsis adds the form that takes it.
    assert!(page.contains("\\fB\\-R\\fR [\\fB\\-\\-atomic\\fR]"));
}

#[test]
fn the_man_page_synopsis_is_the_help_usage() {
    let page = generated("ipvsctl.8");
    assert!(page.contains(
        ".br\n\\fBipvsctl\\fR \\fB\\-A|E\\fR \\fIvirtual-service\\fR [\\fB\\-s\\fR \
         \\fIscheduler\\fR] [\\fB\\-p\\fR [\\fItimeout\\fR]]"
    ));
    assert!(page.contains(
        ".br\n\\fBipvsctl\\fR \\fB\\-\\-start\\-daemon\\fR {\\fImaster|backup\\fR} \
         [\\fIdaemon-options\\fR]\n"
    ));
    let help = String::from_utf8(cli::help_text(b"ipvsctl")).unwrap();
    let forms = help
        .lines()
        .filter(|line| line.starts_with("  ipvsctl "))
        .count();
    let synopsis = &page[page.find(".SH SYNOPSIS").unwrap()..page.find(".SH DESCRIPTION").unwrap()];
    // Then one form per command that takes extensions.
    let extension_forms = Command::ALL
        .iter()
        .filter(|command| {
            switches().iter().any(|switch| {
                switch.extension && acceptance(**command, switch) != Acceptance::Illegal
            })
        })
        .count();
    assert_eq!(synopsis.matches(".br\n").count(), forms + extension_forms);
}

#[test]
fn the_man_page_says_what_the_matrix_says() {
    let page = generated("ipvsctl.8");
    assert!(page.contains(
        "Needs \\fB\\-t\\fR, \\fB\\-u\\fR, \\fB\\-\\-sctp\\-service\\fR or \\fB\\-f\\fR and \
         \\fB\\-r\\fR."
    ));
    assert!(page.contains("Only one of \\fB\\-m\\fR, \\fB\\-i\\fR and \\fB\\-g\\fR may be given."));
    assert!(page.contains(
        "Accepted by \\fB\\-L\\fR, \\fB\\-\\-start\\-daemon\\fR and \\fB\\-\\-stop\\-daemon\\fR."
    ));
    assert!(page.contains(
        "Tunnel types (\\fB\\-\\-tun\\-type\\fR): required with gue; not allowed with ipip and gre."
    ));
}

#[test]
fn the_man_page_exit_statuses_are_the_code_s() {
    let page = generated("ipvsctl.8");
    let section =
        &page[page.find(".SH \"EXIT STATUS\"").unwrap()..page.find(".SH COMPATIBILITY").unwrap()];
    let statuses: Vec<&str> = section
        .lines()
        .filter_map(|line| line.strip_prefix(".B "))
        .collect();
    assert_eq!(statuses, ["0", "1", "2", "255"]);
}

#[test]
fn the_man_page_is_plain_roff() {
    let page = generated("ipvsctl.8");
    assert!(page.is_ascii(), "groff reads ASCII without preconv");
    for line in page.lines() {
        // A text line starting with `'` or `.` would be read as a request.
        if let Some(request) = line.strip_prefix('.') {
            let name = request.split([' ', '"']).next().unwrap();
            assert!(
                [
                    "\\", "TH", "SH", "PP", "TP", "IP", "B", "I", "BR", "br", "nh", "ad"
                ]
                .contains(&name),
                "unexpected request: {line}"
            );
        }
        assert!(!line.starts_with('\''), "{line}");
        // Unmatched markup would leave a backtick or asterisk behind.
        if !line.starts_with(".\\\"") {
            assert!(!line.contains('`'), "{line}");
            assert!(!line.contains('*'), "{line}");
        }
    }
}

#[test]
fn markup_becomes_fonts() {
    assert_eq!(
        man::markup("Use `-s` with *name*, or `--pe`."),
        "Use \\fB\\-s\\fR with \\fIname\\fR, or \\fB\\-\\-pe\\fR."
    );
    assert_eq!(man::markup(".starts with a dot"), "\\&.starts with a dot");
    assert_eq!(man::markup("a \\ backslash"), "a \\e backslash");
}

// --- The completions ----------------------------------------------------

#[test]
fn every_completion_offers_every_switch() {
    for name in ["ipvsctl.bash", "_ipvsctl", "ipvsctl.fish"] {
        let text = generated(name);
        for switch in switches() {
            for long in &switch.longs {
                let spelled = match name {
                    "ipvsctl.fish" => format!("-l {long}"),
                    _ => format!("--{long}"),
                };
                assert!(text.contains(&spelled), "{name}: {spelled}");
            }
            for short in &switch.shorts {
                let spelled = match name {
                    "ipvsctl.fish" => format!("-s {short}"),
                    _ => format!("-{short}"),
                };
                assert!(text.contains(&spelled), "{name}: {spelled}");
            }
        }
    }
}

#[test]
fn every_completion_offers_the_value_lists() {
    let mut words: Vec<&str> = SCHEDULERS.iter().map(|(name, _)| *name).collect();
    words.extend(DAEMON_STATES.iter().map(|(name, _)| *name));
    words.extend(TUNNEL_MATRIX.iter().map(|(name, _)| *name));
    words.extend(SCHED_FLAGS.iter().map(|(name, ..)| *name));
    words.extend(PERSISTENCE_ENGINES);
    for name in ["ipvsctl.bash", "_ipvsctl", "ipvsctl.fish"] {
        let text = generated(name);
        for word in &words {
            assert!(
                text.split(|character: char| !character.is_ascii_alphanumeric() && character != '-')
                    .any(|token| token == *word),
                "{name}: {word}"
            );
        }
    }
}

#[test]
fn generated_files_end_in_a_newline() {
    for file in files() {
        assert!(file.contents.ends_with('\n'), "{}", file.name);
        assert!(
            !file.contents.contains(" \n"),
            "{}: trailing space",
            file.name
        );
    }
}

#[test]
fn write_all_reports_what_changed() {
    let directory = std::env::temp_dir().join(format!("ipvsctl-generate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    let names: Vec<&str> = files().iter().map(|file| file.name).collect();
    assert_eq!(write_all(&directory).unwrap(), names);
    assert!(write_all(&directory).unwrap().is_empty());
    std::fs::write(directory.join("ipvsctl.8"), "stale").unwrap();
    assert_eq!(write_all(&directory).unwrap(), ["ipvsctl.8"]);
    std::fs::remove_dir_all(&directory).unwrap();
}
