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
//! The messages are fulcrum-nftables's; what a change needs sent is
//! worked out without I/O ([`DropState`] filling a [`Batch`], in
//! [`drop_state`]); [`Firewall`] sends it and reads the kernel's
//! acknowledgements.
//!
//! Not done: IPv6 link-local virtual addresses, which keepalived drops in
//! the `in_link_local`/`out_link_local` chains per interface; pulse creates
//! the chains empty and leaves those addresses alone.

pub mod drop_state;

use std::net::IpAddr;

use fulcrum_nftables::{Batch, Connection};
use netlink_packet_core::{NLM_F_ACK, NLM_F_REQUEST};

pub use drop_state::{
    DropState, INPUT_CHAIN, INPUT_LINK_LOCAL_CHAIN, NEIGHBOR_DISCOVERY_SET, OUTPUT_CHAIN,
    OUTPUT_LINK_LOCAL_CHAIN, SET, TABLE, TableFamily, TableSettings, VMAC_MAP, VMAC_SET, Vmac,
};
/// Why a change did not reach the kernel. A refused batch changed nothing
/// (nftables applies a batch all or nothing), and pulse's idea of what is
/// dropped stays what it was.
pub use fulcrum_nftables::Error as FirewallError;

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
    /// A firewall whose tables have keepalived's `settings`.
    pub fn new(settings: TableSettings) -> Firewall {
        Firewall {
            state: DropState::new(settings),
            connection: None,
        }
    }

    /// Drops traffic to and from `addresses` for one more master.
    pub async fn drop_addresses(&mut self, addresses: &[IpAddr]) -> Result<(), FirewallError> {
        let mut state = self.state.clone();
        let leftovers = self
            .leftovers_if(state.creates_first_table(addresses))
            .await?;
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

    /// Puts a macvlan into the vmac sets, as keepalived does when it makes
    /// one.
    pub async fn add_vmac(&mut self, vmac: Vmac) -> Result<(), FirewallError> {
        let mut state = self.state.clone();
        let leftovers = self.leftovers_if(state.vmac_creates_first_table()).await?;
        let mut batch = Batch::new();
        state.add_vmac(vmac, &leftovers, &mut batch);
        self.apply(batch).await?;
        self.state = state;
        Ok(())
    }

    /// Takes a macvlan out of the vmac sets, as keepalived does when it
    /// deletes one.
    pub async fn remove_vmac(&mut self, vmac: Vmac) -> Result<(), FirewallError> {
        let mut state = self.state.clone();
        let mut batch = Batch::new();
        state.remove_vmac(vmac, &mut batch);
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

    /// Before the first table: the tables a previous run left, which its
    /// batch deletes first (keepalived's line for each); none otherwise.
    async fn leftovers_if(&mut self, first: bool) -> Result<Vec<TableFamily>, FirewallError> {
        if !first {
            return Ok(Vec::new());
        }
        let leftovers = self.leftover_tables().await?;
        for family in &leftovers {
            tracing::info!(
                "Deleting old {} {} table",
                family.name(),
                self.state.settings().table
            );
        }
        Ok(leftovers)
    }

    /// The families whose table (`keepalived`, or as `nftables` names
    /// it) exists already, asked one at a time as keepalived does
    /// (check_table).
    async fn leftover_tables(&mut self) -> Result<Vec<TableFamily>, FirewallError> {
        let table = self.state.settings().table.clone();
        let connection = self.connection()?;
        let mut leftovers = Vec::new();
        for family in [TableFamily::Ipv4, TableFamily::Ipv6] {
            let sequence = connection.take_sequences(1);
            let question = fulcrum_nftables::netlink_message(
                drop_state::get_table(family, &table),
                NLM_F_REQUEST | NLM_F_ACK,
                sequence,
            );
            match connection.exchange(&[question]).await {
                Ok(_) => leftovers.push(family),
                Err(error) if error.refused_only_for(libc::ENOENT) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(leftovers)
    }

    async fn apply(&mut self, batch: Batch) -> Result<(), FirewallError> {
        self.connection()?.apply(batch).await
    }
}
