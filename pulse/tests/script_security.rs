//! keepalived 2.2.7's `enable_script_security`, differentially: every case
//! lays out scripts and directories with exact owners and modes under a
//! fresh directory in /tmp, writes one configuration, and runs the same
//! files under keepalived and under pulse:
//!
//! - `-t -f FILE`: the exit status, and keepalived's script and security
//!   messages (its stderr) found in pulse's report;
//! - the daemon (`-n -l -D -P -f FILE -p PIDFILE`, keepalived also `-r`)
//!   for a few seconds in a network namespace of its own with a veth and
//!   an address: which scripts ran as which uid:gid (each script appends
//!   its name and `id -u`:`id -g` to a marker file), whether the instance
//!   ended MASTER (it holds the virtual address), and the script and
//!   security lines of the log.
//!
//! Nothing pulse must print or do is written here: the expectation of
//! every case is what keepalived did in the same run. The cases, and what
//! keepalived 2.2.7 was seen to do in each, are in
//! docs/keepalived-script-security.md. The checker side
//! (MISC_CHECK, notify_up, quorum_up) runs `-t` only: keepalived's checker
//! process needs IPVS, which a test machine's kernel may lack.
//!
//! Times are printed, never asserted. Needs root and keepalived; without
//! them the test says so and passes. SCRIPT_SECURITY_CASES=WORDS runs the
//! cases whose name contains one of the comma-separated words;
//! SCRIPT_SECURITY_SHOW=1 prints what each program did (with
//! --nocapture); SCRIPT_SECURITY_KEEP=1 keeps the directories (logs,
//! configurations).

use std::collections::{BTreeSet, VecDeque};
use std::ffi::CString;
use std::fmt::Write as _;
use std::fs;
use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use labkit::Namespace;

const PULSE: &str = env!("CARGO_BIN_EXE_pulse");

/// The address of `VI_1`: held while it is MASTER.
const VIRTUAL_ADDRESS: [u8; 4] = [10, 77, 0, 100];
/// `VI_2`'s, in the sync group case.
const SECOND_VIRTUAL_ADDRESS: [u8; 4] = [10, 77, 0, 101];

/// How long each daemon runs before SIGTERM. Alone on its link, an
/// instance at advert_int 0.5 becomes MASTER after its master down
/// interval (about 1.8 s); a failing tracked script runs 4 times.
const RUN_TIME: Duration = Duration::from_secs(4);

/// Cases run at once: each is mostly idle daemons, but a shared
/// two-processor machine delays a process by a few hundred milliseconds
/// when dozens start together, and an instance's advert timing is then
/// what varies.
const WORKERS: usize = 6;

/// The uid and gid of the `keepalived_script` user that exists only in
/// the namespaces of the cases that ask for it.
const KEEPALIVED_SCRIPT_ID: u32 = 4242;

/// The start of every script and security message keepalived 2.2.7 logs
/// or reports: lib/notify.c (`check_script_secure`, `check_security`,
/// `find_path`, `set_uid_gid`, `get_default_script_user`,
/// `notify_script_init`) and its callers (vrrp.c
/// `check_vrrp_script_security` and `check_track_script_secure`,
/// check_data.c `check_check_script_security`, check_misc.c, main.c
/// `check_start_stop_script_secure`, global_parser.c, vrrp_parser.c,
/// vrrp_track.c). A line is one of them when it contains one of these.
const SECURITY_MESSAGES: &[&str] = &[
    // check_script_secure and check_security.
    "Permissions failure for script",
    "Cannot find script",
    "Unable to set uid:gid",
    "Unable to restore uid:gid",
    "cannot be accessed - ",
    "Unable to access script",
    "is not executable for uid:gid",
    "Please add a #! shebang to script",
    "check_script_secure",
    "Wrong file type found in script path",
    "Unsafe permissions found for script",
    // find_path.
    "resolved by path search to",
    "Unable to set egid to",
    "Unable to set euid to",
    "supplementary gid",
    "after script search",
    // Users and groups.
    "Unable to resolve script username",
    "Script user '",
    "Unable to resolve script group name",
    "Script group '",
    "Unable to set default user",
    "Failed to set default user",
    "Invalid user/group for",
    "Unable to set uid/gid for script",
    "Failed to set uid/gid for misc checker script",
    "No user specified for misc checker script",
    "No script username specified",
    "Error setting global script uid/gid",
    // Parsing a notify script.
    "Unable to parse notify script",
    "Unable to parse script",
    "Invalid startup script",
    "Invalid shutdown script",
    // What is done with an insecure or missing script.
    "Disabling track script",
    "Disabling misc script",
    " track script ",
    "SECURITY VIOLATION",
];

/// The standard layout of every case's tree: (directory, mode), all owned
/// by root. The case directory itself, its parent and /tmp (root, 1777)
/// are what keepalived accepts as a script's path.
const DIRECTORIES: &[(&str, u32)] = &[
    ("secure", 0o755),
    ("world-writable", 0o777),
    ("sticky", 0o1777),
    ("path", 0o755),
    // Not on any script's path, so its mode does not matter; writable by
    // every script user, and not sticky: in a sticky world-writable
    // directory fs.protected_regular refuses root an O_CREAT open of a
    // marker file that nobody created.
    ("markers", 0o777),
    ("run", 0o755),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pulse,
    Keepalived,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Kind::Pulse => "pulse",
            Kind::Keepalived => "keepalived",
        })
    }
}

/// A uid and gid, as `id -u`:`id -g` prints them.
#[derive(Debug, Clone, Copy)]
struct Ids {
    user: u32,
    group: u32,
}

const ROOT: Ids = Ids { user: 0, group: 0 };

/// `nobody` and its group, as this machine's passwd has them.
fn nobody() -> Result<Ids> {
    let name = CString::new("nobody")?;
    // SAFETY: getpwnam with a valid name; the entry is copied at once.
    let entry = unsafe { libc::getpwnam(name.as_ptr()) };
    if entry.is_null() {
        bail!("this machine has no user nobody");
    }
    // SAFETY: a non-null entry getpwnam returned.
    let entry = unsafe { &*entry };
    Ok(Ids {
        user: entry.pw_uid,
        group: entry.pw_gid,
    })
}

/// A case's directory: the standard layout, and scripts added by the case.
struct Tree {
    root: PathBuf,
    nobody: Ids,
}

impl Tree {
    fn create(root: PathBuf, nobody: Ids) -> Result<Tree> {
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root)?;
        let tree = Tree { root, nobody };
        tree.set(&tree.root, 0o755, ROOT)?;
        for (directory, mode) in DIRECTORIES {
            let path = tree.path(directory);
            fs::create_dir(&path)?;
            tree.set(&path, *mode, ROOT)?;
        }
        Ok(tree)
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// Owner first: chown clears the set-id bits.
    fn set(&self, path: &Path, mode: u32, owner: Ids) -> Result<()> {
        std::os::unix::fs::chown(path, Some(owner.user), Some(owner.group))
            .with_context(|| format!("chown {}", path.display()))?;
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .with_context(|| format!("chmod {}", path.display()))
    }

    /// A script that appends its file name (without `.sh`) and its uid:gid
    /// to the marker file and exits with `status`; root's, 0755.
    fn script(&self, relative: &str, status: i32) -> Result<PathBuf> {
        let path = self.path(relative);
        let name = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .context("a script name")?
            .to_owned();
        fs::write(
            &path,
            format!(
                "#!/bin/sh\necho \"{name} $(id -u):$(id -g)\" >> {}\nexit {status}\n",
                self.marker().display()
            ),
        )?;
        self.set(&path, 0o755, ROOT)?;
        Ok(path)
    }

    fn marker(&self) -> PathBuf {
        self.path("markers/marker")
    }
}

/// `global_defs` with `enable_script_security` when `security`, and `lines`.
fn global_defs(security: bool, lines: &str) -> String {
    let mut text = String::from("global_defs {\n");
    if security {
        text.push_str("    enable_script_security\n");
    }
    text.push_str(lines);
    text.push_str("}\n");
    text
}

/// `VI_1` on eth0, alone on its link: MASTER after its master down
/// interval unless a tracked script fails; `lines` go into its block.
fn instance(lines: &str) -> String {
    instance_named("VI_1", 51, VIRTUAL_ADDRESS, lines)
}

fn instance_named(name: &str, router: u8, address: [u8; 4], lines: &str) -> String {
    let [first, second, third, fourth] = address;
    format!(
        "vrrp_instance {name} {{\n    interface eth0\n    virtual_router_id {router}\n    \
         version 3\n    priority 100\n    advert_int 0.5\n{lines}    virtual_ipaddress {{\n        \
         {first}.{second}.{third}.{fourth}/24\n    }}\n}}\n"
    )
}

/// A `vrrp_script chk` running `script` every second, tracked by `VI_1`
/// (which also gets `lines`).
fn tracked(script: &Path, lines: &str) -> String {
    format!(
        "vrrp_script chk {{\n    script {}\n    interval 1\n}}\n{}",
        script.display(),
        instance(&format!(
            "    track_script {{\n        chk\n    }}\n{lines}"
        ))
    )
}

/// A notify_master line.
fn notify_master(script: &Path) -> String {
    format!("    notify_master {}\n", script.display())
}

/// What a case writes: given its tree and whether `enable_script_security`
/// is on, the scripts, and the configuration returned.
type Build = fn(&Tree, bool) -> Result<String>;

struct Case {
    name: String,
    security: bool,
    build: Build,
    /// false: `-t` only (the checker side, which needs IPVS).
    daemon: bool,
    /// Directories of the tree put in front of PATH (the system's
    /// directories follow, for `ip` and the scripts' `id`).
    search_path: &'static [&'static str],
    /// A `keepalived_script` user exists, in the namespace only.
    keepalived_script_user: bool,
}

/// `name`, with and without `enable_script_security`.
fn both(name: &str, build: Build) -> Vec<Case> {
    [true, false]
        .into_iter()
        .map(|security| variant(name, security, build))
        .collect()
}

fn variant(name: &str, security: bool, build: Build) -> Case {
    Case {
        name: format!(
            "{name}, {}",
            if security {
                "enable_script_security"
            } else {
                "no script security"
            }
        ),
        security,
        build,
        daemon: true,
        search_path: &[],
        keepalived_script_user: false,
    }
}

/// `cases` with `-t` only: keepalived's checker process needs IPVS.
fn config_test_only(cases: Vec<Case>) -> Vec<Case> {
    cases
        .into_iter()
        .map(|case| Case {
            daemon: false,
            ..case
        })
        .collect()
}

fn with_search_path(cases: Vec<Case>, search_path: &'static [&'static str]) -> Vec<Case> {
    cases
        .into_iter()
        .map(|case| Case {
            search_path,
            ..case
        })
        .collect()
}

fn with_keepalived_script_user(cases: Vec<Case>) -> Vec<Case> {
    cases
        .into_iter()
        .map(|case| Case {
            keepalived_script_user: true,
            ..case
        })
        .collect()
}

/// A virtual server whose quorum, real server and MISC_CHECK scripts are
/// all in `directory`, with `misc_lines` in the MISC_CHECK block.
fn virtual_server(tree: &Tree, directory: &str, misc_lines: &str) -> Result<String> {
    let script = |name: &str| tree.script(&format!("{directory}/{name}.sh"), 0);
    Ok(format!(
        "virtual_server 10.77.0.200 80 {{\n    lvs_sched rr\n    lvs_method NAT\n    \
         protocol TCP\n    quorum_up {}\n    quorum_down {}\n    \
         real_server 10.77.0.2 80 {{\n        notify_up {}\n        notify_down {}\n        \
         MISC_CHECK {{\n            misc_path {}\n{misc_lines}        }}\n    }}\n}}\n",
        script("quorum-up")?.display(),
        script("quorum-down")?.display(),
        script("up")?.display(),
        script("down")?.display(),
        script("misc")?.display(),
    ))
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    cases.extend(both("secure notify_master", |tree, security| {
        let script = tree.script("secure/master.sh", 0)?;
        Ok(global_defs(security, "    script_user root\n") + &instance(&notify_master(&script)))
    }));
    cases.extend(both(
        "notify_master in a world-writable directory",
        |tree, security| {
            let script = tree.script("world-writable/master.sh", 0)?;
            Ok(
                global_defs(security, "    script_user root\n")
                    + &instance(&notify_master(&script)),
            )
        },
    ));
    cases.extend(both(
        "notify_master in a sticky world-writable directory",
        |tree, security| {
            let script = tree.script("sticky/master.sh", 0)?;
            Ok(
                global_defs(security, "    script_user root\n")
                    + &instance(&notify_master(&script)),
            )
        },
    ));
    cases.extend(both(
        "group-writable notify_master of a non-root group",
        |tree, security| {
            let script = tree.script("secure/master.sh", 0)?;
            let group = Ids {
                user: 0,
                group: tree.nobody.group,
            };
            tree.set(&script, 0o775, group)?;
            Ok(
                global_defs(security, "    script_user root\n")
                    + &instance(&notify_master(&script)),
            )
        },
    ));
    cases.extend(both("world-writable notify_master", |tree, security| {
        let script = tree.script("secure/master.sh", 0)?;
        tree.set(&script, 0o757, ROOT)?;
        Ok(global_defs(security, "    script_user root\n") + &instance(&notify_master(&script)))
    }));
    cases.extend(both("notify_master owned by nobody", |tree, security| {
        let script = tree.script("secure/master.sh", 0)?;
        let owner = Ids {
            user: tree.nobody.user,
            group: 0,
        };
        tree.set(&script, 0o755, owner)?;
        Ok(global_defs(security, "    script_user root\n") + &instance(&notify_master(&script)))
    }));
    cases.extend(both(
        "failing track script in a world-writable directory",
        |tree, security| {
            let script = tree.script("world-writable/check.sh", 1)?;
            Ok(global_defs(security, "    script_user root\n") + &tracked(&script, ""))
        },
    ));
    cases.extend(both("failing secure track script", |tree, security| {
        let script = tree.script("secure/check.sh", 1)?;
        Ok(global_defs(security, "    script_user root\n") + &tracked(&script, ""))
    }));
    cases.extend(both(
        "no script_user and no keepalived_script user",
        |tree, security| {
            let check = tree.script("secure/check.sh", 0)?;
            let master = tree.script("secure/master.sh", 0)?;
            Ok(global_defs(security, "") + &tracked(&check, &notify_master(&master)))
        },
    ));
    cases.extend(with_keepalived_script_user(both(
        "keepalived_script user, notify_master in a world-writable directory",
        |tree, security| {
            let check = tree.script("secure/check.sh", 0)?;
            let master = tree.script("world-writable/master.sh", 0)?;
            Ok(global_defs(security, "") + &tracked(&check, &notify_master(&master)))
        },
    )));
    cases.extend(both(
        "enable_script_security after the scripts, no script_user",
        |tree, security| {
            let check = tree.script("secure/check.sh", 0)?;
            let master = tree.script("secure/master.sh", 0)?;
            Ok(tracked(&check, &notify_master(&master)) + &global_defs(security, ""))
        },
    ));
    cases.extend(both(
        "script_user nobody, setuid root script in a world-writable directory",
        |tree, security| {
            let script = tree.script("world-writable/setuid.sh", 0)?;
            tree.set(&script, 0o4755, ROOT)?;
            Ok(global_defs(security, "    script_user nobody\n")
                + &instance(&notify_master(&script)))
        },
    ));
    cases.extend(both(
        "script_user nobody, setgid root script in a world-writable directory",
        |tree, security| {
            let script = tree.script("world-writable/setgid.sh", 0)?;
            tree.set(&script, 0o2755, ROOT)?;
            Ok(global_defs(security, "    script_user nobody\n")
                + &instance(&notify_master(&script)))
        },
    ));
    cases.extend(with_search_path(
        both("bare script name found in PATH", |tree, security| {
            tree.script("path/bare.sh", 0)?;
            Ok(global_defs(security, "    script_user root\n")
                + &instance("    notify_master bare.sh\n"))
        }),
        &["path"],
    ));
    cases.extend(with_search_path(
        both(
            "bare script name found in a world-writable PATH directory",
            |tree, security| {
                tree.script("path/bare.sh", 0)?;
                tree.script("world-writable/bare.sh", 0)?;
                Ok(global_defs(security, "    script_user root\n")
                    + &instance("    notify_master bare.sh\n"))
            },
        ),
        &["world-writable", "path"],
    ));
    cases.extend(with_search_path(
        both("bare script name not in PATH", |_, security| {
            Ok(global_defs(security, "    script_user root\n")
                + &instance("    notify_master missing.sh\n"))
        }),
        &["path"],
    ));
    cases.extend(both(
        "symbolic link to a script in a world-writable directory",
        |tree, security| {
            let target = tree.script("world-writable/target.sh", 0)?;
            let link = tree.path("secure/link.sh");
            std::os::unix::fs::symlink(&target, &link)?;
            Ok(global_defs(security, "    script_user root\n") + &instance(&notify_master(&link)))
        },
    ));
    cases.extend(both(
        "symbolic link in a world-writable directory to a secure script",
        |tree, security| {
            let target = tree.script("secure/target.sh", 0)?;
            let link = tree.path("world-writable/link.sh");
            std::os::unix::fs::symlink(&target, &link)?;
            Ok(global_defs(security, "    script_user root\n") + &instance(&notify_master(&link)))
        },
    ));
    cases.extend(both("missing notify_master", |tree, security| {
        let missing = tree.path("secure/missing.sh");
        Ok(global_defs(security, "    script_user root\n") + &instance(&notify_master(&missing)))
    }));
    cases.extend(both("notify_master not executable", |tree, security| {
        let script = tree.script("secure/master.sh", 0)?;
        tree.set(&script, 0o644, ROOT)?;
        Ok(global_defs(security, "    script_user root\n") + &instance(&notify_master(&script)))
    }));
    cases.extend(both("notify_master is a directory", |tree, security| {
        let directory = tree.path("secure/directory.sh");
        fs::create_dir(&directory)?;
        tree.set(&directory, 0o755, ROOT)?;
        Ok(global_defs(security, "    script_user root\n") + &instance(&notify_master(&directory)))
    }));
    cases.extend(both("user nobody on the notify line", |tree, security| {
        let script = tree.script("secure/master.sh", 0)?;
        Ok(global_defs(security, "")
            + &instance(&format!(
                "    notify_master \"{}\" nobody\n",
                script.display()
            )))
    }));
    cases.extend(both("unknown user on the notify line", |tree, security| {
        let script = tree.script("secure/master.sh", 0)?;
        Ok(global_defs(security, "    script_user root\n")
            + &instance(&format!(
                "    notify_master \"{}\" no-such-user\n",
                script.display()
            )))
    }));
    cases.extend(both(
        "sync group notify_master in a world-writable directory",
        |tree, security| {
            let script = tree.script("world-writable/group-master.sh", 0)?;
            Ok(global_defs(security, "    script_user root\n")
                + &format!(
                    "vrrp_sync_group G1 {{\n    group {{\n        VI_1\n        VI_2\n    }}\n    \
                     notify_master {}\n}}\n",
                    script.display()
                )
                + &instance("")
                + &instance_named("VI_2", 52, SECOND_VIRTUAL_ADDRESS, ""))
        },
    ));
    cases.extend(both(
        "startup and shutdown scripts in a world-writable directory",
        |tree, security| {
            let startup = tree.script("world-writable/startup.sh", 0)?;
            let shutdown = tree.script("world-writable/shutdown.sh", 0)?;
            Ok(global_defs(
                security,
                &format!(
                    "    script_user root\n    startup_script {}\n    shutdown_script {}\n",
                    startup.display(),
                    shutdown.display()
                ),
            ) + &instance(""))
        },
    ));
    cases.extend(both(
        "notify_fifo scripts in a world-writable directory",
        |tree, security| {
            let fifo = tree.script("world-writable/fifo.sh", 0)?;
            let vrrp_fifo = tree.script("world-writable/vrrp-fifo.sh", 0)?;
            Ok(global_defs(
                security,
                &format!(
                    "    script_user root\n    notify_fifo {}\n    notify_fifo_script {}\n    \
                     vrrp_notify_fifo {}\n    vrrp_notify_fifo_script {}\n",
                    tree.path("run/fifo").display(),
                    fifo.display(),
                    tree.path("run/vrrp-fifo").display(),
                    vrrp_fifo.display()
                ),
            ) + &instance(""))
        },
    ));
    cases.extend(config_test_only(both(
        "checker scripts in a world-writable directory",
        |tree, security| {
            Ok(global_defs(security, "    script_user root\n")
                + &virtual_server(tree, "world-writable", "")?)
        },
    )));
    cases.extend(config_test_only(both(
        "secure checker scripts",
        |tree, security| {
            Ok(global_defs(security, "    script_user root\n")
                + &virtual_server(tree, "secure", "")?)
        },
    )));
    cases.extend(config_test_only(both(
        "checker scripts, no script_user and no keepalived_script user",
        |tree, security| Ok(global_defs(security, "") + &virtual_server(tree, "secure", "")?),
    )));
    cases.extend(config_test_only(both(
        "MISC_CHECK user nobody in a world-writable directory",
        |tree, security| {
            Ok(global_defs(security, "    script_user root\n")
                + &virtual_server(tree, "world-writable", "            user nobody\n")?)
        },
    )));
    cases.extend(config_test_only(both(
        "MISC_CHECK unknown user",
        |tree, security| {
            Ok(global_defs(security, "    script_user root\n")
                + &virtual_server(tree, "secure", "            user no-such-user\n")?)
        },
    )));
    cases
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Exited(i32),
    Killed(i32),
}

impl Status {
    fn of(status: ExitStatus) -> Status {
        match (status.code(), status.signal()) {
            (Some(code), _) => Status::Exited(code),
            (None, Some(signal)) => Status::Killed(signal),
            (None, None) => Status::Killed(0),
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Exited(code) => write!(formatter, "exit status {code}"),
            Status::Killed(signal) => write!(formatter, "killed by signal {signal}"),
        }
    }
}

/// What one program did with a case.
struct Observed {
    test_status: Status,
    /// `-t`'s stderr.
    test_report: String,
    daemon: Option<DaemonRun>,
}

struct DaemonRun {
    /// "NAME uid:gid", each once: how often a tracked script ran depends
    /// on timing, which scripts ran as whom does not.
    scripts: BTreeSet<String>,
    /// It held `VI_1`'s virtual address just before SIGTERM.
    master: bool,
    /// The script and security lines of the log, without time, level or
    /// keepalived's location, sorted: a multiset.
    security_lines: Vec<String>,
    status: Status,
}

/// keepalived's -l time stamp, "Tue Dec  1 22:38:07 2026: ", removed.
fn without_keepalived_time(line: &str) -> &str {
    let bytes = line.as_bytes();
    let stamped = bytes.len() >= 26
        && bytes[3] == b' '
        && bytes[7] == b' '
        && bytes[13] == b':'
        && bytes[16] == b':'
        && bytes[24] == b':'
        && bytes[25] == b' ';
    if stamped { &line[26..] } else { line }
}

/// tracing's "2026-12-01T22:38:07.123456Z  INFO " removed.
fn without_pulse_time(line: &str) -> &str {
    let Some((stamp, rest)) = line.split_once(' ') else {
        return line;
    };
    if stamp.len() < 20 || !stamp.ends_with('Z') || stamp.as_bytes()[10] != b'T' {
        return line;
    }
    match rest.trim_start().split_once(' ') {
        Some((level, message)) if ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&level) => {
            message
        }
        _ => line,
    }
}

/// keepalived's "(FILE: Line N) " or "(Line N) " removed: where it was
/// parsing when it reported, not part of what it says (and "(VI_1) " is
/// not such a prefix).
fn without_keepalived_location(message: &str) -> &str {
    let Some(rest) = message.strip_prefix('(') else {
        return message;
    };
    let Some((inside, after)) = rest.split_once(") ") else {
        return message;
    };
    let number = inside
        .strip_prefix("Line ")
        .or_else(|| inside.rsplit_once(": Line ").map(|(_, number)| number));
    match number {
        Some(number) if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) => after,
        _ => message,
    }
}

/// pulse's compiler-style "FILE:LINE:COLUMN: SEVERITY: " removed.
fn without_pulse_location(message: &str) -> &str {
    for severity in ["error", "warning", "note", "help"] {
        let separator = format!(": {severity}: ");
        if let Some(at) = message.find(&separator) {
            let mut parts = message[..at].rsplitn(3, ':');
            let column = parts.next().unwrap_or("");
            let line = parts.next().unwrap_or("");
            let numeric = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
            if numeric(column) && numeric(line) && parts.next().is_some() {
                return &message[at + separator.len()..];
            }
        }
    }
    message
}

/// A line of the source excerpt under one of pulse's diagnostics: " 3 |
/// text" or "   |     ^^^".
fn is_excerpt(line: &str) -> bool {
    let line = line.trim_start();
    let after_number = line.trim_start_matches(|c: char| c.is_ascii_digit());
    after_number.trim_start().starts_with('|')
}

fn is_security_message(message: &str) -> bool {
    SECURITY_MESSAGES
        .iter()
        .any(|pattern| message.contains(pattern))
}

/// The script and security messages of a daemon's log, sorted.
fn security_lines(kind: Kind, log: &str) -> Vec<String> {
    let mut lines: Vec<String> = log
        .lines()
        .map(|line| match kind {
            Kind::Keepalived => without_keepalived_location(without_keepalived_time(line)),
            Kind::Pulse => without_pulse_location(without_pulse_time(line)),
        })
        .filter(|message| is_security_message(message))
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// The messages of a `-t` report: keepalived's script and security lines
/// without their location; every line of pulse's, without its location.
fn report_messages(kind: Kind, report: &str) -> Vec<String> {
    let mut messages: Vec<String> = match kind {
        Kind::Keepalived => report
            .lines()
            .map(without_keepalived_location)
            .filter(|message| is_security_message(message))
            .map(str::to_owned)
            .collect(),
        Kind::Pulse => report
            .lines()
            .map(|line| without_pulse_location(line).to_owned())
            .collect(),
    };
    messages.sort();
    messages
}

/// What is in `left` and not in `right`, as multisets (both sorted).
fn missing_from(left: &[String], right: &[String]) -> Vec<String> {
    let mut right = right.iter().peekable();
    let mut missing = Vec::new();
    for item in left {
        while right.next_if(|other| *other < item).is_some() {}
        if right.next_if(|other| *other == item).is_none() {
            missing.push(item.clone());
        }
    }
    missing
}

fn signal(pid: i32, signal: i32) {
    unsafe {
        libc::kill(pid, signal);
    }
}

/// A case's namespace, /etc/netns copy and tree, and what runs in them.
struct Lab<'a> {
    case: &'a Case,
    namespace: Namespace,
    tree: Tree,
    configuration: PathBuf,
    keepalived: PathBuf,
}

impl Lab<'_> {
    fn command(&self, kind: Kind) -> Command {
        let mut command = self.namespace.command(match kind {
            Kind::Pulse => Path::new(PULSE),
            Kind::Keepalived => self.keepalived.as_path(),
        });
        if !self.case.search_path.is_empty() {
            let mut path: Vec<String> = self
                .case
                .search_path
                .iter()
                .map(|directory| self.tree.path(directory).display().to_string())
                .collect();
            path.push("/usr/sbin:/usr/bin:/sbin:/bin".into());
            command.env("PATH", path.join(":"));
        }
        // keepalived's dumps (SIGUSR1/2) go to $TMPDIR: the case's own.
        command.env("TMPDIR", self.tree.path("run"));
        command
    }

    fn config_test(&self, kind: Kind) -> Result<(Status, String)> {
        let output = self
            .command(kind)
            .arg("-t")
            .arg("-f")
            .arg(&self.configuration)
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot run {kind} -t"))?;
        Ok((
            Status::of(output.status),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        ))
    }

    fn daemon(&self, kind: Kind) -> Result<DaemonRun> {
        let run = self.tree.path("run");
        let log = run.join(format!("{kind}.log"));
        let pid_file = run.join(format!("{kind}.pid"));
        let vrrp_pid_file = run.join(format!("{kind}-vrrp.pid"));
        let marker = self.tree.marker();
        let _ = fs::remove_file(&marker);
        let _ = fs::remove_file(&vrrp_pid_file);
        // The other program's run may have left an address behind.
        let addresses = [VIRTUAL_ADDRESS, SECOND_VIRTUAL_ADDRESS];
        for address in addresses {
            let [first, second, third, fourth] = address;
            let _ = self.namespace.ip(&format!(
                "addr del {first}.{second}.{third}.{fourth}/24 dev eth0\n"
            ));
        }
        let output = fs::File::create(&log)?;
        let mut command = self.command(kind);
        command
            .args(["-n", "-l", "-D", "-P", "-f"])
            .arg(&self.configuration)
            .arg("-p")
            .arg(&pid_file);
        if kind == Kind::Keepalived {
            // pulse has one process; keepalived's VRRP child writes here.
            command.arg("-r").arg(&vrrp_pid_file);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(output.try_clone()?)
            .stderr(output)
            .spawn()
            .with_context(|| format!("cannot start {kind}"))?;
        let started = Instant::now();
        let early_exit = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if started.elapsed() >= RUN_TIME {
                break None;
            }
            thread::sleep(Duration::from_millis(50));
        };
        let master = self.namespace.holds(IpAddr::from(VIRTUAL_ADDRESS))?;
        let status = match early_exit {
            Some(status) => status,
            None => stop(&mut child, &vrrp_pid_file)?,
        };
        let log = fs::read_to_string(&log).unwrap_or_default();
        let scripts = fs::read_to_string(&marker)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect();
        Ok(DaemonRun {
            scripts,
            master,
            security_lines: security_lines(kind, &log),
            status: Status::of(status),
        })
    }

    fn observe(&self, kind: Kind) -> Result<Observed> {
        let (test_status, test_report) = self.config_test(kind)?;
        let daemon = if self.case.daemon {
            Some(self.daemon(kind)?)
        } else {
            None
        };
        Ok(Observed {
            test_status,
            test_report,
            daemon,
        })
    }
}

/// SIGTERM and the exit (a shutdown script runs first); SIGKILL after 15 s.
fn stop(child: &mut Child, vrrp_pid_file: &Path) -> Result<ExitStatus> {
    signal(child.id() as i32, libc::SIGTERM);
    let asked = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if asked.elapsed() > Duration::from_secs(15) {
            if let Ok(text) = fs::read_to_string(vrrp_pid_file)
                && let Ok(pid) = text.trim().parse()
            {
                signal(pid, libc::SIGKILL);
            }
            let _ = child.kill();
            return Ok(child.wait()?);
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// /etc/netns/NAME/{passwd,group}: this machine's, with a
/// `keepalived_script` user and group. `ip netns exec NAME` bind-mounts
/// them over /etc's, so the user exists for the processes of that
/// namespace only; removed on drop.
struct NamespaceEtc {
    directory: PathBuf,
}

impl NamespaceEtc {
    fn create(namespace: &str) -> Result<NamespaceEtc> {
        let directory = Path::new("/etc/netns").join(namespace);
        fs::create_dir_all(&directory)?;
        let etc = NamespaceEtc { directory };
        let id = KEEPALIVED_SCRIPT_ID;
        for (file, entry) in [
            (
                "passwd",
                format!("keepalived_script:x:{id}:{id}::/nonexistent:/usr/sbin/nologin\n"),
            ),
            ("group", format!("keepalived_script:x:{id}:\n")),
        ] {
            let mut text = fs::read_to_string(Path::new("/etc").join(file))?;
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&entry);
            fs::write(etc.directory.join(file), text)?;
        }
        Ok(etc)
    }
}

impl Drop for NamespaceEtc {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.directory);
    }
}

/// The differences between keepalived's and pulse's runs of a case, one
/// paragraph each (empty when they agree), and notes on what was not
/// compared.
fn differences(keepalived: &Observed, pulse: &Observed) -> (Vec<String>, Vec<String>) {
    let mut differences = Vec::new();
    let mut notes = Vec::new();
    match keepalived.test_status {
        Status::Exited(_) => {
            if keepalived.test_status != pulse.test_status {
                differences.push(format!(
                    "-t: keepalived {}, pulse {}",
                    keepalived.test_status, pulse.test_status
                ));
            }
        }
        // keepalived -t checks a script to be run as another user by
        // changing its euid, and then SIGTERMs itself because its parent
        // is not the keepalived it thinks it forked from (notify.c,
        // check_script_secure: main_pid != getppid()): a defect, not a
        // status to copy. pulse must only end normally.
        Status::Killed(_) => {
            notes.push(format!(
                "keepalived -t was {}: its status is not compared",
                keepalived.test_status
            ));
            if let Status::Killed(_) = pulse.test_status {
                differences.push(format!("-t: pulse was {}", pulse.test_status));
            }
        }
    }
    let wanted = report_messages(Kind::Keepalived, &keepalived.test_report);
    let missing = missing_from(&wanted, &report_messages(Kind::Pulse, &pulse.test_report));
    if !missing.is_empty() {
        let mut text = String::from("-t: keepalived reported, pulse's report lacks:");
        for message in &missing {
            let _ = write!(text, "\n      {message}");
        }
        let _ = write!(text, "\n    pulse's report (without its source excerpts):");
        for line in pulse.test_report.lines().filter(|line| !is_excerpt(line)) {
            let _ = write!(text, "\n      | {line}");
        }
        differences.push(text);
    }
    if let (Some(keepalived), Some(pulse)) = (&keepalived.daemon, &pulse.daemon) {
        if keepalived.scripts != pulse.scripts {
            let list = |scripts: &BTreeSet<String>| {
                if scripts.is_empty() {
                    "(none)".to_owned()
                } else {
                    scripts.iter().cloned().collect::<Vec<_>>().join(", ")
                }
            };
            differences.push(format!(
                "scripts run (name uid:gid): keepalived {}; pulse {}",
                list(&keepalived.scripts),
                list(&pulse.scripts)
            ));
        }
        if keepalived.master != pulse.master {
            let state = |master: bool| {
                if master {
                    "MASTER (held the virtual address)"
                } else {
                    "not MASTER (did not hold the virtual address)"
                }
            };
            differences.push(format!(
                "final state: keepalived {}, pulse {}",
                state(keepalived.master),
                state(pulse.master)
            ));
        }
        // The two programs' lines come from different processes and
        // threads in a different order, so the order is not compared.
        let only_keepalived = missing_from(&keepalived.security_lines, &pulse.security_lines);
        let only_pulse = missing_from(&pulse.security_lines, &keepalived.security_lines);
        if !only_keepalived.is_empty() || !only_pulse.is_empty() {
            let mut text = String::from(
                "script and security log lines (as multisets; - keepalived only, + pulse only):",
            );
            for line in &only_keepalived {
                let _ = write!(text, "\n      - {line}");
            }
            for line in &only_pulse {
                let _ = write!(text, "\n      + {line}");
            }
            differences.push(text);
        }
        if pulse.status != Status::Exited(0) && keepalived.status == Status::Exited(0) {
            differences.push(format!(
                "the daemon stopped: keepalived {}, pulse {}",
                keepalived.status, pulse.status
            ));
        }
    }
    (differences, notes)
}

/// What a program did, for SCRIPT_SECURITY_SHOW: to read one side
/// against the findings.
fn describe(kind: Kind, observed: &Observed) -> String {
    let mut text = format!("-t {}", observed.test_status);
    for message in report_messages(kind, &observed.test_report) {
        if kind == Kind::Keepalived || is_security_message(&message) {
            let _ = write!(text, "\n      -t: {message}");
        }
    }
    if let Some(daemon) = &observed.daemon {
        let _ = write!(
            text,
            "\n    daemon {}, {}, scripts run: {}",
            daemon.status,
            if daemon.master {
                "MASTER"
            } else {
                "not MASTER"
            },
            daemon
                .scripts
                .iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
        for line in &daemon.security_lines {
            let _ = write!(text, "\n      log: {line}");
        }
    }
    text
}

/// One case: its namespace and tree, keepalived's run, then pulse's.
fn run_case(
    index: usize,
    case: &Case,
    nobody: Ids,
    keepalived: &Path,
) -> Result<(Vec<String>, Vec<String>)> {
    let name = format!("ss{}-{index}", std::process::id());
    // Before the first `ip netns exec`: it mounts what is there then.
    let _etc = if case.keepalived_script_user {
        Some(NamespaceEtc::create(&name)?)
    } else {
        None
    };
    let namespace = Namespace::create(&name)?;
    namespace.ip(
        "link add eth0 type veth peer name peer0\naddr add 10.77.0.1/24 dev eth0\n\
         link set eth0 up\nlink set peer0 up\n",
    )?;
    let tree = Tree::create(
        std::env::temp_dir()
            .join(format!("pulse-script-security-{}", std::process::id()))
            .join(index.to_string()),
        nobody,
    )?;
    let configuration = tree.path("keepalived.conf");
    fs::write(&configuration, (case.build)(&tree, case.security)?)?;
    let lab = Lab {
        case,
        namespace,
        tree,
        configuration,
        keepalived: keepalived.to_owned(),
    };
    let keepalived = lab.observe(Kind::Keepalived)?;
    let pulse = lab.observe(Kind::Pulse)?;
    if std::env::var_os("SCRIPT_SECURITY_SHOW").is_some() {
        println!(
            "{}:\n  keepalived: {}\n  pulse: {}",
            case.name,
            describe(Kind::Keepalived, &keepalived),
            describe(Kind::Pulse, &pulse)
        );
    }
    if std::env::var_os("SCRIPT_SECURITY_KEEP").is_none() {
        let _ = fs::remove_dir_all(&lab.tree.root);
    }
    Ok(differences(&keepalived, &pulse))
}

/// keepalived's path, or why the test cannot run here.
fn prerequisites() -> std::result::Result<PathBuf, &'static str> {
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root (namespaces, chown and set-id scripts need it)");
    }
    // By its full path: a case's PATH is the case's own.
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|directory| directory.join("keepalived"))
            .find(|candidate| candidate.is_file())
    });
    let Some(keepalived) = found else {
        return Err("keepalived is not installed");
    };
    let runs = Command::new(&keepalived)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !runs.is_ok_and(|status| status.success()) {
        return Err("keepalived does not run");
    }
    Ok(keepalived)
}

#[test]
fn script_security_as_keepalived() {
    let keepalived = match prerequisites() {
        Ok(keepalived) => keepalived,
        Err(why) => {
            eprintln!("skipping the script security comparison: {why}");
            return;
        }
    };
    let nobody = nobody().expect("user nobody");
    let started = Instant::now();
    let only = std::env::var("SCRIPT_SECURITY_CASES").ok();
    let queue: VecDeque<(usize, Case)> = cases()
        .into_iter()
        .enumerate()
        .filter(|(_, case)| {
            only.as_deref()
                .is_none_or(|words| words.split(',').any(|word| case.name.contains(word)))
        })
        .collect();
    let total = queue.len();
    let queue = Arc::new(Mutex::new(queue));
    let results = Arc::new(Mutex::new(Vec::new()));
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let queue = Arc::clone(&queue);
            let results = Arc::clone(&results);
            let keepalived = keepalived.clone();
            thread::spawn(move || {
                loop {
                    let next = queue.lock().expect("queue").pop_front();
                    let Some((index, case)) = next else { break };
                    let case_started = Instant::now();
                    let result = run_case(index, &case, nobody, &keepalived);
                    println!(
                        "{}: {:.1} s",
                        case.name,
                        case_started.elapsed().as_secs_f64()
                    );
                    let result = result.map(|(differences, notes)| {
                        for note in notes {
                            println!("{}: {note}", case.name);
                        }
                        differences
                    });
                    results
                        .lock()
                        .expect("results")
                        .push((index, case.name, result));
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().expect("a worker panicked");
    }
    let _ = fs::remove_dir_all(
        std::env::temp_dir().join(format!("pulse-script-security-{}", std::process::id())),
    );
    let mut results = Arc::try_unwrap(results)
        .map_err(|_| "workers done")
        .expect("results")
        .into_inner()
        .expect("results");
    results.sort_by_key(|(index, _, _)| *index);
    let mut failures = Vec::new();
    for (_, name, result) in results {
        match result {
            Ok(differences) if differences.is_empty() => println!("{name}: same"),
            Ok(differences) => failures.push(format!("{name}:\n  {}", differences.join("\n  "))),
            Err(error) => failures.push(format!("{name}: cannot run: {error:?}")),
        }
    }
    println!(
        "the script security cases took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} cases differ from keepalived:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn prefixes_are_removed_and_only_they() {
    assert_eq!(
        without_keepalived_time("Tue Dec  1 22:38:07 2026: (VI_1) Entering MASTER STATE"),
        "(VI_1) Entering MASTER STATE"
    );
    assert_eq!(
        without_keepalived_location("(/etc/k.conf: Line 4) Unable to set default user"),
        "Unable to set default user"
    );
    assert_eq!(
        without_keepalived_location("(Line 3) Invalid startup script"),
        "Invalid startup script"
    );
    assert_eq!(
        without_keepalived_location("(VI_1) track script chk not found, ignoring..."),
        "(VI_1) track script chk not found, ignoring..."
    );
    assert_eq!(
        without_pulse_time("2026-12-01T22:38:07.123456Z  WARN Unsafe permissions"),
        "Unsafe permissions"
    );
    assert_eq!(
        without_pulse_location("/etc/k.conf:11:5: warning: Disabling track script chk"),
        "Disabling track script chk"
    );
    assert_eq!(
        without_pulse_location("0 errors, 1 warning"),
        "0 errors, 1 warning"
    );
    assert!(is_excerpt(" 11 |     notify_master /x"));
    assert!(is_excerpt("    |     ^^^^^"));
    assert!(!is_excerpt("0 errors, 0 warnings"));
}

#[test]
fn multisets_differ_by_count() {
    let lines = |items: &[&str]| {
        items
            .iter()
            .map(|item| item.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        missing_from(&lines(&["a", "a", "b"]), &lines(&["a", "c"])),
        lines(&["a", "b"])
    );
    assert_eq!(
        missing_from(&lines(&["a"]), &lines(&["a", "a"])),
        lines(&[])
    );
}
