//! systemd's notify protocol from the service manager's side: a datagram
//! socket a daemon is given as `NOTIFY_SOCKET`, and the messages it sends
//! there (`READY=1`, `RELOADING=1`, `STOPPING=1`, `STATUS=...`), as
//! systemd would receive them for a `Type=notify` unit.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The notifications a daemon sends to a socket of ours.
pub struct Notifications {
    socket: UnixDatagram,
    path: PathBuf,
}

impl Notifications {
    /// A socket at `directory`/notify.socket (replacing one left there).
    pub fn bind(directory: &Path) -> Notifications {
        let path = directory.join("notify.socket");
        let _ = std::fs::remove_file(&path);
        let socket = UnixDatagram::bind(&path).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        Notifications { socket, path }
    }

    /// What to set `NOTIFY_SOCKET` to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next message, as its lines; panics after 60 s without one.
    pub fn next(&self) -> Vec<String> {
        let mut buffer = [0u8; 4096];
        let count = self
            .socket
            .recv(&mut buffer)
            .expect("the daemon sent nothing within 60 s");
        String::from_utf8_lossy(&buffer[..count])
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Messages up to the next one with `line` (`READY=1`...), which is
    /// returned.
    pub fn until(&self, line: &str) -> Vec<String> {
        loop {
            let message = self.next();
            if message.iter().any(|shown| shown == line) {
                return message;
            }
        }
    }

    /// Messages up to the next one with READY=1, which is returned.
    pub fn until_ready(&self) -> Vec<String> {
        self.until("READY=1")
    }
}
