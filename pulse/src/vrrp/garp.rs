//! The pace of gratuitous ARPs and unsolicited neighbour advertisements on
//! each interface, without I/O ([`Pacer`]): which message goes now, which
//! waits, and when the waiting ones go. The rules are keepalived 2.2.7's
//! (vrrp_arp.c `send_gratuitous_arp` and `queue_garp`, vrrp_ndisc.c the
//! same for IPv6, vrrp_scheduler.c `vrrp_arp_thread`, vrrp_if.c
//! `set_default_garp_delay`, vrrp_parser.c `garp_group`):
//!
//! - An interface is paced when a `garp_group` names it (`interface`, or
//!   the `interfaces` block): the interfaces of one group share one pace.
//!   Otherwise, when the global `vrrp_garp_interval` or `vrrp_gna_interval`
//!   is set, each interface has a pace of its own with those intervals.
//!   Otherwise every message goes at once. An interface named by a second
//!   group keeps the first (keepalived's "garp_group already specified for
//!   eth0 - ignoring").
//! - A message goes at once when its family has no interval on its
//!   interface, or the interface's last message of that family went at
//!   least an interval ago; it then starts the interval. Otherwise it is
//!   queued, as one mark per address (keepalived's `garp_gna_pending`):
//!   however many times an address is asked for meanwhile, it goes once.
//!   So a round of five on a paced interface sends the first message at
//!   once and the second an interval later, and no more; a second address
//!   of that round goes once, after the first address's second message.
//! - The queue is served at one wake-up, the earliest asked for (the time
//!   a message was queued plus its interval). Then, in the instances'
//!   order and each instance's addresses' order, a queued message goes if
//!   its interface's pace allows, so at most one per pace and family at a
//!   time; the others wait for the earliest of their paces' next times.
//! - The queued messages of an instance that is no longer master are
//!   dropped.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use fulcrum_config::model as config;

/// The intervals of one pace; `None`: that family is not paced.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Intervals {
    pub arp: Option<Duration>,
    pub neighbour: Option<Duration>,
}

impl Intervals {
    fn of(address: &IpAddr, intervals: &Intervals) -> Option<Duration> {
        match address {
            IpAddr::V4(_) => intervals.arp,
            IpAddr::V6(_) => intervals.neighbour,
        }
    }
}

/// One pace: its intervals and when each family may send next.
#[derive(Debug, Clone, Default)]
struct Pace {
    intervals: Intervals,
    next_arp: Option<Instant>,
    next_neighbour: Option<Instant>,
    /// keepalived's `aggregation_group`: 1, 2... for the groups with an
    /// `interfaces` block, in their order; 0 for the others.
    aggregation_group: u32,
}

/// One pace as keepalived.data shows it (keepalived's `garp_delay_t`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaceReport {
    pub aggregation_group: u32,
    pub intervals: Intervals,
    pub next_arp: Option<Instant>,
    pub next_neighbour: Option<Instant>,
    /// The interfaces it paces, in the order they were given it.
    pub interfaces: Vec<String>,
}

impl Pace {
    fn next(&mut self, address: &IpAddr) -> &mut Option<Instant> {
        match address {
            IpAddr::V4(_) => &mut self.next_arp,
            IpAddr::V6(_) => &mut self.next_neighbour,
        }
    }
}

/// A queued message that may go now: the instance's position, the
/// address's position among the instance's announced addresses, and the
/// address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    pub instance: usize,
    pub index: usize,
    pub address: IpAddr,
}

/// The paces of a configuration and the messages waiting for them.
#[derive(Debug, Clone, Default)]
pub struct Pacer {
    paces: Vec<Pace>,
    by_interface: HashMap<String, usize>,
    /// The global intervals, for interfaces no `garp_group` names, when
    /// either is set.
    defaults: Option<Intervals>,
    /// By instance and address position, as keepalived walks them: the
    /// address and its interface.
    queued: BTreeMap<(usize, usize), (IpAddr, String)>,
    wake_at: Option<Instant>,
    warnings: Vec<String>,
}

impl Pacer {
    pub fn new(configuration: &config::Config) -> Pacer {
        let mut pacer = Pacer::default();
        let mut aggregation_groups = 0;
        for group in &configuration.garp_groups {
            let position = pacer.paces.len();
            // vrrp_parser.c garp_group_interfaces_handler numbers the
            // groups with an (unempty) interfaces block.
            let aggregation_group = if group.interfaces.is_empty() {
                0
            } else {
                aggregation_groups += 1;
                aggregation_groups
            };
            pacer.paces.push(Pace {
                intervals: Intervals {
                    arp: group.garp_interval,
                    neighbour: group.gna_interval,
                },
                aggregation_group,
                ..Pace::default()
            });
            for interface in group.interface.iter().chain(&group.interfaces) {
                if pacer.by_interface.contains_key(interface) {
                    pacer.warnings.push(format!(
                        "garp_group already specified for {interface} - ignoring"
                    ));
                    continue;
                }
                pacer.by_interface.insert(interface.clone(), position);
            }
        }
        let global = &configuration.global.vrrp;
        let set = |interval: Option<Duration>| interval.filter(|interval| !interval.is_zero());
        let defaults = Intervals {
            arp: set(global.garp_interval),
            neighbour: set(global.gna_interval),
        };
        pacer.defaults = (defaults != Intervals::default()).then_some(defaults);
        // keepalived's set_default_garp_delay gives one, at start, to each
        // interface an instance or its addresses use, in their order.
        if pacer.defaults.is_some() {
            for instance in &configuration.vrrp_instances {
                let Some(interface) = &instance.interface else {
                    continue;
                };
                let devices = instance
                    .virtual_addresses
                    .iter()
                    .chain(&instance.excluded_addresses)
                    .map(|address| address.device.as_ref().unwrap_or(interface));
                for device in std::iter::once(interface).chain(devices) {
                    pacer.pace(device);
                }
            }
        }
        pacer
    }

    /// The paces as keepalived.data shows them, in keepalived's order
    /// (the groups', then the defaults').
    pub fn report(&self) -> Vec<PaceReport> {
        self.paces
            .iter()
            .enumerate()
            .map(|(position, pace)| PaceReport {
                aggregation_group: pace.aggregation_group,
                intervals: pace.intervals,
                next_arp: pace.next_arp,
                next_neighbour: pace.next_neighbour,
                interfaces: self
                    .by_interface
                    .iter()
                    .filter(|(_, paced)| **paced == position)
                    .map(|(interface, _)| interface.clone())
                    .collect(),
            })
            .collect()
    }

    /// What keepalived says of the `garp_group`s, for the log.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The pace of `interface`, if it has one.
    fn pace(&mut self, interface: &str) -> Option<&mut Pace> {
        let position = match self.by_interface.get(interface) {
            Some(position) => *position,
            None => {
                let intervals = self.defaults?;
                self.paces.push(Pace {
                    intervals,
                    ..Pace::default()
                });
                let position = self.paces.len() - 1;
                self.by_interface.insert(interface.to_owned(), position);
                position
            }
        };
        Some(&mut self.paces[position])
    }

    /// Instance `instance` asks for a message for its `index`th address,
    /// on `interface`: true if it goes now (the caller sends it), false if
    /// it is queued.
    pub fn send(
        &mut self,
        now: Instant,
        instance: usize,
        index: usize,
        address: IpAddr,
        interface: &str,
    ) -> bool {
        let Some(pace) = self.pace(interface) else {
            return true;
        };
        let Some(interval) = Intervals::of(&address, &pace.intervals) else {
            return true;
        };
        let next = pace.next(&address);
        if next.is_some_and(|next| now < next) {
            self.queued
                .insert((instance, index), (address, interface.to_owned()));
            let wake = now + interval;
            if self.wake_at.is_none_or(|at| wake < at) {
                self.wake_at = Some(wake);
            }
            return false;
        }
        *next = Some(now + interval);
        true
    }

    /// When [`Pacer::due`] has something to do.
    pub fn poll_at(&self) -> Option<Instant> {
        self.wake_at
    }

    /// The queued messages that go now, in keepalived's order; those of
    /// instances that are not `sending` (no longer master) are dropped.
    pub fn due(&mut self, now: Instant, sending: impl Fn(usize) -> bool) -> Vec<Due> {
        if self.wake_at.is_none_or(|at| now < at) {
            return Vec::new();
        }
        let mut due = Vec::new();
        let mut wake: Option<Instant> = None;
        let queued = std::mem::take(&mut self.queued);
        for ((instance, index), (address, interface)) in queued {
            if !sending(instance) {
                continue;
            }
            let Some(pace) = self.pace(&interface) else {
                continue;
            };
            let interval = Intervals::of(&address, &pace.intervals).unwrap_or_default();
            let next = pace.next(&address);
            match *next {
                Some(at) if now < at => {
                    wake = Some(wake.map_or(at, |wake| wake.min(at)));
                    self.queued.insert((instance, index), (address, interface));
                }
                _ => {
                    *next = Some(now + interval);
                    due.push(Due {
                        instance,
                        index,
                        address,
                    });
                }
            }
        }
        self.wake_at = wake;
        due
    }

    /// An instance left MASTER: its queued messages go (keepalived's
    /// vrrp_remove_delayed_arp).
    pub fn forget(&mut self, instance: usize) {
        self.queued.retain(|(queued, _), _| *queued != instance);
    }

    /// A reload: the new configuration's paces, which start afresh as
    /// keepalived's (its garp delays belong to the configuration); the
    /// queued messages of kept instances (`kept`: old and new positions)
    /// stay, under their new positions.
    pub fn reload(&mut self, configuration: &config::Config, kept: &[(usize, usize)]) {
        let mut next = Pacer::new(configuration);
        for ((instance, index), queued) in std::mem::take(&mut self.queued) {
            if let Some((_, new)) = kept.iter().find(|(old, _)| *old == instance) {
                next.queued.insert((*new, index), queued);
            }
        }
        next.wake_at = self.wake_at.filter(|_| !next.queued.is_empty());
        *self = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacer(text: &str) -> Pacer {
        Pacer::new(&crate::vrrp::tests::configuration(text))
    }

    const INSTANCE: &str = "vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    virtual_ipaddress {
        192.0.2.100
    }
}
";

    fn address(last: u8) -> IpAddr {
        IpAddr::from([192, 0, 2, last])
    }

    fn milliseconds(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    /// A round of `repeat` for `addresses` of instance 0 on `interface`:
    /// the addresses sent at once.
    fn round(
        pacer: &mut Pacer,
        now: Instant,
        repeat: u32,
        addresses: &[IpAddr],
        interface: &str,
    ) -> Vec<IpAddr> {
        let mut sent = Vec::new();
        for _ in 0..repeat {
            for (index, address) in addresses.iter().enumerate() {
                if pacer.send(now, 0, index, *address, interface) {
                    sent.push(*address);
                }
            }
        }
        sent
    }

    #[test]
    fn without_intervals_every_message_goes_at_once() {
        let mut pacer = pacer(INSTANCE);
        let now = Instant::now();
        assert_eq!(round(&mut pacer, now, 5, &[address(100)], "eth0").len(), 5);
        assert_eq!(pacer.poll_at(), None);
    }

    #[test]
    fn a_paced_round_sends_each_address_at_most_twice_as_keepalived_s() {
        let mut pacer = pacer(&format!(
            "garp_group {{\n garp_interval 0.5\n interface eth0\n}}\n{INSTANCE}"
        ));
        let start = Instant::now();
        let addresses = [address(100), address(101)];
        // The first message at once; the rest of the round is one mark
        // per address.
        assert_eq!(
            round(&mut pacer, start, 5, &addresses, "eth0"),
            [address(100)]
        );
        let wake = start + milliseconds(500);
        assert_eq!(pacer.poll_at(), Some(wake));
        assert_eq!(pacer.due(wake - milliseconds(1), |_| true), []);
        // One per wake-up, in the addresses' order.
        let due = |pacer: &mut Pacer, now| -> Vec<IpAddr> {
            pacer
                .due(now, |_| true)
                .into_iter()
                .map(|due| due.address)
                .collect()
        };
        assert_eq!(due(&mut pacer, wake), [address(100)]);
        assert_eq!(pacer.poll_at(), Some(wake + milliseconds(500)));
        assert_eq!(due(&mut pacer, wake + milliseconds(500)), [address(101)]);
        assert_eq!(pacer.poll_at(), None);
        // Another interface is not paced (no global interval).
        assert_eq!(round(&mut pacer, start, 3, &[address(1)], "eth1").len(), 3);
        // A round long after the last message starts at once again.
        let later = start + Duration::from_secs(5);
        assert_eq!(
            round(&mut pacer, later, 5, &addresses, "eth0"),
            [address(100)]
        );
    }

    #[test]
    fn the_global_intervals_pace_each_interface_alone() {
        let mut pacer = pacer(&format!(
            "global_defs {{\n vrrp_garp_interval 0.2\n}}\n{INSTANCE}"
        ));
        let now = Instant::now();
        assert_eq!(round(&mut pacer, now, 2, &[address(100)], "eth0").len(), 1);
        assert_eq!(round(&mut pacer, now, 2, &[address(101)], "eth1").len(), 1);
        // IPv6 has no interval: not paced.
        let ipv6: IpAddr = "2001:db8::100".parse().unwrap();
        assert_eq!(round(&mut pacer, now, 3, &[ipv6], "eth0").len(), 3);
    }

    #[test]
    fn the_interfaces_of_one_group_share_their_pace() {
        let mut pacer = pacer(&format!(
            "garp_group {{\n garp_interval 1\n interfaces {{\n  eth0\n  eth1\n }}\n}}\n{INSTANCE}"
        ));
        let now = Instant::now();
        assert!(pacer.send(now, 0, 0, address(100), "eth0"));
        assert!(!pacer.send(now, 0, 1, address(101), "eth1"));
        assert_eq!(pacer.poll_at(), Some(now + Duration::from_secs(1)));
    }

    #[test]
    fn an_instance_no_longer_master_loses_its_queued_messages() {
        let mut pacer = pacer(&format!(
            "garp_group {{\n garp_interval 0.5\n interface eth0\n}}\n{INSTANCE}"
        ));
        let now = Instant::now();
        assert_eq!(round(&mut pacer, now, 2, &[address(100)], "eth0").len(), 1);
        assert!(pacer.due(now + milliseconds(500), |_| false).is_empty());
        assert_eq!(pacer.poll_at(), None);
        assert_eq!(round(&mut pacer, now, 2, &[address(100)], "eth0").len(), 0);
        pacer.forget(0);
        assert!(pacer.due(now + Duration::from_secs(1), |_| true).is_empty());
    }

    #[test]
    fn the_paces_are_reported_in_keepalived_s_order_and_numbers() {
        let pacer = pacer(
            "global_defs {\n vrrp_garp_interval 0.25\n}\n\
             garp_group {\n garp_interval 0.5\n interface eth0\n}\n\
             garp_group {\n gna_interval 2\n interfaces {\n  eth1\n }\n}\n\
             vrrp_instance VI_1 {\n interface eth0\n virtual_router_id 51\n\
             virtual_ipaddress {\n  192.0.2.100\n  198.51.100.1 dev eth2\n }\n}\n",
        );
        let report = pacer.report();
        let summary: Vec<(u32, Vec<String>)> = report
            .iter()
            .map(|pace| (pace.aggregation_group, pace.interfaces.clone()))
            .collect();
        assert_eq!(
            summary,
            [
                (0, vec!["eth0".to_owned()]),
                (1, vec!["eth1".to_owned()]),
                // The default, for the address's other interface.
                (0, vec!["eth2".to_owned()]),
            ]
        );
        assert_eq!(
            report[2].intervals,
            Intervals {
                arp: Some(milliseconds(250)),
                neighbour: None
            }
        );
    }

    #[test]
    fn an_interface_named_twice_keeps_its_first_group() {
        let pacer = pacer(&format!(
            "garp_group {{\n garp_interval 0.5\n interface eth0\n}}\n\
             garp_group {{\n garp_interval 1\n interface eth0\n}}\n{INSTANCE}"
        ));
        assert_eq!(pacer.by_interface["eth0"], 0);
        assert_eq!(
            pacer.warnings(),
            ["garp_group already specified for eth0 - ignoring"]
        );
    }
}
