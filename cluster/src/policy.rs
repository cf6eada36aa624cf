//! A policy file (keepalived.conf syntax with `virtual_network` blocks) as
//! the store's policy keys: pure, no I/O.
//!
//! Rules:
//! - The file is read and checked as `pulse -t` reads it; a file with an
//!   error is no policy (the caller writes nothing).
//! - Every virtual server names its virtual network: a policy has no
//!   place for a server of the LVS mode, and leaving one out silently
//!   would hide a mistake.
//! - What the store cannot carry is an error, said where it was written,
//!   never dropped: a URL's `regex`, a persistence granularity.
//! - The entries are the whole policy: what is under `policy/` in the
//!   store and not here is what this policy removes.

use std::collections::BTreeMap;

use fulcrum_config::diagnostic::Diagnostic;
use fulcrum_config::model::{self as config, CheckerKind, Config, VirtualServerAddress};
use fulcrum_config::syntax::{FileId, Span};

use crate::schema::{self, Dip, Http, Network, Probe, Timing, UrlCheck, Vip};

/// A policy: its keys (without `policy/revision`) and their JSON values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    pub entries: BTreeMap<String, String>,
    pub networks: usize,
    pub vips: usize,
    pub dips: usize,
}

/// The policy `config` (an error-free model) describes, or the errors that
/// keep it from being one.
pub fn of(config: &Config) -> Result<Policy, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut policy = Policy::default();
    for network in &config.virtual_networks {
        policy.entries.insert(
            schema::network(&network.name),
            schema::to_json(&Network { vni: network.vni }),
        );
        policy.networks += 1;
    }
    for server in &config.virtual_servers {
        let place = server.place.0.unwrap_or(Span {
            // Line 0: the whole file.
            file: FileId(0),
            line: 0,
            start: 0,
            end: 0,
        });
        let Some(network) = &server.virtual_network else {
            errors.push(Diagnostic::error(
                place,
                "a policy's virtual servers are tenants' VIPs: this one names no \
                 'virtual_network'",
            ));
            continue;
        };
        let VirtualServerAddress::Address { address, port } = server.address else {
            // The grammar takes the network away from such a server.
            continue;
        };
        if server.persistence_granularity.is_some() {
            errors.push(Diagnostic::error(
                place,
                "a VIP's 'persistence_granularity' is not carried by the store yet",
            ));
        }
        let protocol = match server.protocol.unwrap_or(config::Protocol::Udp) {
            config::Protocol::Tcp => schema::Protocol::Tcp,
            config::Protocol::Udp => schema::Protocol::Udp,
            config::Protocol::Sctp => schema::Protocol::Sctp,
        };
        let dips = server
            .real_servers
            .iter()
            .map(|real_server| Dip {
                address: real_server.address,
                port: real_server.port,
                weight: real_server.weight,
                probes: real_server
                    .checkers
                    .iter()
                    .filter_map(|checker| probe(checker, place, &mut errors))
                    .collect(),
            })
            .collect::<Vec<_>>();
        policy.dips += dips.len();
        policy.vips += 1;
        policy.entries.insert(
            schema::vip(address, protocol, port),
            schema::to_json(&Vip {
                network: network.clone(),
                scheduler: server.scheduler.name().to_owned(),
                persistence_timeout: server
                    .persistence_timeout
                    .map(|timeout| timeout.as_secs() as u32),
                dips,
            }),
        );
    }
    if errors.is_empty() {
        Ok(policy)
    } else {
        Err(errors)
    }
}

/// The store's form of a checker the grammar allows on a tenant's DIP.
fn probe(checker: &config::Checker, place: Span, errors: &mut Vec<Diagnostic>) -> Option<Probe> {
    let common = &checker.common;
    let timing = Timing {
        delay_loop: common.delay_loop.as_secs_f64(),
        connect_timeout: common.connect_timeout.as_secs_f64(),
        retry: common.retry,
        delay_before_retry: common.delay_before_retry.as_secs_f64(),
        warmup: common.warmup.as_secs_f64(),
        alpha: common.alpha,
        connect_port: common.connection.connect_port,
    };
    let connection = &common.connection;
    if connection.connect_ip.is_some()
        || connection.bind_to.is_some()
        || connection.bind_interface.is_some()
        || connection.bind_port.is_some()
        || connection.fwmark.is_some()
    {
        errors.push(Diagnostic::error(
            place,
            "a probe of a tenant's DIP connects from its host agent to the DIP: connect_ip, \
             bindto, bind_if, bind_port and fwmark are not carried",
        ));
    }
    let http = |check: &config::HttpCheck, errors: &mut Vec<Diagnostic>| Http {
        http_protocol: match check.protocol {
            config::HttpProtocol::Http10 => "1.0",
            config::HttpProtocol::Http10Close => "1.0C",
            config::HttpProtocol::Http11 => "1.1",
        }
        .to_owned(),
        virtualhost: check.virtualhost.clone(),
        urls: check
            .urls
            .iter()
            .map(|url| {
                if url.regex.is_some() {
                    errors.push(Diagnostic::error(
                        place,
                        "a probe's url 'regex' is not carried by the store yet",
                    ));
                }
                UrlCheck {
                    path: url.path.clone(),
                    digest: url.digest.clone(),
                    status_codes: url
                        .status_codes
                        .iter()
                        .map(|range| [*range.start(), *range.end()])
                        .collect(),
                    virtualhost: url.virtualhost.clone(),
                }
            })
            .collect(),
    };
    Some(match &checker.kind {
        CheckerKind::Tcp => Probe::Tcp { timing },
        CheckerKind::Ping => Probe::Ping { timing },
        CheckerKind::Http(check) => Probe::Http {
            timing,
            http: http(check, errors),
        },
        CheckerKind::Ssl(check) => Probe::Ssl {
            timing,
            http: http(check, errors),
        },
        // The grammar refuses the others on a tenant's DIP.
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
