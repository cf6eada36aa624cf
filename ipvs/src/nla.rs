//! Small helpers shared by the attribute modules.

use netlink_packet_core::{DecodeError, Nla, NlaBuffer, NlasIterator, Parseable};

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

/// The bytes `attributes` take, headers and padding included: what
/// netlink-packet-core's slice `buffer_len` gives, asking each attribute
/// for its length once instead of twice.
pub(crate) fn attributes_length<T: Nla>(attributes: &[T]) -> usize {
    attributes
        .iter()
        .map(|attribute| NLA_HEADER + align(attribute.value_len()))
        .sum()
}

/// Writes `attributes` one after the other: the bytes netlink-packet-core's
/// slice `emit` writes, with each attribute's length computed once.
///
/// The generic `Nla::emit` asks an attribute for its length four times and
/// a nest answers by summing its children, so nests cost a multiple of
/// their size at every level: most of the client's time in a large batch.
/// Nests here use these helpers for their children in turn.
pub(crate) fn emit_attributes<T: Nla>(attributes: &[T], buffer: &mut [u8]) {
    let mut offset = 0;
    for attribute in attributes {
        let value_length = attribute.value_len();
        let end = offset + NLA_HEADER + align(value_length);
        let slot = &mut buffer[offset..end];
        let mut header = NlaBuffer::new(&mut *slot);
        header.set_kind(attribute.kind());
        header.set_length((NLA_HEADER + value_length) as u16);
        let (value, padding) = slot[NLA_HEADER..].split_at_mut(value_length);
        attribute.emit_value(value);
        padding.fill(0);
        offset = end;
    }
}

/// `NLA_HDRLEN`.
const NLA_HEADER: usize = 4;

/// `NLA_ALIGN`: attributes start on 4-byte boundaries.
fn align(length: usize) -> usize {
    (length + 3) & !3
}
