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
            match *attribute {
                StatsAttribute::Connections(v) => statistics.connections = v.into(),
                StatsAttribute::IncomingPackets(v) => statistics.incoming_packets = v.into(),
                StatsAttribute::OutgoingPackets(v) => statistics.outgoing_packets = v.into(),
                StatsAttribute::IncomingBytes(v) => statistics.incoming_bytes = v,
                StatsAttribute::OutgoingBytes(v) => statistics.outgoing_bytes = v,
                StatsAttribute::ConnectionRate(v) => statistics.connection_rate = v.into(),
                StatsAttribute::IncomingPacketRate(v) => statistics.incoming_packet_rate = v.into(),
                StatsAttribute::OutgoingPacketRate(v) => statistics.outgoing_packet_rate = v.into(),
                StatsAttribute::IncomingByteRate(v) => statistics.incoming_byte_rate = v.into(),
                StatsAttribute::OutgoingByteRate(v) => statistics.outgoing_byte_rate = v.into(),
                StatsAttribute::Padding(_) | StatsAttribute::Other(_) => {}
            }
        }
        statistics
    }

    /// Collect the 64-bit nest (missing counters stay 0, as above).
    pub fn from_attributes64(attributes: &[Stats64Attribute]) -> Self {
        let mut statistics = Statistics::default();
        for attribute in attributes {
            match *attribute {
                Stats64Attribute::Connections(v) => statistics.connections = v,
                Stats64Attribute::IncomingPackets(v) => statistics.incoming_packets = v,
                Stats64Attribute::OutgoingPackets(v) => statistics.outgoing_packets = v,
                Stats64Attribute::IncomingBytes(v) => statistics.incoming_bytes = v,
                Stats64Attribute::OutgoingBytes(v) => statistics.outgoing_bytes = v,
                Stats64Attribute::ConnectionRate(v) => statistics.connection_rate = v,
                Stats64Attribute::IncomingPacketRate(v) => statistics.incoming_packet_rate = v,
                Stats64Attribute::OutgoingPacketRate(v) => statistics.outgoing_packet_rate = v,
                Stats64Attribute::IncomingByteRate(v) => statistics.incoming_byte_rate = v,
                Stats64Attribute::OutgoingByteRate(v) => statistics.outgoing_byte_rate = v,
                Stats64Attribute::Padding(_) | Stats64Attribute::Other(_) => {}
            }
        }
        statistics
    }

    /// Pick the best source among the two nests of a reply.
    pub(crate) fn from_nests(
        stats: Option<&[StatsAttribute]>,
        stats64: Option<&[Stats64Attribute]>,
    ) -> Option<Self> {
        match (stats64, stats) {
            (Some(stats64), _) => Some(Self::from_attributes64(stats64)),
            (None, Some(stats)) => Some(Self::from_attributes(stats)),
            (None, None) => None,
        }
    }

    /// The 64-bit nest, in the kernel's order (used to build reply fixtures;
    /// the kernel ignores statistics in requests).
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
