//! The Fulcrum daemon: configuration and health checks in, IPVS state out.
//!
//! [`run`] holds the logic, so that the binary stays a thin wrapper and
//! tests can drive it: keepalived's configuration check (`-t`),
//! `--dump-config`, and otherwise the daemon ([`daemon`]).

pub mod cli;
pub mod cluster;
pub mod daemon;
pub mod ipvs_start;
pub mod lvs;
pub mod metrics;
pub mod mux;
pub mod notify_fifo;
pub mod scripts;
pub mod signals;
pub mod smtp;
pub mod status;
pub mod sync_daemon;
pub mod vrrp;

use std::io::Write;

use fulcrum_config::diagnostic::Severity;
use fulcrum_scripts::review::Part;

/// What `pulse -v` prints, on standard error as `keepalived -v` does. The
/// first line is in keepalived's form, `NAME vVERSION ...`, with the
/// version of keepalived whose behaviour pulse answers with: the keepalived
/// exporters parse `keepalived -v` that way (the second word, its `v`
/// dropped) and choose by it how to ask for the dumps (`--signum` from
/// 1.3.8, script states from 1.4.0), so that version is the one to give
/// them. Its `configure options` and `Config options` lines are
/// keepalived's, with what pulse has: mehdy/keepalived-exporter from
/// 1.6.1 looks for `--enable-json` in them before it uses SIGJSON, and
/// refuses to start in its JSON mode without it. The rest says what the
/// program is.
pub fn version() -> String {
    format!(
        "Keepalived v2.2.7 (pulse {version}, Fulcrum)\n\
         \n\
         pulse {version} (Fulcrum): keepalived 2.2.7's configuration, command line,\n\
         signals and dumps, over the kernel's IPVS and VRRP on rtnetlink.\n\
         \n\
         configure options: --enable-json\n\
         \n\
         Config options:  NFTABLES LVS VRRP VRRP_AUTH VRRP_VMAC JSON\n",
        version = env!("CARGO_PKG_VERSION")
    )
}

/// Exit statuses, keepalived's where they apply (see docs/pulse.md).
pub mod exit {
    /// No error and no warning.
    pub const CLEAN: i32 = 0;
    /// The command line is wrong (keepalived: "Unknown option", status 1).
    pub const USAGE: i32 = 1;
    /// The daemon cannot run: no IPVS in the kernel, the pid file held by
    /// another pulse, no fork.
    pub const FATAL: i32 = 3;
    /// At least one error: pulse would refuse this configuration
    /// (keepalived's `KEEPALIVED_EXIT_CONFIG`, "cannot run the config").
    pub const ERRORS: i32 = 4;
    /// Warnings but no error: pulse would run it
    /// (keepalived's `KEEPALIVED_EXIT_CONFIG_TEST`).
    pub const WARNINGS: i32 = 5;
    /// No error, but scripts would run without `enable_script_security`
    /// (keepalived's `KEEPALIVED_EXIT_CONFIG_TEST_SECURITY`, "SECURITY
    /// VIOLATION").
    pub const SECURITY: i32 = 6;
}

/// Runs pulse with `arguments` (without the program name); returns the
/// exit status.
pub fn run(
    arguments: impl IntoIterator<Item = std::ffi::OsString>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> std::io::Result<i32> {
    let arguments = match cli::parse(arguments) {
        Ok(arguments) => arguments,
        Err(error) => {
            writeln!(stderr, "pulse: {error}")?;
            writeln!(stderr, "Try 'pulse --help' for more information.")?;
            return Ok(exit::USAGE);
        }
    };
    // keepalived prints the number and exits as it reads the option.
    if let Some(function) = &arguments.signum {
        return Ok(match signals::number(function) {
            Some(number) => {
                writeln!(stdout, "{number}")?;
                exit::CLEAN
            }
            None => {
                writeln!(stderr, "Unknown sigfunc {function}")?;
                exit::USAGE
            }
        });
    }
    if arguments.help {
        write!(stdout, "{}", cli::help())?;
        return Ok(exit::CLEAN);
    }
    if arguments.version {
        write!(stderr, "{}", version())?;
        return Ok(exit::CLEAN);
    }
    if !arguments.unexpected.is_empty() {
        // keepalived reports stray arguments and carries on.
        writeln!(
            stderr,
            "Unexpected argument(s): {}",
            arguments.unexpected.join(" ")
        )?;
    }
    let cluster_command = arguments.apply.is_some()
        || arguments.status
        || arguments.json
        || arguments.which_dip.is_some()
        || arguments.vip.is_some();
    let checking = arguments.config_test.is_some() || arguments.dump_config;
    // `-t` (or --dump-config) beside --cluster checks the Mux's file and
    // nothing else, as it does for a director's: a Mux's command line with
    // -t added must never start a Mux (which would take the VTEP and set
    // forwarding on).
    if cluster_command || (arguments.cluster.is_some() && !checking) {
        return cluster::run(&arguments, stdout, stderr);
    }
    if arguments.config_test.is_none() && !arguments.dump_config {
        stdout.flush()?;
        stderr.flush()?;
        return Ok(daemon::run(&arguments));
    }
    check(&arguments, stdout, stderr)
}

fn check(
    arguments: &cli::Arguments,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> std::io::Result<i32> {
    let options = arguments.reading_options();
    let mut loaded = fulcrum_config::load(&arguments.config_file, &options);
    // The model as read, before the review below resolves and takes out
    // scripts.
    let json = if arguments.dump_config {
        Some(serde_json::to_string_pretty(&loaded.config).map_err(std::io::Error::other)?)
    } else {
        None
    };
    // keepalived -t reviews every part's scripts in its one process.
    let review = fulcrum_scripts::review::review_here(
        &mut loaded.config,
        &[Part::StartStop, Part::Checkers, Part::Vrrp],
    );
    for line in &review.lines {
        if let Some(diagnostic) = scripts::diagnostic(line) {
            loaded.diagnostics.push(diagnostic);
        }
    }
    let errors = loaded.diagnostics.count(Severity::Error);
    let warnings = loaded.diagnostics.count(Severity::Warning);
    let report = format!(
        "{}{}\n",
        loaded.diagnostics.render(&loaded.sources),
        summary(errors, warnings)
    );
    match &arguments.config_test {
        Some(cli::ConfigTest::File(path)) => {
            if let Err(error) = std::fs::write(path, &report) {
                writeln!(stderr, "pulse: cannot write {}: {error}", path.display())?;
                write!(stderr, "{report}")?;
            }
        }
        _ => write!(stderr, "{report}")?,
    }
    if let Some(json) = json {
        writeln!(stdout, "{json}")?;
    }
    // The process ends now: freeing a large configuration's model and
    // sources piece by piece would only cost time.
    std::mem::forget(loaded);
    Ok(if errors > 0 {
        exit::ERRORS
    } else if review.security_violation() {
        exit::SECURITY
    } else if warnings > 0 {
        exit::WARNINGS
    } else {
        exit::CLEAN
    })
}

/// "2 errors, 1 warning".
pub fn summary(errors: usize, warnings: usize) -> String {
    let plural = |count: usize, word: &str| {
        if count == 1 {
            format!("{count} {word}")
        } else {
            format!("{count} {word}s")
        }
    };
    format!(
        "{}, {}",
        plural(errors, "error"),
        plural(warnings, "warning")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn parse(line: &[&str]) -> Result<cli::Arguments, cli::UsageError> {
        cli::parse(line.iter().map(OsString::from))
    }

    #[test]
    fn config_test_takes_an_attached_argument_only() {
        let arguments = parse(&["-t", "-f", "x.conf"]).unwrap();
        assert_eq!(arguments.config_test, Some(cli::ConfigTest::Stderr));
        assert_eq!(arguments.config_file, std::path::PathBuf::from("x.conf"));
        let arguments = parse(&["-tlog", "-fx.conf"]).unwrap();
        assert_eq!(
            arguments.config_test,
            Some(cli::ConfigTest::File("log".into()))
        );
        assert_eq!(arguments.config_file, std::path::PathBuf::from("x.conf"));
        let arguments = parse(&["--config-test=log"]).unwrap();
        assert_eq!(
            arguments.config_test,
            Some(cli::ConfigTest::File("log".into()))
        );
        // keepalived: "Unexpected argument(s): log", and goes on.
        let arguments = parse(&["--config-test", "log"]).unwrap();
        assert_eq!(arguments.config_test, Some(cli::ConfigTest::Stderr));
        assert_eq!(arguments.unexpected, ["log"]);
        assert_eq!(
            parse(&["--use-file", "a", "--config-id=b"])
                .unwrap()
                .config_id,
            Some("b".into())
        );
    }

    #[test]
    fn grouped_abbreviated_and_unknown_options() {
        let arguments = parse(&["-lnt", "-i", "main", "--all-c", "--dump-config"]).unwrap();
        assert_eq!(arguments.config_test, Some(cli::ConfigTest::Stderr));
        assert!(arguments.log_console && arguments.dont_fork);
        assert!(arguments.not_yet_supported.is_empty());
        assert_eq!(arguments.config_id, Some("main".into()));
        assert!(arguments.all_config && arguments.dump_config);
        // -tn: the optional argument of -t swallows the rest of the group.
        assert_eq!(
            parse(&["-tn"]).unwrap().config_test,
            Some(cli::ConfigTest::File("n".into()))
        );
        assert!(parse(&["--bogus"]).is_err());
        assert!(parse(&["-q"]).is_err());
        assert!(
            parse(&["--dump"]).is_err(),
            "ambiguous: --dump-conf, --dump-config"
        );
        assert!(parse(&["-i"]).is_err());
    }

    #[test]
    fn tcp_check_connects_unless_told_half_open() {
        assert!(!parse(&[]).unwrap().tcp_check_half_open);
        assert!(
            parse(&["--tcp-check=half-open"])
                .unwrap()
                .tcp_check_half_open
        );
        assert!(
            parse(&["--tcp-check", "half-open"])
                .unwrap()
                .tcp_check_half_open
        );
        assert!(!parse(&["--tcp-check=connect"]).unwrap().tcp_check_half_open);
        // Abbreviated, as every long option.
        assert!(parse(&["--tcp=half-open"]).unwrap().tcp_check_half_open);
        assert!(parse(&["--tcp-check=syn"]).is_err());
        assert!(parse(&["--tcp-check"]).is_err());
    }

    #[test]
    fn summary_counts() {
        assert_eq!(summary(0, 0), "0 errors, 0 warnings");
        assert_eq!(summary(1, 2), "1 error, 2 warnings");
    }

    #[test]
    fn exit_statuses() {
        let directory = std::env::temp_dir().join(format!("pulse-exit-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let clean = directory.join("clean.conf");
        std::fs::write(&clean, "").unwrap();
        let warning = directory.join("warning.conf");
        std::fs::write(&warning, "include nothing-here.conf\n").unwrap();
        let error = directory.join("error.conf");
        std::fs::write(&error, "x \"unterminated\n").unwrap();
        let status = |file: &std::path::Path| {
            let mut out = Vec::new();
            let mut err = Vec::new();
            let arguments = ["-t", "-f", file.to_str().unwrap()].map(OsString::from);
            run(arguments, &mut out, &mut err).unwrap()
        };
        assert_eq!(status(&clean), exit::CLEAN);
        assert_eq!(status(&warning), exit::WARNINGS);
        assert_eq!(status(&error), exit::ERRORS);
        assert_eq!(status(&directory.join("absent.conf")), exit::ERRORS);
        let mut out = Vec::new();
        let mut err = Vec::new();
        assert_eq!(
            run([OsString::from("--nope")], &mut out, &mut err).unwrap(),
            exit::USAGE
        );
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
