//! Reading a file in two parts gives what reading it whole gives.

use super::*;

/// What a load comes to: its model, its problems in their order and as
/// printed (their lines quoted from the file), and the items a reload
/// reads one block of.
fn outcome(loaded: &Loaded) -> (String, Vec<String>, String, String) {
    (
        format!("{:#?}", loaded.config),
        loaded
            .diagnostics
            .items
            .iter()
            .map(|diagnostic| format!("{diagnostic:?}"))
            .collect(),
        loaded.diagnostics.render(&loaded.sources),
        format!("{:?}", loaded.again.as_ref().map(|again| &again.items)),
    )
}

/// The byte of each line of `text` that starts a second part: a
/// `virtual_server` at the start of a line, after the first line.
fn second_part_starts(text: &[u8]) -> Vec<usize> {
    memchr::memmem::find_iter(text, b"\nvirtual_server")
        .map(|at| at + 1)
        .filter(|at| matches!(text.get(at + "virtual_server".len()), Some(b' ' | b'\t')))
        .collect()
}

use crate::scratch::Scratch;

/// A file with what a virtual server's reading takes from elsewhere (a
/// group, global `smtp_alert`, a BFD instance, a tracked
/// file), VRRP, and virtual servers whose reading warns or errs.
fn generated() -> String {
    let mut text = String::from(
        "global_defs {
    router_id lb1
    smtp_alert true
}
vrrp_script check {
    script \"/bin/true\"
}
vrrp_instance VI_1 {
    state MASTER
    interface eth0
    virtual_router_id 51
    priority 100
    track_script {
        check
    }
    virtual_ipaddress {
        192.0.2.100
    }
}
bfd_instance probe {
    neighbor_ip 10.0.0.1
}
track_file flag {
    file /tmp/flag
}
virtual_server_group web6 {
    192.0.2.1-2 80
}
",
    );
    for index in 0..40 {
        text.push_str(&format!(
            "virtual_server 10.100.0.{index} 80 {{
    protocol TCP
    lvs_sched wlc
    lvs_method NAT
    quorum {quorum}
    real_server 10.200.0.1 8080 {{
        weight 1
        TCP_CHECK {{
            connect_timeout 3
        }}
    }}
    real_server 10.200.0.2 8080 {{
        weight 2
        BFD_CHECK {{
            name {bfd}
        }}
    }}
}}
",
            quorum = if index % 7 == 3 { 9 } else { 1 },
            bfd = if index % 11 == 5 { "missing" } else { "probe" },
        ));
        if index % 13 == 6 {
            text.push_str(&format!(
                "virtual_server group web{index} {{\n    protocol TCP\n    real_server 10.0.0.1 80 {{\n        weight 1\n    }}\n}}\n"
            ));
        }
    }
    text
}

#[test]
fn a_file_read_in_two_parts_is_read_as_whole_wherever_the_second_starts() {
    let scratch = Scratch::new("load-generated");
    let path = scratch.file();
    let text = generated();
    std::fs::write(&path, &text).unwrap();
    let whole = outcome(&load(&path, &Options::default()));
    assert!(whole.1.len() > 3, "the file has problems to compare");
    let starts = second_part_starts(text.as_bytes());
    assert_eq!(starts.len(), 43);
    for at in starts {
        let parts = load_in_two_parts(&path, &Options::default(), 0, Some(at))
            .unwrap_or_else(|| panic!("no second part from byte {at}"));
        assert_eq!(outcome(&parts), whole, "the second part from byte {at}");
    }
    // The middle chosen when none is given.
    let parts = load_in_two_parts(&path, &Options::default(), 0, None).unwrap();
    assert_eq!(outcome(&parts), whole);
    // The file's text kept as read: a reload compares the file with it
    // and reads the one block edited.
    assert_eq!(parts.sources.files[0].text(), Some(text.as_str()));
    let edited = text.replacen("        weight 2\n", "        weight 3\n", 1);
    std::fs::write(&path, &edited).unwrap();
    let (again, how) = crate::load_again(parts, &path, &Options::default());
    assert_eq!(how, crate::Reread::OneBlock);
    assert_eq!(outcome(&again), outcome(&load(&path, &Options::default())));
}

#[test]
fn a_file_that_cannot_be_parted_with_certainty_is_read_whole() {
    let scratch = Scratch::new("load-whole");
    let path = scratch.file();
    let text = generated();
    let options = Options::default();
    for (what, edited) in [
        // The second part would hold an item other than a virtual server.
        (
            "a vrrp_instance in the second part",
            format!(
                "{text}vrrp_instance VI_2 {{\n    interface eth0\n    virtual_router_id 52\n    priority 50\n}}\n"
            ),
        ),
        // A group after the virtual servers (whose reading looks at the
        // groups before it).
        (
            "a group in the second part",
            format!("{text}virtual_server_group web7 {{\n    192.0.2.3 80\n}}\n"),
        ),
        // A `virtual_server` line inside a block of free lines.
        (
            "a split inside a block",
            format!("{text}virtual_server_group web8 {{\nvirtual_server 10.9.9.9 80\n}}\n"),
        ),
        // Not plain: a definition may be used further down.
        ("a definition", format!("$PORT=80\n{text}")),
    ] {
        std::fs::write(&path, &edited).unwrap();
        let at = *second_part_starts(edited.as_bytes()).last().unwrap();
        assert!(
            load_in_two_parts(&path, &options, 0, Some(at)).is_none(),
            "{what}"
        );
        assert_eq!(
            outcome(&load_on_two_threads(&path, &options)),
            outcome(&load(&path, &options)),
            "{what}"
        );
    }
    // Too small to be worth a thread; not there at all.
    std::fs::write(&path, &text).unwrap();
    assert!(load_in_two_parts(&path, &options, TWO_THREADS_FROM, None).is_none());
    let missing = scratch.path("missing.conf");
    assert!(load_in_two_parts(&missing, &options, 0, None).is_none());
    assert_eq!(
        outcome(&load_on_two_threads(&missing, &options)),
        outcome(&load(&missing, &options))
    );
}

/// Over the corpus of real configurations (when it is there): each plain
/// one read in two parts from every line a second part can start at gives
/// the whole read's outcome, or is read whole.
#[test]
fn the_corpus_read_in_two_parts_is_read_as_whole() {
    let corpus =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/keepalived/configs");
    let Ok(entries) = std::fs::read_dir(&corpus) else {
        eprintln!("skipped: no corpus at {}", corpus.display());
        return;
    };
    let scratch = Scratch::new("load-corpus");
    let path = scratch.file();
    let options = Options::default();
    let (mut files, mut parted, mut whole_instead) = (0, 0, 0);
    let mut names: Vec<_> = entries.flatten().map(|entry| entry.path()).collect();
    names.sort();
    for name in names {
        let Ok(text) = std::fs::read(&name) else {
            continue;
        };
        if !plain(&text) {
            continue;
        }
        files += 1;
        std::fs::write(&path, &text).unwrap();
        let whole = outcome(&load(&path, &options));
        for at in second_part_starts(&text) {
            match load_in_two_parts(&path, &options, 0, Some(at)) {
                Some(parts) => {
                    assert_eq!(
                        outcome(&parts),
                        whole,
                        "{}: the second part from byte {at}",
                        name.display()
                    );
                    parted += 1;
                }
                None => whole_instead += 1,
            }
        }
    }
    eprintln!("{files} plain files: {parted} read in two parts, {whole_instead} read whole");
    assert!(files == 0 || parted > 0, "no file was read in two parts");
}
