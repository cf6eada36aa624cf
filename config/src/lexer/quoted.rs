//! keepalived's `alloc_strvec_quoted_escaped`: how keyword handlers that
//! take a command line (notify scripts, `misc_path`, track scripts...)
//! re-split their raw line, with `'` and `"` quotes and shell-like escapes.

/// Why a raw line could not be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuoteError {
    #[error("missing terminating {0}")]
    Unterminated(char),
    #[error("missing escaped character at the end")]
    TrailingBackslash,
}

/// Splits `text` the way keepalived's `alloc_strvec_quoted_escaped` does:
/// white space separates words; `"..."` and `'...'` quote (and may be glued
/// to other text: `a"b c"d` is one word `ab cd`); outside and inside quotes
/// `\a \b \E \f \n \r \t \v`, `\nnn` (octal, up to three digits), `\xHH...`
/// (any number of hex digits, kept modulo 256 like keepalived's `char`),
/// `\cC` (control character) and `\C` (C itself) are escapes.
pub fn split_quoted_escaped(text: &str) -> Result<Vec<Vec<u8>>, QuoteError> {
    let bytes = text.as_bytes();
    let byte = |index: usize| bytes.get(index).copied().unwrap_or(0);
    let is_white = |byte: u8| matches!(byte, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let mut words = Vec::new();
    let mut position = 0;
    let mut quote: u8 = 0;
    while position < bytes.len() {
        while position < bytes.len() && is_white(bytes[position]) {
            position += 1;
        }
        if position >= bytes.len() {
            break;
        }
        let mut word = Vec::new();
        while position < bytes.len() {
            let current = bytes[position];
            let special = match quote {
                b'"' => current == b'"' || current == b'\\',
                b'\'' => current == b'\'' || current == b'\\',
                _ => is_white(current) || matches!(current, b'\'' | b'"' | b'\\'),
            };
            if !special {
                word.push(current);
                position += 1;
                continue;
            }
            if current == b'\\' {
                position += 1;
                if position >= bytes.len() {
                    return Err(QuoteError::TrailingBackslash);
                }
                let escaped = bytes[position];
                let value: u8;
                if escaped == b'x' && byte(position + 1).is_ascii_hexdigit() {
                    let mut accumulated: u8 = 0;
                    position += 1;
                    while byte(position).is_ascii_hexdigit() {
                        let digit = (byte(position) as char).to_digit(16).unwrap_or(0) as u8;
                        accumulated = accumulated.wrapping_shl(4) | digit;
                        position += 1;
                    }
                    value = accumulated;
                } else if escaped == b'c' && position + 1 < bytes.len() {
                    value = bytes[position + 1] & 0x1f;
                    position += 2;
                } else if (b'0'..=b'7').contains(&escaped) {
                    let mut accumulated: u8 = escaped - b'0';
                    position += 1;
                    for _ in 0..2 {
                        if (b'0'..=b'7').contains(&byte(position)) {
                            accumulated = accumulated
                                .wrapping_shl(3)
                                .wrapping_add(byte(position) - b'0');
                            position += 1;
                        }
                    }
                    value = accumulated;
                } else {
                    value = match escaped {
                        b'a' => 0x07,
                        b'b' => 0x08,
                        b'E' => 0x1b,
                        b'f' => 0x0c,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'v' => 0x0b,
                        other => other,
                    };
                    position += 1;
                }
                word.push(value);
                continue;
            }
            if quote != 0 {
                // The closing quote.
                position += 1;
                quote = 0;
                continue;
            }
            if current == b'"' || current == b'\'' {
                quote = current;
                position += 1;
                continue;
            }
            // White space ends the word.
            break;
        }
        if quote != 0 {
            return Err(QuoteError::Unterminated(quote as char));
        }
        words.push(word);
    }
    Ok(words)
}
