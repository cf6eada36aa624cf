//! The generated man page and completions: the committed files are what
//! the generator produces now, and each works in its tool. A check whose
//! tool (bash, zsh, fish, groff) is not installed says so and passes:
//! none of them is needed to build or test ipvsctl.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ipvsctl::generate::{self, GeneratedFile};

fn committed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(generate::DIRECTORY)
        .join(name)
}

fn generated(name: &str) -> String {
    generate::files()
        .into_iter()
        .find(|file| file.name == name)
        .unwrap_or_else(|| panic!("no generated file {name}"))
        .contents
}

#[test]
fn committed_files_are_current() {
    let mut stale = Vec::new();
    for GeneratedFile { name, contents } in generate::files() {
        let path = committed(name);
        match std::fs::read_to_string(&path) {
            Ok(text) if text == contents => {}
            Ok(text) => {
                let line = text
                    .lines()
                    .zip(contents.lines())
                    .position(|(old, new)| old != new)
                    .unwrap_or_else(|| text.lines().count().min(contents.lines().count()));
                stale.push(format!(
                    "{} differs from the generator from line {}",
                    path.display(),
                    line + 1
                ));
            }
            Err(error) => stale.push(format!("{}: {error}", path.display())),
        }
    }
    assert!(
        stale.is_empty(),
        "{}\nThe man page and completions are generated: run `cargo xtask generate` and commit \
         the result.",
        stale.join("\n")
    );
}

/// Runs `program` with `arguments` and `input` on stdin; `None` when the
/// program is not installed.
fn run(program: &str, arguments: &[&str], input: &str) -> Option<(bool, String, String)> {
    let mut child = match Command::new(program)
        .args(arguments)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipped: {program} is not installed");
            return None;
        }
        Err(error) => panic!("cannot run {program}: {error}"),
    };
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(input.as_bytes())
        .expect("write to stdin");
    let output = child.wait_with_output().expect("wait");
    Some((
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

#[test]
fn the_man_page_renders_without_warnings() {
    let Some((success, _, errors)) = run("groff", &["-man", "-ww", "-z"], &generated("ipvsctl.8"))
    else {
        return;
    };
    assert!(success && errors.is_empty(), "groff: {errors}");
}

#[test]
fn the_shell_files_parse() {
    for (shell, name) in [
        ("bash", "ipvsctl.bash"),
        ("zsh", "_ipvsctl"),
        ("fish", "ipvsctl.fish"),
    ] {
        let Some((success, _, errors)) = run(shell, &["-n"], &generated(name)) else {
            continue;
        };
        assert!(success && errors.is_empty(), "{shell} -n {name}: {errors}");
    }
}

/// Each case: the words of a command line, the last one being completed,
/// and what bash offers for it.
const BASH_CASES: &[(&[&str], &str)] = &[
    // The command comes first: no option before it.
    (&["ipvsctl", "--sch"], ""),
    (&["ipvsctl", "--st"], "--start-daemon --stop-daemon"),
    (&["ipvsctl", "-A", "--sch"], "--scheduler --sched-flags"),
    (
        &["ipvsctl", "-s", ""],
        "rr wrr lc wlc lblc lblcr dh sh sed nq fo ovf mh",
    ),
    (
        &["ipvsctl", "-A", "-t", "10.0.0.1:80", "-s", "w"],
        "wrr wlc",
    ),
    // bash splits `--scheduler=w` at the `=`.
    (&["ipvsctl", "-A", "--scheduler", "=", "w"], "wrr wlc"),
    (
        &["ipvsctl", "-A", "--scheduler", "="],
        "rr wrr lc wlc lblc lblcr dh sh sed nq fo ovf mh",
    ),
    (&["ipvsctl", "--start-daemon", ""], "master backup"),
    (&["ipvsctl", "-a", "--tun-type", "g"], "gue gre"),
    (
        &["ipvsctl", "-A", "-b", "sh-port,sh-"],
        "sh-port,sh-fallback sh-port,sh-port",
    ),
    (&["ipvsctl", "-A", "--pe", ""], "sip"),
    // Only what the command takes: -L takes no -s, and a bundle counts.
    (&["ipvsctl", "-L", "-s"], ""),
    (
        &["ipvsctl", "-Ln", "--t"],
        "--tcp-service --timeout --thresholds --tun-info",
    ),
    (&["ipvsctl", "-R", "--a"], "--atomic"),
    // -6 only where -f may come before it.
    (&["ipvsctl", "-C", "-"], "--sort"),
    (
        &["ipvsctl", "-d", "-f", "1", "-"],
        "-t --tcp-service -u --udp-service --sctp-service -f --fwmark-service -r --real-server \
         --sort -6 --ipv6",
    ),
    // No guess at an address.
    (&["ipvsctl", "-A", "-t", ""], ""),
];

#[test]
fn bash_completes_options_and_values() {
    let mut script = generated("ipvsctl.bash");
    script.push_str(
        "complete_words() {\n    \
             COMP_WORDS=(\"$@\")\n    \
             COMP_CWORD=$(( $# - 1 ))\n    \
             _ipvsctl\n    \
             printf '%s\\n' \"${COMPREPLY[*]}\"\n\
         }\n",
    );
    for (words, _) in BASH_CASES {
        let quoted: Vec<String> = words.iter().map(|word| format!("'{word}'")).collect();
        script.push_str(&format!("complete_words {}\n", quoted.join(" ")));
    }
    let Some((success, output, errors)) = run("bash", &["--norc", "--noprofile", "-s"], &script)
    else {
        return;
    };
    assert!(success && errors.is_empty(), "bash: {errors}");
    let offered: Vec<&str> = output.lines().collect();
    assert_eq!(offered.len(), BASH_CASES.len(), "{output}");
    for ((words, expected), offered) in BASH_CASES.iter().zip(offered) {
        let mut offered: Vec<&str> = offered.split_whitespace().collect();
        let mut expected: Vec<&str> = expected.split_whitespace().collect();
        offered.sort_unstable();
        expected.sort_unstable();
        assert_eq!(offered, expected, "completing {words:?}");
    }
}

#[test]
fn fish_completes_options_and_values() {
    let cases: &[(&str, &str)] = &[
        ("ipvsctl --sch", ""),
        ("ipvsctl -A --sch", "--sched-flags --scheduler"),
        ("ipvsctl -A -s w", "wlc wrr"),
        ("ipvsctl --start-daemon ", "backup master"),
        ("ipvsctl -a --tun-type g", "gre gue"),
        (
            "ipvsctl -Ln --t",
            "--tcp-service --thresholds --timeout --tun-info",
        ),
    ];
    let mut script = generated("ipvsctl.fish");
    for (line, _) in cases {
        script.push_str(&format!(
            "complete -C '{line}' | string replace -r '\\t.*' '' | string join ' '; or echo\n"
        ));
    }
    let Some((success, output, errors)) = run("fish", &["--no-config"], &script) else {
        return;
    };
    assert!(success && errors.is_empty(), "fish: {errors}");
    let offered: Vec<&str> = output.lines().collect();
    assert_eq!(offered.len(), cases.len(), "{output}");
    for ((line, expected), offered) in cases.iter().zip(offered) {
        let mut offered: Vec<&str> = offered.split_whitespace().collect();
        offered.sort_unstable();
        assert_eq!(offered.join(" "), *expected, "completing {line:?}");
    }
}
