//! Reviews of whole configurations, against real files under /tmp with
//! the permissions each case needs (as root, as keepalived runs; otherwise
//! the tests say so and pass), and a table of accounts.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use super::*;

/// Users: root and nobody; `keepalived_script` only when asked.
struct Table {
    keepalived_script: bool,
}

impl Accounts for Table {
    fn lookup(&self, user: &str, group: Option<&str>) -> Result<Account, AccountError> {
        let mut account = match user {
            "root" => Account { uid: 0, gid: 0 },
            "nobody" => Account {
                uid: 65534,
                gid: 65534,
            },
            DEFAULT_USER if self.keepalived_script => Account {
                uid: 4242,
                gid: 4242,
            },
            _ => return Err(AccountError::NoSuchUser(user.to_owned())),
        };
        match group {
            None => {}
            Some("root") => account.gid = 0,
            Some(group) => return Err(AccountError::NoSuchGroup(group.to_owned())),
        }
        Ok(account)
    }
}

/// A directory under /tmp with a secure script and an insecure one.
struct Files {
    directory: PathBuf,
    secure: String,
    insecure: String,
}

impl Files {
    fn new(name: &str) -> Option<Files> {
        if crate::account::ours().uid != 0 {
            eprintln!("skipped: not root");
            return None;
        }
        let directory =
            PathBuf::from("/tmp").join(format!("scripts-review-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        std::fs::create_dir_all(directory.join("open")).unwrap();
        let mode = |path: &std::path::Path, mode| {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        mode(&directory, 0o755);
        mode(&directory.join("open"), 0o777);
        let secure = directory.join("secure.sh");
        let insecure = directory.join("open/insecure.sh");
        for script in [&secure, &insecure] {
            std::fs::write(script, "#!/bin/sh\nexit 1\n").unwrap();
            mode(script, 0o755);
        }
        Some(Files {
            secure: secure.to_str().unwrap().to_owned(),
            insecure: insecure.to_str().unwrap().to_owned(),
            directory,
        })
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.directory);
    }
}

fn load(text: &str) -> Config {
    fulcrum_config::load_str("test.conf", text, &Default::default()).config
}

fn context(security: bool) -> Context {
    Context {
        ours: Account { uid: 0, gid: 0 },
        security,
        search_path: OsString::from("/usr/bin:/bin"),
    }
}

fn texts(review: &Review) -> Vec<&str> {
    review.lines.iter().map(|line| line.text.as_str()).collect()
}

fn instance(files: &Files, global: &str) -> String {
    format!(
        "global_defs {{
{global}
}}
vrrp_script chk {{
    script \"{insecure} check\"
}}
vrrp_instance VI_1 {{
    interface eth0
    virtual_router_id 51
    virtual_ipaddress {{
        192.0.2.1
    }}
    notify_master \"{secure} master\"
    notify_backup {insecure}
    track_script {{
        chk
    }}
}}
",
        insecure = files.insecure,
        secure = files.secure
    )
}

#[test]
fn with_security_an_insecure_tracked_script_is_no_longer_tracked() {
    let Some(files) = Files::new("insecure") else {
        return;
    };
    let mut configuration = load(&instance(
        &files,
        " enable_script_security\n script_user root",
    ));
    let found = reviewed(&mut configuration, Part::Vrrp, true, false);
    assert_eq!(
        texts(&found),
        [
            format!(
                "Unsafe permissions found for script '{}' - disabling.",
                files.insecure
            )
            .as_str(),
            "Disabling track script chk due to insecure",
            format!(
                "Unsafe permissions found for script '{}' - disabling.",
                files.insecure
            )
            .as_str(),
        ]
    );
    assert!(!found.security_violation());
    assert!(configuration.vrrp_scripts.is_empty());
    let instance = &configuration.vrrp_instances[0];
    assert!(instance.tracking.scripts.is_empty());
    assert!(instance.notify.backup.is_none());
    let master = instance.notify.master.as_ref().unwrap();
    assert_eq!(master.runs_as, Some(Account { uid: 0, gid: 0 }));
    assert_eq!(master.argv, [files.secure.as_str(), "master"]);
}

#[test]
fn without_security_every_script_runs_and_the_violation_is_said() {
    let Some(files) = Files::new("violation") else {
        return;
    };
    let mut configuration = load(&instance(&files, ""));
    let found = reviewed(&mut configuration, Part::Vrrp, false, false);
    let unsafe_line = format!("Unsafe permissions found for script '{}'.", files.insecure);
    assert_eq!(
        texts(&found),
        [
            "Script user 'keepalived_script' does not exist",
            unsafe_line.as_str(),
            unsafe_line.as_str(),
            "SECURITY VIOLATION - scripts are being executed but script_security not enabled. \
             There are insecure scripts.",
        ]
    );
    assert!(found.security_violation());
    assert_eq!(configuration.vrrp_scripts.len(), 1);
    assert_eq!(
        configuration.vrrp_instances[0]
            .notify
            .backup
            .as_ref()
            .unwrap()
            .runs_as,
        Some(Account { uid: 0, gid: 0 })
    );
}

#[test]
fn with_security_and_no_user_to_run_as_nothing_runs() {
    let Some(files) = Files::new("nobody") else {
        return;
    };
    let mut configuration = load(&instance(&files, " enable_script_security"));
    let found = reviewed(&mut configuration, Part::Vrrp, true, false);
    assert_eq!(
        texts(&found),
        [
            "Script user 'keepalived_script' does not exist",
            "Unable to set default user keepalived_script for script",
            "Unable to set default user for vrrp script chk - removing",
            "(VI_1) track script chk not found, ignoring...",
            &format!(
                "Failed to set default user for notify script {} - ignoring",
                files.insecure
            ),
            &format!(
                "Failed to set default user for notify script {} - ignoring",
                files.secure
            ),
        ]
    );
    let instance = &configuration.vrrp_instances[0];
    assert!(instance.notify.master.is_none() && instance.notify.backup.is_none());
    assert!(instance.tracking.scripts.is_empty());
    // With a keepalived_script user, scripts run as it (and, not root,
    // their paths are not checked).
    let mut configuration = load(&instance_text(&files));
    let found = reviewed(&mut configuration, Part::Vrrp, true, true);
    assert!(found.lines.is_empty(), "{found:?}");
    assert_eq!(
        configuration.vrrp_instances[0]
            .notify
            .master
            .as_ref()
            .unwrap()
            .runs_as,
        Some(Account {
            uid: 4242,
            gid: 4242
        })
    );
}

fn instance_text(files: &Files) -> String {
    instance(files, " enable_script_security")
}

#[test]
fn only_the_parts_that_run_are_reviewed() {
    let Some(files) = Files::new("parts") else {
        return;
    };
    let text = format!(
        "virtual_server 192.0.2.1 80 {{
    quorum_up {secure}
    real_server 192.0.2.2 80 {{
        notify_up \"{secure} up\" nobody
        MISC_CHECK {{
            misc_path \"{insecure} x\"
        }}
    }}
}}
",
        secure = files.secure,
        insecure = files.insecure
    );
    let mut configuration = load(&text);
    let found = reviewed(&mut configuration, Part::Vrrp, true, false);
    assert!(found.lines.is_empty());
    // Not reviewed: it cannot run (crate::run refuses it).
    assert!(
        configuration.virtual_servers[0]
            .quorum_up
            .as_ref()
            .unwrap()
            .runs_as
            .is_none()
    );
    let found = reviewed(&mut configuration, Part::Checkers, false, false);
    assert_eq!(
        texts(&found),
        [
            "Script user 'keepalived_script' does not exist",
            format!("Unsafe permissions found for script '{}'.", files.insecure).as_str(),
            "SECURITY VIOLATION - check scripts are being executed but script_security not \
             enabled. There are insecure scripts.",
        ]
    );
    let real_server = &configuration.virtual_servers[0].real_servers[0];
    assert_eq!(
        real_server.notify_up.as_ref().unwrap().runs_as,
        Some(Account {
            uid: 65534,
            gid: 65534
        })
    );
    // Insecure but not inhibited without enable_script_security: kept.
    assert_eq!(real_server.checkers.len(), 1);
}

/// Reviews `part` of `configuration` without `enable_script_security`
/// unless `security`, with a `keepalived_script` user if asked.
fn reviewed(
    configuration: &mut Config,
    part: Part,
    security: bool,
    keepalived_script: bool,
) -> Review {
    review(
        configuration,
        &[part],
        &context(security),
        &Table { keepalived_script },
    )
}
