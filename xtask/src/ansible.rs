//! `cargo xtask ansible`: the `fulcrum.lvs` collection's checks and tests.
//!
//! 1. yamllint and `ansible-lint` (profile production, from
//!    ansible/.ansible-lint) on the collection;
//! 2. the roles' templates rendered for their variable sets and checked by
//!    the real tools (`pulse -t`, keepalived, `bird -p`, ...) on this
//!    machine: ansible/tests/;
//! 3. the Molecule scenarios in ansible/extensions/molecule/, against hosts
//!    in the lab's guest, each booted by real systemd and reached over ssh
//!    (`cargo xtask hosts`), with the Debian package `cargo xtask package`
//!    builds.
//!
//! The tools come from PyPI, at the versions below, installed for this
//! machine's Python when missing; Ansible itself runs here (the
//! controller), never in the guest, where one module takes seconds.
//!
//! Under emulation each module costs a host about 6 s of Python (most of
//! it compiling ansible.module_utils afresh from the module's zip), so the
//! scenarios take about half an hour: `cargo xtask test` runs steps 1 and
//! 2 only, and says so; `cargo xtask ansible` runs all three.

use std::ffi::OsString;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

/// The tools, pinned: ansible-core 2.19 is what the issue names (Python
/// 3.11), and the others the versions its tests were written against.
const PYTHON_PACKAGES: &[&str] = &[
    "ansible-core==2.19.14",
    "molecule==26.10.0",
    "ansible-lint==26.10.1",
    "yamllint==1.38.0",
];

/// The Molecule scenarios, in the order they run. `differential` needs
/// evrardjp/ansible-keepalived ([`reference_role`]) and is skipped, saying
/// so, without it.
pub const SCENARIOS: &[&str] = &["director", "differential"];

/// The community package whose wheel holds the collections evrardjp's role
/// calls ([`REFERENCE_COLLECTIONS`]): taken from PyPI for the differential
/// only, never used by the collection.
const COMMUNITY_WHEEL: &str = "ansible==12.3.0";

/// What evrardjp's role needs beside ansible.builtin: ansible.posix.sysctl
/// and community.general.ini_file (its systemd override).
const REFERENCE_COLLECTIONS: &[&str] = &["ansible/posix", "community/general"];

pub struct Options {
    /// The package to install on the hosts; built when absent.
    pub package: Option<PathBuf>,
    /// Only these scenarios (all when empty).
    pub scenarios: Vec<String>,
    /// Skip the scenarios: lint and render only.
    pub lint_only: bool,
}

pub fn run(repository: &Path, options: &Options) -> Result<()> {
    let tools = Tools::ensure()?;
    let collection = repository.join("ansible");
    let collections_path = collections_path(repository)?;

    let started = Instant::now();
    tools.step("yamllint", &collection, "yamllint", &["--strict", "."], &[])?;
    tools.step("ansible-lint", &collection, "ansible-lint", &[], &[])?;

    crate::cargo::step(
        repository,
        "the binaries the templates are checked with",
        &["build", "-p", "pulse", "-p", "fulcrum-agent"],
    )?;
    let debug = repository.join("target/debug");
    let pulse = format!("pulse={}", debug.join("pulse").display());
    let agent = format!("agent={}", debug.join("fulcrum-agent").display());
    let environment = [(
        "ANSIBLE_COLLECTIONS_PATH",
        collections_path.clone().into_os_string(),
    )];
    // The director's test also renders evrardjp's own template from the
    // same variables, when there is a copy of it (else it says it skips).
    let reference_source = reference_source(repository);
    let evrardjp = format!("evrardjp_repo={}", reference_source.display());
    // The roles' test renders every host of the cluster playbook's example
    // inventory and of its own cases, eight at a time.
    let playbooks: [&[&str]; 2] = [
        &["tests/director/render.yml", "-e", &evrardjp],
        &[
            "tests/roles/render.yml",
            "--forks",
            "8",
            "--inventory",
            "playbooks/inventory/example.yml",
            "--inventory",
            "tests/roles/inventory/cases.yml",
        ],
    ];
    for playbook in playbooks {
        let mut arguments = playbook.to_vec();
        arguments.extend(["-e", &pulse, "-e", &agent]);
        tools.step(
            &format!("templates checked: {}", playbook[0]),
            &collection,
            "ansible-playbook",
            &arguments,
            &environment,
        )?;
    }
    eprintln!(
        "xtask: ansible: lint and templates took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if options.lint_only {
        return Ok(());
    }

    let package = match &options.package {
        Some(package) => package.clone(),
        None => crate::package::build(repository)?,
    };
    let package = package
        .canonicalize()
        .with_context(|| format!("no package at {}", package.display()))?;
    let scenarios: Vec<&str> = if options.scenarios.is_empty() {
        SCENARIOS.to_vec()
    } else {
        options.scenarios.iter().map(String::as_str).collect()
    };
    for scenario in scenarios {
        let started = Instant::now();
        let mut environment = vec![
            environment[0].clone(),
            ("FULCRUM_PACKAGE", package.clone().into_os_string()),
        ];
        if scenario == "differential" {
            let Some(reference) = reference(repository, &reference_source)? else {
                eprintln!(
                    "xtask: ansible: scenario differential skipped: no copy of \
                     evrardjp/ansible-keepalived (set {REFERENCE_VARIABLE} to its git \
                     folder, or fetch it to ../.mirror/evrardjp+ansible-keepalived/repo)"
                );
                continue;
            };
            let mut collections = reference.collections.into_os_string();
            collections.push(":");
            collections.push(&collections_path);
            environment[0].1 = collections;
            environment.push(("ANSIBLE_ROLES_PATH", reference.roles.into_os_string()));
        }
        tools.step(
            &format!("molecule scenario {scenario}"),
            &collection,
            "molecule",
            &["test", "--scenario-name", scenario],
            &environment,
        )?;
        eprintln!(
            "xtask: ansible: scenario {scenario} took {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Where the differential finds evrardjp/ansible-keepalived: a git folder
/// (the role's repository), by default the workplace's copy beside the
/// repository. Its files are never committed here: they are copied at test
/// time into target/ansible/reference.
const REFERENCE_VARIABLE: &str = "FULCRUM_EVRARDJP_KEEPALIVED";

/// The git folder of evrardjp/ansible-keepalived: [`REFERENCE_VARIABLE`],
/// else the workplace's copy beside the repository (which may be absent).
fn reference_source(repository: &Path) -> PathBuf {
    match std::env::var_os(REFERENCE_VARIABLE) {
        Some(source) => PathBuf::from(source),
        None => repository
            .parent()
            .unwrap_or(repository)
            .join(".mirror/evrardjp+ansible-keepalived/repo"),
    }
}

struct Reference {
    /// Holds `keepalived`, evrardjp's role under the name its own
    /// playbooks use.
    roles: PathBuf,
    /// Holds [`REFERENCE_COLLECTIONS`].
    collections: PathBuf,
}

/// evrardjp's role from its git folder `source`, and the collections it
/// calls, unpacked under target/ansible/reference; `None` when there is no
/// copy of the role.
fn reference(repository: &Path, source: &Path) -> Result<Option<Reference>> {
    if !source.exists() {
        return Ok(None);
    }
    let root = repository.join("target/ansible/reference");
    let roles = root.join("roles");
    let role = roles.join("keepalived");
    let _ = std::fs::remove_dir_all(&role);
    std::fs::create_dir_all(&role).with_context(|| format!("cannot create {}", role.display()))?;
    let status = Command::new("sh")
        .arg("-c")
        .arg(r#"git --git-dir="$1" archive --format=tar HEAD | tar -x -C "$2""#)
        .args(["sh"])
        .arg(source)
        .arg(&role)
        .status()
        .context("cannot run git archive")?;
    if !status.success() {
        bail!(
            "cannot unpack evrardjp/ansible-keepalived from {}",
            source.display()
        );
    }
    let collections = root.join("collections");
    let missing: Vec<&str> = REFERENCE_COLLECTIONS
        .iter()
        .copied()
        .filter(|name| {
            !collections
                .join("ansible_collections")
                .join(name)
                .join("MANIFEST.json")
                .exists()
        })
        .collect();
    if !missing.is_empty() {
        let wheels = root.join("wheels");
        eprintln!(
            "xtask: ansible: {} for evrardjp's role, from PyPI ({COMMUNITY_WHEEL})",
            missing.join(", ")
        );
        python(&[
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            COMMUNITY_WHEEL,
            "--dest",
            &wheels.to_string_lossy(),
        ])?;
        let mut arguments = vec![
            "-c",
            "import sys, zipfile, glob\n\
             wheel = glob.glob(sys.argv[1] + '/ansible-*.whl')[0]\n\
             prefixes = tuple('ansible_collections/' + name + '/' for name in sys.argv[3:])\n\
             with zipfile.ZipFile(wheel) as archive:\n\
             \x20   names = [n for n in archive.namelist() if n.startswith(prefixes)]\n\
             \x20   archive.extractall(sys.argv[2], names)\n",
        ];
        let wheels = wheels.to_string_lossy();
        let destination = collections.to_string_lossy();
        arguments.extend([wheels.as_ref(), destination.as_ref()]);
        arguments.extend(missing);
        python(&arguments)?;
    }
    Ok(Some(Reference { roles, collections }))
}

/// target/ansible/collections, where `fulcrum.lvs` resolves to ansible/
/// (a symbolic link, so an edit is seen at once): what
/// ANSIBLE_COLLECTIONS_PATH names for every step.
fn collections_path(repository: &Path) -> Result<PathBuf> {
    let root = repository.join("target/ansible/collections");
    let namespace = root.join("ansible_collections/fulcrum");
    std::fs::create_dir_all(&namespace)
        .with_context(|| format!("cannot create {}", namespace.display()))?;
    let link = namespace.join("lvs");
    let target = repository.join("ansible");
    if std::fs::read_link(&link).ok().as_deref() != Some(target.as_path()) {
        let _ = std::fs::remove_file(&link);
        symlink(&target, &link)
            .with_context(|| format!("cannot link {} to {}", link.display(), target.display()))?;
    }
    Ok(root)
}

/// Where the Python tools are: the scripts folder of this machine's
/// `python3`, put first on PATH for every step (so Molecule finds the same
/// ansible-playbook).
struct Tools {
    path: OsString,
}

impl Tools {
    fn ensure() -> Result<Tools> {
        let scripts = python(&[
            "-c",
            "import sysconfig; print(sysconfig.get_path('scripts'))",
        ])?;
        let scripts = PathBuf::from(scripts.trim());
        let missing = PYTHON_PACKAGES.iter().any(|requirement| {
            let (name, version) = requirement
                .split_once("==")
                .expect("every requirement is pinned");
            python(&[
                "-c",
                &format!(
                    "import importlib.metadata as m, sys; \
                     sys.exit(m.version('{name}') != '{version}')"
                ),
            ])
            .is_err()
        });
        if missing {
            eprintln!("xtask: installing {}", PYTHON_PACKAGES.join(" "));
            let status = Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--root-user-action=ignore",
                ])
                .args(PYTHON_PACKAGES)
                .status()
                .context("cannot run python3 -m pip")?;
            if !status.success() {
                bail!(
                    "pip install {} failed ({status})",
                    PYTHON_PACKAGES.join(" ")
                );
            }
        }
        let mut path = OsString::from(&scripts);
        if let Some(inherited) = std::env::var_os("PATH") {
            path.push(":");
            path.push(inherited);
        }
        Ok(Tools { path })
    }

    fn step(
        &self,
        name: &str,
        directory: &Path,
        program: &str,
        arguments: &[&str],
        environment: &[(&str, OsString)],
    ) -> Result<()> {
        eprintln!("xtask: ansible: {name}: {program} {}", arguments.join(" "));
        let status = Command::new(program)
            .args(arguments)
            .current_dir(directory)
            .env("PATH", &self.path)
            .env("ANSIBLE_FORCE_COLOR", "0")
            .envs(environment.iter().map(|(name, value)| (name, value)))
            .status()
            .with_context(|| format!("cannot run {program}"))?;
        if !status.success() {
            bail!(
                "{name} failed: {program} {} ({status})",
                arguments.join(" ")
            );
        }
        Ok(())
    }
}

/// Runs this machine's python3 with `arguments`: its stdout, or an error
/// when it fails.
fn python(arguments: &[&str]) -> Result<String> {
    let output = Command::new("python3")
        .args(arguments)
        .output()
        .context("cannot run python3")?;
    if !output.status.success() {
        bail!(
            "python3 {} failed: {}",
            arguments.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
