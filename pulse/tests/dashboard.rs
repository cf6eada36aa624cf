//! The Grafana dashboard (docs/grafana/fulcrum-lvs.json) against what
//! pulse serves: the file is a dashboard Grafana imports (each panel typed,
//! placed, its queries with a `refId`, unique ids, the datasource and
//! `instance` variables), and every metric its expressions name is one a
//! real pulse's `/metrics` describes, a counter wherever a rate or an
//! increase is taken of it. promtool (when installed) parses every
//! expression, and a real Prometheus scraping pulse (when installed) runs
//! each one.
//!
//! A dashboard drifts from the exporter silently: a renamed family leaves
//! its panel empty, not failing. Running pulse is what keeps the names
//! honest; the families are described even without samples, so one VRRP
//! instance on a veth is enough to see the LVS ones too.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use labkit::Namespace;
use labkit::prometheus::Prometheus;
use serde_json::Value;

const PULSE: &str = env!("CARGO_BIN_EXE_pulse");

/// Included, so that a change of the file rebuilds the test.
const DASHBOARD: &str = include_str!("../../docs/grafana/fulcrum-lvs.json");

/// The prefixes of the names pulse exports: the keepalived exporters' and
/// its own.
const PREFIXES: [&str; 2] = ["keepalived_", "pulse_"];

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

fn dashboard() -> Value {
    serde_json::from_str(DASHBOARD).expect("docs/grafana/fulcrum-lvs.json is JSON")
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
/// `$instance` as a regular expression for the directors.
fn substituted(expression: &str, instance: &str) -> String {
    let mut text = expression.to_owned();
    for (variable, value) in [
        ("${__rate_interval}", "1m"),
        ("$__rate_interval", "1m"),
        ("${__range}", "1h"),
        ("$__range", "1h"),
        ("${__interval}", "15s"),
        ("$__interval", "15s"),
        ("${instance}", instance),
        ("$instance", instance),
    ] {
        text = text.replace(variable, value);
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
fn check_well_formed(dashboard: &Value) -> Result<()> {
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
    let instance = variables.get("instance").context("no instance variable")?;
    let definition = instance["query"]["query"]
        .as_str()
        .or(instance["query"].as_str())
        .context("the instance variable has no query")?;
    ensure!(
        instance["type"] == "query" && definition == "label_values(keepalived_up, instance)",
        "the instance variable is not label_values(keepalived_up, instance): {instance}"
    );

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
                "{place} query {reference} names no metric of pulse: {expression}"
            );
        }
    }
    check_no_overlap(dashboard)?;

    for query in queries(dashboard) {
        let place = &query.place;
        let expression = &query.expression;
        // A name inside a string is skipped by metric_names: it would go
        // unchecked.
        ensure!(
            !expression.contains("__name__"),
            "{place} selects by __name__: write the metric's name so that it can be checked"
        );
        let resolved = substituted(expression, ".+");
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
fn check_with_promtool(queries: &[Query], directory: &Path) -> Result<()> {
    let rules: Vec<Value> = queries
        .iter()
        .enumerate()
        .map(|(index, query)| {
            serde_json::json!({
                "record": format!("dashboard:expression_{index}"),
                "expr": substituted(&query.expression, ".+"),
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

#[test]
fn the_dashboard_is_one_grafana_imports() {
    let dashboard = dashboard();
    if let Err(error) = check_well_formed(&dashboard) {
        panic!("docs/grafana/fulcrum-lvs.json: {error:#}");
    }
    let queries = queries(&dashboard);
    println!(
        "{} panels, {} expressions",
        panels(&dashboard).len(),
        queries.len()
    );
    if labkit::installed("promtool") {
        let directory = scratch("promtool").expect("a scratch directory");
        let checked = check_with_promtool(&queries, &directory);
        let _ = fs::remove_dir_all(&directory);
        if let Err(error) = checked {
            panic!("{error:#}");
        }
        println!("promtool check rules parses all {}", queries.len());
    } else {
        println!("promtool is not installed: the expressions are not parsed");
    }
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
        "the dashboard does not match pulse's /metrics:\n{}\nfamilies served: {families:#?}",
        problems.join("\n")
    );
    Ok(())
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

/// A real Prometheus in the namespace scraping pulse every second; each
/// expression, its variables given values, run as an instant query must
/// succeed, and the VRRP state's must find the instance: the `$instance`
/// filter matches the label Prometheus gives.
fn check_with_prometheus(
    namespace: &Namespace,
    directory: &Path,
    target: SocketAddr,
    queries: &[Query],
) -> Result<()> {
    let prometheus = Prometheus::start(namespace, directory, target)?;
    let result = (|| -> Result<()> {
        let query = |expression: &str| -> Result<Value> {
            let (head, body) = prometheus.query(namespace, expression)?;
            serde_json::from_str(&body).with_context(|| format!("{head}\n{body}"))
        };
        // The instance as Prometheus labels it, what the `instance`
        // variable lists (label_values(keepalived_up, instance)); a few
        // scrapes in, so that rates and increases have two samples.
        let instance = wait_for(
            "Prometheus has scraped pulse three times",
            Duration::from_secs(60),
            || {
                let answer = query("count_over_time(keepalived_up[1m])").ok()?;
                let result = answer["data"]["result"].as_array()?.first()?.clone();
                let scrapes: f64 = result["value"][1].as_str()?.parse().ok()?;
                (scrapes >= 3.0)
                    .then(|| result["metric"]["instance"].as_str().map(str::to_owned))?
            },
        )?;
        let mut failures = Vec::new();
        for dashboard_query in queries {
            let expression = substituted(&dashboard_query.expression, &instance);
            let answer = query(&expression)?;
            let series = answer["data"]["result"].as_array().map_or(0, Vec::len);
            if answer["status"] != "success" {
                failures.push(format!("{}: {expression}: {answer}", dashboard_query.place));
            } else if dashboard_query.place.contains("\"VRRP state\"") && series == 0 {
                failures.push(format!(
                    "{}: no series for the instance {instance}: {expression}",
                    dashboard_query.place
                ));
            }
            println!("{}: {series} series", dashboard_query.place);
        }
        ensure!(
            failures.is_empty(),
            "Prometheus does not run these as they are:\n{}",
            failures.join("\n")
        );
        Ok(())
    })();
    result.map_err(|error| error.context(format!("prometheus log:\n{}", prometheus.log())))
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
    let dashboard = dashboard();
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
        let used: BTreeSet<String> = queries
            .iter()
            .chain(&variables)
            .flat_map(|query| metric_names(&query.expression))
            .map(|name_use| name_use.name)
            .collect();
        let unused: Vec<&String> = families
            .keys()
            .filter(|family| !used.contains(*family))
            .collect();
        println!(
            "all {} metric names of the dashboard are served by pulse; families it does not \
             show: {unused:?}",
            used.len()
        );
        if labkit::installed("prometheus") {
            check_with_prometheus(&namespace, directory, metrics, &queries)?;
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
