//! Small helpers shared by the attribute modules.

use netlink_packet_core::{DecodeError, NlaBuffer, NlasIterator, Parseable};

/// Parse every attribute of a nested attribute's payload.
pub(crate) fn parse_nested<T>(payload: &[u8]) -> Result<Vec<T>, DecodeError>
where
    T: for<'a> Parseable<NlaBuffer<&'a [u8]>>,
{
    NlasIterator::new(payload)
        .map(|nla| nla.and_then(|nla| T::parse(&nla)))
        .collect()
}

/// Length of a string attribute value: the kernel's `nla_put_string` always
/// includes the terminating NUL, and its `NLA_NUL_STRING` policy requires it.
pub(crate) fn string_length(value: &str) -> usize {
    value.len() + 1
}

/// Write a NUL-terminated string attribute value.
pub(crate) fn emit_string(buffer: &mut [u8], value: &str) {
    buffer[..value.len()].copy_from_slice(value.as_bytes());
    buffer[value.len()] = 0;
}
