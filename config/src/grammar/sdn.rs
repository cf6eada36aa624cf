//! The SDN mode's blocks (docs/sdn.md): `virtual_network`, `mux`,
//! `host_agent`, and `virtual_network NAME` inside a `virtual_server`.
//!
//! Rules:
//! - A network has a name and a VNI (1 to 16,777,215, VXLAN's 24 bits); no
//!   two networks share either: a VNI is the tenant's identity on the
//!   underlay, and a name is how virtual servers refer to it.
//! - A virtual server in a network is an address and a port (the VIP and
//!   frontend port) and names a network the file defines; its real servers
//!   are DIPs of that network, each real server's port the backend port.
//!   It writes no `lb_kind`: the Mux forwards the VIP's packets into the
//!   overlay unchanged and the host agent translates them, so no method of
//!   keepalived's applies (and DR's reset of a real server's port to the
//!   virtual server's would lose the backend port).
//! - Its real servers' checkers are the probes host agents run: TCP_CHECK,
//!   HTTP_GET, SSL_GET or PING_CHECK. A MISC_CHECK would run a command of
//!   the policy's on every host, and FILE_CHECK and BFD_CHECK name objects
//!   of this file that hosts do not have; DNS, SMTP and UDP checks are not
//!   carried by the store's schema yet.
//! - `mux` and `host_agent` each appear at most once, with a `vtep`
//!   address: the daemon's own tunnel endpoint on the underlay.

use super::{Context, Keyword, Node, common, values};
use crate::model::{
    CheckerKind, Config, Endpoint, VirtualNetwork, VirtualServer, VirtualServerAddress,
};
use crate::syntax::Span;

/// VXLAN's network identifier is 24 bits.
pub const VNI_MAXIMUM: u32 = (1 << 24) - 1;

pub static VIRTUAL_NETWORK: &[Keyword] = &[
    Keyword::leaf("vni", 1, Some(1)),
    Keyword::leaf("interface", 1, Some(1)),
];

pub static ENDPOINT: &[Keyword] = &[Keyword::leaf("vtep", 1, Some(1))];

pub static MUX: &[Keyword] = &[
    Keyword::leaf("vtep", 1, Some(1)),
    Keyword::leaf("announce_table", 1, Some(1)),
    Keyword::leaf("withdraw_delay", 1, Some(1)),
];

/// The kernel's own tables (`default`, `main`, `local`), and 0 (none):
/// not a table to announce from.
const RESERVED_TABLES: [u32; 4] = [0, 253, 254, 255];

/// `virtual_network NAME { vni N [interface IF] }`.
pub fn read_virtual_network(node: &Node, config: &mut Config, context: &mut Context) {
    let name = common::first(node);
    let mut vni = None;
    let mut interface = None;
    for child in node.children {
        let Some(word) = child.argument(0) else {
            continue;
        };
        match child.name() {
            "vni" => vni = values::integer(context, word, 1, VNI_MAXIMUM.into(), "vni"),
            "interface" => interface = Some(word.text.to_string()),
            _ => context.not_acted_on(child),
        }
    }
    let Some(vni) = vni else {
        context.error(
            node.end_span(),
            format!("virtual_network '{name}' has no valid 'vni': it is ignored"),
        );
        return;
    };
    if config
        .virtual_networks
        .iter()
        .any(|network| network.name == name)
    {
        context.error(
            node.span(),
            format!("virtual_network '{name}' is defined twice: this one is ignored"),
        );
        return;
    }
    if let Some(other) = config
        .virtual_networks
        .iter()
        .find(|network| network.vni == vni)
    {
        context.error(
            node.span(),
            format!(
                "virtual_network '{name}' has vni {vni}, which '{}' has already: this one is ignored",
                other.name
            ),
        );
        return;
    }
    config.virtual_networks.push(VirtualNetwork {
        name,
        vni,
        interface,
    });
}

/// `mux { vtep ADDRESS [announce_table N] [withdraw_delay SECONDS] }` and
/// `host_agent { vtep ADDRESS }`.
pub fn read_endpoint(node: &Node, config: &mut Config, context: &mut Context) {
    let is_mux = node.name() == "mux";
    let mut vtep = None;
    let mut announce_table = is_mux.then_some(crate::model::DEFAULT_ANNOUNCE_TABLE);
    let mut withdraw_delay = is_mux.then_some(crate::model::DEFAULT_WITHDRAW_DELAY);
    for child in node.children {
        match (child.name(), child.argument(0)) {
            ("vtep", Some(word)) => vtep = values::address(context, word, "vtep"),
            ("announce_table", Some(word)) if is_mux => {
                match values::integer::<u32>(context, word, 1, u32::MAX.into(), "announce_table") {
                    Some(table) if RESERVED_TABLES.contains(&table) => context.error(
                        word.span,
                        format!(
                            "announce_table {table} is one of the kernel's own tables \
                             (253 default, 254 main, 255 local): the default, {}, is kept",
                            crate::model::DEFAULT_ANNOUNCE_TABLE
                        ),
                    ),
                    Some(table) => announce_table = Some(table),
                    None => {}
                }
            }
            ("withdraw_delay", Some(word)) if is_mux => {
                if let Some(delay) = values::seconds(
                    context,
                    word,
                    std::time::Duration::ZERO,
                    std::time::Duration::from_secs(3600),
                    "withdraw_delay",
                ) {
                    withdraw_delay = Some(delay);
                }
            }
            _ => context.not_acted_on(child),
        }
    }
    let slot = match node.name() {
        "mux" => &mut config.mux,
        _ => &mut config.host_agent,
    };
    if slot.is_some() {
        context.error(
            node.span(),
            format!("'{}' is given twice: this one is ignored", node.name()),
        );
        return;
    }
    match vtep {
        Some(vtep) => {
            *slot = Some(Endpoint {
                vtep,
                announce_table,
                withdraw_delay,
            })
        }
        None => context.error(
            node.end_span(),
            format!(
                "'{}' needs a valid 'vtep' address: it is ignored",
                node.name()
            ),
        ),
    }
}

/// Where a virtual server's reader found what these checks report on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Written<'a> {
    /// `virtual_network NAME`'s name.
    pub virtual_network: Option<Span>,
    /// Whether `lb_kind` was written.
    pub forwarding: bool,
    /// Each real server's line.
    pub real_servers: &'a [Span],
}

/// The checks of a virtual server's `virtual_network`, once the whole file
/// is read (a network may be defined after the virtual servers in it).
/// A server that breaks them leaves its network (`virtual_network` becomes
/// `None`) so that nothing downstream reads it as a tenant's.
pub(crate) fn check_virtual_server(
    server: &mut VirtualServer,
    written: Written<'_>,
    networks: &[VirtualNetwork],
    context: &mut Context,
) {
    let (Some(name), Some(span)) = (&server.virtual_network, written.virtual_network) else {
        return;
    };
    if !networks.iter().any(|network| &network.name == name) {
        let mut message = format!("virtual_network '{name}' is not defined");
        match super::suggestion(name, networks.iter().map(|network| network.name.as_str())) {
            Some(best) => message.push_str(&format!(" (did you mean '{best}'?)")),
            None if networks.is_empty() => {
                message.push_str(": define it with 'virtual_network NAME { vni N }'")
            }
            None => {}
        }
        context.error(span, message);
        server.virtual_network = None;
        return;
    }
    if !matches!(server.address, VirtualServerAddress::Address { .. }) {
        context.error(
            span,
            "a virtual network's virtual server is a VIP and a port, not a fwmark or a group",
        );
        server.virtual_network = None;
        return;
    }
    if written.forwarding {
        context.error(
            span,
            "a virtual network's virtual server takes no 'lb_kind': the Mux forwards into the \
             overlay and the host agent translates to each real server's port",
        );
        server.virtual_network = None;
        return;
    }
    for (real_server, span) in server.real_servers.iter().zip(written.real_servers) {
        for checker in &real_server.checkers {
            let refused = match checker.kind {
                CheckerKind::Tcp
                | CheckerKind::Http(_)
                | CheckerKind::Ssl(_)
                | CheckerKind::Ping => {
                    continue;
                }
                CheckerKind::Misc(_) => "MISC_CHECK",
                CheckerKind::File(_) => "FILE_CHECK",
                CheckerKind::Bfd(_) => "BFD_CHECK",
                CheckerKind::Dns(_) => "DNS_CHECK",
                CheckerKind::Smtp(_) => "SMTP_CHECK",
                CheckerKind::Udp(_) => "UDP_CHECK",
            };
            context.error(
                *span,
                format!(
                    "a tenant's DIP is probed by its host agent with TCP_CHECK, HTTP_GET, SSL_GET \
                     or PING_CHECK: its {refused} is not carried to hosts"
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests;
