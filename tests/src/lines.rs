//! A line responder that keeps its connections open, and its client: a
//! long-lived TCP connection whose every exchange says which real server
//! answered (a failover must keep the connection, and so the server).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::Namespace;

/// How long either end waits for the other's next line: long enough for
/// TCP's retransmissions across a failover under emulation.
const LINE_TIMEOUT: Duration = Duration::from_secs(60);

/// Answers each line of each connection with its name, a space and the
/// line; it stops listening when dropped (open connections end with their
/// client, or after [`LINE_TIMEOUT`] of silence).
pub struct LineResponder {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LineResponder {
    pub fn spawn(namespace: &Namespace, address: SocketAddr, name: &str) -> Result<LineResponder> {
        let listener = namespace
            .run(|| TcpListener::bind(address))?
            .with_context(|| format!("{name} cannot listen on {address}"))?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            let name = name.to_owned();
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let name = name.clone();
                            thread::spawn(move || answer_lines(stream, &name));
                        }
                        Err(_) => thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
        };
        Ok(LineResponder {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for LineResponder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn answer_lines(stream: TcpStream, name: &str) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(LINE_TIMEOUT));
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { return };
        if writeln!(writer, "{name} {line}").is_err() {
            return;
        }
    }
}

/// A connection to a [`LineResponder`], kept open between exchanges.
pub struct LineConnection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl LineConnection {
    /// Connects to `address` from inside `namespace`.
    pub fn open(namespace: &Namespace, address: SocketAddr) -> Result<LineConnection> {
        let stream = namespace
            .run(|| TcpStream::connect_timeout(&address, Duration::from_secs(3)))?
            .with_context(|| format!("cannot connect to {address} from {}", namespace.name()))?;
        stream.set_read_timeout(Some(LINE_TIMEOUT))?;
        Ok(LineConnection {
            writer: stream.try_clone()?,
            reader: BufReader::new(stream),
        })
    }

    /// The local end: the client's address and port.
    pub fn local_address(&self) -> Result<SocketAddr> {
        Ok(self.writer.local_addr()?)
    }

    /// Sends `line`; returns the name of the server that echoed it.
    pub fn exchange(&mut self, line: &str) -> Result<String> {
        writeln!(self.writer, "{line}")?;
        let mut answer = String::new();
        if self.reader.read_line(&mut answer).context("no answer")? == 0 {
            bail!("the connection was closed");
        }
        let Some((name, echoed)) = answer.trim_end().split_once(' ') else {
            bail!("a malformed answer: {answer:?}");
        };
        if echoed != line {
            bail!("{name} echoed {echoed:?}, not {line:?}");
        }
        Ok(name.to_owned())
    }
}
