//! The tenants' network namespaces, `fulcrum-vniN`, kept as `ip netns`
//! keeps them (fulcrum-netns), so that operators can look inside (`ip
//! netns exec fulcrum-vni100 ipvsadm -Ln`) and a restarted Mux finds its
//! own.

pub use fulcrum_netns::{open_or_create, remove, run_in};

const PREFIX: &str = "fulcrum-vni";

/// The namespace of the tenant of `vni`.
pub fn name(vni: u32) -> String {
    format!("{PREFIX}{vni}")
}

/// The names of the tenants' namespaces there are, with their VNIs (a Mux
/// started again adopts them).
pub fn existing() -> Vec<(String, u32)> {
    fulcrum_netns::names()
        .into_iter()
        .filter_map(|name| {
            let vni = name.strip_prefix(PREFIX)?.parse().ok()?;
            Some((name, vni))
        })
        .collect()
}
