use super::*;

use prometheus_client::collector::Collector;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Two families, as a daemon's collector writes them.
#[derive(Debug)]
struct Example;

impl Collector for Example {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        gauge(
            &mut encoder,
            "example_state",
            "A state",
            [([("name", "a")], 2.0), ([("name", "b")], 1.0)],
        )?;
        counter(
            &mut encoder,
            "example_events",
            "Events",
            [([("name", "a")], 7)],
        )
    }
}

fn registry() -> Arc<Registry> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Example));
    Arc::new(registry)
}

#[test]
fn families_are_written_in_openmetrics_text() {
    let text = encode(&registry());
    assert_eq!(
        text,
        "# HELP example_state A state\n\
         # TYPE example_state gauge\n\
         example_state{name=\"a\"} 2.0\n\
         example_state{name=\"b\"} 1.0\n\
         # HELP example_events Events\n\
         # TYPE example_events counter\n\
         example_events_total{name=\"a\"} 7\n\
         # EOF\n"
    );
}

#[test]
fn the_classic_format_names_counters_with_their_total() {
    assert_eq!(
        classic(&encode(&registry())),
        "# HELP example_state A state\n\
         # TYPE example_state gauge\n\
         example_state{name=\"a\"} 2.0\n\
         example_state{name=\"b\"} 1.0\n\
         # HELP example_events_total Events\n\
         # TYPE example_events_total counter\n\
         example_events_total{name=\"a\"} 7\n"
    );
    // A family whose name merely starts like a counter's is left alone.
    let text = "# HELP a Events\n# TYPE a counter\na_total 1\na_created 5.0\n\
                # HELP ab Other\n# TYPE ab unknown\nab 2\n# EOF\n";
    assert_eq!(
        classic(text),
        "# HELP a_total Events\n# TYPE a_total counter\na_total 1\n\
         # HELP ab Other\n# TYPE ab untyped\nab 2\n"
    );
}

#[test]
fn a_taken_port_is_refused_with_its_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let error = bind(address).unwrap_err();
    assert!(error.to_string().contains(&address.to_string()), "{error}");
}

async fn request(address: SocketAddr, text: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(text.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer
}

#[tokio::test]
async fn metrics_are_served_and_other_paths_and_methods_refused() {
    let listener = bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = watch::channel(false);
    let server = tokio::spawn(serve(listener, registry(), stopped));
    let close = "Host: test\r\nConnection: close\r\n\r\n";
    let openmetrics = "Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n";
    let answer = request(
        address,
        &format!("GET /metrics HTTP/1.1\r\n{openmetrics}{close}"),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(answer.contains(CONTENT_TYPE_OPENMETRICS), "{answer}");
    assert!(
        answer.ends_with("example_events_total{name=\"a\"} 7\n# EOF\n"),
        "{answer}"
    );
    let answer = request(address, &format!("GET /metrics HTTP/1.1\r\n{close}")).await;
    assert!(answer.contains(CONTENT_TYPE_CLASSIC), "{answer}");
    assert!(
        answer.contains("# TYPE example_events_total counter\n"),
        "{answer}"
    );
    let answer = request(address, &format!("GET / HTTP/1.1\r\n{close}")).await;
    assert!(answer.starts_with("HTTP/1.1 404 Not Found\r\n"), "{answer}");
    let answer = request(address, &format!("POST /metrics HTTP/1.1\r\n{close}")).await;
    assert!(
        answer.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
        "{answer}"
    );
    assert!(
        answer.to_lowercase().contains("allow: get, head"),
        "{answer}"
    );
    stop.send_replace(true);
    tokio::time::timeout(std::time::Duration::from_secs(5), server)
        .await
        .expect("the server stops when told")
        .unwrap();
}
