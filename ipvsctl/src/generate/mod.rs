//! The man page and the shell completions, generated from the definitions
//! the parser itself runs on: [`OPTIONS`] (names, values, help), the
//! commands×options matrix ([`Command::matrix_row`], [`TUNNEL_MATRIX`]) and
//! the value tables of [`crate::cli`]. An option added to the table is
//! documented and completed without further work.
//!
//! `cargo xtask generate` writes [`files`] under `ipvsctl/doc/`, where they
//! are committed; `tests/generated.rs` fails when a committed file differs
//! from what [`files`] produces, so they cannot go stale.
//!
//! `-h` is not generated: it must stay byte-identical to ipvsadm's, so it
//! is a verbatim template ([`crate::cli::help_text`]), checked against the
//! table by the parser's unit tests.

mod completions;
mod man;

use std::io;
use std::path::Path;

use crate::cli::{
    self, Arg, Column, Command, DAEMON_STATES, ErrorKind, Key, OPTIONS, PERSISTENCE_ENGINES,
    SCHED_FLAGS, SCHEDULERS, TUNNEL_MATRIX,
};

/// Where the generated files live, relative to the `ipvsctl` crate.
pub const DIRECTORY: &str = "doc";

/// One generated file: its name in [`DIRECTORY`] and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    pub name: &'static str,
    pub contents: String,
}

/// Every generated file: the man page, then bash, zsh and fish completions.
pub fn files() -> Vec<GeneratedFile> {
    vec![
        GeneratedFile {
            name: "ipvsctl.8",
            contents: man::page(),
        },
        GeneratedFile {
            name: "ipvsctl.bash",
            contents: completions::bash(),
        },
        GeneratedFile {
            name: "_ipvsctl",
            contents: completions::zsh(),
        },
        GeneratedFile {
            name: "ipvsctl.fish",
            contents: completions::fish(),
        },
    ]
}

/// Writes [`files`] into `directory` (created if missing) and returns the
/// names of those whose contents changed.
pub fn write_all(directory: &Path) -> io::Result<Vec<&'static str>> {
    std::fs::create_dir_all(directory)?;
    let mut changed = Vec::new();
    for file in files() {
        let path = directory.join(file.name);
        if std::fs::read(&path).ok().as_deref() != Some(file.contents.as_bytes()) {
            std::fs::write(&path, &file.contents)?;
            changed.push(file.name);
        }
    }
    Ok(changed)
}

/// One option as a user sees it: every entry of [`OPTIONS`] with the same
/// [`Key`] (`-L`, `-l` and `--list` are one switch).
#[derive(Debug, Clone)]
struct Switch {
    key: Key,
    shorts: Vec<char>,
    longs: Vec<&'static str>,
    arg: Arg,
    value_name: &'static str,
    /// The first non-empty help text of its entries.
    help: &'static str,
    extension: bool,
}

impl Switch {
    /// Whether it must be the first option: a command, `-h` or `-v`.
    fn is_command(&self) -> bool {
        matches!(self.key, Key::Command(_) | Key::Help | Key::Version)
    }

    fn column(&self) -> Option<Column> {
        self.key.column()
    }

    /// Every spelling, short ones first: `-L`, `-l`, `--list`.
    fn words(&self) -> Vec<String> {
        let shorts = self.shorts.iter().map(|short| format!("-{short}"));
        let longs = self.longs.iter().map(|long| format!("--{long}"));
        shorts.chain(longs).collect()
    }

    /// The spelling used to refer to it in prose: the short one if any,
    /// as ipvsadm's own documentation does.
    fn name(&self) -> String {
        self.words().swap_remove(0)
    }

    /// The spelling a probe of the parser uses: the long one if any, so
    /// that `=value` can carry the value.
    fn probe_word(&self) -> String {
        match self.longs.first() {
            Some(long) => format!("--{long}"),
            None => format!("-{}", self.shorts[0]),
        }
    }

    fn values(&self) -> Values {
        if self.arg == Arg::None {
            return Values::None;
        }
        match self.key {
            Key::Scheduler => Values::OneOf(SCHEDULERS.to_vec()),
            Key::Command(Command::StartDaemon | Command::StopDaemon) => {
                Values::OneOf(DAEMON_STATES.iter().map(|(name, _)| (*name, "")).collect())
            }
            Key::TunType => {
                Values::OneOf(TUNNEL_MATRIX.iter().map(|(name, _)| (*name, "")).collect())
            }
            Key::Pe => Values::OneOf(PERSISTENCE_ENGINES.iter().map(|name| (*name, "")).collect()),
            Key::SchedFlags => {
                Values::CommaSeparated(SCHED_FLAGS.iter().map(|(name, ..)| *name).collect())
            }
            Key::McastInterface => Values::Interface,
            _ => Values::Free,
        }
    }
}

/// What a switch's value may be, for completion.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Values {
    /// It takes no value.
    None,
    /// Any text (an address, a number): nothing to suggest.
    Free,
    /// One of these words, each with what it means (possibly empty).
    OneOf(Vec<(&'static str, &'static str)>),
    /// Some of these words, separated by commas.
    CommaSeparated(Vec<&'static str>),
    /// The name of a network interface.
    Interface,
}

/// Every switch, in the order of [`OPTIONS`] (ipvsadm's popt table).
fn switches() -> Vec<Switch> {
    let mut switches: Vec<Switch> = Vec::new();
    for option in OPTIONS {
        let index = match switches.iter().position(|switch| switch.key == option.key) {
            Some(index) => index,
            None => {
                switches.push(Switch {
                    key: option.key,
                    shorts: Vec::new(),
                    longs: Vec::new(),
                    arg: option.arg,
                    value_name: option.value_name,
                    help: option.help,
                    extension: option.extension,
                });
                switches.len() - 1
            }
        };
        let switch = &mut switches[index];
        switch.shorts.extend(option.short.map(char::from));
        if !option.long.is_empty() {
            switch.longs.push(option.long);
        }
        if switch.help.is_empty() {
            switch.help = option.help;
        }
    }
    switches
}

/// How a command takes a switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Acceptance {
    /// The parser rejects it with this command.
    Illegal,
    Optional,
    Required,
    /// Optional, but at most one of the command's `1` columns.
    OneOf,
}

/// Whether `command` takes `switch` after it. From the matrix for the
/// switches that have a column; for the others (`-6`, `--sort`, the
/// extensions), the parser itself is asked: whether its scanner knows the
/// switch after that command decides, whatever rule the scanner follows.
fn acceptance(command: Command, switch: &Switch) -> Acceptance {
    if switch.is_command() {
        // A second command, `-h` or `-v` after one is an error (§2.1).
        return Acceptance::Illegal;
    }
    if let Some(column) = switch.column() {
        return match command.matrix_row()[column.index()] {
            b'+' => Acceptance::Required,
            b'1' => Acceptance::OneOf,
            b'x' => Acceptance::Illegal,
            _ => Acceptance::Optional,
        };
    }
    if let Some(goes_with) = switch.key.goes_with() {
        return if goes_with == command {
            Acceptance::Optional
        } else {
            Acceptance::Illegal
        };
    }
    let switches = switches();
    let Some(command_switch) = switches
        .iter()
        .find(|candidate| candidate.key == Key::Command(command))
    else {
        return Acceptance::Illegal;
    };
    let mut argv: Vec<Vec<u8>> = vec![
        b"ipvsctl".to_vec(),
        command_switch.probe_word().into_bytes(),
    ];
    if command_switch.arg == Arg::Required {
        // A value the command accepts, so that the probe reaches the switch.
        let value = match command_switch.values() {
            Values::OneOf(values) => values[0].0,
            _ => "0",
        };
        argv.push(value.as_bytes().to_vec());
    }
    let word = switch.probe_word();
    argv.push(word.clone().into_bytes());
    if switch.arg == Arg::Required {
        argv.push(b"0".to_vec());
    }
    let unknown = format!("{word}: unknown option\n");
    // The matrix's refusal, or an extension's own ("Illegal 'json' option
    // with the 'clear' command: ...").
    let illegal = format!(
        "Illegal '{}' option",
        switch.longs.first().copied().unwrap_or_default()
    );
    match cli::parse_command_line(&argv, false) {
        Err(error) if error.kind == ErrorKind::Popt && error.message == unknown.as_bytes() => {
            Acceptance::Illegal
        }
        Err(error) if error.message.starts_with(illegal.as_bytes()) => Acceptance::Illegal,
        _ => Acceptance::Optional,
    }
}

/// The commands that take `switch`, each with how, in [`Command::ALL`] order.
fn accepted_by(switch: &Switch) -> Vec<(Command, Acceptance)> {
    Command::ALL
        .iter()
        .map(|command| (*command, acceptance(*command, switch)))
        .filter(|(_, acceptance)| *acceptance != Acceptance::Illegal)
        .collect()
}

/// Whether every command takes `switch` (`-6`, `--sort`).
fn accepted_by_every_command(switch: &Switch) -> bool {
    accepted_by(switch).len() == Command::ALL.len()
}

/// The switches worth offering after `command`, in table order: those it
/// takes, except `-6` where no `-f` can come before it (the parser accepts
/// it with every command, and then always fails).
fn switches_of(command: Command) -> Vec<Switch> {
    let takes_a_service = command.matrix_row()[Column::Service.index()] != b'x';
    switches()
        .into_iter()
        .filter(|switch| acceptance(command, switch) != Acceptance::Illegal)
        .filter(|switch| switch.key != Key::Ipv6 || takes_a_service)
        .collect()
}

/// The switch of a command.
fn command_switch(command: Command) -> Switch {
    switches()
        .into_iter()
        .find(|switch| switch.key == Key::Command(command))
        .expect("every command is in the table")
}

/// The commands grouped by the switches they take, in [`Command::ALL`]
/// order of each group's first command: the completions list each group's
/// switches once.
fn command_groups() -> Vec<(Vec<Command>, Vec<Switch>)> {
    let mut groups: Vec<(Vec<Command>, Vec<Switch>)> = Vec::new();
    for command in Command::ALL {
        let taken = switches_of(command);
        let keys: Vec<Key> = taken.iter().map(|switch| switch.key).collect();
        match groups.iter_mut().find(|(_, switches)| {
            switches
                .iter()
                .map(|switch| switch.key)
                .eq(keys.iter().copied())
        }) {
            Some((commands, _)) => commands.push(command),
            None => groups.push((vec![command], taken)),
        }
    }
    groups
}

#[cfg(test)]
mod tests;
