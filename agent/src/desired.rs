//! What a host agent does for the policy, from a reading of the store and
//! its own file: pure, no I/O.
//!
//! Rules:
//! - The agent serves the networks its file names (`virtual_network NAME {
//!   vni N interface IF }`); the store's policy says which DIPs each has.
//!   A network its file names but the policy does not define, or defines
//!   with another VNI, is a problem, said, and not served: terminating the
//!   wrong VNI on a segment would join two tenants.
//! - The DIPs it looks for are the policy's DIPs of its networks; one is
//!   found when the segment's neighbour table has its MAC.
//! - **Translations**: each VIP rule (address, protocol, frontend port) of
//!   a served network, for each of its DIPs, is translated to the DIP's
//!   address and backend port ([`crate::nat`] says how).
//! - Its probes are the policy's for the DIPs it found, written out as keepalived.conf text and
//!   read by the same parser as any configuration (one grammar, the same
//!   semantics as keepalived's), each bound to its network's segment
//!   (`bind_if`): tenants' DIPs may share an address, and a socket bound
//!   to the segment leaves by it whatever the routing table says.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

use fulcrum_cluster::schema::{Probe, Protocol, Vip};
use fulcrum_cluster::state::State;
use fulcrum_cluster::state::VipKey;
use fulcrum_cluster::store::Reading;

/// A network of the agent's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub network: String,
    pub vni: u32,
    pub interface: String,
    /// The network's conntrack zone and routing table on this host (see
    /// [`crate::nat`]): its place in the agent's file, from 1.
    pub zone: u16,
}

/// The DIPs found on this host's segments: (network, address) -> MAC.
pub type Found = BTreeMap<(String, IpAddr), [u8; 6]>;

/// A VIP rule as one DIP serves it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Translation {
    pub network: String,
    pub vip: SocketAddr,
    pub protocol: Protocol,
    pub dip: SocketAddr,
}

/// The policy as it concerns this host.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Local {
    pub revision: u64,
    /// The segments served (those the policy agrees with).
    pub segments: Vec<Segment>,
    /// (network, DIP) of every DIP to look for.
    pub dips: BTreeSet<(String, IpAddr)>,
    /// A VIP (address and frontend port) to its network, to file verdicts.
    pub vips: BTreeMap<SocketAddr, String>,
    /// Every VIP rule of the served networks, for each DIP.
    pub translations: Vec<Translation>,
    /// The policy's VIPs of the served networks, for their probes.
    pub vip_rules: Vec<(VipKey, Vip, String)>,
    pub problems: Vec<String>,
}

/// What `segments` of the agent's file make of `reading`.
pub fn local(reading: &Reading, segments: &[Segment]) -> Local {
    let state = State::of(reading);
    let mut local = Local {
        revision: state.policy_revision,
        ..Local::default()
    };
    for segment in segments {
        match state
            .networks
            .get(&segment.network)
            .map(|network| network.vni)
        {
            Some(vni) if vni == segment.vni => local.segments.push(segment.clone()),
            Some(vni) => local.problems.push(format!(
                "network {} has VNI {vni} in the policy, {} in this agent's file: not served",
                segment.network, segment.vni
            )),
            None => local.problems.push(format!(
                "network {} is not in the policy: not served",
                segment.network
            )),
        }
    }
    for (key, vip) in &state.vips {
        let (address, protocol, port) = (key.address, key.protocol, key.port);
        let Some(segment) = local
            .segments
            .iter()
            .find(|segment| segment.network == vip.network)
        else {
            continue;
        };
        local
            .vips
            .insert(SocketAddr::new(address, port), vip.network.clone());
        for dip in &vip.dips {
            local.dips.insert((vip.network.clone(), dip.address));
            local.translations.push(Translation {
                network: vip.network.clone(),
                vip: SocketAddr::new(address, port),
                protocol,
                dip: SocketAddr::new(dip.address, dip.port),
            });
        }
        local
            .vip_rules
            .push((*key, vip.clone(), segment.interface.clone()));
    }
    local
}

/// The probes of the DIPs of `local` that this host holds (`found`), as
/// keepalived.conf text (empty: none): another host's DIPs are its
/// agent's to probe.
pub fn probes(local: &Local, found: &Found) -> String {
    let mut text = String::new();
    for (key, vip, interface) in &local.vip_rules {
        let (address, protocol, port) = (key.address, key.protocol, key.port);
        let probed: Vec<_> = vip
            .dips
            .iter()
            .filter(|dip| {
                !dip.probes.is_empty() && found.contains_key(&(vip.network.clone(), dip.address))
            })
            .collect();
        if probed.is_empty() {
            continue;
        }
        // NAT, so that keepalived's rules keep each real server's port
        // (DR resets it to the virtual server's): the probes go to the
        // backend port.
        let _ = writeln!(
            text,
            "virtual_server {address} {port} {{\n    protocol {}\n    lb_kind NAT",
            protocol.name().to_uppercase()
        );
        for dip in probed {
            let _ = writeln!(text, "    real_server {} {} {{", dip.address, dip.port);
            for probe in &dip.probes {
                write_probe(&mut text, probe, interface);
            }
            let _ = writeln!(text, "    }}");
        }
        let _ = writeln!(text, "}}");
    }
    text
}

/// One probe as a checker block.
fn write_probe(text: &mut String, probe: &Probe, interface: &str) {
    let (name, timing, http) = match probe {
        Probe::Tcp { timing } => ("TCP_CHECK", timing, None),
        Probe::Ping { timing } => ("PING_CHECK", timing, None),
        Probe::Http { timing, http } => ("HTTP_GET", timing, Some(http)),
        Probe::Ssl { timing, http } => ("SSL_GET", timing, Some(http)),
    };
    let _ = writeln!(text, "        {name} {{");
    let _ = writeln!(
        text,
        "            delay_loop {}\n            connect_timeout {}\n            retry {}\n            \
         delay_before_retry {}\n            warmup {}\n            bind_if {}",
        timing.delay_loop,
        timing.connect_timeout,
        timing.retry,
        timing.delay_before_retry,
        timing.warmup,
        quoted(interface)
    );
    if timing.alpha {
        let _ = writeln!(text, "            alpha");
    }
    if let Some(port) = timing.connect_port {
        let _ = writeln!(text, "            connect_port {port}");
    }
    if let Some(http) = http {
        let _ = writeln!(text, "            http_protocol {}", http.http_protocol);
        if let Some(host) = &http.virtualhost {
            let _ = writeln!(text, "            virtualhost {}", quoted(host));
        }
        for url in &http.urls {
            let _ = writeln!(text, "            url {{");
            if let Some(path) = &url.path {
                let _ = writeln!(text, "                path {}", quoted(path));
            }
            if let Some(digest) = &url.digest {
                let _ = writeln!(text, "                digest {digest}");
            }
            for [low, high] in &url.status_codes {
                if low == high {
                    let _ = writeln!(text, "                status_code {low}");
                } else {
                    let _ = writeln!(text, "                status_code {low}-{high}");
                }
            }
            if let Some(host) = &url.virtualhost {
                let _ = writeln!(text, "                virtualhost {}", quoted(host));
            }
            let _ = writeln!(text, "            }}");
        }
    }
    let _ = writeln!(text, "        }}");
}

/// A word as keepalived reads a quoted string (the store's text may hold
/// spaces or comment characters).
fn quoted(word: &str) -> String {
    format!("\"{}\"", word.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests;
