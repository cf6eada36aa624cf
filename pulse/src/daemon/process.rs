//! The daemon's process: detaching from the terminal and the pid file.

use std::fs;
use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// The end of the start-up pipe the detached daemon writes to: its parent
/// waits on it, so that `pulse` (without `-n`) exits only once the daemon
/// has programmed the table, with the daemon's status if it could not.
pub struct Detached {
    pipe: Option<fs::File>,
}

impl Detached {
    /// Not detached (`-n`): nobody waits.
    pub fn foreground() -> Detached {
        Detached { pipe: None }
    }

    /// Tells the waiting parent to exit with `status`; later calls do
    /// nothing.
    pub fn started(&mut self, status: u8) {
        if let Some(mut pipe) = self.pipe.take() {
            let _ = pipe.write_all(&[status]);
        }
    }
}

/// Forks; the parent waits for the child's start-up status and exits with
/// it, the child (which returns) leads a new session with its standard
/// input and output on /dev/null, and its standard error too unless
/// `keep_stderr` (`-l`). Call before any thread starts.
pub fn detach(keep_stderr: bool) -> io::Result<Detached> {
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here alone.
    let (read_end, write_end) = unsafe {
        (
            fs::File::from(OwnedFd::from_raw_fd(ends[0])),
            fs::File::from(OwnedFd::from_raw_fd(ends[1])),
        )
    };
    // SAFETY: no other thread runs yet (the caller's contract), so the
    // child may go on running Rust code.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(read_end);
            // SAFETY: setsid and chdir have no memory preconditions.
            unsafe {
                libc::setsid();
                libc::chdir(c"/".as_ptr());
            }
            let null = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")?;
            use std::os::fd::AsRawFd;
            let targets: &[i32] = if keep_stderr { &[0, 1] } else { &[0, 1, 2] };
            for &target in targets {
                // SAFETY: dup2 onto the standard descriptors, which this
                // process owns.
                unsafe { libc::dup2(null.as_raw_fd(), target) };
            }
            Ok(Detached {
                pipe: Some(write_end),
            })
        }
        child => {
            drop(write_end);
            let mut reader = read_end;
            let mut status = [0u8; 1];
            let code = match reader.read(&mut status) {
                Ok(1) => i32::from(status[0]),
                // The daemon ended before saying: its own exit status.
                _ => {
                    let mut wait_status = 0;
                    // SAFETY: waits for our own child.
                    unsafe { libc::waitpid(child, &mut wait_status, 0) };
                    if libc::WIFEXITED(wait_status) {
                        match libc::WEXITSTATUS(wait_status) {
                            0 => 1,
                            code => code,
                        }
                    } else {
                        1
                    }
                }
            };
            std::process::exit(code)
        }
    }
}

/// The pid file, removed when dropped (at a clean stop).
#[derive(Debug)]
pub struct PidFile {
    path: PathBuf,
}

/// pulse's default pid file. keepalived's own (/run/keepalived.pid) is
/// left to keepalived, which may be installed beside pulse.
pub const DEFAULT_PID_FILE: &str = "/run/pulse.pid";

impl PidFile {
    /// Writes this process's id to `path`; refuses if it names a process
    /// that is still running (another pulse would fight over the table).
    /// A file left by a process that is gone (kill -9) is replaced.
    pub fn create(path: &Path) -> Result<PidFile, String> {
        if let Ok(text) = fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse::<libc::pid_t>()
            && pid > 0
            && pid != std::process::id() as libc::pid_t
            && is_running(pid)
        {
            return Err(format!(
                "{} says pulse is running already as process {pid}; stop it first, or give \
                 this one another pid file (-p FILE)",
                path.display()
            ));
        }
        if let Some(parent) = path.parent() {
            let _ = fs::create_dir_all(parent);
        }
        // rw-r--r-- whatever the mask (0177 by default), as keepalived's
        // pidfile_write lifts those bits from its umask around the open.
        // Single-threaded here: the mask is the process's.
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let mut file = fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)?;
            file.write_all(format!("{}\n", std::process::id()).as_bytes())
        };
        // SAFETY: umask has no preconditions.
        let mask = unsafe { libc::umask(0) };
        unsafe { libc::umask(mask & !0o644) };
        let written = write();
        unsafe { libc::umask(mask) };
        written
            .map_err(|error| format!("cannot write the pid file {}: {error}", path.display()))?;
        Ok(PidFile {
            path: path.to_path_buf(),
        })
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

fn is_running(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let answer = unsafe { libc::kill(pid, 0) };
    answer == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_process_holds_the_pid_file_and_a_dead_one_does_not() {
        let directory = std::env::temp_dir().join(format!("pulse-pid-{}", std::process::id()));
        fs::create_dir_all(&directory).unwrap();
        let path = directory.join("pulse.pid");
        // PID 1 is always running.
        fs::write(&path, "1\n").unwrap();
        let error = PidFile::create(&path).unwrap_err();
        assert!(error.contains("process 1"), "{error}");
        // A process that has ended (reaped): its id is free.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        fs::write(&path, format!("{gone}\n")).unwrap();
        let pid_file = PidFile::create(&path).unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!("{}\n", std::process::id())
        );
        drop(pid_file);
        assert!(!path.exists());
        fs::remove_dir_all(&directory).unwrap();
    }
}
