//! A machine of its own inside the lab's guest, for a daemon that keeps
//! state of machine scope in files: the Mux keeps its tenants as
//! /run/netns/fulcrum-vniN, one set per machine, so two Muxes in one guest
//! each need their own /run/netns as two real machines have.
//!
//! A machine is a network namespace and a mount namespace whose /run/netns
//! is a tmpfs of its own (mount propagation private: nothing mounted there
//! is seen outside, nor the guest's namespaces inside). A sleeping process
//! holds the mount namespace, so it outlives the daemons started in it: a
//! Mux killed with SIGKILL leaves its tenants' namespaces there, as on a
//! real machine, for the next Mux to adopt. Dropping the machine ends the
//! holder, which unmounts them (the kernel frees each namespace with its
//! last user).

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result};

use crate::Namespace;

/// A network namespace and a mount namespace with its own /run/netns.
#[derive(Debug)]
pub struct Machine {
    namespace: Namespace,
    holder: Child,
    mounts: File,
}

impl Machine {
    /// Makes the machine `name`: the network namespace `name` (in the
    /// guest's /run/netns, as [`Namespace::create`] makes it, `lo` up) and
    /// its mount namespace.
    pub fn create(name: &str) -> Result<Machine> {
        use std::os::unix::process::CommandExt;
        let namespace = Namespace::create(name)?;
        let network = namespace.raw_fd();
        let mut holder = Command::new("sleep");
        holder
            .arg("infinity")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only system calls between fork and exec (setns, unshare,
        // mount), on a descriptor open until exec and constant strings.
        unsafe {
            holder.pre_exec(move || {
                if libc::setns(network, libc::CLONE_NEWNET) != 0
                    || libc::unshare(libc::CLONE_NEWNS) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                // Private from the root down: what the daemons mount here
                // (their namespaces' bind mounts) stays here.
                if libc::mount(
                    c"none".as_ptr(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                if libc::mount(
                    c"tmpfs".as_ptr(),
                    c"/run/netns".as_ptr(),
                    c"tmpfs".as_ptr(),
                    0,
                    c"mode=0755".as_ptr().cast(),
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        // /run/netns exists: the network namespace's own file is there.
        let holder = holder
            .spawn()
            .with_context(|| format!("cannot start the process holding machine {name}"))?;
        let mounts = File::open(format!("/proc/{}/ns/mnt", holder.id()))
            .with_context(|| format!("cannot open machine {name}'s mount namespace"))?;
        Ok(Machine {
            namespace,
            holder,
            mounts,
        })
    }

    /// Its network namespace.
    pub fn namespace(&self) -> &Namespace {
        &self.namespace
    }

    pub fn name(&self) -> &str {
        self.namespace.name()
    }

    /// A command that runs `program` on this machine: in its network and
    /// mount namespaces, started straight (no `ip netns exec` process).
    /// Entering the mount namespace makes the working directory its root:
    /// give paths whole.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        use std::os::unix::process::CommandExt;
        let mut command = self.namespace.direct_command(program);
        let mounts = self.mounts.as_raw_fd();
        // SAFETY: setns is async-signal-safe; the descriptor stays open in
        // the child until exec. The child is single-threaded, so it shares
        // its file system attributes with no one (setns requires that).
        unsafe {
            command.pre_exec(move || {
                if libc::setns(mounts, libc::CLONE_NEWNS) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        command
    }

    /// The file of the network namespace `name` in this machine's
    /// /run/netns, as seen from the guest (through the holder's root).
    pub fn netns_path(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root/run/netns/{name}", self.holder.id()))
    }

    /// Runs `work` on a thread inside the namespace `name` that a daemon
    /// made in this machine's /run/netns (the Mux's `fulcrum-vniN`); `None`
    /// while there is none, or not yet one to enter.
    pub fn run_in_named<T: Send>(&self, name: &str, work: impl FnOnce() -> T + Send) -> Option<T> {
        let handle = File::open(self.netns_path(name)).ok()?;
        fulcrum_netns::run_in(&handle, work).ok()
    }

    /// The names in this machine's /run/netns.
    pub fn netns_names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.netns_path(""))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.file_name().into_string().ok())
            .collect();
        names.sort();
        names
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}
