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

/// A listing taken with `list`, and taken again (five times at most) while
/// it names a service twice ([`repeats_a_service`]); `printed` is what a
/// result of `list` printed, and `what` names the listing in the message
/// that says it is taken again. Listing only reads the table, so taking it
/// again changes nothing.
pub fn listed_without_repeats<T>(
    what: &str,
    mut list: impl FnMut() -> T,
    printed: impl Fn(&T) -> &str,
) -> T {
    let mut listing = list();
    for _ in 0..5 {
        if !repeats_a_service(printed(&listing)) {
            break;
        }
        eprintln!("{what} repeated a service; listing again");
        listing = list();
    }
    listing
}

#[cfg(test)]
mod tests {
    use super::{listed_without_repeats, repeats_a_service};

    #[test]
    fn a_listing_is_taken_again_while_it_repeats_a_service_five_times_at_most() {
        let repeated = "TCP  10.0.0.1:80 rr\nTCP  10.0.0.1:80 rr\n";
        let clean = "TCP  10.0.0.1:80 rr\n";
        let mut listings = [repeated, repeated, clean].into_iter();
        let listing = listed_without_repeats("test", || listings.next().unwrap(), |text| text);
        assert_eq!(listing, clean);
        let mut taken = 0;
        let listing = listed_without_repeats(
            "test",
            || {
                taken += 1;
                repeated
            },
            |text| text,
        );
        assert_eq!((listing, taken), (repeated, 6));
    }

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
