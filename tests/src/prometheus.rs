//! A real Prometheus (Debian's `prometheus`) in a network namespace,
//! scraping one target every second and answering queries: what tests of
//! `/metrics` ask instead of trusting their own reading of the text.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use anyhow::{Context, Result};

use crate::Namespace;

/// Where it listens, inside its namespace.
pub const LISTEN: &str = "127.0.0.1:9090";

/// A running Prometheus; stopped when dropped.
pub struct Prometheus {
    child: Child,
    listen: SocketAddr,
    log: PathBuf,
}

impl Prometheus {
    /// Starts one in `namespace` scraping `target` every second, its
    /// configuration, data and log in `directory`.
    pub fn start(
        namespace: &Namespace,
        directory: &Path,
        target: SocketAddr,
    ) -> Result<Prometheus> {
        std::fs::create_dir_all(directory)?;
        let configuration = directory.join("prometheus.yml");
        std::fs::write(
            &configuration,
            format!(
                "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: pulse\n    \
                 static_configs:\n      - targets: ['{target}']\n"
            ),
        )?;
        let listen: SocketAddr = LISTEN.parse()?;
        let log = directory.join("prometheus.log");
        let output = std::fs::File::create(&log)?;
        let child = namespace
            .command("prometheus")
            .arg(format!("--config.file={}", configuration.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                directory.join("prometheus-data").display()
            ))
            .arg(format!("--web.listen-address={listen}"))
            .stdin(Stdio::null())
            .stdout(output.try_clone()?)
            .stderr(output)
            .spawn()
            .context("cannot start prometheus")?;
        Ok(Prometheus { child, listen, log })
    }

    /// Runs `expression` as an instant query from inside `namespace`; the
    /// answer's head and body whatever its status (Prometheus answers a
    /// query it refuses with a 400 and a JSON body saying why).
    pub fn query(&self, namespace: &Namespace, expression: &str) -> Result<(String, String)> {
        crate::http::get_path(
            namespace,
            self.listen,
            &format!("/api/v1/query?query={}", url_encoded(expression)),
            None,
        )
    }

    /// Its log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A query string's value, percent-encoded.
pub fn url_encoded(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(byte).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// `promtool check metrics` on `text` (Prometheus' classic text format):
/// `Ok(true)` when it is clean (promtool's lint says nothing then),
/// `Ok(false)` when promtool is not installed (Debian's `prometheus`
/// package has it), an error with what promtool said otherwise.
pub fn check_metrics(text: &str) -> Result<bool> {
    use std::io::Write;
    if !crate::installed("promtool") {
        return Ok(false);
    }
    let mut check = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run promtool")?;
    check
        .stdin
        .take()
        .context("promtool's input")?
        .write_all(text.as_bytes())?;
    let output = check.wait_with_output()?;
    anyhow::ensure!(
        output.status.success() && output.stdout.is_empty() && output.stderr.is_empty(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(true)
}
