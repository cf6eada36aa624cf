//! Reading the object nest of a reply (a service, a destination) straight
//! from its bytes, attribute by attribute, into the same fold that reads a
//! parsed attribute list: one meaning for every attribute, two ways in.

use netlink_packet_core::{ErrorContext, NlaBuffer, NlasIterator, Parseable};

use crate::message::{expect_command, find_attribute};
use crate::{IpvsCommand, ParseError, Statistics};

/// The attributes of one kind of object nest, gathered one at a time.
pub(crate) trait NestFields: Default {
    type Object;
    type Attribute: for<'a> Parseable<NlaBuffer<&'a [u8]>>;
    /// The command of the replies that carry the object.
    const COMMAND: IpvsCommand;
    /// The top-level attribute holding the nest, and its name.
    const NEST: (u16, &'static str);
    /// The statistics nests (32-bit, then 64-bit), decoded in place rather
    /// than as attribute lists, with what a malformed one is called.
    const STATS: (u16, &'static str);
    const STATS64: (u16, &'static str);

    fn add(&mut self, attribute: &Self::Attribute);
    /// The 32-bit (`wide` false) or 64-bit statistics.
    fn statistics(&mut self, wide: bool) -> &mut Option<Statistics>;
    fn finish(self) -> Result<Self::Object, ParseError>;
}

/// The object of a reply, from its command and attribute bytes.
pub(crate) fn decode_reply<Fields: NestFields>(
    command: IpvsCommand,
    attributes: &[u8],
) -> Result<Fields::Object, ParseError> {
    expect_command(command, Fields::COMMAND)?;
    let nest = find_attribute(attributes, Fields::NEST.0)?
        .ok_or(ParseError::MissingAttribute(Fields::NEST.1))?;
    let mut fields = Fields::default();
    for attribute in NlasIterator::new(nest) {
        let attribute = attribute?;
        let kind = attribute.kind();
        if kind == Fields::STATS.0 {
            let statistics = Statistics::decode(attribute.value()).context(Fields::STATS.1)?;
            *fields.statistics(false) = Some(statistics);
        } else if kind == Fields::STATS64.0 {
            let statistics = Statistics::decode64(attribute.value()).context(Fields::STATS64.1)?;
            *fields.statistics(true) = Some(statistics);
        } else {
            fields.add(&Fields::Attribute::parse(&attribute)?);
        }
    }
    fields.finish()
}
