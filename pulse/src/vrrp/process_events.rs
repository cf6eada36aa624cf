//! The kernel's process events connector (`NETLINK_CONNECTOR`, group
//! `CN_IDX_PROC`, linux/cn_proc.h), as keepalived 2.2.7's track_process.c
//! reads it: a checked view over one message ([`Packet`]) and its parsed
//! value ([`Repr`]), and the subscription message
//! ([`subscription_message`]).
//!
//! One message is a netlink header, the connector's header (`cn_msg`) and
//! one `proc_event`. The kernel never chains two in one datagram: the
//! event's 8-byte timestamp would lose its alignment in the second (the
//! netlink header is 16 bytes, `cn_msg` 20), and cn_proc.c builds each
//! message 4 bytes into an aligned buffer for the first one to be aligned.
//! So one datagram is read as one message.

/// `NETLINK_CONNECTOR`.
pub const PROTOCOL: isize = 11;
/// `CN_IDX_PROC`: the connector's index for process events, and the
/// multicast group they are sent to.
pub const PROCESS_INDEX: u32 = 1;
/// `CN_VAL_PROC`.
pub const PROCESS_VALUE: u32 = 1;

/// `NLMSG_DONE`: the type of every connector message, both ways.
const DONE: u16 = 3;
/// `PROC_CN_MCAST_LISTEN` and `PROC_CN_MCAST_IGNORE`.
const LISTEN: u32 = 1;
const IGNORE: u32 = 2;

/// The netlink header: length, type, flags, sequence, port.
const NETLINK_HEADER: usize = 16;
/// `struct cn_msg`: index, value, sequence, acknowledgement, data length,
/// flags.
const CONNECTOR_HEADER: usize = 20;
/// Where the connector's data (the `proc_event`) starts.
const DATA: usize = NETLINK_HEADER + CONNECTOR_HEADER;
/// `struct proc_event`'s head: what, cpu, timestamp.
const EVENT_HEAD: usize = 16;
/// The union `event_data` (its largest members, comm and exit, are 24
/// bytes); the kernel zeroes what a smaller member leaves.
const EVENT_DATA: usize = 24;
/// The whole `proc_event` as the kernel sends it.
pub const EVENT_LENGTH: usize = EVENT_HEAD + EVENT_DATA;
/// A whole event message.
pub const MESSAGE_LENGTH: usize = DATA + EVENT_LENGTH;

mod field {
    use std::ops::Range;

    pub const LENGTH: Range<usize> = 0..4;
    pub const KIND: Range<usize> = 4..6;
    pub const FLAGS: Range<usize> = 6..8;
    pub const NETLINK_SEQUENCE: Range<usize> = 8..12;
    pub const PORT: Range<usize> = 12..16;
    pub const INDEX: Range<usize> = 16..20;
    pub const VALUE: Range<usize> = 20..24;
    pub const SEQUENCE: Range<usize> = 24..28;
    pub const ACKNOWLEDGEMENT: Range<usize> = 28..32;
    pub const DATA_LENGTH: Range<usize> = 32..34;
    pub const CONNECTOR_FLAGS: Range<usize> = 34..36;
}

/// `enum what` of `struct proc_event`.
mod what {
    pub const NONE: u32 = 0;
    pub const FORK: u32 = 1;
    pub const EXEC: u32 = 2;
    pub const COMM: u32 = 0x200;
    pub const EXIT: u32 = 0x8000_0000;
}

/// Why bytes are not a process event message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("shorter than its headers or than its length says")]
    Truncated,
    #[error("not a connector message of process events (index {index}, value {value})")]
    NotProcessEvents { index: u32, value: u32 },
    #[error("a process event of {0} bytes, shorter than the kernel's")]
    ShortEvent(usize),
}

/// A view over one connector message.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

fn u16_at(bytes: &[u8], range: std::ops::Range<usize>) -> u16 {
    u16::from_ne_bytes(bytes[range].try_into().expect("two bytes"))
}

fn u32_at(bytes: &[u8], range: std::ops::Range<usize>) -> u32 {
    u32::from_ne_bytes(bytes[range].try_into().expect("four bytes"))
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// A view whose accessors cannot panic: both headers there, and the
    /// lengths they give within the buffer.
    pub fn new_checked(buffer: T) -> Result<Packet<T>, Error> {
        let packet = Packet::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    pub fn check_len(&self) -> Result<(), Error> {
        let bytes = self.buffer.as_ref();
        if bytes.len() < DATA {
            return Err(Error::Truncated);
        }
        let length = self.length() as usize;
        if length < DATA || length > bytes.len() {
            return Err(Error::Truncated);
        }
        if DATA + usize::from(self.data_length()) > length {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The netlink header's length: the whole message.
    pub fn length(&self) -> u32 {
        u32_at(self.buffer.as_ref(), field::LENGTH)
    }

    pub fn kind(&self) -> u16 {
        u16_at(self.buffer.as_ref(), field::KIND)
    }

    pub fn flags(&self) -> u16 {
        u16_at(self.buffer.as_ref(), field::FLAGS)
    }

    pub fn netlink_sequence(&self) -> u32 {
        u32_at(self.buffer.as_ref(), field::NETLINK_SEQUENCE)
    }

    pub fn port(&self) -> u32 {
        u32_at(self.buffer.as_ref(), field::PORT)
    }

    pub fn index(&self) -> u32 {
        u32_at(self.buffer.as_ref(), field::INDEX)
    }

    pub fn value(&self) -> u32 {
        u32_at(self.buffer.as_ref(), field::VALUE)
    }

    /// The connector's sequence number, counted per processor by cn_proc.
    pub fn sequence(&self) -> u32 {
        u32_at(self.buffer.as_ref(), field::SEQUENCE)
    }

    pub fn acknowledgement(&self) -> u32 {
        u32_at(self.buffer.as_ref(), field::ACKNOWLEDGEMENT)
    }

    pub fn data_length(&self) -> u16 {
        u16_at(self.buffer.as_ref(), field::DATA_LENGTH)
    }

    pub fn connector_flags(&self) -> u16 {
        u16_at(self.buffer.as_ref(), field::CONNECTOR_FLAGS)
    }

    /// The connector's data: a `proc_event` from the kernel.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[DATA..DATA + usize::from(self.data_length())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn put_u16(&mut self, range: std::ops::Range<usize>, value: u16) {
        self.buffer.as_mut()[range].copy_from_slice(&value.to_ne_bytes());
    }

    fn put_u32(&mut self, range: std::ops::Range<usize>, value: u32) {
        self.buffer.as_mut()[range].copy_from_slice(&value.to_ne_bytes());
    }

    pub fn set_length(&mut self, value: u32) {
        self.put_u32(field::LENGTH, value)
    }

    pub fn set_kind(&mut self, value: u16) {
        self.put_u16(field::KIND, value)
    }

    pub fn set_flags(&mut self, value: u16) {
        self.put_u16(field::FLAGS, value)
    }

    pub fn set_netlink_sequence(&mut self, value: u32) {
        self.put_u32(field::NETLINK_SEQUENCE, value)
    }

    pub fn set_port(&mut self, value: u32) {
        self.put_u32(field::PORT, value)
    }

    pub fn set_index(&mut self, value: u32) {
        self.put_u32(field::INDEX, value)
    }

    pub fn set_value(&mut self, value: u32) {
        self.put_u32(field::VALUE, value)
    }

    pub fn set_sequence(&mut self, value: u32) {
        self.put_u32(field::SEQUENCE, value)
    }

    pub fn set_acknowledgement(&mut self, value: u32) {
        self.put_u32(field::ACKNOWLEDGEMENT, value)
    }

    pub fn set_data_length(&mut self, value: u16) {
        self.put_u16(field::DATA_LENGTH, value)
    }

    pub fn set_connector_flags(&mut self, value: u16) {
        self.put_u16(field::CONNECTOR_FLAGS, value)
    }

    pub fn data_mut(&mut self) -> &mut [u8] {
        let length = usize::from(self.data_length());
        &mut self.buffer.as_mut()[DATA..DATA + length]
    }
}

/// What happened to a process. Pids are thread ids, tgids process ids:
/// keepalived follows processes only (pid equal to tgid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The answer to the subscription (`PROC_EVENT_NONE`), with its error.
    Acknowledged {
        error: u32,
    },
    Fork {
        parent_pid: i32,
        parent_tgid: i32,
        child_pid: i32,
        child_tgid: i32,
    },
    Exec {
        pid: i32,
        tgid: i32,
    },
    /// The process renamed itself (`prctl(PR_SET_NAME)`, or a write to
    /// /proc/PID/comm): its new name, NUL-padded.
    Comm {
        pid: i32,
        tgid: i32,
        comm: [u8; 16],
    },
    Exit {
        pid: i32,
        tgid: i32,
        exit_code: u32,
        exit_signal: u32,
        parent_pid: i32,
        parent_tgid: i32,
    },
    /// Any other kind (uid, gid, sid, ptrace, coredump...), kept as sent.
    Other {
        what: u32,
        data: [u8; EVENT_DATA],
    },
}

impl Event {
    /// The name of a [`Event::Comm`], up to its first NUL.
    pub fn comm_name(comm: &[u8; 16]) -> &[u8] {
        let end = comm.iter().position(|byte| *byte == 0).unwrap_or(16);
        &comm[..end]
    }
}

/// One process event message, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// The connector's sequence number, per processor; the kernel puts
    /// the same in the netlink header.
    pub sequence: u32,
    pub acknowledgement: u32,
    pub cpu: u32,
    pub timestamp_nanoseconds: u64,
    pub event: Event,
}

fn i32_at(data: &[u8], offset: usize) -> i32 {
    i32::from_ne_bytes(data[offset..offset + 4].try_into().expect("four bytes"))
}

fn u32_in(data: &[u8], offset: usize) -> u32 {
    u32::from_ne_bytes(data[offset..offset + 4].try_into().expect("four bytes"))
}

impl Repr {
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, Error> {
        packet.check_len()?;
        if packet.index() != PROCESS_INDEX || packet.value() != PROCESS_VALUE {
            return Err(Error::NotProcessEvents {
                index: packet.index(),
                value: packet.value(),
            });
        }
        let data = packet.data();
        if data.len() < EVENT_LENGTH {
            return Err(Error::ShortEvent(data.len()));
        }
        let what = u32_in(data, 0);
        let cpu = u32_in(data, 4);
        let timestamp_nanoseconds =
            u64::from_ne_bytes(data[8..16].try_into().expect("eight bytes"));
        let body = &data[EVENT_HEAD..EVENT_LENGTH];
        let event = match what {
            what::NONE => Event::Acknowledged {
                error: u32_in(body, 0),
            },
            what::FORK => Event::Fork {
                parent_pid: i32_at(body, 0),
                parent_tgid: i32_at(body, 4),
                child_pid: i32_at(body, 8),
                child_tgid: i32_at(body, 12),
            },
            what::EXEC => Event::Exec {
                pid: i32_at(body, 0),
                tgid: i32_at(body, 4),
            },
            what::COMM => Event::Comm {
                pid: i32_at(body, 0),
                tgid: i32_at(body, 4),
                comm: body[8..24].try_into().expect("sixteen bytes"),
            },
            what::EXIT => Event::Exit {
                pid: i32_at(body, 0),
                tgid: i32_at(body, 4),
                exit_code: u32_in(body, 8),
                exit_signal: u32_in(body, 12),
                parent_pid: i32_at(body, 16),
                parent_tgid: i32_at(body, 20),
            },
            what => Event::Other {
                what,
                data: body.try_into().expect("the union's bytes"),
            },
        };
        Ok(Repr {
            sequence: packet.sequence(),
            acknowledgement: packet.acknowledgement(),
            cpu,
            timestamp_nanoseconds,
            event,
        })
    }

    pub fn buffer_len(&self) -> usize {
        MESSAGE_LENGTH
    }

    /// Writes the message as cn_proc.c sends it: from port 0, the
    /// sequence in both headers, the union's unused bytes zero.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_length(MESSAGE_LENGTH as u32);
        packet.set_kind(DONE);
        packet.set_flags(0);
        packet.set_netlink_sequence(self.sequence);
        packet.set_port(0);
        packet.set_index(PROCESS_INDEX);
        packet.set_value(PROCESS_VALUE);
        packet.set_sequence(self.sequence);
        packet.set_acknowledgement(self.acknowledgement);
        packet.set_data_length(EVENT_LENGTH as u16);
        packet.set_connector_flags(0);
        let data = packet.data_mut();
        data.fill(0);
        let mut body = [0u8; EVENT_DATA];
        let mut put = |offset: usize, value: [u8; 4]| {
            body[offset..offset + 4].copy_from_slice(&value);
        };
        let what = match self.event {
            Event::Acknowledged { error } => {
                put(0, error.to_ne_bytes());
                what::NONE
            }
            Event::Fork {
                parent_pid,
                parent_tgid,
                child_pid,
                child_tgid,
            } => {
                put(0, parent_pid.to_ne_bytes());
                put(4, parent_tgid.to_ne_bytes());
                put(8, child_pid.to_ne_bytes());
                put(12, child_tgid.to_ne_bytes());
                what::FORK
            }
            Event::Exec { pid, tgid } => {
                put(0, pid.to_ne_bytes());
                put(4, tgid.to_ne_bytes());
                what::EXEC
            }
            Event::Comm { pid, tgid, comm } => {
                put(0, pid.to_ne_bytes());
                put(4, tgid.to_ne_bytes());
                body[8..24].copy_from_slice(&comm);
                what::COMM
            }
            Event::Exit {
                pid,
                tgid,
                exit_code,
                exit_signal,
                parent_pid,
                parent_tgid,
            } => {
                put(0, pid.to_ne_bytes());
                put(4, tgid.to_ne_bytes());
                put(8, exit_code.to_ne_bytes());
                put(12, exit_signal.to_ne_bytes());
                put(16, parent_pid.to_ne_bytes());
                put(20, parent_tgid.to_ne_bytes());
                what::EXIT
            }
            Event::Other { what, data } => {
                body = data;
                what
            }
        };
        data[0..4].copy_from_slice(&what.to_ne_bytes());
        data[4..8].copy_from_slice(&self.cpu.to_ne_bytes());
        data[8..16].copy_from_slice(&self.timestamp_nanoseconds.to_ne_bytes());
        data[EVENT_HEAD..EVENT_LENGTH].copy_from_slice(&body);
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = vec![0u8; self.buffer_len()];
        self.emit(&mut Packet::new_unchecked(&mut bytes[..]));
        bytes
    }
}

/// keepalived's set_proc_ev_listen: `PROC_CN_MCAST_LISTEN` (or `IGNORE`)
/// as the connector's 4 bytes of data, from `port`. The 4-byte form asks
/// for every kind of event on every kernel (5.x's 8-byte `proc_input`
/// would filter them, and older kernels refuse it).
pub fn subscription_message(listen: bool, port: u32) -> Vec<u8> {
    let mut bytes = vec![0u8; DATA + 4];
    let mut packet = Packet::new_unchecked(&mut bytes[..]);
    packet.set_length((DATA + 4) as u32);
    packet.set_kind(DONE);
    packet.set_port(port);
    packet.set_index(PROCESS_INDEX);
    packet.set_value(PROCESS_VALUE);
    packet.set_data_length(4);
    packet
        .data_mut()
        .copy_from_slice(&(if listen { LISTEN } else { IGNORE }).to_ne_bytes());
    bytes
}

#[cfg(test)]
mod tests;
