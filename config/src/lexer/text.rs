//! keepalived's line buffer, byte for byte, with each byte remembering
//! where it came from.
//!
//! keepalived edits its line buffer in place (comment removal, `@id`
//! stripping, `$NAME` substitution, brace splitting); to port that faithfully
//! and still point diagnostics at the right columns, every byte carries the
//! span it came from: its own column for text read from a file, the whole
//! `$NAME` use for substituted text.

use crate::syntax::Span;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cell {
    pub byte: u8,
    pub span: Span,
}

pub(crate) type Text = Vec<Cell>;

/// C's `isspace` in the C locale: keepalived's `WHITE_SPACE` set.
pub(crate) fn is_white_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// C's `isblank`: space and tab.
pub(crate) fn is_blank(byte: u8) -> bool {
    byte == b' ' || byte == b'\t'
}

/// The byte at `index`, or 0 past the end, as C code reading up to a string's
/// terminator sees it.
pub(crate) fn at(text: &[Cell], index: usize) -> u8 {
    text.get(index).map_or(0, |cell| cell.byte)
}

/// `strspn` from `index` over bytes in `set`.
pub(crate) fn span_of_set(text: &[Cell], index: usize, set: &[u8]) -> usize {
    text.get(index..)
        .unwrap_or_default()
        .iter()
        .take_while(|cell| set.contains(&cell.byte))
        .count()
}

/// `strcspn` from `index` over bytes not in `set`.
pub(crate) fn span_until_set(text: &[Cell], index: usize, set: &[u8]) -> usize {
    text.get(index..)
        .unwrap_or_default()
        .iter()
        .take_while(|cell| !set.contains(&cell.byte))
        .count()
}

pub(crate) fn find_byte(text: &[Cell], from: usize, byte: u8) -> Option<usize> {
    text.get(from..)?
        .iter()
        .position(|cell| cell.byte == byte)
        .map(|offset| from + offset)
}

pub(crate) fn bytes(text: &[Cell]) -> Vec<u8> {
    text.iter().map(|cell| cell.byte).collect()
}

pub(crate) fn to_string(text: &[Cell]) -> String {
    if text.iter().all(|cell| cell.byte.is_ascii()) {
        let mut string = String::with_capacity(text.len());
        string.extend(text.iter().map(|cell| cell.byte as char));
        string
    } else {
        String::from_utf8_lossy(&bytes(text)).into_owned()
    }
}

/// [`to_string`] as a word's text (no allocation for a short word).
pub(crate) fn to_text(text: &[Cell]) -> crate::syntax::Text {
    crate::syntax::Text::from_ascii(text.len(), text.iter().map(|cell| cell.byte))
        .unwrap_or_else(|| to_string(text).into())
}

pub(crate) fn starts_with(text: &[Cell], prefix: &[u8]) -> bool {
    text.len() >= prefix.len()
        && text
            .iter()
            .zip(prefix)
            .all(|(cell, byte)| cell.byte == *byte)
}

/// Cells for `bytes`, all pointing at `span` (substituted text).
pub(crate) fn cells(bytes: &[u8], span: Span) -> Text {
    bytes.iter().map(|&byte| Cell { byte, span }).collect()
}

/// Removes trailing spaces and tabs.
pub(crate) fn trim_blank_end(text: &mut Text) {
    while text.last().is_some_and(|cell| is_blank(cell.byte)) {
        text.pop();
    }
}

/// The span covering `text`: from the first byte's line, every byte on that
/// same line widens it (substituted bytes share their use's span).
pub(crate) fn covering(text: &[Cell]) -> Option<Span> {
    let first = text.first()?.span;
    let mut span = first;
    for cell in text {
        if cell.span.file == first.file && cell.span.line == first.line {
            span.start = span.start.min(cell.span.start);
            span.end = span.end.max(cell.span.end);
        }
    }
    Some(span)
}
