//! Reaching the kernel's IPVS as keepalived's `ipvs_start` does
//! (ipvswrapper.c), for the checkers' part and for VRRP's sync daemon: a
//! client, or keepalived's line saying why there is none.

use ipvs::Client;

/// A connection to IPVS, or keepalived's line (`IPVS: Can't initialize
/// ipvs: ...`) with what to do about it.
pub fn connect() -> Result<Client, String> {
    match Client::connect() {
        Ok(client) => Ok(client),
        // The kernel knows no IPVS family (ENOENT), as keepalived words it.
        Err(ipvs::Error::Unavailable) => Err(
            "IPVS: Can't initialize ipvs: No such file or directory (this kernel has no ip_vs \
             module loaded and did not load it: is the ip_vs module installed? `modprobe ip_vs` \
             says why not; -P runs VRRP alone)"
                .to_owned(),
        ),
        Err(error) => Err(format!("IPVS: Can't initialize ipvs: {error}")),
    }
}
