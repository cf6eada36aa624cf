//! The kernel's `mh` scheduler as a model: from a service's destinations
//! in the kernel's list order, the lookup table `ip_vs_mh.c` fills, and
//! the destination it chooses for a client. Pure; it answers "which DIP
//! does each Mux choose for this client?" from what each Mux read of its
//! own kernel (`pulse --cluster URLS --which-dip`), and the lab checks it
//! against the kernel's own choices (pulse/tests/lab/maglev.rs: a drained
//! destination, weights 1, 2 and 100; pulse/tests/lab/ecmp.rs: live
//! connections through three Muxes).
//!
//! What it copies (`net/netfilter/ipvs/ip_vs_mh.c`, kernel 6.1 to now):
//! - the hash is `hsiphash`, which on a 64-bit kernel is SipHash-1-3 with
//!   64-bit keys, truncated to 32 bits, over the 4 bytes of
//!   `offset + port + address` (the address folded to 32 bits: IPv6's four
//!   words XORed), in the machine's byte order (little-endian: x86, arm64);
//!   its keys are constants, the same on every machine;
//! - each destination's permutation starts at `hash1 % M` and steps by
//!   `hash2 % (M - 1) + 1`; its turns are its last weight divided by the
//!   weights' greatest common divisor, shifted right so that the largest
//!   takes at most [`TABLE_BITS`] bits (at least one turn for a last
//!   weight above 0, none for 0);
//! - the table is filled round-robin over the list, each destination
//!   taking its turns' slots, the next free one along its permutation;
//! - a client hashes with `hash1` on its address, and its port with
//!   `mh-port` (else port 0); with `mh-fallback`, a destination at weight
//!   0 sends the client on along `hash1` with offsets (the kernel also
//!   skips an overloaded one, past its connection threshold: the Mux sets
//!   none, and the model has no connection counts). The
//!   hash's input is a sum (`offset + port + address`): two clients whose
//!   address and port add up alike share a row.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;

use siphasher::sip::SipHasher13;

/// The table's size on Debian's kernels (`CONFIG_IP_VS_MH_TAB_INDEX=12`:
/// the fifth of `ip_vs_mh.c`'s primes). A service holds at most this many
/// destinations; Maglev's even spread needs far fewer (the paper's rule:
/// the table at least 100 times the destinations, so 40 DIPs per VIP
/// here keep each DIP's share within about 1% of even).
pub const TABLE_SIZE: u32 = 4093;

/// `IP_VS_MH_TAB_BITS`: half of the table's index.
const TABLE_BITS: u32 = 6;

const HASH1: (u64, u64) = (2_654_435_761, 2_654_435_761);
const HASH2: (u64, u64) = (2_654_446_892, 2_654_446_892);

/// A destination as the table sees it, in the service's list order (the
/// kernel's dump order: head first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub address: SocketAddr,
    /// Its weight now: 0 is unavailable (a drained DIP).
    pub weight: u32,
    /// The last weight above 0 it was given (0 if created at 0): what its
    /// share of the table is made of.
    pub last_weight: u32,
}

/// A service's lookup table.
#[derive(Debug, Clone)]
pub struct Lookup {
    entries: Vec<Entry>,
    /// For each slot, the index of its destination in `entries`.
    slots: Vec<Option<usize>>,
}

/// What the scheduler is told by the service's flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// `mh-port`: the client's port is hashed too.
    pub port: bool,
    /// `mh-fallback`: a client whose destination is unavailable goes on.
    pub fallback: bool,
}

impl Lookup {
    /// The table the kernel fills for `entries` (list order).
    pub fn new(entries: Vec<Entry>) -> Lookup {
        Lookup::with_size(entries, TABLE_SIZE)
    }

    /// With another table size (a kernel built with another
    /// `CONFIG_IP_VS_MH_TAB_INDEX`; one of `ip_vs_mh.c`'s primes).
    pub fn with_size(entries: Vec<Entry>, size: u32) -> Lookup {
        let size_slots = size as usize;
        let mut slots = vec![None; size_slots];
        let gcd = entries
            .iter()
            .map(|entry| entry.last_weight)
            .filter(|&weight| weight > 0)
            .fold(0, greatest_common_divisor);
        if gcd == 0 || entries.is_empty() {
            return Lookup { entries, slots };
        }
        let largest = entries
            .iter()
            .map(|entry| entry.last_weight)
            .max()
            .unwrap_or(0)
            / gcd;
        // fls(): the position of the highest bit set, 1-based.
        let bits = u32::BITS - largest.leading_zeros();
        let shift = bits.saturating_sub(TABLE_BITS);
        struct Setup {
            permutation: u32,
            skip: u32,
            turns: u32,
        }
        let mut setups: Vec<Setup> = entries
            .iter()
            .map(|entry| {
                let offset = hash(entry.address.ip(), entry.address.port(), HASH1, 0) % size;
                let skip =
                    hash(entry.address.ip(), entry.address.port(), HASH2, 0) % (size - 1) + 1;
                let turns = match (entry.last_weight / gcd) >> shift {
                    0 => u32::from(entry.last_weight != 0),
                    turns => turns,
                };
                Setup {
                    permutation: offset,
                    skip,
                    turns,
                }
            })
            .collect();
        if setups.iter().all(|setup| setup.turns == 0) {
            return Lookup { entries, slots };
        }
        let mut taken = vec![false; size_slots];
        let mut filled = 0;
        // The kernel's loop: round-robin over the list, each destination
        // taking `turns` slots before the next one's turn.
        'fill: loop {
            for (index, setup) in setups.iter_mut().enumerate() {
                for _ in 0..setup.turns {
                    while taken[setup.permutation as usize] {
                        setup.permutation += setup.skip;
                        if setup.permutation >= size {
                            setup.permutation -= size;
                        }
                    }
                    taken[setup.permutation as usize] = true;
                    slots[setup.permutation as usize] = Some(index);
                    filled += 1;
                    if filled == size_slots {
                        break 'fill;
                    }
                }
            }
        }
        Lookup { entries, slots }
    }

    /// The destination the kernel chooses for a new flow from `client`,
    /// or `None` (it drops the flow: no destination available).
    pub fn choose(&self, client: SocketAddr, options: Options) -> Option<SocketAddr> {
        let size = self.slots.len() as u32;
        let port = if options.port { client.port() } else { 0 };
        let first = hash(client.ip(), port, HASH1, 0) % size;
        let entry = &self.entries[self.slots[first as usize]?];
        if entry.weight > 0 {
            return Some(entry.address);
        }
        if !options.fallback {
            return None;
        }
        for offset in 0..size {
            let shifted = (offset + first) % size;
            let slot = hash(client.ip(), port, HASH1, shifted) % size;
            let entry = &self.entries[self.slots[slot as usize]?];
            if entry.weight > 0 {
                return Some(entry.address);
            }
        }
        None
    }

    /// Each row's destination, row by row (none in an empty table): what
    /// a change of the destinations moves is the rows whose owner changes.
    pub fn rows(&self) -> impl Iterator<Item = Option<SocketAddr>> + '_ {
        self.slots
            .iter()
            .map(|slot| slot.map(|index| self.entries[index].address))
    }

    /// How many slots each destination holds, in list order.
    pub fn shares(&self) -> Vec<usize> {
        let mut shares = vec![0; self.entries.len()];
        for index in self.slots.iter().flatten() {
            shares[*index] += 1;
        }
        shares
    }
}

fn greatest_common_divisor(a: u32, b: u32) -> u32 {
    match NonZeroU32::new(b) {
        None => a,
        Some(b) => greatest_common_divisor(b.get(), a % b.get()),
    }
}

/// `ip_vs_mh_hashkey`.
fn hash(address: IpAddr, port: u16, key: (u64, u64), offset: u32) -> u32 {
    let folded = match address {
        IpAddr::V4(address) => u32::from(address),
        IpAddr::V6(address) => {
            let octets = address.octets();
            octets
                .chunks_exact(4)
                .map(|word| u32::from_be_bytes([word[0], word[1], word[2], word[3]]))
                .fold(0, |folded, word| folded ^ word)
        }
    };
    let value = offset.wrapping_add(u32::from(port)).wrapping_add(folded);
    let mut hasher = SipHasher13::new_with_keys(key.0, key.1);
    std::hash::Hasher::write(&mut hasher, &value.to_le_bytes());
    std::hash::Hasher::finish(&hasher) as u32
}

#[cfg(test)]
mod tests;
