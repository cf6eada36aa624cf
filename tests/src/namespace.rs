//! Named network namespaces, compatible with `ip netns`.
//!
//! A namespace is created the way `ip netns add` creates one (by
//! fulcrum-netns, as the Mux makes its tenants'), so `ip netns exec NAME
//! ipvsadm ...` reaches the same kernel state as code run through
//! [`Namespace::run`]. Running code in a
//! namespace takes a thread, not a process: under emulation a process costs
//! 0.1 to 0.3 s, a thread nothing.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// A named network namespace, deleted on drop.
#[derive(Debug)]
pub struct Namespace {
    name: String,
    handle: File,
}

impl Namespace {
    /// Creates /run/netns/NAME with `lo` up; an error if it exists already
    /// (another test's, or a leftover: `ip netns delete NAME` removes it).
    ///
    /// `lo` must be up before IPVS accepts destinations in a namespace: the
    /// kernel answers EINVAL otherwise.
    pub fn create(name: &str) -> Result<Namespace> {
        Namespace::create_with(name, true)
    }

    /// Creates it as the kernel makes it, with `lo` never brought up: such
    /// a namespace has no local routing table yet, and IPVS refuses
    /// destinations with EINVAL (it cannot classify their addresses).
    pub fn create_with_lo_down(name: &str) -> Result<Namespace> {
        Namespace::create_with(name, false)
    }

    fn create_with(name: &str, lo_up: bool) -> Result<Namespace> {
        // Exclusive: the namespace is deleted by name on drop, so it must be
        // ours, never one that happens to have the same name.
        let handle = match fulcrum_netns::create(name) {
            Ok(handle) => handle,
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => bail!(
                "network namespace {name} exists already ({}): a namespace of the same \
                 name is in use, or left over (`ip netns delete {name}` removes it)",
                fulcrum_netns::path(name).display()
            ),
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("cannot create network namespace {name}"));
            }
        };
        // From here on, dropping it unmounts and removes it.
        let namespace = Namespace {
            name: name.to_owned(),
            handle,
        };
        if lo_up {
            namespace
                .run(|| set_link_up("lo"))?
                .with_context(|| format!("cannot bring lo up in network namespace {name}"))?;
        }
        Ok(namespace)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its descriptor, for a child to enter between fork and exec.
    pub(crate) fn raw_fd(&self) -> std::os::fd::RawFd {
        self.handle.as_raw_fd()
    }

    /// Runs `work` on a thread inside this namespace; sockets it opens belong
    /// to the namespace for their whole life, whichever thread uses them later.
    pub fn run<T: Send>(&self, work: impl FnOnce() -> T + Send) -> Result<T> {
        fulcrum_netns::run_in(&self.handle, work)
            .with_context(|| format!("setns into {}", self.name))
    }

    /// Whether an interface of this namespace other than `lo` holds
    /// `address` (IPv4 or IPv6): what a VRRP master's virtual address is
    /// tested by.
    pub fn holds(&self, address: std::net::IpAddr) -> Result<bool> {
        self.run(|| -> Result<bool> {
            let mut addresses: *mut libc::ifaddrs = std::ptr::null_mut();
            // SAFETY: getifaddrs fills the pointer with a list freed below.
            if unsafe { libc::getifaddrs(&mut addresses) } != 0 {
                return Err(io::Error::last_os_error()).context("getifaddrs");
            }
            let mut found = false;
            let mut current = addresses;
            while !current.is_null() {
                // SAFETY: a list getifaddrs built, freed below.
                let entry = unsafe { &*current };
                current = entry.ifa_next;
                // SAFETY: getifaddrs gives every entry a name.
                let name = unsafe { std::ffi::CStr::from_ptr(entry.ifa_name) };
                if entry.ifa_addr.is_null() || name.to_bytes() == b"lo" {
                    continue;
                }
                // SAFETY: a socket address of the family it says.
                let held = unsafe {
                    match i32::from((*entry.ifa_addr).sa_family) {
                        libc::AF_INET => {
                            let socket = &*entry.ifa_addr.cast::<libc::sockaddr_in>();
                            std::net::IpAddr::from(
                                u32::from_be(socket.sin_addr.s_addr).to_be_bytes(),
                            )
                        }
                        libc::AF_INET6 => {
                            let socket = &*entry.ifa_addr.cast::<libc::sockaddr_in6>();
                            std::net::IpAddr::from(socket.sin6_addr.s6_addr)
                        }
                        _ => continue,
                    }
                };
                found |= held == address;
            }
            // SAFETY: the list getifaddrs returned, not used after.
            unsafe { libc::freeifaddrs(addresses) };
            Ok(found)
        })?
    }

    /// Moves the calling thread into this namespace.
    pub fn enter(&self) -> Result<()> {
        fulcrum_netns::enter(&self.handle).with_context(|| format!("setns into {}", self.name))
    }

    /// A command that runs `program` in this namespace (`ip netns exec NAME
    /// program`): add arguments, input and output as for any other.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec"]).arg(&self.name).arg(program);
        command
    }

    /// `program` started straight into this namespace, without the `ip
    /// netns exec` process that [`Namespace::command`] puts in front (about
    /// 0.1 s under emulation) and without its private /sys: for timing a
    /// tool, where that process would be counted as the tool's.
    pub fn direct_command(&self, program: impl AsRef<OsStr>) -> Command {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(program);
        let namespace = self.handle.as_raw_fd();
        // SAFETY: setns is async-signal-safe, and the descriptor stays open
        // in the child until exec (close-on-exec).
        unsafe {
            command.pre_exec(move || {
                if libc::setns(namespace, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        command
    }

    /// Runs iproute2 commands in this namespace in one process (`ip -batch`),
    /// one command per line, e.g. "addr add 10.0.0.1/24 dev eth0".
    pub fn ip(&self, commands: &str) -> Result<()> {
        run_ip(Some(&self.name), commands)
    }

    /// Sets a sysctl of this namespace, e.g. ("net/ipv4/ip_forward", "1").
    pub fn sysctl(&self, key: &str, value: &str) -> Result<()> {
        let path = format!("/proc/sys/{key}");
        self.run(|| fs::write(&path, value))?
            .with_context(|| format!("cannot set {path} in {}", self.name))
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        fulcrum_netns::remove(&self.name);
    }
}

/// Runs iproute2 batch commands, in a namespace or in the lab's own one.
pub fn run_ip(namespace: Option<&str>, commands: &str) -> Result<()> {
    let mut ip = Command::new("ip");
    if let Some(name) = namespace {
        ip.args(["-n", name]);
    }
    let mut child = ip
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run ip (iproute2)")?;
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(commands.as_bytes())?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "ip -batch in {} failed: {}\ncommands:\n{commands}",
            namespace.unwrap_or("the initial namespace"),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// Brings an interface up in the calling thread's namespace, with the
/// SIOCSIFFLAGS ioctl rather than a process.
pub(crate) fn set_link_up(interface: &str) -> Result<()> {
    // SAFETY: a plain datagram socket, closed below.
    let socket = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if socket < 0 {
        return Err(io::Error::last_os_error()).context("socket for SIOCSIFFLAGS");
    }
    // SAFETY: ifreq is plain data; zero is a valid value for every field.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(interface.bytes()) {
        *slot = byte as libc::c_char;
    }
    // SAFETY: the ioctls read and write the ifreq we own.
    let result = unsafe {
        if libc::ioctl(socket, libc::SIOCGIFFLAGS, &mut request) != 0 {
            -1
        } else {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(socket, libc::SIOCSIFFLAGS, &request)
        }
    };
    let error = io::Error::last_os_error();
    // SAFETY: closing the socket we opened.
    unsafe { libc::close(socket) };
    if result != 0 {
        return Err(error).with_context(|| format!("cannot bring {interface} up"));
    }
    Ok(())
}
