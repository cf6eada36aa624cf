//! The Grafana dashboards against what Fulcrum serves. Both go through
//! the same checks: the file is a dashboard Grafana imports (each panel
//! typed, placed without overlap, its queries with a `refId`, unique ids,
//! the datasource variable and its own query variables), and promtool
//! (when installed) parses every expression.
//!
//! - docs/grafana/fulcrum-lvs.json: every metric its expressions name is
//!   one a real pulse's `/metrics` describes, a counter wherever a rate or
//!   an increase is taken of it, and a real Prometheus scraping pulse
//!   (when installed) runs each expression.
//! - docs/grafana/fulcrum-sdn.json: the same against the Mux's and the
//!   host agent's collectors (`pulse::mux::metrics::text`,
//!   `fulcrum_agent::metrics::text`) rendering reports made by hand, with
//!   no kernel: every family is described even from empty reports, and
//!   the hand-made ones give every family a sample. As root, a real
//!   Prometheus scrapes those texts (two Muxes and an agent, served on a
//!   local port in a namespace) and runs each expression: every panel
//!   finds series, the sync lag and the Muxes' shares of a DIP's
//!   connections with the values the reports give.
//!
//! A dashboard drifts from the exporter silently: a renamed family leaves
//! its panel empty, not failing. Running the exporter's own code is what
//! keeps the names honest; the families are described even without
//! samples, so one VRRP instance on a veth is enough to see the LVS ones
//! too.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result, bail, ensure};
use fulcrum_agent::report::AgentReport;
use labkit::Namespace;
use labkit::prometheus::Prometheus;
use pulse::mux::metrics::{ServiceTraffic, Traffic};
use pulse::mux::report::{MuxReport, TenantReport};
use serde_json::Value;

const PULSE: &str = env!("CARGO_BIN_EXE_pulse");

/// A dashboard of the repository, and the query variables it must have.
struct Board {
    file: &'static str,
    /// The file, included so that a change of it rebuilds the test.
    text: &'static str,
    /// Each query variable: its name and its `label_values` definition.
    variables: &'static [(&'static str, &'static str)],
}

/// The LVS dashboard: pulse's families, by director.
const LVS: Board = Board {
    file: "docs/grafana/fulcrum-lvs.json",
    text: include_str!("../../docs/grafana/fulcrum-lvs.json"),
    variables: &[("instance", "label_values(keepalived_up, instance)")],
};

/// The SDN dashboard: the Muxes' families by their `mux` label, the host
/// agents' by their `host` label (the labels each collector gives every
/// sample, which stay right through a federation).
const SDN: Board = Board {
    file: "docs/grafana/fulcrum-sdn.json",
    text: include_str!("../../docs/grafana/fulcrum-sdn.json"),
    variables: &[
        ("mux", "label_values(pulse_mux_store_connected, mux)"),
        ("host", "label_values(fulcrum_agent_store_connected, host)"),
    ],
};

/// The prefixes of the names Fulcrum exports: the keepalived exporters'
/// and pulse's own (the Mux's among them, `pulse_mux_`), and the host
/// agent's.
const PREFIXES: [&str; 3] = ["keepalived_", "pulse_", "fulcrum_agent_"];

/// Grafana's width of a dashboard, in grid columns.
const GRID_COLUMNS: u64 = 24;

/// The functions that need a counter: on a gauge they give nonsense
/// without an error.
const COUNTER_FUNCTIONS: [&str; 3] = ["rate", "irate", "increase"];

/// One query of the dashboard: where it is, and its PromQL.
#[derive(Debug, Clone)]
struct Query {
    place: String,
    expression: String,
}

/// A metric name as an expression uses it, and the function it is the
/// argument of, if any (`rate` in `rate(x[1m])`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct NameUse {
    name: String,
    function: Option<String>,
}

fn dashboard(board: &Board) -> Value {
    serde_json::from_str(board.text)
        .unwrap_or_else(|error| panic!("{} is not JSON: {error}", board.file))
}

/// Each query variable of `board` given `value`: what the structure's
/// checks and promtool substitute.
fn any_value(board: &Board, value: &str) -> Vec<(&'static str, String)> {
    board
        .variables
        .iter()
        .map(|(name, _)| (*name, value.to_owned()))
        .collect()
}

/// Every panel, with those of collapsed rows (which Grafana keeps inside
/// their row).
fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut all = Vec::new();
    for panel in dashboard["panels"].as_array().into_iter().flatten() {
        all.push(panel);
        all.extend(panel["panels"].as_array().into_iter().flatten());
    }
    all
}

/// Every expression of the dashboard: the panels' targets, the
/// annotations' queries, and the `instance` variable's (Grafana's
/// `label_values`, not PromQL: its metric is returned apart).
fn queries(dashboard: &Value) -> Vec<Query> {
    let mut found = Vec::new();
    for panel in panels(dashboard) {
        for target in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expression) = target["expr"].as_str() {
                found.push(Query {
                    place: format!(
                        "panel {:?} query {}",
                        panel["title"].as_str().unwrap_or_default(),
                        target["refId"].as_str().unwrap_or_default()
                    ),
                    expression: expression.to_owned(),
                });
            }
        }
    }
    for annotation in dashboard["annotations"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(expression) = annotation["expr"].as_str() {
            found.push(Query {
                place: format!(
                    "annotation {:?}",
                    annotation["name"].as_str().unwrap_or_default()
                ),
                expression: expression.to_owned(),
            });
        }
    }
    found
}

/// The template variables' queries: Grafana's `label_values(METRIC,
/// LABEL)`, not PromQL, so checked for their names alone.
fn variable_queries(dashboard: &Value) -> Vec<Query> {
    dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|variable| variable["type"] == "query")
        .filter_map(|variable| {
            let query = variable["query"]["query"]
                .as_str()
                .or(variable["query"].as_str())?;
            Some(Query {
                place: format!(
                    "variable {:?}",
                    variable["name"].as_str().unwrap_or_default()
                ),
                expression: query.to_owned(),
            })
        })
        .collect()
}

/// The metric names `expression` uses: identifiers starting with one of
/// [`PREFIXES`], outside string literals (label values are not metric
/// names), outside Grafana's `$variables`; each with the function whose
/// first argument it is. Names are taken as written: a counter is
/// `X_total` in its samples and, in the classic text format, in its
/// family's `# TYPE` line too.
fn metric_names(expression: &str) -> Vec<NameUse> {
    let characters: Vec<char> = expression.chars().collect();
    let identifier =
        |character: char| character.is_ascii_alphanumeric() || matches!(character, '_' | ':');
    let mut uses = Vec::new();
    let mut index = 0;
    while index < characters.len() {
        let character = characters[index];
        if matches!(character, '"' | '\'' | '`') {
            // A string literal, to its closing quote; backquoted ones have
            // no escapes.
            index += 1;
            while index < characters.len() && characters[index] != character {
                if characters[index] == '\\' && character != '`' {
                    index += 1;
                }
                index += 1;
            }
            index += 1;
        } else if identifier(character) {
            let start = index;
            while index < characters.len() && identifier(characters[index]) {
                index += 1;
            }
            let token: String = characters[start..index].iter().collect();
            let variable = start > 0 && characters[start - 1] == '$';
            if !variable && PREFIXES.iter().any(|prefix| token.starts_with(prefix)) {
                uses.push(NameUse {
                    name: token,
                    function: enclosing_function(&characters[..start]),
                });
            }
        } else {
            index += 1;
        }
    }
    uses
}

/// The function whose opening parenthesis ends `before` (spaces aside):
/// `rate` for `rate( `.
fn enclosing_function(before: &[char]) -> Option<String> {
    let text: String = before.iter().collect();
    let open = text.trim_end().strip_suffix('(')?.trim_end();
    let name: String = open
        .chars()
        .rev()
        .take_while(|character| character.is_ascii_alphanumeric() || *character == '_')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    (!name.is_empty()).then_some(name)
}

/// `expression` with Grafana's variables given concrete values, as
/// Grafana would send it: `$__rate_interval` and `$__range` as durations,
/// each query variable (`$instance`, `$mux`, `$host`) as the regular
/// expression given.
fn substituted(expression: &str, variables: &[(&str, String)]) -> String {
    let mut text = expression.to_owned();
    for (variable, value) in [
        ("${__rate_interval}", "1m"),
        ("$__rate_interval", "1m"),
        ("${__range}", "1h"),
        ("$__range", "1h"),
        ("${__interval}", "15s"),
        ("$__interval", "15s"),
    ] {
        text = text.replace(variable, value);
    }
    for (name, value) in variables {
        text = text
            .replace(&format!("${{{name}}}"), value)
            .replace(&format!("${name}"), value);
    }
    text
}

/// A non-negative integer field of `value`, or why not.
fn unsigned(value: &Value, field: &str, place: &str) -> Result<u64> {
    value[field]
        .as_u64()
        .with_context(|| format!("{place}: gridPos.{field} is not a non-negative integer"))
}

/// What Grafana needs of the file to import it and draw each panel.
fn check_well_formed(board: &Board, dashboard: &Value) -> Result<()> {
    let schema = dashboard["schemaVersion"]
        .as_u64()
        .context("no schemaVersion")?;
    // 36 is Grafana 9's, where panels and targets name their datasource
    // by uid; Grafana 10 and 11 migrate anything from there.
    ensure!(
        (36..=41).contains(&schema),
        "schemaVersion {schema} is not one Grafana 10 or 11 imports as is"
    );
    for field in ["title", "uid"] {
        ensure!(
            dashboard[field]
                .as_str()
                .is_some_and(|text| !text.is_empty()),
            "the dashboard has no {field}"
        );
    }
    // The import asks for a Prometheus datasource under this input.
    let inputs = dashboard["__inputs"]
        .as_array()
        .context("no __inputs: the import cannot ask for a datasource")?;
    ensure!(
        inputs.iter().any(|input| input["name"] == "DS_PROMETHEUS"
            && input["type"] == "datasource"
            && input["pluginId"] == "prometheus"),
        "no __inputs entry for a Prometheus datasource DS_PROMETHEUS: {inputs:?}"
    );
    let variables: BTreeMap<&str, &Value> = dashboard["templating"]["list"]
        .as_array()
        .context("no templating.list")?
        .iter()
        .map(|variable| (variable["name"].as_str().unwrap_or_default(), variable))
        .collect();
    let datasource = variables
        .get("datasource")
        .context("no datasource variable")?;
    ensure!(
        datasource["type"] == "datasource" && datasource["query"] == "prometheus",
        "the datasource variable does not list Prometheus datasources: {datasource}"
    );
    for (name, wanted) in board.variables {
        let variable = variables
            .get(name)
            .with_context(|| format!("no {name} variable"))?;
        let definition = variable["query"]["query"]
            .as_str()
            .or(variable["query"].as_str())
            .with_context(|| format!("the {name} variable has no query"))?;
        ensure!(
            variable["type"] == "query" && definition == *wanted,
            "the {name} variable is not {wanted}: {variable}"
        );
        // Following the datasource variable too.
        ensure!(
            variable["datasource"]["uid"] == "${datasource}",
            "the {name} variable does not use the datasource variable: {variable}"
        );
    }

    let all = panels(dashboard);
    ensure!(!all.is_empty(), "no panels");
    let mut ids = BTreeSet::new();
    for panel in &all {
        let title = panel["title"].as_str().unwrap_or_default();
        let place = format!("panel {title:?}");
        ensure!(!title.is_empty(), "a panel without a title: {panel}");
        let kind = panel["type"]
            .as_str()
            .filter(|kind| !kind.is_empty())
            .with_context(|| format!("{place} has no type"))?;
        let id = panel["id"]
            .as_u64()
            .with_context(|| format!("{place} has no integer id"))?;
        ensure!(ids.insert(id), "{place}: id {id} is used twice");
        let grid = &panel["gridPos"];
        ensure!(grid.is_object(), "{place} has no gridPos");
        let (x, width) = (unsigned(grid, "x", &place)?, unsigned(grid, "w", &place)?);
        let height = unsigned(grid, "h", &place)?;
        unsigned(grid, "y", &place)?;
        ensure!(
            width >= 1 && height >= 1 && x + width <= GRID_COLUMNS,
            "{place}: gridPos {grid} does not fit the {GRID_COLUMNS} columns"
        );
        if kind == "row" {
            ensure!(
                panel.get("targets").is_none(),
                "{place} is a row with queries"
            );
            continue;
        }
        // Every query follows the datasource variable, so that choosing
        // another Prometheus moves the whole dashboard.
        ensure!(
            panel["datasource"]["uid"] == "${datasource}",
            "{place} does not use the datasource variable: {}",
            panel["datasource"]
        );
        let targets = panel["targets"]
            .as_array()
            .filter(|targets| !targets.is_empty())
            .with_context(|| format!("{place} has no targets"))?;
        let mut references = BTreeSet::new();
        for target in targets {
            let reference = target["refId"]
                .as_str()
                .filter(|reference| !reference.is_empty())
                .with_context(|| format!("{place}: a target without refId: {target}"))?;
            ensure!(
                references.insert(reference),
                "{place}: refId {reference} twice"
            );
            let expression = target["expr"]
                .as_str()
                .filter(|expression| !expression.trim().is_empty())
                .with_context(|| format!("{place} query {reference} has no expr"))?;
            ensure!(
                target["datasource"].is_null() || target["datasource"]["uid"] == "${datasource}",
                "{place} query {reference} does not use the datasource variable"
            );
            ensure!(
                !metric_names(expression).is_empty(),
                "{place} query {reference} names no metric of Fulcrum's: {expression}"
            );
        }
    }
    check_no_overlap(dashboard)?;

    let any = any_value(board, ".+");
    for query in queries(dashboard) {
        let place = &query.place;
        let expression = &query.expression;
        // A name inside a string is skipped by metric_names: it would go
        // unchecked.
        ensure!(
            !expression.contains("__name__"),
            "{place} selects by __name__: write the metric's name so that it can be checked"
        );
        let resolved = substituted(expression, &any);
        ensure!(
            !resolved.contains('$'),
            "{place} uses a variable the dashboard does not define: {expression}"
        );
        for name_use in metric_names(expression) {
            if let Some(function) = &name_use.function
                && COUNTER_FUNCTIONS.contains(&function.as_str())
            {
                ensure!(
                    name_use.name.ends_with("_total") || name_use.name.ends_with("_bucket"),
                    "{place} takes {function} of {}, which is not named as a counter",
                    name_use.name
                );
            }
        }
    }
    Ok(())
}

/// Grafana lays out overlapping panels again on load, moving them: the
/// file should say where they are.
fn check_no_overlap(dashboard: &Value) -> Result<()> {
    let mut placed: Vec<(String, [u64; 4])> = Vec::new();
    for panel in dashboard["panels"].as_array().into_iter().flatten() {
        let grid = &panel["gridPos"];
        let rectangle = ["x", "y", "w", "h"].map(|field| grid[field].as_u64().unwrap_or_default());
        let [x, y, width, height] = rectangle;
        let title = panel["title"].as_str().unwrap_or_default().to_owned();
        for (other, [other_x, other_y, other_width, other_height]) in &placed {
            let apart = x + width <= *other_x
                || other_x + other_width <= x
                || y + height <= *other_y
                || other_y + other_height <= y;
            ensure!(apart, "panels {title:?} and {other:?} overlap");
        }
        placed.push((title, rectangle));
    }
    Ok(())
}

/// promtool parses each expression (Debian's 2.42 has no command for an
/// expression alone; a recording rule's `expr` is parsed and type-checked
/// by `check rules`). The rules file is JSON, which YAML reads.
fn check_with_promtool(
    queries: &[Query],
    variables: &[(&str, String)],
    directory: &Path,
) -> Result<()> {
    let rules: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(|(index, query)| {
            serde_json::json!({
                "record": format!("dashboard:expression_{index}"),
                "expr": substituted(&query.expression, variables),
            })
        })
        .collect();
    let file = directory.join("dashboard-rules.yml");
    fs::write(
        &file,
        serde_json::json!({"groups": [{"name": "dashboard", "rules": rules}]}).to_string(),
    )?;
    let output = Command::new("promtool")
        .args(["check", "rules"])
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .context("cannot run promtool")?;
    ensure!(
        output.status.success(),
        "promtool check rules refuses the dashboard's expressions:\n{}{}\nthe rules are:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        queries
            .iter()
            .enumerate()
            .map(|(index, query)| format!(
                "dashboard:expression_{index}: {}: {}",
                query.place, query.expression
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
    Ok(())
}

/// A directory of this test's own under the temporary directory.
fn scratch(name: &str) -> Result<PathBuf> {
    let directory =
        std::env::temp_dir().join(format!("pulse-dashboard-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&directory);
    fs::create_dir_all(&directory)?;
    Ok(directory)
}

/// The structure's checks, then promtool's, on one dashboard.
fn check_importable(board: &Board, directory: &Path) -> Result<()> {
    let dashboard = dashboard(board);
    check_well_formed(board, &dashboard)?;
    let queries = queries(&dashboard);
    println!(
        "{}: {} panels, {} expressions",
        board.file,
        panels(&dashboard).len(),
        queries.len()
    );
    if labkit::installed("promtool") {
        check_with_promtool(&queries, &any_value(board, ".+"), directory)?;
        println!(
            "{}: promtool check rules parses all {}",
            board.file,
            queries.len()
        );
    } else {
        println!("promtool is not installed: the expressions are not parsed");
    }
    Ok(())
}

#[test]
fn the_dashboards_are_ones_grafana_imports() {
    let directory = scratch("promtool").expect("a scratch directory");
    let failures: Vec<String> = [&LVS, &SDN]
        .into_iter()
        .filter_map(|board| {
            check_importable(board, &directory)
                .err()
                .map(|error| format!("{}: {error:#}", board.file))
        })
        .collect();
    let _ = fs::remove_dir_all(&directory);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn metric_names_are_read_as_written() {
    let uses = metric_names(
        "sum by (instance) (rate(keepalived_advertisements_sent_total{iname=\"pulse_x\", \
         instance=~\"$instance\"}[$__rate_interval]))\n  + increase( pulse_ipvs_passes_total[1m])\
         * on (job) group_left (reason) pulse_real_server_last_change_info",
    );
    let found: Vec<(&str, Option<&str>)> = uses
        .iter()
        .map(|name_use| (name_use.name.as_str(), name_use.function.as_deref()))
        .collect();
    assert_eq!(
        found,
        [
            ("keepalived_advertisements_sent_total", Some("rate")),
            ("pulse_ipvs_passes_total", Some("increase")),
            ("pulse_real_server_last_change_info", None),
        ]
    );
}

/// The families a classic text scrape describes: name and type, from
/// its `# TYPE` lines.
fn families(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| {
            let (name, kind) = rest.split_once(' ')?;
            Some((name.to_owned(), kind.trim().to_owned()))
        })
        .collect()
}

/// The type of the family whose samples `name` names, if pulse serves
/// it. In the classic format a counter's family is named with its
/// `_total`, as its samples are; a histogram's samples add `_bucket`,
/// `_sum` and `_count` to its name, a summary's `_sum` and `_count`.
fn served_type<'a>(families: &'a BTreeMap<String, String>, name: &str) -> Option<&'a str> {
    if let Some(kind) = families.get(name) {
        return (kind != "histogram").then_some(kind.as_str());
    }
    for (suffix, kinds) in [
        ("_bucket", &["histogram"][..]),
        ("_sum", &["histogram", "summary"][..]),
        ("_count", &["histogram", "summary"][..]),
    ] {
        if let Some(family) = name.strip_suffix(suffix)
            && let Some(kind) = families.get(family)
            && kinds.contains(&kind.as_str())
        {
            // A bucket, a sum or a count: each counts up, as a counter.
            return Some("counter");
        }
    }
    None
}

/// The expressions' names against pulse's families: each served, a
/// counter wherever a rate or an increase is taken.
fn check_served(queries: &[Query], families: &BTreeMap<String, String>) -> Result<()> {
    let mut problems = Vec::new();
    for query in queries {
        for name_use in metric_names(&query.expression) {
            let name = &name_use.name;
            match (served_type(families, name), &name_use.function) {
                (None, _) => problems.push(format!("{}: {name} is not served", query.place)),
                (Some(kind), Some(function))
                    if COUNTER_FUNCTIONS.contains(&function.as_str()) && kind != "counter" =>
                {
                    problems.push(format!("{}: {function} of {name}, a {kind}", query.place));
                }
                _ => {}
            }
        }
    }
    ensure!(
        problems.is_empty(),
        "the dashboard does not match what is served:\n{}\nfamilies served: {families:#?}",
        problems.join("\n")
    );
    Ok(())
}

/// Every metric name the queries use.
fn names_used(queries: &[Query], variables: &[Query]) -> BTreeSet<String> {
    queries
        .iter()
        .chain(variables)
        .flat_map(|query| metric_names(&query.expression))
        .map(|name_use| name_use.name)
        .collect()
}

/// The families served that `used` does not name.
fn unused<'a>(families: &'a BTreeMap<String, String>, used: &BTreeSet<String>) -> Vec<&'a str> {
    families
        .keys()
        .filter(|family| !used.contains(*family))
        .map(String::as_str)
        .collect()
}

/// pulse running in a namespace; killed on drop if still running.
struct Pulse {
    child: Child,
    log: PathBuf,
}

impl Pulse {
    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGTERM, and the exit: pulse stops cleanly with `--metrics` on.
    fn terminate(&mut self) -> Result<()> {
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait()?;
        ensure!(status.success(), "pulse stopped with {status}");
        Ok(())
    }
}

impl Drop for Pulse {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// One VRRP instance on `eth0` and a script, so that the VRRP families
/// have samples (the LVS ones are described without).
const CONFIGURATION: &str = "vrrp_script chk_ok {
    script \"/bin/true\"
    interval 1
}
vrrp_instance VI_1 {
    interface eth0
    virtual_router_id 51
    priority 100
    advert_int 1
    virtual_ipaddress {
        10.99.0.100/24
    }
    track_script {
        chk_ok
    }
}
";

/// The body of a 200 to `GET path`.
fn get(namespace: &Namespace, address: SocketAddr, path: &str) -> Result<String> {
    let (head, body) = labkit::http::get_path(namespace, address, path, None)?;
    ensure!(head.contains(" 200 "), "GET {path}: {head}\n{body}");
    Ok(body)
}

/// Polls `condition` every 100 ms until it gives a value, or fails after
/// `bound`.
fn wait_for<T>(what: &str, bound: Duration, mut condition: impl FnMut() -> Option<T>) -> Result<T> {
    let started = Instant::now();
    loop {
        if let Some(value) = condition() {
            return Ok(value);
        }
        if started.elapsed() > bound {
            bail!("{what}: not within {bound:?}");
        }
        thread::sleep(Duration::from_millis(100));
    }
}

/// One expression as a real Prometheus ran it: its place, the expression
/// sent (its variables given values), and the series it found.
struct Answered<'a> {
    query: &'a Query,
    expression: String,
    result: Vec<Value>,
}

impl Answered<'_> {
    /// The value of the series whose `label` is `value`, if one is found.
    fn value_where(&self, label: &str, value: &str) -> Option<f64> {
        self.result
            .iter()
            .find(|series| series["metric"][label] == value)?["value"][1]
            .as_str()?
            .parse()
            .ok()
    }
}

/// A real Prometheus in the namespace scraping `target` every second;
/// once it has scraped `ready` three times (so that rates and increases
/// have samples), each expression, its variables given the values
/// `variables` takes from the labels of `ready`'s first series, is run as
/// an instant query and must succeed; `check` then judges the answers.
fn check_with_prometheus(
    namespace: &Namespace,
    directory: &Path,
    target: SocketAddr,
    queries: &[Query],
    ready: &str,
    variables: impl Fn(&Value) -> Option<Vec<(&'static str, String)>>,
    check: impl FnOnce(&[Answered]) -> Result<()>,
) -> Result<()> {
    let prometheus = Prometheus::start(namespace, directory, target)?;
    let result = (|| -> Result<()> {
        let query = |expression: &str| -> Result<Value> {
            let (head, body) = prometheus.query(namespace, expression)?;
            serde_json::from_str(&body).with_context(|| format!("{head}\n{body}"))
        };
        let values = wait_for(
            &format!("Prometheus has scraped {ready} three times"),
            Duration::from_secs(60),
            || {
                let answer = query(&format!("count_over_time({ready}[1m])")).ok()?;
                let result = answer["data"]["result"].as_array()?.first()?.clone();
                let scrapes: f64 = result["value"][1].as_str()?.parse().ok()?;
                (scrapes >= 3.0).then(|| variables(&result["metric"]))?
            },
        )?;
        let mut failures = Vec::new();
        let mut answers = Vec::new();
        for dashboard_query in queries {
            let expression = substituted(&dashboard_query.expression, &values);
            let answer = query(&expression)?;
            if answer["status"] != "success" {
                failures.push(format!("{}: {expression}: {answer}", dashboard_query.place));
                continue;
            }
            let result = answer["data"]["result"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            println!("{}: {} series", dashboard_query.place, result.len());
            answers.push(Answered {
                query: dashboard_query,
                expression,
                result,
            });
        }
        ensure!(
            failures.is_empty(),
            "Prometheus does not run these as they are:\n{}",
            failures.join("\n")
        );
        check(&answers)
    })();
    result.map_err(|error| error.context(format!("prometheus log:\n{}", prometheus.log())))
}

/// The answers of `answers` that found no series, of the queries
/// `needed` picks.
fn without_series(answers: &[Answered], needed: impl Fn(&Query) -> bool) -> Vec<String> {
    answers
        .iter()
        .filter(|answered| needed(answered.query) && answered.result.is_empty())
        .map(|answered| {
            format!(
                "{}: no series: {}",
                answered.query.place, answered.expression
            )
        })
        .collect()
}

#[test]
fn the_dashboard_uses_only_what_pulse_serves() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!(
            "skipping the dashboard's check against pulse: not root (a network namespace \
             and VRRP's raw sockets need it)"
        );
        return;
    }
    let directory = scratch("pulse").expect("a scratch directory");
    let result = against_pulse(&directory);
    if result.is_ok() {
        let _ = fs::remove_dir_all(&directory);
    }
    if let Err(error) = result {
        panic!("{error:?}\n(its files are kept in {})", directory.display());
    }
}

fn against_pulse(directory: &Path) -> Result<()> {
    let dashboard = dashboard(&LVS);
    let queries = queries(&dashboard);
    let namespace = Namespace::create(&format!("dash{}", std::process::id()))?;
    // A veth pair inside the namespace: eth0 carries the instance (its
    // adverts go to eth1, where nobody answers, so it becomes master).
    namespace.ip("link add eth0 type veth peer name eth1\n\
         link set eth1 up\n\
         addr add 10.99.0.1/24 dev eth0\n\
         link set eth0 up\n")?;
    let configuration = directory.join("keepalived.conf");
    fs::write(&configuration, CONFIGURATION)?;
    let metrics: SocketAddr = "127.0.0.1:9650".parse()?;
    let log = directory.join("pulse.log");
    let output = fs::File::create(&log)?;
    let child = namespace
        .command(PULSE)
        .args(["-n", "-l", "-P", "-f"])
        .arg(&configuration)
        .arg("-p")
        .arg(directory.join("pulse.pid"))
        .args(["--metrics", &metrics.to_string()])
        // Its dumps, were it asked for them, go to the scratch directory.
        .env("TMPDIR", directory)
        .stdin(Stdio::null())
        .stdout(output.try_clone()?)
        .stderr(output)
        .spawn()
        .context("cannot start pulse")?;
    let mut pulse = Pulse { child, log };
    let result = (|| -> Result<()> {
        let text = wait_for("pulse serves /metrics", Duration::from_secs(20), || {
            get(&namespace, metrics, "/metrics")
                .ok()
                .filter(|text| text.contains("keepalived_vrrp_state{"))
        })?;
        let families = families(&text);
        let variables = variable_queries(&dashboard);
        check_served(&queries, &families)?;
        check_served(&variables, &families)?;
        let used = names_used(&queries, &variables);
        println!(
            "all {} metric names of the dashboard are served by pulse; families it does not \
             show: {:?}",
            used.len(),
            unused(&families, &used)
        );
        if labkit::installed("prometheus") {
            // The instance as Prometheus labels it, what the `instance`
            // variable lists (label_values(keepalived_up, instance)); the
            // VRRP state's query must find it.
            check_with_prometheus(
                &namespace,
                directory,
                metrics,
                &queries,
                "keepalived_up",
                |labels| {
                    let instance = labels["instance"].as_str()?.to_owned();
                    Some(vec![("instance", instance)])
                },
                |answers| {
                    let missing =
                        without_series(answers, |query| query.place.contains("\"VRRP state\""));
                    ensure!(missing.is_empty(), "{}", missing.join("\n"));
                    Ok(())
                },
            )?;
            println!(
                "Prometheus ran all {} expressions against pulse",
                queries.len()
            );
        } else {
            println!("prometheus is not installed: the expressions were not run");
        }
        pulse.terminate()
    })();
    result.map_err(|error| error.context(format!("pulse log:\n{}", pulse.log())))
}

/// The two Muxes of the SDN texts: the first in sync, the second behind
/// the store since the start.
const MUXES: [&str; 2] = ["172.30.1.2", "172.30.1.3"];

/// The host agent of the SDN texts.
const HOST: &str = "172.30.3.2";

/// How many of a DIP's connections each Mux of [`MUXES`] schedules: the
/// first three times as many as the second (a share of 0.75 to 0.25).
const WEIGHTS: [u64; 2] = [3, 1];

/// A VIP or a DIP of the SDN texts.
fn address(octets: [u8; 4]) -> IpAddr {
    IpAddr::from(octets)
}

/// The report at `now` of the Mux `index` of [`MUXES`]: two tenants (one
/// VIP of three withdrawn), policy revision 3 applied at `started`, an
/// application refused before; the second Mux has seen revision 5 since
/// then, and its applications fail once a second.
fn mux_report(index: usize, started: SystemTime, now: SystemTime) -> MuxReport {
    let mut report = MuxReport::new(MUXES[index]);
    report.connected = true;
    let vips_a = BTreeSet::from([address([203, 0, 113, 10]), address([203, 0, 113, 11])]);
    let vips_b = BTreeSet::from([address([198, 51, 100, 20])]);
    report.apply_failed();
    report.applied(
        3,
        vec![
            TenantReport::new(
                100,
                "tenant-a",
                "fulcrum-vni100",
                &vips_a,
                &BTreeSet::from([address([203, 0, 113, 10])]),
            ),
            TenantReport::new(200, "tenant-b", "fulcrum-vni200", &vips_b, &vips_b),
        ],
        Duration::from_millis(30),
        started,
    );
    if index == 1 {
        report.sync.saw_store(5, started);
        report.applies_failed += now.duration_since(started).unwrap_or_default().as_secs();
    }
    report
}

/// The counters of the Mux `index` of [`MUXES`] as read at `now`,
/// growing with the time since `started` (a tenth of a second, a
/// connection per [`WEIGHTS`]).
fn mux_traffic(index: usize, started: SystemTime, now: SystemTime) -> Traffic {
    let tenths = now.duration_since(started).unwrap_or_default().as_millis() as u64 / 100;
    let statistics = |dip_weight: u64| {
        let connections = WEIGHTS[index] * dip_weight * tenths;
        ipvs::Statistics {
            connections,
            incoming_packets: 10 * connections,
            incoming_bytes: 1000 * connections,
            ..ipvs::Statistics::default()
        }
    };
    let dip = |octets: [u8; 4], port: u16| SocketAddr::new(address(octets), port);
    Traffic {
        read_at: Some(now),
        services: vec![
            ServiceTraffic {
                network: "tenant-a".to_owned(),
                service: "203.0.113.10:80/tcp".to_owned(),
                destinations: vec![
                    (dip([10, 1, 0, 5], 8080), statistics(2)),
                    (dip([10, 1, 0, 6], 8080), statistics(1)),
                ],
            },
            ServiceTraffic {
                network: "tenant-b".to_owned(),
                service: "198.51.100.20:443/tcp".to_owned(),
                destinations: vec![(dip([10, 2, 0, 7], 8443), statistics(1))],
            },
        ],
    }
}

/// The agent's report at `now`: policy revision 5 applied, three DIPs
/// found in two networks, two of them probed up and one down, their
/// verdicts growing with the time since `started`, and translations.
fn agent_report(started: SystemTime, now: SystemTime) -> AgentReport {
    let mut report = AgentReport::new(HOST);
    report.connected = true;
    report.sync.applied(5, started);
    report.networks = vec!["tenant-a".to_owned(), "tenant-b".to_owned()];
    let dips = [
        ("tenant-a", [10, 1, 0, 5], 8080, true),
        ("tenant-a", [10, 1, 0, 6], 8080, false),
        ("tenant-b", [10, 2, 0, 7], 8443, true),
    ];
    let seconds = now.duration_since(started).unwrap_or_default().as_secs();
    for (network, octets, port, up) in dips {
        let dip = SocketAddr::new(address(octets), port);
        report.found.insert((network.to_owned(), dip.ip()));
        let reason = if up {
            format!("TCP_CHECK {dip}: success")
        } else {
            format!("TCP_CHECK {dip}: connection refused")
        };
        report.verdict(network, dip, up, &reason, started);
        if let Some(health) = report.health.get_mut(&(network.to_owned(), dip)) {
            if up {
                health.verdicts_up += seconds;
            } else {
                health.verdicts_down += seconds;
            }
        }
    }
    report.translations.insert("tenant-a".to_owned(), 2);
    report.translations.insert("tenant-b".to_owned(), 1);
    report
}

/// Classic texts joined family by family: a family the texts share keeps
/// the first's `# HELP` and `# TYPE` and gathers every text's samples (a
/// family twice in one scrape is an error to Prometheus).
fn merged(texts: &[String]) -> String {
    let mut families: Vec<(String, Vec<&str>)> = Vec::new();
    for text in texts {
        let mut current = None;
        // The families this text is the first to describe.
        let mut first_here = BTreeSet::new();
        for line in text.lines().filter(|line| !line.is_empty()) {
            let descriptor = line
                .strip_prefix("# HELP ")
                .or_else(|| line.strip_prefix("# TYPE "));
            if let Some(rest) = descriptor {
                let name = rest.split(' ').next().unwrap_or_default();
                let known = families.iter().position(|(family, _)| family == name);
                let index = known.unwrap_or_else(|| {
                    families.push((name.to_owned(), Vec::new()));
                    families.len() - 1
                });
                if known.is_none() {
                    first_here.insert(name.to_owned());
                }
                if first_here.contains(name) {
                    families[index].1.push(line);
                }
                current = Some(index);
            } else if let Some(index) = current {
                families[index].1.push(line);
            }
        }
    }
    families
        .iter()
        .flat_map(|(_, lines)| lines)
        .map(|line| format!("{line}\n"))
        .collect()
}

/// What the SDN dashboard's Prometheus scrapes at `now`: both Muxes'
/// collectors and the agent's, as one text.
fn sdn_text(started: SystemTime, now: SystemTime) -> String {
    let mut texts: Vec<String> = (0..MUXES.len())
        .map(|index| {
            pulse::mux::metrics::text(
                &mux_report(index, started, now),
                &mux_traffic(index, started, now),
                now,
            )
        })
        .collect();
    texts.push(fulcrum_agent::metrics::text(
        &agent_report(started, now),
        now,
    ));
    merged(&texts)
}

/// Whether `text` has a sample of the family `name` names (a histogram's
/// `_bucket` is its own sample name).
fn has_sample(text: &str, name: &str) -> bool {
    text.lines().any(|line| {
        line.strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
    })
}

#[test]
fn the_sdn_dashboard_uses_only_what_the_mux_and_the_agent_serve() {
    let directory = scratch("sdn").expect("a scratch directory");
    let result = against_the_sdn_collectors(&directory);
    if result.is_ok() {
        let _ = fs::remove_dir_all(&directory);
    }
    if let Err(error) = result {
        panic!("{error:?}\n(its files are kept in {})", directory.display());
    }
}

fn against_the_sdn_collectors(directory: &Path) -> Result<()> {
    let dashboard = dashboard(&SDN);
    let queries = queries(&dashboard);
    let variables = variable_queries(&dashboard);
    // The families as the collectors describe them from empty reports:
    // the names must not depend on what a Mux or an agent happens to hold.
    let now = SystemTime::now();
    let empty = families(&format!(
        "{}{}",
        pulse::mux::metrics::text(&MuxReport::new(MUXES[0]), &Traffic::default(), now),
        fulcrum_agent::metrics::text(&AgentReport::new(HOST), now)
    ));
    check_served(&queries, &empty)?;
    check_served(&variables, &empty)?;
    // The hand-made reports give every family a sample, so that each
    // panel has something to show below.
    let started = now - Duration::from_secs(60);
    let text = sdn_text(started, now);
    ensure!(
        families(&text) == empty,
        "the hand-made reports' families differ from the empty ones':\n{text}"
    );
    let used = names_used(&queries, &variables);
    let without: Vec<&String> = used
        .iter()
        .filter(|name| !has_sample(&text, name))
        .collect();
    ensure!(
        without.is_empty(),
        "no sample of {without:?} in the hand-made texts:\n{text}"
    );
    if labkit::prometheus::check_metrics(&text)? {
        println!("promtool check metrics reads the merged text clean");
    }
    println!(
        "all {} metric names of the SDN dashboard are described by the Mux's or the agent's \
         collector, each with samples; families it does not show: {:?}",
        used.len(),
        unused(&empty, &used)
    );

    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("not root: the SDN expressions are not run by a Prometheus (a namespace)");
        return Ok(());
    }
    if !labkit::installed("prometheus") {
        println!("prometheus is not installed: the SDN expressions were not run");
        return Ok(());
    }
    let namespace = Namespace::create(&format!("dsdn{}", std::process::id()))?;
    let target: SocketAddr = "127.0.0.1:9651".parse()?;
    let exporter = Exporter::serve(&namespace, target, move || {
        sdn_text(started, SystemTime::now())
    })?;
    let muxes = MUXES.join("|");
    check_with_prometheus(
        &namespace,
        directory,
        target,
        &queries,
        "pulse_mux_store_connected",
        |_| Some(vec![("mux", muxes.clone()), ("host", HOST.to_owned())]),
        |answers| {
            // Every panel shows something of these reports, and the
            // second Mux's failing applications are marked.
            let mut problems = without_series(answers, |query| {
                query.place.starts_with("panel ")
                    || query.place == "annotation \"Application refused\""
            });
            let answer = |place: &str| {
                answers
                    .iter()
                    .find(|answered| answered.query.place == place)
                    .with_context(|| format!("no answer for {place}"))
            };
            // The headline: the first Mux in sync, the second behind since
            // the start (over a minute).
            let lag = answer("panel \"Mux sync lag\" query A")?;
            let (in_sync, behind) = (
                lag.value_where("mux", MUXES[0]),
                lag.value_where("mux", MUXES[1]),
            );
            if in_sync != Some(0.0) || !behind.is_some_and(|seconds| seconds >= 60.0) {
                problems.push(format!(
                    "{}: {in_sync:?} and {behind:?} seconds, not 0 and over 60: {:?}",
                    lag.query.place, lag.result
                ));
            }
            // The hash imbalance: three connections of four through the
            // first Mux, for each DIP.
            let share = answer("panel \"Each Mux's share of a DIP's connections\" query A")?;
            for (mux, weight) in MUXES.iter().zip(WEIGHTS) {
                let wanted = weight as f64 / WEIGHTS.iter().sum::<u64>() as f64;
                let found: Vec<f64> = share
                    .result
                    .iter()
                    .filter(|series| series["metric"]["mux"] == *mux)
                    .filter_map(|series| series["value"][1].as_str()?.parse().ok())
                    .collect();
                if found.len() != 3 || found.iter().any(|value| (value - wanted).abs() > 0.01) {
                    problems.push(format!(
                        "{}: {mux}'s shares are {found:?}, not three of {wanted}",
                        share.query.place
                    ));
                }
            }
            ensure!(problems.is_empty(), "{}", problems.join("\n"));
            Ok(())
        },
    )
    .with_context(|| format!("{} scrapes served", exporter.served()))?;
    println!(
        "Prometheus ran all {} SDN expressions, {} scrapes of the collectors' texts",
        queries.len(),
        exporter.served()
    );
    Ok(())
}

/// A `/metrics` of texts made in the test, on a port inside a namespace:
/// each request gets what `body` makes then, in the classic format.
struct Exporter {
    stop: Arc<AtomicBool>,
    served: Arc<std::sync::atomic::AtomicU64>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Exporter {
    fn serve(
        namespace: &Namespace,
        address: SocketAddr,
        body: impl Fn() -> String + Send + 'static,
    ) -> Result<Exporter> {
        let listener = namespace
            .run(|| TcpListener::bind(address))?
            .with_context(|| format!("cannot listen on {address}"))?;
        // Polled, so that the thread sees the stop.
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let thread = thread::spawn({
            let (stop, served) = (stop.clone(), served.clone());
            move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            if answer(stream, &body()).is_ok() {
                                served.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Err(_) => thread::sleep(Duration::from_millis(20)),
                    }
                }
            }
        });
        Ok(Exporter {
            stop,
            served,
            thread: Some(thread),
        })
    }

    fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One request's answer: its head read whole, then `body`, and the
/// connection closed.
fn answer(mut stream: TcpStream, body: &str) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut head = Vec::new();
    let mut buffer = [0; 4096];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        let read = stream.read(&mut buffer)?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        head.extend_from_slice(&buffer[..read]);
    }
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        fulcrum_metrics::CONTENT_TYPE_CLASSIC,
        body.len()
    )?;
    stream.flush()
}
