//! Traffic counters and rates of a service or destination
//! (`IPVS_STATS_ATTR_*`, nested in `IPVS_SVC_ATTR_STATS[64]` and
//! `IPVS_DEST_ATTR_STATS[64]`).
//!
//! The kernel sends both nests in every reply. In the old one
//! (`..._ATTR_STATS`) the counters and rates are truncated to 32 bits, except
//! the byte counters; the newer one (`..._ATTR_STATS64`) carries everything as
//! u64. [`Statistics`] prefers the 64-bit nest.

mod attribute;

pub use attribute::{Stats64Attribute, StatsAttribute};

use netlink_packet_core::{DecodeError, NlasIterator, Parseable};

/// Counters and rates of a service or destination, as 64-bit values.
///
/// Rates are the kernel's estimator output: per second, averaged over a few
/// seconds (bytes per second for the `_bytes_rate` fields).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Statistics {
    /// Connections scheduled.
    pub connections: u64,
    pub incoming_packets: u64,
    pub outgoing_packets: u64,
    pub incoming_bytes: u64,
    pub outgoing_bytes: u64,
    /// Connections per second.
    pub connection_rate: u64,
    /// Incoming packets per second.
    pub incoming_packet_rate: u64,
    /// Outgoing packets per second.
    pub outgoing_packet_rate: u64,
    /// Incoming bytes per second.
    pub incoming_byte_rate: u64,
    /// Outgoing bytes per second.
    pub outgoing_byte_rate: u64,
}

impl Statistics {
    /// Collect the 32-bit nest. Missing counters stay 0: the kernel always
    /// sends all of them, and a partial nest is not worth failing a dump over.
    pub fn from_attributes(attributes: &[StatsAttribute]) -> Self {
        let mut statistics = Statistics::default();
        for attribute in attributes {
            statistics.add(attribute);
        }
        statistics
    }

    pub fn from_attributes64(attributes: &[Stats64Attribute]) -> Self {
        let mut statistics = Statistics::default();
        for attribute in attributes {
            statistics.add64(attribute);
        }
        statistics
    }

    /// Reads an `..._ATTR_STATS` nest straight from its bytes, attribute by
    /// attribute, without gathering them in a list first.
    pub(crate) fn decode(nest: &[u8]) -> Result<Self, DecodeError> {
        let mut statistics = Statistics::default();
        for attribute in NlasIterator::new(nest) {
            statistics.add(&StatsAttribute::parse(&attribute?)?);
        }
        Ok(statistics)
    }

    /// [`Statistics::decode`] of an `..._ATTR_STATS64` nest.
    pub(crate) fn decode64(nest: &[u8]) -> Result<Self, DecodeError> {
        let mut statistics = Statistics::default();
        for attribute in NlasIterator::new(nest) {
            statistics.add64(&Stats64Attribute::parse(&attribute?)?);
        }
        Ok(statistics)
    }

    fn add(&mut self, attribute: &StatsAttribute) {
        match *attribute {
            StatsAttribute::Connections(v) => self.connections = v.into(),
            StatsAttribute::IncomingPackets(v) => self.incoming_packets = v.into(),
            StatsAttribute::OutgoingPackets(v) => self.outgoing_packets = v.into(),
            StatsAttribute::IncomingBytes(v) => self.incoming_bytes = v,
            StatsAttribute::OutgoingBytes(v) => self.outgoing_bytes = v,
            StatsAttribute::ConnectionRate(v) => self.connection_rate = v.into(),
            StatsAttribute::IncomingPacketRate(v) => self.incoming_packet_rate = v.into(),
            StatsAttribute::OutgoingPacketRate(v) => self.outgoing_packet_rate = v.into(),
            StatsAttribute::IncomingByteRate(v) => self.incoming_byte_rate = v.into(),
            StatsAttribute::OutgoingByteRate(v) => self.outgoing_byte_rate = v.into(),
            StatsAttribute::Padding(_) | StatsAttribute::Other(_) => {}
        }
    }

    fn add64(&mut self, attribute: &Stats64Attribute) {
        match *attribute {
            Stats64Attribute::Connections(v) => self.connections = v,
            Stats64Attribute::IncomingPackets(v) => self.incoming_packets = v,
            Stats64Attribute::OutgoingPackets(v) => self.outgoing_packets = v,
            Stats64Attribute::IncomingBytes(v) => self.incoming_bytes = v,
            Stats64Attribute::OutgoingBytes(v) => self.outgoing_bytes = v,
            Stats64Attribute::ConnectionRate(v) => self.connection_rate = v,
            Stats64Attribute::IncomingPacketRate(v) => self.incoming_packet_rate = v,
            Stats64Attribute::OutgoingPacketRate(v) => self.outgoing_packet_rate = v,
            Stats64Attribute::IncomingByteRate(v) => self.incoming_byte_rate = v,
            Stats64Attribute::OutgoingByteRate(v) => self.outgoing_byte_rate = v,
            Stats64Attribute::Padding(_) | Stats64Attribute::Other(_) => {}
        }
    }

    /// The statistics of an object whose reply carried these nests: the
    /// 64-bit one when present, it is not truncated.
    pub(crate) fn preferred(stats: Option<Self>, stats64: Option<Self>) -> Option<Self> {
        stats64.or(stats)
    }

    pub fn to_attributes64(&self) -> Vec<Stats64Attribute> {
        vec![
            Stats64Attribute::Connections(self.connections),
            Stats64Attribute::IncomingPackets(self.incoming_packets),
            Stats64Attribute::OutgoingPackets(self.outgoing_packets),
            Stats64Attribute::IncomingBytes(self.incoming_bytes),
            Stats64Attribute::OutgoingBytes(self.outgoing_bytes),
            Stats64Attribute::ConnectionRate(self.connection_rate),
            Stats64Attribute::IncomingPacketRate(self.incoming_packet_rate),
            Stats64Attribute::OutgoingPacketRate(self.outgoing_packet_rate),
            Stats64Attribute::IncomingByteRate(self.incoming_byte_rate),
            Stats64Attribute::OutgoingByteRate(self.outgoing_byte_rate),
        ]
    }

    /// The 32-bit nest, truncating like the kernel's `(u32)` casts.
    pub fn to_attributes(&self) -> Vec<StatsAttribute> {
        vec![
            StatsAttribute::Connections(self.connections as u32),
            StatsAttribute::IncomingPackets(self.incoming_packets as u32),
            StatsAttribute::OutgoingPackets(self.outgoing_packets as u32),
            StatsAttribute::IncomingBytes(self.incoming_bytes),
            StatsAttribute::OutgoingBytes(self.outgoing_bytes),
            StatsAttribute::ConnectionRate(self.connection_rate as u32),
            StatsAttribute::IncomingPacketRate(self.incoming_packet_rate as u32),
            StatsAttribute::OutgoingPacketRate(self.outgoing_packet_rate as u32),
            StatsAttribute::IncomingByteRate(self.incoming_byte_rate as u32),
            StatsAttribute::OutgoingByteRate(self.outgoing_byte_rate as u32),
        ]
    }
}

#[cfg(test)]
mod tests;
