//! keepalived's firewall for a master without accept mode (`no_accept`,
//! the default in strict mode): RFC 5798 §6.1 says such a master must not
//! take packets addressed to the virtual addresses it does not own, so
//! keepalived 2.2.7 (built with nftables only, as Debian's is) drops them
//! with nftables: table `keepalived` in families `ip` and `ip6`, a set
//! `vips` of the dropped addresses, and chains `in`/`out` hooked at input
//! and output at priority filter - 1 dropping packets to or from an address
//! of the set. pulse sends the same messages keepalived does, so that an
//! operator's `nft` scripts and listings keep working.
//!
//! The messages are typed as rust-netlink's crates type theirs, on
//! netlink-packet-core: [`NftablesMessage`] (the nfgenmsg header and one
//! object's attributes, [`message`]) in a `NetlinkMessage`, one module per
//! kernel object ([`table`], [`chain`], [`set`], [`set_element`],
//! [`rule`] and its [`expression`]s, the [`data`] they hold), each
//! attribute an enum variant that parses and emits itself. What a change
//! needs sent is worked out without I/O ([`DropState`] filling a
//! [`Batch`], in [`batch`]); [`Firewall`] sends it over a non-blocking
//! socket and reads the kernel's acknowledgements ([`socket`]).
//!
//! No nftables crate: they wrap libnftnl (C) or cover far more than the
//! few messages this needs.
//!
//! Not done: IPv6 link-local virtual addresses, which keepalived drops in
//! the `in_link_local`/`out_link_local` chains per interface; pulse creates
//! the chains empty and leaves those addresses alone.

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
use std::net::IpAddr;
use std::time::Duration;

use netlink_packet_core::{DecodeError, NLM_F_ACK, NLM_F_REQUEST};

pub use batch::{
    Batch, DropState, INPUT_CHAIN, INPUT_LINK_LOCAL_CHAIN, NEIGHBOR_DISCOVERY_SET, OUTPUT_CHAIN,
    OUTPUT_LINK_LOCAL_CHAIN, SET, TABLE, TableFamily,
};
pub use message::{NfGenHeader, NftablesMessage, ParseError};
pub use socket::{Acknowledgements, Refusal};

use socket::Connection;

/// Why a change did not reach the kernel. A refused batch changed nothing
/// (nftables applies a batch all or nothing), and pulse's idea of what is
/// dropped stays what it was.
#[derive(Debug, thiserror::Error)]
pub enum FirewallError {
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

fn refusals(refusals: &[Refusal]) -> String {
    refusals
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The nftables firewall: [`DropState`] and a netfilter netlink socket,
/// opened when first needed (within the tokio runtime). Each call is one
/// batch and its acknowledgements, at most a couple of seconds if the
/// kernel does not answer.
#[derive(Debug, Default)]
pub struct Firewall {
    state: DropState,
    connection: Option<Connection>,
}

impl Firewall {
    /// Drops traffic to and from `addresses` for one more master.
    pub async fn drop_addresses(&mut self, addresses: &[IpAddr]) -> Result<(), FirewallError> {
        let mut state = self.state.clone();
        let leftovers = if state.creates_first_table(addresses) {
            self.leftover_tables().await?
        } else {
            Vec::new()
        };
        for family in &leftovers {
            tracing::info!("Deleting old {} {TABLE} table", family.name());
        }
        let mut batch = Batch::new();
        state.drop_addresses(addresses, &leftovers, &mut batch);
        self.apply(batch).await?;
        self.state = state;
        Ok(())
    }

    /// Lets traffic to and from `addresses` through again, for one master
    /// fewer.
    pub async fn accept_addresses(&mut self, addresses: &[IpAddr]) -> Result<(), FirewallError> {
        let mut state = self.state.clone();
        let mut batch = Batch::new();
        state.accept_addresses(addresses, &mut batch);
        self.apply(batch).await?;
        self.state = state;
        Ok(())
    }

    /// Deletes the tables, as keepalived does when it stops.
    pub async fn remove_tables(&mut self) -> Result<(), FirewallError> {
        let mut state = self.state.clone();
        let mut batch = Batch::new();
        state.remove_tables(&mut batch);
        self.apply(batch).await?;
        self.state = state;
        Ok(())
    }

    fn connection(&mut self) -> Result<&mut Connection, FirewallError> {
        match &mut self.connection {
            Some(connection) => Ok(connection),
            slot @ None => Ok(slot.insert(Connection::open().map_err(FirewallError::Open)?)),
        }
    }

    /// The families whose `keepalived` table exists already, asked one at
    /// a time as keepalived does (check_table).
    async fn leftover_tables(&mut self) -> Result<Vec<TableFamily>, FirewallError> {
        let connection = self.connection()?;
        let mut leftovers = Vec::new();
        for family in [TableFamily::Ipv4, TableFamily::Ipv6] {
            let sequence = connection.take_sequences(1);
            let question = batch::netlink_message(
                batch::get_table(family),
                NLM_F_REQUEST | NLM_F_ACK,
                sequence,
            );
            match connection.exchange(&[question]).await {
                Ok(_) => leftovers.push(family),
                Err(FirewallError::Refused(refusals))
                    if refusals
                        .iter()
                        .all(|refusal| refusal.error.raw_os_error() == Some(libc::ENOENT)) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(leftovers)
    }

    async fn apply(&mut self, batch: Batch) -> Result<(), FirewallError> {
        if batch.is_empty() {
            return Ok(());
        }
        let connection = self.connection()?;
        let count = batch.messages().count() + 2;
        let messages = batch.into_netlink(connection.take_sequences(count));
        connection.exchange(&messages).await?;
        Ok(())
    }
}
