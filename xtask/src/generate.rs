//! The man pages and shell completions of pulse, nanny and fulcrum-agent,
//! written by `cargo xtask generate` into each crate's `doc/` with
//! clap_mangen and clap_complete from the one definition each command line
//! is parsed by: nanny's and the agent's clap definitions, and pulse's
//! option table (`pulse::cli::command`, which describes keepalived's
//! command line to clap without parsing it). ipvsctl's come from its own
//! generator (its command line is ipvsadm's).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

/// One generated file: its path in the repository, and what it holds.
pub struct Generated {
    pub path: PathBuf,
    pub contents: Vec<u8>,
}

/// Every generated file: per binary, its man page (section 8, with its
/// own sections after the options: signals, exit statuses) and one per
/// subcommand, then its bash, zsh and fish
/// completions, named as ipvsctl's are.
pub fn files() -> Vec<Generated> {
    let binaries = [
        ("pulse/doc", pulse::cli::command(), pulse::cli::MAN_SECTIONS),
        (
            "nanny/doc",
            nanny::cli::Arguments::command(),
            nanny::cli::MAN_SECTIONS,
        ),
        (
            "agent/doc",
            fulcrum_agent::cli::Arguments::command(),
            fulcrum_agent::cli::MAN_SECTIONS,
        ),
    ];
    let mut files = Vec::new();
    for (directory, mut command, sections) in binaries {
        let name = command.get_name().to_owned();
        let directory = Path::new(directory);
        let mut page = Vec::new();
        clap_mangen::Man::new(command.clone())
            .section("8")
            .render(&mut page)
            .expect("writing into memory");
        for (title, text) in sections {
            page.extend_from_slice(format!(".SH \"{title}\"\n{text}\n").as_bytes());
        }
        files.push(Generated {
            path: directory.join(format!("{name}.8")),
            contents: page,
        });
        // The pages the main one names under SUBCOMMANDS (`nanny-digest(8)`).
        command.build();
        // (clap's own `help` subcommand, added by the build, has none.)
        for subcommand in command
            .get_subcommands()
            .filter(|subcommand| subcommand.get_name() != "help")
        {
            let full_name = format!("{name}-{}", subcommand.get_name());
            let mut page = Vec::new();
            clap_mangen::Man::new(subcommand.clone())
                .section("8")
                .render(&mut page)
                .expect("writing into memory");
            files.push(Generated {
                path: directory.join(format!("{full_name}.8")),
                contents: page,
            });
        }
        for (shell, file) in [
            (Shell::Bash, format!("{name}.bash")),
            (Shell::Zsh, format!("_{name}")),
            (Shell::Fish, format!("{name}.fish")),
        ] {
            let mut contents = Vec::new();
            clap_complete::generate(shell, &mut command, &name, &mut contents);
            files.push(Generated {
                path: directory.join(file),
                contents,
            });
        }
    }
    files
}

/// Writes the files that differ from what `repository` holds; their paths.
pub fn write_all(repository: &Path) -> Result<Vec<PathBuf>> {
    let mut changed = Vec::new();
    for file in files() {
        let path = repository.join(&file.path);
        if std::fs::read(&path).ok().as_deref() == Some(file.contents.as_slice()) {
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot make {}", parent.display()))?;
        }
        std::fs::write(&path, &file.contents)
            .with_context(|| format!("cannot write {}", path.display()))?;
        changed.push(file.path);
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed man pages and completions are what the command lines
    /// make now.
    #[test]
    fn committed_files_are_current() {
        let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let stale: Vec<String> = files()
            .into_iter()
            .filter(|file| {
                std::fs::read(repository.join(&file.path)).ok().as_deref()
                    != Some(file.contents.as_slice())
            })
            .map(|file| file.path.display().to_string())
            .collect();
        assert!(
            stale.is_empty(),
            "{} differ from their command lines: run `cargo xtask generate` and commit the \
             result",
            stale.join(", ")
        );
    }

    /// Each man page is read by groff without a warning, where groff is
    /// installed.
    #[test]
    fn the_man_pages_are_clean_roff() {
        for file in files() {
            if file
                .path
                .extension()
                .is_none_or(|extension| extension != "8")
            {
                continue;
            }
            let output = std::process::Command::new("groff")
                .args(["-man", "-Tutf8", "-ww", "-z"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut child| {
                    use std::io::Write;
                    child
                        .stdin
                        .take()
                        .expect("piped")
                        .write_all(&file.contents)?;
                    child.wait_with_output()
                });
            match output {
                Ok(output) => assert!(
                    output.status.success() && output.stderr.is_empty(),
                    "{}: {}",
                    file.path.display(),
                    String::from_utf8_lossy(&output.stderr)
                ),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    eprintln!("skipped: groff is not installed");
                    return;
                }
                Err(error) => panic!("cannot run groff: {error}"),
            }
        }
    }
}
