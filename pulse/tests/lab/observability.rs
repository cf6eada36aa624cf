//! The dashboard's picture (`docs/images/dashboard.png`, shown in
//! docs/observability.md), made in the lab: two directors run pulse with
//! `--metrics` in front of two real servers that a client keeps asking
//! (labkit's `FailoverTopology`), a real Prometheus scrapes both every
//! second, and a scenario gives each of the dashboard's main panels
//! something to show: a real server stopped and started again, an
//! `ipvsadm` edit by hand that pulse repairs, a reload with a changed
//! weight, a failover and the master's return. Then chromium, headless,
//! photographs Prometheus' graph page with those panels' expressions.
//!
//! Grafana is not packaged for Debian 12, Prometheus (2.42) and chromium
//! are: the graph page is the real Prometheus' own, and its UI needs
//! JavaScript, hence the browser.
//!
//! It runs only when asked for (`cargo xtask dashboard-picture`, or the
//! lab binary with `--ignored --exact
//! observability::on_request_the_dashboard_s_picture`): `cargo xtask test`
//! passes over the `on_request_` lab tests, and this one is minutes of
//! scenario under emulation that checks nothing the other lab tests do not,
//! to rewrite a file of the repository.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use labkit::http::{self, Responder};
use labkit::prometheus::url_encoded;
use labkit::{FailoverTopology, Namespace};

/// Where the picture goes, from the repository's root.
const PICTURE: &str = "docs/images/dashboard.png";
/// The real servers' port, behind the virtual address's.
const PORT: u16 = 8080;
/// Each director's `/metrics`, on its address on the real servers' side.
const METRICS_PORT: u16 = 9651;
/// Where Prometheus listens, in its namespace.
const PROMETHEUS: &str = "127.0.0.1:9090";
/// The window over which rates and increases are taken: a few scrapes,
/// short enough that each event of a short scenario stands apart.
const WINDOW: &str = "15s";
/// How long the picture shows before the first event and after each: long
/// enough for a 15 s window to rise and fall back.
const HOLD: Duration = Duration::from_secs(20);
/// A bound that catches "never", not a timing test (emulation is slow).
const LIMIT: Duration = Duration::from_secs(90);

/// The panels photographed: the dashboard's main expressions
/// (docs/grafana/fulcrum-lvs.json) without its `instance` variable.
fn panels() -> Vec<String> {
    vec![
        // VRRP: each instance's state (2 MASTER, 1 BACKUP).
        "max by (instance, iname, vrid) (keepalived_vrrp_state)".to_owned(),
        // Real servers up per virtual server.
        "sum by (instance, virtual_server) (pulse_real_server_up)".to_owned(),
        // Reloads by result.
        format!("sum by (instance, result) (increase(pulse_config_reloads_total[{WINDOW}]))"),
        // Drift repaired, by what found it.
        format!(
            "sum by (instance, found_by) (increase(pulse_ipvs_drift_repaired_total[{WINDOW}]))"
        ),
        // The checks' 95th percentile duration.
        format!(
            "histogram_quantile(0.95, sum by (instance, checker, result, le) \
             (rate(pulse_check_duration_seconds_bucket[{WINDOW}])))"
        ),
    ]
}

/// One director's keepalived.conf: the same on both but the priority;
/// `weight` is real server 2's, which the reload changes. TCP_CHECK on a
/// short cadence, so that a stopped real server leaves within seconds.
fn configuration(priority: u8, weight: u32) -> String {
    format!(
        "vrrp_instance VI_1 {{
    interface {client_side}
    virtual_router_id 51
    version 3
    advert_int 1
    priority {priority}
    virtual_ipaddress {{
        {virtual_address}/24 dev {client_side}
        {gateway}/24 dev {server_side}
    }}
}}
virtual_server {virtual_address} {PORT} {{
    protocol TCP
    lvs_sched wrr
    lvs_method NAT
    delay_loop 1
    retry 1
    delay_before_retry 1
    real_server 10.0.2.11 {PORT} {{
        TCP_CHECK {{ connect_timeout 1 }}
    }}
    real_server 10.0.2.12 {PORT} {{
        weight {weight}
        TCP_CHECK {{ connect_timeout 1 }}
    }}
}}
",
        client_side = FailoverTopology::CLIENT_INTERFACE,
        server_side = FailoverTopology::SERVER_INTERFACE,
        virtual_address = FailoverTopology::VIRTUAL_ADDRESS,
        gateway = FailoverTopology::GATEWAY_ADDRESS,
    )
}

/// pulse in a director's namespace with `--metrics`, its log in a file.
/// Not traffic.rs's `Pulse`: this one is stopped with SIGTERM (a master
/// that stops hands over at once, with a priority 0 advert) and started
/// again on the same files, and its configuration rewritten before a
/// SIGHUP.
struct Director<'topology> {
    name: String,
    namespace: &'topology Namespace,
    folder: PathBuf,
    metrics: SocketAddr,
    child: Option<Child>,
}

impl<'topology> Director<'topology> {
    fn start(
        name: &str,
        namespace: &'topology Namespace,
        folder: PathBuf,
        metrics: SocketAddr,
        configuration: &str,
    ) -> Director<'topology> {
        std::fs::create_dir_all(&folder).expect("director's folder");
        std::fs::write(folder.join("keepalived.conf"), configuration).expect("configuration");
        let mut director = Director {
            name: name.to_owned(),
            namespace,
            folder,
            metrics,
            child: None,
        };
        director.run();
        director
    }

    /// Starts pulse on the configuration file as it is and waits until
    /// `/metrics` shows its VRRP instance.
    fn run(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.folder.join("pulse.log"))
            .expect("pulse's log");
        let child = self
            .namespace
            .command(env!("CARGO_BIN_EXE_pulse"))
            .arg("-f")
            .arg(self.folder.join("keepalived.conf"))
            .args(["-n", "-l"])
            .arg("-p")
            .arg(self.folder.join("pulse.pid"))
            .arg("--metrics")
            .arg(self.metrics.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("pulse starts");
        self.child = Some(child);
        let director: &Director = self;
        wait_until(
            &format!("{}'s /metrics", director.name),
            &[director],
            || director.sum("keepalived_vrrp_state{", "").is_some(),
        );
    }

    /// Rewrites the configuration and sends SIGHUP.
    fn reload(&self, configuration: &str) {
        std::fs::write(self.folder.join("keepalived.conf"), configuration).expect("configuration");
        self.signal(libc::SIGHUP);
    }

    /// SIGTERM, and waits for pulse to exit.
    fn stop(&mut self) {
        self.signal(libc::SIGTERM);
        if let Some(mut child) = self.child.take() {
            child.wait().expect("pulse exits");
        }
    }

    fn signal(&self, signal: libc::c_int) {
        // `ip netns exec` execs pulse: the child is pulse itself.
        let child = self.child.as_ref().expect("pulse runs");
        let pid = libc::pid_t::try_from(child.id()).expect("pids fit pid_t");
        // SAFETY: signalling our own child, which has not been reaped.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill {pid}");
    }

    /// The sum of the values of the series of its `/metrics` whose line
    /// starts with `prefix` and contains `containing`; None if it does not
    /// answer or has none.
    fn sum(&self, prefix: &str, containing: &str) -> Option<f64> {
        let (head, body) = http::get_path(self.namespace, self.metrics, "/metrics", None).ok()?;
        if !head.contains(" 200 ") {
            return None;
        }
        let values: Vec<f64> = body
            .lines()
            .filter(|line| line.starts_with(prefix) && line.contains(containing))
            .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
            .collect();
        (!values.is_empty()).then(|| values.iter().sum())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.folder.join("pulse.log")).unwrap_or_default()
    }
}

impl Drop for Director<'_> {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Polls `done` every 200 ms; fails after [`LIMIT`] with `what` and the
/// directors' logs.
fn wait_until(what: &str, directors: &[&Director], mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        if started.elapsed() > LIMIT {
            let logs: Vec<String> = directors
                .iter()
                .map(|director| format!("{}:\n{}", director.name, director.log()))
                .collect();
            panic!(
                "waited {LIMIT:?} for {what}; the logs:\n{}",
                logs.join("\n")
            );
        }
        thread::sleep(Duration::from_millis(200));
    }
    eprintln!("picture: {what} after {:?}", started.elapsed());
}

/// Prometheus scraping both directors every second; stopped when dropped.
struct Prometheus {
    child: Child,
    folder: PathBuf,
}

impl Prometheus {
    fn start(namespace: &Namespace, folder: &Path, targets: &[SocketAddr]) -> Prometheus {
        std::fs::create_dir_all(folder).expect("Prometheus' folder");
        let targets: Vec<String> = targets.iter().map(|target| format!("'{target}'")).collect();
        let configuration = folder.join("prometheus.yml");
        std::fs::write(
            &configuration,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  \
                 - job_name: pulse\n    static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            ),
        )
        .expect("Prometheus' configuration");
        let log = std::fs::File::create(folder.join("prometheus.log")).expect("Prometheus' log");
        let child = namespace
            .command("prometheus")
            .arg(format!("--config.file={}", configuration.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                folder.join("data").display()
            ))
            .arg(format!("--web.listen-address={PROMETHEUS}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("prometheus starts");
        Prometheus {
            child,
            folder: folder.to_owned(),
        }
    }

    /// The answer's body to an instant query, if it answered 200.
    fn query(&self, namespace: &Namespace, expression: &str) -> Option<String> {
        let (head, body) = http::get_path(
            namespace,
            PROMETHEUS.parse().expect("an address"),
            &format!("/api/v1/query?query={}", url_encoded(expression)),
            None,
        )
        .ok()?;
        head.contains(" 200 ").then_some(body)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.folder.join("prometheus.log")).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The graph page showing `expressions` one under the other, over the last
/// `range`, each a line graph.
fn graph_page(expressions: &[String], range: Duration) -> String {
    let mut address = format!("http://{PROMETHEUS}/graph?");
    for (index, expression) in expressions.iter().enumerate() {
        if index > 0 {
            address.push('&');
        }
        address.push_str(&format!(
            "g{index}.expr={}&g{index}.tab=0&g{index}.stacked=0&g{index}.show_exemplars=0\
             &g{index}.range_input={}s",
            url_encoded(expression),
            range.as_secs()
        ));
    }
    address
}

#[test]
#[ignore = "runs in the lab, on request: it makes docs/images/dashboard.png"]
fn on_request_the_dashboard_s_picture() {
    labkit::require_lab();
    let repository = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("pulse is inside the workspace");
    let scratch = std::env::temp_dir().join(format!("pulse-picture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);

    let topology = FailoverTopology::build("picture", 2).expect("topology");
    let real_server = |index: usize| SocketAddr::new(topology.real_servers[index].address, PORT);
    let mut responders: Vec<Option<Responder>> = topology
        .start_responders(PORT)
        .expect("responders")
        .into_iter()
        .map(Some)
        .collect();
    let [first, second] = &topology.directors[..] else {
        panic!("two directors");
    };
    let metrics = |address| SocketAddr::new(IpAddr::V4(address), METRICS_PORT);
    let targets = [
        metrics(first.server_address),
        metrics(second.server_address),
    ];
    // Prometheus and the browser live on the real servers' segment, where
    // both directors' /metrics are, in real server 2's namespace (the one
    // that never stops).
    let monitor = &topology.real_servers[1].namespace;
    let prometheus = Prometheus::start(monitor, &scratch.join("prometheus"), &targets);
    let started = Instant::now();
    let mut director1 = Director::start(
        &first.name,
        &first.namespace,
        scratch.join(&first.name),
        targets[0],
        &configuration(150, 1),
    );
    let director2 = Director::start(
        &second.name,
        &second.namespace,
        scratch.join(&second.name),
        targets[1],
        &configuration(100, 1),
    );
    // One sample per virtual address, two addresses: 2 x MASTER (2).
    let is_master = |director: &Director| director.sum("keepalived_vrrp_state{", "") == Some(4.0);
    let real_server_up = |director: &Director, index: usize| {
        director.sum(
            "pulse_real_server_up{",
            &format!("real_server=\"{}\"", real_server(index)),
        )
    };
    wait_until(
        "director1 master, both real servers up",
        &[&director1, &director2],
        || {
            is_master(&director1)
                && real_server_up(&director1, 0) == Some(1.0)
                && real_server_up(&director1, 1) == Some(1.0)
        },
    );
    wait_until("Prometheus to answer", &[], || {
        prometheus
            .query(monitor, "up")
            .is_some_and(|body| body.contains("\"value\""))
    });

    // The client asks the virtual address all along: real traffic, which
    // the failover moves from one director to the other.
    let stop = AtomicBool::new(false);
    thread::scope(|scope| {
        scope.spawn(|| {
            let virtual_address = FailoverTopology::virtual_address(PORT);
            while !stop.load(Ordering::Relaxed) {
                let _ = http::get(&topology.client, virtual_address);
                thread::sleep(Duration::from_millis(250));
            }
        });
        thread::sleep(HOLD);

        // Real server 1 stops, then answers again.
        responders[0] = None;
        wait_until("real server 1 down", &[&director1, &director2], || {
            real_server_up(&director1, 0) == Some(0.0)
        });
        thread::sleep(HOLD);
        responders[0] = Some(
            Responder::spawn(
                &topology.real_servers[0].namespace,
                real_server(0),
                &topology.real_servers[0].name,
            )
            .expect("responder"),
        );
        wait_until("real server 1 up again", &[&director1, &director2], || {
            real_server_up(&director1, 0) == Some(1.0)
        });
        thread::sleep(HOLD);

        // An edit by hand on the master, which pulse puts back.
        let virtual_server = FailoverTopology::virtual_address(PORT).to_string();
        let edit = first
            .namespace
            .command("ipvsadm")
            .args(["-e", "-t", &virtual_server, "-r"])
            .arg(real_server(1).to_string())
            .args(["-m", "-w", "7"])
            .status()
            .expect("ipvsadm runs");
        assert!(edit.success(), "ipvsadm -e: {edit}");
        wait_until("the edit repaired", &[&director1, &director2], || {
            director1
                .sum("pulse_ipvs_drift_repaired_total{", "")
                .is_some_and(|repaired| repaired > 0.0)
        });
        thread::sleep(HOLD);

        // A reload that changes real server 2's weight.
        director1.reload(&configuration(150, 3));
        wait_until("the reload", &[&director1, &director2], || {
            director1.sum("pulse_config_reloads_total{", "result=\"success\"") == Some(1.0)
        });
        thread::sleep(HOLD);

        // Director1 stops: director2 takes over; then it starts again and,
        // its priority higher, takes the addresses back.
        director1.stop();
        wait_until("director2 master", &[&director1, &director2], || {
            is_master(&director2)
        });
        thread::sleep(HOLD);
        director1.run();
        wait_until("director1 master again", &[&director1, &director2], || {
            is_master(&director1) && !is_master(&director2)
        });
        thread::sleep(HOLD);
        stop.store(true, Ordering::Relaxed);
    });

    // Every panel has data in Prometheus before it is photographed: a
    // query that names no series would give an empty graph, not an error.
    for expression in panels() {
        let body = prometheus
            .query(monitor, &expression)
            .unwrap_or_else(|| panic!("{expression}: refused; log:\n{}", prometheus.log()));
        assert!(body.contains("\"value\""), "{expression}: {body}");
    }
    let range = started.elapsed() + Duration::from_secs(10);
    let address = graph_page(&panels(), range);
    eprintln!("picture: {address}");
    let picture = repository.join(PICTURE);
    std::fs::create_dir_all(picture.parent().expect("a folder")).expect("docs/images");
    // Each panel (the expression's field, the graph and its legend) takes
    // about 760 pixels at this width, the navigation bar 100. The window
    // holds the whole page: one that does not is scrolled to the last
    // panel's field, which the page focuses, and the shot is of that. A
    // fixed virtual time lets the page fetch its ranges and draw them
    // before the shot.
    let output = monitor
        .command("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ])
        .arg(format!(
            "--user-data-dir={}",
            scratch.join("chromium").display()
        ))
        .arg(format!("--window-size=1280,{}", 760 * panels().len() + 100))
        .arg("--virtual-time-budget=30000")
        .arg(format!("--screenshot={}", picture.display()))
        .arg(&address)
        .env("HOME", &scratch)
        .output()
        .expect("chromium runs");
    assert!(
        output.status.success(),
        "chromium: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let written = std::fs::read(&picture).expect("the picture");
    assert!(
        written.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is not a PNG",
        picture.display()
    );
    eprintln!(
        "picture: {} ({} bytes), {:?} of scenario",
        picture.display(),
        written.len(),
        range
    );
    drop(director2);
    drop(director1);
    drop(prometheus);
    let _ = std::fs::remove_dir_all(&scratch);
}
