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
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

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

const ETH_P_ALL: u16 = 0x0003;
const NETLINK_GENERIC: u16 = 16;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_NEWFAMILY: u8 = 1;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;

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
        let messages = tap.drain()?;
        if family.is_none() {
            family = messages.iter().find_map(ipvs_family_id);
        }
        let family = family.context("no CTRL_CMD_NEWFAMILY reply naming IPVS was captured")?;
        let kept = ipvs_exchange(&messages, family);
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

/// Netlink messages of one datagram: (type, flags, sequence, bytes).
fn messages(datagram: &[u8]) -> Vec<(u16, u16, u32, &[u8])> {
    let mut found = Vec::new();
    let mut rest = datagram;
    while rest.len() >= 16 {
        let length = u32::from_ne_bytes(rest[0..4].try_into().unwrap()) as usize;
        if length < 16 || length > rest.len() {
            break;
        }
        let kind = u16::from_ne_bytes(rest[4..6].try_into().unwrap());
        let flags = u16::from_ne_bytes(rest[6..8].try_into().unwrap());
        let sequence = u32::from_ne_bytes(rest[8..12].try_into().unwrap());
        found.push((kind, flags, sequence, &rest[..length]));
        rest = &rest[(length + 3) & !3..];
    }
    found
}

/// The family id in a CTRL_CMD_NEWFAMILY reply for "IPVS".
fn ipvs_family_id(datagram: &Datagram) -> Option<u16> {
    for (kind, _, _, message) in messages(&datagram.bytes) {
        if kind != GENL_ID_CTRL || message.get(16) != Some(&CTRL_CMD_NEWFAMILY) {
            continue;
        }
        let mut attributes = &message[20..];
        let (mut name, mut id) = (None, None);
        while attributes.len() >= 4 {
            let length = u16::from_ne_bytes([attributes[0], attributes[1]]) as usize;
            let kind = u16::from_ne_bytes([attributes[2], attributes[3]]) & 0x3fff;
            if length < 4 || length > attributes.len() {
                break;
            }
            let payload = &attributes[4..length];
            match kind {
                CTRL_ATTR_FAMILY_NAME => name = Some(payload.to_vec()),
                CTRL_ATTR_FAMILY_ID if payload.len() == 2 => {
                    id = Some(u16::from_ne_bytes([payload[0], payload[1]]))
                }
                _ => {}
            }
            attributes = &attributes[((length + 3) & !3).min(attributes.len())..];
        }
        if name.as_deref() == Some(b"IPVS\0") {
            return id;
        }
    }
    None
}

/// The messages of the IPVS family, and the acknowledgements, errors and
/// dump ends that answer them, each with its direction.
fn ipvs_exchange(datagrams: &[Datagram], family: u16) -> Vec<(&'static str, Vec<u8>)> {
    let mut requests: Vec<u32> = Vec::new();
    let mut kept = Vec::new();
    for datagram in datagrams {
        for (kind, flags, sequence, message) in messages(&datagram.bytes) {
            let to_kernel = flags & NLM_F_REQUEST != 0;
            let answers_ipvs = (kind == NLMSG_ERROR || kind == NLMSG_DONE)
                && !to_kernel
                && requests.contains(&sequence);
            if kind == family || answers_ipvs {
                if to_kernel {
                    requests.push(sequence);
                }
                kept.push((
                    if to_kernel { "request" } else { "reply" },
                    message.to_vec(),
                ));
            }
        }
    }
    kept
}

/// An AF_PACKET socket on an nlmon device.
struct Tap {
    socket: i32,
}

impl Tap {
    fn open(interface: &str) -> Result<Tap> {
        // SAFETY: plain socket creation.
        let socket = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                i32::from(ETH_P_ALL.to_be()),
            )
        };
        if socket < 0 {
            return Err(io::Error::last_os_error()).context("AF_PACKET socket");
        }
        let name = std::ffi::CString::new(interface)?;
        // SAFETY: a valid interface name.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if index == 0 {
            return Err(io::Error::last_os_error()).with_context(|| format!("no {interface}"));
        }
        // SAFETY: sockaddr_ll is plain data.
        let mut address: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        address.sll_family = libc::AF_PACKET as u16;
        address.sll_protocol = ETH_P_ALL.to_be();
        address.sll_ifindex = index as i32;
        // SAFETY: binding our socket to a sockaddr_ll of the right size.
        let result = unsafe {
            libc::bind(
                socket,
                &address as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if result != 0 {
            return Err(io::Error::last_os_error()).context("bind to nlmon0");
        }
        // A listing's dump arrives while the command runs and is read only
        // after it exits: room for all of it.
        let size: libc::c_int = 64 << 20;
        // SAFETY: setsockopt with a pointer to an int and its size.
        let result = unsafe {
            libc::setsockopt(
                socket,
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as u32,
            )
        };
        if result != 0 {
            return Err(io::Error::last_os_error()).context("SO_RCVBUFFORCE on the tap");
        }
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
                    self.socket,
                    buffer.as_mut_ptr().cast(),
                    buffer.len(),
                    libc::MSG_DONTWAIT,
                    &mut address as *mut libc::sockaddr_ll as *mut libc::sockaddr,
                    &mut length,
                )
            };
            if count <= 0 {
                break;
            }
            if u16::from_be(address.sll_protocol) != NETLINK_GENERIC {
                continue;
            }
            datagrams.push(Datagram {
                bytes: buffer[..count as usize].to_vec(),
            });
        }
        // SAFETY: tpacket_stats is plain data; the kernel fills it and
        // resets its counters.
        let mut statistics: libc::tpacket_stats = unsafe { std::mem::zeroed() };
        let mut length = std::mem::size_of::<libc::tpacket_stats>() as u32;
        // SAFETY: getsockopt into a struct of the given size.
        let result = unsafe {
            libc::getsockopt(
                self.socket,
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

impl Drop for Tap {
    fn drop(&mut self) {
        // SAFETY: closing the socket we own.
        unsafe { libc::close(self.socket) };
    }
}
