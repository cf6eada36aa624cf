//! `cargo xtask bench`: the library against ipvsadm on the same kernel, in
//! the same lab run, so the ratio means something on a noisy machine.
//!
//! Applies 1,000 services x 10 destinations with `ipvsadm -R` and with
//! [`Client::apply`], each into a fresh network namespace, then lists the
//! table with `ipvsadm -Ln` and with the library. Then the same with
//! `ipvsctl -R` and `ipvsctl -Ln`, process against process. The tables and
//! listings are checked to be identical. Prints every round and the median
//! ratios. Timings are printed, never asserted.
//!
//! Both tools start straight into their namespace (no `ip netns exec` in
//! front, which would add the same 0.1 s to each) from the guest's root
//! filesystem, as an installed tool would.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use ipvs::{Client, Destination, Forwarding, Operation, Protocol, Service, ServiceKey};
use labkit::Namespace;

const SERVICES: usize = 1000;
const DESTINATIONS: usize = 10;
const ROUNDS: usize = 3;
/// Listings per tool and round in the ipvsctl comparison.
const LIST_TURNS: usize = 5;

/// In the guest: the benchmark, of the library and then of `ipvsctl`.
pub fn run_in_guest(ipvsctl: &Path) -> Result<()> {
    // Installed where ipvsadm is, in the guest's root filesystem. The
    // repository is a 9p mount without a page cache, so each start of a
    // binary there reads its pages from the host again: 0.14 s for an
    // `ipvsctl -Ln` of an empty table, against 0.056 s for the same binary
    // in the root filesystem and 0.057 s for ipvsadm (measured in the lab).
    let installed = Path::new("/usr/local/sbin/ipvsctl");
    std::fs::copy(ipvsctl, installed)
        .with_context(|| format!("copy {} to {}", ipvsctl.display(), installed.display()))?;
    let ipvsctl = installed;
    let (rules, operations) = workload();
    let rules_file = std::env::temp_dir().join("fulcrum-bench.rules");
    std::fs::write(&rules_file, &rules)?;
    println!(
        "{SERVICES} services x {DESTINATIONS} destinations: {} operations, {ROUNDS} rounds",
        operations.len()
    );
    println!(
        "{:>5}  {:>14}  {:>14}  {:>8}  {:>12}  {:>12}  {:>8}",
        "round", "ipvsadm -R", "library", "ratio", "ipvsadm -Ln", "library", "ratio"
    );
    warm_up(&rules, &operations)?;
    let mut apply_ratios = Vec::new();
    let mut list_ratios = Vec::new();
    for round in 1..=ROUNDS {
        let reference = Namespace::create("bench-ipvsadm")?;
        let ours = Namespace::create("bench-library")?;

        let started = Instant::now();
        ipvsadm(&reference, &["-R"], Some(&rules_file))?;
        let reference_apply = started.elapsed();

        let library_apply = ours.run(|| -> Result<Duration> {
            let started = Instant::now();
            let mut client = Client::connect()?;
            client.apply(&operations)?;
            Ok(started.elapsed())
        })??;

        let saved_reference = sorted_lines(&ipvsadm(&reference, &["-S", "-n"], None)?);
        let saved_ours = sorted_lines(&ipvsadm(&ours, &["-S", "-n"], None)?);
        if saved_reference != saved_ours {
            bail!("the two tables differ: ipvsadm -R and the library applied different rules");
        }
        if saved_ours.len() != SERVICES * (DESTINATIONS + 1) {
            bail!(
                "expected {} rules, found {}",
                SERVICES * (DESTINATIONS + 1),
                saved_ours.len()
            );
        }

        let started = Instant::now();
        let listing = ipvsadm(&ours, &["-L", "-n"], None)?;
        let reference_list = started.elapsed();
        let (library_list, listed) = ours.run(|| -> Result<(Duration, usize)> {
            let started = Instant::now();
            let mut client = Client::connect()?;
            let services = client.services()?;
            let keys: Vec<ServiceKey> = services.iter().map(|service| service.key).collect();
            let destinations = client.destinations_of(&keys)?;
            let count = destinations.iter().map(Vec::len).sum::<usize>() + services.len();
            Ok((started.elapsed(), count))
        })??;
        // ipvsadm -Ln prints three header lines, then a line per object.
        let Some(listed_by_ipvsadm) = listing.lines().count().checked_sub(3) else {
            bail!("ipvsadm -Ln printed less than its three header lines:\n{listing}");
        };
        if listed != listed_by_ipvsadm {
            bail!("the library listed {listed} objects, ipvsadm {listed_by_ipvsadm}");
        }

        let apply_ratio = reference_apply.as_secs_f64() / library_apply.as_secs_f64();
        let list_ratio = reference_list.as_secs_f64() / library_list.as_secs_f64();
        println!(
            "{round:>5}  {:>12.3} s  {:>12.3} s  {apply_ratio:>7.1}x  {:>10.3} s  {:>10.3} s  {list_ratio:>7.1}x",
            reference_apply.as_secs_f64(),
            library_apply.as_secs_f64(),
            reference_list.as_secs_f64(),
            library_list.as_secs_f64(),
        );
        apply_ratios.push(apply_ratio);
        list_ratios.push(list_ratio);
    }
    println!(
        "median: the library applies {:.1}x faster than ipvsadm -R and lists {:.1}x faster than ipvsadm -Ln",
        median(&mut apply_ratios),
        median(&mut list_ratios)
    );
    println!(
        "(ipvsadm's times include starting its process under emulation, true(1) below; \
         the library's include connecting and resolving the family)"
    );
    compare_ipvsctl(&rules_file, ipvsctl)
}

/// `ipvsctl -R` and `ipvsctl -Ln` against ipvsadm's, process against
/// process; the tables they leave and the listings they print must be
/// identical.
fn compare_ipvsctl(rules_file: &Path, ipvsctl: &Path) -> Result<()> {
    println!(
        "\nipvsctl against ipvsadm, the same rules, {ROUNDS} rounds (-Ln: the median of {LIST_TURNS} turns each)"
    );
    println!(
        "{:>5}  {:>14}  {:>14}  {:>8}  {:>12}  {:>12}  {:>8}  {:>12}  {:>10}",
        "round",
        "ipvsadm -R",
        "ipvsctl -R",
        "ratio",
        "ipvsadm -Ln",
        "ipvsctl -Ln",
        "ratio",
        "dumps alone",
        "true(1)"
    );
    let mut apply_ratios = Vec::new();
    let mut list_ratios = Vec::new();
    let mut shared_ratios = Vec::new();
    for round in 1..=ROUNDS {
        let reference = Namespace::create("bench-ipvsadm")?;
        let ours = Namespace::create("bench-ipvsctl")?;
        let started = Instant::now();
        ipvsadm(&reference, &["-R"], Some(rules_file))?;
        let reference_apply = started.elapsed();
        let started = Instant::now();
        tool(&ours, ipvsctl, &["-R"], Some(rules_file))?;
        let our_apply = started.elapsed();
        if sorted_lines(&ipvsadm(&reference, &["-S", "-n"], None)?)
            != sorted_lines(&ipvsadm(&ours, &["-S", "-n"], None)?)
        {
            bail!("ipvsadm -R and ipvsctl -R left different tables");
        }

        // Listed twice: beside the other namespace's 1,000 services, then
        // alone on the host, the usual director. ipvsctl reads destinations
        // from /proc/net/ip_vs, where the kernel loses its place among
        // other namespaces' services after each page (ipvs::listing), and
        // dumps the services it lost.
        let (shared_reference, shared_ours) = list_turns(&ours, ipvsctl)?;
        drop(reference);
        wait_alone(&ours)?;
        let (reference_list, our_list) = list_turns(&ours, ipvsctl)?;
        shared_ratios.push(shared_reference.as_secs_f64() / shared_ours.as_secs_f64());

        let floor = dumps_alone(&ours)?;
        let started = Instant::now();
        tool(&ours, Path::new("true"), &[], None)?;
        let process = started.elapsed();

        let apply_ratio = reference_apply.as_secs_f64() / our_apply.as_secs_f64();
        let list_ratio = reference_list.as_secs_f64() / our_list.as_secs_f64();
        println!(
            "{round:>5}  {:>12.3} s  {:>12.3} s  {apply_ratio:>7.1}x  {:>10.3} s  {:>10.3} s  {list_ratio:>7.1}x  {:>10.3} s  {:>8.3} s",
            reference_apply.as_secs_f64(),
            our_apply.as_secs_f64(),
            reference_list.as_secs_f64(),
            our_list.as_secs_f64(),
            floor.as_secs_f64(),
            process.as_secs_f64(),
        );
        apply_ratios.push(apply_ratio);
        list_ratios.push(list_ratio);
    }
    println!(
        "median: ipvsctl -R is {:.1}x as fast as ipvsadm -R, ipvsctl -Ln {:.1}x as fast as ipvsadm -Ln \
         ({:.1}x beside another namespace's 1,000 services)",
        median(&mut apply_ratios),
        median(&mut list_ratios),
        median(&mut shared_ratios)
    );
    println!(
        "(dumps alone: the kernel answering the listing's dumps, one at a time, to a reader that \
         discards them; true(1): starting a process that does nothing. Both tools pay both.)"
    );
    Ok(())
}

/// `ipvsadm -Ln` and `ipvsctl -Ln` in turns, several times (a listing takes
/// under a second, so a burst of load on the host falls on both); each
/// tool's median. The listings must be identical.
fn list_turns(namespace: &Namespace, ipvsctl: &Path) -> Result<(Duration, Duration)> {
    let mut reference_lists = Vec::new();
    let mut our_lists = Vec::new();
    for _ in 0..LIST_TURNS {
        let started = Instant::now();
        let reference_listing = ipvsadm(namespace, &["-L", "-n"], None)?;
        reference_lists.push(started.elapsed().as_secs_f64());
        let started = Instant::now();
        let our_listing = tool(namespace, ipvsctl, &["-L", "-n"], None)?;
        our_lists.push(started.elapsed().as_secs_f64());
        if reference_listing != our_listing {
            bail!("ipvsadm -Ln and ipvsctl -Ln print different listings of the same table");
        }
    }
    Ok((
        Duration::from_secs_f64(median(&mut reference_lists)),
        Duration::from_secs_f64(median(&mut our_lists)),
    ))
}

/// Waits (up to 30 s) until the kernel has dismantled the other
/// namespaces' services, which it does after their namespace is deleted:
/// until /proc/net/ip_vs shows every service of `namespace`.
fn wait_alone(namespace: &Namespace) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let whole = namespace.run(|| -> Result<bool> {
            let mut client = Client::connect()?;
            let services = client.services()?;
            let listing = client.listing()?;
            Ok(ipvs::listing::match_services(&services, listing)
                .iter()
                .all(Option::is_some))
        })??;
        if whole {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("other namespaces' services still in the kernel's table after 30 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// How long the kernel takes to answer the dumps a listing needs (the
/// services, then each service's destinations), read one at a time into a
/// buffer and thrown away: the floor under any `-Ln`.
fn dumps_alone(namespace: &Namespace) -> Result<Duration> {
    use netlink_packet_core::Emitable;
    use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_GENERIC};

    namespace.run(|| -> Result<Duration> {
        let mut client = Client::connect()?;
        let family = client
            .family_id()
            .context("the client has no IPVS family id")?;
        let keys: Vec<ServiceKey> = client
            .services()?
            .iter()
            .map(|service| service.key)
            .collect();
        let socket = Socket::new(NETLINK_GENERIC)?;
        socket.connect(&SocketAddr::new(0, 0))?;
        let mut buffer = vec![0_u8; 64 * 1024];
        let mut datagram = Vec::new();
        let requests = std::iter::once(ipvs::request::dump_services())
            .chain(keys.iter().map(ipvs::request::dump_destinations));
        let started = Instant::now();
        for (sequence, request) in requests.enumerate() {
            // struct nlmsghdr, then struct genlmsghdr, then the attributes.
            let length = 20 + request.message.buffer_len();
            datagram.clear();
            datagram.resize(length, 0);
            datagram[0..4].copy_from_slice(&(length as u32).to_ne_bytes());
            datagram[4..6].copy_from_slice(&family.to_ne_bytes());
            let flags = netlink_packet_core::NLM_F_REQUEST | netlink_packet_core::NLM_F_DUMP;
            datagram[6..8].copy_from_slice(&flags.to_ne_bytes());
            datagram[8..12].copy_from_slice(&(sequence as u32 + 1).to_ne_bytes());
            datagram[16] = request.message.command.into();
            datagram[17] = ipvs::IPVS_GENL_VERSION;
            request.message.emit(&mut datagram[20..]);
            socket.send(&datagram, 0)?;
            // Until NLMSG_DONE (or an error) heads a datagram.
            loop {
                let received = socket.recv(&mut &mut buffer[..], 0)?;
                let kind = u16::from_ne_bytes([buffer[4], buffer[5]]);
                if received < 16
                    || kind == netlink_packet_core::NLMSG_DONE
                    || kind == netlink_packet_core::NLMSG_ERROR
                {
                    break;
                }
            }
        }
        Ok(started.elapsed())
    })?
}

/// One small untimed round of each tool first: the kernel loads the
/// scheduler module on first use, and the guest reads each binary's pages
/// over 9p on first touch; neither belongs in the comparison.
fn warm_up(rules: &str, operations: &[Operation]) -> Result<()> {
    let namespace = Namespace::create("bench-warm-up")?;
    let few_rules: String = rules
        .lines()
        .take(DESTINATIONS + 1)
        .map(|line| format!("{line}\n"))
        .collect();
    let rules_file = std::env::temp_dir().join("fulcrum-bench-warm-up.rules");
    std::fs::write(&rules_file, few_rules)?;
    ipvsadm(&namespace, &["-R"], Some(&rules_file))?;
    ipvsadm(&namespace, &["-L", "-n"], None)?;
    ipvsadm(&namespace, &["-C"], None)?;
    namespace.run(|| -> Result<()> {
        let mut client = Client::connect()?;
        client.apply(&operations[..DESTINATIONS + 1])?;
        let services = client.services()?;
        let keys: Vec<ServiceKey> = services.iter().map(|service| service.key).collect();
        client.destinations_of(&keys)?;
        Ok(())
    })?
}

/// The same table as ipvsadm rules and as library operations.
fn workload() -> (String, Vec<Operation>) {
    let mut rules = String::new();
    let mut operations = Vec::new();
    for index in 0..SERVICES {
        let address = IpAddr::V4(Ipv4Addr::new(
            10,
            100,
            (index / 250) as u8,
            (index % 250) as u8 + 1,
        ));
        let key = ServiceKey::Address {
            protocol: Protocol::Tcp,
            address,
            port: 80,
        };
        writeln!(rules, "-A -t {address}:80 -s wlc").unwrap();
        operations.push(Operation::CreateService(Service::new(key, "wlc")));
        for destination in 0..DESTINATIONS {
            let real = SocketAddr::new(
                IpAddr::V4(Ipv4Addr::new(10, 200, 0, destination as u8 + 1)),
                8080,
            );
            writeln!(rules, "-a -t {address}:80 -r {real} -m -w 1").unwrap();
            operations.push(Operation::CreateDestination(
                key,
                Destination::new(real, Forwarding::Masquerade),
            ));
        }
    }
    (rules, operations)
}

fn ipvsadm(namespace: &Namespace, arguments: &[&str], input: Option<&Path>) -> Result<String> {
    tool(namespace, Path::new("ipvsadm"), arguments, input)
}

/// Runs `program` in `namespace` with `input` on stdin; its stdout, or an
/// error with its stderr.
fn tool(
    namespace: &Namespace,
    program: &Path,
    arguments: &[&str],
    input: Option<&Path>,
) -> Result<String> {
    let stdin = match input {
        Some(path) => Stdio::from(
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?,
        ),
        None => Stdio::null(),
    };
    let output = namespace
        .direct_command(program)
        .args(arguments)
        .stdin(stdin)
        .output()
        .with_context(|| format!("cannot run {}", program.display()))?;
    if !output.status.success() {
        bail!(
            "{} {} failed: {}",
            program.display(),
            arguments.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
