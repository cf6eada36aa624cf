//! The SDN mode's cluster store (docs/sdn.md): the key schema in etcd
//! ([`schema`]), a policy file as its keys ([`policy`]), writing them in
//! one transaction and reading the cluster's status ([`store`]).

pub mod policy;
pub mod schema;
pub mod state;
pub mod status;
pub mod store;
pub mod sync;

/// The etcd client the store is reached with, for its watch types.
pub use etcd_client;
