//! The generic engine: lines to a tree of known keywords, with every brace
//! and keyword-name problem reported once and a sensible recovery.
//!
//! The tree has the shape keepalived gives the file, braces included, so
//! that pulse applies what keepalived applies; only the reporting is better.
//! Recovery rules:
//! - an unknown keyword is one error (with a "did you mean");
//! - inside a block, a `{` that opens no block (after a keyword that takes
//!   none, after an unknown keyword, alone, or in a block of values) is one
//!   error and is ignored, as keepalived ignores it: the lines after it are
//!   read in the same block, the next `}` ends that block, and each later
//!   `}` one more; what keepalived then reads where it means nothing (and
//!   ignores) is a note on that error giving the run of lines, not one
//!   error per line (keepalived reports every one of them);
//! - at top level, a block that is not a top-level block is skipped up to
//!   its `}` (keepalived reads its lines at top level, where they are
//!   unknown): one error, with a note giving the lines skipped;
//! - a missing `{` after a block keyword: the lines up to the next `}` are
//!   read as its block, as keepalived reads them;
//! - a missing `}` is noticed when a top-level block keyword such as
//!   `virtual_server` appears inside a block that does not know it: one error
//!   there, and parsing resumes at top level; at the end of the input, one
//!   error for all the blocks still open;
//! - a `}` with no open block is one error.

use super::keyword::{self, Body, Keyword, Support};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::syntax::{Line, Span, Word};

/// One keyword line with its block, or one free-form line of a block like
/// `virtual_ipaddress` (then `spec` is `None`).
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    pub keyword: &'a Word,
    pub arguments: &'a [Word],
    pub spec: Option<&'static Keyword>,
    /// In an arena of the tree's (one allocation for many nodes, and
    /// nothing to drop node by node).
    pub children: &'a [Node<'a>],
    /// The `}` that closed the block, if it was found (a word of the
    /// lines, like the keyword: a node is copied once gathered, and a
    /// reference is half the size of an `Option<Span>`).
    pub close: Option<&'a Word>,
    /// The line as keepalived's handlers see it ([`Line::raw`]), for the
    /// keywords that re-split it (scripts); `None` for a piece of a line
    /// after a brace.
    pub raw: Option<&'a str>,
}

impl<'a> Node<'a> {
    pub fn name(&self) -> &'a str {
        &self.keyword.text
    }

    /// The keyword and its arguments.
    pub fn words(&self) -> Vec<&'a Word> {
        let mut words = vec![self.keyword];
        words.extend(self.arguments.iter());
        words
    }

    pub fn argument(&self, index: usize) -> Option<&'a Word> {
        self.arguments.get(index)
    }

    /// Where keepalived reports problems found at the end of a block: its
    /// closing `}` (else the keyword).
    pub fn end_span(&self) -> Span {
        self.close.map_or(self.keyword.span, |close| close.span)
    }

    /// The span of the whole line (keyword and arguments).
    pub fn span(&self) -> Span {
        line_span(self.keyword, self.arguments)
    }
}

/// The span of a keyword and its arguments: `span_of` of the words, without
/// building a vector of them.
fn line_span(keyword: &Word, arguments: &[Word]) -> Span {
    let mut span = keyword.span;
    if let Some(last) = arguments.last() {
        if last.span.file == span.file && last.span.line == span.line {
            span.end = last.span.end.max(span.end);
        }
    }
    span
}

/// A line split at its braces: `a b { c }` is `a b {`, `c`, `}`.
#[derive(Debug, Clone, Copy)]
enum Item<'a> {
    Line {
        /// The words of the piece (consecutive words of one line).
        words: &'a [Word],
        open: Option<&'a Word>,
        /// The source line's raw text, for the first piece of a line.
        raw: Option<&'a str>,
    },
    Close(&'a Word),
}

/// The start of the note saying which lines a recovery skipped.
pub const SKIPPED: &str = "the block is skipped up to its '}'";

/// The start of the note saying which lines were read as the block of a
/// keyword whose `{` is missing.
pub const READ_AS_BLOCK: &str = "these lines are read as its block";

/// The start of the note saying which lines keepalived reads outside the
/// block they were written in (after a block ended early), and ignores.
pub const IGNORED_OUTSIDE: &str = "keepalived ignores these lines";

/// A note giving a run of lines: `what` (one of [`SKIPPED`],
/// [`READ_AS_BLOCK`], [`IGNORED_OUTSIDE`]) and the lines.
fn lines_note(what: &str, first: u32, last: u32) -> String {
    format!("{what} (lines {first} to {last})")
}

/// The first and last line a note made by [`lines_note`] gives; `None` for
/// any other note.
pub fn noted_lines(note: &str) -> Option<(u32, u32)> {
    let rest = [SKIPPED, READ_AS_BLOCK, IGNORED_OUTSIDE]
        .iter()
        .find_map(|what| note.strip_prefix(what))?;
    let (first, last) = rest
        .strip_prefix(" (lines ")?
        .strip_suffix(')')?
        .split_once(" to ")?;
    Some((first.parse().ok()?, last.parse().ok()?))
}

/// keepalived ignored a `{` inside a block: it reads the lines after it
/// in that block, the `}` written for that `{` ends the block, and each
/// later `}` ends one block more. What it then reads at a level it was not
/// written for (keywords unknown there, and at top level the `}`s left
/// over) is reported as one run of ignored lines.
#[derive(Debug, Clone, Copy)]
struct Displaced {
    /// The first `{` keepalived ignored.
    open: Span,
    /// The `}`s written for `{`s keepalived ignored, not yet met at top
    /// level.
    pending: usize,
    /// The error on that `{` (its index among the diagnostics), which the
    /// run is added to.
    brace_error: Option<usize>,
    /// The error that gathers the run (its index among the diagnostics)
    /// and the run's first line, once there is one.
    run: Option<(usize, u32)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The block's `}` was found.
    Closed,
    /// The input ended inside the block (already reported).
    InputEnded,
    /// A top-level keyword appeared inside the block (already reported); the
    /// caller must unwind to the top level without consuming it.
    TopLevel,
}

/// Builds the tree of `root`'s keywords from the lines, handing each
/// top-level node to `each` as soon as it is complete.
pub fn build_each(
    lines: &[Line],
    root: &'static [Keyword],
    diagnostics: &mut Diagnostics,
    each: &mut dyn FnMut(Node<'_>),
) {
    let nodes = typed_arena::Arena::new();
    let mut window = lines;
    let mut builder = Builder {
        nodes: &nodes,
        position: Cursor::start(&mut window),
        lines: &mut window,
        diagnostics,
        open_blocks: Vec::new(),
        root,
        last_close: None,
        displaced: None,
        each,
        pause_at_top_level: false,
        gathered: Vec::new(),
        unknown_notes: UnknownNotes::new(),
    };
    loop {
        let (more, end) = builder.block(Body::Keywords(root));
        // Top-level nodes went to `each`.
        debug_assert!(more.is_empty());
        // At top level a block only ends at the end of the input.
        if end == End::InputEnded || builder.at_end() {
            break;
        }
    }
}

/// [`build_each`] for lines pulled one by one from `source` (the lexer):
/// the lines of a top-level block are dropped once its node has been
/// handed to `each`, so the lines of a large configuration are never all
/// held. Same nodes, same diagnostics, in the same order.
pub fn build_streamed<S: LineSource>(
    source: &mut S,
    root: &'static [Keyword],
    diagnostics: &mut Diagnostics,
    each: &mut dyn FnMut(Node<'_>),
) {
    // The lines read past the end of the last top-level item (the rest of
    // its last line, the next line), and the index of the first of them.
    let mut carried: Vec<Line> = Vec::new();
    let mut base = 0;
    let mut position: Option<Cursor> = None;
    let mut displaced = None;
    let mut unknown_notes = UnknownNotes::new();
    loop {
        let arena = LineArena::new();
        // The nodes of this top-level item.
        let nodes = typed_arena::Arena::with_capacity(LineArena::LINES);
        let mut window = Streamed {
            lines: {
                let mut lines = Vec::with_capacity(LineArena::LINES);
                lines.extend(carried.drain(..).map(|line| arena.add(line)));
                lines
            },
            arena: &arena,
            base,
            source: &mut *source,
        };
        let start = match position {
            Some(position) => position,
            None => Cursor::start(&mut window),
        };
        let mut builder = Builder {
            nodes: &nodes,
            position: start,
            lines: &mut window,
            diagnostics: &mut *diagnostics,
            open_blocks: Vec::new(),
            root,
            // Read only right after a block's `}` set it.
            last_close: None,
            displaced,
            each: &mut |node| each(node),
            pause_at_top_level: true,
            gathered: Vec::new(),
            unknown_notes: std::mem::take(&mut unknown_notes),
        };
        let (more, end) = builder.block(Body::Keywords(root));
        debug_assert!(more.is_empty());
        let at_end = builder.at_end();
        let next = builder.position;
        displaced = builder.displaced;
        unknown_notes = std::mem::take(&mut builder.unknown_notes);
        if end == End::InputEnded || at_end {
            break;
        }
        position = Some(next);
        carried = arena.into_lines_from(next.line - base, &mut *source);
        base = next.line;
    }
}

/// Where [`build_streamed`] pulls its lines from (the lexer).
pub trait LineSource {
    fn next_line(&mut self) -> Option<Line>;
    /// Takes back the words of a line the tree is done with, so that their
    /// vector's storage can be reused.
    fn recycle(&mut self, _words: Vec<Word>) {}
}

impl LineSource for crate::lexer::Lexer<'_> {
    fn next_line(&mut self) -> Option<Line> {
        crate::lexer::Lexer::next_line(self)
    }

    fn recycle(&mut self, words: Vec<Word>) {
        crate::lexer::Lexer::recycle(self, words)
    }
}

/// Lines that stay where they are while more are added: the nodes of a
/// block borrow the lines read so far while the builder pulls the next.
/// `typed_arena` stores them in chunks (one allocation for many lines).
struct LineArena {
    lines: typed_arena::Arena<Line>,
}

impl LineArena {
    /// Lines per chunk: a top-level block of a large configuration (a
    /// virtual server and its real servers) is some tens of lines.
    const LINES: usize = 128;

    fn new() -> Self {
        LineArena {
            lines: typed_arena::Arena::with_capacity(Self::LINES),
        }
    }

    fn add(&self, line: Line) -> &Line {
        self.lines.alloc(line)
    }

    /// The lines added from the `first`-th on; the others go back to
    /// `source`, for their storage to be reused.
    fn into_lines_from(mut self, first: usize, source: &mut impl LineSource) -> Vec<Line> {
        // Taken out in place (the arena's order is the lines' order):
        // moving every line into one vector first, then the kept ones into
        // another, cost more than the rest of the hand-back.
        let mut kept = Vec::new();
        for (index, line) in self.lines.iter_mut().enumerate() {
            if index < first {
                source.recycle(std::mem::take(&mut line.words));
            } else {
                kept.push(std::mem::take(line));
            }
        }
        kept
    }
}

/// Where the builder finds its lines, by index from the start of the
/// input.
trait Window<'a> {
    fn line(&mut self, index: usize) -> Option<&'a Line>;
    /// The last word of the input (every line is then read).
    fn last_word(&mut self) -> Option<&'a Word>;
}

impl<'a> Window<'a> for &'a [Line] {
    fn line(&mut self, index: usize) -> Option<&'a Line> {
        self.get(index)
    }

    fn last_word(&mut self) -> Option<&'a Word> {
        self.iter().rev().find_map(|line| line.words.last())
    }
}

/// The lines of one top-level item, pulled from the lexer as needed.
struct Streamed<'a, 's, S> {
    arena: &'a LineArena,
    /// The lines from index `base` on.
    lines: Vec<&'a Line>,
    base: usize,
    source: &'s mut S,
}

impl<'a, S: LineSource> Window<'a> for Streamed<'a, '_, S> {
    fn line(&mut self, index: usize) -> Option<&'a Line> {
        let offset = index.checked_sub(self.base)?;
        while self.lines.len() <= offset {
            let line = self.source.next_line()?;
            self.lines.push(self.arena.add(line));
        }
        Some(self.lines[offset])
    }

    fn last_word(&mut self) -> Option<&'a Word> {
        while let Some(line) = self.source.next_line() {
            self.lines.push(self.arena.add(line));
        }
        // The item being read started in this window, so its words (and
        // every later one) are here.
        self.lines.iter().rev().find_map(|line| line.words.last())
    }
}

/// Where the next item starts: a word of a line (items are computed as
/// they are read rather than held for the whole input).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cursor {
    line: usize,
    word: usize,
}

impl Cursor {
    fn start<'a>(lines: &mut impl Window<'a>) -> Self {
        Cursor { line: 0, word: 0 }.settled(lines)
    }

    /// The same place, moved past the end of lines to the next line that
    /// has words.
    fn settled<'a>(mut self, lines: &mut impl Window<'a>) -> Self {
        while let Some(line) = lines.line(self.line) {
            if self.word < line.words.len() {
                break;
            }
            self.line += 1;
            self.word = 0;
        }
        self
    }
}

/// The item at `at` and where the next one starts: a line is split at its
/// braces (`a b { c }` is `a b {`, `c`, `}`); only a line's first piece
/// has its raw text.
fn item_at<'a>(lines: &mut impl Window<'a>, at: Cursor) -> Option<(Item<'a>, Cursor)> {
    let line = lines.line(at.line)?;
    let words = &line.words;
    let raw = if at.word == 0 {
        line.raw.as_deref()
    } else {
        None
    };
    let mut next = |word: usize| {
        Cursor {
            line: at.line,
            word,
        }
        .settled(lines)
    };
    if at.word == 0 && line.braces_last_only {
        // A plain line from the lexer: only its last word can be a brace,
        // so the others need not be asked. A `}` is left to the loop.
        match words.split_last() {
            Some((last, before)) if last.is_open() => {
                let item = Item::Line {
                    words: before,
                    open: Some(last),
                    raw,
                };
                return Some((item, next(words.len())));
            }
            Some((last, _)) if !last.is_close() => {
                let item = Item::Line {
                    words,
                    open: None,
                    raw,
                };
                return Some((item, next(words.len())));
            }
            _ => {}
        }
    }
    for (index, word) in words.iter().enumerate().skip(at.word) {
        if word.is_open() {
            let item = Item::Line {
                words: &words[at.word..index],
                open: Some(word),
                raw,
            };
            return Some((item, next(index + 1)));
        }
        if word.is_close() {
            if at.word < index {
                let item = Item::Line {
                    words: &words[at.word..index],
                    open: None,
                    raw,
                };
                return Some((item, next(index)));
            }
            return Some((Item::Close(word), next(index + 1)));
        }
    }
    let item = Item::Line {
        words: &words[at.word..],
        open: None,
        raw,
    };
    Some((item, next(words.len())))
}

struct Builder<'a, 'w, 'd, 'e, W: Window<'a>> {
    lines: &'w mut W,
    /// Where the nodes of blocks are kept.
    nodes: &'a typed_arena::Arena<Node<'a>>,
    /// The next item to read.
    position: Cursor,
    diagnostics: &'d mut Diagnostics,
    /// The keyword and `{` of every block being read, outermost first.
    open_blocks: Vec<(&'a Word, Span)>,
    root: &'static [Keyword],
    /// The `}` that ended the last block read.
    last_close: Option<&'a Word>,
    /// Set from a block that ended early until keepalived is back at the
    /// level the file was written for.
    displaced: Option<Displaced>,
    /// Where top-level nodes go.
    each: &'e mut dyn FnMut(Node<'a>),
    /// Return at top level after each item, so that the caller can drop
    /// the lines read so far.
    pause_at_top_level: bool,
    /// Vectors to gather a block's nodes in, one per depth being read.
    gathered: Vec<Vec<Node<'a>>>,
    /// The notes of unknown keywords already reported, by table, word and
    /// block ([`Builder::report_unknown`]); kept from item to item.
    unknown_notes: UnknownNotes,
}

/// See [`Builder::unknown_notes`].
type UnknownNotes = std::collections::HashMap<(usize, String, Option<String>), Option<String>>;

impl<'a, W: Window<'a>> Builder<'a, '_, '_, '_, W> {
    /// Whether every item has been read.
    fn at_end(&mut self) -> bool {
        self.lines.line(self.position.line).is_none()
    }

    fn block(&mut self, body: Body) -> (&'a [Node<'a>], End) {
        // The nodes are gathered in a vector reused from block to block
        // (at this depth), then moved to the arena.
        let mut gathered = self.gathered.pop().unwrap_or_default();
        let end = self.block_nodes(body, &mut gathered);
        let nodes: &'a [Node<'a>] = self.nodes.alloc_extend(gathered.drain(..));
        self.gathered.push(gathered);
        (nodes, end)
    }

    fn block_nodes(&mut self, body: Body, nodes: &mut Vec<Node<'a>>) -> End {
        let start = self.position;
        // The `{`s of this block keepalived ignores, and the error on the
        // first of them (its index among the diagnostics).
        let mut ignored_opens = 0;
        let mut first_ignored = None;
        loop {
            if self.pause_at_top_level && self.open_blocks.is_empty() && self.position != start {
                // Nothing borrows the lines read so far: let the caller
                // drop them. It comes back here as at the end of a block
                // cut short by a top-level keyword.
                return End::TopLevel;
            }
            let Some((item, next)) = self.peek() else {
                if !self.open_blocks.is_empty() {
                    self.report_unclosed_at_end();
                }
                return End::InputEnded;
            };
            let (words, open, raw) = match item {
                Item::Close(word) => {
                    self.position = next;
                    if self.open_blocks.is_empty() {
                        if !self.read_outside(word.span, word.span, true) {
                            self.diagnostics.push(Diagnostic::error(
                                word.span,
                                "unexpected '}': no block is open here",
                            ));
                        }
                        continue;
                    }
                    if ignored_opens > 0 {
                        self.end_early(word.span, ignored_opens, first_ignored);
                    }
                    self.last_close = Some(word);
                    return End::Closed;
                }
                Item::Line { words, open, raw } => (words, open, raw),
            };
            let Some(keyword) = words.first() else {
                // A `{` on its own line that no keyword before it takes.
                self.position = next;
                if let Some(open) = open {
                    let outside = self.read_outside(open.span, open.span, false);
                    if !outside {
                        self.diagnostics.push(Diagnostic::error(
                            open.span,
                            "unexpected '{': no keyword before it opens a block",
                        ));
                    }
                    self.unexpected_open(
                        open.span,
                        !outside,
                        &mut ignored_opens,
                        &mut first_ignored,
                    );
                }
                continue;
            };
            // The keyword in this block's table (looked up once).
            let found = match body {
                Body::Keywords(table) => keyword::find(table, &keyword.text),
                Body::None | Body::Lines => None,
            };
            if !self.open_blocks.is_empty()
                && found.is_none()
                && keyword::find(self.root, &keyword.text).is_some_and(Keyword::opens_block)
            {
                self.report_unclosed_before(keyword);
                return End::TopLevel;
            }
            self.position = next;
            let arguments = &words[1..];
            if self.open_blocks.is_empty() && found.is_some_and(Keyword::opens_block) {
                // A block of the top level: keepalived is back where the
                // file was written for.
                self.displaced = None;
            }
            let table = match body {
                Body::Keywords(table) => table,
                Body::None | Body::Lines => {
                    self.add(
                        nodes,
                        Node {
                            keyword,
                            arguments,
                            spec: None,
                            children: &[],
                            close: None,
                            raw,
                        },
                    );
                    if let Some(open) = open {
                        self.diagnostics.push(Diagnostic::error(
                            open.span,
                            "unexpected '{': the lines of this block do not open blocks",
                        ));
                        // keepalived reads it as a value (an invalid one),
                        // and the next `}` ends the block.
                        self.unexpected_open(
                            open.span,
                            true,
                            &mut ignored_opens,
                            &mut first_ignored,
                        );
                    }
                    continue;
                }
            };
            let Some(spec) = found else {
                let outside = self.read_outside(keyword.span, line_span(keyword, arguments), false);
                if !outside {
                    self.report_unknown(keyword, table);
                }
                if let Some(open) = open {
                    self.unexpected_open(
                        open.span,
                        !outside,
                        &mut ignored_opens,
                        &mut first_ignored,
                    );
                }
                continue;
            };
            let complete = self.check_arity(spec, keyword, arguments);
            if spec.support == Support::NotYet {
                self.diagnostics.push(Diagnostic::note(
                    keyword.span,
                    format!("'{}' accepted, not yet acted on", spec.name),
                ));
            }
            let mut node = Node {
                keyword,
                arguments,
                spec: Some(spec),
                children: &[],
                close: None,
                raw,
            };
            if !spec.opens_block() {
                if let Some(open) = open {
                    self.diagnostics.push(Diagnostic::error(
                        open.span,
                        format!("unexpected '{{': '{}' takes no block", spec.name),
                    ));
                    self.unexpected_open(open.span, true, &mut ignored_opens, &mut first_ignored);
                }
                if complete {
                    self.add(nodes, node);
                }
                continue;
            }
            let mut missing_open_error = None;
            let braced = open.or_else(|| self.lone_open());
            let open = match braced {
                Some(open) => open.span,
                None => {
                    // keepalived ("Missing '{' at beginning of configuration
                    // block") reads the following lines as the block anyway,
                    // up to a `}`; so do we, rather than report each of them.
                    missing_open_error = Some(self.diagnostics.items.len());
                    self.diagnostics.push(Diagnostic::error(
                        keyword.span,
                        format!(
                            "missing '{{' after '{}': its block is read up to the next '}}'",
                            spec.name
                        ),
                    ));
                    keyword.span
                }
            };
            self.open_blocks.push((keyword, open));
            let (children, end) = self.block(spec.body);
            self.open_blocks.pop();
            node.children = children;
            if end == End::Closed {
                node.close = self.last_close;
                if braced.is_none() {
                    if let (Some(close), Some(error)) =
                        (node.close.map(|close| close.span), missing_open_error)
                    {
                        self.diagnostics.items[error].notes.push((
                            Some(close),
                            lines_note(READ_AS_BLOCK, keyword.span.line, close.line),
                        ));
                    }
                }
            }
            if complete {
                self.add(nodes, node);
            }
            if end != End::Closed {
                return end;
            }
        }
    }

    /// The next item and where the one after it starts.
    fn peek(&mut self) -> Option<(Item<'a>, Cursor)> {
        item_at(self.lines, self.position)
    }

    /// Adds a node to the block being read; a top-level node goes to
    /// `each` instead.
    fn add(&mut self, nodes: &mut Vec<Node<'a>>, node: Node<'a>) {
        if self.open_blocks.is_empty() {
            (self.each)(node);
        } else {
            nodes.push(node);
        }
    }

    /// A `{` alone on the next line (keepalived accepts the brace there).
    fn lone_open(&mut self) -> Option<&'a Word> {
        match self.peek() {
            Some((
                Item::Line {
                    words: [], open, ..
                },
                next,
            )) => {
                self.position = next;
                open
            }
            _ => None,
        }
    }

    /// Returns whether the keyword has all its arguments.
    fn check_arity(&mut self, spec: &Keyword, keyword: &Word, arguments: &[Word]) -> bool {
        let count = arguments.len();
        if count < spec.arity.minimum as usize {
            let wanted = spec.arity.minimum;
            self.diagnostics.push(Diagnostic::error(
                arguments.last().map_or(keyword.span, |word| word.span),
                format!(
                    "'{}' needs {} argument{}, found {count}",
                    spec.name,
                    if spec.arity.maximum == Some(wanted) {
                        format!("{wanted}")
                    } else {
                        format!("at least {wanted}")
                    },
                    if wanted == 1 { "" } else { "s" }
                ),
            ));
            return false;
        }
        let maximum = spec.arity.maximum.map_or(usize::MAX, usize::from);
        if count > maximum {
            let extra: Vec<&Word> = arguments[maximum..].iter().collect();
            self.diagnostics.push(Diagnostic::warning(
                super::span_of(&extra).unwrap_or(keyword.span),
                format!(
                    "'{}' takes {}; extra words ignored",
                    spec.name,
                    match maximum {
                        0 => "no arguments".to_string(),
                        1 => "one argument".to_string(),
                        other => format!("at most {other} arguments"),
                    }
                ),
            ));
        }
        true
    }

    fn report_unknown(&mut self, keyword: &Word, table: &'static [Keyword]) {
        let here = self.open_blocks.last().map(|(word, _)| word.text.as_str());
        // The note depends on the word, the table and the block only: an
        // expansion (`~SEQ`) that repeats a bad line thousands of times
        // would otherwise compute it (edit distances against the table,
        // a walk of every block) thousands of times.
        let key = (
            table.as_ptr() as usize,
            keyword.text.to_string(),
            here.map(str::to_string),
        );
        let note = match self.unknown_notes.get(&key) {
            Some(note) => note.clone(),
            None => {
                let note = self.unknown_note(&keyword.text, table, here);
                self.unknown_notes.insert(key, note.clone());
                note
            }
        };
        let mut diagnostic =
            Diagnostic::error(keyword.span, format!("unknown keyword '{}'", keyword.text));
        if let Some(note) = note {
            diagnostic = diagnostic.with_note(None, note);
        }
        self.diagnostics.push(diagnostic);
    }

    /// What [`Builder::report_unknown`] adds about an unknown `word` of
    /// `table`'s block (`here`, by name): a keyword it is close to, or where
    /// the word is a keyword.
    fn unknown_note(
        &self,
        word: &str,
        table: &'static [Keyword],
        here: Option<&str>,
    ) -> Option<String> {
        if here == Some("global_defs")
            && let Some((_, read)) = super::global_defs::MAN_PAGE_NAMES
                .iter()
                .find(|(documented, _)| *documented == word)
        {
            return Some(format!(
                "keepalived's man page calls it so, but keepalived reads '{read}'"
            ));
        }
        if let Some(best) = super::suggestion(word, table.iter().map(|spec| spec.name)) {
            return Some(format!("did you mean '{best}'?"));
        }
        if keyword::find(self.root, word).is_some() {
            return Some(format!("'{word}' is a top-level keyword, not allowed here"));
        }
        let homes = blocks_knowing(self.root, word);
        if !homes.is_empty() {
            return Some(format!(
                "'{word}' is a keyword of {} blocks{}",
                homes
                    .iter()
                    .map(|home| format!("'{home}'"))
                    .collect::<Vec<_>>()
                    .join(", "),
                here.map(|block| format!(", not of '{block}' blocks"))
                    .unwrap_or_default()
            ));
        }
        here.map(|block| format!("not a keyword of '{block}' blocks"))
    }

    fn report_unclosed_before(&mut self, keyword: &Word) {
        let mut diagnostic = Diagnostic::error(
            keyword.span,
            format!(
                "missing '}}' before '{}': {} still open",
                keyword.text,
                self.describe_open_blocks()
            ),
        );
        for (word, open) in self.open_blocks.iter().rev() {
            diagnostic =
                diagnostic.with_note(Some(*open), format!("'{}' block opened here", word.text));
        }
        self.diagnostics.push(diagnostic);
    }

    fn report_unclosed_at_end(&mut self) {
        // The last item's span: that of the last word of the input.
        let last = self
            .lines
            .last_word()
            .map_or(self.open_blocks[0].1, |word| word.span);
        let mut diagnostic = Diagnostic::error(
            last,
            format!(
                "missing '}}' at the end of the input: {} still open",
                self.describe_open_blocks()
            ),
        );
        for (word, open) in self.open_blocks.iter().rev() {
            diagnostic =
                diagnostic.with_note(Some(*open), format!("'{}' block opened here", word.text));
        }
        self.diagnostics.push(diagnostic);
    }

    fn describe_open_blocks(&self) -> String {
        let names: Vec<String> = self
            .open_blocks
            .iter()
            .rev()
            .map(|(word, open)| format!("'{}' (line {})", word.text, open.line))
            .collect();
        if names.len() == 1 {
            format!("the block {} is", names[0])
        } else {
            format!("the blocks {} are", names.join(", "))
        }
    }

    /// A `{` that opens no block (`reported`: by the last diagnostic, else
    /// taken into a run of ignored lines). keepalived ignores it and reads
    /// on: inside a block, so do we, and the next `}` ends the block (see
    /// [`Displaced`]); at top level the block is skipped (its lines would
    /// all be unknown there).
    fn unexpected_open(
        &mut self,
        open: Span,
        reported: bool,
        ignored_opens: &mut usize,
        first_ignored: &mut Option<usize>,
    ) {
        let Some((block, _)) = self.open_blocks.last() else {
            match (self.displaced, self.skip_to_close()) {
                (Some(Displaced { run: Some(run), .. }), Some(close)) => {
                    self.extend_run(run, close);
                }
                (_, Some(close)) => {
                    // Say how far the recovery went, on the error just
                    // reported about this block.
                    if let Some(last) = self.diagnostics.items.last_mut() {
                        last.notes
                            .push((Some(close), lines_note(SKIPPED, open.line, close.line)));
                    }
                }
                (_, None) => self.diagnostics.push(Diagnostic::error(
                    open,
                    "missing '}': this block is not closed before the end of the input",
                )),
            }
            return;
        };
        *ignored_opens += 1;
        let brace_error = (reported && !self.diagnostics.items.is_empty())
            .then(|| self.diagnostics.items.len() - 1);
        self.displaced.get_or_insert(Displaced {
            open,
            pending: 0,
            brace_error,
            run: None,
        });
        if reported {
            let note = format!(
                "keepalived ignores this '{{': the next '}}' ends the '{}' block",
                block.text
            );
            if let Some(last) = self.diagnostics.items.last_mut() {
                last.notes.push((None, note));
                first_ignored.get_or_insert(self.diagnostics.items.len() - 1);
            }
        }
    }

    /// A `}` ends the block being read where keepalived ends it, though
    /// `ignored_opens` of the block's `{`s were ignored: what follows is
    /// read a level out.
    fn end_early(&mut self, close: Span, ignored_opens: usize, first_ignored: Option<usize>) {
        let block = self
            .open_blocks
            .last()
            .map(|(word, _)| word.text.to_string());
        if let (Some(error), Some(block)) = (first_ignored, block) {
            // Before the run of ignored lines, if it has begun: the notes
            // then read in the order things happen.
            let notes = &mut self.diagnostics.items[error].notes;
            let at = notes
                .iter()
                .position(|(_, note)| note.starts_with(IGNORED_OUTSIDE))
                .unwrap_or(notes.len());
            notes.insert(
                at,
                (
                    Some(close),
                    format!("the '{block}' block ends here (line {})", close.line),
                ),
            );
        }
        let displaced = self.displaced.get_or_insert(Displaced {
            open: close,
            pending: 0,
            brace_error: None,
            run: None,
        });
        displaced.pending += ignored_opens;
    }

    /// While a block that ended early leaves keepalived reading at the
    /// wrong level: takes an unknown keyword (`first` its word, `span` its
    /// line) or a leftover `}` at top level (`closing`) into the run of
    /// lines keepalived ignores, and says whether it did.
    fn read_outside(&mut self, first: Span, span: Span, closing: bool) -> bool {
        let Some(mut displaced) = self.displaced else {
            return false;
        };
        match (displaced.run, displaced.brace_error) {
            (Some(run), _) => self.extend_run(run, span),
            (None, Some(error)) if self.diagnostics.items[error].span.file == span.file => {
                // One error for the mistake: the run goes on the `{`'s.
                let from_line = self.diagnostics.items[error].span.line;
                self.diagnostics.items[error].notes.push((
                    Some(span),
                    lines_note(IGNORED_OUTSIDE, from_line, span.line),
                ));
                displaced.run = Some((error, from_line));
            }
            (None, _) => {
                let level = match self.open_blocks.last() {
                    None => "at top level".to_string(),
                    Some((block, _)) => format!("in the '{}' block", block.text),
                };
                self.diagnostics.push(
                    Diagnostic::error(
                        first,
                        format!(
                            "keepalived reads this {level}, where it means nothing, and ignores it, as it ignores the unknown lines after it (see below): the '{{' on line {} opened no block, so the '}}'s after it end blocks early",
                            displaced.open.line
                        ),
                    )
                    .with_note(
                        Some(span),
                        lines_note(IGNORED_OUTSIDE, first.line, span.line),
                    ),
                );
                displaced.run = Some((self.diagnostics.items.len() - 1, first.line));
            }
        }
        if closing {
            displaced.pending = displaced.pending.saturating_sub(1);
        }
        // Back at the level the file was written for once the top level
        // has seen every `}` left over.
        self.displaced = (!closing || displaced.pending > 0).then_some(displaced);
        true
    }

    /// Widens the run of ignored lines to `span`'s line.
    fn extend_run(&mut self, (run, first): (usize, u32), span: Span) {
        let Some(error) = self.diagnostics.items.get_mut(run) else {
            return;
        };
        if let Some(note) = error
            .notes
            .iter_mut()
            .find(|(_, text)| text.starts_with(IGNORED_OUTSIDE))
        {
            if span.file == error.span.file && span.line >= first {
                *note = (Some(span), lines_note(IGNORED_OUTSIDE, first, span.line));
            }
        }
    }

    /// Reads up to the `}` of a block whose `{` was just consumed, and
    /// returns it (`None` at the end of the input).
    fn skip_to_close(&mut self) -> Option<Span> {
        let mut depth = 1usize;
        while let Some((item, next)) = self.peek() {
            self.position = next;
            match item {
                Item::Close(close) => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(close.span);
                    }
                }
                Item::Line { open: Some(_), .. } => depth += 1,
                Item::Line { .. } => {}
            }
        }
        None
    }
}

/// The names of the blocks (anywhere in the tree) whose table has `name`.
fn blocks_knowing(root: &'static [Keyword], name: &str) -> Vec<&'static str> {
    fn walk(
        table: &'static [Keyword],
        owner: &'static str,
        name: &str,
        depth: usize,
        found: &mut Vec<&'static str>,
    ) {
        if depth > 6 {
            return;
        }
        if !owner.is_empty() && keyword::find(table, name).is_some() && !found.contains(&owner) {
            found.push(owner);
        }
        for keyword in table {
            if let Body::Keywords(next) = keyword.body {
                walk(next, keyword.name, name, depth + 1, found);
            }
        }
    }
    let mut found = Vec::new();
    walk(root, "", name, 0, &mut found);
    found
}

#[cfg(test)]
mod tests {
    use super::{Cursor, item_at};
    use crate::diagnostic::Diagnostics;
    use crate::syntax::{Line, Sources};

    /// Every item of `lines`, as text.
    fn items(lines: &[Line]) -> Vec<String> {
        let mut window = lines;
        let mut at = Cursor::start(&mut window);
        let mut items = Vec::new();
        while let Some((item, next)) = item_at(&mut window, at) {
            items.push(format!("{item:?}"));
            at = next;
        }
        items
    }

    #[test]
    fn a_plain_line_splits_as_one_looked_at_word_by_word() {
        let text = "a\n  a b  \na {\n{\n}\n  }  \na b {\nc }\nd { e }\n\"{\" x\nf {}\n}\n";
        let mut sources = Sources::default();
        let mut diagnostics = Diagnostics::default();
        let lines = crate::lexer::read_str(
            "t.conf",
            text,
            &crate::lexer::Options::default(),
            &mut sources,
            &mut diagnostics,
        );
        assert!(lines.iter().filter(|line| line.braces_last_only).count() >= 7);
        let unmarked: Vec<Line> = lines
            .iter()
            .cloned()
            .map(|line| Line {
                braces_last_only: false,
                ..line
            })
            .collect();
        assert_eq!(items(&lines), items(&unmarked));
        assert_eq!(items(&lines).len(), 16, "{:#?}", items(&lines));
    }
}
