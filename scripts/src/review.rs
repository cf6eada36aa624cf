//! A whole configuration's scripts reviewed as keepalived 2.2.7 reviews
//! them, part by part: whom each runs as (its own user and group, else the
//! global `script_user`, else `keepalived_script` if that user exists,
//! else pulse's own ids), then whether it may run ([`crate::security`]).
//! What may run comes out resolved (its program found, [`Script::runs_as`]
//! set); what may not is taken out of the configuration, as keepalived
//! frees it; the lines keepalived logs on the way come out in its order.
//!
//! The rules, with where keepalived has them:
//!
//! - A user written on a script's line (`notify_master "/x" user group`,
//!   a `vrrp_script`'s or MISC_CHECK's `user`) that does not exist takes
//!   that script out (notify.c `notify_script_init`, vrrp_parser.c
//!   `vrrp_vscript_user_handler`, check_misc.c `misc_user_handler`).
//! - The default user is looked up once: a global `script_user` that does
//!   not exist, or, with `enable_script_security`, no `script_user` and no
//!   `keepalived_script` user, takes out every script without a user of its
//!   own (`get_default_script_user`).
//! - Each part is reviewed only where it has something to run: the
//!   checkers' scripts where there is a `virtual_server`, VRRP's where
//!   there is a `vrrp_instance` (check_data.c
//!   `check_check_script_security`, vrrp.c `check_vrrp_script_security`,
//!   main.c `check_start_stop_script_secure`).
//! - A tracked `vrrp_script` or a MISC_CHECK is taken out when inhibited,
//!   not found, or neither executable nor a `</path` test; a notify script
//!   when inhibited, not found or not executable. A `vrrp_script` taken
//!   out is no longer tracked by any instance or group: an instance it
//!   would have held in FAULT runs as if it were absent.
//! - The notify FIFOs' scripts are reviewed with both parts (the global
//!   one by each), though pulse does not run them yet.
//! - Without `enable_script_security`, a part where any script was found
//!   says "SECURITY VIOLATION", which makes `keepalived -t` exit 6.

use fulcrum_config::model::{
    self as config, Account, CheckerKind, Config, Notify, Script, VrrpInstance,
};
use fulcrum_config::syntax::Span;

use crate::account::{AccountError, Accounts};
use crate::security::{self, Context, Findings};

/// keepalived's default script user, when it exists.
pub const DEFAULT_USER: &str = "keepalived_script";

/// The parts of a configuration whose scripts are reviewed, as
/// keepalived's processes review theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `startup_script` and `shutdown_script` (keepalived's parent).
    StartStop,
    /// The checkers' scripts: MISC_CHECK, `notify_up`/`notify_down`,
    /// `quorum_up`/`quorum_down`.
    Checkers,
    /// VRRP's: `vrrp_script`s and the instances' and groups' notify
    /// scripts.
    Vrrp,
}

/// How keepalived reports a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// `report_config_error`: a configuration problem (on standard error
    /// with `-t`, which then exits 5).
    ConfigurationError,
    /// `report_config_error(CONFIG_SECURITY_ERROR)`: `-t` exits 6.
    SecurityError,
    /// `log_message`: the log only.
    Log,
}

/// One line keepalived logs about a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    pub report: Report,
    /// Where the script it concerns is written, if known.
    pub span: Option<Span>,
}

/// What reviewing found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Review {
    /// In keepalived's order.
    pub lines: Vec<Line>,
}

impl Review {
    /// Whether a part runs scripts without `enable_script_security`
    /// (keepalived -t exits 6).
    pub fn security_violation(&self) -> bool {
        self.lines
            .iter()
            .any(|line| line.report == Report::SecurityError)
    }

    fn log(&mut self, report: Report, span: Option<Span>, text: impl Into<String>) {
        self.lines.push(Line {
            text: text.into(),
            report,
            span,
        });
    }
}

/// The default user, looked up once.
enum DefaultUser {
    Unknown,
    Known(Account),
    Failed,
}

/// One review in progress.
struct Reviewer<'a> {
    context: &'a Context,
    accounts: &'a dyn Accounts,
    default_user: DefaultUser,
    review: Review,
}

impl Reviewer<'_> {
    /// The global `script_user`, as keepalived's global_defs sets it.
    fn global_user(&mut self, configuration: &Config) {
        let Some((user, group)) = &configuration.global.script_user else {
            return;
        };
        let span = configuration.global.script_user_span;
        self.default_user = match self.accounts.lookup(user, group.as_deref()) {
            Ok(account) => DefaultUser::Known(account),
            Err(error) => {
                self.review.log(Report::Log, span, error.to_string());
                self.review.log(
                    Report::ConfigurationError,
                    span,
                    "Error setting global script uid/gid",
                );
                DefaultUser::Failed
            }
        };
    }

    /// keepalived's `get_default_script_user`.
    fn default_user(&mut self, span: Option<Span>) -> Option<Account> {
        if let DefaultUser::Unknown = self.default_user {
            self.default_user = match self.accounts.lookup(DEFAULT_USER, None) {
                Ok(account) => DefaultUser::Known(account),
                Err(error) => {
                    self.review.log(Report::Log, span, error.to_string());
                    if self.context.security {
                        self.review.log(
                            Report::ConfigurationError,
                            span,
                            format!("Unable to set default user {DEFAULT_USER} for script"),
                        );
                        DefaultUser::Failed
                    } else {
                        DefaultUser::Known(self.context.ours)
                    }
                }
            };
        }
        match self.default_user {
            DefaultUser::Known(account) => Some(account),
            _ => None,
        }
    }

    /// Whom `script` runs as: its own user, else the default; `None` (said
    /// as `failure` says it) when there is none.
    fn account(
        &mut self,
        script: &Script,
        own_failure: impl FnOnce(&Script, &AccountError) -> (Report, String),
        default_failure: impl FnOnce(&Script) -> (Report, String),
    ) -> Option<Account> {
        match &script.user {
            Some(user) => match self.accounts.lookup(user, script.group.as_deref()) {
                Ok(account) => Some(account),
                Err(error) => {
                    self.review.log(Report::Log, script.span, error.to_string());
                    let (report, text) = own_failure(script, &error);
                    self.review.log(report, script.span, text);
                    None
                }
            },
            None => {
                let account = self.default_user(script.span);
                if account.is_none() {
                    let (report, text) = default_failure(script);
                    self.review.log(report, script.span, text);
                }
                account
            }
        }
    }

    /// A notify-like script (`notify_*`, `quorum_*`, the start and stop
    /// scripts) of type `kind`: whom it runs as, or `None` with
    /// keepalived's line (notify.c `notify_script_init`).
    fn notify_account(&mut self, script: &Script, kind: &str) -> Option<Account> {
        self.account(
            script,
            |script, _| {
                (
                    Report::Log,
                    format!(
                        "Invalid user/group for {kind} script {} - ignoring",
                        program(script)
                    ),
                )
            },
            |script| {
                (
                    Report::Log,
                    format!(
                        "Failed to set default user for {kind} script {} - ignoring",
                        program(script)
                    ),
                )
            },
        )
    }

    /// Checks `script` run as `account`; the findings, the lines said.
    fn check(&mut self, script: &mut Script, account: Account) -> Findings {
        let mut log = Vec::new();
        let findings = security::check_script(&mut script.argv, account, self.context, &mut log);
        for text in log {
            self.review.log(Report::Log, script.span, text);
        }
        script.runs_as = Some(account);
        findings
    }

    /// A notify script (`check_notify_script_secure`): kept if it may run;
    /// its findings.
    fn notify_script(&mut self, slot: &mut Option<Script>, kind: &str) -> Findings {
        let Some(script) = slot else {
            return Findings::default();
        };
        let Some(account) = self.notify_account(script, kind) else {
            *slot = None;
            return Findings::default();
        };
        let findings = self.check(script, account);
        if findings.inhibit || findings.not_found || !findings.executable {
            *slot = None;
        }
        findings
    }

    /// The same for a boxed one (the checkers').
    fn boxed_notify_script(&mut self, slot: &mut Option<Box<Script>>, kind: &str) -> Findings {
        let mut script = slot.take().map(|script| *script);
        let findings = self.notify_script(&mut script, kind);
        *slot = script.map(Box::new);
        findings
    }

    /// The "SECURITY VIOLATION" line of a part, where scripts were found
    /// without `enable_script_security`.
    fn violation(&mut self, findings: Findings, which: &str, span: Option<Span>) {
        if !self.context.security && findings.is_script {
            self.review.log(
                Report::SecurityError,
                span,
                format!(
                    "SECURITY VIOLATION - {which}scripts are being executed but script_security \
                     not enabled.{}",
                    if findings.insecure {
                        " There are insecure scripts."
                    } else {
                        ""
                    }
                ),
            );
        }
    }

    fn start_stop(&mut self, configuration: &mut Config) {
        let global = &mut configuration.global;
        let mut findings = Findings::default();
        let mut span = None;
        for (slot, kind) in [
            (&mut global.startup_script, "startup"),
            (&mut global.shutdown_script, "shutdown"),
        ] {
            let Some(script) = slot else {
                continue;
            };
            span = span.or(script.span);
            let Some(account) = self.notify_account(script, kind) else {
                self.review.log(
                    Report::ConfigurationError,
                    script.span,
                    format!("Invalid {kind} script"),
                );
                *slot = None;
                continue;
            };
            let found = self.check(script, account);
            if found.inhibit || found.not_found || !(found.executable || found.system) {
                *slot = None;
            }
            findings = merged(findings, found);
        }
        self.violation(findings, "start/shutdown ", span);
    }

    fn checkers(&mut self, configuration: &mut Config) {
        if configuration.virtual_servers.is_empty() {
            return;
        }
        let mut findings = Findings::default();
        let mut span = None;
        // Every MISC_CHECK first, as keepalived's checkers queue has them.
        for virtual_server in &mut configuration.virtual_servers {
            for real_server in &mut virtual_server.real_servers {
                // In place: a configuration of 100,000 real servers holds
                // as many short vectors, and building new ones doubled
                // `pulse -t`'s peak memory.
                real_server.checkers.retain_mut(|checker| {
                    let CheckerKind::Misc(misc) = &mut checker.kind else {
                        return true;
                    };
                    let Some(script) = misc.path.as_deref_mut() else {
                        return true;
                    };
                    span = span.or(script.span);
                    let found = self.misc_script(script);
                    findings = merged(findings, found);
                    !(found.inhibit
                        || found.not_found
                        || !(found.executable || found.system)
                        || script.runs_as.is_none())
                });
            }
        }
        for virtual_server in &mut configuration.virtual_servers {
            for slot in [
                &mut virtual_server.quorum_up,
                &mut virtual_server.quorum_down,
            ] {
                span = span.or(slot.as_ref().and_then(|script| script.span));
                findings = merged(findings, self.boxed_notify_script(slot, "quorum"));
            }
            for real_server in &mut virtual_server.real_servers {
                for slot in [&mut real_server.notify_up, &mut real_server.notify_down] {
                    span = span.or(slot.as_ref().and_then(|script| script.span));
                    findings = merged(findings, self.boxed_notify_script(slot, "notify"));
                }
            }
        }
        let fifo = &mut configuration.global.fifo_scripts;
        for (slot, kind) in [
            (&mut fifo.any, "notify_fifo"),
            (&mut fifo.lvs, "lvs_notify_fifo"),
        ] {
            span = span.or(slot.as_ref().and_then(|script| script.span));
            findings = merged(findings, self.notify_script(slot, kind));
        }
        self.violation(findings, "check ", span);
    }

    /// A MISC_CHECK's script: its user (check_misc.c), then its check;
    /// `runs_as` stays `None` when it has no user.
    fn misc_script(&mut self, script: &mut Script) -> Findings {
        let account = self.account(
            script,
            |script, _| {
                (
                    Report::ConfigurationError,
                    format!(
                        "Failed to set uid/gid for misc checker script {} - removing",
                        security::quoted_command(&script.argv)
                    ),
                )
            },
            |script| {
                (
                    Report::ConfigurationError,
                    format!(
                        "Unable to set default user for misc script {} - removing",
                        security::quoted_command(&script.argv)
                    ),
                )
            },
        );
        let Some(account) = account else {
            return Findings::default();
        };
        let findings = self.check(script, account);
        let command = security::quoted_command(&script.argv);
        if findings.inhibit {
            self.review.log(
                Report::Log,
                script.span,
                format!("Disabling misc script {command} due to insecure"),
            );
        } else if findings.not_found {
            self.review.log(
                Report::Log,
                script.span,
                format!("Disabling misc script {command} since not found/accessible"),
            );
        }
        findings
    }

    fn vrrp(&mut self, configuration: &mut Config) {
        if configuration.vrrp_instances.is_empty() {
            return;
        }
        let mut findings = Findings::default();
        let mut span = None;
        // Taken out as they are read: the instances tracking them do not
        // find them (keepalived resolves a track_script as it reads it).
        let mut unknown = Vec::new();
        // Taken out once checked: silently untracked.
        let mut removed = Vec::new();
        let mut kept = Vec::new();
        for mut vrrp_script in std::mem::take(&mut configuration.vrrp_scripts) {
            let Some(script) = &mut vrrp_script.script else {
                // keepalived removes it ("No script set for vrrp_script");
                // the configuration reported it already.
                unknown.push((vrrp_script.name, None));
                continue;
            };
            span = span.or(script.span);
            let name = vrrp_script.name.clone();
            let account = self.account(
                script,
                |script, _| {
                    (
                        Report::ConfigurationError,
                        format!(
                            "Unable to set uid/gid for script {}",
                            security::quoted_command(&script.argv)
                        ),
                    )
                },
                |_| {
                    (
                        Report::ConfigurationError,
                        format!("Unable to set default user for vrrp script {name} - removing"),
                    )
                },
            );
            let Some(account) = account else {
                unknown.push((vrrp_script.name, script.span));
                continue;
            };
            let found = self.check(script, account);
            findings = merged(findings, found);
            let insecure = if found.inhibit {
                self.review.log(
                    Report::ConfigurationError,
                    script.span,
                    format!(
                        "Disabling track script {} due to insecure",
                        vrrp_script.name
                    ),
                );
                true
            } else if found.not_found {
                self.review.log(
                    Report::ConfigurationError,
                    script.span,
                    format!(
                        "Disabling track script {} since not found/accessible",
                        vrrp_script.name
                    ),
                );
                true
            } else {
                !(found.executable || found.system)
            };
            if insecure {
                removed.push(vrrp_script.name);
            } else {
                kept.push(vrrp_script);
            }
        }
        configuration.vrrp_scripts = kept;
        for instance in &mut configuration.vrrp_instances {
            self.not_found(&instance.name, &instance.tracking, &unknown);
        }
        for group in &configuration.sync_groups {
            self.not_found(&group.name, &group.tracking, &unknown);
        }
        removed.extend(unknown.into_iter().map(|(name, _)| name));
        for instance in &mut configuration.vrrp_instances {
            span = span.or(first_span(&instance.notify));
            findings = merged(findings, self.instance_notify(instance));
            untrack(&mut instance.tracking, &removed);
        }
        for group in &mut configuration.sync_groups {
            span = span.or(first_span(&group.notify));
            let notify = &mut group.notify;
            for slot in [
                &mut notify.backup,
                &mut notify.master,
                &mut notify.fault,
                &mut notify.stop,
                &mut notify.any,
            ] {
                findings = merged(findings, self.notify_script(slot, "notify"));
            }
            untrack(&mut group.tracking, &removed);
        }
        let fifo = &mut configuration.global.fifo_scripts;
        for (slot, kind) in [
            (&mut fifo.any, "notify_fifo"),
            (&mut fifo.vrrp, "vrrp_notify_fifo"),
        ] {
            span = span.or(slot.as_ref().and_then(|script| script.span));
            findings = merged(findings, self.notify_script(slot, kind));
        }
        self.violation(findings, "", span);
    }

    /// `name` tracks scripts taken out as they were read: keepalived does
    /// not find them (vrrp_track.c `alloc_track_script`).
    fn not_found(
        &mut self,
        name: &str,
        tracking: &config::Tracking,
        unknown: &[(String, Option<Span>)],
    ) {
        for tracked in &tracking.scripts {
            if let Some((_, span)) = unknown.iter().find(|(script, _)| *script == tracked.name) {
                self.review.log(
                    Report::ConfigurationError,
                    *span,
                    format!(
                        "({name}) track script {} not found, ignoring...",
                        tracked.name
                    ),
                );
            }
        }
    }

    /// An instance's notify scripts, in keepalived's order.
    fn instance_notify(&mut self, instance: &mut VrrpInstance) -> Findings {
        let notify = &mut instance.notify;
        let mut findings = Findings::default();
        for slot in [
            &mut notify.backup,
            &mut notify.master,
            &mut notify.fault,
            &mut notify.stop,
        ] {
            findings = merged(findings, self.notify_script(slot, "notify"));
        }
        if let Some(deleted) = &mut notify.deleted {
            findings = merged(findings, self.notify_script(deleted, "notify"));
        }
        for slot in [&mut notify.any, &mut notify.master_rx_lower_priority] {
            findings = merged(findings, self.notify_script(slot, "notify"));
        }
        findings
    }
}

/// Reviews the scripts of `parts` in `configuration`, which keeps what may
/// run (resolved) and loses what may not.
pub fn review(
    configuration: &mut Config,
    parts: &[Part],
    context: &Context,
    accounts: &dyn Accounts,
) -> Review {
    let mut reviewer = Reviewer {
        context,
        accounts,
        default_user: DefaultUser::Unknown,
        review: Review::default(),
    };
    reviewer.global_user(configuration);
    for part in parts {
        match part {
            Part::StartStop => reviewer.start_stop(configuration),
            Part::Checkers => reviewer.checkers(configuration),
            Part::Vrrp => reviewer.vrrp(configuration),
        }
    }
    reviewer.review
}

/// [`review`] with this process's ids, `PATH` and the system's accounts,
/// and the configuration's `enable_script_security`: what the daemons do.
pub fn review_here(configuration: &mut Config, parts: &[Part]) -> Review {
    let context = Context::of_this_process(configuration.global.enable_script_security);
    review(configuration, parts, &context, &crate::account::System)
}

fn merged(mut findings: Findings, other: Findings) -> Findings {
    findings.merge(other);
    findings
}

/// The program of a script, as keepalived names it in its lines.
fn program(script: &Script) -> &str {
    script.argv.first().map(String::as_str).unwrap_or("")
}

fn first_span(notify: &Notify) -> Option<Span> {
    [
        &notify.backup,
        &notify.master,
        &notify.fault,
        &notify.stop,
        &notify.any,
        &notify.master_rx_lower_priority,
    ]
    .into_iter()
    .flatten()
    .find_map(|script| script.span)
}

/// Tracked scripts taken out: no longer tracked (keepalived's
/// `free_track_script`, silently).
fn untrack(tracking: &mut config::Tracking, removed: &[String]) {
    tracking
        .scripts
        .retain(|tracked| !removed.contains(&tracked.name));
}

#[cfg(test)]
mod tests;
