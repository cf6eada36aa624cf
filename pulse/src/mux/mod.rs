//! The SDN mode's Mux (docs/sdn.md).

pub mod desired;
