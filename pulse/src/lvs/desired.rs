//! The IPVS table a configuration and the health of its real servers call
//! for: a pure function, [`desired`], with keepalived 2.2.7's semantics.
//!
//! keepalived reaches its table through events (`keepalived/check/
//! ipwrapper.c`: `init_service_vs`, `perform_svr_state`,
//! `update_quorum_state`, `update_svr_wgt`); pulse computes the table those
//! events lead to and lets [`super::plan`] move the kernel there. The
//! rules, each with where keepalived implements it:
//!
//! - A real server is alive when none of its checkers failed; before the
//!   first report it is alive unless one of its checkers has `alpha`
//!   (keepalived starts an alpha checker down: `num_failed_checkers` counts
//!   it in `init_service_rs`). Without checkers it is always alive.
//! - Its weight is `real_weight(effective_weight)`: the configured weight,
//!   or `exit status - 2` of a MISC_CHECK with `misc_dynamic` (check_misc.c:
//!   the dynamic weight replaces the configured one), plus what FILE_CHECKs
//!   add, clamped to `0..=`[`ipvs::WEIGHT_LIMIT`] (check_api.h
//!   `real_weight`).
//! - An alive real server is a destination with that weight. A dead one is
//!   removed, or with `inhibit_on_failure` kept with weight 0 (ipvswrapper.c
//!   `ipvs_cmd` turns DEL_DEST into EDIT_DEST with weight 0).
//! - Quorum: the sum of the alive servers' weights. Quorum is gained at
//!   `quorum + hysteresis` and lost below `quorum - hysteresis` or at a sum
//!   of 0 (`update_quorum_state`), so the state depends on the previous one,
//!   passed in [`QuorumStates`]; at start it is `sum >= quorum + hysteresis`
//!   (`set_quorum_states` runs before any server is alive, so quorum starts
//!   down and `update_quorum_state(vs, init)` raises it).
//! - Quorum lost with a sorry server: every alive real server leaves the
//!   pool (weight 0 with `inhibit_on_failure`, per the rule above:
//!   `perform_quorum_state(vs, false)`) and the sorry server enters with its
//!   weight (1). Quorum lost without one changes no destination ("we don't
//!   push in a sorry server then, hence the regression is intended",
//!   `update_vs_notifies`); only the quorum scripts run.
//! - `sorry_server_inhibit`: the sorry server stays in the pool with
//!   weight 0 while quorum holds (`init_service_vs` adds it with
//!   `num_failed_checkers = 1`; on regaining quorum `ipvs_cmd` edits it to 0).
//!   A sorry server that is also a real server (`s_svr_duplicates_rs`) is
//!   not added separately.
//! - Services (ipvswrapper.c `ipvs_set_srule`): the scheduler, the flags
//!   (`ops`, `flag-1..3`/`sh-*`/`mh-*`, `hashed`, which the kernel ignores);
//!   with a persistence timeout, `PERSISTENT`, the timeout, the granularity
//!   as netmask (except for a group's services, which keepalived sends with
//!   the full netmask) and the persistence engine; otherwise the full
//!   netmask and no engine.
//! - Destination ports (`ipvs_cmd`, `ipvs_group_cmd`): NAT keeps the real
//!   server's port; DR and TUN take the service's, which is 0 for fwmark
//!   services.
//! - `virtual_server_group`: one IPVS service per address of each range
//!   (IPv4 ranges count through the whole address, IPv6 through its last 16
//!   bits, `ipvs_group_range_cmd`) and per fwmark, the latter in the entry's
//!   family, else the virtual server's, else IPv4 (`ipvs_group_cmd`).
//! - `omega` only changes what runs at shutdown (the notify scripts), never
//!   the table.
//!
//! A health change needs only the virtual servers it names:
//! [`desired_of`] computes the services of some virtual servers, given the
//! configuration's [`Layout`], which says which virtual servers share a
//! service (all of them are computed then, so that each service it returns
//! is whole).

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use fulcrum_config::model as config;
use indexmap::IndexMap;
use ipvs::{
    Destination, Family, Forwarding, Netmask, Protocol, Service, ServiceFlags, ServiceKey,
    Timeouts, Tunnel, TunnelChecksum, TunnelKind,
};
use nanny::scheduler::StateChange;
use nanny::spec::VirtualServerKey;

/// The hasher of pulse's own tables: their keys come from the
/// configuration and the kernel, not from the network, so a hasher without
/// SipHash's resistance to chosen keys serves, and SipHash was a tenth of
/// computing a table of 1,000 services.
pub type FastHash = rustc_hash::FxBuildHasher;

/// The weight keepalived gives a sorry server (`alloc_ssvr`: `weight = 1`;
/// the configuration has no keyword for it).
pub const SORRY_SERVER_WEIGHT: u32 = 1;

/// An IPVS table: services by key, in the order they are to be created
/// (the configuration's), each with its destinations, and the global
/// timeouts (0 = not managed, as `SET_CONFIG` leaves 0 unchanged).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    pub services: IndexMap<ServiceKey, TableService, FastHash>,
    pub timeouts: Timeouts,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableService {
    pub service: Service,
    pub destinations: Vec<Destination>,
}

impl Table {
    /// A table of `services`, in their order (a later one of the same key
    /// replaces an earlier one).
    pub fn of(services: impl IntoIterator<Item = TableService>, timeouts: Timeouts) -> Table {
        Table {
            services: services
                .into_iter()
                .map(|entry| (entry.service.key, entry))
                .collect(),
            timeouts,
        }
    }

    pub fn service(&self, key: &ServiceKey) -> Option<&TableService> {
        self.services.get(key)
    }

    pub fn keys(&self) -> HashSet<ServiceKey> {
        self.services.keys().copied().collect()
    }

    /// Puts `entry` in, in place of the service of its key if there is one
    /// (which keeps its position), else last.
    pub fn insert(&mut self, entry: TableService) {
        self.services.insert(entry.service.key, entry);
    }
}

/// Destinations found by address and port. Most services have a handful,
/// where a scan costs less than hashing each address (hashing was the
/// largest cost of planning 10,000 services); a long list is hashed.
pub struct ByAddress<'a> {
    list: Vec<&'a Destination>,
    map: Option<HashMap<SocketAddr, &'a Destination>>,
}

impl<'a> ByAddress<'a> {
    /// Longer lists than this are hashed.
    const SCANNED: usize = 16;

    pub fn of(destinations: impl IntoIterator<Item = &'a Destination>) -> ByAddress<'a> {
        let list: Vec<&Destination> = destinations.into_iter().collect();
        let map = (list.len() > Self::SCANNED).then(|| {
            list.iter()
                .map(|destination| (destination.socket_address(), *destination))
                .collect()
        });
        ByAddress { list, map }
    }

    pub fn get(&self, address: SocketAddr) -> Option<&'a Destination> {
        match &self.map {
            Some(map) => map.get(&address).copied(),
            None => self
                .list
                .iter()
                .find(|destination| destination.socket_address() == address)
                .copied(),
        }
    }

    pub fn contains(&self, address: SocketAddr) -> bool {
        self.get(address).is_some()
    }
}

/// What nanny last said about one real server of one virtual server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RealServerHealth {
    pub up: bool,
    /// The weight a `misc_dynamic` MISC_CHECK set (replaces the configured
    /// weight).
    pub dynamic_weight: Option<i32>,
    /// What FILE_CHECKs add to the weight.
    pub weight_offset: i64,
}

/// The health of every real server reported so far, keyed as nanny names
/// them: by virtual server, then by real server address and port (so that
/// a lookup borrows its key rather than building one).
#[derive(Debug, Clone, Default)]
pub struct Health {
    servers: HashMap<VirtualServerKey, ReportedHealth, FastHash>,
}

/// The health reported of the real servers of one virtual server, by
/// address and port.
pub type ReportedHealth = HashMap<SocketAddr, RealServerHealth, FastHash>;

impl Health {
    /// Takes in one of nanny's state changes.
    pub fn record(&mut self, change: &StateChange) {
        for virtual_server in &change.virtual_servers {
            self.set(
                virtual_server.clone(),
                change.real_server.address,
                RealServerHealth {
                    up: change.up,
                    dynamic_weight: change.weight,
                    weight_offset: change.weight_offset,
                },
            );
        }
    }

    pub fn set(
        &mut self,
        virtual_server: VirtualServerKey,
        real_server: SocketAddr,
        health: RealServerHealth,
    ) {
        self.servers
            .entry(virtual_server)
            .or_default()
            .insert(real_server, health);
    }

    pub fn get(
        &self,
        virtual_server: &VirtualServerKey,
        real_server: SocketAddr,
    ) -> Option<&RealServerHealth> {
        self.of(virtual_server)?.get(&real_server)
    }

    /// What was reported of the real servers of one virtual server.
    pub fn of(&self, virtual_server: &VirtualServerKey) -> Option<&ReportedHealth> {
        self.servers.get(virtual_server)
    }
}

/// Whether each virtual server had quorum, as of the previous computation.
/// Hysteresis makes quorum depend on it; a virtual server missing here is
/// starting.
pub type QuorumStates = HashMap<VirtualServerKey, bool, FastHash>;

/// A virtual server gained or lost quorum (or started with it up or down):
/// what the `quorum_up` and `quorum_down` scripts are run for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumChange {
    pub virtual_server: VirtualServerKey,
    pub up: bool,
    /// No previous state: keepalived's "Starting with quorum up/down".
    pub initial: bool,
    pub weight_sum: i64,
    /// The threshold that was crossed: `quorum ± hysteresis`.
    pub threshold: i64,
}

/// The outcome of [`desired`] and [`desired_of`].
#[derive(Debug, Clone, Default)]
pub struct Desired {
    pub table: Table,
    /// The quorum state of every virtual server computed, for the next
    /// computation.
    pub quorum: QuorumStates,
    pub quorum_changes: Vec<QuorumChange>,
}

impl Desired {
    /// Appends the next piece of [`desired_in_pieces`]: its services after
    /// these, its quorum states and changes; the timeouts come with the
    /// first piece only.
    pub fn append(&mut self, piece: Desired) {
        if piece.table.timeouts != Timeouts::default() {
            self.table.timeouts = piece.table.timeouts;
        }
        self.table.services.extend(piece.table.services);
        self.quorum.extend(piece.quorum);
        self.quorum_changes.extend(piece.quorum_changes);
    }
}

/// Where each virtual server of a configuration is and which IPVS services
/// it makes: computed once per configuration, so that a health change finds
/// its virtual servers, and those sharing their services, without a search,
/// and a reload finds what it changes with one comparison per virtual
/// server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// The positions of the virtual servers of each key (two blocks may
    /// have the same address; health is reported by key, so it is both's).
    positions: HashMap<VirtualServerKey, Vec<usize>>,
    /// Each virtual server's key, by position.
    names: Vec<VirtualServerKey>,
    /// Each virtual server's services, by position.
    services: Vec<Vec<ServiceKey>>,
    /// The virtual servers making each service that more than one makes
    /// (a group overlapping a virtual server, or the same address twice).
    shared: HashMap<ServiceKey, Vec<usize>>,
}

impl Layout {
    pub fn of(configuration: &config::Config) -> Layout {
        let mut layout = Layout::default();
        let mut makers: HashMap<ServiceKey, Vec<usize>> = HashMap::new();
        for (position, virtual_server) in configuration.virtual_servers.iter().enumerate() {
            let name = VirtualServerKey::from_config(virtual_server);
            layout
                .positions
                .entry(name.clone())
                .or_default()
                .push(position);
            layout.names.push(name);
            let keys = service_keys(virtual_server, configuration);
            for key in &keys {
                makers.entry(*key).or_default().push(position);
            }
            layout.services.push(keys);
        }
        makers.retain(|_, positions| positions.len() > 1);
        layout.shared = makers;
        layout
    }

    /// The virtual servers cut into runs of consecutive positions covering
    /// them all: the first of one, each next twice as long up to `largest`,
    /// a run lengthened where ending it would part the virtual servers
    /// making one service (a group overlapping a virtual server, or one
    /// address twice: [`desired_of`] is whole for a service only with all
    /// its makers).
    pub fn runs(&self, largest: usize) -> Vec<std::ops::Range<usize>> {
        // For each position, the furthest maker of a shared service one of
        // whose makers is there: no run may end before it.
        let mut reach: Vec<usize> = (0..self.names.len()).collect();
        for makers in self.shared.values() {
            let furthest = makers.iter().copied().max().unwrap_or(0);
            for &maker in makers {
                reach[maker] = reach[maker].max(furthest);
            }
        }
        let mut runs = Vec::new();
        let mut length = 1;
        let mut start = 0;
        while start < self.names.len() {
            let mut end = (start + length).min(self.names.len());
            let (mut scanned, mut furthest) = (start, start);
            loop {
                while scanned < end {
                    furthest = furthest.max(reach[scanned]);
                    scanned += 1;
                }
                if furthest < end {
                    break;
                }
                end = furthest + 1;
            }
            runs.push(start..end);
            start = end;
            length = (length * 2).min(largest.max(1));
        }
        runs
    }

    /// The services the virtual server at `position` makes.
    pub fn services_of(&self, position: usize) -> &[ServiceKey] {
        &self.services[position]
    }

    /// The position of the first virtual server of `name`.
    pub fn position(&self, name: &VirtualServerKey) -> Option<usize> {
        self.positions.get(name)?.first().copied()
    }

    /// What a change to the virtual servers `names` touches: every virtual
    /// server to compute (those of the names, and those sharing a service
    /// with them, in configuration order) and the services to replace.
    pub fn affected<'a>(
        &self,
        names: impl IntoIterator<Item = &'a VirtualServerKey>,
    ) -> (Vec<usize>, HashSet<ServiceKey>) {
        self.around(
            names
                .into_iter()
                .flat_map(|name| self.positions.get(name).into_iter().flatten().copied()),
        )
    }

    /// [`Layout::affected`] for the virtual servers at `positions`.
    pub fn around(
        &self,
        positions: impl IntoIterator<Item = usize>,
    ) -> (Vec<usize>, HashSet<ServiceKey>) {
        let mut positions: Vec<usize> = positions.into_iter().collect();
        let mut keys = HashSet::new();
        for &position in &positions {
            keys.extend(self.services[position].iter().copied());
        }
        let sharing: Vec<usize> = keys
            .iter()
            .filter_map(|key| self.shared.get(key))
            .flatten()
            .copied()
            .collect();
        positions.extend(sharing);
        positions.sort_unstable();
        positions.dedup();
        (positions, keys)
    }

    /// The positions of the virtual servers that differ between `before`
    /// (this layout's configuration) and `after`, when the move from one to
    /// the other keeps this layout and can be computed from them alone: the
    /// same number of virtual servers and the same groups, each changed
    /// virtual server keeping its key and making the same services, and
    /// the same global timeouts. `None` otherwise: the whole table is
    /// computed again, with `after`'s own layout.
    ///
    /// Why that suffices: a virtual server's services and destinations are
    /// a function of its own block, its services' keys (which the layout
    /// holds, groups included) and the health and quorum states kept by
    /// key ([`desired_of`]); the only global input is `lvs_timeouts`. The
    /// check costs a comparison per virtual server, where a new layout
    /// costs a key and its services per virtual server.
    pub fn changed(&self, before: &config::Config, after: &config::Config) -> Option<Vec<usize>> {
        if before.virtual_servers.len() != after.virtual_servers.len()
            || self.names.len() != after.virtual_servers.len()
            || before.virtual_server_groups != after.virtual_server_groups
            || before.global.lvs_timeouts != after.global.lvs_timeouts
        {
            return None;
        }
        let mut changed = Vec::new();
        for (position, (old, new)) in before
            .virtual_servers
            .iter()
            .zip(&after.virtual_servers)
            .enumerate()
        {
            if old == new {
                continue;
            }
            if VirtualServerKey::from_config(new) != self.names[position]
                || service_keys(new, after) != self.services[position]
            {
                return None;
            }
            changed.push(position);
        }
        Some(changed)
    }
}

/// The table `configuration` calls for, given what nanny reported and the
/// previous quorum states.
pub fn desired(
    configuration: &config::Config,
    health: &Health,
    previous_quorum: &QuorumStates,
) -> Desired {
    desired_whole(
        configuration,
        &Layout::of(configuration),
        health,
        previous_quorum,
    )
}

/// [`desired`], given the configuration's layout.
pub fn desired_whole(
    configuration: &config::Config,
    layout: &Layout,
    health: &Health,
    previous_quorum: &QuorumStates,
) -> Desired {
    let everyone: Vec<usize> = (0..configuration.virtual_servers.len()).collect();
    let mut result = desired_of(configuration, layout, &everyone, health, previous_quorum);
    result.table.timeouts = timeouts(&configuration.global.lvs_timeouts);
    result
}

/// The first pieces of [`desired_in_pieces`] are small, so that the kernel
/// has work at once; later ones grow to this many virtual servers, where a
/// piece's cost is well above its passing between threads.
const LARGEST_PIECE: usize = 128;

/// [`desired_whole`] computed a run of virtual servers at a time, in
/// configuration order, for a start that applies the first pieces while it
/// computes the rest. A piece never splits a service that several virtual
/// servers make ([`Layout::runs`]), so each service it holds is whole, and
/// the pieces' tables, quorum states and changes, chained in order, are
/// [`desired_whole`]'s (the timeouts are in the first piece).
pub fn desired_in_pieces<'a>(
    configuration: &'a config::Config,
    layout: &'a Layout,
    health: &'a Health,
    previous_quorum: &'a QuorumStates,
) -> impl Iterator<Item = Desired> + 'a {
    layout
        .runs(LARGEST_PIECE)
        .into_iter()
        .enumerate()
        .map(move |(index, run)| {
            let positions: Vec<usize> = run.collect();
            let mut piece = desired_of(configuration, layout, &positions, health, previous_quorum);
            if index == 0 {
                piece.table.timeouts = timeouts(&configuration.global.lvs_timeouts);
            }
            piece
        })
}

/// The services of the virtual servers at `positions` (in configuration
/// order), their quorum states and changes. A service another virtual
/// server makes too is whole only if that one is among `positions`
/// ([`Layout::affected`] includes it); the timeouts are left at 0.
pub fn desired_of(
    configuration: &config::Config,
    layout: &Layout,
    positions: &[usize],
    health: &Health,
    previous_quorum: &QuorumStates,
) -> Desired {
    let mut result = Desired::default();
    // Most virtual servers make one service: sized once, not by doubling.
    result.table.services.reserve(positions.len());
    result.quorum.reserve(positions.len());
    for &position in positions {
        let virtual_server = &configuration.virtual_servers[position];
        let name = &layout.names[position];
        let pool = pool(virtual_server, name, health, previous_quorum, &mut result);
        for &key in &layout.services[position] {
            // A service a virtual server or group entry before this one
            // has already (two virtual servers with the same address, or
            // a group overlapping one): keepalived's second ADD fails as
            // the service exists, but its ADD_DESTs go into that service,
            // so it keeps the first one's parameters and gains the
            // destinations it did not have (seen in the lab).
            let entry = result
                .table
                .services
                .entry(key)
                .or_insert_with(|| TableService {
                    service: service(virtual_server, key),
                    destinations: Vec::with_capacity(pool.len()),
                });
            for member in &pool {
                let destination = member.destination(key);
                if !entry
                    .destinations
                    .iter()
                    .any(|known| known.socket_address() == destination.socket_address())
                {
                    entry.destinations.push(destination);
                }
            }
        }
    }
    result
}

/// One destination a virtual server's services get, before its port is
/// decided by the service.
struct PoolMember<'a> {
    address: IpAddr,
    port: u16,
    forwarding: config::ForwardingMethod,
    weight: u32,
    real_server: Option<&'a config::RealServer>,
}

impl PoolMember<'_> {
    fn destination(&self, key: ServiceKey) -> Destination {
        let forwarding = forwarding(self.forwarding);
        // NAT rewrites the port, so the real server's is kept; DR and TUN
        // cannot, so keepalived sends the service's (0 for fwmark
        // services): ipvswrapper.c `ipvs_cmd` and `ipvs_group_cmd`.
        let port = match (forwarding, key) {
            (Forwarding::Masquerade, _) => self.port,
            (_, ServiceKey::Address { port, .. }) => port,
            (_, ServiceKey::Fwmark { .. }) => 0,
        };
        let mut destination = Destination::new(SocketAddr::new(self.address, port), forwarding);
        destination.weight = self.weight;
        if let Some(real_server) = self.real_server {
            destination.upper_threshold = real_server.upper_threshold;
            destination.lower_threshold = real_server.lower_threshold;
        }
        destination
    }
}

/// Who is in a virtual server's pool, and with which weight; records the
/// quorum state.
fn pool<'a>(
    virtual_server: &'a config::VirtualServer,
    name: &VirtualServerKey,
    health: &Health,
    previous_quorum: &QuorumStates,
    result: &mut Desired,
) -> Vec<PoolMember<'a>> {
    // Found once for the virtual server, not once per real server.
    let reported = health.of(name);
    let states: Vec<(&config::RealServer, bool, u32)> = virtual_server
        .real_servers
        .iter()
        .map(|real_server| {
            let (alive, weight) = state(real_server, reported);
            (real_server, alive, weight)
        })
        .collect();

    let weight_sum: i64 = states
        .iter()
        .filter(|(_, alive, _)| *alive)
        .map(|(_, _, weight)| i64::from(*weight))
        .sum();
    let quorum = i64::from(virtual_server.quorum);
    let hysteresis = i64::from(virtual_server.hysteresis);
    let previous = previous_quorum.get(name).copied();
    let (quorum_up, threshold) = match previous {
        // ipwrapper.c `set_quorum_states`, at start.
        None => (weight_sum >= quorum + hysteresis, quorum + hysteresis),
        // `update_quorum_state`: lost below quorum - hysteresis, or with
        // nothing alive whatever the threshold.
        Some(true) => {
            let threshold = quorum - hysteresis;
            (weight_sum != 0 && weight_sum >= threshold, threshold)
        }
        Some(false) => {
            let threshold = quorum + hysteresis;
            (weight_sum >= threshold, threshold)
        }
    };
    // At start keepalived notifies "Starting with quorum up", but "down"
    // only when it has a sorry server to add (`update_quorum_state` with
    // `init`: quorum starts down there, since `set_quorum_states` runs
    // before any real server is alive).
    let starting_down_silently =
        previous.is_none() && !quorum_up && virtual_server.sorry_server.is_none();
    if previous != Some(quorum_up) && !starting_down_silently {
        result.quorum_changes.push(QuorumChange {
            virtual_server: name.clone(),
            up: quorum_up,
            initial: previous.is_none(),
            weight_sum,
            threshold,
        });
    }
    result.quorum.insert(name.clone(), quorum_up);

    let sorry_active = !quorum_up && virtual_server.sorry_server.is_some();
    // Sized once: growing it by doubling was a tenth of computing a table.
    let mut members = Vec::with_capacity(states.len() + 1);
    for (real_server, alive, weight) in &states {
        let weight = match (alive, sorry_active) {
            (true, false) => Some(*weight),
            // Out of the pool: removed, or weight 0 with inhibit_on_failure.
            _ if real_server.inhibit_on_failure => Some(0),
            _ => None,
        };
        if let Some(weight) = weight {
            members.push(PoolMember {
                address: real_server.address,
                port: real_server.port,
                forwarding: real_server.forwarding,
                weight,
                real_server: Some(real_server),
            });
        }
    }
    if let Some(sorry) = &virtual_server.sorry_server {
        let duplicate = virtual_server.real_servers.iter().position(|real_server| {
            real_server.address == sorry.address && real_server.port == sorry.port
        });
        let member = |weight| PoolMember {
            address: sorry.address,
            port: sorry.port,
            forwarding: sorry.forwarding,
            weight,
            real_server: None,
        };
        if sorry_active {
            // The sorry server replaces a duplicate real server's entry.
            members
                .retain(|member| !(member.address == sorry.address && member.port == sorry.port));
            members.push(member(SORRY_SERVER_WEIGHT));
        } else if sorry.inhibit && duplicate.is_none() {
            members.push(member(0));
        }
    }
    members
}

/// Whether a real server is alive, and its weight.
///
/// The weight is the `misc_dynamic` weight if there is one, else the
/// configured one, plus what FILE_CHECKs add. keepalived applies each as an
/// event on `effective_weight` (a MISC_CHECK sets it, a tracked file adds
/// its change), so there the order of events matters; pulse takes the last
/// value of each, which is what keepalived reaches when the dynamic weight
/// changes before the files.
pub fn state(real_server: &config::RealServer, reported: Option<&ReportedHealth>) -> (bool, u32) {
    let address = SocketAddr::new(real_server.address, real_server.port);
    match reported.and_then(|reported| reported.get(&address)) {
        Some(health) => (
            health.up,
            real_weight(
                health
                    .dynamic_weight
                    .map_or(i64::from(real_server.weight), i64::from)
                    + health.weight_offset,
            ),
        ),
        None => (
            // Before nanny's first report: keepalived starts alpha checkers
            // down, the others up.
            !real_server
                .checkers
                .iter()
                .any(|checker| checker.common.alpha),
            real_weight(i64::from(real_server.weight)),
        ),
    }
}

/// keepalived's `real_weight`: an effective weight clamped to what IPVS
/// takes.
fn real_weight(effective: i64) -> u32 {
    effective.clamp(0, i64::from(ipvs::WEIGHT_LIMIT)) as u32
}

fn protocol(virtual_server: &config::VirtualServer) -> Protocol {
    // The model defaults address services to UDP, as keepalived does (the
    // kernel's default); fwmark services carry none.
    match virtual_server.protocol {
        Some(config::Protocol::Tcp) => Protocol::Tcp,
        Some(config::Protocol::Sctp) => Protocol::Sctp,
        Some(config::Protocol::Udp) | None => Protocol::Udp,
    }
}

fn family(family: config::Family) -> Family {
    match family {
        config::Family::Inet => Family::Inet,
        config::Family::Inet6 => Family::Inet6,
    }
}

/// The family of a virtual server without addresses of its own (a fwmark,
/// or a group's fwmark entries): `ip_family`, else its real servers' (the
/// first not tunnelled, since only tunnels may cross families), else its
/// sorry server's, else IPv4, keepalived's fallback ("We default to IPv4
/// if cannot determine the family", ipvswrapper.c).
fn virtual_server_family(virtual_server: &config::VirtualServer) -> Family {
    if let Some(written) = virtual_server.ip_family {
        return family(written);
    }
    let of = |address: &IpAddr| Family::of(address);
    virtual_server
        .real_servers
        .iter()
        .find(|real_server| !matches!(real_server.forwarding, config::ForwardingMethod::Tunnel(_)))
        .or(virtual_server.real_servers.first())
        .map(|real_server| of(&real_server.address))
        .or(virtual_server
            .sorry_server
            .as_ref()
            .map(|sorry| of(&sorry.address)))
        .unwrap_or(Family::Inet)
}

/// The IPVS services of a virtual server: one, or one per address and
/// fwmark of its group.
fn service_keys(
    virtual_server: &config::VirtualServer,
    configuration: &config::Config,
) -> Vec<ServiceKey> {
    match &virtual_server.address {
        config::VirtualServerAddress::Address { address, port } => vec![ServiceKey::Address {
            protocol: protocol(virtual_server),
            address: *address,
            port: *port,
        }],
        config::VirtualServerAddress::Fwmark(mark) => vec![ServiceKey::Fwmark {
            family: virtual_server_family(virtual_server),
            mark: *mark,
        }],
        config::VirtualServerAddress::Group(name) => {
            let Some(group) = configuration
                .virtual_server_groups
                .iter()
                .find(|group| group.name == *name)
            else {
                return Vec::new();
            };
            let mut keys = Vec::new();
            for entry in &group.entries {
                match entry {
                    config::GroupEntry::Addresses { first, last, port } => {
                        for address in address_range(*first, *last) {
                            keys.push(ServiceKey::Address {
                                protocol: protocol(virtual_server),
                                address,
                                port: port.unwrap_or(0),
                            });
                        }
                    }
                    config::GroupEntry::Fwmark {
                        mark,
                        family: entry_family,
                    } => keys.push(ServiceKey::Fwmark {
                        family: entry_family
                            .map(family)
                            .unwrap_or_else(|| virtual_server_family(virtual_server)),
                        mark: *mark,
                    }),
                }
            }
            keys
        }
    }
}

/// Every address from `first` to `last`, inclusive, as keepalived walks a
/// group range: an IPv4 range counts through the whole address, an IPv6
/// range through its last 16 bits only (`ipvs_group_range_cmd`), which is
/// all the grammar lets a range span.
fn address_range(first: IpAddr, last: IpAddr) -> Vec<IpAddr> {
    match (first, last) {
        (IpAddr::V4(first), IpAddr::V4(last)) => (u32::from(first)..=u32::from(last))
            .map(|address| IpAddr::V4(Ipv4Addr::from(address)))
            .collect(),
        (IpAddr::V6(first), IpAddr::V6(last)) => {
            let mut segments = first.segments();
            let end = last.segments()[7];
            let mut addresses = Vec::new();
            for low in segments[7]..=end {
                segments[7] = low;
                addresses.push(IpAddr::V6(Ipv6Addr::from(segments)));
            }
            addresses
        }
        _ => vec![first],
    }
}

fn service(virtual_server: &config::VirtualServer, key: ServiceKey) -> Service {
    let mut service = Service::new(key, virtual_server.scheduler.name());
    let written = virtual_server.flags;
    for (set, flag) in [
        // The kernel keeps its own HASHED bit and ignores this one; it is
        // sent because keepalived sends it.
        (written.hashed, ServiceFlags::HASHED),
        (written.one_packet, ServiceFlags::ONE_PACKET),
        (written.flag_1, ServiceFlags::SCHED_1),
        (written.flag_2, ServiceFlags::SCHED_2),
        (written.flag_3, ServiceFlags::SCHED_3),
    ] {
        if set {
            service.flags.insert(flag);
        }
    }
    let timeout = virtual_server.persistence_timeout.map_or(0, |timeout| {
        timeout.as_secs().min(u64::from(u32::MAX)) as u32
    });
    // ipvswrapper.c `ipvs_set_srule`: persistence (flag, timeout,
    // granularity, engine) only with a non-zero timeout.
    if timeout != 0 {
        service.flags.insert(ServiceFlags::PERSISTENT);
        service.timeout = timeout;
        // A group's services keep the full netmask whatever the
        // granularity: keepalived's `ipvs_group_range_cmd` and the fwmark
        // loop of `ipvs_group_cmd` overwrite the netmask `ipvs_set_srule`
        // set with the family's full one (seen in the lab: `ipvsadm -S`
        // shows no `-M` for them).
        let grouped = matches!(
            virtual_server.address,
            config::VirtualServerAddress::Group(_)
        );
        match (virtual_server.persistence_granularity, key.family()) {
            _ if grouped => {}
            (Some(config::Granularity::Netmask(mask)), Family::Inet) => {
                service.netmask = Netmask::Ipv4(mask)
            }
            (Some(config::Granularity::PrefixLength(length)), Family::Inet6) => {
                service.netmask = Netmask::Ipv6(length)
            }
            _ => {}
        }
        service.persistence_engine = virtual_server.persistence_engine.clone();
    }
    service
}

fn forwarding(method: config::ForwardingMethod) -> Forwarding {
    match method {
        config::ForwardingMethod::Nat => Forwarding::Masquerade,
        config::ForwardingMethod::DirectRouting => Forwarding::Route,
        config::ForwardingMethod::Tunnel(tunnel) => Forwarding::Tunnel(Tunnel {
            kind: match tunnel.kind {
                config::TunnelKind::Ipip => TunnelKind::Ipip,
                config::TunnelKind::Gue { .. } => TunnelKind::Gue,
                config::TunnelKind::Gre => TunnelKind::Gre,
            },
            port: match tunnel.kind {
                config::TunnelKind::Gue { port } => port,
                _ => 0,
            },
            // IPIP has no checksum options (keepalived's grammar takes them
            // after gue and gre only).
            checksum: match (tunnel.kind, tunnel.checksum) {
                (config::TunnelKind::Ipip, _) => TunnelChecksum::NoChecksum,
                (_, config::TunnelChecksum::NoChecksum) => TunnelChecksum::NoChecksum,
                (_, config::TunnelChecksum::Checksum) => TunnelChecksum::Checksum,
                (_, config::TunnelChecksum::RemoteChecksum) => TunnelChecksum::RemoteChecksum,
            },
        }),
    }
}

fn timeouts(written: &config::LvsTimeouts) -> Timeouts {
    let seconds = |value: Option<std::time::Duration>| {
        value.map_or(0, |value| value.as_secs().min(u64::from(u32::MAX)) as u32)
    };
    Timeouts {
        tcp: seconds(written.tcp),
        tcp_fin: seconds(written.tcp_fin),
        udp: seconds(written.udp),
    }
}

#[cfg(test)]
mod tests;
