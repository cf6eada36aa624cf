//! The Mux's IPVS plan: [`crate::lvs::plan`], with what `mh` needs so that
//! every Mux holds the same Maglev table for a VIP. Pure, no I/O.
//!
//! What the kernel does (`net/netfilter/ipvs/ip_vs_mh.c`, `ip_vs_ctl.c`):
//! the hash secrets are constants, and the lookup table is filled taking
//! the service's destinations in list order, each by its weight, or by
//! its `last_weight` (the last weight above 0 it was given) while its
//! weight is 0. A created destination goes to the head of the list
//! (`list_add`), one taken back from the trash too; an edit keeps its
//! place. So two Muxes hold the same table when they hold the same
//! destinations, created in the same order, with the same weights and
//! last weights. Rules:
//!
//! - **One creation order**, the desired table's (the policy's order of
//!   the VIP's DIPs): the kernel's list, read head first, is the reverse
//!   of the order its destinations were created in. What the kernel holds
//!   is kept as long as it is a prefix of the creation order (in order,
//!   once the destinations leaving are left out); from the first one out
//!   of place on, the wanted destinations the kernel holds are deleted
//!   and created again, in order, with the new ones. A DIP added at the
//!   end of a VIP's list is one creation; one added in the middle takes
//!   every DIP after it out and back in, within one batch (their
//!   connections' packets meet no destination for that instant; the
//!   kernel takes each back from its trash, counters and connections
//!   whole).
//! - **A drained destination keeps its share**: one wanted at weight 0
//!   whose policy weight is not 0 (its DIP reported down) is created at
//!   the policy's weight and set to 0 at once, so its last weight, and so
//!   the table, are what they are on a Mux that saw it up; its new flows
//!   go on to the next DIP in the table (`mh-fallback`), and the others'
//!   stay where they are.
//! - Services of other schedulers are planned as [`crate::lvs::plan`]
//!   plans them.

pub mod lookup;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;

use ipvs::{Destination, Operation, ServiceKey};

use crate::lvs::desired::{Table, TableService};
use crate::lvs::plan::{Ownership, plan as plan_table};

/// IPVS's Maglev hashing scheduler.
pub const MAGLEV: &str = "mh";

/// The weight each drained destination is created with before it is set
/// to 0, by service and address (see the rules above).
pub type CreationWeights = HashMap<(ServiceKey, SocketAddr), u32>;

/// The operations that turn `kernel` into `desired` (every service the
/// Mux's: the tenant's namespace is its own), with `mh` services' list
/// order and drained destinations' shares as every Mux has them.
pub fn plan(kernel: &Table, desired: &Table, creation_weights: &CreationWeights) -> Vec<Operation> {
    // The destinations to take out and create again, by service: planned
    // against a kernel without them, then deleted before the service's
    // first creation.
    let mut recreated: HashMap<ServiceKey, Vec<SocketAddr>> = HashMap::new();
    for (key, wanted) in &desired.services {
        if wanted.service.scheduler != MAGLEV {
            continue;
        }
        if let Some(present) = kernel.services.get(key) {
            let out = out_of_order(present, wanted);
            if !out.is_empty() {
                recreated.insert(*key, out);
            }
        }
    }
    // The kernel as the plan sees it: copied only when there is something
    // to take out of it (most passes have nothing).
    let mut adjusted = Cow::Borrowed(kernel);
    for (key, out) in &recreated {
        if let Some(present) = adjusted.to_mut().services.get_mut(key) {
            present
                .destinations
                .retain(|destination| !out.contains(&destination.socket_address()));
        }
    }
    let planned = plan_table(&adjusted, desired, &Ownership::Everything);
    let mut operations = Vec::with_capacity(planned.len());
    for operation in planned {
        if let Operation::CreateDestination(key, destination) = &operation {
            if let Some(out) = recreated.remove(key) {
                operations.extend(
                    out.into_iter()
                        .map(|address| Operation::DeleteDestination(*key, address)),
                );
            }
            let address = destination.socket_address();
            if let Some(&weight) = creation_weights.get(&(*key, address))
                && destination.weight == 0
                && weight > 0
            {
                let mut created: Destination = destination.clone();
                created.weight = weight;
                operations.push(Operation::CreateDestination(*key, created));
                operations.push(Operation::UpdateDestination(*key, destination.clone()));
                continue;
            }
        }
        operations.push(operation);
    }
    operations
}

/// The wanted destinations of an `mh` service that the kernel holds out
/// of the creation order: from the first wanted one that is not where the
/// order puts it, every wanted one the kernel holds, in the kernel's list
/// order (the order they are deleted in does not matter).
fn out_of_order(present: &TableService, wanted: &TableService) -> Vec<SocketAddr> {
    let wanted_addresses: Vec<SocketAddr> = wanted
        .destinations
        .iter()
        .map(Destination::socket_address)
        .collect();
    let wanted_set: HashSet<SocketAddr> = wanted_addresses.iter().copied().collect();
    // The kernel's list head first is the reverse of its creations; those
    // leaving (not wanted) are deleted anyway and do not count.
    let created: Vec<SocketAddr> = present
        .destinations
        .iter()
        .rev()
        .map(Destination::socket_address)
        .filter(|address| wanted_set.contains(address))
        .collect();
    let kept = created
        .iter()
        .zip(&wanted_addresses)
        .take_while(|(held, wanted)| held == wanted)
        .count();
    created[kept..].to_vec()
}

#[cfg(test)]
mod tests;
