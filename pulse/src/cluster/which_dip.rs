//! `pulse --cluster URLS --which-dip CLIENT:PORT [--vip VIP:PORT[/PROTOCOL]]`:
//! for a client's address and port, the DIP each Mux chooses for each VIP
//! (or the one asked), and whether the Muxes agree, which they must for a
//! flow that the routers move between Muxes to keep its DIP. Pure, from a
//! reading of the store.
//!
//! Rules:
//! - **Each Mux's own table.** A Mux's choice is computed from what it
//!   published of its kernel's table (`live/muxes/ID/services/...`: the
//!   destinations in the kernel's list order, weights, last weights, the
//!   `mh` flags), never from the policy: the check is that the tables
//!   agree, and a Mux that applied another revision, or holds another
//!   order, shows it.
//! - **Only `mh` is computed** ([`crate::mux::maglev::lookup`], the
//!   kernel's scheduler as a model): another scheduler's choice depends on
//!   what each Mux alone has seen (round-robin's position, connection
//!   counts), so those VIPs say so instead of a DIP.
//! - **Agreement**: every Mux that holds the VIP chooses the same DIP (or
//!   none, where no DIP can take the flow). A Mux that holds no table for
//!   the VIP is shown, and does not count; with none holding it, or one
//!   whose choice cannot be computed (a destination's last weight unknown:
//!   one a previous Mux left at weight 0), agreement cannot be told, and
//!   is not claimed.

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};

use fulcrum_cluster::schema::{self, MuxService, Role};
use fulcrum_cluster::state::{State, VipKey};
use serde::Serialize;

use crate::mux::maglev::{
    MAGLEV,
    lookup::{Entry, Lookup, Options},
};

/// The answer for one client.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    pub client: SocketAddr,
    pub vips: Vec<VipAnswer>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VipAnswer {
    pub address: IpAddr,
    pub protocol: schema::Protocol,
    pub port: u16,
    pub network: String,
    pub scheduler: String,
    /// Whether the Muxes' choices are computed (`mh` only).
    pub computed: bool,
    pub muxes: Vec<MuxChoice>,
    /// Every Mux holding the VIP chooses alike (true where not computed).
    pub agree: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MuxChoice {
    pub id: String,
    /// Whether it holds a table for the VIP at all.
    pub holds: bool,
    pub announced: bool,
    /// Whether its choice is computed: false where it holds no table, the
    /// scheduler is not `mh`, or a destination's last weight is unknown.
    pub known: bool,
    /// The DIP it chooses (address and backend port); none where no DIP
    /// can take the flow, or not known.
    pub chosen: Option<SocketAddr>,
}

impl Answer {
    /// Whether the Muxes agree on every VIP.
    pub fn agree(&self) -> bool {
        self.vips.iter().all(|vip| vip.agree)
    }
}

/// What each Mux chooses for `client`, for every VIP of the policy or
/// the one `only` names.
pub fn answer(state: &State, client: SocketAddr, only: Option<VipKey>) -> Answer {
    let muxes: Vec<&String> = state
        .applied
        .keys()
        .filter(|(role, _)| *role == Role::Mux)
        .map(|(_, id)| id)
        .collect();
    let vips = state
        .vips
        .iter()
        .filter(|(key, _)| only.is_none_or(|only| only == *key))
        .map(|(key, vip)| {
            let computed = vip.scheduler == MAGLEV;
            let choices: Vec<MuxChoice> = muxes
                .iter()
                .map(|id| {
                    let service = state.mux_services.get(&((*id).clone(), *key));
                    let choice = service
                        .filter(|_| computed)
                        .and_then(|service| choose(service, client));
                    MuxChoice {
                        id: (*id).clone(),
                        holds: service.is_some(),
                        announced: service.is_some_and(|service| service.announced),
                        known: choice.is_some(),
                        chosen: choice.flatten(),
                    }
                })
                .collect();
            let held: Vec<&MuxChoice> = choices.iter().filter(|choice| choice.holds).collect();
            let agree = !computed
                || (!held.is_empty()
                    && held
                        .iter()
                        .all(|choice| choice.known && choice.chosen == held[0].chosen));
            VipAnswer {
                address: key.address,
                protocol: key.protocol,
                port: key.port,
                network: vip.network.clone(),
                scheduler: vip.scheduler.clone(),
                computed,
                muxes: choices,
                agree,
            }
        })
        .collect();
    Answer { client, vips }
}

/// The DIP the kernel's `mh` chooses from `service` for `client` (none
/// where no DIP can take the flow); `None` where it cannot be computed (a
/// destination's last weight unknown).
fn choose(service: &MuxService, client: SocketAddr) -> Option<Option<SocketAddr>> {
    let entries = service
        .destinations
        .iter()
        .map(|destination| {
            Some(Entry {
                address: SocketAddr::new(destination.address, destination.port),
                weight: destination.weight,
                last_weight: destination.last_weight?,
            })
        })
        .collect::<Option<Vec<Entry>>>()?;
    Some(Lookup::new(entries).choose(
        client,
        Options {
            port: service.mh_port,
            fallback: service.mh_fallback,
        },
    ))
}

/// The answer as text, for people.
pub fn render(answer: &Answer) -> String {
    let mut text = format!("client {}\n", answer.client);
    for vip in &answer.vips {
        let _ = writeln!(
            text,
            "\n{}/{}  {}  {}",
            SocketAddr::new(vip.address, vip.port),
            vip.protocol.name(),
            vip.network,
            vip.scheduler
        );
        if !vip.computed {
            let _ = writeln!(
                text,
                "  not computed: under {} each Mux chooses by what it alone has seen; \
                 only mh chooses alike everywhere",
                vip.scheduler
            );
            continue;
        }
        let width = vip.muxes.iter().map(|mux| mux.id.len()).max().unwrap_or(0);
        for mux in &vip.muxes {
            let chosen = match (mux.holds, mux.known, mux.chosen) {
                (false, _, _) => "holds no table for it".to_owned(),
                (true, false, _) => {
                    "unknown: a destination's last weight is not known (left at weight 0 by \
                     a previous Mux)"
                        .to_owned()
                }
                (true, true, None) => "no DIP can take the flow".to_owned(),
                (true, true, Some(dip)) => dip.to_string(),
            };
            let announced = if mux.announced {
                ""
            } else {
                "  (not announcing)"
            };
            let _ = writeln!(text, "  {:width$}  {chosen}{announced}", mux.id);
        }
        let held: Vec<&MuxChoice> = vip.muxes.iter().filter(|mux| mux.holds).collect();
        let _ = match (held.first(), vip.agree) {
            (None, _) => writeln!(text, "  no Mux holds it"),
            (Some(first), true) => writeln!(
                text,
                "  every Mux chooses {}",
                first
                    .chosen
                    .map_or_else(|| "no DIP".to_owned(), |dip| dip.to_string())
            ),
            (Some(_), false) if held.iter().any(|mux| !mux.known) => {
                writeln!(text, "  cannot tell whether the Muxes agree")
            }
            (Some(_), false) => writeln!(text, "  the Muxes disagree"),
        };
    }
    text
}

#[cfg(test)]
mod tests;
