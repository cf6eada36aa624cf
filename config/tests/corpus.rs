//! Conformance with keepalived 2.2.7 on real configurations.
//!
//! `../shared/corpus/keepalived/` (next to the repository; or
//! `$FULCRUM_KEEPALIVED_CORPUS`) holds 930 configs and keepalived's verdict
//! on each (see its README); Debian's keepalived package ships more samples
//! in /usr/share/doc/keepalived/samples. Each is loaded on a thread of its
//! own with a one-second deadline.
//!
//! Asserted: no file panics or takes over a second; every file keepalived
//! accepts cleanly (exit status 0) loads without errors. Printed: how many
//! of the lines keepalived objects to for a reason in the file itself
//! (unknown keyword, invalid number, unexpected brace...) pulse reports too.
//! `FULCRUM_CORPUS_VERBOSE=1` lists every disagreement.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use fulcrum_config::diagnostic::Severity;
use fulcrum_config::lexer::Options;
use fulcrum_config::{Loaded, load};

/// The most processor time one file may take.
const DEADLINE: Duration = Duration::from_secs(1);

/// Wall-clock time after which a file is taken to hang. Generous: the
/// machines tests run on are shared, so wall-clock time says little about
/// the parser; [`DEADLINE`] is checked against the loading thread's own
/// processor time.
const HANG: Duration = Duration::from_secs(20);

/// Processor time used by the calling thread.
fn thread_time() -> Duration {
    let mut time = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) };
    Duration::new(time.tv_sec as u64, time.tv_nsec as u32)
}

#[derive(serde::Deserialize)]
struct Verdict {
    file: String,
    keepalived_rc: Option<i32>,
    messages: Vec<String>,
}

fn corpus_directory() -> Option<PathBuf> {
    let directory = match std::env::var_os("FULCRUM_KEEPALIVED_CORPUS") {
        Some(directory) => PathBuf::from(directory),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/keepalived"),
    };
    directory
        .join("verdicts.jsonl")
        .is_file()
        .then_some(directory)
}

fn verbose() -> bool {
    std::env::var_os("FULCRUM_CORPUS_VERBOSE").is_some_and(|value| value != "0")
}

enum Outcome {
    Loaded(Box<Loaded>, Duration),
    Panicked(String),
    TimedOut,
}

/// keepalived's verdicts were made on a host whose name is none of the
/// config ids the files test for (`low`, `high`, `main`...).
fn options() -> Options {
    Options {
        config_id: Some("corpus".into()),
        all_config: false,
        random_seed: Some(1),
    }
}

/// Loads `path` on its own thread: a panic or a hang is an outcome, not the
/// end of the test. (A thread that hangs is left behind.)
fn load_guarded(path: &Path) -> Outcome {
    let (sender, receiver) = mpsc::channel();
    let owned = path.to_path_buf();
    let options = options();
    std::thread::spawn(move || {
        let started = thread_time();
        let result = std::panic::catch_unwind(|| load(&owned, &options));
        let _ = sender.send(result.map(|loaded| (loaded, thread_time() - started)));
    });
    match receiver.recv_timeout(HANG) {
        Ok(Ok((loaded, elapsed))) => {
            if elapsed > DEADLINE {
                Outcome::TimedOut
            } else {
                Outcome::Loaded(Box::new(loaded), elapsed)
            }
        }
        Ok(Err(panic)) => Outcome::Panicked(
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|text| text.to_string()))
                .unwrap_or_default(),
        ),
        Err(_) => Outcome::TimedOut,
    }
}

/// keepalived messages that judge the file itself, not the machine it ran
/// on (missing interfaces, users, scripts, tracked files...).
fn is_about_the_file(message: &str) -> bool {
    const PATTERNS: &[&str] = &[
        "Unknown keyword",
        "Unexpected '{'",
        "Unexpected '}'",
        "Missing '{'",
        "Extra '}'",
        "invalid number",
        "negative number",
        "outside range",
        "outside integer range",
        "outside unsigned",
        "too many decimal places",
        "Unterminated quote",
        "Unmatched quote",
        "Invalid ~SEQ",
        "Invalid ~LST",
        "~SEQ",
        "~LST",
        "missing a parameter",
        "has extra parameters",
    ];
    PATTERNS.iter().any(|pattern| message.contains(pattern))
}

/// `(FILE: Line N) message` or `(Line N) message` (the main file).
fn located(message: &str) -> Option<(Option<String>, u32, String)> {
    let rest = message.strip_prefix('(')?;
    let (location, text) = rest.split_once(") ")?;
    let (file, line) = match location.split_once(": Line ") {
        Some((file, line)) => (Some(file.to_string()), line),
        None => (None, location.strip_prefix("Line ")?),
    };
    Some((file, line.parse().ok()?, text.to_string()))
}

#[derive(Default)]
struct Figures {
    files: usize,
    panicked: Vec<(String, String)>,
    timed_out: Vec<String>,
    slowest: (Duration, String),
    clean_files: usize,
    clean_with_errors: Vec<(String, String)>,
    objections: usize,
    objections_reported: usize,
    objections_as_error: usize,
    /// Objections to lines inside a run pulse reports once (a block skipped,
    /// read as the block of a keyword missing its `{`, or lines keepalived
    /// ignores after a stray `{`): keepalived's cascade, which pulse reports
    /// at its cause instead.
    objections_in_reported_block: usize,
    disagreements: Vec<String>,
    files_with_objections: usize,
    files_fully_agreeing: usize,
}

fn check_file(
    figures: &mut Figures,
    name: &str,
    path: &Path,
    clean: bool,
    objections: &BTreeSet<(Option<String>, u32, String)>,
) {
    figures.files += 1;
    let loaded = match load_guarded(path) {
        Outcome::Loaded(loaded, elapsed) => {
            if elapsed > figures.slowest.0 {
                figures.slowest = (elapsed, name.to_string());
            }
            loaded
        }
        Outcome::Panicked(message) => {
            figures.panicked.push((name.to_string(), message));
            return;
        }
        Outcome::TimedOut => {
            figures.timed_out.push(name.to_string());
            return;
        }
    };
    // keepalived's child processes enter the network namespace first; when
    // it does not exist they check nothing and say nothing, so a clean
    // verdict only covers the global settings (verified).
    let clean = clean && !uses_net_namespace(path);
    if clean {
        figures.clean_files += 1;
        if loaded.diagnostics.has_errors() {
            let errors: Vec<String> = loaded
                .diagnostics
                .items
                .iter()
                .filter(|item| item.severity == Severity::Error)
                .map(|item| {
                    format!(
                        "{}:{}: {}",
                        loaded.sources.file(item.span.file).name,
                        item.span.line,
                        item.message
                    )
                })
                .collect();
            figures
                .clean_with_errors
                .push((name.to_string(), errors.join("\n    ")));
        }
    }
    if objections.is_empty() {
        return;
    }
    figures.files_with_objections += 1;
    // Lines pulse reports, by file name and line.
    let reported: BTreeMap<(String, u32), Severity> = loaded
        .diagnostics
        .items
        .iter()
        .filter(|item| item.severity >= Severity::Warning)
        .map(|item| {
            (
                (
                    loaded.sources.file(item.span.file).name.clone(),
                    item.span.line,
                ),
                item.severity,
            )
        })
        .fold(BTreeMap::new(), |mut map, (key, severity)| {
            let entry = map.entry(key).or_insert(severity);
            *entry = (*entry).max(severity);
            map
        });
    // The blocks pulse reports once, by file name and lines.
    let reported_blocks: Vec<(String, u32, u32)> = loaded
        .diagnostics
        .items
        .iter()
        .flat_map(|item| item.notes.iter().map(move |note| (item, note)))
        .filter_map(|(item, (span, note))| {
            let (first, last) = fulcrum_config::grammar::tree::noted_lines(note)?;
            let file = span.unwrap_or(item.span).file;
            Some((loaded.sources.file(file).name.clone(), first, last))
        })
        .collect();
    let main_name = path.to_string_lossy().into_owned();
    let mut all_agree = true;
    for (file, line, message) in objections {
        figures.objections += 1;
        let wanted = match file {
            Some(file) => file.trim_start_matches("./").to_string(),
            None => main_name.clone(),
        };
        // The file keepalived names, as pulse names it.
        let is_wanted = |name: &str| name == wanted || name.ends_with(&format!("/{wanted}"));
        let found = reported
            .iter()
            .find(|((name, reported_line), _)| *reported_line == *line && is_wanted(name));
        match found {
            Some((_, severity)) => {
                figures.objections_reported += 1;
                if *severity == Severity::Error {
                    figures.objections_as_error += 1;
                }
            }
            None if reported_blocks
                .iter()
                .any(|(name, first, last)| (first..=last).contains(&line) && is_wanted(name)) =>
            {
                figures.objections_in_reported_block += 1;
            }
            None => {
                all_agree = false;
                figures.disagreements.push(format!(
                    "{name}: keepalived at {}line {line}: {message}",
                    file.as_ref()
                        .map(|file| format!("{file} "))
                        .unwrap_or_default()
                ));
            }
        }
    }
    if all_agree {
        figures.files_fully_agreeing += 1;
    }
}

/// Whether the configuration, as read (after conditionals), sets
/// `net_namespace`.
fn uses_net_namespace(path: &Path) -> bool {
    let mut sources = fulcrum_config::syntax::Sources::default();
    let mut diagnostics = fulcrum_config::diagnostic::Diagnostics::default();
    fulcrum_config::lexer::read_file(path, &options(), &mut sources, &mut diagnostics)
        .iter()
        .any(|line| line.words[0].text == "net_namespace")
}

fn report(title: &str, figures: &Figures) {
    println!("{title}:");
    println!("  files loaded: {}", figures.files);
    println!(
        "  panics: {}, over {} s of processor time (or hanging): {}, slowest: {:?} ({})",
        figures.panicked.len(),
        DEADLINE.as_secs(),
        figures.timed_out.len(),
        figures.slowest.0,
        figures.slowest.1
    );
    println!(
        "  accepted cleanly by keepalived (exit 0, no objection, no net_namespace): {}, loaded without errors: {}",
        figures.clean_files,
        figures.clean_files - figures.clean_with_errors.len()
    );
    println!(
        "  lines keepalived objects to for a reason in the file: {} in {} files; pulse reports {} of them on the line ({} as errors) and {} inside a block it reports once (keepalived's cascade); not reported: {}; files where every such line is reported: {}",
        figures.objections,
        figures.files_with_objections,
        figures.objections_reported,
        figures.objections_as_error,
        figures.objections_in_reported_block,
        figures.disagreements.len(),
        figures.files_fully_agreeing
    );
    for (name, message) in &figures.panicked {
        println!("  PANIC {name}: {message}");
    }
    for name in &figures.timed_out {
        println!("  TOO SLOW {name}");
    }
    for (name, errors) in &figures.clean_with_errors {
        println!("  CLEAN IN KEEPALIVED, ERRORS HERE {name}:\n    {errors}");
    }
    if verbose() {
        for disagreement in &figures.disagreements {
            println!("  not reported: {disagreement}");
        }
    } else if !figures.disagreements.is_empty() {
        println!("  (FULCRUM_CORPUS_VERBOSE=1 lists the lines not reported)");
    }
}

fn assert_sound(figures: &Figures) {
    assert!(
        figures.panicked.is_empty(),
        "panics: {:?}",
        figures.panicked
    );
    assert!(
        figures.timed_out.is_empty(),
        "too slow: {:?}",
        figures.timed_out
    );
    assert!(
        figures.clean_with_errors.is_empty(),
        "{} files keepalived accepts cleanly have errors here (listed above)",
        figures.clean_with_errors.len()
    );
}

#[test]
fn keepalived_corpus() {
    let Some(directory) = corpus_directory() else {
        println!(
            "skipped: no keepalived corpus at ../shared/corpus/keepalived (set FULCRUM_KEEPALIVED_CORPUS)"
        );
        return;
    };
    let verdicts = std::fs::read_to_string(directory.join("verdicts.jsonl")).unwrap();
    let configs = directory.join("configs");
    let mut figures = Figures::default();
    for line in verdicts.lines().filter(|line| !line.trim().is_empty()) {
        let verdict: Verdict = serde_json::from_str(line).unwrap();
        let objections: BTreeSet<(Option<String>, u32, String)> = verdict
            .messages
            .iter()
            .filter_map(|message| located(message))
            .filter(|(_, _, text)| is_about_the_file(text))
            .map(|(file, line, text)| {
                // keepalived's child processes name the main file even when
                // the parent does not: one file, one objection.
                let file = file.filter(|file| *file != verdict.file);
                (file, line, text)
            })
            .collect();
        // Clean: exit status 0 and no objection. (keepalived 2.2.7 exits 0
        // from -t on some files it reports unknown keywords in; None: it
        // did not finish; negative: it was killed.)
        let clean = verdict.keepalived_rc == Some(0) && objections.is_empty();
        check_file(
            &mut figures,
            &verdict.file,
            &configs.join(&verdict.file),
            clean,
            &objections,
        );
    }
    report("keepalived corpus", &figures);
    assert_sound(&figures);
}

/// Debian's samples keepalived 2.2.7 accepts with exit status 0 (checked
/// with `keepalived -t -f FILE -l -n` on Debian 12).
const CLEAN_SAMPLES: &[&str] = &[
    "keepalived.conf.HTTP_GET.port",
    "keepalived.conf.IPv6",
    "keepalived.conf.PING_CHECK",
    "keepalived.conf.SMTP_CHECK",
    "keepalived.conf.UDP_CHECK",
    "keepalived.conf.inhibit",
    "keepalived.conf.misc_check",
    "keepalived.conf.misc_check_arg",
    "keepalived.conf.quorum",
    "keepalived.conf.sample",
    "keepalived.conf.status_code",
    "keepalived.conf.virtual_server_group",
    "keepalived.conf.virtualhost",
    "keepalived.conf.vrrp.scripts",
];

#[test]
fn debian_samples() {
    let directory = Path::new("/usr/share/doc/keepalived/samples");
    let Ok(entries) = std::fs::read_dir(directory) else {
        println!("skipped: no {}", directory.display());
        return;
    };
    let mut names: Vec<String> = entries
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.starts_with("keepalived.conf"))
        .collect();
    names.sort();
    let mut figures = Figures::default();
    for name in &names {
        let clean = CLEAN_SAMPLES.contains(&name.as_str());
        check_file(
            &mut figures,
            name,
            &directory.join(name),
            clean,
            &BTreeSet::new(),
        );
    }
    report("Debian keepalived samples", &figures);
    assert_sound(&figures);
}

#[test]
fn message_locations() {
    assert_eq!(
        located("(Line 14) Unknown keyword 'vrrp_defs'"),
        Some((None, 14, "Unknown keyword 'vrrp_defs'".into()))
    );
    assert_eq!(
        located("(1.conf: Line 3) Unexpected '{' - ignoring"),
        Some((Some("1.conf".into()), 3, "Unexpected '{' - ignoring".into()))
    );
    assert_eq!(located("(VI_1) No VIP specified"), None);
    assert!(is_about_the_file("invalid number 'x'"));
    assert!(!is_about_the_file(
        "WARNING - interface eth1 for vrrp_instance VI_1 doesn't exist"
    ));
}
