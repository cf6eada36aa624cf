//! Named network namespaces, as `ip netns` keeps them: a file in
//! /run/netns bind-mounted on the namespace, so that `ip netns exec NAME
//! ...` reaches the same kernel state as code run here, and a program
//! started again finds its own. One implementation for the Mux's tenants
//! (pulse), the IPVS client's namespaces (ipvs) and the lab's topologies
//! (labkit).
//!
//! Kernel behaviour relied on: `setns` moves the calling thread only, not
//! the process; sockets keep the namespace they were opened in, whichever
//! thread uses them later; /proc/sys/net and /proc/net show the namespace
//! of the thread that opens them. So work in a namespace runs on a thread
//! of its own ([`run_in`]), and the caller never moves.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Where `ip netns` keeps its namespaces.
pub const DIRECTORY: &str = "/run/netns";

/// The file of the namespace `name`.
pub fn path(name: &str) -> PathBuf {
    Path::new(DIRECTORY).join(name)
}

/// Makes the namespace `name` (`ip netns add`); an error (AlreadyExists)
/// if there is one by that name already, whoever made it.
pub fn create(name: &str) -> io::Result<File> {
    std::fs::create_dir_all(DIRECTORY)?;
    let path = path(name);
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)?;
    let target = path.clone();
    let made = std::thread::spawn(move || -> io::Result<()> {
        // SAFETY: unshare changes only this thread's namespace, and the
        // thread ends here.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        bind_mount(Path::new("/proc/thread-self/ns/net"), &target)
    })
    .join()
    .map_err(|_| io::Error::other("the namespace thread panicked"))?;
    if let Err(error) = made {
        let _ = std::fs::remove_file(&path);
        return Err(error);
    }
    match File::open(&path) {
        Ok(file) => Ok(file),
        Err(error) => {
            remove(name);
            Err(error)
        }
    }
}

/// Opens the namespace `name`, making it if there is none; whether it was
/// made. A file that is no mounted namespace (left by a crash between
/// making the file and mounting on it) is made again.
pub fn open_or_create(name: &str) -> io::Result<(File, bool)> {
    if let Ok(file) = File::open(path(name)) {
        if is_namespace(&file) {
            return Ok((file, false));
        }
        let _ = std::fs::remove_file(path(name));
    }
    Ok((create(name)?, true))
}

/// Opens the namespace `name` if there is one (mounted: a file being made
/// is not one yet).
pub fn open(name: &str) -> Option<File> {
    File::open(path(name)).ok().filter(is_namespace)
}

/// Removes the namespace `name` (`ip netns delete`): the kernel destroys
/// it, with its devices, once nothing holds it.
pub fn remove(name: &str) {
    let path = path(name);
    if let Ok(text) = CString::new(path.as_os_str().as_encoded_bytes()) {
        // SAFETY: a valid path; failing (not mounted) is fine.
        unsafe { libc::umount2(text.as_ptr(), libc::MNT_DETACH) };
    }
    let _ = std::fs::remove_file(&path);
}

/// The names in /run/netns.
pub fn names() -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(DIRECTORY) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect()
}

/// Runs `work` in `namespace`: on the calling thread if it is there
/// already, else on a short-lived thread that enters it. A panic in
/// `work` is the caller's.
pub fn run_in<T: Send>(namespace: &File, work: impl FnOnce() -> T + Send) -> io::Result<T> {
    if is_current(namespace) {
        return Ok(work());
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                enter(namespace)?;
                Ok(work())
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Moves the calling thread to `namespace`: only a thread the caller owns
/// and ends after (a short-lived one, or a worker of its own).
pub fn enter(namespace: &File) -> io::Result<()> {
    // SAFETY: setns on a namespace file held open; it moves only the
    // calling thread.
    if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the calling thread is in `namespace`.
pub fn is_current(namespace: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (
        namespace.metadata(),
        std::fs::metadata("/proc/thread-self/ns/net"),
    ) {
        (Ok(wanted), Ok(current)) => wanted.dev() == current.dev() && wanted.ino() == current.ino(),
        _ => false,
    }
}

/// Whether `file` is a namespace (on nsfs), not the plain file a mount
/// point is before the mount.
fn is_namespace(file: &File) -> bool {
    // NSFS_MAGIC: the file system of namespace files.
    const NSFS_MAGIC: i64 = 0x6e73_6673;
    // SAFETY: fstatfs fills the struct it is given, which is plain data.
    let mut status: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above, on a descriptor we hold.
    let result = unsafe { libc::fstatfs(file.as_raw_fd(), &mut status) };
    result == 0 && status.f_type as i64 == NSFS_MAGIC
}

fn bind_mount(source: &Path, target: &Path) -> io::Result<()> {
    let source = CString::new(source.as_os_str().as_encoded_bytes())?;
    let target = CString::new(target.as_os_str().as_encoded_bytes())?;
    // SAFETY: valid NUL-terminated paths; a bind mount takes no data.
    let result = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND,
            std::ptr::null(),
        )
    };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
