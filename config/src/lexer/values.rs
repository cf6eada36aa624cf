//! keepalived's value syntax shared by many keywords: `<BOOL>` and
//! `<TIMER>` (seconds with up to six decimal places, read as microseconds).

/// Why a value was refused, in keepalived's terms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("negative number '{0}'")]
    Negative(String),
    #[error("invalid number '{0}'")]
    Invalid(String),
    #[error("number '{0}' outside unsigned decimal range")]
    OutOfRange(String),
    /// keepalived reports it but still uses the value, rounded.
    #[error("number '{text}' has too many decimal places")]
    TooManyDecimalPlaces { text: String, rounded: u64 },
}

/// keepalived's `check_true_false`: exactly `on|true|yes` or `off|false|no`
/// (lower case only).
pub fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "true" | "on" | "yes" => Some(true),
        "false" | "off" | "no" => Some(false),
        _ => None,
    }
}

/// Microseconds in a second: keepalived's `TIMER_HZ`.
pub const MICROSECONDS_PER_SECOND: u64 = 1_000_000;

/// A `<TIMER>`: keepalived's `read_timer`, i.e.
/// `read_decimal_unsigned_long_func(text, shift = 6)`: `2.71828` is
/// 2,718,280 µs; `.5` and `5.` are accepted; a seventh decimal place is an
/// error that keepalived still rounds and uses (so is it here, in
/// [`ValueError::TooManyDecimalPlaces`]). Range checks are the keyword's.
pub fn parse_timer(text: &str) -> Result<u64, ValueError> {
    parse_decimal(text, 6)
}

/// `read_decimal_unsigned_long_func` for any number of decimal places.
pub fn parse_decimal(text: &str, shift: u32) -> Result<u64, ValueError> {
    if text.starts_with('-') {
        return Err(ValueError::Negative(text.to_string()));
    }
    let (integer, fraction) = match text.split_once('.') {
        Some((integer, fraction)) => (integer, fraction),
        None => (text, ""),
    };
    let mut too_many = false;
    let mut round_up = false;
    let mut fraction = fraction.to_string();
    if fraction.len() > shift as usize {
        too_many = true;
        round_up = fraction.as_bytes()[shift as usize] >= b'5';
        fraction.truncate(shift as usize);
    }
    while fraction.len() < shift as usize {
        fraction.push('0');
    }
    // strtoull: leading white space and a '+' are accepted.
    let digits = format!("{integer}{fraction}");
    let digits = digits.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let unsigned = digits.strip_prefix('+').unwrap_or(digits);
    if unsigned.starts_with('-') {
        return Err(ValueError::Negative(text.to_string()));
    }
    if unsigned.is_empty() && !digits.is_empty()
        || !unsigned.bytes().all(|byte| byte.is_ascii_digit())
    {
        return Err(ValueError::Invalid(text.to_string()));
    }
    let value = if unsigned.is_empty() {
        0
    } else {
        unsigned
            .parse::<u64>()
            .map_err(|_| ValueError::OutOfRange(text.to_string()))?
    };
    let value = if round_up {
        value.saturating_add(1)
    } else {
        value
    };
    if too_many {
        return Err(ValueError::TooManyDecimalPlaces {
            text: text.to_string(),
            rounded: value,
        });
    }
    Ok(value)
}
