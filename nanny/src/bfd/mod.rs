//! BFD (RFC 5880 asynchronous mode, RFC 5881 single hop) for BFD_CHECK.
//!
//! - [`packet`]: the control packet, a checked view and its `Repr`.
//! - [`session`]: one session's state machine, without I/O.
//!
//! The sockets and the task that runs every configured session are in
//! [`crate::driver::bfd`].

pub mod packet;
pub mod session;
