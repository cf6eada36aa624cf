//! What the state machine needs of a `vrrp_instance`, resolved once from
//! the configuration model (instance values over global_defs over
//! keepalived's defaults), so that the machine does not depend on parsing.

use std::net::IpAddr;
use std::time::Duration;

use fulcrum_config::model::{Authentication, VrrpDefaults, VrrpInstance};

use super::packet::{AUTHENTICATION_LEN, Family, MAX_INTERVAL_CENTISECONDS};

/// VRRP version 2 (RFC 3768) or 3 (RFC 5798).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    V2,
    V3,
}

impl Version {
    pub fn number(self) -> u8 {
        match self {
            Version::V2 => 2,
            Version::V3 => 3,
        }
    }
}

/// Authentication of version 2 adverts; version 3 has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthenticationSettings {
    None,
    /// `auth_type PASS`: the first 8 bytes of the password, NUL-padded,
    /// compared with the advert's authentication data.
    Password([u8; AUTHENTICATION_LEN]),
}

/// A unicast peer and the TTL range its adverts must arrive with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerSettings {
    pub address: IpAddr,
    pub min_ttl: Option<u8>,
    pub max_ttl: Option<u8>,
}

/// Gratuitous ARP / unsolicited neighbour advertisement schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GarpSettings {
    /// `garp_master_delay`: a second round this long after becoming master
    /// (keepalived's default 5 s; zero: none).
    pub master_delay: Duration,
    /// `garp_master_repeat`: messages per address per round (default 5).
    pub master_repeat: u32,
    /// `garp_lower_prio_delay` (default: `master_delay`).
    pub lower_priority_delay: Duration,
    /// `garp_lower_prio_repeat` (default: `master_repeat`); zero: a master
    /// hearing a lower priority sends none.
    pub lower_priority_repeat: u32,
    /// `garp_master_refresh`: a round this often while master (default:
    /// none).
    pub master_refresh: Option<Duration>,
    /// `garp_master_refresh_repeat` (default 1; 0 after `vrrp_min_garp`).
    pub master_refresh_repeat: u32,
    /// `garp_extra_if all DELAY` (or the global `vrrp_garp_extra_if`)
    /// where some virtual address is on another interface: every DELAY,
    /// at the first advert after it, one message on each such interface
    /// (keepalived's vrrp_send_vmac_update).
    pub extra_interfaces: Option<Duration>,
}

/// One instance's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceSettings {
    pub name: String,
    pub virtual_router_id: u8,
    pub version: Version,
    pub family: Family,
    /// The configured priority, 1..=255; 255 owns the addresses.
    pub priority: u8,
    /// Version 2: whole seconds (1..=255); version 3: centiseconds
    /// (1..=4095).
    pub advert_interval: Duration,
    pub preempt: bool,
    pub preempt_delay: Duration,
    pub authentication: AuthenticationSettings,
    /// The addresses the adverts carry: `virtual_ipaddress` of the
    /// instance's family, in configuration order.
    pub virtual_addresses: Vec<IpAddr>,
    pub unicast_peers: Vec<PeerSettings>,
    /// The primary address the adverts come from (`unicast_src_ip`,
    /// `mcast_src_ip`, else the interface's, which only the daemon knows:
    /// it fills this in). Compared with a master's on equal priorities.
    pub local_address: Option<IpAddr>,
    /// `vrrp_check_unicast_src` / `check_unicast_src`.
    pub check_unicast_source: bool,
    /// `skip_check_adv_addr`: a backup skips the address list check for
    /// adverts from the master it already knows.
    pub skip_check_advert_addresses: bool,
    /// `lower_prio_no_advert`: a master hearing a lower priority stays
    /// silent instead of answering at once.
    pub lower_priority_no_advert: bool,
    /// `higher_prio_send_advert`: a master hearing a higher priority sends
    /// one more advert before stepping down.
    pub higher_priority_send_advert: bool,
    /// `down_timer_adverts` (default 3): adverts missed before a backup
    /// takes over.
    pub down_timer_adverts: u32,
    pub garp: GarpSettings,
    /// `strict_mode` / global `vrrp_strict`. The configuration crate has
    /// already overridden what strict mode forbids; here it changes
    /// defaults (accept mode, garps and adverts to a lower priority).
    pub strict: bool,
    /// Accept mode (RFC 5798 §6.1 `Accept_Mode`): whether a master takes
    /// traffic to the virtual addresses. Without it the daemon drops that
    /// traffic with firewall rules while master (keepalived's
    /// `no_accept`; its default in strict mode).
    pub accept: bool,
}

/// Why a `vrrp_instance` cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("({0}) the virtual_router_id must be set")]
    MissingVirtualRouterId(String),
    #[error("({0}) VRRP version {1} is not 2 or 3")]
    UnsupportedVersion(String, u8),
    #[error("({0}) auth_type AH is not supported")]
    AuthenticationHeaderUnsupported(String),
    #[error("({0}) priority 0 is reserved for the stop advert")]
    ZeroPriority(String),
}

const DEFAULT_GARP_DELAY: Duration = Duration::from_secs(5);
const DEFAULT_GARP_REPEAT: u32 = 5;
const DEFAULT_DOWN_TIMER_ADVERTS: u32 = 3;

impl InstanceSettings {
    /// Resolves `instance` with the global `defaults`.
    pub fn from_model(
        instance: &VrrpInstance,
        defaults: &VrrpDefaults,
    ) -> Result<InstanceSettings, SettingsError> {
        let name = instance.name.clone();
        let strict = instance.strict_mode.unwrap_or(defaults.strict);
        let virtual_router_id = instance
            .virtual_router_id
            .ok_or_else(|| SettingsError::MissingVirtualRouterId(name.clone()))?;
        if instance.priority == 0 {
            return Err(SettingsError::ZeroPriority(name));
        }
        // keepalived gives an instance the family of its first address and
        // runs every IPv6 instance as version 3.
        let family = instance
            .virtual_addresses
            .first()
            .map(|address| Family::of(&address.address.address))
            .or_else(|| instance.unicast_source.as_ref().map(Family::of))
            .unwrap_or(Family::Ipv4);
        let version = match instance.version.or(defaults.version).unwrap_or(2) {
            2 if family == Family::Ipv6 => Version::V3,
            2 => Version::V2,
            3 => Version::V3,
            other => return Err(SettingsError::UnsupportedVersion(name, other)),
        };
        let authentication = match (&instance.authentication, version) {
            (Some(Authentication::Password(password)), Version::V2) => {
                let mut data = [0; AUTHENTICATION_LEN];
                let bytes = password.as_bytes();
                let len = bytes.len().min(AUTHENTICATION_LEN);
                data[..len].copy_from_slice(&bytes[..len]);
                AuthenticationSettings::Password(data)
            }
            (Some(Authentication::Ah(_)), Version::V2) => {
                return Err(SettingsError::AuthenticationHeaderUnsupported(name));
            }
            // keepalived ignores authentication with version 3.
            _ => AuthenticationSettings::None,
        };
        let master_delay = instance
            .garp
            .master_delay
            .or(defaults.garp_master_delay)
            .unwrap_or(DEFAULT_GARP_DELAY);
        let master_repeat = instance
            .garp
            .master_repeat
            .or(defaults.garp_master_repeat)
            .unwrap_or(DEFAULT_GARP_REPEAT);
        // The lower priority defaults are the global ones, whose own
        // defaults are the global master delay and repeat (vrrp.c
        // vrrp_complete_init and vrrp_complete_instance), not the
        // instance's.
        let global_delay = defaults.garp_master_delay.unwrap_or(DEFAULT_GARP_DELAY);
        let global_repeat = defaults.garp_master_repeat.unwrap_or(DEFAULT_GARP_REPEAT);
        let garp = GarpSettings {
            master_delay,
            master_repeat,
            // Strict mode: no repeated garps to a lower priority unless
            // the instance says so (keepalived ignores the global values
            // then).
            lower_priority_delay: if strict {
                instance.garp.lower_prio_delay.unwrap_or(Duration::ZERO)
            } else {
                instance
                    .garp
                    .lower_prio_delay
                    .or(defaults.garp_lower_prio_delay)
                    .unwrap_or(global_delay)
            },
            lower_priority_repeat: if strict {
                instance.garp.lower_prio_repeat.unwrap_or(0)
            } else {
                instance
                    .garp
                    .lower_prio_repeat
                    .or(defaults.garp_lower_prio_repeat)
                    .unwrap_or(global_repeat)
            },
            master_refresh: instance
                .garp
                .master_refresh
                .or(defaults.garp_master_refresh)
                .filter(|refresh| !refresh.is_zero()),
            // 0 only from vrrp_min_garp: a refresh then sends nothing, as
            // keepalived's loop of no repeats.
            master_refresh_repeat: instance
                .garp
                .master_refresh_repeat
                .or(defaults.garp_master_refresh_repeat)
                .unwrap_or(1),
            extra_interfaces: extra_interfaces(instance, defaults),
        };
        Ok(InstanceSettings {
            virtual_router_id,
            version,
            family,
            priority: instance.priority,
            advert_interval: advert_interval(instance.advert_interval, version),
            preempt: !instance.nopreempt,
            preempt_delay: instance.preempt_delay,
            authentication,
            virtual_addresses: instance
                .virtual_addresses
                .iter()
                .map(|address| address.address.address)
                .filter(|address| Family::of(address) == family)
                .collect(),
            unicast_peers: instance
                .unicast_peers
                .iter()
                .map(|peer| PeerSettings {
                    address: peer.address,
                    min_ttl: peer.min_ttl,
                    max_ttl: peer.max_ttl,
                })
                .collect(),
            local_address: instance.unicast_source.or(instance.multicast_source),
            check_unicast_source: instance.check_unicast_source || defaults.check_unicast_src,
            skip_check_advert_addresses: instance
                .skip_check_adv_addr
                .unwrap_or(defaults.skip_check_adv_addr),
            lower_priority_no_advert: instance
                .lower_prio_no_advert
                .or(if strict {
                    Some(true)
                } else {
                    defaults.lower_prio_no_advert
                })
                .unwrap_or(false),
            higher_priority_send_advert: instance
                .higher_prio_send_advert
                .or(if strict {
                    Some(false)
                } else {
                    defaults.higher_prio_send_advert
                })
                .unwrap_or(false),
            down_timer_adverts: instance
                .down_timer_adverts
                .or(defaults.down_timer_adverts)
                .unwrap_or(DEFAULT_DOWN_TIMER_ADVERTS)
                .max(1),
            garp,
            strict,
            // keepalived: "If we are running in strict mode, default is to
            // disable accept mode, otherwise default is to enable it."
            accept: instance.accept.unwrap_or(!strict),
            name,
        })
    }

    /// The interval as the advert carries it: seconds (version 2) or
    /// centiseconds (version 3).
    pub fn advert_interval_field(&self) -> u16 {
        match self.version {
            Version::V2 => self.advert_interval.as_secs() as u16,
            Version::V3 => (self.advert_interval.as_millis() / 10) as u16,
        }
    }
}

/// The interval of `garp_extra_if` as keepalived 2.2.7 uses it without
/// VMACs (vrrp.c `vrrp_complete_instance`): the instance's, else the
/// global `vrrp_garp_extra_if`; kept only with `all` (without it only VMAC
/// interfaces, which pulse does not create, are announced) and when a
/// virtual address (or excluded one) has a `dev` other than the
/// instance's interface; 0 turns it off.
fn extra_interfaces(instance: &VrrpInstance, defaults: &VrrpDefaults) -> Option<Duration> {
    let extra = instance.garp.extra_if.or(defaults.garp_extra_if)?;
    let elsewhere = instance
        .virtual_addresses
        .iter()
        .chain(&instance.excluded_addresses)
        .any(|address| {
            address
                .device
                .as_ref()
                .is_some_and(|device| Some(device) != instance.interface.as_ref())
        });
    (extra.all && elsewhere && !extra.delay.is_zero()).then_some(extra.delay)
}

/// keepalived rounds a version 2 interval to whole seconds (1..=255) and a
/// version 3 one to centiseconds (1..=4095).
fn advert_interval(configured: Duration, version: Version) -> Duration {
    match version {
        Version::V2 => {
            let seconds = (configured.as_millis() + 500) / 1000;
            Duration::from_secs(seconds.clamp(1, 255) as u64)
        }
        Version::V3 => {
            let centiseconds = (configured.as_micros() + 5_000) / 10_000;
            let centiseconds = centiseconds.clamp(1, u128::from(MAX_INTERVAL_CENTISECONDS));
            Duration::from_millis(centiseconds as u64 * 10)
        }
    }
}
