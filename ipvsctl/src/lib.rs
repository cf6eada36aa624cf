//! `ipvsctl`: a drop-in replacement for `ipvsadm`.
//!
//! Work in progress (issue 3): the command line ([`cli`]), the commands
//! ([`run`]) and the output ([`format`]) follow ipvsadm 1.31 as
//! `docs/ipvsadm.md` specifies it; `tests/lab.rs` compares the two against
//! the real kernel, case by case (`tests/differential.txt`). The man page
//! and shell completions in `doc/` come from the same option table
//! ([`generate`]).
//!
//! One addition to ipvsadm's listings: `-L --json` ([`json`]), one JSON
//! document per listing, specified in `docs/ipvsctl-json.md`.

pub mod cli;
pub mod format;
pub mod generate;
pub mod json;
pub mod run;
#[cfg(test)]
mod test_fixtures;
