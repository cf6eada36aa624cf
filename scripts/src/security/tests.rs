//! Against real files with real permissions: these run as root (as
//! keepalived does), and say so and pass otherwise.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use super::*;

const ROOT: Account = Account { uid: 0, gid: 0 };
const NOBODY: Account = Account {
    uid: 65534,
    gid: 65534,
};

/// A fresh directory under /tmp (root's, sticky), root-owned 0755.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Option<Scratch> {
        if crate::account::ours().uid != 0 {
            eprintln!("skipped: not root (the checks are root's)");
            return None;
        }
        let path = PathBuf::from("/tmp").join(format!("scripts-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).unwrap();
        set_mode(&path, 0o755);
        Some(Scratch(path))
    }

    fn directory(&self, name: &str, mode: u32) -> PathBuf {
        let path = self.0.join(name);
        std::fs::create_dir(&path).unwrap();
        set_mode(&path, mode);
        path
    }

    fn script(&self, relative: &str, mode: u32) -> String {
        let path = self.0.join(relative);
        std::fs::write(&path, "#!/bin/sh\nexit 0\n").unwrap();
        set_mode(&path, mode);
        path.to_str().unwrap().to_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn chown(path: &str, account: Account) {
    std::os::unix::fs::chown(path, Some(account.uid), Some(account.gid)).unwrap();
}

fn context(security: bool) -> Context {
    Context {
        ours: ROOT,
        security,
        search_path: OsString::from("/usr/bin:/bin"),
    }
}

fn check(program: &str, account: Account, context: &Context) -> (Findings, Vec<String>, String) {
    let mut argv = vec![program.to_owned(), "argument".to_owned()];
    let mut log = Vec::new();
    let findings = check_script(&mut argv, account, context, &mut log);
    assert_eq!(argv[1], "argument");
    (findings, log, argv.swap_remove(0))
}

#[test]
fn a_root_owned_script_in_root_owned_directories_is_secure() {
    let Some(scratch) = Scratch::new("secure") else {
        return;
    };
    let script = scratch.script("run.sh", 0o755);
    let (findings, log, program) = check(&script, ROOT, &context(true));
    assert_eq!(
        findings,
        Findings {
            is_script: true,
            executable: true,
            ..Findings::default()
        }
    );
    assert!(log.is_empty(), "{log:?}");
    assert_eq!(program, script);
}

#[test]
fn a_world_writable_directory_a_writable_script_or_another_owner_is_unsafe() {
    let Some(scratch) = Scratch::new("unsafe") else {
        return;
    };
    let open = scratch.directory("open", 0o777);
    let in_open = scratch.script("open/run.sh", 0o755);
    let group_writable = scratch.script("group.sh", 0o775);
    chown(&group_writable, Account { uid: 0, gid: 65534 });
    let world_writable = scratch.script("world.sh", 0o757);
    let owned = scratch.script("owned.sh", 0o755);
    chown(&owned, NOBODY);
    for script in [&in_open, &group_writable, &world_writable, &owned] {
        let (findings, log, _) = check(script, ROOT, &context(true));
        assert!(
            findings.insecure && findings.inhibit,
            "{script}: {findings:?}"
        );
        assert_eq!(
            log,
            [format!(
                "Unsafe permissions found for script '{script}' - disabling."
            )]
        );
        // Without enable_script_security: said, but not inhibited.
        let (findings, log, _) = check(script, ROOT, &context(false));
        assert!(
            findings.insecure && !findings.inhibit,
            "{script}: {findings:?}"
        );
        assert_eq!(
            log,
            [format!("Unsafe permissions found for script '{script}'.")]
        );
    }
    // A group-writable file of root's group is not: the group is root.
    let root_group = scratch.script("root-group.sh", 0o775);
    assert!(!check(&root_group, ROOT, &context(true)).0.insecure);
    // A sticky world-writable directory is fine, as /tmp is.
    set_mode(&open, 0o1777);
    assert!(!check(&in_open, ROOT, &context(true)).0.insecure);
}

#[test]
fn only_scripts_run_as_root_or_setuid_root_have_their_path_checked() {
    let Some(scratch) = Scratch::new("setuid") else {
        return;
    };
    scratch.directory("open", 0o777);
    let plain = scratch.script("open/plain.sh", 0o755);
    // Run as nobody: nothing to protect.
    let (findings, log, _) = check(&plain, NOBODY, &context(true));
    assert!(
        findings.executable && !findings.insecure,
        "{findings:?} {log:?}"
    );
    let setuid = scratch.script("open/setuid.sh", 0o4755);
    let (findings, _, _) = check(&setuid, NOBODY, &context(true));
    assert!(findings.insecure && findings.inhibit, "{findings:?}");
    let setgid = scratch.script("open/setgid.sh", 0o2755);
    assert!(check(&setgid, NOBODY, &context(true)).0.inhibit);
    // Not executable for nobody (owner-only): said so.
    let private = scratch.script("private.sh", 0o700);
    let (findings, log, _) = check(&private, NOBODY, &context(true));
    assert!(!findings.executable && findings.is_script, "{findings:?}");
    assert_eq!(
        log,
        [format!(
            "WARNING - script '{private}' is not executable for uid:gid 65534:65534 - disabling."
        )]
    );
}

#[test]
fn a_directory_the_user_cannot_enter_hides_the_script() {
    let Some(scratch) = Scratch::new("closed") else {
        return;
    };
    scratch.directory("closed", 0o700);
    let script = scratch.script("closed/run.sh", 0o755);
    // Root reads it; nobody cannot reach it (realpath as nobody fails).
    assert!(check(&script, ROOT, &context(true)).0.executable);
    let (findings, log, _) = check(&script, NOBODY, &context(true));
    assert!(findings.not_found, "{findings:?}");
    assert_eq!(
        log,
        [format!(
            "Script {script} cannot be accessed - Permission denied"
        )]
    );
}

#[test]
fn a_bare_name_is_found_along_the_path_with_a_warning() {
    let Some(scratch) = Scratch::new("path") else {
        return;
    };
    let bin = scratch.directory("bin", 0o755);
    scratch.script("bin/probe-here", 0o755);
    scratch.script("bin/not-executable", 0o644);
    let context = Context {
        search_path: OsString::from(format!("/nonexistent:{}", bin.display())),
        ..context(true)
    };
    let (findings, log, program) = check("probe-here", ROOT, &context);
    let found = format!("{}/probe-here", bin.display());
    assert_eq!(program, found);
    assert!(findings.executable, "{findings:?}");
    assert_eq!(
        log,
        [format!(
            "WARNING - script `probe-here` resolved by path search to `{found}`. Please specify \
             full path."
        )]
    );
    let (findings, log, _) = check("no-such-program-anywhere", ROOT, &context);
    assert!(findings.not_found);
    assert_eq!(
        log,
        ["Cannot find script no-such-program-anywhere in path - disabling"]
    );
    // Found, but nobody may run it: a permissions failure.
    let (findings, log, _) = check("not-executable", NOBODY, &context);
    assert!(findings.not_found);
    assert_eq!(
        log,
        ["Permissions failure for script not-executable in path - disabling"]
    );
}

#[test]
fn a_link_keeps_its_name_and_both_paths_are_checked() {
    let Some(scratch) = Scratch::new("link") else {
        return;
    };
    let open = scratch.directory("open", 0o777);
    let target = scratch.script("open/target.sh", 0o755);
    let secure = scratch.directory("secure", 0o755);
    let link = secure.join("called.sh");
    symlink(&target, &link).unwrap();
    let link = link.to_str().unwrap().to_owned();
    let (findings, log, program) = check(&link, ROOT, &context(true));
    // The target's directory has no `called.sh`: the resolved path runs.
    assert_eq!(program, target);
    assert!(findings.inhibit, "{findings:?}");
    assert_eq!(
        log,
        [format!(
            "Unsafe permissions found for script '{target}' - disabling."
        )]
    );
    // A link of the same name to a secure file: the link's own path (a
    // root-owned link in a secure directory) and the target's both pass.
    std::fs::remove_file(&target).unwrap();
    set_mode(&open, 0o755);
    let real = scratch.script("open/called.sh", 0o755);
    std::fs::remove_file(&link).unwrap();
    symlink(&real, &link).unwrap();
    let (findings, log, program) = check(&link, ROOT, &context(true));
    assert_eq!(program, real);
    assert!(!findings.insecure, "{findings:?} {log:?}");
}

#[test]
fn a_missing_script_and_a_file_test_are_told_apart() {
    let context = context(true);
    let (findings, log, _) = check("/nonexistent/script.sh", ROOT, &context);
    assert!(findings.not_found && !findings.is_script);
    assert_eq!(
        log,
        ["Script /nonexistent/script.sh cannot be accessed - No such file or directory"]
    );
    let (findings, log, _) = check("< /dev/tcp/127.0.0.1/80", ROOT, &context);
    assert_eq!(
        findings,
        Findings {
            system: true,
            ..Findings::default()
        }
    );
    assert!(log.is_empty());
}

#[test]
fn executable_bits_are_read_by_the_user_s_class() {
    let owner = Account { uid: 10, gid: 20 };
    assert!(is_executable(0o100, 10, 99, owner));
    assert!(!is_executable(0o011, 10, 20, owner));
    assert!(is_executable(0o010, 11, 20, owner));
    assert!(!is_executable(0o001, 11, 20, owner));
    assert!(is_executable(0o001, 11, 21, owner));
    assert!(is_executable(0o001, 11, 21, ROOT));
    assert!(!is_executable(0o644, 11, 21, ROOT));
}

#[test]
fn commands_are_quoted_as_keepalived_prints_them() {
    let words = |words: &[&str]| {
        words
            .iter()
            .map(|word| word.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(quoted_command(&words(&["/bin/x", "a b"])), "'/bin/x' 'a b'");
    assert_eq!(
        quoted_command(&words(&["</dev/tcp/1.2.3.4/80"])),
        "</dev/tcp/1.2.3.4/80"
    );
}
