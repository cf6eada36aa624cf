//! Told at once when another process changes IPVS: an `nlmon` device,
//! [`DEVICE`], on which the kernel copies every netlink datagram of the
//! namespace, read by an `AF_PACKET` socket and [`ipvs::monitor::Watch`].
//!
//! IPVS tells no one of a change (its generic netlink family has no
//! multicast group), so without this a hand edit (`ipvsadm -d`, a script,
//! keepalived) waits for the audit, which at 10,000 services reads the
//! table for seconds. With it, the services another process changed over
//! netlink are read back and repaired milliseconds after the kernel
//! handled the change. What it cannot see (changes made through the older
//! socket options, which ipvsadm built without libnl uses) the audit
//! still finds.
//!
//! Rules:
//! - The device is made (or taken over, when a pulse killed before it
//!   could remove it left it) and brought up at start, in the IPVS
//!   client's network namespace, once the start pass is applied and
//!   before READY=1, and removed at stop. Without it (no nlmon in the
//!   kernel, or it cannot be made) pulse says so once and relies on the
//!   audit. Removed under pulse (by hand,
//!   or by another pulse's stop in the same namespace), it is made again.
//! - This process's requests are known by their port, its process id
//!   ([`ipvs::monitor::own_port`]): another process in another pid
//!   namespace with the same id, sharing the network namespace, would go
//!   unheard here, and be found by the audit.
//! - The socket's filter ([`ipvs::monitor::tap_filter`]) drops in the
//!   kernel what is not another process's IPVS request or an answer, so
//!   pulse's own batches cost the tap nothing but the kernel's copy.
//! - A full socket buffer (datagrams dropped, `PACKET_STATISTICS`) means
//!   a change may have been missed: the whole table is due, which asks for
//!   an audit.

use std::fs::File;
use std::io;
use std::mem::size_of;
use std::os::fd::AsRawFd;
use std::time::Instant;

use ipvs::monitor::{Changed, Watch, open_tap, own_port, tap_filter};
use netlink_packet_route::link::InfoKind;
use rtnetlink::{Handle, LinkMessageBuilder, LinkUnspec};
use socket2::Socket;
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;

use fulcrum_overlay::{KernelError, failed, ignore, index_of, io_failed, rtnetlink_in, set_up};

/// The device's name.
pub const DEVICE: &str = "pulse-nlmon";
/// Room for a burst of others' requests (a script of a thousand `ipvsadm`
/// calls): they are small, one datagram each.
const RECEIVE_BUFFER_BYTES: usize = 4 << 20;
const DATAGRAM_BYTES: usize = 64 * 1024;

/// The device and the socket on it.
pub struct Tap {
    handle: Handle,
    namespace: File,
    family: u16,
    socket: AsyncFd<Socket>,
    watch: Watch,
    buffer: Vec<u8>,
}

impl Tap {
    /// Makes (or takes over) the device in `namespace`, brings it up and
    /// opens the socket, for the IPVS family `family`. Must be called
    /// within the runtime.
    pub async fn open(namespace: File, family: u16) -> Result<Tap, KernelError> {
        let handle = rtnetlink_in(
            &namespace,
            &tokio::runtime::Handle::current(),
            "the IPVS namespace",
        )?;
        let socket = make_device(&handle, &namespace, family).await?;
        Ok(Tap {
            handle,
            namespace,
            family,
            socket,
            watch: Watch::new(family, own_port()),
            buffer: vec![0; DATAGRAM_BYTES],
        })
    }

    /// Reads the tap until `told` closes, sending each change once the
    /// kernel handled it; then removes the device.
    pub async fn run(mut self, told: mpsc::Sender<Changed>) {
        loop {
            let deadline = self.watch.next_deadline();
            let settle = async {
                match deadline {
                    Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
                    None => std::future::pending().await,
                }
            };
            let mut changed = Changed::default();
            tokio::select! {
                // ERROR too: the device removed under the socket sets its
                // error (ENETDOWN), which readable() alone never wakes for.
                ready = self.socket.ready(Interest::READABLE | Interest::ERROR) => {
                    let read = match ready {
                        Ok(mut guard) => {
                            let read = read_all(
                                guard.get_inner(),
                                &mut self.buffer,
                                &mut self.watch,
                                Instant::now(),
                            );
                            guard.clear_ready();
                            read
                        }
                        Err(error) => Err(error),
                    };
                    if let Err(error) = read {
                        // What was sent meanwhile went unseen.
                        changed.table = true;
                        match make_device(&self.handle, &self.namespace, self.family).await {
                            Ok(socket) => {
                                tracing::warn!("the netlink tap failed ({error}); made it again");
                                self.socket = socket;
                            }
                            Err(again) => {
                                tracing::error!(
                                    "the netlink tap failed ({error}) and cannot be made again \
                                     ({again}); other processes' IPVS changes are found by the \
                                     audit only"
                                );
                                let _ = told.send(changed).await;
                                break;
                            }
                        }
                    }
                }
                _ = settle => {}
                _ = told.closed() => break,
            }
            let due = self.watch.poll(Instant::now());
            changed.services.extend(due.services);
            changed.table |= due.table;
            if dropped(self.socket.get_ref()) {
                tracing::warn!(
                    "the netlink tap dropped datagrams: the whole IPVS table is read again"
                );
                changed.table = true;
            }
            if !changed.is_empty() && told.send(changed).await.is_err() {
                break;
            }
        }
        self.remove().await;
    }

    async fn remove(self) {
        drop(self.socket);
        let removed = match index_of(&self.handle, DEVICE).await {
            Ok(index) => ignore(
                self.handle.link().del(index).execute().await,
                &[libc::ENODEV],
            )
            .map_err(failed(format!("cannot remove {DEVICE}"))),
            Err(error) => Err(error),
        };
        if let Err(error) = removed {
            tracing::warn!("{error}");
        }
    }
}

/// Makes the device (or takes over the one there), brings it up and opens
/// the socket on it, in `namespace`.
async fn make_device(
    handle: &Handle,
    namespace: &File,
    family: u16,
) -> Result<AsyncFd<Socket>, KernelError> {
    let made = handle
        .link()
        .add(
            LinkMessageBuilder::<LinkUnspec>::new_with_info_kind(InfoKind::Nlmon)
                .name(DEVICE.to_owned())
                .build(),
        )
        .execute()
        .await;
    ignore(made, &[libc::EEXIST]).map_err(failed(format!("cannot make {DEVICE}")))?;
    let index = index_of(handle, DEVICE).await?;
    set_up(handle, index, None, DEVICE).await?;
    let socket = fulcrum_netns::run_in(namespace, || open_socket(index, family))
        .and_then(|result| result)
        .map_err(io_failed(format!(
            "cannot open a packet socket on {DEVICE}"
        )))?;
    // SAFETY: the socket is owned by the AsyncFd and keeps its descriptor
    // until dropped with it.
    unsafe { AsyncFd::register(socket) }
        .map_err(|error| io_failed("cannot register the tap")(error.into_parts().1))
}

/// Reads every datagram queued into `watch`; stops at EAGAIN.
fn read_all(socket: &Socket, buffer: &mut [u8], watch: &mut Watch, now: Instant) -> io::Result<()> {
    loop {
        // SAFETY: a read into a buffer of that length.
        let received = unsafe {
            libc::recv(
                socket.as_raw_fd(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if received < 0 {
            let error = io::Error::last_os_error();
            return match error.kind() {
                io::ErrorKind::WouldBlock => Ok(()),
                io::ErrorKind::Interrupted => continue,
                _ => Err(error),
            };
        }
        watch.seen(&buffer[..received as usize], now);
    }
}

/// The socket, filtered from the start so that nothing unfiltered is
/// ever queued.
fn open_socket(index: u32, family: u16) -> io::Result<Socket> {
    let filter = tap_filter(family, own_port());
    let socket = Socket::from(open_tap(index, Some(&filter), RECEIVE_BUFFER_BYTES)?);
    socket.set_nonblocking(true)?;
    Ok(socket)
}

/// Whether the socket dropped datagrams since last asked (reading the
/// statistics resets them).
fn dropped(socket: &Socket) -> bool {
    // SAFETY: tpacket_stats is plain data; getsockopt writes at most its size.
    let mut statistics: libc::tpacket_stats = unsafe { std::mem::zeroed() };
    let mut length = size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `length` bytes into `statistics`.
    let result = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut statistics as *mut libc::tpacket_stats).cast(),
            &mut length,
        )
    };
    result == 0 && statistics.tp_drops > 0
}
