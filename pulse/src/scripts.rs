//! Runs the scripts keepalived's checker process runs: `notify_up`,
//! `notify_down`, `quorum_up`, `quorum_down`.
//!
//! As keepalived (notify.c `notify_exec`): the command line, already split
//! into words by the configuration parser, is executed without a shell and
//! without extra arguments, as the script's user (else the global
//! `script_user`, else `keepalived_script` if that user exists, else
//! pulse's own user), with no timeout. Each script runs in a task of its
//! own, so a slow one never holds up another or the IPVS table; its exit
//! status is logged.

use std::sync::Arc;

use fulcrum_config::model as config;
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::reconciler::Notification;

/// keepalived's default script user, when it exists.
const DEFAULT_SCRIPT_USER: &str = "keepalived_script";

/// Runs the script of every notification received, until the channel
/// closes; `configuration` gives the global `script_user`.
pub async fn run(
    mut notifications: mpsc::Receiver<Notification>,
    configuration: impl Fn() -> Arc<config::Config>,
) {
    while let Some(notification) = notifications.recv().await {
        let (what, script) = describe(&notification);
        let Some(script) = script else {
            tracing::debug!("{what}: no script");
            continue;
        };
        tracing::info!("{what}: running {}", script.command);
        let configuration = configuration();
        match command(&script, &configuration.global) {
            Ok(mut command) => match command.spawn() {
                Ok(mut child) => {
                    tokio::spawn(async move {
                        match child.wait().await {
                            Ok(status) if status.success() => {
                                tracing::debug!("{}: {status}", script.command)
                            }
                            Ok(status) => tracing::warn!("{}: {status}", script.command),
                            Err(error) => tracing::warn!("{}: {error}", script.command),
                        }
                    });
                }
                Err(error) => tracing::error!("cannot run {}: {error}", script.command),
            },
            Err(why) => tracing::error!("cannot run {}: {why}", script.command),
        }
    }
}

/// What happened, for the log, and the script to run if any.
fn describe(notification: &Notification) -> (String, Option<config::Script>) {
    match notification {
        Notification::RealServer {
            virtual_server,
            real_server,
            up,
            script,
        } => (
            format!(
                "real server {real_server} of {virtual_server} is {}",
                if *up { "up" } else { "down" }
            ),
            script.clone(),
        ),
        Notification::Quorum {
            virtual_server,
            up,
            script,
        } => (
            format!(
                "{virtual_server}: quorum {}",
                if *up { "up" } else { "down" }
            ),
            script.clone(),
        ),
    }
}

/// The process to start for `script`.
pub fn command(script: &config::Script, global: &config::GlobalDefs) -> Result<Command, String> {
    let Some((program, arguments)) = script.argv.split_first() else {
        return Err("empty command line".into());
    };
    let user = match (&script.user, &global.script_user) {
        (Some(user), _) => Some((user.clone(), script.group.clone())),
        (None, Some((user, group))) => Some((user.clone(), group.clone())),
        (None, None) => nanny::driver::misc::lookup_user(DEFAULT_SCRIPT_USER, None)
            .is_ok()
            .then(|| (DEFAULT_SCRIPT_USER.to_string(), None)),
    };
    let (user, group) = match &user {
        Some((user, group)) => (Some(user.as_str()), group.as_deref()),
        None => (None, None),
    };
    nanny::driver::misc::script_command(program, arguments, user, group)
        .map_err(|failure| failure.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn configuration(text: &str) -> Arc<config::Config> {
        Arc::new(fulcrum_config::load_str("test.conf", text, &Default::default()).config)
    }

    #[tokio::test]
    async fn runs_each_script_with_its_arguments_without_a_shell() {
        let directory = std::env::temp_dir().join(format!("pulse-scripts-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let marker = directory.join("up");
        let configuration = configuration(&format!(
            "virtual_server 192.0.2.1 80 {{
    protocol TCP
    real_server 10.0.0.1 80 {{
        notify_up \"/usr/bin/touch {} {}/semi;colon\"
    }}
}}",
            marker.display(),
            directory.display()
        ));
        let script = configuration.virtual_servers[0].real_servers[0]
            .notify_up
            .as_deref()
            .cloned();
        let (sender, receiver) = mpsc::channel(4);
        let shared = configuration.clone();
        let runner = tokio::spawn(run(receiver, move || shared.clone()));
        sender
            .send(Notification::RealServer {
                virtual_server: nanny::spec::VirtualServerName("192.0.2.1:80 TCP".into()),
                real_server: "10.0.0.1:80".parse().unwrap(),
                up: true,
                script,
            })
            .await
            .unwrap();
        drop(sender);
        runner.await.unwrap();
        // touch received both words as file names: no shell read the `;`.
        let mut found = false;
        for _ in 0..500 {
            if marker.exists() && directory.join("semi;colon").exists() {
                found = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        std::fs::remove_dir_all(&directory).unwrap();
        assert!(found, "the script did not run");
    }

    #[test]
    fn an_unknown_user_is_an_error_naming_it() {
        let configuration = configuration("global_defs {\n script_user no-such-user-here\n}\n");
        let script = config::Script::new("/bin/true", None, None);
        let error = command(&script, &configuration.global).unwrap_err();
        assert!(error.contains("no-such-user-here"), "{error}");
    }
}
