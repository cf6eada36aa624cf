//! `bfd_instance` (keepalived's bfd_parser.c): nanny runs the session for
//! the BFD_CHECKs that name it, and pulse's VRRP for the instances and
//! sync groups whose `track_bfd` names it (its `weight` is their default).

use std::time::Duration;

use super::common;
use super::{Context, Keyword, Node, values};
use crate::model::{BfdInstance, Config};

pub static INSTANCE: &[Keyword] = &[
    Keyword::leaf("neighbor_ip", 1, Some(1)),
    Keyword::leaf("neighbour_ip", 1, Some(1)),
    Keyword::leaf("source_ip", 1, Some(1)),
    Keyword::leaf("min_rx", 1, Some(1)),
    Keyword::leaf("min_tx", 1, Some(1)),
    Keyword::leaf("idle_tx", 1, Some(1)),
    Keyword::leaf("multiplier", 1, Some(1)),
    Keyword::leaf("passive", 0, Some(0)),
    Keyword::leaf("ttl", 1, Some(1)),
    Keyword::leaf("hoplimit", 1, Some(1)),
    Keyword::leaf("max_hops", 1, Some(1)),
    // The default weight of VRRP's track_bfd entries naming it.
    Keyword::leaf("weight", 1, Some(2)),
    // Which processes use the instance (keepalived's BFD process tells the
    // VRRP and checker processes about it).
    Keyword::leaf("vrrp", 0, None).not_acted_on(),
    Keyword::leaf("checker", 0, None).not_acted_on(),
];

/// `bfd_instance NAME { ... }`; intervals are in milliseconds.
pub fn read_instance(node: &Node, config: &mut Config, context: &mut Context) {
    let mut instance = BfdInstance {
        name: common::first(node),
        neighbor_ip: None,
        source_ip: None,
        min_rx: None,
        min_tx: None,
        idle_tx: None,
        multiplier: None,
        passive: false,
        ttl: None,
        max_hops: None,
        weight: None,
        reverse: false,
        used_by: Vec::new(),
    };
    for child in node.children {
        let argument = child.argument(0);
        let milliseconds = |context: &mut Context, what: &str| {
            argument
                .and_then(|word| values::integer::<u64>(context, word, 1, 1_000_000, what))
                .map(Duration::from_millis)
        };
        match child.name() {
            "neighbor_ip" | "neighbour_ip" => {
                instance.neighbor_ip =
                    argument.and_then(|word| values::address(context, word, "neighbor_ip"))
            }
            "source_ip" => {
                instance.source_ip =
                    argument.and_then(|word| values::address(context, word, "source_ip"))
            }
            "min_rx" => instance.min_rx = milliseconds(context, "min_rx"),
            "min_tx" => instance.min_tx = milliseconds(context, "min_tx"),
            "idle_tx" => instance.idle_tx = milliseconds(context, "idle_tx"),
            "multiplier" => {
                instance.multiplier =
                    argument.and_then(|word| values::integer(context, word, 1, 255, "multiplier"))
            }
            "passive" => instance.passive = true,
            "ttl" | "hoplimit" => {
                instance.ttl =
                    argument.and_then(|word| values::integer(context, word, 1, 255, "ttl"))
            }
            "max_hops" => {
                instance.max_hops =
                    argument.and_then(|word| values::integer(context, word, 0, 255, "max_hops"))
            }
            "weight" => {
                let (weight, reverse) =
                    common::weight_and_reverse(context, &child.words(), -253, 253, "weight");
                instance.weight = weight;
                instance.reverse = reverse;
            }
            "vrrp" | "checker" => instance.used_by.push(common::raw(child)),
            _ => context.not_acted_on(child),
        }
    }
    if instance.neighbor_ip.is_none() {
        context.warning(
            node.end_span(),
            "bfd_instance without 'neighbor_ip' is ignored by keepalived",
        );
        return;
    }
    config.bfd_instances.push(instance);
}
