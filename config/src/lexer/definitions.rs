//! `$NAME=value` definitions, multi-line definitions and `$NAME` / `${NAME}`
//! substitution: keepalived's `check_definition`, `find_definition`,
//! `set_definition` and `replace_param`, ported byte for byte because their
//! quirks decide what keepalived reads.

use std::rc::Rc;

use super::Lexer;
use super::text::{Cell, Text, at, covering, find_byte, is_blank};
use crate::diagnostic::Diagnostic;
use crate::syntax::Span;

/// The predefined definitions computed at each use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    /// The directory of the file being read (keepalived: `getcwd()`, and it
    /// `chdir()`s into each included file's directory).
    Pwd,
    /// The config id (`-i`, default the host name up to the first dot).
    Instance,
    /// `${_RANDOM [MIN [MAX]]}`.
    Random,
}

#[derive(Debug, Clone)]
pub(crate) struct Definition {
    pub name: Vec<u8>,
    /// Shared so that a multi-line expansion in progress keeps reading the
    /// value it started with even if the definition is redefined meanwhile
    /// (keepalived frees the old value and reads freed memory).
    pub value: Rc<Vec<u8>>,
    /// Lines of a multi-line value are separated by `\n`.
    pub multiline: bool,
    pub builtin: Option<Builtin>,
    /// How many numeric parameters `${NAME a b}` may carry (2 for `_RANDOM`).
    pub max_params: u32,
}

impl Definition {
    fn plain(name: &[u8], value: &[u8]) -> Self {
        Definition {
            name: name.to_vec(),
            value: Rc::new(value.to_vec()),
            multiline: false,
            builtin: None,
            max_params: 0,
        }
    }
}

/// keepalived's standard definitions (`set_std_definitions`). 2.2.7 has no
/// `_ENV`: `${_ENV}` stays literal there, and here.
pub(crate) fn standard_definitions() -> Vec<Definition> {
    let builtin = |name: &[u8], builtin, max_params| Definition {
        builtin: Some(builtin),
        max_params,
        ..Definition::plain(name, b"")
    };
    vec![
        builtin(b"_PWD", Builtin::Pwd, 0),
        builtin(b"_INSTANCE", Builtin::Instance, 0),
        builtin(b"_RANDOM", Builtin::Random, 2),
        // Replaced by `#` and `!`, but keepalived 2.2.7 runs its comment
        // removal again after substituting, so outside double quotes they
        // still start a comment (verified with keepalived 2.2.7).
        Definition::plain(b"_HASH", b"#"),
        Definition::plain(b"_BANG", b"!"),
    ]
}

/// Where a multi-line definition's expansion has got to (keepalived's
/// `next_ptr`).
#[derive(Debug, Clone)]
pub(crate) struct Cursor {
    pub value: Rc<Vec<u8>>,
    pub offset: usize,
    /// The `$NAME` use every expanded line points at.
    pub span: Span,
    /// The multi-line definitions this expansion is inside, itself
    /// included: a definition met again in its own expansion recurses.
    pub ancestry: Rc<Vec<usize>>,
}

/// A `$NAME` / `${NAME params}` use that names a definition.
struct Use {
    index: usize,
    name_length: usize,
    /// First and last byte of the numeric parameters.
    parameters: Option<(usize, usize)>,
}

pub(crate) fn is_name_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_'
}

pub(crate) fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// At most this many substitutions for one line: `$A=$A` makes keepalived
/// substitute forever (it rescans the replacement in place).
pub(super) const SUBSTITUTION_LIMIT: usize = 10_000;

/// Multi-line definitions nested deeper than this are taken to recurse.
const MULTILINE_DEPTH_LIMIT: usize = 64;

impl Lexer<'_> {
    /// keepalived's `find_definition` for a use: `name_at` is just after the
    /// `$`.
    fn find_use(&self, buffer: &[Cell], name_at: usize) -> Option<Use> {
        let mut name = name_at;
        let using_braces = at(buffer, name) == b'{';
        if using_braces {
            name += 1;
        }
        if !is_name_start(at(buffer, name)) {
            return None;
        }
        let mut length = 1;
        let mut position = name + 1;
        while is_name_byte(at(buffer, position)) {
            length += 1;
            position += 1;
        }
        let mut parameter_start = None;
        let mut parameter_end = 0;
        if using_braces {
            // `${NAME 1 2}`: digits and spaces, not ending with a space; but
            // `${NAME }` (spaces, no digits) is accepted as `${NAME}`.
            while at(buffer, position) == b' ' || at(buffer, position).is_ascii_digit() {
                if at(buffer, position) != b' ' {
                    parameter_start.get_or_insert(position);
                    parameter_end = position;
                }
                position += 1;
            }
            if parameter_start.is_some() && parameter_end + 1 != position {
                return None;
            }
            if at(buffer, position) != b'}' {
                return None;
            }
        } else if !matches!(at(buffer, position), b' ' | b'\t' | b',' | b')' | 0) {
            // `$NAME` must be followed by white space, `,`, `)` or the end of
            // the line: `$NAME.x` is left alone.
            return None;
        }
        // A multi-line definition only expands where the use ends the line.
        let allow_multiline = if using_braces {
            at(buffer, name + length + 1) == 0
        } else {
            at(buffer, name + length) == 0
        };
        let name_cells = &buffer[name..name + length];
        let index = self.definitions.iter().position(|definition| {
            definition.name.len() == length
                && (allow_multiline || !definition.multiline)
                && definition
                    .name
                    .iter()
                    .zip(name_cells)
                    .all(|(byte, cell)| *byte == cell.byte)
        })?;
        if parameter_start.is_some() && self.definitions[index].max_params == 0 {
            return None;
        }
        Some(Use {
            index,
            name_length: length,
            parameters: parameter_start.map(|start| (start, parameter_end)),
        })
    }

    /// keepalived's `set_definition` (used by `~SEQ` and `~LST`): replaces
    /// the value of an existing definition, keeping its multi-line flag
    /// (quirk reproduced), or adds one.
    pub(super) fn set_definition(&mut self, name: &[u8], value: &[u8]) {
        let existing = if name.first().is_some_and(|&byte| is_name_start(byte)) {
            self.definitions
                .iter()
                .position(|definition| definition.name == name)
        } else {
            None
        };
        match existing {
            Some(index) => {
                let definition = &mut self.definitions[index];
                definition.value = Rc::new(value.to_vec());
                definition.builtin = None;
            }
            None => self.definitions.push(Definition::plain(name, value)),
        }
    }

    /// keepalived's `check_definition`: `$NAME=value` at the start of the
    /// line (no space before `=`). Returns the definition's index.
    pub(super) fn check_definition(&mut self, buffer: &[Cell]) -> Option<usize> {
        if at(buffer, 0) != b'$' || !is_name_start(at(buffer, 1)) {
            return None;
        }
        let mut position = 2;
        while position < buffer.len() && buffer[position].byte != b'=' {
            if !is_name_byte(buffer[position].byte) {
                return None;
            }
            position += 1;
        }
        if at(buffer, position) != b'=' {
            return None;
        }
        let name: Vec<u8> = buffer[1..position].iter().map(|cell| cell.byte).collect();
        position += 1;
        while position < buffer.len() && is_blank(buffer[position].byte) {
            position += 1;
        }
        let mut value: Vec<u8> = buffer[position..].iter().map(|cell| cell.byte).collect();
        let multiline = value.last() == Some(&b'\\');
        if multiline {
            value.pop();
            while value.last().is_some_and(|&byte| is_blank(byte)) {
                value.pop();
            }
            // The first line ends with the line separator, unless it is
            // empty (`$NAME= \`).
            if !value.is_empty() {
                value.push(b'\n');
            }
        }
        let index = match self
            .definitions
            .iter()
            .position(|definition| definition.name == name)
        {
            Some(index) => index,
            None => {
                self.definitions.push(Definition::plain(&name, b""));
                self.definitions.len() - 1
            }
        };
        let definition = &mut self.definitions[index];
        definition.value = Rc::new(value);
        definition.multiline = multiline;
        // Redefining a standard definition overrides it.
        definition.builtin = None;
        Some(index)
    }

    /// One more line of a multi-line definition (keepalived's
    /// `multiline_param_def` branch of `read_line`). Returns whether the
    /// definition goes on.
    pub(super) fn continue_definition(&mut self, index: usize, mut line: Vec<u8>) -> bool {
        let goes_on = line.last() == Some(&b'\\');
        let definition = &mut self.definitions[index];
        if goes_on {
            line.pop();
            while line.last().is_some_and(|&byte| is_blank(byte)) {
                line.pop();
            }
            line.push(b'\n');
        } else if definition.value.is_empty() {
            // `$NAME= \` followed by one line: an ordinary definition.
            definition.multiline = false;
        }
        // Blank continuation lines are not added.
        if line.len() >= 2 || (!line.is_empty() && !goes_on) {
            Rc::make_mut(&mut definition.value).extend_from_slice(&line);
        }
        goes_on
    }

    /// A definition ends (a blank line, or the end of the input).
    pub(super) fn end_definition(&mut self, index: usize) {
        let definition = &mut self.definitions[index];
        if definition.value.is_empty() {
            definition.multiline = false;
        }
    }

    /// keepalived's `replace_param`: substitutes every `$NAME` / `${NAME}`
    /// in `buffer`, rescanning each replacement in place (so substitution
    /// is recursive), stopping after a value that starts with `~` (so that a
    /// substituted `~SEQ` can run). `multiline` is keepalived's
    /// `next_ptr`: set when a multi-line definition starts expanding.
    /// Returns whether anything was substituted.
    pub(super) fn replace_parameters(
        &mut self,
        buffer: &mut Text,
        maximum_length: usize,
        multiline: &mut Option<Cursor>,
    ) -> bool {
        let mut search_from = 0;
        let mut length_used = buffer.len() as isize;
        let mut next: Option<Cursor> = None;
        let mut found = false;
        let mut multiline_cursor = multiline.clone();
        while let Some(dollar) = find_byte(buffer, search_from, b'$') {
            if at(buffer, dollar + 1) == 0 {
                break;
            }
            let Some(found_use) = self.find_use(buffer, dollar + 1) else {
                search_from = dollar + 1;
                continue;
            };
            self.substitutions += 1;
            if self.substitutions > SUBSTITUTION_LIMIT {
                let span = covering(&buffer[dollar..]).unwrap_or(buffer[dollar].span);
                self.diagnostics.push(Diagnostic::error(
                    span,
                    format!(
                        "substitution does not end (a definition that contains itself?): stopped after {SUBSTITUTION_LIMIT} substitutions on one line"
                    ),
                ));
                return false;
            }
            found = true;
            let extra_braces = if at(buffer, dollar + 1) == b'{' { 2 } else { 0 };
            next = multiline_cursor.clone();
            let definition = &self.definitions[found_use.index];
            let (is_multiline, builtin, stored_value) = (
                definition.multiline,
                definition.builtin,
                definition.value.clone(),
            );
            if is_multiline && self.line_ancestry.contains(&found_use.index) {
                // A multi-line definition used in its own expansion, even as
                // its last line (where keepalived's stack does not grow):
                // keepalived expands it for ever.
                let span = covering(&buffer[dollar..]).unwrap_or(buffer[dollar].span);
                let name =
                    String::from_utf8_lossy(&self.definitions[found_use.index].name).into_owned();
                self.diagnostics.push(Diagnostic::error(
                    span,
                    format!("multi-line definition '${name}' is used in its own expansion; keepalived would expand it for ever; stopped here"),
                ));
                self.multiline_stack.clear();
                self.multiline_sequence_depth = 0;
                *multiline = None;
                self.substitutions = SUBSTITUTION_LIMIT + 1;
                return false;
            }
            if is_multiline && self.multiline_stack.len() >= MULTILINE_DEPTH_LIMIT {
                // A multi-line definition that uses itself: keepalived nests
                // expansions until it runs out of memory.
                let span = covering(&buffer[dollar..]).unwrap_or(buffer[dollar].span);
                self.diagnostics.push(Diagnostic::error(
                    span,
                    format!(
                        "multi-line definitions nested more than {MULTILINE_DEPTH_LIMIT} deep (one that uses itself?); the expansion stops here"
                    ),
                ));
                self.multiline_stack.clear();
                self.multiline_sequence_depth = 0;
                *multiline = None;
                // Drop this line and what would be split off it.
                self.substitutions = SUBSTITUTION_LIMIT + 1;
                return false;
            }
            if is_multiline {
                if let Some(cursor) = &multiline_cursor {
                    self.multiline_stack
                        .push((cursor.clone(), self.multiline_sequence_depth));
                }
                self.multiline_sequence_depth = self.sequences.len();
            }

            let mut replaced_length = found_use.name_length;
            if let Some((_, parameter_end)) = found_use.parameters {
                replaced_length =
                    parameter_end - (dollar + 1) + if extra_braces > 0 { 0 } else { 1 };
            }
            let total = replaced_length + 1 + extra_braces;
            let use_span = covering(&buffer[dollar..(dollar + total).min(buffer.len())])
                .unwrap_or(buffer[dollar].span);

            let value: Rc<Vec<u8>> = match builtin {
                None => stored_value,
                Some(builtin) => {
                    Rc::new(self.builtin_value(builtin, buffer, found_use.parameters, use_span))
                }
            };
            let replacing: Vec<u8> = if is_multiline {
                let line_end = value
                    .iter()
                    .position(|&byte| byte == b'\n')
                    .unwrap_or(value.len());
                let mut ancestry = self.line_ancestry.as_ref().clone();
                ancestry.push(found_use.index);
                let cursor = Cursor {
                    value: value.clone(),
                    offset: line_end + 1,
                    span: use_span,
                    ancestry: Rc::new(ancestry),
                };
                next = Some(cursor.clone());
                multiline_cursor = Some(cursor);
                value[..line_end].to_vec()
            } else {
                value.to_vec()
            };
            // The complete multi-line replacement value is in `value`; the
            // `total` computed above is keepalived's (name only for a
            // multi-line use, which has no parameters).
            let total = if is_multiline {
                found_use.name_length + 1 + extra_braces
            } else {
                total
            };

            if length_used + replacing.len() as isize - total as isize >= maximum_length as isize {
                self.diagnostics.push(Diagnostic::error(
                    use_span,
                    format!(
                        "substituting this makes the line longer than keepalived's {} bytes; keepalived stops substituting here",
                        maximum_length - 1
                    ),
                ));
                return false;
            }

            if total != replacing.len() {
                if total < replacing.len() || found_use.parameters.is_none() {
                    let end = (dollar + total).min(buffer.len());
                    let filler = Cell {
                        byte: 0,
                        span: use_span,
                    };
                    buffer.splice(dollar..end, std::iter::repeat_n(filler, replacing.len()));
                } else {
                    // keepalived 2.2.7 bug reproduced: when `${_RANDOM MIN
                    // MAX}` shrinks the line, its copy loop stops at the byte
                    // after the `}` instead of the end of the line, so the
                    // text after the use is doubled up ("e${_RANDOM 5 5}r"
                    // reads "e5r_RANDOM 5 5}r"; verified).
                    let (_, parameter_end) = found_use.parameters.unwrap_or_default();
                    let stop = parameter_end + if extra_braces > 0 { 2 } else { 1 };
                    // At the end of the line the copy includes the
                    // terminator and all is well.
                    let garbled = stop < buffer.len();
                    let mut source = dollar + total - replacing.len();
                    let mut destination = dollar;
                    loop {
                        match buffer.get(source).copied() {
                            Some(cell) => buffer[destination] = cell,
                            None => {
                                buffer.truncate(destination);
                                break;
                            }
                        }
                        if source == stop {
                            break;
                        }
                        destination += 1;
                        source += 1;
                    }
                    if garbled {
                        self.diagnostics.push(Diagnostic::warning(
                            use_span,
                            "keepalived 2.2.7 garbles the text that follows `${_RANDOM MIN MAX}` on the same line; reproduced",
                        ));
                    }
                }
                length_used += replacing.len() as isize - total as isize;
            }
            for (offset, &byte) in replacing.iter().enumerate() {
                buffer[dollar + offset] = Cell {
                    byte,
                    span: use_span,
                };
            }
            search_from = dollar;
            let first_non_blank = value.iter().find(|&&byte| !is_blank(byte));
            if first_non_blank == Some(&b'~') {
                break;
            }
        }
        if found {
            *multiline = next;
        }
        found
    }

    fn builtin_value(
        &mut self,
        builtin: Builtin,
        buffer: &[Cell],
        parameters: Option<(usize, usize)>,
        span: Span,
    ) -> Vec<u8> {
        match builtin {
            Builtin::Pwd => self.current_directory_text().into_bytes(),
            Builtin::Instance => self.config_id.clone().into_bytes(),
            Builtin::Random => {
                let (mut minimum, mut maximum) = (0u64, 32767u64);
                if let Some((start, end)) = parameters {
                    let text: Vec<u8> = buffer[start..=end].iter().map(|cell| cell.byte).collect();
                    let mut numbers = text
                        .split(|&byte| byte == b' ')
                        .filter(|part| !part.is_empty())
                        .map(|part| {
                            std::str::from_utf8(part)
                                .ok()
                                .and_then(|digits| digits.parse::<u64>().ok())
                                .unwrap_or(u64::MAX)
                        });
                    if let Some(first) = numbers.next() {
                        minimum = first;
                    }
                    if let Some(second) = numbers.next() {
                        maximum = second;
                    }
                    if numbers.next().is_some() {
                        self.diagnostics.push(Diagnostic::warning(
                            span,
                            "too many parameters for ${_RANDOM}: keepalived uses the first two",
                        ));
                    }
                }
                if maximum < minimum {
                    self.diagnostics.push(Diagnostic::warning(
                        span,
                        format!(
                            "${{_RANDOM {minimum} {maximum}}}: the maximum is below the minimum"
                        ),
                    ));
                }
                let value = if maximum >= minimum {
                    let range = maximum - minimum;
                    if range == u64::MAX {
                        self.next_random()
                    } else {
                        minimum + self.next_random() % (range + 1)
                    }
                } else {
                    minimum
                };
                // keepalived prints the value into a buffer as wide as MAX.
                let width = maximum.to_string().len();
                let mut text = value.to_string();
                text.truncate(width);
                text.into_bytes()
            }
        }
    }

    fn next_random(&mut self) -> u64 {
        // xorshift64*: keepalived uses random(); only the range matters.
        let mut state = self.random_state;
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        self.random_state = state;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33
    }
}
