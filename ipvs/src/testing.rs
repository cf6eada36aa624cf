//! Helpers for the unit tests.

use std::fmt::Debug;

use netlink_packet_core::{Emitable, Nla, NlaBuffer, Parseable};

/// Emit `attribute`, parse it back, check equality, and check that emitting
/// the parsed value reproduces the same bytes. Returns the bytes.
pub(crate) fn round_trip<T>(attribute: &T) -> Vec<u8>
where
    T: Nla + Debug + PartialEq + for<'a> Parseable<NlaBuffer<&'a [u8]>>,
{
    let mut bytes = vec![0; attribute.buffer_len()];
    attribute.emit(&mut bytes);
    let parsed = T::parse(&NlaBuffer::new_checked(&bytes[..]).unwrap()).unwrap();
    assert_eq!(&parsed, attribute);
    let mut again = vec![0; parsed.buffer_len()];
    parsed.emit(&mut again);
    assert_eq!(again, bytes);
    bytes
}

/// Parse one attribute from bytes.
pub(crate) fn parse<T>(bytes: &[u8]) -> Result<T, netlink_packet_core::DecodeError>
where
    T: for<'a> Parseable<NlaBuffer<&'a [u8]>>,
{
    T::parse(&NlaBuffer::new_checked(bytes)?)
}
