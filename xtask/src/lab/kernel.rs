//! Debian's stock kernel, downloaded with apt and unpacked into a cache.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::prerequisites::apt_get;

/// The package whose dependency names today's kernel build.
const META_PACKAGE: &str = "linux-image-amd64";

/// An unpacked kernel package.
pub struct Kernel {
    /// The bootable image (vmlinuz).
    pub image: PathBuf,
    /// `lib/modules/<release>`, with modules.dep generated.
    pub modules: PathBuf,
}

impl Kernel {
    /// The kernel `linux-image-amd64` depends on today, from the cache or
    /// downloaded into it.
    pub fn ensure(cache: &Path) -> Result<Kernel> {
        let package = match current_package() {
            Ok(package) => package,
            Err(error) => match cached_packages(cache).pop() {
                // Offline, or apt's lists are gone: any cached kernel will do.
                Some(package) => {
                    eprintln!("lab: {error:#}; using the cached {package}");
                    package
                }
                None => return Err(error),
            },
        };
        let root = cache.join(&package);
        if !root.join(".complete").exists() {
            download(&package, cache, &root)?;
        }
        Kernel::open(&root).with_context(|| format!("the cached kernel in {}", root.display()))
    }

    fn open(root: &Path) -> Result<Kernel> {
        let modules_root = root.join("lib/modules");
        let release = fs::read_dir(&modules_root)
            .with_context(|| format!("cannot list {}", modules_root.display()))?
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .next()
            .context("no lib/modules/<release> folder")?;
        let image = root.join("boot").join(format!("vmlinuz-{release}"));
        if !image.exists() {
            bail!("{} is missing", image.display());
        }
        Ok(Kernel {
            image,
            modules: modules_root.join(release),
        })
    }

    /// The module files needed to load `names`, dependencies first, leaving
    /// out what the kernel has built in.
    pub fn module_closure(&self, names: &[&str]) -> Result<Vec<PathBuf>> {
        let path = self.modules.join("modules.dep");
        let dependencies =
            fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let mut table: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
        for line in dependencies.lines() {
            let Some((path, needs)) = line.split_once(':') else {
                continue;
            };
            let needs = needs.split_whitespace().map(str::to_owned).collect();
            table.insert(module_name(path), (path.to_owned(), needs));
        }
        let builtin = fs::read_to_string(self.modules.join("modules.builtin")).unwrap_or_default();
        let builtin: Vec<String> = builtin.lines().map(module_name).collect();

        let mut ordered: Vec<String> = Vec::new();
        for name in names {
            let name = name.replace('-', "_");
            if builtin.contains(&name) {
                continue;
            }
            let (path, needs) = table
                .get(&name)
                .with_context(|| format!("no module named {name}"))?;
            // modules.dep lists every dependency, transitively, deepest last.
            for dependency in needs.iter().rev().chain(std::iter::once(path)) {
                if !ordered.contains(dependency) {
                    ordered.push(dependency.clone());
                }
            }
        }
        Ok(ordered
            .into_iter()
            .map(|path| self.modules.join(path))
            .collect())
    }
}

fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split(".ko").next().unwrap_or(file);
    stem.replace('-', "_")
}

/// The versioned kernel package, e.g. `linux-image-6.1.0-57-amd64`.
fn current_package() -> Result<String> {
    let lookup = || -> Result<Option<String>> {
        let output = Command::new("apt-cache")
            .args(["depends", META_PACKAGE])
            .output()
            .context("cannot run apt-cache")?;
        let text = String::from_utf8_lossy(&output.stdout);
        Ok(text
            .lines()
            .filter_map(|line| line.trim().strip_prefix("Depends: "))
            .find(|package| package.starts_with("linux-image-"))
            .map(str::to_owned))
    };
    if let Some(package) = lookup()? {
        return Ok(package);
    }
    // A fresh machine has no package lists yet.
    apt_get(&["update", "-q"])?;
    lookup()?.with_context(|| format!("apt-cache names no kernel that {META_PACKAGE} depends on"))
}

fn cached_packages(cache: &Path) -> Vec<String> {
    let mut found: Vec<String> = fs::read_dir(cache)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().join(".complete").exists())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    found
}

fn download(package: &str, cache: &Path, root: &Path) -> Result<()> {
    eprintln!("lab: downloading {package}");
    let downloads = cache.join("downloads");
    fs::create_dir_all(&downloads)
        .with_context(|| format!("cannot create {}", downloads.display()))?;
    let status = Command::new("apt-get")
        // As root, apt hands downloads to its sandbox user, who cannot write
        // into our cache: download as root instead of warning about it.
        .args(["download", "-q", "-o", "APT::Sandbox::User=root", package])
        .current_dir(&downloads)
        .stdout(std::io::stderr())
        .status()
        .context("cannot run apt-get download")?;
    if !status.success() {
        bail!("apt-get download {package} failed ({status}): the lab needs Debian's kernel");
    }
    let archive = fs::read_dir(&downloads)
        .with_context(|| format!("cannot list {}", downloads.display()))?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.path())
        .find(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with(&format!("{package}_")) && name.ends_with(".deb")
        })
        .with_context(|| format!("apt-get download left no {package}_*.deb"))?;
    let _ = fs::remove_dir_all(root);
    fs::create_dir_all(root).with_context(|| format!("cannot create {}", root.display()))?;
    let status = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&archive)
        .arg(root)
        .status()
        .context("cannot run dpkg-deb")?;
    if !status.success() {
        bail!("dpkg-deb could not unpack {}", archive.display());
    }
    let kernel = Kernel::open(root)?;
    let release = kernel
        .modules
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    // The package's postinst runs depmod on a real system; do it here.
    let status = Command::new("depmod")
        .arg("-b")
        .arg(root)
        .arg(&release)
        .status()
        .context("cannot run depmod")?;
    if !status.success() {
        bail!("depmod failed for {release}");
    }
    let complete = root.join(".complete");
    fs::write(&complete, "").with_context(|| format!("cannot write {}", complete.display()))?;
    fs::remove_file(&archive).with_context(|| format!("cannot remove {}", archive.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_closure_loads_dependencies_first_and_skips_builtins() {
        let root = std::env::temp_dir().join(format!("xtask-modules-{}", std::process::id()));
        fs::create_dir_all(&root).unwrap();
        // depmod lists every dependency, transitively, deepest last.
        fs::write(
            root.join("modules.dep"),
            "kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/fscache/fscache.ko kernel/fs/netfs/netfs.ko\n\
             kernel/fs/fscache/fscache.ko: kernel/fs/netfs/netfs.ko\n\
             kernel/fs/netfs/netfs.ko:\n\
             kernel/net/9p/9pnet.ko:\n\
             kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko\n",
        )
        .unwrap();
        fs::write(
            root.join("modules.builtin"),
            "kernel/drivers/virtio/virtio_pci.ko\n",
        )
        .unwrap();
        let kernel = Kernel {
            image: root.join("vmlinuz"),
            modules: root.clone(),
        };
        let closure = kernel
            .module_closure(&["virtio_pci", "9pnet_virtio", "9p"])
            .unwrap();
        let names: Vec<String> = closure
            .iter()
            .map(|path| {
                path.strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(
            names,
            [
                "kernel/net/9p/9pnet.ko",
                "kernel/net/9p/9pnet_virtio.ko",
                "kernel/fs/netfs/netfs.ko",
                "kernel/fs/fscache/fscache.ko",
                "kernel/fs/9p/9p.ko",
            ]
        );
        assert!(kernel.module_closure(&["no_such_module"]).is_err());
        fs::remove_dir_all(&root).unwrap();
    }
}
