//! `~SEQ(var, start, step, end)`, `~SEQx(...)` and `~LST(...)` lines:
//! keepalived's `add_seq` and `add_lst`, ported with their quirks.

use super::Lexer;
use super::text::{Cell, Text, at, covering, find_byte, span_of_set, span_until_set};
use crate::diagnostic::Diagnostic;

/// One `~SEQ` or `~LST` being expanded; the innermost is the last.
#[derive(Debug, Clone)]
pub(crate) struct Sequence {
    pub kind: SequenceKind,
    /// The rest of the line after `)`, expanded once per value.
    pub text: Text,
    /// The multi-line definitions the `~SEQ` line came from.
    pub ancestry: std::rc::Rc<Vec<usize>>,
}

#[derive(Debug, Clone)]
pub(crate) enum SequenceKind {
    Numbers {
        variable: Vec<u8>,
        next: i64,
        step: i64,
        last: i64,
        hexadecimal: bool,
    },
    List {
        parameters: Vec<Vec<u8>>,
        /// Value sets not yet used, each as long as `parameters`.
        value_sets: std::collections::VecDeque<Vec<Vec<u8>>>,
    },
}

/// keepalived's `~SEQ` parameters are copied into a 64-byte buffer (three
/// longs with separators) before substitution.
const SEQUENCE_PARAMETERS_BUFFER: usize = 3 * 20 + 3 + 1;

/// C's `strtol(text, &end, 0)`: leading white space, a sign, `0x` for hex,
/// `0` for octal; no digits leaves `end` where it started. Saturates like
/// glibc on overflow.
pub(crate) fn strtol(text: &[u8], start: usize) -> (i64, usize) {
    let byte = |index: usize| text.get(index).copied().unwrap_or(0);
    let mut position = start;
    while matches!(byte(position), b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        position += 1;
    }
    let negative = byte(position) == b'-';
    if matches!(byte(position), b'-' | b'+') {
        position += 1;
    }
    let mut radix = 10;
    if byte(position) == b'0'
        && matches!(byte(position + 1), b'x' | b'X')
        && byte(position + 2).is_ascii_hexdigit()
    {
        radix = 16;
        position += 2;
    } else if byte(position) == b'0' {
        radix = 8;
    }
    let digits_start = position;
    let mut value: i128 = 0;
    while let Some(digit) = (byte(position) as char).to_digit(radix) {
        value = (value * radix as i128 + digit as i128).min(i64::MAX as i128 + 1);
        position += 1;
    }
    if position == digits_start {
        return (0, start);
    }
    let value = if negative { -value } else { value };
    (
        value.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
        position,
    )
}

impl Lexer<'_> {
    /// A `~SEQ...` line (keepalived's `add_seq`). On failure, reports why.
    pub(super) fn add_sequence(&mut self, buffer: &Text) {
        if let Err(reason) = self.parse_sequence(buffer) {
            let span = covering(buffer).unwrap_or(buffer[0].span);
            self.diagnostics.push(Diagnostic::error(
                span,
                format!("invalid ~SEQ specification: {reason}; keepalived ignores the line"),
            ));
        }
    }

    fn parse_sequence(&mut self, buffer: &Text) -> Result<(), String> {
        let mut position = 4;
        let hexadecimal = at(buffer, position) == b'x';
        if hexadecimal {
            position += 1;
        }
        position += span_of_set(buffer, position, b" \t");
        if at(buffer, position) != b'(' {
            return Err("expected '(' after ~SEQ".into());
        }
        position += 1;
        position += span_of_set(buffer, position, b" \t");
        let variable_start = position;
        position += span_until_set(buffer, position, b" \t,)");
        let variable: Vec<u8> = buffer[variable_start..position]
            .iter()
            .map(|cell| cell.byte)
            .collect();
        position += span_of_set(buffer, position, b" \t");
        if position >= buffer.len() || at(buffer, position) == b')' || position == variable_start {
            return Err("expected a variable name and a value".into());
        }
        // keepalived skips whatever byte follows the name (normally ','):
        // `~SEQ(i 5)` reads as `~SEQ(i, )`, i.e. 1 down to 0 (verified).
        if at(buffer, position) != b',' {
            self.diagnostics.push(Diagnostic::warning(
                buffer[position].span,
                "expected ',' after the ~SEQ variable: keepalived skips this character instead",
            ));
        }
        position += 1;
        position += span_of_set(buffer, position, b" \t");
        // keepalived has no check for a missing ')': its length check
        // rejects it as "parameter strings too long".
        let Some(close) = find_byte(buffer, position, b')') else {
            return Err("missing ')'".into());
        };
        if close + 1 - position + 1 > SEQUENCE_PARAMETERS_BUFFER {
            return Err("parameters longer than keepalived's 63 bytes".into());
        }
        // Definitions in the parameters are substituted first.
        let mut parameters: Text = buffer[position..=close].to_vec();
        let mut multiline = None;
        self.replace_parameters(&mut parameters, SEQUENCE_PARAMETERS_BUFFER, &mut multiline);
        if multiline.is_some() {
            return Err("a parameter is a multi-line definition".into());
        }
        let parameters: Vec<u8> = parameters.iter().map(|cell| cell.byte).collect();
        let skip_blanks = |mut index: usize| {
            while matches!(parameters.get(index), Some(b' ' | b'\t')) {
                index += 1;
            }
            index
        };
        let byte = |index: usize| parameters.get(index).copied().unwrap_or(0);

        let (start, step, end);
        let (one, after) = strtol(&parameters, 0);
        let after = skip_blanks(after);
        if byte(after) == b')' {
            end = one;
            step = if end < 1 { -1 } else { 1 };
            start = if end < 0 { -1 } else { 1 };
        } else {
            if byte(after) != b',' {
                return Err("expected ',' or ')' after the first number".into());
            }
            let (two, after) = strtol(&parameters, after + 1);
            let after = skip_blanks(after);
            if byte(after) == b')' {
                start = one;
                end = two;
                step = if start <= end { 1 } else { -1 };
            } else {
                if byte(after) != b',' {
                    return Err("expected ',' or ')' after the second number".into());
                }
                let (three, after) = strtol(&parameters, after + 1);
                let after = skip_blanks(after);
                if byte(after) != b')' {
                    return Err("expected ')' after the third number".into());
                }
                start = one;
                step = two;
                end = three;
                if step == 0 || (start < end && step < 0) || (start > end && step > 0) {
                    return Err(format!("the step {step} never goes from {start} to {end}"));
                }
            }
        }
        if hexadecimal && (start < 0 || end < 0) {
            return Err("~SEQx only takes positive numbers".into());
        }
        let count = (end as i128 - start as i128) / step as i128 + 1;
        self.check_expansion(count.max(0) as u64, buffer)?;
        let mut text_start = close + 1;
        text_start += span_of_set(buffer, text_start, b" \t");
        self.sequences.push(Sequence {
            kind: SequenceKind::Numbers {
                variable,
                next: start,
                step,
                last: end,
                hexadecimal,
            },
            text: buffer[text_start..].to_vec(),
            ancestry: self.line_ancestry.clone(),
        });
        Ok(())
    }

    /// A `~LST...` line (keepalived's `add_lst`): `~LST(var, v1, v2)` or
    /// `~LST({a, b}, {1, 2}, {3, 4})`.
    pub(super) fn add_list(&mut self, buffer: &Text) {
        if let Err(reason) = self.parse_list(buffer) {
            let span = covering(buffer).unwrap_or(buffer[0].span);
            self.diagnostics.push(Diagnostic::error(
                span,
                format!("invalid ~LST specification: {reason}; keepalived ignores the line"),
            ));
        }
    }

    fn parse_list(&mut self, buffer: &Text) -> Result<(), String> {
        let word = |start: usize, end: usize| -> Vec<u8> {
            buffer[start..end]
                .iter()
                .map(|cell: &Cell| cell.byte)
                .collect()
        };
        let skip_after = |position: usize| position + span_of_set(buffer, position + 1, b" \t") + 1;
        let mut position = 4;
        position += span_of_set(buffer, position, b" \t");
        if at(buffer, position) != b'(' {
            return Err("expected '(' after ~LST".into());
        }
        position += 1;
        position += span_of_set(buffer, position, b" \t");
        let mut end_byte = b',';
        if at(buffer, position) == b'{' {
            end_byte = b'}';
            position += 1;
            position += span_of_set(buffer, position, b" \t");
        }
        let mut parameters = Vec::new();
        loop {
            let start = position;
            position += span_until_set(buffer, position, b" \t,}");
            parameters.push(word(start, position));
            position += span_of_set(buffer, position, b" \t");
            if at(buffer, position) == end_byte {
                break;
            }
            if at(buffer, position) != b',' {
                return Err("expected ',' between variable names".into());
            }
            position = skip_after(position);
        }
        if at(buffer, position) == b'}' {
            position = skip_after(position);
        }
        if at(buffer, position) != b',' {
            return Err("expected ',' after the variable names".into());
        }
        position += 1;
        position += span_of_set(buffer, position, b" \t");

        let mut value_sets = std::collections::VecDeque::new();
        loop {
            let mut end_byte = b',';
            if at(buffer, position) == b'{' {
                end_byte = b'}';
                position += 1;
                position += span_of_set(buffer, position, b" \t");
            }
            let mut values = Vec::new();
            loop {
                let start = position;
                position += span_until_set(buffer, position, b" \t,})");
                values.push(word(start, position));
                position += span_of_set(buffer, position, b" \t");
                let here = at(buffer, position);
                if here == end_byte || (here == b')' && end_byte == b',') {
                    break;
                }
                if here != b',' {
                    return Err("expected ',' between values".into());
                }
                position = skip_after(position);
                if values.len() >= parameters.len() {
                    return Err("more values than variables".into());
                }
            }
            // Missing values are empty.
            values.resize(parameters.len(), Vec::new());
            values.truncate(parameters.len());
            value_sets.push_back(values);
            if at(buffer, position) == b'}' && end_byte == b'}' {
                position = skip_after(position);
            }
            if at(buffer, position) == b')' {
                break;
            }
            if at(buffer, position) != b',' {
                return Err("expected ',' or ')' after a value set".into());
            }
            position = skip_after(position);
        }
        self.check_expansion(value_sets.len() as u64, buffer)?;
        let text_start = skip_after(position).min(buffer.len());
        self.sequences.push(Sequence {
            kind: SequenceKind::List {
                parameters,
                value_sets,
            },
            text: buffer[text_start..].to_vec(),
            ancestry: self.line_ancestry.clone(),
        });
        Ok(())
    }

    /// keepalived would expand any count; Fulcrum refuses more than
    /// [`super::EXPANSION_LIMIT`] lines in all, so no input can keep it busy.
    fn check_expansion(&mut self, count: u64, _buffer: &Text) -> Result<(), String> {
        let total = self.expanded_lines.saturating_add(count);
        if total > super::EXPANSION_LIMIT {
            return Err(format!(
                "it would expand to {count} lines, over Fulcrum's limit of {} expanded lines per configuration",
                super::EXPANSION_LIMIT
            ));
        }
        self.expanded_lines = total;
        Ok(())
    }

    /// The next line of the innermost sequence, setting its variables
    /// (keepalived's `read_line`, seq branch).
    pub(super) fn next_sequence_line(&mut self) -> Text {
        self.substitutions = 0;
        let Some(sequence) = self.sequences.last_mut() else {
            return Text::new();
        };
        let text = sequence.text.clone();
        self.line_ancestry = sequence.ancestry.clone();
        match &mut sequence.kind {
            SequenceKind::Numbers {
                variable,
                next,
                step,
                last,
                hexadecimal,
            } => {
                let value = if *hexadecimal {
                    format!("{:x}", *next as u64)
                } else {
                    next.to_string()
                };
                let variable = variable.clone();
                let current = *next;
                let done = match current.checked_add(*step) {
                    Some(following) => {
                        *next = following;
                        (*step > 0 && following > *last) || (*step < 0 && following < *last)
                    }
                    None => true,
                };
                if done {
                    self.sequences.pop();
                }
                self.set_definition(&variable, value.as_bytes());
            }
            SequenceKind::List {
                parameters,
                value_sets,
            } => {
                let values = value_sets.pop_front().unwrap_or_default();
                let parameters = parameters.clone();
                if value_sets.is_empty() {
                    self.sequences.pop();
                }
                for (parameter, value) in parameters.iter().zip(values) {
                    self.set_definition(parameter, &value);
                }
            }
        }
        text
    }
}
