//! `fulcrum-agent -t -f FILE`: the file checked as `pulse -t` checks one,
//! plus what an agent needs of it.

use std::process::Command;

const AGENT: &str = env!("CARGO_BIN_EXE_fulcrum-agent");

fn check(name: &str, text: &str) -> (Option<i32>, String) {
    let path = std::env::temp_dir().join(format!("fulcrum-agent-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let output = Command::new(AGENT)
        .arg("-t")
        .arg("-f")
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_good_file_checks_clean() {
    let (code, said) = check(
        "good",
        "host_agent {\n    vtep 192.0.2.21\n}\nvirtual_network tenant-a {\n    vni 100\n    interface br100\n}\n",
    );
    assert_eq!(code, Some(0), "{said}");
    assert!(said.ends_with("0 error(s), 0 warning(s)\n"), "{said}");
}

#[test]
fn what_an_agent_needs_is_an_error() {
    for (name, text, expected) in [
        (
            "no-agent",
            "virtual_network tenant-a {\n    vni 100\n    interface br100\n}\n",
            "an agent's file needs 'host_agent { vtep ADDRESS }'",
        ),
        (
            "no-interface",
            "host_agent {\n    vtep 192.0.2.21\n}\nvirtual_network tenant-a {\n    vni 100\n}\n",
            "virtual_network 'tenant-a' needs 'interface IF'",
        ),
        (
            "bad-vni",
            "host_agent {\n    vtep 192.0.2.21\n}\nvirtual_network tenant-a {\n    vni 0\n    interface br100\n}\n",
            "vni '0' is out of range",
        ),
    ] {
        let (code, said) = check(name, text);
        assert_eq!(code, Some(4), "{name}: {said}");
        assert!(said.contains(expected), "{name}: {said}");
    }
}

#[test]
fn the_command_line_is_checked() {
    let output = Command::new(AGENT)
        .arg("-f")
        .arg("x.conf")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--cluster"));
}
