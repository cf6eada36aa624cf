//! The receive sockets of the VRRP task, each read by a task of its own
//! into one channel, so that the loop never waits on one socket.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::DATAGRAM_QUEUE;
use crate::vrrp::io::{Datagram, ReceiveSocket};
use crate::vrrp::packet::Family;

/// The receive sockets, each with a reader task feeding one channel.
pub struct Receivers {
    pub datagrams: mpsc::Receiver<(u32, Datagram)>,
    /// For the readers of sockets opened later (a reload, an interface
    /// created again).
    sender: mpsc::Sender<(u32, Datagram)>,
    pub sockets: Vec<(u32, Arc<ReceiveSocket>, JoinHandle<()>)>,
}

impl Receivers {
    pub fn new() -> Receivers {
        let (sender, datagrams) = mpsc::channel(DATAGRAM_QUEUE);
        Receivers {
            datagrams,
            sender,
            sockets: Vec::new(),
        }
    }

    pub fn receiving(&self) -> HashSet<(u32, Family)> {
        self.sockets
            .iter()
            .map(|(index, socket, _)| (*index, socket.family()))
            .collect()
    }

    /// Starts reading `socket`, whose packets arrive on interface `index`.
    pub fn add(&mut self, index: u32, socket: ReceiveSocket) {
        let socket = Arc::new(socket);
        let reader_socket = socket.clone();
        let sender = self.sender.clone();
        let reader = tokio::spawn(async move {
            loop {
                match reader_socket.receive().await {
                    Ok(Some(datagram)) => {
                        if sender.send((index, datagram)).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => {}
                    Err(error) => {
                        tracing::warn!("VRRP receive: {error}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        });
        self.sockets.push((index, socket, reader));
    }

    /// Stops reading the sockets `keep` turns down (their interface gone,
    /// or no instance left on it).
    pub fn retain(&mut self, keep: impl Fn(u32, Family) -> bool) {
        self.sockets.retain(|(index, socket, reader)| {
            let kept = keep(*index, socket.family());
            if !kept {
                reader.abort();
            }
            kept
        });
    }

    pub fn stop(&mut self) {
        self.retain(|_, _| false);
    }
}
