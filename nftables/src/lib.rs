//! nftables over nfnetlink, without libnftnl: the messages typed as
//! rust-netlink's crates type theirs, on netlink-packet-core.
//! [`NftablesMessage`] (the nfgenmsg header and one object's attributes,
//! [`message`]) goes in a `NetlinkMessage`; there is one module per
//! kernel object ([`table`], [`chain`], [`set`], [`set_element`],
//! [`rule`] and its [`expression`]s, the [`data`] they hold), each
//! attribute an enum variant that parses and emits itself.
//!
//! A change is a [`Batch`], worked out without I/O by its user (pulse's
//! VRRP firewall, the host agent's NAT); [`Connection`] sends it in one
//! datagram and reads the kernel's acknowledgements ([`socket`]). The
//! kernel applies a batch all or nothing.
//!
//! No nftables crate: they wrap libnftnl (C) or cover far more than the
//! few messages these need.

mod attribute;
pub mod batch;
pub mod chain;
pub mod data;
pub mod expression;
pub mod header;
pub mod message;
pub mod rule;
pub mod set;
pub mod set_element;
pub mod socket;
pub mod table;

use std::io;
use std::time::Duration;

use netlink_packet_core::DecodeError;

pub use batch::{Batch, netlink_message};
pub use expression::Expression;
pub use message::{NfGenHeader, NftablesMessage, ParseError};
pub use socket::{Acknowledgements, Connection, Refusal};

/// `NF_INET_*` hooks, and the netdev family's one.
pub mod hook {
    pub const PRE_ROUTING: u32 = 0;
    pub const LOCAL_IN: u32 = 1;
    pub const FORWARD: u32 = 2;
    pub const LOCAL_OUT: u32 = 3;
    pub const POST_ROUTING: u32 = 4;
    /// `NF_NETDEV_INGRESS`: a device's frames before any protocol sees
    /// them.
    pub const INGRESS: u32 = 0;
}

/// The priorities nft names (`NF_IP_PRI_*`): lower runs first.
pub mod priority {
    /// Before connection tracking (which runs at -200): where a packet's
    /// conntrack zone is chosen.
    pub const RAW: i32 = -300;
    /// Destination NAT (`dstnat`).
    pub const DESTINATION_NAT: i32 = -100;
    pub const FILTER: i32 = 0;
    /// Source NAT (`srcnat`).
    pub const SOURCE_NAT: i32 = 100;
}

/// Verdicts (`NF_*`, `NFT_*`), as an immediate's verdict code or a base
/// chain's policy.
pub mod verdict {
    pub const DROP: i32 = 0;
    pub const ACCEPT: i32 = 1;
    pub const CONTINUE: i32 = -1;
    pub const JUMP: i32 = -3;
    pub const GOTO: i32 = -4;
    pub const RETURN: i32 = -5;
}

/// Why a batch did not reach the kernel. A refused batch changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot open a netfilter netlink socket: {0}")]
    Open(#[source] io::Error),
    #[error("cannot send to the kernel: {0}")]
    Send(#[source] io::Error),
    #[error("cannot read the kernel's answer: {0}")]
    Receive(#[source] io::Error),
    #[error("cannot parse the kernel's answer: {0}")]
    Parse(#[source] DecodeError),
    #[error("no answer from the kernel within {timeout:?} for {waiting_for}")]
    Timeout {
        timeout: Duration,
        waiting_for: String,
    },
    /// Each message the kernel refused: `NEWSETELEM ip keepalived vips:
    /// File exists (os error 17)`.
    #[error("{}", refusals(.0))]
    Refused(Vec<Refusal>),
}

impl Error {
    /// Whether the kernel refused every message refused for `errno` alone
    /// (ENOENT: asked for a table that is not there).
    pub fn refused_only_for(&self, errno: i32) -> bool {
        matches!(self, Error::Refused(refusals)
            if refusals.iter().all(|refusal| refusal.error.raw_os_error() == Some(errno)))
    }
}

fn refusals(refusals: &[Refusal]) -> String {
    refusals
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
