//! Model values as the kernel reports them, for the output tests
//! (`format/tests.rs`, `json/tests.rs`).

use std::net::SocketAddr;

use ipvs::{
    ConnectionCounters, Destination, Forwarding, Protocol, Service, ServiceFlags, ServiceKey,
    Statistics, Tunnel, TunnelChecksum, TunnelKind,
};

/// Statistics from their ten values, in the struct's order.
pub fn statistics(values: [u64; 10]) -> Box<Statistics> {
    let [c, ip, op, ib, ob, cr, ipr, opr, ibr, obr] = values;
    Box::new(Statistics {
        connections: c,
        incoming_packets: ip,
        outgoing_packets: op,
        incoming_bytes: ib,
        outgoing_bytes: ob,
        connection_rate: cr,
        incoming_packet_rate: ipr,
        outgoing_packet_rate: opr,
        incoming_byte_rate: ibr,
        outgoing_byte_rate: obr,
    })
}

pub fn address_key(protocol: Protocol, address: &str, port: u16) -> ServiceKey {
    ServiceKey::Address {
        protocol,
        address: address.parse().unwrap(),
        port,
    }
}

/// A service as the kernel reports it: HASHED set, zero statistics.
pub fn service(key: ServiceKey, scheduler: &str, flags: ServiceFlags) -> Service {
    let mut service = Service::new(key, scheduler);
    service.flags = flags | ServiceFlags::HASHED;
    service.statistics = Some(Box::default());
    service
}

pub fn persistent(mut service: Service, timeout: u32) -> Service {
    service.flags |= ServiceFlags::PERSISTENT;
    service.timeout = timeout;
    service
}

/// A destination as the kernel reports it: zero counters and statistics.
pub fn destination(address: &str, forwarding: Forwarding, weight: u32) -> Destination {
    let address: SocketAddr = address.parse().unwrap();
    let mut destination = Destination::new(address, forwarding);
    destination.weight = weight;
    destination.counters = Some(ConnectionCounters::default());
    destination.statistics = Some(Box::default());
    destination
}

pub fn tunnel(kind: TunnelKind, port: u16, checksum: TunnelChecksum) -> Forwarding {
    Forwarding::Tunnel(Tunnel {
        kind,
        port,
        checksum,
    })
}
