//! Fulcrum's `/metrics` endpoint, shared by pulse and fulcrum-agent.
//!
//! - **One registry, read at scrape time.** The daemons do not keep
//!   counters of their own for Prometheus: their tasks already publish
//!   what they know on `watch` channels, and a
//!   [`prometheus_client::collector::Collector`] reads the latest value
//!   when a scrape comes. Nothing is copied between scrapes, so nothing can
//!   drift from what the daemon does.
//! - **Bound before the daemon forks.** [`bind`] runs on the command
//!   line's thread, so that a taken port or a malformed address fails the
//!   start with a status (as a configuration error does), not a log line
//!   from a background process.
//! - **On the daemon's runtime.** [`serve`] is one task on the runtime the
//!   daemon already has (hyper's HTTP/1 server over tokio), each
//!   connection a task of its own: no second runtime, no thread of its own.
//! - **Both text formats.** prometheus-client writes OpenMetrics, which
//!   Prometheus asks for first; a client that does not ask for it (curl,
//!   promtool's `check metrics`, older scrapers) gets Prometheus' classic
//!   text format (0.0.4), made from the same text by [`classic`]: a
//!   counter's family named with its `_total` as its samples are, no
//!   `# EOF`, no `# UNIT`.
//!
//! The helpers [`gauge`] and [`counter`] write one family from an
//! iterator of samples, so that a collector reads as the list of what it
//! exports.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{ALLOW, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
pub use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

pub use prometheus_client;

/// The content type of what [`encode`] writes.
pub const CONTENT_TYPE_OPENMETRICS: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of what [`classic`] writes.
pub const CONTENT_TYPE_CLASSIC: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("cannot listen on {address} for /metrics: {source}")]
    Bind {
        address: SocketAddr,
        source: std::io::Error,
    },
}

/// Binds `address`, before the daemon forks.
pub fn bind(address: SocketAddr) -> Result<std::net::TcpListener, MetricsError> {
    let listener = std::net::TcpListener::bind(address)
        .map_err(|source| MetricsError::Bind { address, source })?;
    // Handed to tokio, which needs it non-blocking.
    listener
        .set_nonblocking(true)
        .map_err(|source| MetricsError::Bind { address, source })?;
    Ok(listener)
}

/// [`bind`] where the command line asked for /metrics (`--metrics`), none
/// where it did not: what each daemon does before it forks or starts its
/// runtime.
pub fn bind_if_asked(
    address: Option<SocketAddr>,
) -> Result<Option<std::net::TcpListener>, MetricsError> {
    address.map(bind).transpose()
}

/// The registry in OpenMetrics text, as a scrape gets it.
pub fn encode(registry: &Registry) -> String {
    let mut text = String::new();
    // Writing into a String fails only if a collector fails, and ours
    // do not; a failure still gives what was written before it.
    if let Err(error) = prometheus_client::encoding::text::encode(&mut text, registry) {
        tracing::warn!("encoding the metrics failed: {error}");
    }
    text
}

/// OpenMetrics text (as [`encode`] writes it) in Prometheus' classic text
/// format: each family's `# HELP` and `# TYPE` name a counter as its
/// samples do (with `_total`), `unknown` becomes `untyped`, and the
/// OpenMetrics-only lines (`# UNIT`, `# EOF`, a counter's `_created`)
/// go.
pub fn classic(openmetrics: &str) -> String {
    let mut text = String::with_capacity(openmetrics.len());
    let mut family: Vec<&str> = Vec::new();
    let flush = |family: &mut Vec<&str>, text: &mut String| {
        let counter = family.iter().find_map(|line| {
            let rest = line.strip_prefix("# TYPE ")?;
            let (name, kind) = rest.split_once(' ')?;
            (kind == "counter" && !name.ends_with("_total")).then_some(name)
        });
        for line in family.drain(..) {
            let renamed = match (counter, line.strip_prefix("# ")) {
                (Some(name), Some(rest)) => {
                    let (keyword, after) = rest.split_once(' ').unwrap_or((rest, ""));
                    match after.strip_prefix(name) {
                        Some(tail)
                            if (keyword == "HELP" || keyword == "TYPE")
                                && (tail.is_empty() || tail.starts_with(' ')) =>
                        {
                            format!("# {keyword} {name}_total{tail}")
                        }
                        _ => line.to_owned(),
                    }
                }
                (Some(name), None) if line.starts_with(&format!("{name}_created")) => continue,
                _ => line.to_owned(),
            };
            let renamed = match renamed.strip_suffix(" unknown") {
                Some(start) if renamed.starts_with("# TYPE ") => format!("{start} untyped"),
                _ => renamed,
            };
            text.push_str(&renamed);
            text.push('\n');
        }
    };
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if line.starts_with("# HELP ") {
            flush(&mut family, &mut text);
        }
        family.push(line);
    }
    flush(&mut family, &mut text);
    text
}

/// Serves `GET /metrics` from `registry` on `listener` until `shutdown`
/// turns true (or its sender goes). Must run inside the runtime.
pub async fn serve(
    listener: std::net::TcpListener,
    registry: Arc<Registry>,
    mut shutdown: watch::Receiver<bool>,
) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(error) => {
            tracing::error!("cannot serve /metrics: {error}");
            return;
        }
    };
    if let Ok(address) = listener.local_addr() {
        tracing::info!("serving /metrics on http://{address}/metrics");
    }
    loop {
        tokio::select! {
            // The guard wait_for gives is not Send: dropped in the block.
            () = async { let _ = shutdown.wait_for(|stop| *stop).await; } => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let registry = registry.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |request| {
                            let registry = registry.clone();
                            async move { Ok::<_, Infallible>(answer(&request, &registry)) }
                        });
                        // A client that goes away mid-request is its own
                        // business.
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                Err(error) => {
                    // Out of descriptors, most likely: not a reason to
                    // stop serving, but not a reason to spin either.
                    tracing::warn!("/metrics: cannot accept a connection: {error}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            },
        }
    }
}

/// The answer to one request: the metrics at `/metrics`, 404 elsewhere,
/// 405 for a method other than GET or HEAD.
fn answer<B>(request: &Request<B>, registry: &Registry) -> Response<Full<Bytes>> {
    let response = Response::builder();
    let built = if request.uri().path() != "/metrics" {
        response
            .status(StatusCode::NOT_FOUND)
            .header(CONTENT_TYPE, "text/plain; charset=utf-8")
            .body(Full::new(Bytes::from_static(b"metrics are at /metrics\n")))
    } else if request.method() != Method::GET && request.method() != Method::HEAD {
        response
            .status(StatusCode::METHOD_NOT_ALLOWED)
            .header(ALLOW, "GET, HEAD")
            .body(Full::new(Bytes::new()))
    } else if wants_openmetrics(request) {
        response
            .header(CONTENT_TYPE, CONTENT_TYPE_OPENMETRICS)
            .body(Full::new(Bytes::from(encode(registry))))
    } else {
        response
            .header(CONTENT_TYPE, CONTENT_TYPE_CLASSIC)
            .body(Full::new(Bytes::from(classic(&encode(registry)))))
    };
    built.expect("a response of constant parts")
}

/// A time as a gauge's value: seconds since the epoch (Prometheus'
/// `*_timestamp_seconds`).
pub fn seconds(time: std::time::SystemTime) -> f64 {
    time.duration_since(std::time::SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// A yes or no as a gauge's value: 1 or 0.
pub fn flag(value: bool) -> f64 {
    if value { 1.0 } else { 0.0 }
}

/// Whether the client asks for OpenMetrics (Prometheus does, first).
fn wants_openmetrics<B>(request: &Request<B>) -> bool {
    request
        .headers()
        .get_all(hyper::header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|accept| accept.contains("application/openmetrics-text"))
}

/// Writes the gauge family `name` with one sample per item.
pub fn gauge<S, I>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: I,
) -> Result<(), std::fmt::Error>
where
    S: EncodeLabelSet,
    I: IntoIterator<Item = (S, f64)>,
{
    let samples = samples
        .into_iter()
        .map(|(labels, value)| (labels, ConstGauge::new(value)));
    family(encoder, name, help, MetricType::Gauge, samples)
}

/// Writes the counter family `name` (its samples get OpenMetrics'
/// `_total` suffix) with one sample per item.
pub fn counter<S, I>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: I,
) -> Result<(), std::fmt::Error>
where
    S: EncodeLabelSet,
    I: IntoIterator<Item = (S, u64)>,
{
    let samples = samples
        .into_iter()
        .map(|(labels, value)| (labels, ConstCounter::new(value)));
    family(encoder, name, help, MetricType::Counter, samples)
}

/// One family of `metric_type`: its descriptor (written even without a
/// sample, so that a scraper knows the family), then a sample per item.
pub fn family<S, M>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    metric_type: MetricType,
    samples: impl IntoIterator<Item = (S, M)>,
) -> Result<(), std::fmt::Error>
where
    S: EncodeLabelSet,
    M: EncodeMetric,
{
    let mut family = encoder.encode_descriptor(name, help, None, metric_type)?;
    for (labels, metric) in samples {
        metric.encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
