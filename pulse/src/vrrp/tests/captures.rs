//! Adverts keepalived 2.2.7 sent, captured on this host.
//!
//! Each configuration below ran as `keepalived -n -l -P -f CONF -p PID
//! -r VRRP_PID` in network namespace `vrcap-ka`, its `veth-ka`
//! (02:00:00:00:00:0a, 192.0.2.1/24, 2001:db8::1/64) paired with `veth-pe`
//! (192.0.2.2/24) in namespace `vrcap-pe`, where `tcpdump -i veth-pe -w
//! PCAP 'ip proto 112 or ip6 proto 112'` recorded for six seconds, after
//! which keepalived got SIGTERM (hence the priority 0 adverts). The bytes
//! are the IP payloads, each distinct one once.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const SOURCE_V4: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
pub const GROUP_V4: IpAddr = IpAddr::V4(Ipv4Addr::new(224, 0, 0, 18));
pub const PEER_V4: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2));
/// veth-ka's link-local address (from its MAC); keepalived sends IPv6
/// adverts from it.
pub const SOURCE_V6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0xff, 0xfe00, 0x0a));
pub const GROUP_V6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x12));

pub const V2_CONFIG: &str = "\
global_defs {
    router_id capture
}
vrrp_instance VI_1 {
    state MASTER
    interface veth-ka
    virtual_router_id 51
    priority 150
    advert_int 1
    authentication {
        auth_type PASS
        auth_pass secret12
    }
    virtual_ipaddress {
        192.0.2.100/24
        192.0.2.101/24
    }
}
";

/// V2_CONFIG, from 192.0.2.1 to 224.0.0.18.
pub const V2_PRIORITY_150: [u8; 24] = [
    0x21, 0x33, 0x96, 0x02, 0x01, 0x01, 0x55, 0x80, 0xc0, 0x00, 0x02, 0x64, 0xc0, 0x00, 0x02, 0x65,
    0x73, 0x65, 0x63, 0x72, 0x65, 0x74, 0x31, 0x32,
];
/// V2_CONFIG, on SIGTERM.
pub const V2_PRIORITY_0: [u8; 24] = [
    0x21, 0x33, 0x00, 0x02, 0x01, 0x01, 0xeb, 0x80, 0xc0, 0x00, 0x02, 0x64, 0xc0, 0x00, 0x02, 0x65,
    0x73, 0x65, 0x63, 0x72, 0x65, 0x74, 0x31, 0x32,
];

pub const V3_CONFIG: &str = "\
global_defs {
    router_id capture
    vrrp_version 3
}
vrrp_instance VI_1 {
    state MASTER
    interface veth-ka
    virtual_router_id 52
    priority 200
    advert_int 0.5
    virtual_ipaddress {
        192.0.2.100/24
        192.0.2.101/24
    }
}
";

/// V3_CONFIG, from 192.0.2.1 to 224.0.0.18 (50 centiseconds).
pub const V3_PRIORITY_200: [u8; 16] = [
    0x31, 0x34, 0xc8, 0x02, 0x00, 0x32, 0xdf, 0x37, 0xc0, 0x00, 0x02, 0x64, 0xc0, 0x00, 0x02, 0x65,
];
/// V3_CONFIG, on SIGTERM.
pub const V3_PRIORITY_0: [u8; 16] = [
    0x31, 0x34, 0x00, 0x02, 0x00, 0x32, 0xa7, 0x38, 0xc0, 0x00, 0x02, 0x64, 0xc0, 0x00, 0x02, 0x65,
];

pub const V3_IPV6_CONFIG: &str = "\
global_defs {
    router_id capture
    vrrp_version 3
}
vrrp_instance VI_6 {
    state MASTER
    interface veth-ka
    virtual_router_id 53
    priority 120
    advert_int 1
    virtual_ipaddress {
        2001:db8::100/64
        fe80::53/64
    }
}
";

/// V3_IPV6_CONFIG, from fe80::ff:fe00:a to ff02::12.
pub const V3_IPV6_PRIORITY_120: [u8; 40] = [
    0x31, 0x35, 0x78, 0x02, 0x00, 0x64, 0x2b, 0x9f, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x53,
];
/// V3_IPV6_CONFIG, on SIGTERM.
pub const V3_IPV6_PRIORITY_0: [u8; 40] = [
    0x31, 0x35, 0x00, 0x02, 0x00, 0x64, 0xa3, 0x9f, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x53,
];

pub const V3_UNICAST_CONFIG: &str = "\
global_defs {
    router_id capture
    vrrp_version 3
}
vrrp_instance VI_U {
    state MASTER
    interface veth-ka
    virtual_router_id 54
    priority 100
    advert_int 1
    unicast_src_ip 192.0.2.1
    unicast_peer {
        192.0.2.2
    }
    virtual_ipaddress {
        192.0.2.110
    }
}
";

/// V3_UNICAST_CONFIG, from 192.0.2.1 to the peer 192.0.2.2: the pseudo
/// header has the peer's address.
pub const V3_UNICAST_PRIORITY_100: [u8; 12] = [
    0x31, 0x36, 0x64, 0x01, 0x00, 0x64, 0x23, 0x75, 0xc0, 0x00, 0x02, 0x6e,
];
/// V3_UNICAST_CONFIG, on SIGTERM.
pub const V3_UNICAST_PRIORITY_0: [u8; 12] = [
    0x31, 0x36, 0x00, 0x01, 0x00, 0x64, 0x87, 0x75, 0xc0, 0x00, 0x02, 0x6e,
];
