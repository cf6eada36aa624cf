//! The lexical layer: files in, keepalived's lines of words out.
//!
//! This is a port of what keepalived 2.2.7's `lib/parser.c` does before a
//! keyword handler sees a line: `read_line` (files and `include`s,
//! `decomment`, `@id` conditionals, `$NAME=` definitions and their
//! substitution, `~SEQ`/`~LST` expansion, splitting at braces) and
//! `alloc_strvec` (words, `"` quoting). Its quirks are reproduced on
//! purpose, each with a comment saying so; where keepalived would hang,
//! crash or read freed memory, Fulcrum stops with a diagnostic instead.
//!
//! One deliberate difference in shape, from the [`crate::syntax`] contract:
//! keepalived splits `keyword args {` into the two lines `keyword args` and
//! `{`; here the `{` stays the last word of its keyword's line (which is
//! what keepalived's `process_stream` makes of it). Every other brace is a
//! line of its own, as in keepalived, and text after a brace starts a new
//! line.

mod comment;
mod conditional;
mod definitions;
#[cfg(target_arch = "x86_64")]
mod fast;
mod file_text;
mod glob;
mod include;
mod quoted;
mod sequence;
mod text;
pub mod values;

#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub use quoted::{QuoteError, split_quoted_escaped};

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::syntax::{FileId, Line, SourceFile, Sources, Span, Word};
use definitions::{Cursor, Definition};
use include::IncludeFrame;
use sequence::Sequence;
use text::{Cell, Text, at, cells, covering, find_byte, is_white_space, span_of_set};

/// How to read a configuration.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// keepalived's `-i`/`--config-id`: `@id` lines are kept when `id`
    /// matches it. `None`: the host name up to its first dot (keepalived's
    /// default, from `uname`).
    pub config_id: Option<String>,
    /// keepalived's `-e`/`--all-config`: every include check on (as if each
    /// `include` were `includea`).
    pub all_config: bool,
    /// Seed for `${_RANDOM}` (keepalived's `random_seed`); `None`: the time.
    pub random_seed: Option<u64>,
}

impl Options {
    /// The config id in effect.
    pub fn effective_config_id(&self) -> String {
        match &self.config_id {
            Some(id) => id.clone(),
            None => default_config_id(),
        }
    }
}

/// The node name up to the first dot, as keepalived derives it.
pub fn default_config_id() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    name.split('.').next().unwrap_or_default().to_string()
}

/// Reads the configuration at `path` (a glob pattern, like keepalived's
/// `-f`) and every file it includes.
pub fn read_file(
    path: &Path,
    options: &Options,
    sources: &mut Sources,
    diagnostics: &mut Diagnostics,
) -> Vec<Line> {
    open_file(path, options, sources, diagnostics).run()
}

/// A lexer over the configuration at `path` (see [`read_file`]), to be
/// read line by line with [`Lexer::next_line`].
pub(crate) fn open_file<'a>(
    path: &Path,
    options: &Options,
    sources: &'a mut Sources,
    diagnostics: &'a mut Diagnostics,
) -> Lexer<'a> {
    open_file_in_blocks(
        path,
        options,
        sources,
        diagnostics,
        file_text::FileText::BLOCK,
    )
}

/// [`open_file`], its files read `block` bytes at a time.
fn open_file_in_blocks<'a>(
    path: &Path,
    options: &Options,
    sources: &'a mut Sources,
    diagnostics: &'a mut Diagnostics,
    block: usize,
) -> Lexer<'a> {
    let mut lexer = Lexer::new(options, sources, diagnostics, PathBuf::from("."));
    lexer.block = block;
    let pattern = path.to_string_lossy().into_owned();
    if !lexer.open_main(&pattern) {
        // Nothing to read, and nothing to finish (no definition started).
        lexer.finished = true;
    }
    lexer
}

/// A lexer over text in memory (see [`read_str`]).
pub(crate) fn open_str<'a>(
    name: &str,
    text: &str,
    options: &Options,
    sources: &'a mut Sources,
    diagnostics: &'a mut Diagnostics,
) -> Lexer<'a> {
    open_str_at(name, text.as_bytes(), 1, options, sources, diagnostics)
}

/// [`open_str`] for text whose first line is line `first_line` of its file.
pub(crate) fn open_str_at<'a>(
    name: &str,
    text: &[u8],
    first_line: u32,
    options: &Options,
    sources: &'a mut Sources,
    diagnostics: &'a mut Diagnostics,
) -> Lexer<'a> {
    let mut lexer = Lexer::new(options, sources, diagnostics, PathBuf::from("."));
    lexer.open_text(name, text.to_vec(), first_line);
    lexer
}

/// A lexer over the bytes `range` of `bytes`, the lines from `first_line`
/// on of the file `id` already in `sources`: one part of a plain file read
/// on several threads ([`crate::load_on_two_threads`]).
pub(crate) fn open_part<'a>(
    id: FileId,
    bytes: std::sync::Arc<Vec<u8>>,
    range: std::ops::Range<usize>,
    first_line: u32,
    options: &Options,
    sources: &'a mut Sources,
    diagnostics: &'a mut Diagnostics,
) -> Lexer<'a> {
    let mut lexer = Lexer::new(options, sources, diagnostics, PathBuf::from("."));
    lexer.open_part_of(id, file_text::FileText::part_of(bytes, range), first_line);
    lexer
}

/// Reads a configuration held in memory (tests, fuzzing); `include`s are
/// relative to the current directory.
pub fn read_str(
    name: &str,
    text: &str,
    options: &Options,
    sources: &mut Sources,
    diagnostics: &mut Diagnostics,
) -> Vec<Line> {
    open_str(name, text, options, sources, diagnostics).run()
}

/// A line read from a file.
enum FileLine {
    /// To go through comments, conditionals, substitutions and braces.
    Text(Text),
    /// A plain line, already in words (see [`plain_line`]).
    Plain(Line, Option<Span>),
}

/// [`BYTE_CLASS`]: a byte that makes a line not plain.
const SPECIAL: u8 = 1;
/// [`BYTE_CLASS`]: C's `isspace` ([`text::is_white_space`]).
const WHITE: u8 = 2;
/// [`BYTE_CLASS`]: `{` or `}`.
const BRACE: u8 = 4;
/// [`BYTE_CLASS`]: `'`, which keepalived's script lines quote with.
const SINGLE_QUOTE: u8 = 8;

/// What [`plain_line`] needs to know of each byte, in one look-up.
static BYTE_CLASS: [u8; 256] = {
    let mut table = [0; 256];
    let mut byte = 0;
    while byte < 256 {
        table[byte] = match byte as u8 {
            // A NUL ends a line (keepalived reads them with fgets() and
            // strlen()): cut there before a line is taken as plain.
            b'#' | b'!' | b'"' | b'\\' | b'@' | b'$' | b'~' | 0 => SPECIAL,
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => WHITE,
            b'{' | b'}' => BRACE,
            b'\'' => SINGLE_QUOTE,
            _ => 0,
        };
        byte += 1;
    }
    table
};

/// A file line that none of `read_line`'s steps would change but for
/// blanks at either end and a final `{`: no comment, quote or escape
/// (`#`, `!`, `"`, `\\`), no conditional, definition, substitution or
/// sequence (`@`, `$`, `~`), no `include`, no NUL byte, and no brace but
/// a last `{` or a lone `}`. Its words (with the spans the cell-by-cell path would give
/// them) and the span of its text (or of its `{`: what [`text::covering`]
/// would say), straight from the file's bytes; `None` for any other line.
/// A file is read a block at a time, never checked as a whole: each word
/// is checked to be UTF-8 (else its invalid bytes are replaced).
fn plain_line(
    raw: &[u8],
    file: crate::syntax::FileId,
    line: u32,
    scratch: &mut Vec<Word>,
    spare: &mut Vec<Vec<Word>>,
) -> Option<(Line, Option<Span>)> {
    let seen = raw
        .iter()
        .fold(0, |seen, &byte| seen | BYTE_CLASS[usize::from(byte)]);
    if seen & SPECIAL != 0 {
        return None;
    }
    let start = raw.iter().take_while(|&&byte| text::is_blank(byte)).count();
    let end = raw.len()
        - raw[start..]
            .iter()
            .rev()
            .take_while(|&&byte| text::is_blank(byte))
            .count();
    let body = &raw[start..end];
    if body.is_empty() || body.starts_with(b"include") {
        return None;
    }
    let span = spans_of(file, line);
    let mut text_end = end;
    let mut brace = None;
    if seen & BRACE == 0 || body == b"{" || body == b"}" {
        // No brace, or a brace alone (a line of its own).
    } else {
        if body.last() == Some(&b'{') {
            text_end = end - 1;
            brace = Some(text_end);
            while text_end > start && text::is_blank(raw[text_end - 1]) {
                text_end -= 1;
            }
        }
        if raw[start..text_end]
            .iter()
            .any(|&byte| byte == b'{' || byte == b'}')
        {
            return None;
        }
    }
    let words = scratch;
    words.clear();
    // The searches run over slices (no index checks: this is the lexer's
    // inner loop on a large configuration).
    let is_white = |byte: &u8| BYTE_CLASS[usize::from(*byte)] & WHITE != 0;
    let text = &raw[..text_end];
    let mut position = start;
    loop {
        position += text[position..]
            .iter()
            .position(|byte| !is_white(byte))
            .unwrap_or(text_end - position);
        if position >= text_end {
            break;
        }
        let word_start = position;
        position += text[position..]
            .iter()
            .position(is_white)
            .unwrap_or(text_end - position);
        words.push(Word {
            text: text_of(&raw[word_start..position]),
            span: span(word_start, position),
            quoted: false,
        });
    }
    let mut exact = spare
        .pop()
        .unwrap_or_else(|| Vec::with_capacity(words.len() + 1));
    exact.append(words);
    let covering = if start < text_end {
        Some(span(start, text_end))
    } else {
        brace.map(|brace| span(brace, brace + 1))
    };
    let line = assemble(
        raw,
        exact,
        span,
        brace,
        start..text_end,
        seen & SINGLE_QUOTE != 0,
    );
    Some((line, covering))
}

/// The span of bytes `from..to` of a file line (columns count from 1).
fn spans_of(file: crate::syntax::FileId, line: u32) -> impl Fn(usize, usize) -> Span {
    move |from, to| Span {
        file,
        line,
        start: from as u32 + 1,
        end: to as u32 + 1,
    }
}

/// A word's text from bytes of a file line, invalid UTF-8 replaced (a
/// file is read a block at a time, never checked as a whole).
fn text_of(bytes: &[u8]) -> crate::syntax::Text {
    match std::str::from_utf8(bytes) {
        Ok(text) => crate::syntax::Text::new(text),
        Err(_) => String::from_utf8_lossy(bytes).into_owned().into(),
    }
}

/// The end of [`plain_line`] and [`fast::plain_line`]: the line of
/// `words`, with the final `{` at `brace` if any, its text being `text`.
fn assemble(
    raw: &[u8],
    mut words: Vec<Word>,
    span: impl Fn(usize, usize) -> Span,
    brace: Option<usize>,
    text: std::ops::Range<usize>,
    single_quote: bool,
) -> Line {
    if let Some(brace) = brace {
        words.push(Word {
            text: "{".into(),
            span: span(brace, brace + 1),
            quoted: false,
        });
    }
    Line {
        words,
        // Split again by the keywords that take a command line: only a `'`
        // makes that split differ from the words.
        raw: single_quote.then(|| String::from_utf8_lossy(&raw[text]).into()),
        // No brace but a final `{` or a brace alone (both callers).
        braces_last_only: true,
    }
}

/// keepalived's line buffer (`MAXBUF`): 1023 bytes and a terminator.
const LINE_BUFFER: usize = 1024;

/// At most this many lines produced by `~SEQ`, `~LST` and multi-line
/// definitions per configuration: keepalived has no limit, so a tiny file
/// could keep it busy for ever.
pub(crate) const EXPANSION_LIMIT: u64 = 1_000_000;

/// At most this many lines beyond the lines read from files (the largest
/// real configuration seen expands to 273,000 from a few hundred). Lines
/// read from files are not limited: a site's generated config of 10,000
/// virtual servers is 670,000 lines, and files are finite.
const LINE_LIMIT: u64 = 600_000;

/// Include nesting deeper than this is refused (keepalived recurses until
/// it runs out of file descriptors).
const INCLUDE_DEPTH_LIMIT: usize = 32;

/// One line as `read_line` returns it, before `alloc_strvec`.
enum Produced {
    Text {
        text: Text,
        /// The `{` split off the end of this line (kept on it, see the
        /// module comment).
        opening_brace: Option<Cell>,
    },
    /// A plain line of a file, already split into words (see
    /// [`Lexer::plain_line`]).
    Line(Line, Option<Span>),
}

pub(crate) struct Lexer<'a> {
    sources: &'a mut Sources,
    diagnostics: &'a mut Diagnostics,
    config_id: String,
    /// The include stack; the innermost file is the last.
    stack: Vec<IncludeFrame>,
    /// Where `include`s of in-memory text are resolved from.
    base_directory: PathBuf,
    definitions: Vec<Definition>,
    sequences: Vec<Sequence>,
    /// keepalived's `line_residue`: the rest of a line split at a brace.
    residue: Option<Text>,
    /// The multi-line definitions the current line came from (empty for
    /// a line of a file).
    line_ancestry: std::rc::Rc<Vec<usize>>,
    /// keepalived's `next_ptr`: the multi-line definition being expanded.
    next_line: Option<Cursor>,
    multiline_stack: Vec<(Cursor, usize)>,
    multiline_sequence_depth: usize,
    /// The multi-line definition being read (`multiline_param_def`).
    defining: Option<usize>,
    /// keepalived's `include_check` bits.
    include_check: u8,
    random_state: u64,
    /// Substitutions for the current line (guards `$A=$A`).
    substitutions: usize,
    expanded_lines: u64,
    /// Lines read from files so far (see [`LINE_LIMIT`]).
    file_lines: u64,
    expansion_reported: bool,
    /// Opening quotes already reported (decomment and word splitting can
    /// both notice the same one).
    reported_quotes: HashSet<Span>,
    /// The words of the line being split (see `split_words`).
    words: Vec<Word>,
    /// Undefined `${NAME}` uses already reported.
    reported_undefined: HashSet<Span>,
    /// Substitutions already reported as making a line too long.
    reported_too_long: HashSet<Span>,
    /// Lines handed out so far (see [`LINE_LIMIT`]).
    produced_lines: u64,
    /// The input has ended (or the line limit was reached): no more lines.
    finished: bool,
    /// Word vectors of lines the grammar is done with, emptied, for the
    /// next lines (see [`Lexer::recycle`]).
    spare_words: Vec<Vec<Word>>,
    /// The bytes read from a file at a time (smaller in tests, to cut
    /// lines at every place).
    pub(crate) block: usize,
}

impl<'a> Lexer<'a> {
    fn new(
        options: &Options,
        sources: &'a mut Sources,
        diagnostics: &'a mut Diagnostics,
        base_directory: PathBuf,
    ) -> Self {
        let seed = options.random_seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|elapsed| elapsed.as_nanos() as u64)
                .unwrap_or(1)
        });
        Lexer {
            sources,
            diagnostics,
            config_id: options.effective_config_id(),
            stack: Vec::new(),
            base_directory,
            definitions: definitions::standard_definitions(),
            sequences: Vec::new(),
            residue: None,
            line_ancestry: std::rc::Rc::new(Vec::new()),
            next_line: None,
            multiline_stack: Vec::new(),
            multiline_sequence_depth: 0,
            defining: None,
            include_check: if options.all_config { include::ALL } else { 0 },
            random_state: seed | 1,
            substitutions: 0,
            expanded_lines: 0,
            file_lines: 0,
            expansion_reported: false,
            reported_quotes: HashSet::new(),
            words: Vec::new(),
            reported_undefined: HashSet::new(),
            reported_too_long: HashSet::new(),
            produced_lines: 0,
            finished: false,
            spare_words: Vec::new(),
            block: file_text::FileText::BLOCK,
        }
    }

    fn run(&mut self) -> Vec<Line> {
        let mut lines = Vec::new();
        while let Some(line) = self.next_line() {
            lines.push(line);
        }
        lines
    }

    /// The next line of words, or `None` once the input has ended (lines
    /// are produced as they are read, so that the grammar can read and
    /// drop each block before the next is lexed).
    pub(crate) fn next_line(&mut self) -> Option<Line> {
        if self.finished {
            return None;
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(line) = self.fast_line() {
            return Some(line);
        }
        while let Some(produced) = self.read_line() {
            if self.produced_lines >= self.file_lines.saturating_add(LINE_LIMIT) {
                // A definition that contains itself followed by a brace
                // makes keepalived produce lines for ever (each piece split
                // off the line is substituted again).
                let span = match &produced {
                    Produced::Text {
                        text,
                        opening_brace,
                    } => text::covering(text).or(opening_brace.map(|brace| brace.span)),
                    Produced::Line(_, span) => *span,
                };
                if let Some(span) = span {
                    self.diagnostics.push(Diagnostic::error(
                        span,
                        format!(
                            "the configuration expands to more than {LINE_LIMIT} lines beyond those of its files; the rest is ignored"
                        ),
                    ));
                }
                break;
            }
            let (words, raw, braces_last_only) = match produced {
                Produced::Text {
                    text,
                    opening_brace,
                } => (
                    self.split_words(&text, opening_brace),
                    Some(text::to_string(&text).into_boxed_str()),
                    false,
                ),
                Produced::Line(line, _) => (line.words, line.raw, line.braces_last_only),
            };
            if words.is_empty() {
                continue;
            }
            if words[0].text == "include_check" && !words[0].quoted {
                // keepalived runs the global_defs handler as soon as it has
                // read the line, and later includes are checked with the new
                // setting (applied wherever the line is; the grammar judges
                // its place).
                self.set_include_check(&words[1..]);
            }
            self.produced_lines += 1;
            return Some(Line {
                words,
                raw,
                braces_last_only,
            });
        }
        self.finished = true;
        if let Some(index) = self.defining.take() {
            self.end_definition(index);
        }
        None
    }

    /// The next line when it is the common one, straight from the file
    /// ([`fast::plain_line`]) with nothing pending (a piece of a line split
    /// at a brace, a sequence, a multi-line definition): what
    /// [`Lexer::read_line`] and [`Lexer::next_line`] would do for it, without
    /// their steps; `None` otherwise, and nothing is read.
    #[cfg(target_arch = "x86_64")]
    fn fast_line(&mut self) -> Option<Line> {
        if self.residue.is_some()
            || !self.sequences.is_empty()
            || self.next_line.is_some()
            || self.defining.is_some()
            || self.produced_lines >= self.file_lines.saturating_add(LINE_LIMIT)
        {
            return None;
        }
        let file = self.stack.last_mut()?.file.as_mut()?;
        let (line, length) = fast::plain_line(
            file.text.rest(),
            file.id,
            file.line_number + 1,
            &mut self.spare_words,
        )?;
        file.text.consume(length + 1);
        file.line_number += 1;
        self.file_lines += 1;
        self.produced_lines += 1;
        self.substitutions = 0;
        if !self.line_ancestry.is_empty() {
            self.line_ancestry = std::rc::Rc::new(Vec::new());
        }
        if line.words[0].text == "include_check" {
            // As in `next_line`.
            self.set_include_check(&line.words[1..]);
        }
        Some(line)
    }

    /// Takes back the words of a line the grammar is done with: their vector holds
    /// the words of a later line (an allocation saved per line).
    pub(crate) fn recycle(&mut self, mut words: Vec<Word>) {
        // A block's worth: more would only hold memory.
        if self.spare_words.len() < 256 {
            words.clear();
            self.spare_words.push(words);
        }
    }

    /// keepalived's `read_line`: the next line, or `None` at the end.
    fn read_line(&mut self) -> Option<Produced> {
        loop {
            let mut buffer: Text = if let Some(residue) = self.residue.take() {
                // The substitution budget covers a line and every piece
                // split off it: a definition ending in its own use regrows
                // each piece (keepalived never stops).
                residue
            } else if !self.sequences.is_empty()
                && self.sequences.len() > self.multiline_sequence_depth
            {
                self.next_sequence_line()
            } else if let Some(cursor) = self.next_line.take() {
                self.substitutions = 0;
                self.line_ancestry = cursor.ancestry.clone();
                self.next_multiline_line(cursor)
            } else {
                self.substitutions = 0;
                if !self.line_ancestry.is_empty() {
                    self.line_ancestry = std::rc::Rc::new(Vec::new());
                }
                self.file_lines += 1;
                match self.next_file_line()? {
                    FileLine::Text(text) => text,
                    FileLine::Plain(line, span) => return Some(Produced::Line(line, span)),
                }
            };

            if let Some(index) = self.defining {
                let line = text::bytes(&buffer);
                if !self.continue_definition(index, line) {
                    self.defining = None;
                }
                continue;
            }
            if buffer.is_empty() {
                continue;
            }

            let mut dropped = false;
            loop {
                let mut recheck = false;
                if at(&buffer, 0) == b'@' && !self.keep_conditional(&mut buffer) {
                    dropped = true;
                    break;
                }
                if at(&buffer, 0) == b'$' {
                    if let Some(index) = self.check_definition(&buffer) {
                        if self.definitions[index].multiline {
                            self.defining = Some(index);
                        }
                        dropped = true;
                        break;
                    }
                }
                if text::starts_with(&buffer, b"~SEQ") {
                    self.add_sequence(&buffer);
                    dropped = true;
                    break;
                }
                if text::starts_with(&buffer, b"~LST") {
                    self.add_list(&buffer);
                    dropped = true;
                    break;
                }
                // Any other line starting with '~' is taken as it is, without
                // substitution.
                if at(&buffer, 0) == b'~' {
                    break;
                }
                if find_byte(&buffer, 0, b'$').is_some() {
                    let mut next_line = self.next_line.take();
                    let replaced =
                        self.replace_parameters(&mut buffer, LINE_BUFFER, &mut next_line);
                    self.next_line = next_line;
                    if !replaced {
                        break;
                    }
                    // keepalived 2.2.7 removes comments again after
                    // substituting: a substituted `#` or `!` (even
                    // `${_HASH}`) starts a comment (verified).
                    let found = comment::decomment(&mut buffer);
                    self.report_unterminated_quote(found.unterminated_quote);
                    if at(&buffer, 0) == b'@' || find_byte(&buffer, 0, b'$').is_some() {
                        recheck = true;
                    }
                }
                if !recheck {
                    break;
                }
            }
            if self.substitutions > definitions::SUBSTITUTION_LIMIT {
                // Reported where the budget ran out: drop the line and what
                // would be split off it.
                self.residue = None;
                continue;
            }
            if dropped || buffer.is_empty() {
                continue;
            }
            // keepalived looks for `include` after conditionals and
            // substitution (despite its manual saying otherwise).
            if self.check_include(&buffer) {
                continue;
            }
            self.report_undefined(&buffer);
            return Some(self.split_at_brace(buffer));
        }
    }

    /// The next line of a multi-line definition being expanded.
    fn next_multiline_line(&mut self, cursor: Cursor) -> Text {
        self.expanded_lines += 1;
        if self.expanded_lines > EXPANSION_LIMIT {
            if !self.expansion_reported {
                self.expansion_reported = true;
                self.diagnostics.push(Diagnostic::error(
                    cursor.span,
                    format!(
                        "multi-line definitions expand to more than {EXPANSION_LIMIT} lines; the rest of the expansion is ignored"
                    ),
                ));
            }
            self.multiline_stack.clear();
            self.multiline_sequence_depth = 0;
            return Text::new();
        }
        let start = cursor.offset.min(cursor.value.len());
        let rest = &cursor.value[start..];
        match rest.iter().position(|&byte| byte == b'\n') {
            None => {
                let line = cells(rest, cursor.span);
                match self.multiline_stack.pop() {
                    Some((outer, depth)) => {
                        self.next_line = Some(outer);
                        self.multiline_sequence_depth = depth;
                    }
                    None => self.multiline_sequence_depth = 0,
                }
                line
            }
            Some(end) => {
                let line = cells(&rest[..end], cursor.span);
                self.next_line = Some(Cursor {
                    offset: start + end + 1,
                    ..cursor
                });
                line
            }
        }
    }

    /// keepalived's brace split: the text before the first `{` or `}`
    /// outside double quotes is this line, the brace and what follows come
    /// next. A line starting with a brace is that brace alone.
    fn split_at_brace(&mut self, mut buffer: Text) -> Produced {
        let brace_at = if matches!(at(&buffer, 0), b'{' | b'}') {
            Some(0)
        } else {
            let mut position = 0;
            loop {
                let Some(offset) = buffer[position..]
                    .iter()
                    .position(|cell| matches!(cell.byte, b'{' | b'}' | b'"'))
                else {
                    break None;
                };
                let found = position + offset;
                if buffer[found].byte != b'"' {
                    break Some(found);
                }
                // Braces inside "..." do not split; an unterminated quote
                // stops the search.
                match find_byte(&buffer, found + 1, b'"') {
                    Some(close) => position = close + 1,
                    None => break None,
                }
            }
        };
        if let Some(brace) = brace_at {
            let skip = if brace == 0 {
                1 + span_of_set(&buffer, 1, b" \t")
            } else {
                0
            };
            if brace + skip < buffer.len() {
                let mut residue = buffer.split_off(brace + skip);
                text::trim_blank_end(&mut residue);
                self.residue = Some(residue);
            }
        }
        text::trim_blank_end(&mut buffer);

        // Keep a `{` that ends a keyword's line on that line.
        let mut opening_brace = None;
        if !matches!(at(&buffer, 0), b'{' | b'}') {
            if let Some(residue) = self.residue.take() {
                if at(&residue, 0) == b'{' {
                    opening_brace = Some(residue[0]);
                    let rest_start = 1 + span_of_set(&residue, 1, b" \t");
                    if rest_start < residue.len() {
                        self.residue = Some(residue[rest_start..].to_vec());
                    }
                } else {
                    self.residue = Some(residue);
                }
            }
        }
        Produced::Text {
            text: buffer,
            opening_brace,
        }
    }

    /// keepalived's `alloc_strvec`: words separated by white space; `"..."`
    /// is one word without its quotes (no escapes: those are for
    /// [`split_quoted_escaped`]); a `"` also ends an unquoted word
    /// (`a"b c"` is `a` and `b c`); single quotes are ordinary characters.
    fn split_words(&mut self, buffer: &[Cell], opening_brace: Option<Cell>) -> Vec<Word> {
        // Words are gathered in a buffer kept from line to line, and the
        // line gets a vector of its exact size.
        let mut words = std::mem::take(&mut self.words);
        let mut position = 0;
        loop {
            while position < buffer.len() && is_white_space(buffer[position].byte) {
                position += 1;
            }
            if position >= buffer.len() {
                break;
            }
            if buffer[position].byte == b'"' {
                let Some(close) = find_byte(buffer, position + 1, b'"') else {
                    // keepalived: "Unmatched quote", and the rest of the line
                    // is dropped.
                    let span = buffer[position].span;
                    if self.reported_quotes.insert(span) {
                        self.diagnostics.push(Diagnostic::error(
                            covering(&buffer[position..]).unwrap_or(span),
                            "unmatched quote: keepalived ignores the rest of the line",
                        ));
                    }
                    break;
                };
                words.push(Word {
                    text: text::to_text(&buffer[position + 1..close]),
                    span: covering(&buffer[position..=close]).unwrap_or(buffer[position].span),
                    quoted: true,
                });
                position = close + 1;
            } else {
                let start = position;
                while position < buffer.len()
                    && !is_white_space(buffer[position].byte)
                    && buffer[position].byte != b'"'
                {
                    position += 1;
                }
                words.push(Word {
                    text: text::to_text(&buffer[start..position]),
                    span: covering(&buffer[start..position]).unwrap_or(buffer[start].span),
                    quoted: false,
                });
            }
        }
        if let Some(brace) = opening_brace {
            words.push(Word {
                text: "{".into(),
                span: brace.span,
                quoted: false,
            });
        }
        let mut exact = self
            .spare_words
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(words.len()));
        exact.append(&mut words);
        self.words = words;
        exact
    }

    fn report_unterminated_quote(&mut self, quote: Option<Span>) {
        if let Some(span) = quote {
            if self.reported_quotes.insert(span) {
                self.diagnostics.push(Diagnostic::error(
                    span,
                    "unterminated quote: comments are not recognised after it and keepalived ignores the rest of the line",
                ));
            }
        }
    }

    /// keepalived keeps an undefined `${NAME}` as it is, and then splits the
    /// line at its braces unless it is inside double quotes: worth a
    /// warning. (An undefined `$NAME` is common and harmless in scripts.)
    fn report_undefined(&mut self, buffer: &[Cell]) {
        let mut quoted = false;
        let mut position = 0;
        while position < buffer.len() {
            let byte = buffer[position].byte;
            if byte == b'"' {
                quoted = !quoted;
            } else if byte == b'$' && !quoted && at(buffer, position + 1) == b'{' {
                let name_start = position + 2;
                let mut name_end = name_start;
                while definitions::is_name_byte(at(buffer, name_end)) {
                    name_end += 1;
                }
                if name_end > name_start
                    && definitions::is_name_start(at(buffer, name_start))
                    && find_byte(buffer, name_end, b'}').is_some()
                {
                    let close = find_byte(buffer, name_end, b'}').unwrap_or(name_end);
                    let name = text::to_string(&buffer[name_start..name_end]);
                    let span = covering(&buffer[position..=close.min(buffer.len() - 1)])
                        .unwrap_or(buffer[position].span);
                    position = close;
                    if !self.reported_undefined.insert(span) {
                        // Already said, for this use (a line split at its
                        // braces is scanned again piece by piece).
                        position += 1;
                        continue;
                    }
                    let hint = if name == "_ENV" {
                        " (keepalived 2.2.7 has no ${_ENV})"
                    } else {
                        ""
                    };
                    self.diagnostics.push(Diagnostic::warning(
                        span,
                        format!(
                            "'${{{name}}}' is not defined{hint}: keepalived keeps it as it is and splits the line at its braces"
                        ),
                    ));
                }
            }
            position += 1;
        }
    }

    /// The directory relative paths are resolved from: the directory of the
    /// file being read (keepalived `chdir()`s into it).
    fn current_directory(&self) -> PathBuf {
        self.stack
            .iter()
            .rev()
            .find_map(|frame| frame.file.as_ref().map(|file| file.directory.clone()))
            .unwrap_or_else(|| self.base_directory.clone())
    }

    /// `${_PWD}`: keepalived's `getcwd()`, an absolute path.
    fn current_directory_text(&self) -> String {
        let directory = self.current_directory();
        let directory = if directory.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            directory
        };
        std::fs::canonicalize(&directory)
            .or_else(|_| std::env::current_dir().map(|current| current.join(&directory)))
            .unwrap_or(directory)
            .to_string_lossy()
            .into_owned()
    }

    /// A diagnostic about a file that has no line to point at.
    fn file_span(&mut self, name: &str) -> Span {
        let file = self
            .sources
            .add(SourceFile::in_memory(name.to_string(), String::new(), None));
        Span {
            file,
            line: 0,
            start: 0,
            end: 0,
        }
    }
}
