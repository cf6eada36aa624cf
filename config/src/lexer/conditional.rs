//! `@id line` and `@^id line`: keepalived's conditional configuration.

use super::Lexer;
use super::text::{Text, is_blank, span_of_set};

impl Lexer<'_> {
    /// Whether a line starting with `@` is kept; if so, the `@id` and the
    /// blanks after it are removed. keepalived compares the word right after
    /// `@` (or `@^`, which negates) up to the first space or tab with the
    /// config id; a line with nothing after the id is dropped either way,
    /// and `@ id` (a space after `@`) is an empty id, which never matches
    /// (verified with keepalived 2.2.7).
    pub(super) fn keep_conditional(&mut self, buffer: &mut Text) -> bool {
        let negated = buffer.get(1).is_some_and(|cell| cell.byte == b'^');
        let id_start = if negated { 2 } else { 1 };
        let Some(id_end) = buffer
            .iter()
            .skip(id_start)
            .position(|cell| is_blank(cell.byte))
            .map(|offset| id_start + offset)
        else {
            return false;
        };
        let id: Vec<u8> = buffer[id_start..id_end]
            .iter()
            .map(|cell| cell.byte)
            .collect();
        let matches = id == self.config_id.as_bytes();
        if matches == negated {
            return false;
        }
        let rest = id_end + span_of_set(buffer, id_end, b" \t");
        buffer.drain(..rest);
        true
    }
}
