//! keepalived's dumps and what the exporters make of them, against
//! keepalived: the same configuration run by keepalived, then by pulse, in
//! the same host; each one's `keepalived.json` (SIGRTMIN+2),
//! `keepalived.stats` (SIGUSR2) and `keepalived.data` (SIGUSR1) compared
//! byte for byte once what cannot match is normalised (listed in
//! [`normalised`] and [`normalised_data`]); the values
//! mehdy/keepalived-exporter would export from each one's JSON, and read
//! from each one's data file in its text mode, compared, and found in
//! pulse's own `/metrics`; that text checked by promtool and
//! scraped by a real Prometheus, which is then queried.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use labkit::prometheus::Prometheus;

use super::*;

/// Two instances that become master alone: one with a password, a notify
/// script, an address with a prefix, one with a label on a `dev`, an
/// excluded address and two tracked scripts (one failing, weight -10), the
/// other `nopreempt` with a host address.
fn configuration(segment: &Segment) -> String {
    format!(
        r#"vrrp_script chk_ok {{
    script "/bin/true"
    interval 1
}}
vrrp_script chk_bad {{
    script "/bin/false"
    interval 1
    weight -10
}}
vrrp_instance VI_1 {{
    interface eth0
    virtual_router_id 51
    priority 100
    advert_int 1
    authentication {{
        auth_type PASS
        auth_pass s3cret
    }}
    virtual_ipaddress {{
        {first}/24
        {second} dev eth0 label eth0:1
    }}
    virtual_ipaddress_excluded {{
        192.0.2.9
    }}
    track_script {{
        chk_ok
        chk_bad
    }}
    notify_master "/bin/echo master"
}}
vrrp_instance VI_2 {{
    interface eth0
    virtual_router_id 52
    priority 50
    nopreempt
    virtual_ipaddress {{
        {third}
    }}
}}
"#,
        first = segment.ipv4(100),
        second = segment.ipv4(101),
        third = segment.ipv4(102),
    )
}

/// What one daemon wrote, and its view through the exporter.
struct Dumps {
    json: String,
    statistics: String,
    data: String,
    /// keepalived.stats as STATS_CLEAR (SIGRTMAX-1) writes it, then again
    /// after it: the counters as they were, then back to zero.
    cleared: (String, String),
}

/// Runs `kind` with the configuration until both instances are masters
/// and the failing script has lowered VI_1's priority, then asks for the
/// dumps as the exporters do (the signal to the pid of the pid file, the
/// files read from the temporary directory); `during` runs while it is
/// still up.
fn run(
    segment: &Segment,
    kind: Kind,
    arguments: &[&str],
    during: impl FnOnce(&Daemon) -> Result<()>,
) -> Result<Dumps> {
    let directory = &segment.directory;
    let name = format!("{kind}-dumps");
    let mut daemon = Daemon::start_as(
        kind,
        &segment.a,
        directory,
        &name,
        &configuration(segment),
        true,
        arguments,
    )?;
    let result =
        (|| -> Result<Dumps> {
            // A master down interval (3 s and the skew) and more.
            wait_for(
                &format!("{kind} takes both instances"),
                Duration::from_secs(15),
                || Ok(segment.a.holds(segment.ipv4(100))? && segment.a.holds(segment.ipv4(102))?),
            )?;
            wait_for(
                &format!("{kind} lowers VI_1 for its failing script"),
                Duration::from_secs(10),
                || {
                    Ok(daemon
                        .log()
                        .contains("(VI_1) Changing effective priority from 100 to 90"))
                },
            )?;
            let json_file = directory.join("keepalived.json");
            let statistics_file = directory.join("keepalived.stats");
            let data_file = directory.join("keepalived.data");
            let _ = fs::remove_file(&json_file);
            let _ = fs::remove_file(&statistics_file);
            let _ = fs::remove_file(&data_file);
            let pid = daemon.child.id() as i32;
            signal(pid, libc::SIGRTMIN() + 2);
            signal(pid, libc::SIGUSR2);
            signal(pid, libc::SIGUSR1);
            let mut dumps = Dumps {
                json: String::new(),
                statistics: String::new(),
                data: String::new(),
                cleared: (String::new(), String::new()),
            };
            // The data file has no last line to know it by: whole once its
            // last section is there and two reads agree.
            let mut last_data = String::new();
            // keepalived writes in place (a reader may see a part); pulse
            // renames a whole file over the last. Complete once the last line
            // is there.
            wait_for(
                &format!("{kind} writes its dumps"),
                Duration::from_secs(5),
                || {
                    dumps.json = fs::read_to_string(&json_file).unwrap_or_default();
                    dumps.statistics = fs::read_to_string(&statistics_file).unwrap_or_default();
                    let data = fs::read_to_string(&data_file).unwrap_or_default();
                    let data_whole = data.contains("------< Interfaces >------\n")
                        && data.ends_with('\n')
                        && data == last_data;
                    last_data = data;
                    dumps.data = last_data.clone();
                    Ok(data_whole
                        && dumps.json.ends_with("]\n")
                        && whole_statistics(&dumps.statistics))
                },
            )?;
            use std::os::unix::fs::PermissionsExt;
            for file in [&json_file, &data_file] {
                let mode = fs::metadata(file)?.permissions();
                ensure!(
                    mode.mode() & 0o777 == 0o600,
                    "{kind} wrote {} with mode {:o}",
                    file.display(),
                    mode.mode() & 0o777
                );
            }
            during(&daemon)?;
            // STATS_CLEAR writes the statistics as SIGUSR2 does, then clears
            // them: the next SIGUSR2 has each instance's transitions at 0.
            let _ = fs::remove_file(&statistics_file);
            signal(pid, libc::SIGRTMAX() - 1);
            let read_statistics = |what: &str| -> Result<String> {
                let mut text = String::new();
                wait_for(
                    &format!("{kind} writes {what}"),
                    Duration::from_secs(5),
                    || {
                        text = fs::read_to_string(&statistics_file).unwrap_or_default();
                        Ok(whole_statistics(&text))
                    },
                )?;
                let _ = fs::remove_file(&statistics_file);
                Ok(text)
            };
            dumps.cleared.0 = read_statistics("its statistics as it clears them")?;
            signal(pid, libc::SIGUSR2);
            dumps.cleared.1 = read_statistics("its cleared statistics")?;
            ensure!(
                dumps.cleared.1.matches("  Became master: 0\n").count() == 2,
                "{kind} did not clear its statistics:\n{}",
                dumps.cleared.1
            );
            daemon.terminate()?;
            Ok(dumps)
        })();
    result.map_err(|error| error.context(format!("{kind} log:\n{}", daemon.log())))
}

/// Whether `text` is a whole keepalived.stats of the two instances:
/// keepalived writes it in place (a reader may see a part), so complete
/// once the last line, priority 0 adverts sent, is there.
fn whole_statistics(text: &str) -> bool {
    text.matches("  Priority Zero:\n    Received: ").count() == 2
        && text.ends_with('\n')
        && text
            .rsplit_once("    Sent: ")
            .is_some_and(|(_, last)| last.trim_end().parse::<u64>().is_ok())
}

/// What cannot match between two runs, replaced by a mark: when each
/// instance last changed state (`last_transition`), and how many adverts
/// each sent (it depends on how long each ran before the signal).
fn normalised(text: &str) -> String {
    let mut result = String::with_capacity(text.len());
    let mut rest = text;
    // JSON: "last_transition":NUMBER and "advert_sent":NUMBER.
    // Statistics: the Sent line of the Advertisements block.
    loop {
        let next = [
            "\"last_transition\":",
            "\"advert_sent\":",
            "  Advertisements:\n    Received: ",
        ]
        .iter()
        .filter_map(|mark| rest.find(mark).map(|at| (at, *mark)))
        .min();
        let Some((at, mark)) = next else {
            result.push_str(rest);
            return result;
        };
        result.push_str(&rest[..at + mark.len()]);
        rest = &rest[at + mark.len()..];
        if mark.starts_with("  Advertisements") {
            // Received: N\n    Sent: N
            let (received, after) = rest.split_once('\n').unwrap_or((rest, ""));
            result.push_str(received);
            result.push('\n');
            let after = after.strip_prefix("    Sent: ").unwrap_or(after);
            let end = after.find('\n').unwrap_or(after.len());
            result.push_str("    Sent: N");
            rest = &after[end..];
        } else {
            let end = rest
                .find(|character: char| !character.is_ascii_digit() && character != '.')
                .unwrap_or(rest.len());
            result.push('N');
            rest = &rest[end..];
        }
    }
}

/// What cannot match between two `keepalived.data`, replaced by a mark:
/// each instance's `Last transition` and `Read timeout` (times, when it
/// became master and when its timer fires next), and the sockets'
/// descriptors (`fd_in N, fd_out N` of each instance, ` fd_in N fd_out =
/// N` of the socket pool: pulse's descriptors are its own). Nothing else:
/// the global definitions, priorities, states, `Master down timer`,
/// addresses, scripts (their `Result`, `Status`, `State`), and the
/// interfaces (indexes, addresses, MACs, flags, MTU, the tracking
/// instances) are compared as written.
fn normalised_data(text: &str) -> String {
    text.lines()
        .map(|line| {
            let marked = if line.starts_with("   Last transition = ") {
                "   Last transition = T"
            } else if line.starts_with("   Read timeout = ") {
                "   Read timeout = T"
            } else if line.starts_with("   fd_in ") {
                "   fd_in N, fd_out N"
            } else if line.starts_with(" fd_in ") {
                " fd_in N fd_out = N"
            } else {
                line
            };
            format!("{marked}\n")
        })
        .collect()
}

/// An instance as mehdy/keepalived-exporter's text mode reads it from
/// `keepalived.data`: state, wanted state, interface, gratuitous ARP
/// delay, VRID and addresses.
#[derive(Debug, Default, PartialEq)]
struct TextInstance {
    state: usize,
    wanted_state: usize,
    interface: String,
    garp_delay: i64,
    virtual_router_id: i64,
    addresses: Vec<String>,
}

/// mehdy/keepalived-exporter's `ParseVRRPData` and `ParseVRRPScript`
/// (internal/collector/parser.go), line for line: instances by name, and
/// the scripts' `(name, Status, State)`. Its errors where it has them (a
/// state it does not know, a number that is none) and the VIP each
/// `ParseVIP` must split into three words or more.
#[allow(clippy::type_complexity)]
fn exporter_text_view(
    data: &str,
) -> Result<(
    BTreeMap<String, TextInstance>,
    Vec<(String, String, String)>,
)> {
    const STATES: [&str; 4] = ["INIT", "BACKUP", "MASTER", "FAULT"];
    let state = |value: &str| -> Result<usize> {
        STATES
            .iter()
            .position(|state| *state == value)
            .with_context(|| format!("unknown state {value:?}"))
    };
    let mut instances: BTreeMap<String, TextInstance> = BTreeMap::new();
    let mut instance = String::new();
    let mut key = String::new();
    let mut value;
    for line in data.lines() {
        if line.starts_with(" VRRP Instance") && line.contains('=') {
            instance = line
                .trim()
                .split('=')
                .nth(1)
                .unwrap_or("")
                .trim()
                .to_owned();
            instances.insert(instance.clone(), TextInstance::default());
        } else if line.starts_with("   ") && !instance.is_empty() {
            if line.starts_with("     ") {
                value = line.trim().to_owned();
            } else {
                let separator = if line.contains('=') {
                    '='
                } else if line.contains(':') {
                    ':'
                } else {
                    continue;
                };
                let mut parts = line.trim().split(separator);
                key = parts.next().unwrap_or("").trim().to_owned();
                if key == "Virtual IP" {
                    continue;
                }
                value = parts.next().unwrap_or("").trim().to_owned();
            }
            let entry = instances.get_mut(&instance).context("the instance")?;
            if (key.starts_with("Virtual IP (") || key == "Virtual IP") && !value.is_empty() {
                ensure!(
                    value.split(' ').count() >= 3,
                    "ParseVIP cannot split {value:?}"
                );
                entry.addresses.push(value.clone());
            }
            match key.as_str() {
                "State" => entry.state = state(&value)?,
                "Wantstate" => entry.wanted_state = state(&value)?,
                "Interface" | "Listening device" => entry.interface = value.clone(),
                "Gratuitous ARP delay" => entry.garp_delay = value.parse()?,
                "Virtual Router ID" => entry.virtual_router_id = value.parse()?,
                _ => {}
            }
        } else if line.starts_with(" VRRP Version") || line.starts_with(" VRRP Script") {
            continue;
        } else {
            instance.clear();
        }
    }
    let mut scripts = Vec::new();
    let mut script: Option<(String, String, String)> = None;
    for line in data.lines() {
        if line.starts_with(" VRRP Script") && line.contains('=') {
            scripts.extend(script.take());
            let name = line
                .trim()
                .split('=')
                .nth(1)
                .unwrap_or("")
                .trim()
                .to_owned();
            script = Some((name, String::new(), String::new()));
        } else if line.starts_with("   ") && script.is_some() {
            if !line.contains('=') {
                continue;
            }
            let mut parts = line.trim().split('=');
            let key = parts.next().unwrap_or("").trim();
            let value = parts.next().unwrap_or("").trim().to_owned();
            let current = script.as_mut().context("the script")?;
            match key {
                "Status" => current.1 = value,
                "State" => current.2 = value,
                _ => {}
            }
        } else if !line.starts_with("    ") {
            scripts.extend(script.take());
        }
    }
    scripts.extend(script);
    Ok((instances, scripts))
}

/// mehdy/keepalived-exporter's collector, run on a `keepalived.json` the
/// way its source reads one (internal/collector: the JSON decoded into its
/// VRRPData and VRRPStats, `ParseVIP` splitting each address at its
/// spaces): the samples it would export, by name and labels. Its parse
/// fails where the exporter's would (a field of the wrong type, a VIP of
/// fewer than three words).
fn exporter_view(json: &str) -> Result<BTreeMap<String, f64>> {
    let instances: Vec<serde_json::Value> =
        serde_json::from_str(json).context("the exporter decodes an array of instances")?;
    let mut samples = BTreeMap::new();
    for instance in instances {
        let data = &instance["data"];
        let stats = &instance["stats"];
        let text = |field: &str| -> Result<String> {
            data[field]
                .as_str()
                .map(str::to_owned)
                .with_context(|| format!("data.{field} is not a string: {data}"))
        };
        // Go's encoding/json refuses a float for an int field.
        let integer = |value: &serde_json::Value, field: &str| -> Result<i64> {
            value[field]
                .as_i64()
                .with_context(|| format!("{field} is not an integer: {value}"))
        };
        let name = text("iname")?;
        let interface = text("ifp_ifname")?;
        let vrid = integer(data, "vrid")?;
        let state = integer(data, "state")?;
        integer(data, "wantstate")?;
        let labels = format!("iname=\"{name}\",intf=\"{interface}\",vrid=\"{vrid}\"");
        for (field, metric) in [
            ("advert_rcvd", "keepalived_advertisements_received_total"),
            ("become_master", "keepalived_become_master_total"),
            ("release_master", "keepalived_release_master_total"),
            ("packet_len_err", "keepalived_packet_length_errors_total"),
            (
                "advert_interval_err",
                "keepalived_advertisements_interval_errors_total",
            ),
            ("ip_ttl_err", "keepalived_ip_ttl_errors_total"),
            (
                "invalid_type_rcvd",
                "keepalived_invalid_type_received_total",
            ),
            ("addr_list_err", "keepalived_address_list_errors_total"),
            (
                "invalid_authtype",
                "keepalived_authentication_invalid_total",
            ),
            (
                "authtype_mismatch",
                "keepalived_authentication_mismatch_total",
            ),
            ("auth_failure", "keepalived_authentication_failure_total"),
            ("pri_zero_rcvd", "keepalived_priority_zero_received_total"),
            ("pri_zero_sent", "keepalived_priority_zero_sent_total"),
        ] {
            samples.insert(
                format!("{metric}{{{labels}}}"),
                integer(stats, field)? as f64,
            );
        }
        samples.insert(
            format!("keepalived_gratuitous_arp_delay_total{{{labels}}}"),
            integer(data, "garp_delay")? as f64,
        );
        let addresses = data["vips"].as_array().cloned().unwrap_or_default();
        for address in &addresses {
            let address = address.as_str().context("a VIP is not a string")?;
            let words: Vec<&str> = address.split(' ').collect();
            ensure!(
                words.len() >= 3,
                "the exporter cannot parse the VIP {address:?}"
            );
            samples.insert(
                format!(
                    "keepalived_vrrp_state{{iname=\"{name}\",intf=\"{}\",vrid=\"{vrid}\",ip_address=\"{}\"}}",
                    words[2], words[0]
                ),
                state as f64,
            );
        }
        if addresses.is_empty() {
            samples.insert(
                format!(
                    "keepalived_vrrp_state{{iname=\"{name}\",intf=\"{interface}\",vrid=\"{vrid}\",ip_address=\"\"}}"
                ),
                state as f64,
            );
        }
    }
    Ok(samples)
}

/// The body of a 200 to `GET path` of `address` from inside `namespace`,
/// with `accept` if given; with its head.
fn get(
    namespace: &Namespace,
    address: SocketAddr,
    path: &str,
    accept: Option<&str>,
) -> Result<(String, String)> {
    let (head, body) = labkit::http::get_path(namespace, address, path, accept)?;
    ensure!(head.contains(" 200 "), "GET {path}: {head}\n{body}");
    Ok((head, body))
}

/// The samples of an OpenMetrics or classic text, by name and labels.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
}

pub(super) fn dumps_and_metrics(segment: &Segment, scenario: &str) -> Result<()> {
    let keepalived = run(segment, Kind::Keepalived, &[], |_| Ok(()))?;
    let metrics_address: SocketAddr = "127.0.0.1:9650".parse()?;
    let address = metrics_address.to_string();
    let mut scraped = (String::new(), String::new());
    let mut prometheus_answer = None;
    let pulse = run(segment, Kind::Pulse, &["--metrics", &address], |_| {
        scraped.0 = get(
            &segment.a,
            metrics_address,
            "/metrics",
            Some("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
        )?
        .1;
        let (head, classic) = get(&segment.a, metrics_address, "/metrics", None)?;
        ensure!(head.contains("text/plain; version=0.0.4"), "{head}");
        scraped.1 = classic;
        prometheus_answer = scrape_with_prometheus(segment, metrics_address)?;
        Ok(())
    })?;
    for (what, ours, theirs) in [
        (
            "keepalived.json",
            normalised(&pulse.json),
            normalised(&keepalived.json),
        ),
        (
            "keepalived.stats",
            normalised(&pulse.statistics),
            normalised(&keepalived.statistics),
        ),
        (
            "keepalived.stats written by STATS_CLEAR",
            normalised(&pulse.cleared.0),
            normalised(&keepalived.cleared.0),
        ),
        (
            "keepalived.stats after STATS_CLEAR",
            normalised(&pulse.cleared.1),
            normalised(&keepalived.cleared.1),
        ),
        (
            "keepalived.data",
            normalised_data(&pulse.data),
            normalised_data(&keepalived.data),
        ),
    ] {
        ensure!(
            ours == theirs,
            "pulse's {what} differs from keepalived's (normalised):\npulse:\n{ours}\nkeepalived:\n{theirs}"
        );
    }
    // The exporter's text mode: the same instances and scripts read from
    // both data files, every instance and script there.
    let expected_text = exporter_text_view(&keepalived.data).context("keepalived's data")?;
    let ours_text = exporter_text_view(&pulse.data).context("pulse's data")?;
    ensure!(
        expected_text.0.len() == 2 && expected_text.1.len() == 2,
        "the exporter reads {expected_text:?} from keepalived's data"
    );
    ensure!(
        ours_text == expected_text,
        "the exporter's text mode would read other values for pulse:\npulse: {ours_text:#?}\nkeepalived: {expected_text:#?}"
    );
    let expected = exporter_view(&keepalived.json).context("keepalived's JSON")?;
    let ours = exporter_view(&pulse.json).context("pulse's JSON")?;
    ensure!(
        ours == expected,
        "the exporter would show other values for pulse:\npulse: {ours:#?}\nkeepalived: {expected:#?}"
    );
    // pulse's /metrics carries the same samples under the same names
    // (openmetrics and classic alike).
    for text in [&scraped.0, &scraped.1] {
        let served = samples(text);
        for (series, value) in &expected {
            ensure!(
                served.get(series) == Some(value),
                "/metrics has {series} = {:?}, the exporter {value}:\n{text}",
                served.get(series)
            );
        }
    }
    ensure!(scraped.0.ends_with("# EOF\n"), "{}", scraped.0);
    if !labkit::prometheus::check_metrics(&scraped.1)? {
        println!("{scenario}: promtool is not installed: /metrics not checked by it");
    }
    match prometheus_answer {
        Some(series) => println!(
            "{scenario}: the dumps match keepalived's; Prometheus scraped pulse and answered \
             keepalived_vrrp_state with {series} series, all MASTER"
        ),
        None => println!(
            "{scenario}: the dumps match keepalived's; prometheus is not installed: no real scrape"
        ),
    }
    Ok(())
}

/// A real Prometheus in the same host, scraping pulse every second; asked
/// for `keepalived_vrrp_state` until it has the three series, each at 2
/// (MASTER). `None` without Prometheus.
fn scrape_with_prometheus(segment: &Segment, target: SocketAddr) -> Result<Option<usize>> {
    if !labkit::installed("prometheus") {
        return Ok(None);
    }
    let prometheus = Prometheus::start(&segment.a, &segment.directory.join("prometheus"), target)?;
    let query = |expression: &str| -> Result<serde_json::Value> {
        let (head, body) = prometheus.query(&segment.a, expression)?;
        serde_json::from_str(&body).with_context(|| format!("{head}\n{body}"))
    };
    let result = (|| -> Result<usize> {
        let mut series = 0;
        wait_for(
            "Prometheus has scraped pulse",
            Duration::from_secs(60),
            || {
                let Ok(answer) = query("keepalived_vrrp_state") else {
                    return Ok(false);
                };
                let results = answer["data"]["result"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                series = results.len();
                Ok(series == 3
                    && results
                        .iter()
                        .all(|result| result["value"][1].as_str() == Some("2")))
            },
        )?;
        // The counters arrive as counters: a rate can be asked of them.
        let answer = query("rate(keepalived_advertisements_sent_total[10s])")?;
        ensure!(answer["status"] == "success", "{answer}");
        Ok(series)
    })();
    result
        .map(Some)
        .map_err(|error| error.context(format!("prometheus log:\n{}", prometheus.log())))
}

/// keepalived's later dump settings, pulse alone: keepalived 2.2.7, the one
/// compared with, has none of them ("Unknown keyword"). `json_version 2`
/// (keepalived 2.2.8) and the three dump files (2.3.3): keepalived.data
/// under a relative name (its last component, in `$TMPDIR`),
/// keepalived.stats in a directory (a path ending in '/'),
/// keepalived.json under a file name; none in `$TMPDIR`'s usual names.
/// Then a reload back to `json_version 1` without `json_dump_file`: the
/// next JSON is the array alone, in `$TMPDIR`.
pub(super) fn later_dump_settings(segment: &Segment, scenario: &str) -> Result<()> {
    let directory = &segment.directory;
    let statistics_directory = directory.join("statistics");
    let exporter_directory = directory.join("exporter");
    fs::create_dir_all(&statistics_directory)?;
    fs::create_dir_all(&exporter_directory)?;
    let json_file = exporter_directory.join("vrrp.json");
    let statistics_file = statistics_directory.join("keepalived.stats");
    let data_file = directory.join("vrrp.data");
    // Two copies of a process tracked (version 2 carries the count).
    let (process, name) = super::track_process::distinctive_sleep(segment)?;
    let mut running = [
        super::track_process::start_process(&process)?,
        super::track_process::start_process(&process)?,
    ];
    let instance = Instance {
        extra: "    track_process {\n        daemon weight 10\n    }\n".to_owned(),
        ..Instance::v3(100, format!("{}/24", segment.ipv4(100)))
    }
    .configuration();
    let instance =
        format!("vrrp_track_process daemon {{\n    process {name}\n    quorum 1\n}}\n{instance}");
    let settings = format!(
        "global_defs {{\n    json_version 2\n    state_dump_file ignored/vrrp.data\n    \
         stats_dump_file {}/\n    json_dump_file {}\n}}\n{instance}",
        statistics_directory.display(),
        json_file.display()
    );
    let mut pulse = Daemon::start_as(
        Kind::Pulse,
        &segment.a,
        directory,
        "later-dumps",
        &settings,
        true,
        &[],
    )?;
    let result = (|| -> Result<()> {
        wait_for("pulse becomes master", Duration::from_secs(10), || {
            segment.a.holds(segment.ipv4(100))
        })?;
        let pid = pulse.child.id() as i32;
        signal(pid, libc::SIGRTMIN() + 2);
        signal(pid, libc::SIGUSR2);
        signal(pid, libc::SIGUSR1);
        let (mut json, mut statistics, mut data) = (String::new(), String::new(), String::new());
        // pulse renames each whole dump over its file: there or not.
        wait_for("pulse writes its dumps", Duration::from_secs(5), || {
            json = fs::read_to_string(&json_file).unwrap_or_default();
            statistics = fs::read_to_string(&statistics_file).unwrap_or_default();
            data = fs::read_to_string(&data_file).unwrap_or_default();
            Ok(!json.is_empty() && !statistics.is_empty() && !data.is_empty())
        })?;
        ensure!(
            json.starts_with(r#"{"vrrp":[{"data":{"iname":"VI_1","#)
                && json.ends_with(
                    "\"track_process\":[{\"process\":\"daemon\",\"param_match\":\"none\",\
                     \"min_processes\":1,\"current_processes\":2,\"have_quorum\":true,\
                     \"weight\":0,\"terminate_delay\":0,\"fork_delay\":0,\
                     \"fork_delay_timer_running\":false,\"terminate_delay_timer_running\":false,\
                     \"full_command\":false}]}\n"
                ),
            "keepalived.json in json_version 2 with a tracked process:\n{json}"
        );
        let parsed: serde_json::Value = serde_json::from_str(&json)?;
        ensure!(
            parsed["vrrp"][0]["data"]["state"] == 2
                && parsed["vrrp"][0]["stats"]["become_master"] == 1,
            "{json}"
        );
        ensure!(
            statistics.starts_with("VRRP Instance: VI_1\n")
                && statistics.contains("  Priority Zero:\n"),
            "{statistics}"
        );
        ensure!(
            data.contains("------< VRRP Topology >------")
                && data.contains("------< Interfaces >------\n"),
            "{data}"
        );
        use std::os::unix::fs::PermissionsExt;
        for file in [&json_file, &statistics_file, &data_file] {
            let mode = fs::metadata(file)?.permissions().mode() & 0o777;
            ensure!(mode == 0o600, "{} has mode {mode:o}", file.display());
        }
        for usual in ["keepalived.json", "keepalived.stats", "keepalived.data"] {
            ensure!(
                !directory.join(usual).exists(),
                "{usual} written in $TMPDIR as well"
            );
        }
        // Nothing but the dumps: no temporary file left beside them.
        for (place, expected) in [
            (&exporter_directory, vec!["vrrp.json"]),
            (&statistics_directory, vec!["keepalived.stats"]),
        ] {
            let mut names: Vec<String> = fs::read_dir(place)?
                .map(|entry| Ok(entry?.file_name().to_string_lossy().into_owned()))
                .collect::<Result<_>>()?;
            names.sort();
            ensure!(names == expected, "{}: {names:?}", place.display());
        }
        // A reload takes the new settings: json_version 1, in $TMPDIR.
        let configuration = directory.join("later-dumps.conf");
        fs::write(&configuration, &instance)?;
        signal(pid, libc::SIGHUP);
        wait_for("pulse reloads", Duration::from_secs(10), || {
            Ok(pulse
                .log()
                .contains("VRRP reloaded: 1 of 1 instance(s) kept with their state"))
        })?;
        let usual_json = directory.join("keepalived.json");
        signal(pid, libc::SIGRTMIN() + 2);
        let mut array = String::new();
        wait_for(
            "pulse writes keepalived.json",
            Duration::from_secs(5),
            || {
                array = fs::read_to_string(&usual_json).unwrap_or_default();
                Ok(!array.is_empty())
            },
        )?;
        ensure!(
            array.starts_with(r#"[{"data":{"iname":"VI_1","#) && array.ends_with("}}]\n"),
            "keepalived.json in json_version 1 after the reload:\n{array}"
        );
        pulse.terminate()?;
        Ok(())
    })();
    for process in &mut running {
        super::track_process::stop_process(process)?;
    }
    result.map_err(|error| error.context(format!("pulse log:\n{}", pulse.log())))?;
    println!(
        "{scenario}: json_version 2 and the three dump files where they were configured, \
         json_version 1 in $TMPDIR after a reload"
    );
    Ok(())
}
