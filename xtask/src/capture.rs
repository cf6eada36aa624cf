//! Captures the IPVS generic netlink traffic of reference commands with
//! `nlmon`, for the `ipvs` crate's round-trip tests.
//!
//! Runs inside the lab (`cargo xtask capture` boots it): each command of
//! [`SCENARIO`] runs in turn while an AF_PACKET socket listens on an nlmon
//! device, and what crossed between the command and the kernel's IPVS family
//! is written to `ipvs/tests/captured/<name>.txt` with the command beside it.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, anyhow, bail};
use netlink_packet_core::{
    NLM_F_REQUEST, NLMSG_ALIGNTO, NLMSG_DONE, NLMSG_ERROR, NetlinkBuffer, NetlinkHeader, Parseable,
    ParseableParametrized,
};
use netlink_packet_generic::GenlHeader;
use netlink_packet_generic::constants::{CTRL_CMD_NEWFAMILY, GENL_HDRLEN, GENL_ID_CTRL};
use netlink_packet_generic::ctrl::GenlCtrl;
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;

/// (file name, command). Run in order, in the guest's initial namespace,
/// which each step leaves as the next expects. Together they produce every
/// IPVS command and attribute the kernel knows.
pub const SCENARIO: &[(&str, &str)] = &[
    ("get_info", "ipvsadm -L -n"),
    ("new_service_tcp", "ipvsadm -A -t 10.0.0.1:80 -s rr"),
    ("new_service_exists", "ipvsadm -A -t 10.0.0.1:80 -s rr"),
    (
        "new_service_unknown_scheduler",
        "ipvsadm -A -t 10.0.0.9:80 -s nosuch",
    ),
    (
        "set_service_persistent",
        "ipvsadm -E -t 10.0.0.1:80 -s wlc -p 300 -M 255.255.255.0",
    ),
    ("set_service_missing", "ipvsadm -E -t 10.0.0.99:80 -s rr"),
    (
        "new_service_udp6_flags",
        "ipvsadm -A -u [2001:db8::1]:53 -s sh -b sh-fallback,sh-port",
    ),
    ("new_service_fwmark", "ipvsadm -A -f 42 -s mh -b mh-port"),
    (
        "new_service_fwmark6",
        "ipvsadm -A -f 43 -6 -s wrr -p 60 -M 64",
    ),
    (
        "new_service_sctp",
        "ipvsadm -A --sctp-service 10.0.0.2:9000 -s lc",
    ),
    // ipvsadm allows one-packet scheduling on UDP services only.
    (
        "new_service_udp_one_packet",
        "ipvsadm -A -u 10.0.0.5:53 -s rr -o",
    ),
    (
        "new_service_persistence_engine",
        "ipvsadm -A -u 10.0.0.3:5060 -s rr -p 120 --pe sip",
    ),
    (
        "new_destination_masquerade",
        "ipvsadm -a -t 10.0.0.1:80 -r 10.0.2.11:8080 -m -w 3 -x 100 -y 10",
    ),
    (
        "new_destination_route",
        "ipvsadm -a -t 10.0.0.1:80 -r 10.0.2.12 -g -w 2",
    ),
    (
        "new_destination_tunnel_ipip",
        "ipvsadm -a -t 10.0.0.1:80 -r 10.0.2.13 -i",
    ),
    (
        "new_destination_tunnel_gue",
        "ipvsadm -a -t 10.0.0.1:80 -r 10.0.2.14 -i --tun-type gue --tun-port 6080 --tun-csum",
    ),
    (
        "new_destination_tunnel_gre",
        "ipvsadm -a -t 10.0.0.1:80 -r 10.0.2.15 -i --tun-type gre --tun-nocsum",
    ),
    (
        "new_destination_tunnel_gue_remcsum",
        "ipvsadm -a -f 42 -r 10.0.2.16 -i --tun-type gue --tun-port 6081 --tun-remcsum",
    ),
    // Sync daemons before the mixed-family destination, which would make
    // the kernel refuse them.
    (
        "new_daemon_master",
        "ipvsadm --start-daemon master --mcast-interface lo --syncid 5 --sync-maxlen 1400 \
         --mcast-group 224.0.0.81 --mcast-port 8848 --mcast-ttl 2",
    ),
    (
        "new_daemon_backup6",
        "ipvsadm --start-daemon backup --mcast-interface lo --syncid 6 --mcast-group ff02::1:81",
    ),
    (
        "new_daemon_exists",
        "ipvsadm --start-daemon master --mcast-interface lo",
    ),
    ("dump_daemons", "ipvsadm -L --daemon"),
    ("del_daemon_master", "ipvsadm --stop-daemon master"),
    ("del_daemon_backup", "ipvsadm --stop-daemon backup"),
    ("del_daemon_missing", "ipvsadm --stop-daemon master"),
    // ipvsadm reads a bracketed IPv6 real server only with a port.
    (
        "new_destination_mixed_family",
        "ipvsadm -a -t 10.0.0.1:80 -r [2001:db8::11]:80 -i",
    ),
    (
        "new_destination_ipv6",
        "ipvsadm -a -u [2001:db8::1]:53 -r [2001:db8::21]:5353 -m",
    ),
    (
        "new_destination_exists",
        "ipvsadm -a -t 10.0.0.1:80 -r 10.0.2.12 -g",
    ),
    (
        "new_destination_no_service",
        "ipvsadm -a -t 10.0.0.98:80 -r 10.0.2.12 -g",
    ),
    (
        "set_destination",
        "ipvsadm -e -t 10.0.0.1:80 -r 10.0.2.12 -g -w 7 -x 50 -y 5",
    ),
    (
        "set_destination_missing",
        "ipvsadm -e -t 10.0.0.1:80 -r 10.0.2.99 -g -w 1",
    ),
    ("get_service", "ipvsadm -L -n -t 10.0.0.1:80"),
    ("dump_services_and_destinations", "ipvsadm -L -n"),
    // Traffic first, so the statistics are not all zero: the director's
    // own connections to the service go through IPVS (to a real server that
    // is not there), and the kernel folds its per-CPU counters into what it
    // reports every two seconds.
    (
        "dump_with_stats",
        "ip route add 10.0.0.1/32 dev lo && \
         for attempt in 1 2 3; do curl -s -m 1 http://10.0.0.1/ >/dev/null; done; \
         sleep 3; ipvsadm -L -n --stats",
    ),
    ("set_config", "ipvsadm --set 900 120 300"),
    ("get_config", "ipvsadm -L --timeout"),
    // Heterogeneous (mixed-family) destinations and sync daemons exclude
    // each other: with the mixed-family destination above in place the
    // kernel refuses to start a daemon (EINVAL).
    (
        "new_daemon_refused_by_mixed_family",
        "ipvsadm --start-daemon master --mcast-interface lo",
    ),
    ("zero_service", "ipvsadm -Z -t 10.0.0.1:80"),
    ("zero_all", "ipvsadm -Z"),
    (
        "del_destination",
        "ipvsadm -d -t 10.0.0.1:80 -r 10.0.2.11:8080",
    ),
    (
        "del_destination_missing",
        "ipvsadm -d -t 10.0.0.1:80 -r 10.0.2.11:8080",
    ),
    ("del_service", "ipvsadm -D -t 10.0.0.1:80"),
    ("del_service_missing", "ipvsadm -D -t 10.0.0.1:80"),
    ("flush", "ipvsadm -C"),
];

/// The netlink protocol nlmon reports as a packet's protocol.
const NETLINK_GENERIC: u16 = 16;

/// In the guest: runs the scenario and writes one file per step to `output`.
pub fn run_in_guest(output: &Path) -> Result<()> {
    run_shell("modprobe ip_vs && modprobe ip_vs_sh && modprobe ip_vs_pe_sip")?;
    run_shell("ip link add nlmon0 type nlmon && ip link set nlmon0 up")?;
    let tap = Tap::open("nlmon0")?;
    let release = fs::read_to_string("/proc/sys/kernel/osrelease")?;
    fs::create_dir_all(output)?;
    let mut family: Option<u16> = None;
    for (name, command) in SCENARIO {
        tap.drain()?;
        let status = Command::new("sh").args(["-c", command]).status()?;
        let datagrams = tap.drain()?;
        if family.is_none() {
            for datagram in &datagrams {
                family = ipvs_family_id(datagram)
                    .with_context(|| format!("{name}: a malformed controller reply"))?;
                if family.is_some() {
                    break;
                }
            }
        }
        let family = family.context("no CTRL_CMD_NEWFAMILY reply naming IPVS was captured")?;
        let kept = ipvs_exchange(&datagrams, family)
            .with_context(|| format!("{name}: a malformed netlink datagram"))?;
        if kept.is_empty() {
            bail!("{name}: `{command}` exchanged nothing with IPVS");
        }
        let mut text = format!(
            "# Captured with nlmon in the lab by `cargo xtask capture` (Linux {}).\n\
             # command: {command}\n# exit status: {}\nfamily {family}\n",
            release.trim(),
            status.code().unwrap_or(-1)
        );
        for (direction, bytes) in kept {
            let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
            writeln!(text, "{direction} {hex}")?;
        }
        fs::write(output.join(format!("{name}.txt")), text)?;
        println!("captured {name}: {command}");
    }
    Ok(())
}

fn run_shell(command: &str) -> Result<()> {
    let status = Command::new("sh").args(["-c", command]).status()?;
    if !status.success() {
        bail!("`{command}` failed ({status})");
    }
    Ok(())
}

/// One netlink datagram as seen on the tap: one or more netlink messages.
///
/// Its direction is not in the packet metadata (the tap transmits every
/// copy, so AF_PACKET reports them all as outgoing); requests are told by
/// NLM_F_REQUEST, which the kernel never sets on what it sends.
struct Datagram {
    bytes: Vec<u8>,
}

/// The netlink messages of one datagram: each one's header and bytes (the
/// header included).
fn messages(datagram: &[u8]) -> Result<Vec<(NetlinkHeader, &[u8])>> {
    let mut found = Vec::new();
    let mut rest = datagram;
    while !rest.is_empty() {
        // Checks that the header fits and that its length is within `rest`.
        let buffer = NetlinkBuffer::new_checked(rest)
            .map_err(|error| anyhow!("message {}: {error}", found.len()))?;
        let header = NetlinkHeader::parse(&buffer)
            .map_err(|error| anyhow!("message {}: {error}", found.len()))?;
        let length = header.length as usize;
        found.push((header, &rest[..length]));
        // Messages start aligned; the last one's padding may be left out.
        let aligned = length.next_multiple_of(usize::from(NLMSG_ALIGNTO));
        rest = rest.get(aligned..).unwrap_or_default();
    }
    Ok(found)
}

/// The family id in a CTRL_CMD_NEWFAMILY reply for "IPVS", if the datagram
/// holds one.
fn ipvs_family_id(datagram: &Datagram) -> Result<Option<u16>> {
    for (header, message) in messages(&datagram.bytes)? {
        if header.message_type != GENL_ID_CTRL {
            continue;
        }
        let payload = NetlinkBuffer::new(message).payload();
        let genl = GenlHeader::parse(payload).map_err(|error| anyhow!("{error}"))?;
        if genl.cmd != CTRL_CMD_NEWFAMILY {
            continue;
        }
        let attributes = payload.get(GENL_HDRLEN..).unwrap_or_default();
        let reply = GenlCtrl::parse_with_param(attributes, genl)
            .map_err(|error| anyhow!("CTRL_CMD_NEWFAMILY: {error}"))?;
        let (mut name, mut id) = (None, None);
        for attribute in reply.nlas {
            match attribute {
                GenlCtrlAttrs::FamilyName(value) => name = Some(value),
                GenlCtrlAttrs::FamilyId(value) => id = Some(value),
                _ => {}
            }
        }
        if name.as_deref() == Some("IPVS") {
            return id
                .map(Some)
                .context("a CTRL_CMD_NEWFAMILY reply for IPVS without a family id");
        }
    }
    Ok(None)
}

/// The messages of the IPVS family, and the acknowledgements, errors and
/// dump ends that answer them, each with its direction.
fn ipvs_exchange(datagrams: &[Datagram], family: u16) -> Result<Vec<(&'static str, Vec<u8>)>> {
    let mut requests: Vec<u32> = Vec::new();
    let mut kept = Vec::new();
    for datagram in datagrams {
        for (header, message) in messages(&datagram.bytes)? {
            let kind = header.message_type;
            let to_kernel = header.flags & NLM_F_REQUEST != 0;
            let answers_ipvs = (kind == NLMSG_ERROR || kind == NLMSG_DONE)
                && !to_kernel
                && requests.contains(&header.sequence_number);
            if kind == family || answers_ipvs {
                if to_kernel {
                    requests.push(header.sequence_number);
                }
                kept.push((
                    if to_kernel { "request" } else { "reply" },
                    message.to_vec(),
                ));
            }
        }
    }
    Ok(kept)
}

/// An AF_PACKET socket on an nlmon device.
struct Tap {
    socket: OwnedFd,
}

impl Tap {
    fn open(interface: &str) -> Result<Tap> {
        let name = std::ffi::CString::new(interface)?;
        // SAFETY: a valid interface name.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if index == 0 {
            return Err(io::Error::last_os_error()).with_context(|| format!("no {interface}"));
        }
        // Everything, unfiltered; a listing's dump arrives while the
        // command runs and is read only after it exits: room for all of it.
        let socket = ipvs::monitor::open_tap(index, None, 64 << 20)
            .with_context(|| format!("an AF_PACKET socket on {interface}"))?;
        Ok(Tap { socket })
    }

    /// Everything queued on the tap now. The kernel hands netlink messages
    /// to taps synchronously, so once a command has exited all of its
    /// traffic is queued; an error if the kernel dropped any for want of
    /// room (a capture with a hole would make a misleading fixture).
    fn drain(&self) -> Result<Vec<Datagram>> {
        let mut datagrams = Vec::new();
        let mut buffer = vec![0u8; 1 << 20];
        loop {
            // SAFETY: sockaddr_ll is plain data.
            let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut length = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: receiving into buffers we own, with their sizes.
            let count = unsafe {
                libc::recvfrom(
                    self.socket.as_raw_fd(),
                    buffer.as_mut_ptr().cast(),
                    buffer.len(),
                    // MSG_TRUNC: the datagram's real length, to tell if it
                    // did not fit.
                    libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                    &mut address as *mut libc::sockaddr_ll as *mut libc::sockaddr,
                    &mut length,
                )
            };
            let Ok(count) = usize::try_from(count) else {
                let error = io::Error::last_os_error();
                match error.kind() {
                    // EAGAIN, EWOULDBLOCK: nothing more queued.
                    io::ErrorKind::WouldBlock => break,
                    io::ErrorKind::Interrupted => continue,
                    _ => return Err(error).context("cannot read from the tap"),
                }
            };
            if count > buffer.len() {
                bail!(
                    "a {count}-byte datagram does not fit the tap's {}-byte buffer",
                    buffer.len()
                );
            }
            if u16::from_be(address.sll_protocol) != NETLINK_GENERIC {
                continue;
            }
            datagrams.push(Datagram {
                bytes: buffer[..count].to_vec(),
            });
        }
        // SAFETY: tpacket_stats is plain data; the kernel fills it and
        // resets its counters.
        let mut statistics: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut length = std::mem::size_of::<libc::tpacket_stats>() as u32;
        // SAFETY: getsockopt into a struct of the given size.
        let result = unsafe {
            libc::getsockopt(
                self.socket.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut statistics as *mut libc::tpacket_stats).cast(),
                &mut length,
            )
        };
        if result != 0 {
            return Err(io::Error::last_os_error()).context("PACKET_STATISTICS");
        }
        if statistics.tp_drops > 0 {
            bail!(
                "the tap dropped {} packets: the capture is incomplete",
                statistics.tp_drops
            );
        }
        Ok(datagrams)
    }
}

#[cfg(test)]
mod tests {
    use netlink_packet_core::{NetlinkMessage, NetlinkPayload};
    use netlink_packet_generic::GenlMessage;
    use netlink_packet_generic::ctrl::GenlCtrlCmd;

    use super::*;

    /// A CTRL_CMD_NEWFAMILY reply as the kernel sends it, for `name`.
    fn new_family(name: &str, id: u16, sequence: u32) -> Vec<u8> {
        let reply = GenlMessage::from_payload(GenlCtrl {
            cmd: GenlCtrlCmd::NewFamily,
            nlas: vec![
                GenlCtrlAttrs::FamilyName(name.to_owned()),
                GenlCtrlAttrs::FamilyId(id),
                GenlCtrlAttrs::Version(1),
            ],
        });
        let mut header = NetlinkHeader::default();
        header.sequence_number = sequence;
        let mut message = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(reply));
        message.finalize();
        let mut bytes = vec![0; message.buffer_len()];
        message.serialize(&mut bytes);
        bytes
    }

    #[test]
    fn finds_the_ipvs_family_among_messages() {
        let mut bytes = new_family("nlctrl", 16, 1);
        bytes.extend(new_family("IPVS", 37, 2));
        let datagram = Datagram { bytes };
        let found = messages(&datagram.bytes).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].0.sequence_number, 2);
        assert_eq!(ipvs_family_id(&datagram).unwrap(), Some(37));
    }

    #[test]
    fn a_truncated_datagram_is_an_error() {
        let bytes = new_family("IPVS", 37, 1);
        assert!(messages(&bytes[..bytes.len() - 4]).is_err());
        assert!(messages(&bytes[..10]).is_err());
        let datagram = Datagram {
            bytes: bytes[..bytes.len() - 4].to_vec(),
        };
        assert!(ipvs_family_id(&datagram).is_err());
    }

    #[test]
    fn no_family_in_other_traffic() {
        let datagram = Datagram {
            bytes: new_family("nlctrl", 16, 1),
        };
        assert_eq!(ipvs_family_id(&datagram).unwrap(), None);
    }
}
