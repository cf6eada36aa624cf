//! Small readers and writers shared by the attribute modules.

use netlink_packet_core::{DecodeError, Emitable, Nla, NlaBuffer, NlasIterator, Parseable};

/// Parses every attribute of a nest's payload (or of a message's
/// attributes).
pub(super) fn parse_nested<T>(payload: &[u8]) -> Result<Vec<T>, DecodeError>
where
    T: for<'a> Parseable<NlaBuffer<&'a [u8]>>,
{
    NlasIterator::new(payload)
        .map(|attribute| attribute.and_then(|attribute| T::parse(&attribute)))
        .collect()
}

/// The bytes `attributes` take, headers and padding included.
pub(super) fn nested_length<T: Nla>(attributes: &[T]) -> usize {
    attributes.buffer_len()
}

pub(super) fn emit_nested<T: Nla>(attributes: &[T], buffer: &mut [u8]) {
    attributes.emit(buffer)
}

/// A string value's length: libnftnl and the kernel put names with their
/// terminating NUL (`mnl_attr_put_strz`, `nla_put_string`).
pub(super) fn string_length(value: &str) -> usize {
    value.len() + 1
}

pub(super) fn emit_string(buffer: &mut [u8], value: &str) {
    buffer[..value.len()].copy_from_slice(value.as_bytes());
    buffer[value.len()] = 0;
}

/// A NUL-terminated string value. Without its NUL it would be written
/// back with one, so it is refused rather than changed.
pub(super) fn parse_string(payload: &[u8]) -> Result<String, DecodeError> {
    let Some((0, text)) = payload.split_last() else {
        return Err(DecodeError::from("string without its terminating NUL"));
    };
    Ok(String::from_utf8(text.to_vec())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_keep_their_nul_and_refuse_to_lose_it() {
        assert_eq!(parse_string(b"keepalived\0").unwrap(), "keepalived");
        assert!(parse_string(b"keepalived").is_err());
        assert!(parse_string(b"").is_err());
        let mut buffer = [0xff; 4];
        emit_string(&mut buffer, "out");
        assert_eq!(&buffer, b"out\0");
        assert_eq!(string_length("out"), 4);
    }
}
