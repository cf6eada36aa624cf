//! `labkit`: what tests need inside the lab's guest kernel.
//!
//! Network namespaces (compatible with `ip netns`), topologies of clients,
//! directors and real servers joined by veth pairs and bridges, and a small
//! HTTP responder per real server that answers with its own name. Everything
//! that can run as a thread does: under emulation each process costs 0.1 to
//! 0.3 s.

pub mod captured;
pub mod etcd;
pub mod http;
mod ipvs_connections;
pub mod kernel;
pub mod lines;
mod listing;
mod machine;
mod namespace;
pub mod notify;
pub mod prometheus;
pub mod routes;
pub mod sdn;
pub mod topology;

pub use ipvs_connections::{IpvsConnection, ipvs_connections, ipvs_connections_here};
pub use listing::{listed_without_repeats, repeats_a_service};
pub use machine::Machine;
pub use namespace::{Namespace, run_ip};
pub use topology::{
    DirectReturnTopology, Director, FailoverTopology, Host, NatTopology, Reception, neighbour,
};

/// Whether `program` (a reference peer: keepalived, ipvsadm, nft) is
/// installed and runs: `program --version` succeeds. A test that compares
/// with it skips, or compares less, without it.
pub fn installed(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Whether this process runs inside the lab's guest (`cargo xtask lab`).
pub fn in_lab() -> bool {
    std::env::var_os("FULCRUM_LAB").is_some()
}

/// Stops a lab test unless it runs in the lab: lab tests create
/// namespaces, load modules and change sysctls, which must not happen to a
/// developer's machine (`cargo test -- --ignored` as root).
pub fn require_lab() {
    assert!(
        in_lab(),
        "lab tests run in the lab's guest kernel only: use `cargo xtask test`"
    );
}
