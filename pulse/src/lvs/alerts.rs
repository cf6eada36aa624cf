//! The checkers' SMTP alerts: told by nanny's scheduler of each check's
//! transition for each real server it serves
//! ([`nanny::scheduler::AttemptObserver::transition`]), sent as keepalived's
//! check_*.c send them ([`crate::smtp::checker_body`]); and the virtual
//! servers' quorum alerts, told by the reconciler ([`CheckerAlerts::quorum`]).
//!
//! The scheduler calls on its own task: the lookup is a hash map's and the
//! mail goes from a task of its own ([`crate::smtp::Mailer::send`]), so
//! that no check waits on a mail server. What the alerts need of the
//! configuration is made once per configuration
//! ([`CheckerAlerts::configure`], off the runtime's threads: it may ask
//! the resolver).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use fulcrum_config::model as config;
use nanny::scheduler::{AttemptObserver, CheckTransition};
use nanny::spec::{CheckSpec, VirtualServerKey};

use super::desired::QuorumChange;
use crate::smtp::{self, Alert, Mailer};

/// What one configuration says of the alerts.
struct Alerting {
    mailer: Mailer,
    no_checker_emails: bool,
    /// A virtual server's `smtp_alert` when it has none written: the
    /// global `smtp_alert_checker`, else `smtp_alert`, else off.
    virtual_server_default: bool,
    /// Each real server's `smtp_alert` and its virtual server's protocol,
    /// by virtual server and real server address.
    servers: HashMap<(VirtualServerKey, SocketAddr), (bool, Option<config::Protocol>)>,
}

/// The scheduler's observer: the check durations' (the metrics) and the
/// alerts.
pub struct CheckerAlerts {
    durations: Arc<dyn AttemptObserver>,
    /// `None` without a mail server or addresses.
    alerting: RwLock<Option<Arc<Alerting>>>,
}

impl CheckerAlerts {
    pub fn new(durations: Arc<dyn AttemptObserver>) -> CheckerAlerts {
        CheckerAlerts {
            durations,
            alerting: RwLock::new(None),
        }
    }

    /// Takes `configuration`'s settings. Blocking (the host's name, the
    /// server's).
    pub fn configure(&self, configuration: &config::Config) {
        let mailer = match Mailer::new(&configuration.global) {
            Ok(mailer) => mailer,
            Err(error) => {
                tracing::error!("{error}");
                None
            }
        };
        let alerting = mailer.map(|mailer| {
            let mut servers = HashMap::new();
            for virtual_server in &configuration.virtual_servers {
                let key = VirtualServerKey::from_config(virtual_server);
                for real_server in &virtual_server.real_servers {
                    servers.insert(
                        (
                            key.clone(),
                            SocketAddr::new(real_server.address, real_server.port),
                        ),
                        (real_server.smtp_alert, virtual_server.protocol),
                    );
                }
            }
            let global = &configuration.global;
            Arc::new(Alerting {
                mailer,
                no_checker_emails: global.no_checker_emails,
                virtual_server_default: global
                    .smtp_alert_checker
                    .or(global.smtp_alert)
                    .unwrap_or(false),
                servers,
            })
        });
        *self.alerting.write().expect("no writer panics") = alerting;
    }
}

impl CheckerAlerts {
    /// ipwrapper.c `do_vs_notifies`: a virtual server gained or lost its
    /// quorum (or started with it), when its `smtp_alert` is on (check_data.c:
    /// its own, else the global `smtp_alert_checker`, else `smtp_alert`,
    /// else off).
    pub fn quorum(&self, virtual_server: &config::VirtualServer, change: &QuorumChange) {
        let Some(alerting) = self.alerting.read().expect("no writer panics").clone() else {
            return;
        };
        if !virtual_server
            .defaults
            .smtp_alert
            .unwrap_or(alerting.virtual_server_default)
        {
            return;
        }
        alerting.mailer.send(
            Alert::VirtualServer {
                virtual_server: smtp::virtual_server_name(&change.virtual_server),
                up: change.up,
            },
            &smtp::quorum_body(
                change.up,
                change.initial,
                virtual_server.quorum,
                virtual_server.hysteresis,
                change.threshold,
                change.weight_sum,
            ),
        );
    }
}

impl AttemptObserver for CheckerAlerts {
    fn observe(&self, check: &CheckSpec, took: std::time::Duration, succeeded: bool) {
        self.durations.observe(check, took, succeeded);
    }

    fn transition(&self, transition: &CheckTransition<'_>) {
        let Some(alerting) = self.alerting.read().expect("no writer panics").clone() else {
            return;
        };
        let address = transition.real_server.address;
        let Some(&(smtp_alert, protocol)) = alerting
            .servers
            .get(&(transition.virtual_server.clone(), address))
        else {
            return;
        };
        if !smtp::checker_alert_wanted(smtp_alert, alerting.no_checker_emails, transition) {
            return;
        }
        let Some(body) = smtp::checker_body(&transition.check.kind, transition) else {
            return;
        };
        alerting.mailer.send(
            Alert::RealServer {
                real_server: smtp::service_name(address, protocol),
                virtual_server: smtp::virtual_server_name(transition.virtual_server),
                up: transition.server_up,
            },
            &body,
        );
    }
}
