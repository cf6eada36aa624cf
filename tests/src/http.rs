//! A tiny HTTP responder that answers with its own name, and the client that
//! asks it: enough HTTP/1.0 to see which real server answered, and how much
//! of an upload reached it.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::Namespace;

/// How long a responder waits for the request on an open connection (a
/// long-lived one's next request too: a test asks its sessions every few
/// seconds, and some of its steps take minutes under emulation).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

/// A responder listening in a namespace; it stops when dropped.
pub struct Responder {
    name: String,
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    served: Arc<AtomicU64>,
    clients: Arc<Mutex<BTreeSet<IpAddr>>>,
    thread: Option<JoinHandle<()>>,
}

impl Responder {
    /// Listens on `address` inside `namespace` and answers every request
    /// with `name` and a newline.
    pub fn spawn(namespace: &Namespace, address: SocketAddr, name: &str) -> Result<Responder> {
        // The listener is created inside the namespace and keeps belonging to
        // it, so the serving thread itself need not be there.
        let listener = namespace
            .run(|| TcpListener::bind(address))?
            .with_context(|| format!("{name} cannot listen on {address}"))?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(AtomicU64::new(0));
        let clients = Arc::new(Mutex::new(BTreeSet::new()));
        let body = format!("{name}\n");
        let thread = {
            let stop = stop.clone();
            let served = served.clone();
            let clients = clients.clone();
            thread::spawn(move || serve(listener, &body, &stop, &served, &clients))
        };
        Ok(Responder {
            name: name.to_owned(),
            address,
            stop,
            served,
            clients,
            thread: Some(thread),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The addresses its requests came from (what a direct-return or
    /// overlay path keeps: the client's own).
    pub fn clients(&self) -> BTreeSet<IpAddr> {
        self.clients.lock().expect("not poisoned").clone()
    }

    /// How many requests it has answered.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(
    listener: TcpListener,
    body: &str,
    stop: &AtomicBool,
    served: &Arc<AtomicU64>,
    clients: &Mutex<BTreeSet<IpAddr>>,
) {
    let body: Arc<str> = body.into();
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, peer)) => {
                clients.lock().expect("not poisoned").insert(peer.ip());
                // A thread per connection: a client may open a connection
                // and send its request much later (a long-lived connection
                // kept across a restart of the director's daemon), which
                // must not hold up the others.
                let body = body.clone();
                let served = served.clone();
                thread::spawn(move || answer(stream, &body, &served));
            }
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(5));
            }
            Err(_) => thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Answers `body` (the responder's name and a newline); to a request with
/// a body, the name and how many bytes of it arrived. A request that asks
/// `Connection: keep-alive` (a [`Session`]'s) keeps the connection open
/// for the next one; any other is the connection's last.
fn answer(mut stream: TcpStream, body: &str, served: &AtomicU64) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(REQUEST_TIMEOUT));
    while let Ok(request) = read_request(&mut stream) {
        let body = match request.uploaded {
            Some(count) => format!("{} received {count}\n", body.trim_end()),
            None => body.to_owned(),
        };
        let connection = if request.keep_alive {
            "keep-alive"
        } else {
            "close"
        };
        let response = format!(
            "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nConnection: {connection}\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if stream.write_all(response.as_bytes()).is_err() {
            return;
        }
        served.fetch_add(1, Ordering::Relaxed);
        if !request.keep_alive {
            break;
        }
    }
    let _ = stream.shutdown(Shutdown::Write);
}

/// What [`read_request`] read of a request.
struct Request {
    /// How many bytes of a body came, if it announced one.
    uploaded: Option<usize>,
    /// Whether it asked to keep the connection open.
    keep_alive: bool,
}

/// Reads from `stream` up to the blank line that ends a request's or an
/// answer's head: the bytes read (the head, and whatever came after it),
/// where the head ends, and the head in lower case. `None` if the
/// connection closed first.
fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<(Vec<u8>, usize, String)>> {
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 16384];
    let head_end = loop {
        if let Some(position) = bytes.windows(4).position(|window| window == b"\r\n\r\n") {
            break position + 4;
        }
        let count = stream.read(&mut buffer)?;
        if count == 0 {
            return Ok(None);
        }
        bytes.extend_from_slice(&buffer[..count]);
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_ascii_lowercase();
    Ok(Some((bytes, head_end, head)))
}

/// The `Content-Length` a head (in lower case) announces.
fn content_length(head: &str) -> Option<usize> {
    head.lines().find_map(|line| {
        line.strip_prefix("content-length:")
            .and_then(|value| value.trim().parse::<usize>().ok())
    })
}

/// Reads up to the blank line that ends a request's head, then the body
/// its Content-Length announces. A connection closed before the head's end
/// (a TCP health check's, or a session's end) is an error: it is not a
/// request.
fn read_request(stream: &mut TcpStream) -> std::io::Result<Request> {
    let Some((request, head_end, head)) = read_head(stream)? else {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    };
    let mut buffer = [0u8; 16384];
    let keep_alive = head
        .lines()
        .any(|line| line.replace(' ', "") == "connection:keep-alive");
    let Some(length) = content_length(&head) else {
        return Ok(Request {
            uploaded: None,
            keep_alive,
        });
    };
    let mut received = request.len() - head_end;
    while received < length {
        let count = stream.read(&mut buffer)?;
        if count == 0 {
            break;
        }
        received += count;
    }
    Ok(Request {
        uploaded: Some(received),
        keep_alive,
    })
}

/// `GET path` of `address` from inside `namespace` over HTTP/1.0, with an
/// `Accept` header if given; the answer's head and body, whatever its
/// status (the caller judges it).
pub fn get_path(
    namespace: &Namespace,
    address: SocketAddr,
    path: &str,
    accept: Option<&str>,
) -> Result<(String, String)> {
    let answer = namespace.run(|| -> Result<String> {
        let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(3))
            .with_context(|| format!("cannot connect to {address}"))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let accept = accept
            .map(|accept| format!("Accept: {accept}\r\n"))
            .unwrap_or_default();
        write!(
            stream,
            "GET {path} HTTP/1.0\r\nHost: {address}\r\n{accept}\r\n"
        )?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        Ok(answer)
    })??;
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .with_context(|| format!("GET {path}: no head in {answer:?}"))?;
    anyhow::ensure!(head.starts_with("HTTP/1."), "GET {path}: {head}");
    Ok((head.to_owned(), body.to_owned()))
}

/// One `GET /` to `address` over a new connection, from inside `namespace`;
/// returns the body.
pub fn get(namespace: &Namespace, address: SocketAddr) -> Result<String> {
    Connection::open(namespace, address)?.get()
}

/// A connection opened now whose one request is sent later: a connection
/// that outlives what happens in between (a reload, a restart).
pub struct Connection {
    stream: TcpStream,
    address: SocketAddr,
}

impl Connection {
    /// Connects to `address` from inside `namespace`, within 3 s (the
    /// first SYN and one resend).
    pub fn open(namespace: &Namespace, address: SocketAddr) -> Result<Connection> {
        Connection::open_within(namespace, address, Duration::from_secs(3))
    }

    /// Connects to `address` from inside `namespace`, within `limit`.
    pub fn open_within(
        namespace: &Namespace,
        address: SocketAddr,
        limit: Duration,
    ) -> Result<Connection> {
        let stream = namespace
            .run(|| TcpStream::connect_timeout(&address, limit))?
            .with_context(|| {
                format!(
                    "cannot connect to {address} from {} within {:.0} s",
                    namespace.name(),
                    limit.as_secs_f64()
                )
            })?;
        Ok(Connection { stream, address })
    }

    /// Connects to `address` from the calling thread's namespace (a thread
    /// that entered one with [`Namespace::enter`] or `setns`).
    pub fn open_here(address: SocketAddr) -> Result<Connection> {
        let stream = TcpStream::connect_timeout(&address, Duration::from_secs(3))
            .with_context(|| format!("cannot connect to {address}"))?;
        Ok(Connection { stream, address })
    }

    /// The local end: the client's address and port.
    pub fn local_address(&self) -> Result<SocketAddr> {
        Ok(self.stream.local_addr()?)
    }

    /// Sends `GET /` and returns the body of the answer.
    pub fn get(self) -> Result<String> {
        self.request("GET", &[])
    }

    /// Sends `POST /` with `upload` as its body and returns the body of the
    /// answer (a responder's: its name and the bytes it received).
    pub fn post(self, upload: &[u8]) -> Result<String> {
        self.request("POST", upload)
    }

    fn request(mut self, method: &str, upload: &[u8]) -> Result<String> {
        let address = self.address;
        // An upload's answer comes once all of it arrived.
        let timeout = if upload.is_empty() { 5 } else { 30 };
        self.stream
            .set_read_timeout(Some(Duration::from_secs(timeout)))?;
        let host = match address.ip() {
            IpAddr::V4(ip) => ip.to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
        };
        if upload.is_empty() {
            write!(self.stream, "{method} / HTTP/1.0\r\nHost: {host}\r\n\r\n")?;
        } else {
            write!(
                self.stream,
                "{method} / HTTP/1.0\r\nHost: {host}\r\nContent-Length: {}\r\n\r\n",
                upload.len()
            )?;
            self.stream
                .write_all(upload)
                .with_context(|| format!("cannot send {} bytes to {address}", upload.len()))?;
        }
        let mut response = String::new();
        self.stream
            .read_to_string(&mut response)
            .with_context(|| format!("no answer from {address}"))?;
        let Some((head, body)) = response.split_once("\r\n\r\n") else {
            bail!("a malformed answer from {address}: {response:?}");
        };
        if !head.starts_with("HTTP/1.0 200") {
            bail!("{address} answered {head:?}");
        }
        Ok(body.trim_end().to_owned())
    }
}

/// A long-lived connection: one TCP connection that asks `GET /` again and
/// again (HTTP keep-alive), as a client of a load balancer holds a
/// connection open for minutes. Whether it survives what happens between
/// two questions (a Mux killed, a path moved) is whether the next answer
/// comes, on the same connection, from the same real server.
pub struct Session {
    stream: TcpStream,
    address: SocketAddr,
    local: SocketAddr,
}

impl Session {
    /// Connects to `address` from inside `namespace`.
    pub fn open(namespace: &Namespace, address: SocketAddr) -> Result<Session> {
        let Connection { stream, address } = Connection::open(namespace, address)?;
        let local = stream.local_addr()?;
        Ok(Session {
            stream,
            address,
            local,
        })
    }

    /// The client's end: its address and port.
    pub fn local_address(&self) -> SocketAddr {
        self.local
    }

    /// Asks `GET /` on the same connection, waiting at most `timeout` for
    /// the answer; returns its body (the responder's name). An error once
    /// the connection is broken (reset, closed, or no answer in time).
    pub fn ask(&mut self, timeout: Duration) -> Result<String> {
        let address = self.address;
        self.stream.set_read_timeout(Some(timeout))?;
        write!(
            self.stream,
            "GET / HTTP/1.1\r\nHost: {}\r\nConnection: keep-alive\r\n\r\n",
            address.ip()
        )
        .with_context(|| format!("cannot ask {address} from {}", self.local))?;
        let Some((mut response, head_end, head)) = read_head(&mut self.stream)
            .with_context(|| format!("no answer from {address} to {}", self.local))?
        else {
            bail!("{address} closed the connection from {}", self.local);
        };
        let mut buffer = [0u8; 4096];
        if !head.starts_with("http/1.0 200") {
            bail!("{address} answered {head:?}");
        }
        let length = content_length(&head)
            .with_context(|| format!("an answer without a length from {address}: {head:?}"))?;
        while response.len() < head_end + length {
            let count = self
                .stream
                .read(&mut buffer)
                .with_context(|| format!("a cut answer from {address} to {}", self.local))?;
            if count == 0 {
                bail!(
                    "{address} closed the connection from {} mid-answer",
                    self.local
                );
            }
            response.extend_from_slice(&buffer[..count]);
        }
        Ok(
            String::from_utf8_lossy(&response[head_end..head_end + length])
                .trim_end()
                .to_owned(),
        )
    }
}
