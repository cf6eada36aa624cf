//! The daemon's refusals, which need no IPVS: they run anywhere. What it
//! does with IPVS is tested in the lab (tests/lab/daemon.rs).

use std::process::Command;

const PULSE: &str = env!("CARGO_BIN_EXE_pulse");

fn directory(name: &str) -> std::path::PathBuf {
    let directory = std::env::temp_dir().join(format!("pulse-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    directory
}

#[test]
fn a_configuration_with_errors_never_starts() {
    let directory = directory("refuse");
    let configuration = directory.join("keepalived.conf");
    std::fs::write(
        &configuration,
        "virtual_server 192.0.2.1 80 {\n lvs_shed rr\n}\n",
    )
    .unwrap();
    let output = Command::new(PULSE)
        .arg("-f")
        .arg(&configuration)
        .arg("-p")
        .arg(directory.join("pulse.pid"))
        .args(["-n", "-G"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(4), "{said}");
    // No console log (-l) and no syslog (-G): the problems still reach
    // whoever started pulse, with their source line.
    assert!(
        said.contains(":2:2: error: unknown keyword 'lvs_shed'"),
        "{said}"
    );
    assert!(said.contains(" 2 |  lvs_shed rr"), "{said}");
    assert!(!directory.join("pulse.pid").exists());
    std::fs::remove_dir_all(&directory).unwrap();
}

/// Where the kernel has no IPVS and cannot load it (this project's build
/// machines), starting a configuration with virtual servers says so in
/// one line, with status 3.
#[test]
fn a_kernel_without_ipvs_is_one_clear_error() {
    if std::path::Path::new("/proc/net/ip_vs").exists() {
        eprintln!("skipped: this kernel has IPVS (the lab tests the daemon there)");
        return;
    }
    let directory = directory("no-ipvs");
    let configuration = directory.join("keepalived.conf");
    std::fs::write(
        &configuration,
        "virtual_server 192.0.2.1 80 {\n protocol TCP\n real_server 10.0.0.1 80 { }\n}\n",
    )
    .unwrap();
    let output = Command::new(PULSE)
        .arg("-f")
        .arg(&configuration)
        .arg("-p")
        .arg(directory.join("pulse.pid"))
        .args(["-n", "-l", "-G"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{said}");
    let errors: Vec<&str> = said.lines().filter(|line| line.contains("ERROR")).collect();
    assert_eq!(errors.len(), 1, "{said}");
    // keepalived's words, then pulse's advice.
    assert!(
        errors[0].contains("IPVS: Can't initialize ipvs: No such file or directory ("),
        "{said}"
    );
    assert!(errors[0].contains("-P runs VRRP alone"), "{said}");
    std::fs::remove_dir_all(&directory).unwrap();
}

/// `pulse --dump-config | head`: the reader goes away and pulse ends
/// quietly, with the verdict it had (no "Broken pipe", no backtrace).
#[test]
fn a_reader_going_away_ends_dump_config_quietly() {
    let directory = directory("closed-stdout");
    let configuration = directory.join("keepalived.conf");
    // Far more JSON than a pipe holds, so that pulse is still writing
    // when the reader has gone.
    let text: String = (0..2000)
        .map(|index| {
            format!(
                "virtual_server 10.0.{}.{} 80 {{\n protocol TCP\n lb_algo rr\n lb_kind NAT\n \
                 real_server 10.1.0.1 80 {{\n }}\n}}\n",
                index / 250,
                index % 250
            )
        })
        .collect();
    std::fs::write(&configuration, text).unwrap();
    let mut child = Command::new(PULSE)
        .arg("--dump-config")
        .arg("-f")
        .arg(&configuration)
        .env("RUST_BACKTRACE", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read a little, then close the pipe, as `head -1` does.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    drop(stdout);
    let output = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(first.starts_with(b"{"), "{first:?}");
    assert!(!said.contains("Broken pipe"), "{said}");
    assert!(!said.contains("panicked"), "{said}");
    // The configuration is clean: the verdict stays 0.
    assert_eq!(output.status.code(), Some(0), "{said}");
    std::fs::remove_dir_all(&directory).unwrap();
}
