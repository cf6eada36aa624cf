//! The lab: Debian's stock kernel under QEMU, running a command of ours
//! against the real IPVS.
//!
//! This machine's kernel has no IPVS and cannot load modules, so every test
//! that touches the kernel runs in a guest. The guest sees the host's root
//! filesystem read-only (over 9p, under a tmpfs overlay) and the repository
//! read-write at its own path, so binaries built here run there unchanged and
//! whatever the command writes under the repository comes back.

mod kernel;
pub mod prerequisites;

use std::fmt::Write as _;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

pub use kernel::Kernel;

/// The guest's first process; see the script for what it does.
const INIT_SCRIPT: &str = include_str!("init.sh");
/// What the guest's PID 1 runs once the host's filesystem is its root.
const STAGE2_SCRIPT: &str = include_str!("stage2.sh");

/// Modules the guest needs before it can see the host: virtio transport, the
/// serial ports for output, 9p for the filesystems, overlayfs.
const BOOT_MODULES: &[&str] = &[
    "virtio_pci",
    "virtio_console",
    "9pnet_virtio",
    "9p",
    "overlay",
];

/// Environment variables passed from the host into the command.
const PASSED_ENVIRONMENT: &[&str] = &["RUST_BACKTRACE", "RUST_LOG", "CI", "NO_COLOR", "TERM"];

/// How a lab run is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long the guest may take to reach the command.
    pub boot_timeout: Duration,
    /// How long the command may run.
    pub timeout: Duration,
    pub memory_megabytes: u32,
    pub cpus: u32,
    /// Keep the run folder (console log, command script) after success.
    pub keep: bool,
    /// A network card, `eth0` in the guest; none unless set.
    pub network: Option<UserNetwork>,
}

/// A user-mode network card (QEMU's own TCP/IP stack, no privileges or
/// devices needed here): the guest's `eth0` is 10.0.2.15/24. Restricted:
/// the guest reaches neither this machine nor the outside, and only the
/// forwarded ports reach it.
#[derive(Debug, Clone, Default)]
pub struct UserNetwork {
    pub forwarded_ports: Vec<ForwardedPort>,
}

/// Connections to 127.0.0.1:`host` here reach the guest's 10.0.2.15:`guest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForwardedPort {
    pub host: u16,
    pub guest: u16,
}

impl UserNetwork {
    /// QEMU's options for it.
    fn qemu_arguments(&self) -> [String; 4] {
        let mut netdev = String::from("user,id=net0,restrict=on");
        for port in &self.forwarded_ports {
            write!(
                netdev,
                ",hostfwd=tcp:127.0.0.1:{}-:{}",
                port.host, port.guest
            )
            .unwrap();
        }
        [
            "-netdev".to_owned(),
            netdev,
            "-device".to_owned(),
            "virtio-net-pci,netdev=net0".to_owned(),
        ]
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            boot_timeout: Duration::from_secs(120),
            timeout: Duration::from_secs(3600),
            memory_megabytes: 2048,
            cpus: 2,
            keep: false,
            network: None,
        }
    }
}

/// A ready lab: prerequisites installed, kernel unpacked.
pub struct Lab {
    repository: PathBuf,
    kernel: Kernel,
    options: Options,
}

impl Lab {
    /// Installs what is missing and fetches the kernel if it is not cached.
    pub fn prepare(repository: &Path, options: Options) -> Result<Lab> {
        prerequisites::ensure()?;
        let kernel = Kernel::ensure(&cache_directory()?)?;
        Ok(Lab {
            repository: repository.to_path_buf(),
            kernel,
            options,
        })
    }

    /// Runs `command` as root in a fresh guest, from the repository root,
    /// streaming its output; returns its exit status.
    pub fn run(&self, command: &[String]) -> Result<i32> {
        if command.is_empty() {
            bail!("no command given to run in the lab");
        }
        let run = RunFolder::create(&self.repository)?;
        self.write_initramfs(&run.path, &run.path.join("initramfs.cpio"))?;
        let script = run.path.join("command");
        fs::write(&script, command_script(&self.repository, command))
            .with_context(|| format!("cannot write {}", script.display()))?;
        let stdout_fifo = run.fifo("stdout")?;
        let stderr_fifo = run.fifo("stderr")?;

        // The readers open the FIFOs before QEMU does, or QEMU would block.
        let stdout_copy = forward(stdout_fifo.clone(), io::stdout);
        let stderr_copy = forward(stderr_fifo.clone(), io::stderr);

        let console = run.path.join("console.log");
        let mut qemu = self
            .qemu_command(&run.path, &console, &stdout_fifo, &stderr_fifo)
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start qemu-system-x86_64")?;
        // Read as it comes, so QEMU never blocks on a full pipe.
        let qemu_stderr = read_to_end(qemu.stderr.take().expect("stderr is piped"));
        let outcome = self.supervise(&mut qemu, &console, qemu_stderr);
        if outcome.is_err() {
            let _ = qemu.kill();
            let _ = qemu.wait();
            // Unblock readers that may still wait for QEMU to open the FIFOs.
            let _ = fs::OpenOptions::new().write(true).open(&stdout_fifo);
            let _ = fs::OpenOptions::new().write(true).open(&stderr_fifo);
        }
        let _ = stdout_copy.join();
        let _ = stderr_copy.join();
        outcome?;

        let status_file = run.path.join("status");
        let status = match fs::read_to_string(&status_file) {
            Ok(text) => text
                .trim()
                .parse::<i32>()
                .with_context(|| format!("{} holds {text:?}", status_file.display()))?,
            Err(error) if error.kind() == io::ErrorKind::NotFound => bail!(
                "the guest stopped before the command finished\n{}",
                console_tail(&console)
            ),
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("cannot read {}", status_file.display()));
            }
        };
        if !self.options.keep {
            let _ = fs::remove_dir_all(&run.path);
        }
        Ok(status)
    }

    /// Starts `command` in a fresh guest and returns at once: the guest runs
    /// on after this process ends, until the command does (it then powers
    /// off) or QEMU is killed. No timeout applies; the command's output goes
    /// to the run folder's `stdout` and `stderr` files, QEMU's own to
    /// `qemu.log`. `prepare` gets the run folder first, writes what the
    /// command needs into it (the guest sees it at the same path) and
    /// returns the command.
    pub fn start_detached(
        &self,
        prepare: impl FnOnce(&Path) -> Result<Vec<String>>,
    ) -> Result<DetachedGuest> {
        let run = RunFolder::create(&self.repository)?;
        let command = prepare(&run.path)?;
        if command.is_empty() {
            bail!("no command given to run in the lab");
        }
        self.write_initramfs(&run.path, &run.path.join("initramfs.cpio"))?;
        let script = run.path.join("command");
        fs::write(&script, command_script(&self.repository, &command))
            .with_context(|| format!("cannot write {}", script.display()))?;
        let log = run.path.join("qemu.log");
        let log_file =
            fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
        let mut qemu = self.qemu_command(
            &run.path,
            &run.path.join("console.log"),
            &run.path.join("stdout"),
            &run.path.join("stderr"),
        );
        qemu.stderr(log_file);
        // A session of its own: a terminal's hangup or ^C ends the command
        // that started it, not the guest.
        // SAFETY: setsid is async-signal-safe and touches no memory.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut qemu, || {
                if libc::setsid() < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = qemu.spawn().context("cannot start qemu-system-x86_64")?;
        Ok(DetachedGuest {
            process: child.id(),
            run: run.path,
        })
    }

    /// QEMU's command line for a run; stdin and stdout are null, stderr is
    /// the caller's to set.
    fn qemu_command(&self, run: &Path, console: &Path, stdout: &Path, stderr: &Path) -> Command {
        let append = "console=ttyS0 panic=-1 loglevel=4 mitigations=off rdinit=/init";
        let mut qemu = Command::new("qemu-system-x86_64");
        qemu.args([
            "-nodefaults",
            "-no-user-config",
            "-no-reboot",
            "-display",
            "none",
        ])
        // -enable-kvm hangs on these machines: software emulation only.
        .args(["-accel", "tcg,thread=multi", "-cpu", "max"])
        .args(["-smp", &self.options.cpus.to_string()])
        .args(["-m", &self.options.memory_megabytes.to_string()])
        .arg("-kernel")
        .arg(&self.kernel.image)
        .arg("-initrd")
        .arg(run.join("initramfs.cpio"))
        .args(["-append", append])
        .args([
            "-chardev",
            &format!("file,id=console,path={}", qemu_option_value(console)),
        ])
        .args(["-serial", "chardev:console"])
        .args([
            "-virtfs",
            "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
        ])
        .args([
            "-virtfs",
            &format!(
                "local,path={},mount_tag=repo,security_model=none,multidevs=remap",
                qemu_option_value(&self.repository)
            ),
        ])
        .args(["-device", "virtio-serial-pci"])
        .args([
            "-chardev",
            &format!("file,id=stdout,path={}", qemu_option_value(stdout)),
        ])
        .args([
            "-device",
            "virtserialport,chardev=stdout,name=fulcrum.stdout",
        ])
        .args([
            "-chardev",
            &format!("file,id=stderr,path={}", qemu_option_value(stderr)),
        ])
        .args([
            "-device",
            "virtserialport,chardev=stderr,name=fulcrum.stderr",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null());
        if let Some(network) = &self.options.network {
            qemu.args(network.qemu_arguments());
        }
        qemu
    }

    /// Waits for QEMU to exit, enforcing the boot and command timeouts;
    /// `stderr` is what QEMU writes there, read on a thread.
    fn supervise(
        &self,
        qemu: &mut Child,
        console: &Path,
        stderr: thread::JoinHandle<String>,
    ) -> Result<()> {
        let started = Instant::now();
        let mut running_since: Option<Instant> = None;
        loop {
            if let Some(status) = qemu.try_wait().context("cannot wait for QEMU")? {
                if !status.success() {
                    // QEMU has exited: its stderr is closed, the reader done.
                    let message = stderr.join().unwrap_or_default();
                    bail!(
                        "qemu exited with {status}: {}\n{}",
                        message.trim(),
                        console_tail(console)
                    );
                }
                return Ok(());
            }
            match running_since {
                None => {
                    let log = fs::read_to_string(console).unwrap_or_default();
                    if log.contains("fulcrum-lab: running command") {
                        running_since = Some(Instant::now());
                    } else if started.elapsed() > self.options.boot_timeout {
                        bail!(
                            "the guest did not boot within {} s\n{}",
                            self.options.boot_timeout.as_secs(),
                            console_tail(console)
                        );
                    }
                }
                Some(since) if since.elapsed() > self.options.timeout => bail!(
                    "the command did not finish within {} s\n{}",
                    self.options.timeout.as_secs(),
                    console_tail(console)
                ),
                Some(_) => {}
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    fn write_initramfs(&self, run: &Path, path: &Path) -> Result<()> {
        let staging = path.with_extension("d");
        for folder in ["bin", "modules"] {
            let folder = staging.join(folder);
            fs::create_dir_all(&folder)
                .with_context(|| format!("cannot create {}", folder.display()))?;
        }
        fs::copy("/bin/busybox", staging.join("bin/busybox"))
            .context("cannot copy /bin/busybox (package busybox-static)")?;
        let init = staging.join("init");
        write(&init, INIT_SCRIPT)?;
        set_executable(&init)?;
        write(&staging.join("stage2.sh"), STAGE2_SCRIPT)?;
        let parameters = format!(
            "run={}\nrepo={}\nmodules={}\n",
            shell_quote(&run.to_string_lossy()),
            shell_quote(&self.repository.to_string_lossy()),
            shell_quote(&self.kernel.modules.to_string_lossy())
        );
        write(&staging.join("parameters"), &parameters)?;
        let mut order = String::new();
        let mut modules = BOOT_MODULES.to_vec();
        if self.options.network.is_some() {
            // Its driver, so that init finds eth0 and gives it its address.
            modules.push("virtio_net");
        }
        for module in self.kernel.module_closure(&modules)? {
            let name = module.file_name().expect("module paths have file names");
            fs::copy(&module, staging.join("modules").join(name))
                .with_context(|| format!("cannot copy {}", module.display()))?;
            writeln!(order, "{}", name.to_string_lossy())?;
        }
        write(&staging.join("modules/order"), &order)?;
        let archive =
            fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        let status = Command::new("sh")
            .arg("-c")
            .arg("find . | LC_ALL=C sort | cpio --quiet -o -H newc")
            .current_dir(&staging)
            .stdout(archive)
            .status()
            .context("cannot run cpio")?;
        if !status.success() {
            bail!("cpio failed to build the initramfs ({status})");
        }
        fs::remove_dir_all(&staging)
            .with_context(|| format!("cannot remove {}", staging.display()))?;
        Ok(())
    }
}

/// Where the kernel is cached between runs: it is the same for every clone.
fn cache_directory() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("FULCRUM_LAB_CACHE") {
        return Ok(PathBuf::from(path));
    }
    let home = std::env::var_os("HOME").context("HOME is not set; set FULCRUM_LAB_CACHE")?;
    Ok(PathBuf::from(home).join(".cache/fulcrum/lab"))
}

/// The script the guest runs: the command, quoted, from the repository root.
fn command_script(repository: &Path, command: &[String]) -> String {
    let mut script = String::from("set -e\n");
    writeln!(script, "cd {}", shell_quote(&repository.to_string_lossy())).unwrap();
    script.push_str(
        "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root\n",
    );
    script.push_str("export FULCRUM_LAB=1\n");
    for name in PASSED_ENVIRONMENT {
        if let Ok(value) = std::env::var(name) {
            writeln!(script, "export {name}={}", shell_quote(&value)).unwrap();
        }
    }
    let words: Vec<String> = command.iter().map(|word| shell_quote(word)).collect();
    writeln!(script, "set +e\n{}", words.join(" ")).unwrap();
    script
}

/// A path as the value of a QEMU option, where a comma ends the value
/// unless doubled.
fn qemu_option_value(path: &Path) -> String {
    path.to_string_lossy().replace(',', ",,")
}

fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

pub fn console_tail(console: &Path) -> String {
    let log = fs::read_to_string(console).unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    let tail = &lines[lines.len().saturating_sub(30)..];
    format!(
        "last lines of the guest console ({}):\n{}",
        console.display(),
        tail.join("\n")
    )
}

fn forward<W: Write + 'static>(fifo: PathBuf, output: fn() -> W) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        if let Ok(mut reader) = fs::File::open(&fifo) {
            let mut writer = output();
            let mut buffer = [0u8; 8192];
            while let Ok(count) = reader.read(&mut buffer) {
                if count == 0 || writer.write_all(&buffer[..count]).is_err() {
                    break;
                }
                let _ = writer.flush();
            }
        }
    })
}

/// Reads `input` to its end on a thread; joining it gives the text.
fn read_to_end(mut input: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = input.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn write(path: &Path, contents: &str) -> Result<()> {
    fs::write(path, contents).with_context(|| format!("cannot write {}", path.display()))
}

fn set_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))
}

/// A guest started by [`Lab::start_detached`].
#[derive(Debug)]
pub struct DetachedGuest {
    /// QEMU's process id.
    pub process: u32,
    /// The run folder: console.log, stdout, stderr, qemu.log, the command.
    pub run: PathBuf,
}

/// A folder under target/lab for one run, inside the repository so the
/// guest can write its status there.
struct RunFolder {
    path: PathBuf,
}

impl RunFolder {
    fn create(repository: &Path) -> Result<RunFolder> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        let path = repository
            .join("target/lab/runs")
            .join(format!("{stamp}-{}", std::process::id()));
        fs::create_dir_all(&path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(RunFolder { path })
    }

    fn fifo(&self, name: &str) -> Result<PathBuf> {
        let path = self.path.join(name);
        let status = Command::new("mkfifo")
            .arg(&path)
            .status()
            .context("cannot run mkfifo")?;
        if !status.success() {
            bail!("mkfifo {} failed", path.display());
        }
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_words_reach_the_shell_unchanged() {
        for word in ["plain", "two words", "it's", "'", "$HOME `x` \"y\" \\z", ""] {
            let output = Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", shell_quote(word)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(output.stdout).unwrap(), word);
        }
    }

    #[test]
    fn the_command_script_runs_from_the_repository_with_the_words_quoted() {
        let script = command_script(
            Path::new("/tmp/a repo"),
            &["echo".into(), "a b".into(), "c'd".into()],
        );
        assert!(script.contains("cd '/tmp/a repo'\n"), "{script}");
        assert!(script.contains("export FULCRUM_LAB=1\n"), "{script}");
        assert!(script.ends_with("'echo' 'a b' 'c'\\''d'\n"), "{script}");
    }

    #[test]
    fn the_network_card_forwards_each_port_from_loopback_only() {
        let network = UserNetwork {
            forwarded_ports: vec![
                ForwardedPort {
                    host: 40001,
                    guest: 22001,
                },
                ForwardedPort {
                    host: 40002,
                    guest: 22002,
                },
            ],
        };
        assert_eq!(
            network.qemu_arguments(),
            [
                "-netdev",
                "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:40001-:22001,\
                 hostfwd=tcp:127.0.0.1:40002-:22002",
                "-device",
                "virtio-net-pci,netdev=net0",
            ]
        );
    }

    #[test]
    fn commas_in_qemu_option_values_are_doubled() {
        assert_eq!(qemu_option_value(Path::new("/tmp/a,b")), "/tmp/a,,b");
    }
}
