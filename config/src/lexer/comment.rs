//! `#` and `!` comments: keepalived's `decomment()`.

use super::text::{Cell, Text, is_blank};
use crate::syntax::Span;

/// What `decomment` found besides the text it kept.
#[derive(Debug, Default)]
pub(crate) struct Decommented {
    /// Where an unterminated `"` opened (keepalived: "Unterminated quote").
    pub unterminated_quote: Option<Span>,
}

/// keepalived's `decomment()`, step for step:
/// - leading spaces and tabs go (other white space stays: keepalived only
///   strips `" \t"` here);
/// - a `#` or `!` outside double quotes starts a comment, wherever it is on
///   the line (single quotes do not protect it: keepalived's comment scan
///   only knows `"`);
/// - `\#` and `\!` outside double quotes lose their backslash (the only
///   escapes the comment scan knows); inside quotes they are kept as they
///   are, backslash included;
/// - any other `\X` is kept and `X` is skipped, so `\"` neither opens nor
///   closes a quote for the comment scan;
/// - a `\` as the very last byte marks a continuation (used by multi-line
///   `$NAME=` definitions); keepalived keeps scanning after a comment has
///   started, so a comment that ends in `\` also makes the line a
///   continuation (quirk reproduced);
/// - once a comment has started, quotes no longer toggle;
/// - trailing spaces and tabs go, also before a continuation `\`.
pub(crate) fn decomment(text: &mut Text) -> Decommented {
    let leading = text.iter().take_while(|cell| is_blank(cell.byte)).count();
    text.drain(..leading);

    let mut quote = false;
    let mut quote_opened_at: Option<Span> = None;
    let mut continuation: Option<Cell> = None;
    let mut comment_start: Option<usize> = None;
    let mut index = 0;
    while index < text.len() {
        match text[index].byte {
            b'"' => {
                if comment_start.is_none() {
                    quote = !quote;
                    if quote {
                        quote_opened_at = Some(text[index].span);
                    }
                }
                index += 1;
            }
            b'\\' => {
                if index + 1 < text.len() {
                    let next = text[index + 1].byte;
                    if !quote && (next == b'#' || next == b'!') {
                        text.remove(index);
                    } else {
                        index += 1;
                    }
                    index += 1;
                } else {
                    continuation = Some(text[index]);
                    text.truncate(index);
                    break;
                }
            }
            b'#' | b'!' => {
                if !quote && comment_start.is_none() {
                    comment_start = Some(index);
                }
                index += 1;
            }
            _ => index += 1,
        }
    }

    let result = Decommented {
        unterminated_quote: if quote { quote_opened_at } else { None },
    };
    if let Some(start) = comment_start {
        text.truncate(start);
    }
    while text.last().is_some_and(|cell| is_blank(cell.byte)) {
        text.pop();
    }
    if let Some(cell) = continuation {
        text.push(cell);
    }
    result
}
