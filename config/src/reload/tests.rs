//! Reading one block again gives what reading the whole file gives.

use super::*;

/// A configuration with what a block's reading takes from the rest of the
/// file: a group, global `smtp_alert`, a BFD instance and a tracked file
/// its checkers name, an e-mail address (an `@` that is no conditional),
/// and blocks whose reading warns.
fn base() -> String {
    let mut text = String::from(
        "global_defs {
    notification_email {
        admin@example.com
    }
    smtp_alert true
}
bfd_instance probe {
    neighbor_ip 10.0.0.1
}
track_file flag {
    file /tmp/flag
}
virtual_server_group web {
    192.0.2.1-2 80
}
virtual_server group web {
    protocol TCP
    lvs_method DR
    real_server 10.0.0.1 80 {
        weight 2
    }
}
virtual_server 192.0.2.9 80 {
    protocol TCP
    real_server 10.0.0.2 80 {
        BFD_CHECK {
            name probe
        }
    }
    real_server 10.0.0.3 80 {
        FILE_CHECK {
            track_file flag
        }
    }
}
",
    );
    for index in 0..20 {
        text.push_str(&format!(
            "virtual_server 10.100.0.{} 80 {{
    protocol TCP
    lvs_sched wlc
    lvs_method NAT
    real_server 10.200.0.1 8080 {{
        weight 1
    }}
    real_server 10.200.0.2 8080 {{
        weight 1
    }}
}}
",
            index + 1
        ));
    }
    text
}

/// The model and the set of problems, to compare.
fn outcome(loaded: &Loaded) -> (String, Vec<String>) {
    let mut diagnostics: Vec<String> = loaded
        .diagnostics
        .items
        .iter()
        .map(|diagnostic| format!("{diagnostic:?}"))
        .collect();
    diagnostics.sort();
    (format!("{:#?}", loaded.config), diagnostics)
}

use crate::scratch::Scratch;

/// Writes `text`, reads it again from `previous`, checks the outcome is a
/// whole read's and that it was read as `expected`; returns the new load.
fn reload(path: &Path, previous: &Loaded, text: &str, expected: Reread, what: &str) -> Loaded {
    std::fs::write(path, text).unwrap();
    let (again, how) = load_again(previous.clone(), path, &Options::default());
    let whole = load(path, &Options::default());
    assert_eq!(outcome(&again), outcome(&whole), "{what}");
    assert_eq!(how, expected, "{what}");
    again
}

#[test]
fn an_edit_in_one_virtual_server_reads_that_block_alone_to_the_whole_files_outcome() {
    let scratch = Scratch::new("reload-edits");
    let path = scratch.file();
    let base = base();
    std::fs::write(&path, &base).unwrap();
    let first = load(&path, &Options::default());
    assert!(
        first.again.is_some(),
        "a plain file is kept for a reload: {:#?}",
        first.diagnostics
    );
    let one_block = [
        ("a weight", "weight 2", "weight 7"),
        (
            "a real server's address",
            "real_server 10.200.0.2 8080 {\n        weight 1\n    }\n}\nvirtual_server 10.100.0.6 ",
            "real_server 10.200.0.9 8080 {\n        weight 1\n    }\n}\nvirtual_server 10.100.0.6 ",
        ),
        (
            "a scheduler",
            "    lvs_sched wlc\n    lvs_method NAT\n    real_server 10.200.0.1 8080 {\n        weight 1\n    }\n    real_server 10.200.0.2 8080 {\n        weight 1\n    }\n}\nvirtual_server 10.100.0.3 ",
            "    lvs_sched rr\n    lvs_method NAT\n    real_server 10.200.0.1 8080 {\n        weight 1\n    }\n    real_server 10.200.0.2 8080 {\n        weight 1\n    }\n}\nvirtual_server 10.100.0.3 ",
        ),
        (
            "a scheduler gone (a warning)",
            "    lvs_sched wlc\n    lvs_method NAT\n    real_server 10.200.0.1 8080 {\n        weight 1\n    }\n    real_server 10.200.0.2 8080 {\n        weight 1\n    }\n}\nvirtual_server 10.100.0.4 ",
            "    #lvs_sched wlc\n    lvs_method NAT\n    real_server 10.200.0.1 8080 {\n        weight 1\n    }\n    real_server 10.200.0.2 8080 {\n        weight 1\n    }\n}\nvirtual_server 10.100.0.4 ",
        ),
        ("a bad weight (an error)", "weight 2", "weight x"),
        (
            "the group's name",
            "virtual_server group web",
            "virtual_server group wet",
        ),
        ("the BFD instance's name", "name probe", "name prone"),
        (
            "the tracked file's name",
            "track_file flag\n        }",
            "track_file flog\n        }",
        ),
        (
            "a real server commented out",
            "    real_server 10.0.0.3 80 {\n        FILE_CHECK {\n            track_file flag\n        }\n    }",
            "#   real_server 10.0.0.3 80 {\n#       FILE_CHECK {\n#           track_file flag\n#       }\n#   }",
        ),
        (
            "every real server commented out (the virtual server dropped)",
            "    real_server 10.0.0.1 80 {\n        weight 2\n    }",
            "#   real_server 10.0.0.1 80 {\n#       weight 2\n#   }",
        ),
        (
            "the last block",
            "virtual_server 10.100.0.20 80 {\n    protocol TCP\n    lvs_sched wlc",
            "virtual_server 10.100.0.20 81 {\n    protocol UDP\n    lvs_sched sh",
        ),
    ];
    for (what, from, to) in one_block {
        assert!(base.contains(from), "{what}: {from:?}");
        reload(
            &path,
            &first,
            &base.replacen(from, to, 1),
            Reread::OneBlock,
            what,
        );
    }
    reload(&path, &first, &base, Reread::Unchanged, "nothing");
    let whole = [
        ("a line added", "weight 2", "weight 2\n        weight 3"),
        ("a global setting", "smtp_alert true", "smtp_alert fals"),
        (
            "two blocks",
            "virtual_server 10.100.0.1 80",
            "virtual_server 10.100.0.1 81",
        ),
        ("a definition", "weight 2", "weight $W"),
        (
            "an unknown keyword (a tree problem)",
            "weight 2",
            "weigth 2",
        ),
        (
            "a brace left open",
            "        weight 2\n    }",
            "        weight 2\n    {",
        ),
        ("a conditional", "    lvs_method DR", "@other lvs_method DR"),
    ];
    for (what, from, to) in whole {
        assert!(base.contains(from), "{what}: {from:?}");
        let text = if what == "two blocks" {
            base.replacen(from, to, 1)
                .replacen("weight 2", "weight 3", 1)
        } else {
            base.replacen(from, to, 1)
        };
        reload(&path, &first, &text, Reread::Whole, what);
    }
}

#[test]
fn reloads_in_a_row_keep_reading_one_block() {
    let scratch = Scratch::new("reload-chain");
    let path = scratch.file();
    let mut text = base();
    std::fs::write(&path, &text).unwrap();
    let mut loaded = load(&path, &Options::default());
    // A virtual server dropped (no real server left), then back; weights
    // edited in turn, each reload from the one before.
    let steps = [
        (
            "    real_server 10.0.0.1 80 {\n        weight 2\n    }",
            "#   real_server 10.0.0.1 80 {\n#       weight 2\n#   }",
        ),
        (
            "#   real_server 10.0.0.1 80 {\n#       weight 2\n#   }",
            "    real_server 10.0.0.1 80 {\n        weight 5\n    }",
        ),
        ("weight 5", "weight 6"),
    ];
    for (step, (from, to)) in steps.iter().enumerate() {
        assert!(text.contains(from), "step {step}");
        text = text.replacen(from, to, 1);
        loaded = reload(
            &path,
            &loaded,
            &text,
            Reread::OneBlock,
            &format!("step {step}"),
        );
    }
    for index in [3, 11, 20] {
        let from = format!(
            "virtual_server 10.100.0.{index} 80 {{\n    protocol TCP\n    lvs_sched wlc\n    lvs_method NAT\n    real_server 10.200.0.1 8080 {{\n        weight 1"
        );
        let to = from.replace("weight 1", "weight 9");
        text = text.replacen(&from, &to, 1);
        loaded = reload(
            &path,
            &loaded,
            &text,
            Reread::OneBlock,
            &format!("virtual server {index}"),
        );
    }
}

#[test]
fn plain_text_has_nothing_that_carries_to_a_later_line() {
    assert!(plain(
        b"global_defs {\n    notification_email {\n        a@b.c\n    }\n}\n"
    ));
    for text in [
        "@id vrrp_instance x {\n",
        "  @^id line\n",
        "} @id x\n",
        "$A=1\n",
        "weight ${A}\n",
        "~SEQ(x,1,2) y\n",
        "include /etc/other.conf\n",
    ] {
        assert!(!plain(text.as_bytes()), "{text:?}");
    }
}

/// Over the corpus of real configurations (when it is there): in each
/// plain one, a digit changed and a line commented out in each virtual
/// server block, each read again from the original, give a whole read's
/// outcome.
#[test]
fn edits_of_the_corpus_virtual_servers_read_again_to_the_whole_files_outcome() {
    let corpus =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/keepalived/configs");
    let Ok(entries) = std::fs::read_dir(&corpus) else {
        eprintln!("skipped: no corpus at {}", corpus.display());
        return;
    };
    let scratch = Scratch::new("reload-corpus");
    let path = scratch.file();
    let (mut files, mut edits, mut fast) = (0, 0, 0);
    let mut names: Vec<_> = entries.flatten().map(|entry| entry.path()).collect();
    names.sort();
    for name in names {
        let Ok(text) = std::fs::read(&name) else {
            continue;
        };
        std::fs::write(&path, &text).unwrap();
        let first = load(&path, &Options::default());
        let Some(again) = &first.again else {
            continue;
        };
        files += 1;
        let starts: Vec<usize> = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', &text).map(|at| at + 1))
            .collect();
        for item in again.items.iter().filter(|item| item.virtual_server) {
            let (first_line, last_line) = (item.first as usize, item.last as usize);
            let block =
                starts[first_line - 1]..starts.get(last_line).copied().unwrap_or(text.len());
            let mut variants = Vec::new();
            // A digit of the block changed.
            if let Some(at) = text[block.clone()].iter().rposition(u8::is_ascii_digit) {
                let mut edited = text.clone();
                let at = block.start + at;
                edited[at] = if edited[at] == b'9' {
                    b'1'
                } else {
                    edited[at] + 1
                };
                variants.push(edited);
            }
            // Its second line commented out.
            if last_line > first_line + 1 {
                let mut edited = text.clone();
                edited.insert(starts[first_line], b'#');
                variants.push(edited);
            }
            for edited in variants {
                std::fs::write(&path, &edited).unwrap();
                let (read_again, how) = load_again(first.clone(), &path, &Options::default());
                let whole = load(&path, &Options::default());
                assert_eq!(
                    outcome(&read_again),
                    outcome(&whole),
                    "{}: the block at line {first_line}",
                    name.display()
                );
                edits += 1;
                fast += usize::from(how == Reread::OneBlock);
            }
        }
    }
    eprintln!("{files} plain files, {edits} edits, {fast} read as one block");
    assert!(files == 0 || fast > 0, "no edit was read as one block");
}

#[test]
fn the_lines_around_a_byte_are_found_from_it() {
    let text = b"one\ntwo\nthree\nfour";
    // Byte 9 is the `h` of `three`, on line 3.
    assert_eq!(&text[lines_around(text, 9, 3, 3..=3)], b"three\n");
    assert_eq!(&text[lines_around(text, 9, 3, 2..=4)], b"two\nthree\nfour");
    assert_eq!(&text[lines_around(text, 9, 3, 1..=3)], b"one\ntwo\nthree\n");
    // From a line's newline, and from its first byte.
    assert_eq!(&text[lines_around(text, 3, 1, 1..=1)], b"one\n");
    assert_eq!(&text[lines_around(text, 4, 2, 2..=2)], b"two\n");
}
