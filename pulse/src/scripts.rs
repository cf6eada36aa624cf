//! pulse's side of the scripts keepalived runs (the `fulcrum-scripts`
//! crate reviews and starts them): reporting what a review found (in
//! `pulse -t`'s report, in the daemon's log, in keepalived's words), and
//! running the checker part's scripts: `notify_up`, `notify_down`,
//! `quorum_up`, `quorum_down`.
//!
//! As keepalived (notify.c `notify_exec`): the reviewed command line is
//! executed without a shell and without extra arguments, as the user the
//! review found, with no timeout. Each script runs in a task of its own,
//! so a slow one never holds up another or the IPVS table; its exit status
//! is logged.

use fulcrum_config::diagnostic::Diagnostic;
use fulcrum_scripts::review::{Line, Report, Review};
use tokio::sync::mpsc;

use crate::lvs::task::Notification;

/// A review's line in `pulse -t`'s report: keepalived's configuration
/// errors as warnings (pulse runs the configuration), its log lines as
/// notes (what it does not run). `None` for a line with no place in the
/// files.
pub fn diagnostic(line: &Line) -> Option<Diagnostic> {
    let span = line.span?;
    Some(match line.report {
        Report::ConfigurationError | Report::SecurityError => {
            Diagnostic::warning(span, line.text.clone())
        }
        Report::Log => Diagnostic::note(span, line.text.clone()),
    })
}

/// A review's lines in the daemon's log, as keepalived logs them.
pub fn log(review: &Review) {
    for line in &review.lines {
        tracing::warn!("{}", line.text);
    }
}

/// Runs the script of every notification received, until the channel
/// closes.
pub async fn run(mut notifications: mpsc::Receiver<Notification>) {
    while let Some(notification) = notifications.recv().await {
        // The task sends only notifications with a script.
        let Some(script) = notification.script() else {
            continue;
        };
        tracing::info!("{}: running {}", describe(&notification), script.command);
        fulcrum_scripts::run::spawn(script, &[]);
    }
}

/// What happened, for the log.
fn describe(notification: &Notification) -> String {
    match notification {
        Notification::RealServer {
            virtual_server,
            real_server,
            up,
            ..
        } => format!(
            "real server {real_server} of {virtual_server} is {}",
            if *up { "up" } else { "down" }
        ),
        Notification::Quorum {
            virtual_server, up, ..
        } => format!(
            "{virtual_server}: quorum {}",
            if *up { "up" } else { "down" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn runs_each_script_reviewed_with_its_arguments_without_a_shell() {
        let directory = std::env::temp_dir().join(format!("pulse-scripts-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let marker = directory.join("up");
        let mut configuration = fulcrum_config::load_str(
            "test.conf",
            &format!(
                "virtual_server 192.0.2.1 80 {{
    protocol TCP
    real_server 10.0.0.1 80 {{
        notify_up \"/usr/bin/touch {} {}/semi;colon\"
    }}
}}",
                marker.display(),
                directory.display()
            ),
            &Default::default(),
        )
        .config;
        fulcrum_scripts::review::review_here(
            &mut configuration,
            &[fulcrum_scripts::review::Part::Checkers],
        );
        let script = configuration.virtual_servers[0].real_servers[0]
            .notify_up
            .as_deref()
            .cloned();
        let (sender, receiver) = mpsc::channel(4);
        let runner = tokio::spawn(run(receiver));
        sender
            .send(Notification::RealServer {
                virtual_server: nanny::spec::VirtualServerKey::Address {
                    address: "192.0.2.1:80".parse().unwrap(),
                    protocol: Some(fulcrum_config::model::Protocol::Tcp),
                },
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
}
