//! `include`, `includer`, `includem`, `includew`, `includeb`, `includea`:
//! keepalived's include stack, glob matching and include checks.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use super::file_text::FileText;
use super::glob::{self, Match};
use super::text::{Text, covering, is_blank, is_white_space};
use super::{INCLUDE_DEPTH_LIMIT, Lexer};
use crate::diagnostic::{Diagnostic, Severity};
use crate::syntax::{FileId, SourceFile, Span, Word};

/// `include_check` bits (keepalived's `include_t`).
/// An unreadable file, a directory, not a regular non-executable file.
pub(crate) const READABLE: u8 = 0x01;
/// A pattern without wildcards that matches nothing.
pub(crate) const MATCH: u8 = 0x02;
/// A pattern with wildcards that matches nothing.
pub(crate) const WILDCARD_MATCH: u8 = 0x04;
/// A brace alternative that matches nothing.
pub(crate) const BRACE_MATCH: u8 = 0x08;
pub(crate) const ALL: u8 = READABLE | MATCH | WILDCARD_MATCH | BRACE_MATCH;

/// One `include` (or the main file): its matches, read one after another.
pub(crate) struct IncludeFrame {
    pub include_type: u8,
    /// keepalived restores `include_check` after each file of the include.
    pub saved_include_check: u8,
    pub matches: VecDeque<Match>,
    /// Where the matches' relative paths are relative to.
    pub base: PathBuf,
    pub file: Option<OpenFile>,
    pub included_from: Option<Span>,
    pub pattern: String,
}

pub(crate) struct OpenFile {
    pub id: FileId,
    /// The bytes not read yet, a block at a time.
    pub text: FileText,
    pub line_number: u32,
    /// The file's directory: relative includes and `${_PWD}` start here.
    pub directory: PathBuf,
    pub canonical: Option<PathBuf>,
}

fn join_display(base: &Path, path: &str) -> String {
    if path.starts_with('/') || base.as_os_str().is_empty() || base == Path::new(".") {
        path.to_string()
    } else {
        base.join(path).to_string_lossy().into_owned()
    }
}

impl Lexer<'_> {
    /// keepalived's `is_include` + `check_include`: `include` followed by
    /// white space, or `include` + one of `rmwba` + white space; the rest of
    /// the line (after blanks) is the pattern, spaces and all.
    pub(super) fn check_include(&mut self, buffer: &Text) -> bool {
        let byte = |index: usize| buffer.get(index).map_or(0, |cell| cell.byte);
        if !super::text::starts_with(buffer, b"include") || byte(7) == 0 {
            return false;
        }
        let (include_type, pattern_start) = if is_white_space(byte(7)) {
            (0, 8)
        } else if is_white_space(byte(8)) && b"rmwba".contains(&byte(7)) {
            let include_type = match byte(7) {
                b'r' => READABLE,
                b'm' => READABLE | MATCH,
                b'w' => READABLE | MATCH | WILDCARD_MATCH,
                b'b' => READABLE | BRACE_MATCH,
                _ => ALL,
            };
            (include_type, 9)
        } else {
            return false;
        };
        let mut start = pattern_start.min(buffer.len());
        while start < buffer.len() && matches!(buffer[start].byte, b' ' | b'\t') {
            start += 1;
        }
        let pattern = super::text::to_string(&buffer[start..]);
        let span = covering(&buffer[start.min(buffer.len().saturating_sub(1))..])
            .or_else(|| covering(buffer))
            .unwrap_or(buffer[0].span);
        self.open_glob(&pattern, include_type, Some(span));
        true
    }

    /// The main configuration file (keepalived: `open_glob_file(conf_file,
    /// INCLUDE_R | INCLUDE_M | INCLUDE_W)`).
    pub(super) fn open_main(&mut self, pattern: &str) -> bool {
        let result = glob::glob(pattern, Path::new("."));
        let files = result
            .matches
            .iter()
            .filter(|found| !found.is_directory)
            .count();
        if files > 1 {
            let span = self.file_span(pattern);
            self.diagnostics.push(Diagnostic::warning(
                span,
                format!("{files} files match the configuration file pattern; keepalived reads them all, in order"),
            ));
        }
        let depth = self.stack.len();
        self.open_glob(pattern, READABLE | MATCH | WILDCARD_MATCH, None);
        if self.stack.len() == depth {
            if !self.diagnostics.has_errors() {
                let span = self.file_span(pattern);
                self.diagnostics.push(Diagnostic::error(
                    span,
                    "cannot open the configuration file",
                ));
            }
            return false;
        }
        true
    }

    /// In-memory text as the main file, its first line numbered
    /// `first_line` (a block read again by itself keeps its lines' numbers).
    pub(super) fn open_text(&mut self, name: &str, bytes: Vec<u8>, first_line: u32) {
        let id = self.sources.add(SourceFile::in_memory(
            name.to_string(),
            String::from_utf8_lossy(&bytes).into_owned(),
            None,
        ));
        self.open_part_of(id, FileText::in_memory(bytes), first_line);
    }

    /// `bytes` as the main file: the lines from `first_line` on of the
    /// file `id` of the sources (a part of a file read on several threads).
    pub(super) fn open_part_of(&mut self, id: FileId, text: FileText, first_line: u32) {
        let name = self.sources.file(id).name.clone();
        self.stack.push(IncludeFrame {
            include_type: 0,
            saved_include_check: self.include_check,
            matches: VecDeque::new(),
            base: self.base_directory.clone(),
            file: Some(OpenFile {
                id,
                text,
                line_number: first_line.saturating_sub(1),
                directory: self.base_directory.clone(),
                canonical: None,
            }),
            included_from: None,
            pattern: name,
        });
    }

    /// keepalived's `file_config_error`: an error when the include's checks
    /// (or `include_check`) cover this kind of problem, else a warning
    /// (keepalived prints it and carries on with exit status 0).
    fn include_problem(
        &mut self,
        include_type: u8,
        kind: u8,
        span: Option<Span>,
        name: &str,
        message: String,
    ) {
        let severity = if (self.include_check | include_type) & kind != 0 {
            Severity::Error
        } else {
            Severity::Warning
        };
        let span = match span {
            Some(span) => span,
            None => self.file_span(name),
        };
        let diagnostic = match severity {
            Severity::Error => Diagnostic::error(span, message),
            _ => Diagnostic::warning(span, message),
        };
        self.diagnostics.push(diagnostic);
    }

    /// keepalived's `open_glob_file`.
    fn open_glob(&mut self, pattern: &str, include_type: u8, included_from: Option<Span>) {
        if self.stack.len() >= INCLUDE_DEPTH_LIMIT {
            let span = included_from.unwrap_or(Span {
                file: FileId(0),
                line: 0,
                start: 0,
                end: 0,
            });
            self.diagnostics.push(Diagnostic::error(
                span,
                format!("includes nested more than {INCLUDE_DEPTH_LIMIT} deep (an include loop?); not reading '{pattern}'"),
            ));
            return;
        }
        let base = self.current_directory();
        let result = glob::glob(pattern, &base);
        let checks = self.include_check | include_type;
        if result.matches.is_empty() {
            if result.missing_files > 0 || result.missing_directories > 0 {
                let kind = if glob::has_brace(pattern) {
                    BRACE_MATCH
                } else {
                    MATCH
                };
                self.include_problem(
                    include_type,
                    kind,
                    included_from,
                    pattern,
                    format!("no such file: '{}'", join_display(&base, pattern)),
                );
            } else {
                let kind = if result.have_wildcards && checks & WILDCARD_MATCH != 0 {
                    WILDCARD_MATCH
                } else {
                    0
                };
                // keepalived says nothing here unless wildcard_match is
                // checked; an include that reads nothing still deserves a
                // warning.
                self.include_problem(
                    include_type,
                    kind,
                    included_from,
                    pattern,
                    format!("no file matches '{}'", join_display(&base, pattern)),
                );
            }
            return;
        }
        if result.missing_files > 0 || result.missing_directories > 0 {
            self.include_problem(
                include_type,
                BRACE_MATCH,
                included_from,
                pattern,
                format!(
                    "some of the files named by '{}' do not exist",
                    join_display(&base, pattern)
                ),
            );
            if checks & BRACE_MATCH != 0 {
                return;
            }
        }
        self.stack.push(IncludeFrame {
            include_type,
            saved_include_check: self.include_check,
            matches: result.matches.into(),
            base,
            file: None,
            included_from,
            pattern: pattern.to_string(),
        });
        if !self.open_next_match() {
            self.stack.pop();
        }
    }

    /// keepalived's `open_conf_file`: the next readable match of the
    /// innermost include.
    fn open_next_match(&mut self) -> bool {
        loop {
            let Some(frame) = self.stack.last_mut() else {
                return false;
            };
            let Some(found) = frame.matches.pop_front() else {
                return false;
            };
            let include_type = frame.include_type;
            let included_from = frame.included_from;
            let base = frame.base.clone();
            let pattern = frame.pattern.clone();
            let name = join_display(&base, &found.path);
            if found.is_directory {
                self.include_problem(
                    include_type,
                    READABLE,
                    included_from,
                    &pattern,
                    format!("'{name}' is a directory; skipped"),
                );
                continue;
            }
            let path = PathBuf::from(&name);
            let regular = std::fs::metadata(&path).map(|metadata| {
                use std::os::unix::fs::PermissionsExt;
                metadata.is_file() && metadata.permissions().mode() & 0o111 == 0
            });
            if !matches!(regular, Ok(true)) {
                self.include_problem(
                    include_type,
                    READABLE,
                    included_from,
                    &pattern,
                    format!("'{name}' is not a regular non-executable file; skipped"),
                );
                continue;
            }
            // Opened here and read a block at a time as its lines are lexed
            // (`FileText`); its metadata now tells, when a diagnostic
            // shows one of its lines, whether it has changed since.
            let opened = std::fs::File::open(&path)
                .and_then(|file| file.metadata().map(|metadata| (file, metadata)));
            let (file, metadata) = match opened {
                Ok(opened) => opened,
                Err(error) => {
                    self.include_problem(
                        include_type,
                        READABLE,
                        included_from,
                        &pattern,
                        format!("cannot read '{name}': {error}; skipped"),
                    );
                    continue;
                }
            };
            let canonical = std::fs::canonicalize(&path).ok();
            let looping = canonical.is_some()
                && self.stack.iter().any(|frame| {
                    frame
                        .file
                        .as_ref()
                        .is_some_and(|file| file.canonical == canonical)
                });
            if looping {
                let span = included_from.unwrap_or(Span {
                    file: FileId(0),
                    line: 0,
                    start: 0,
                    end: 0,
                });
                self.diagnostics.push(Diagnostic::error(
                    span,
                    format!("'{name}' includes itself (keepalived would recurse until it runs out of files); skipped"),
                ));
                continue;
            }
            // keepalived chdir()s into the directory of a path with a '/'.
            let directory = if found.path.contains('/') {
                Path::new(&name)
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_default()
            } else {
                base
            };
            let id = self
                .sources
                .add(SourceFile::on_disk(name, path, &metadata, included_from));
            if let Some(frame) = self.stack.last_mut() {
                frame.file = Some(OpenFile {
                    id,
                    text: FileText::streamed(file, self.block),
                    line_number: 0,
                    directory,
                    canonical,
                });
            }
            return true;
        }
    }

    /// The next non-blank line of the files on the include stack, comments
    /// removed; `None` when all are read.
    pub(super) fn next_file_line(&mut self) -> Option<super::FileLine> {
        loop {
            let frame = self.stack.last_mut()?;
            let Some(file) = frame.file.as_mut() else {
                self.stack.pop();
                continue;
            };
            let raw = file.text.take_line();
            if raw.is_empty() {
                if let Some(error) = file.text.error.take() {
                    let span = Span {
                        file: file.id,
                        line: file.line_number + 1,
                        start: 1,
                        end: 1,
                    };
                    let name = self.sources.file(file.id).name.clone();
                    self.diagnostics.push(Diagnostic::error(
                        span,
                        format!("cannot read '{name}' beyond this point: {error}"),
                    ));
                }
                // keepalived's end_file: the include check in force when
                // this include was read comes back.
                self.include_check = frame.saved_include_check;
                frame.file = None;
                if !self.open_next_match() {
                    self.stack.pop();
                }
                continue;
            }
            file.line_number += 1;
            let line_number = file.line_number;
            let id = file.id;
            let mut length = raw.len();
            while length > 0 && matches!(raw[length - 1], b'\r' | b'\n') {
                length -= 1;
            }
            // keepalived reads lines with fgets() and strlen(): a NUL byte
            // ends the line. A plain line has none (`plain_line` says so
            // while it reads the line), so the line is only searched for
            // one when it is not plain.
            let mut tried_plain = false;
            loop {
                let raw = &raw[..length];
                if self.defining.is_none() && !raw.is_empty() && raw.len() < super::LINE_BUFFER - 1
                {
                    if let Some((line, span)) = super::plain_line(
                        raw,
                        id,
                        line_number,
                        &mut self.words,
                        &mut self.spare_words,
                    ) {
                        return Some(super::FileLine::Plain(line, span));
                    }
                }
                if tried_plain {
                    break;
                }
                tried_plain = true;
                match memchr::memchr(0, raw) {
                    // What is before the NUL may be plain.
                    Some(nul) => length = nul,
                    None => break,
                }
            }
            let raw = raw[..length].to_vec();
            if raw.len() >= super::LINE_BUFFER - 1 {
                self.diagnostics.push(Diagnostic::warning(
                    Span {
                        file: id,
                        line: line_number,
                        start: super::LINE_BUFFER as u32 - 1,
                        end: raw.len() as u32 + 1,
                    },
                    format!(
                        "line longer than keepalived's {} bytes: keepalived would read the rest as a separate line",
                        super::LINE_BUFFER - 2
                    ),
                ));
            }
            if raw.is_empty() {
                // A blank line ends a multi-line definition.
                if let Some(index) = self.defining.take() {
                    self.end_definition(index);
                }
                continue;
            }
            let mut buffer: Text = raw
                .iter()
                .enumerate()
                .map(|(offset, &byte)| super::text::Cell {
                    byte,
                    span: Span {
                        file: id,
                        line: line_number,
                        start: offset as u32 + 1,
                        end: offset as u32 + 2,
                    },
                })
                .collect();
            if !raw
                .iter()
                .any(|byte| matches!(byte, b'#' | b'!' | b'\\' | b'"'))
            {
                // Nothing for decomment() but blanks at either end (the
                // common line, taken without copying it twice).
                let leading = buffer.iter().take_while(|cell| is_blank(cell.byte)).count();
                buffer.drain(..leading);
                super::text::trim_blank_end(&mut buffer);
                if buffer.is_empty() {
                    if let Some(index) = self.defining.take() {
                        self.diagnostics.push(Diagnostic::warning(
                            Span {
                                file: id,
                                line: line_number,
                                start: 1,
                                end: raw.len() as u32 + 1,
                            },
                            COMMENT_ENDS_DEFINITION,
                        ));
                        self.end_definition(index);
                    }
                    continue;
                }
                return Some(super::FileLine::Text(buffer));
            }
            let found = super::comment::decomment(&mut buffer);
            self.report_unterminated_quote(found.unterminated_quote);
            // keepalived 2.2.7's parent process reads the files and writes
            // each line, comments removed, to a copy; its VRRP and checker
            // processes, which parse everything but global_defs, read that
            // copy and remove comments again. So for them `\#` and `\!`
            // are a `#` or `!` that starts a comment (verified: `bogus_\#two`
            // in a vrrp_instance reads `bogus_`), and that is what pulse
            // reproduces.
            let once = buffer.clone();
            super::comment::decomment(&mut buffer);
            if buffer != once {
                let span = super::text::covering(&once[buffer.len()..]).unwrap_or(once[0].span);
                self.diagnostics.push(Diagnostic::warning(
                    span,
                    "keepalived 2.2.7 removes comments twice outside global_defs, so the '#' or '!' escaped here starts a comment; removed",
                ));
            }
            if buffer.is_empty() {
                // In that copy a comment-only line is a blank line, and a
                // blank line ends a multi-line definition (verified).
                if let Some(index) = self.defining.take() {
                    self.diagnostics.push(Diagnostic::warning(
                        Span {
                            file: id,
                            line: line_number,
                            start: 1,
                            end: raw.len() as u32 + 1,
                        },
                        COMMENT_ENDS_DEFINITION,
                    ));
                    self.end_definition(index);
                }
                continue;
            }
            return Some(super::FileLine::Text(buffer));
        }
    }

    /// keepalived's `include_check_set` (global_defs `include_check`).
    pub(super) fn set_include_check(&mut self, words: &[Word]) {
        if words.is_empty() {
            self.include_check = ALL;
            return;
        }
        for (index, word) in words.iter().enumerate() {
            let (mode, name) = match word.text.as_bytes().first() {
                Some(b'-') => (-1, &word.text[1..]),
                Some(b'+') => (1, &word.text[1..]),
                _ => {
                    if index != 0 {
                        // keepalived: "Duplicate include_check" - ignored.
                        continue;
                    }
                    self.include_check = 0;
                    (0, word.text.as_str())
                }
            };
            let flag = match name {
                "read" => READABLE,
                "match" => MATCH,
                "wildcard_match" => WILDCARD_MATCH,
                "brace_match" => BRACE_MATCH,
                _ => 0,
            };
            if flag != 0 {
                match mode {
                    0 => self.include_check = READABLE | flag,
                    1 => self.include_check |= flag,
                    _ => self.include_check &= !flag,
                }
            }
        }
    }
}

/// A line that is blank once comments are removed ends a multi-line
/// definition.
const COMMENT_ENDS_DEFINITION: &str = "this comment ends the multi-line definition: keepalived 2.2.7's VRRP and checker processes see it as a blank line";
