//! Problems found in a configuration, rendered the way compilers do:
//!
//! ```text
//! keepalived.conf:12:5: error: unknown keyword 'lvs_shed'
//!    12 |     lvs_shed rr
//!       |     ^^^^^^^^
//! ```

use crate::syntax::{Excerpts, Sources, Span};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Accepted, but Fulcrum does not act on it yet (never silently dropped).
    Note,
    /// Never stops pulse from starting or reloading.
    Warning,
    /// Stops pulse from starting or reloading.
    Error,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub span: Span,
    pub message: String,
    /// Further lines (`note: ...`), e.g. where a block was opened.
    pub notes: Vec<(Option<Span>, String)>,
}

impl Diagnostic {
    pub fn error(span: Span, message: impl Into<String>) -> Self {
        Self::new(Severity::Error, span, message)
    }

    pub fn warning(span: Span, message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, span, message)
    }

    pub fn note(span: Span, message: impl Into<String>) -> Self {
        Self::new(Severity::Note, span, message)
    }

    fn new(severity: Severity, span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            severity,
            span,
            message: message.into(),
            notes: Vec::new(),
        }
    }

    pub fn with_note(mut self, span: Option<Span>, message: impl Into<String>) -> Self {
        self.notes.push((span, message.into()));
        self
    }
}

/// Every diagnostic of one run, in the order found.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics {
    pub items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.items.push(diagnostic);
    }

    pub fn has_errors(&self) -> bool {
        self.items
            .iter()
            .any(|item| item.severity == Severity::Error)
    }

    pub fn count(&self, severity: Severity) -> usize {
        self.items
            .iter()
            .filter(|item| item.severity == severity)
            .count()
    }

    /// All diagnostics as text, sorted by file and position.
    pub fn render(&self, sources: &Sources) -> String {
        let mut items: Vec<&Diagnostic> = self.items.iter().collect();
        items.sort_by_key(|item| (item.span.file, item.span.line, item.span.start));
        let excerpts = sources.excerpts(items.iter().flat_map(|item| {
            std::iter::once(item.span)
                .chain(item.notes.iter().filter_map(|(span, _)| *span))
                .map(|span| (span.file, span.line))
        }));
        let mut out = String::new();
        // A line that `~SEQ` or a multi-line definition expands into
        // thousands of lines can have thousands of problems, all at its
        // own position: the first few are shown, then how many more.
        let mut index = 0;
        while index < items.len() {
            let line = (items[index].span.file, items[index].span.line);
            let same_line = items[index..]
                .iter()
                .take_while(|item| (item.span.file, item.span.line) == line)
                .count();
            // Problems about a whole file (line 0) are all shown.
            let shown = if line.1 > 0 {
                same_line.min(Self::SHOWN_PER_LINE)
            } else {
                same_line
            };
            for item in &items[index..index + shown] {
                render_one(item, sources, &excerpts, &mut out);
            }
            if shown < same_line {
                use std::fmt::Write;
                let _ = writeln!(
                    out,
                    "{}:{}: note: {} more problems on this line (or on lines made from it) are not shown",
                    sources.file(line.0).name,
                    line.1,
                    same_line - shown
                );
            }
            index += same_line;
        }
        out
    }

    /// The problems shown per line of a file (see [`Diagnostics::render`]).
    pub const SHOWN_PER_LINE: usize = 20;
}

fn render_one(diagnostic: &Diagnostic, sources: &Sources, excerpts: &Excerpts, out: &mut String) {
    use std::fmt::Write;
    let label = match diagnostic.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    };
    let span = diagnostic.span;
    if span.line == 0 {
        // About a whole file (e.g. one that cannot be read): no position.
        let _ = writeln!(
            out,
            "{}: {label}: {}",
            sources.file(span.file).name,
            diagnostic.message
        );
    } else {
        let _ = writeln!(
            out,
            "{}:{}:{}: {label}: {}",
            sources.file(span.file).name,
            span.line,
            span.start,
            diagnostic.message
        );
    }
    snippet(sources, excerpts, span, out);
    for (note_span, message) in &diagnostic.notes {
        match note_span {
            Some(note_span) => {
                let _ = writeln!(
                    out,
                    "{}:{}:{}: note: {message}",
                    sources.file(note_span.file).name,
                    note_span.line,
                    note_span.start
                );
                snippet(sources, excerpts, *note_span, out);
            }
            None => {
                let _ = writeln!(out, "  = note: {message}");
            }
        }
    }
}

fn snippet(sources: &Sources, excerpts: &Excerpts, span: Span, out: &mut String) {
    use std::fmt::Write;
    let Some(text) = excerpts.line(span.file, span.line) else {
        if span.line > 0 && excerpts.changed(span.file) {
            let _ = writeln!(
                out,
                "  = note: {} has changed since it was read: its line is not shown",
                sources.file(span.file).name
            );
        }
        return;
    };
    let number = span.line.to_string();
    let gutter = " ".repeat(number.len());
    let _ = writeln!(out, " {number} | {text}");
    // Tabs are kept under the caret line so that the carets line up
    // whatever the terminal's tab width.
    let prefix: String = text
        .bytes()
        .take(span.start.saturating_sub(1) as usize)
        .map(|byte| if byte == b'\t' { '\t' } else { ' ' })
        .collect();
    let width = span.end.saturating_sub(span.start).max(1) as usize;
    let _ = writeln!(out, " {gutter} | {prefix}{}", "^".repeat(width));
}
