use std::fmt;
use std::ops::{BitAnd, BitOr, BitOrAssign, Not};

/// Service flags (`IP_VS_SVC_F_*`).
///
/// Unknown bits are kept, so a value read from the kernel is written back
/// unchanged. The three `SCHED_*` bits mean different things to different
/// schedulers: `sh` and `mh` read [`SCHED_1`](Self::SCHED_1) as "fallback" and
/// [`SCHED_2`](Self::SCHED_2) as "hash the port too"; ipvsadm calls them
/// `flag-1`..`flag-3` otherwise.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ServiceFlags(u32);

impl ServiceFlags {
    /// Persistent service (`-p`): a client sticks to one destination.
    pub const PERSISTENT: Self = Self(0x0001);
    /// Set by the kernel while the service is in its hash table; it strips
    /// the bit on add and forces it on edit, so sending it changes nothing.
    pub const HASHED: Self = Self(0x0002);
    /// One-packet scheduling (`-o`, UDP): schedule every datagram.
    pub const ONE_PACKET: Self = Self(0x0004);
    pub const SCHED_1: Self = Self(0x0008);
    pub const SCHED_2: Self = Self(0x0010);
    pub const SCHED_3: Self = Self(0x0020);
    /// `sh-fallback` / `mh-fallback`
    pub const SH_FALLBACK: Self = Self::SCHED_1;
    /// `sh-port` / `mh-port`
    pub const SH_PORT: Self = Self::SCHED_2;

    const NAMES: [(Self, &'static str); 6] = [
        (Self::PERSISTENT, "persistent"),
        (Self::HASHED, "hashed"),
        (Self::ONE_PACKET, "one-packet"),
        (Self::SCHED_1, "flag-1"),
        (Self::SCHED_2, "flag-2"),
        (Self::SCHED_3, "flag-3"),
    ];

    pub const fn empty() -> Self {
        Self(0)
    }

    pub const fn from_bits(bits: u32) -> Self {
        Self(bits)
    }

    pub const fn bits(self) -> u32 {
        self.0
    }

    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn insert(&mut self, other: Self) {
        self.0 |= other.0;
    }

    pub fn remove(&mut self, other: Self) {
        self.0 &= !other.0;
    }

    /// Parse an ipvsadm-style name (`persistent`, `one-packet`, `flag-1`,
    /// `sh-fallback`, `mh-port`, ...).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "sh-fallback" | "mh-fallback" => Some(Self::SCHED_1),
            "sh-port" | "mh-port" => Some(Self::SCHED_2),
            "ops" => Some(Self::ONE_PACKET),
            _ => Self::NAMES
                .iter()
                .find(|(_, known)| *known == name)
                .map(|(flag, _)| *flag),
        }
    }

    /// The generic names of the bits set (unknown bits as hex).
    pub fn names(self) -> Vec<String> {
        let mut names = Vec::new();
        let mut rest = self.0;
        for (flag, name) in Self::NAMES {
            if self.contains(flag) {
                names.push(name.to_string());
                rest &= !flag.0;
            }
        }
        if rest != 0 {
            names.push(format!("{rest:#x}"));
        }
        names
    }
}

impl fmt::Debug for ServiceFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ServiceFlags({:#x}: {})", self.0, self.names().join("|"))
    }
}

impl fmt::Display for ServiceFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.names().join(","))
    }
}

impl BitOr for ServiceFlags {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl BitOrAssign for ServiceFlags {
    fn bitor_assign(&mut self, other: Self) {
        self.0 |= other.0;
    }
}

impl BitAnd for ServiceFlags {
    type Output = Self;
    fn bitand(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }
}

impl Not for ServiceFlags {
    type Output = Self;
    fn not(self) -> Self {
        Self(!self.0)
    }
}

impl From<u32> for ServiceFlags {
    fn from(bits: u32) -> Self {
        Self(bits)
    }
}

impl From<ServiceFlags> for u32 {
    fn from(flags: ServiceFlags) -> u32 {
        flags.0
    }
}
