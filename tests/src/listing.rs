//! Reading ipvsadm's listings in the lab.

use std::collections::HashSet;

/// Whether a listing names a service twice (`-A ...` in `-S`, a service
/// line in `-L`), which a table cannot hold.
///
/// The kernel dumps services by their position in a hash table that every
/// namespace shares, resuming each part of a dump at a position: services
/// added or deleted meanwhile in other namespaces (tests running beside
/// this one) shift positions, and libipvs then lists a service twice (seen
/// in ipvsadm's `-S` in ipvsctl's differential runs and in pulse's). Such
/// a listing says nothing of the table: take it again.
pub fn repeats_a_service(listing: &str) -> bool {
    let mut seen = HashSet::new();
    listing
        .lines()
        .filter(|line| {
            line.starts_with("-A ")
                || ["TCP ", "UDP ", "SCTP ", "FWM "]
                    .iter()
                    .any(|protocol| line.starts_with(protocol))
        })
        .any(|line| !seen.insert(line))
}

#[cfg(test)]
mod tests {
    use super::repeats_a_service;

    #[test]
    fn a_listing_that_repeats_a_service_is_recognised() {
        assert!(repeats_a_service(
            "-A -f 7 -6 -s rr -p 30 -M 64\n-A -f 7 -6 -s rr -p 30 -M 64\n"
        ));
        assert!(repeats_a_service(
            "Prot LocalAddress:Port Scheduler Flags\nTCP  10.0.0.1:80 rr\nTCP  10.0.0.1:80 rr\n"
        ));
        // Destinations of different services may look alike; services differ.
        assert!(!repeats_a_service(
            "-A -t 10.0.0.1:80 -s rr\n-a -t 10.0.0.1:80 -r 10.0.0.9:80 -m -w 1\n\
             -A -t 10.0.0.2:80 -s rr\n-a -t 10.0.0.2:80 -r 10.0.0.9:80 -m -w 1\n"
        ));
    }
}
