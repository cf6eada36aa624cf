//! The lines keepalived 2.2.7 writes to its notify FIFOs, byte for byte.
//! Each is one `write` of a whole line ending in `\n`:
//!
//! - VRRP (vrrp_notify.c `notify_fifo`, `"%s \"%s\" %s %d\n"`):
//!   `INSTANCE "VI_1" MASTER 100`, the instance's effective priority;
//!   `GROUP "G1" BACKUP 0`, a sync group's always 0. The states: `MASTER`,
//!   `BACKUP`, `FAULT`, `STOP`, `DELETED`, and the events
//!   `MASTER_RX_LOWER_PRI` (a master hearing a lower priority master),
//!   `MASTER_PRIORITY` / `BACKUP_PRIORITY` (`notify_priority_changes`: the
//!   effective priority changed). The name is written as is, quotes and
//!   spaces included.
//! - Checkers (ipwrapper.c `notify_fifo_vs`, `notify_fifo_rs`):
//!   `VS [192.0.2.1]:tcp:80 UP`, a virtual server's quorum;
//!   `RS [10.0.0.1]:tcp:80 [192.0.2.1]:tcp:80 DOWN`, a real server in a
//!   virtual server. An address is `[ADDRESS]:PROTOCOL:PORT`
//!   (utils.c `inet_sockaddrtotrio`, the address as `inet_ntop` writes it,
//!   IPv6 without brackets of its own), the protocol the virtual server's:
//!   `tcp`, `udp`, `sctp`, or `none` when it has none (a firewall mark
//!   without `protocol`); a virtual server given by address without
//!   `protocol` is UDP (check_data.c: "no protocol set - defaulting to
//!   UDP"). A firewall mark is `FWM 7`, a group `[NAME]:0` (check_data.c
//!   `format_vs`: a group's own address is all zeroes, so its port is 0).

use std::net::SocketAddr;

use fulcrum_config::model as config;
use nanny::spec::VirtualServerKey;

/// What a VRRP line says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VrrpEvent {
    Master,
    Backup,
    Fault,
    Stop,
    Deleted,
    MasterReceivedLowerPriority,
    MasterPriority,
    BackupPriority,
}

impl VrrpEvent {
    /// keepalived's word for it.
    pub fn word(self) -> &'static str {
        match self {
            VrrpEvent::Master => "MASTER",
            VrrpEvent::Backup => "BACKUP",
            VrrpEvent::Fault => "FAULT",
            VrrpEvent::Stop => "STOP",
            VrrpEvent::Deleted => "DELETED",
            VrrpEvent::MasterReceivedLowerPriority => "MASTER_RX_LOWER_PRI",
            VrrpEvent::MasterPriority => "MASTER_PRIORITY",
            VrrpEvent::BackupPriority => "BACKUP_PRIORITY",
        }
    }
}

/// `INSTANCE "NAME" STATE PRIORITY\n`.
pub fn instance(name: &str, event: VrrpEvent, priority: u8) -> String {
    format!("INSTANCE \"{name}\" {} {priority}\n", event.word())
}

/// `GROUP "NAME" STATE 0\n`: keepalived passes 0 as a group's priority.
pub fn group(name: &str, event: VrrpEvent) -> String {
    format!("GROUP \"{name}\" {} 0\n", event.word())
}

/// `VS VIRTUAL_SERVER UP|DOWN\n`; `service` is the virtual server's
/// protocol as keepalived holds it ([`service_type`]).
pub fn virtual_server(
    virtual_server: &VirtualServerKey,
    service: Option<config::Protocol>,
    up: bool,
) -> String {
    format!(
        "VS {} {}\n",
        format_virtual_server(virtual_server, service),
        up_down(up)
    )
}

/// `RS REAL_SERVER VIRTUAL_SERVER UP|DOWN\n`: the real server with the
/// virtual server's protocol.
pub fn real_server(
    real_server: SocketAddr,
    virtual_server: &VirtualServerKey,
    service: Option<config::Protocol>,
    up: bool,
) -> String {
    format!(
        "RS {} {} {}\n",
        trio(real_server, service),
        format_virtual_server(virtual_server, service),
        up_down(up)
    )
}

/// The protocol keepalived holds for a virtual server (its
/// `service_type`): the one written; else UDP for one with addresses (an
/// address, or a group with an address range), which keepalived sets;
/// else none (firewall marks only).
pub fn service_type(
    configuration: &config::Config,
    virtual_server: &VirtualServerKey,
) -> Option<config::Protocol> {
    match virtual_server {
        VirtualServerKey::Address { protocol, .. } => {
            Some(protocol.unwrap_or(config::Protocol::Udp))
        }
        VirtualServerKey::Fwmark(mark) => configuration
            .virtual_servers
            .iter()
            .find(|candidate| {
                matches!(candidate.address, config::VirtualServerAddress::Fwmark(written) if written == *mark)
            })
            .and_then(|candidate| candidate.fwmark_protocol),
        VirtualServerKey::Group { name, protocol } => protocol.or_else(|| {
            let has_addresses = configuration
                .virtual_server_groups
                .iter()
                .filter(|group| group.name == **name)
                .flat_map(|group| &group.entries)
                .any(|entry| matches!(entry, config::GroupEntry::Addresses { .. }));
            has_addresses.then_some(config::Protocol::Udp)
        }),
    }
}

fn up_down(up: bool) -> &'static str {
    if up { "UP" } else { "DOWN" }
}

/// check_data.c `format_vs`.
fn format_virtual_server(
    virtual_server: &VirtualServerKey,
    service: Option<config::Protocol>,
) -> String {
    match virtual_server {
        VirtualServerKey::Address { address, .. } => trio(*address, service),
        VirtualServerKey::Fwmark(mark) => format!("FWM {mark}"),
        VirtualServerKey::Group { name, .. } => format!("[{name}]:0"),
    }
}

/// utils.c `inet_sockaddrtotrio`: `[ADDRESS]:PROTOCOL:PORT`.
fn trio(address: SocketAddr, service: Option<config::Protocol>) -> String {
    let protocol = match service {
        Some(config::Protocol::Tcp) => "tcp",
        Some(config::Protocol::Udp) => "udp",
        Some(config::Protocol::Sctp) => "sctp",
        None => "none",
    };
    format!("[{}]:{protocol}:{}", address.ip(), address.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn vrrp_lines_are_keepalived_bytes() {
        assert_eq!(
            instance("VI_1", VrrpEvent::Master, 100).as_bytes(),
            b"INSTANCE \"VI_1\" MASTER 100\n"
        );
        assert_eq!(
            instance("VI_1", VrrpEvent::Backup, 1).as_bytes(),
            b"INSTANCE \"VI_1\" BACKUP 1\n"
        );
        assert_eq!(
            instance("VI_1", VrrpEvent::Fault, 255).as_bytes(),
            b"INSTANCE \"VI_1\" FAULT 255\n"
        );
        assert_eq!(
            instance("VI 2", VrrpEvent::Stop, 0).as_bytes(),
            b"INSTANCE \"VI 2\" STOP 0\n"
        );
        assert_eq!(
            instance("VI_1", VrrpEvent::Deleted, 90).as_bytes(),
            b"INSTANCE \"VI_1\" DELETED 90\n"
        );
        assert_eq!(
            instance("VI_1", VrrpEvent::MasterReceivedLowerPriority, 100).as_bytes(),
            b"INSTANCE \"VI_1\" MASTER_RX_LOWER_PRI 100\n"
        );
        assert_eq!(
            instance("VI_1", VrrpEvent::MasterPriority, 90).as_bytes(),
            b"INSTANCE \"VI_1\" MASTER_PRIORITY 90\n"
        );
        assert_eq!(
            instance("VI_1", VrrpEvent::BackupPriority, 90).as_bytes(),
            b"INSTANCE \"VI_1\" BACKUP_PRIORITY 90\n"
        );
        assert_eq!(
            group("G1", VrrpEvent::Master).as_bytes(),
            b"GROUP \"G1\" MASTER 0\n"
        );
        assert_eq!(
            group("G1", VrrpEvent::Stop).as_bytes(),
            b"GROUP \"G1\" STOP 0\n"
        );
    }

    #[test]
    fn checker_lines_are_keepalived_bytes() {
        let tcp = VirtualServerKey::Address {
            address: address("192.0.2.1:80"),
            protocol: Some(config::Protocol::Tcp),
        };
        assert_eq!(
            virtual_server(&tcp, Some(config::Protocol::Tcp), true).as_bytes(),
            b"VS [192.0.2.1]:tcp:80 UP\n"
        );
        assert_eq!(
            real_server(
                address("10.0.0.1:8080"),
                &tcp,
                Some(config::Protocol::Tcp),
                false
            )
            .as_bytes(),
            b"RS [10.0.0.1]:tcp:8080 [192.0.2.1]:tcp:80 DOWN\n"
        );
        let v6 = VirtualServerKey::Address {
            address: address("[2001:db8::1]:443"),
            protocol: Some(config::Protocol::Sctp),
        };
        assert_eq!(
            real_server(
                address("[2001:db8:0:0:0:0:0:a]:443"),
                &v6,
                Some(config::Protocol::Sctp),
                true
            )
            .as_bytes(),
            b"RS [2001:db8::a]:sctp:443 [2001:db8::1]:sctp:443 UP\n"
        );
        let mark = VirtualServerKey::Fwmark(7);
        assert_eq!(
            virtual_server(&mark, None, false).as_bytes(),
            b"VS FWM 7 DOWN\n"
        );
        assert_eq!(
            real_server(address("10.0.0.2:0"), &mark, None, true).as_bytes(),
            b"RS [10.0.0.2]:none:0 FWM 7 UP\n"
        );
        let group = VirtualServerKey::Group {
            name: "web".into(),
            protocol: Some(config::Protocol::Udp),
        };
        assert_eq!(
            real_server(
                address("10.0.0.3:53"),
                &group,
                Some(config::Protocol::Udp),
                true
            )
            .as_bytes(),
            b"RS [10.0.0.3]:udp:53 [web]:0 UP\n"
        );
    }

    #[test]
    fn the_protocol_is_the_one_keepalived_holds() {
        let configuration = fulcrum_config::load_str(
            "test.conf",
            "virtual_server_group marks {
    fwmark 1
}
virtual_server_group ranges {
    192.0.2.10-20 80
}
virtual_server fwmark 7 {
    protocol TCP
    real_server 10.0.0.1 80 {
    }
}
virtual_server fwmark 8 {
    real_server 10.0.0.1 80 {
    }
}
",
            &Default::default(),
        )
        .config;
        let service = |key: VirtualServerKey| service_type(&configuration, &key);
        assert_eq!(
            service(VirtualServerKey::Address {
                address: address("192.0.2.1:53"),
                protocol: None
            }),
            Some(config::Protocol::Udp)
        );
        assert_eq!(
            service(VirtualServerKey::Fwmark(7)),
            Some(config::Protocol::Tcp)
        );
        assert_eq!(service(VirtualServerKey::Fwmark(8)), None);
        assert_eq!(
            service(VirtualServerKey::Group {
                name: "marks".into(),
                protocol: None
            }),
            None
        );
        assert_eq!(
            service(VirtualServerKey::Group {
                name: "ranges".into(),
                protocol: None
            }),
            Some(config::Protocol::Udp)
        );
    }
}
