//! Readers for keepalived's kinds of values, each reporting a precise
//! diagnostic at the offending word and returning `None` on failure (the
//! caller then keeps the default, as keepalived does after its message).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use nom::Parser;
use nom::branch::alt;
use nom::bytes::complete::tag;
use nom::character::complete::{char, digit1};
use nom::combinator::{all_consuming, opt, recognize};
use nom::sequence::preceded;

use super::Context;
use crate::model::Prefix;
use crate::syntax::Word;

/// An integer in `minimum..=maximum`. keepalived reads integers with
/// `strtol`/`strtoul` in base 10 and rejects trailing text.
pub fn integer<T: TryFrom<i128>>(
    context: &mut Context,
    word: &Word,
    minimum: i128,
    maximum: i128,
    what: impl std::fmt::Display,
) -> Option<T> {
    let text = word.text.as_str();
    let parsed: Option<i128> = match plain_digits(text) {
        // Nearly every number written: no sign, a few digits.
        Some(value) => Some(i128::from(value)),
        None => {
            let shape: nom::IResult<&str, &str> =
                all_consuming(recognize((opt(alt((char('-'), char('+')))), digit1))).parse(text);
            shape.ok().and_then(|_| text.parse().ok())
        }
    };
    // keepalived's unsigned readers refuse any '-', even "-0".
    if minimum >= 0 && text.starts_with('-') && parsed.is_some() {
        context.error(
            word.span,
            format!("negative number '{text}' for {what}: expected {minimum} to {maximum}"),
        );
        return None;
    }
    match parsed {
        Some(value) if (minimum..=maximum).contains(&value) => T::try_from(value).ok(),
        Some(_) => {
            context.error(
                word.span,
                format!("{what} '{text}' is out of range: expected {minimum} to {maximum}"),
            );
            None
        }
        None => {
            context.error(
                word.span,
                format!("invalid number '{text}' for {what}: expected an integer from {minimum} to {maximum}"),
            );
            None
        }
    }
}

/// The value of `text` if it is 1 to 18 decimal digits and nothing else
/// (no sign): the common case, read without the general parser.
fn plain_digits(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 18 {
        return None;
    }
    text.bytes().try_fold(0u64, |value, byte| {
        byte.is_ascii_digit()
            .then(|| value * 10 + u64::from(byte - b'0'))
    })
}

/// Splits `123.456` into whole and fractional digits (keepalived, like
/// `strtod`, also takes `+5`, `.5` and `5.`).
fn decimal_parts(text: &str) -> Option<(&str, &str)> {
    if text.bytes().all(|byte| byte.is_ascii_digit()) && !text.is_empty() {
        // Whole seconds, the common case, without the general parser.
        return Some((text, ""));
    }
    let parsed: nom::IResult<&str, (Option<char>, &str, Option<&str>)> = all_consuming((
        opt(char('+')),
        alt((digit1, tag(""))),
        opt(preceded(char('.'), alt((digit1, tag(""))))),
    ))
    .parse(text);
    let (_, (_, whole, fraction)) = parsed.ok()?;
    let fraction = fraction.unwrap_or("");
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    Some((whole, fraction))
}

/// A non-negative decimal number of seconds with keepalived's microsecond
/// resolution (`read_decimal_unsigned_strvec` with 6 digits: more decimal
/// places are an error, not rounded).
pub fn seconds(
    context: &mut Context,
    word: &Word,
    minimum: Duration,
    maximum: Duration,
    what: &str,
) -> Option<Duration> {
    let text = word.text.as_str();
    let Some((whole, fraction)) = decimal_parts(text) else {
        context.error(
            word.span,
            format!("invalid number '{text}' for {what}: expected seconds, e.g. 5 or 0.5"),
        );
        return None;
    };
    if fraction.len() > 6 {
        context.error(
            word.span,
            format!("number '{text}' has too many decimal places: {what} has a resolution of one microsecond"),
        );
        return None;
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        match whole.parse() {
            Ok(value) => value,
            Err(_) => {
                context.error(word.span, format!("{what} '{text}' is out of range"));
                return None;
            }
        }
    };
    // The fraction's digits padded with zeros to six (microseconds).
    let micros = (0..6).fold(0u32, |micros, index| {
        let digit = fraction.as_bytes().get(index).map_or(0, |byte| byte - b'0');
        micros * 10 + u32::from(digit)
    });
    let value = Duration::from_secs(whole) + Duration::from_micros(u64::from(micros));
    if value < minimum || value > maximum {
        context.error(
            word.span,
            format!(
                "{what} '{text}' is out of range: expected {} to {} seconds",
                show_seconds(minimum),
                show_seconds(maximum)
            ),
        );
        return None;
    }
    Some(value)
}

/// keepalived's `<TIMER>`: decimal seconds, at most `u32::MAX` seconds.
pub fn timer(context: &mut Context, word: &Word, what: &str) -> Option<Duration> {
    seconds(context, word, Duration::ZERO, TIMER_MAXIMUM, what)
}

/// keepalived's largest timer: `ULONG_MAX - 1` microseconds.
pub const TIMER_MAXIMUM: Duration = Duration::from_micros(u64::MAX - 1);

/// `delay_loop`: more than zero.
pub fn delay_loop(context: &mut Context, word: &Word) -> Option<Duration> {
    seconds(
        context,
        word,
        Duration::from_micros(1),
        TIMER_MAXIMUM,
        "delay_loop",
    )
}

/// `connect_timeout`: kept in an unsigned int of microseconds by keepalived,
/// so at most 4294.967295 s.
pub fn connect_timeout(context: &mut Context, word: &Word) -> Option<Duration> {
    seconds(
        context,
        word,
        Duration::from_micros(1),
        Duration::from_micros(u32::MAX.into()),
        "connect_timeout",
    )
}

/// Whole seconds only (keepalived reads these with `strtoul`).
pub fn whole_seconds(
    context: &mut Context,
    word: &Word,
    minimum: u64,
    maximum: u64,
    what: &str,
) -> Option<Duration> {
    integer::<u64>(context, word, minimum.into(), maximum.into(), what).map(Duration::from_secs)
}

fn show_seconds(value: Duration) -> String {
    if value.subsec_micros() == 0 {
        value.as_secs().to_string()
    } else {
        format!("{}.{:06}", value.as_secs(), value.subsec_micros())
            .trim_end_matches('0')
            .to_string()
    }
}

/// keepalived's `<BOOL>` (`check_true_false`): exactly one of
/// true/on/yes or false/off/no.
pub fn boolean(context: &mut Context, word: &Word, what: &str) -> Option<bool> {
    match word.text.as_str() {
        "true" | "on" | "yes" => Some(true),
        "false" | "off" | "no" => Some(false),
        other => {
            context.error(
                word.span,
                format!(
                    "invalid {what} value '{other}': expected one of true, on, yes, false, off, no"
                ),
            );
            None
        }
    }
}

/// A keyword whose `<BOOL>` argument is optional: bare means true.
pub fn optional_boolean(context: &mut Context, word: Option<&Word>, what: &str) -> Option<bool> {
    match word {
        None => Some(true),
        Some(word) => boolean(context, word, what),
    }
}

/// An IPv4 or IPv6 address (keepalived's `inet_pton`: no `%scope`).
pub fn address(context: &mut Context, word: &Word, what: impl std::fmt::Display) -> Option<IpAddr> {
    match parse_address(&word.text) {
        Some(address) => Some(address),
        None => {
            context.error(
                word.span,
                format!(
                    "invalid {what} '{}': expected an IPv4 or IPv6 address",
                    word.text
                ),
            );
            None
        }
    }
}

pub fn parse_address(text: &str) -> Option<IpAddr> {
    if let Ok(address) = text.parse::<Ipv4Addr>() {
        return Some(IpAddr::V4(address));
    }
    text.parse::<Ipv6Addr>().ok().map(IpAddr::V6)
}

/// An address with an optional `/length` (the default length is the whole
/// address).
pub fn prefix(context: &mut Context, word: &Word, what: &str) -> Option<Prefix> {
    match parse_prefix(&word.text) {
        Ok(prefix) => Some(prefix),
        Err(reason) => {
            context.error(
                word.span,
                format!("invalid {what} '{}': {reason}", word.text),
            );
            None
        }
    }
}

pub fn parse_prefix(text: &str) -> Result<Prefix, String> {
    let (address_text, length_text) = match text.split_once('/') {
        Some((address, length)) => (address, Some(length)),
        None => (text, None),
    };
    let address = parse_address(address_text)
        .ok_or_else(|| "expected an IPv4 or IPv6 address".to_string())?;
    let maximum = if address.is_ipv4() { 32 } else { 128 };
    let length = match length_text {
        None => maximum,
        Some(length) => match length.parse::<u8>() {
            Ok(length) if length <= maximum => length,
            _ => return Err(format!("the prefix length must be 0 to {maximum}")),
        },
    };
    Ok(Prefix { address, length })
}

/// A TCP/UDP port, 0 to 65535 (keepalived reads it with `strtoul`; a service
/// name is not accepted).
pub fn port(context: &mut Context, word: &Word, what: impl std::fmt::Display) -> Option<u16> {
    integer(context, word, 0, 65535, what)
}

/// Keepalived's hex strings (`payload`, `require_reply`): free format,
/// spaces allowed between groups, a group of odd length takes a leading 0
/// (`Ab12f 3` is AB 12 0F 03). With `wildcards`, `x`/`X` nibbles match
/// anything and are returned as `None`.
pub fn hex_bytes(
    context: &mut Context,
    words: &[&Word],
    wildcards: bool,
    what: &str,
) -> Option<Vec<(Option<u8>, Option<u8>)>> {
    let mut bytes = Vec::new();
    for word in words {
        let mut nibbles: Vec<Option<u8>> = Vec::new();
        for character in word.text.chars() {
            match character.to_digit(16) {
                Some(value) => nibbles.push(Some(value as u8)),
                None if wildcards && (character == 'x' || character == 'X') => nibbles.push(None),
                None => {
                    context.error(
                        word.span,
                        format!(
                            "invalid {what} '{}': expected hexadecimal digits",
                            word.text
                        ),
                    );
                    return None;
                }
            }
        }
        if nibbles.len() % 2 == 1 {
            nibbles.insert(0, Some(0));
        }
        for pair in nibbles.chunks(2) {
            // keepalived 2.2.7 reads each byte into a signed char and takes
            // 0xff (-1) as its error value: "Invalid hex string".
            if pair == [Some(15), Some(15)] {
                context.error(
                    word.span,
                    format!("keepalived 2.2.7 cannot take the byte ff in {what} (it reads it as an error)"),
                );
                return None;
            }
            bytes.push((pair[0], pair[1]));
        }
    }
    Some(bytes)
}

/// A word from a fixed list (case-sensitive, as keepalived's `strcmp`).
pub fn choice<T: Copy>(
    context: &mut Context,
    word: &Word,
    choices: &[(&str, T)],
    what: &str,
) -> Option<T> {
    if let Some((_, value)) = choices.iter().find(|(name, _)| *name == word.text) {
        return Some(*value);
    }
    let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
    let mut message = format!(
        "invalid {what} '{}': expected one of {}",
        word.text,
        names.join(", ")
    );
    if let Some(best) = super::suggestion(&word.text, names.iter().copied()) {
        message.push_str(&format!(" (did you mean '{best}'?)"));
    }
    context.error(word.span, message);
    None
}
