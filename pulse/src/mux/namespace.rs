//! The tenants' network namespaces, as `ip netns` keeps them: a file in
//! /run/netns bind-mounted on the namespace, so that operators can look
//! inside (`ip netns exec fulcrum-vni100 ipvsadm -Ln`) and a restarted Mux
//! finds its own.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

const DIRECTORY: &str = "/run/netns";

/// The namespace of the tenant of `vni`.
pub fn name(vni: u32) -> String {
    format!("fulcrum-vni{vni}")
}

fn path(name: &str) -> PathBuf {
    Path::new(DIRECTORY).join(name)
}

/// Opens the namespace `name`, creating it if there is none.
pub fn open_or_create(name: &str) -> io::Result<(File, bool)> {
    let path = path(name);
    if let Ok(file) = File::open(&path) {
        // A file that is no mounted namespace (left by a crash between the
        // two steps below) is made again.
        if is_namespace(&file) {
            return Ok((file, false));
        }
        let _ = std::fs::remove_file(&path);
    }
    std::fs::create_dir_all(DIRECTORY)?;
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
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
    Ok((File::open(&path)?, true))
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

/// The names of the tenants' namespaces there are (a Mux started again
/// adopts them).
pub fn existing() -> Vec<(String, u32)> {
    let Ok(entries) = std::fs::read_dir(DIRECTORY) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let vni = name.strip_prefix("fulcrum-vni")?.parse().ok()?;
            Some((name, vni))
        })
        .collect()
}

/// Runs `work` on a thread inside `namespace`: sockets it opens stay the
/// namespace's.
pub fn run_in<T: Send + 'static>(
    namespace: &File,
    work: impl FnOnce() -> T + Send + 'static,
) -> io::Result<T> {
    let namespace = namespace.try_clone()?;
    std::thread::spawn(move || {
        // SAFETY: setns on a namespace file held open; it moves only this
        // thread, which ends after `work`.
        if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(work())
    })
    .join()
    .map_err(|_| io::Error::other("a thread in a tenant's namespace panicked"))?
}

fn is_namespace(file: &File) -> bool {
    // NSFS_MAGIC: the file system of namespace files.
    const NSFS_MAGIC: i64 = 0x6e73_6673;
    // SAFETY: fstatfs fills the struct it is given.
    let mut status: libc::statfs = unsafe { std::mem::zeroed() };
    unsafe {
        libc::fstatfs(file.as_raw_fd(), &mut status) == 0 && status.f_type as i64 == NSFS_MAGIC
    }
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
