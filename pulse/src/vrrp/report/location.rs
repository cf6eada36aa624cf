//! Where keepalived writes its dumps: in its temporary directory, or where
//! `state_dump_file`, `stats_dump_file` and `json_dump_file` (keepalived
//! 2.3.3) say.
//!
//! keepalived's temporary directory is `$TMPDIR` when that is an absolute
//! path, else its build's `KA_TMP_DIR` (`configure --with-tmp-dir`, /tmp by
//! default and in Debian's build): `set_tmp_dir` in lib/utils.c, the same
//! from 2.2.5 to 2.4.3. `KA_TMP_DIR` is not read from the environment.
//!
//! A dump file's path is resolved as keepalived's `open_dump_file`
//! (core/global_data.c) resolves `state_dump_file`: an absolute path
//! ending in '/' is a directory for the usual name, another absolute path
//! the file itself; a relative path is only a name, in the temporary
//! directory (keepalived drops its directories), and the usual name there
//! when it ends in '/'. keepalived (2.3.3 to 2.4.3, and its master in
//! August 2026) reads `stats_dump_file` and `json_dump_file` but still
//! writes keepalived.stats and keepalived.json in its temporary
//! directory; pulse resolves them as `state_dump_file`, as keepalived's
//! man pages describe them. `data_use_instance` changes no name here:
//! keepalived adds the instance's name and network namespace, which pulse
//! does not take (`instance`, `net_namespace`, `-s`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// keepalived's `KA_TMP_DIR` as Debian builds it.
const BUILD_TEMPORARY_DIRECTORY: &str = "/tmp";

/// The temporary directory for this process's environment.
pub fn temporary_directory() -> PathBuf {
    temporary_directory_for(std::env::var_os("TMPDIR").as_deref())
}

/// The temporary directory given `$TMPDIR`'s value: it if absolute, else
/// /tmp (an empty or relative one is not used, as Rust's
/// `std::env::temp_dir` would).
pub fn temporary_directory_for(variable: Option<&OsStr>) -> PathBuf {
    match variable {
        Some(directory) if Path::new(directory).is_absolute() => PathBuf::from(directory),
        _ => PathBuf::from(BUILD_TEMPORARY_DIRECTORY),
    }
}

/// Where a dump goes: `configured` is its `*_dump_file` as written (none:
/// the temporary directory), `usual_name` its name there
/// (`keepalived.json`).
pub fn dump_path(
    configured: Option<&str>,
    usual_name: &str,
    temporary_directory: &Path,
) -> PathBuf {
    match configured {
        None => temporary_directory.join(usual_name),
        Some(path) if path.starts_with('/') => {
            if path.ends_with('/') {
                Path::new(path).join(usual_name)
            } else {
                PathBuf::from(path)
            }
        }
        Some(path) => match path.rsplit('/').next() {
            Some(name) if !name.is_empty() => temporary_directory.join(name),
            _ => temporary_directory.join(usual_name),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temporary_directory_is_an_absolute_tmpdir_else_tmp() {
        for (variable, directory) in [
            (None, "/tmp"),
            (Some("/run/pulse"), "/run/pulse"),
            (Some("/run/pulse/"), "/run/pulse/"),
            // keepalived takes $TMPDIR only if it starts with '/'.
            (Some(""), "/tmp"),
            (Some("dumps"), "/tmp"),
            (Some("./dumps"), "/tmp"),
        ] {
            assert_eq!(
                temporary_directory_for(variable.map(OsStr::new)),
                PathBuf::from(directory),
                "{variable:?}"
            );
        }
    }

    /// keepalived 2.3.3's `open_dump_file`, case by case, for the VRRP
    /// process's keepalived.data (whose suffix is empty).
    #[test]
    fn dump_files_are_resolved_as_keepalived_resolves_them() {
        let temporary = Path::new("/var/tmp/ka");
        for (configured, path) in [
            (None, "/var/tmp/ka/keepalived.data"),
            // Absolute: a directory for the usual name, or the file.
            (Some("/run/dumps/"), "/run/dumps/keepalived.data"),
            (Some("/run/dumps/vrrp.data"), "/run/dumps/vrrp.data"),
            (Some("/run/dumps/vrrp"), "/run/dumps/vrrp"),
            (Some("/vrrp.data"), "/vrrp.data"),
            (Some("/"), "/keepalived.data"),
            // Relative: its last name in the temporary directory.
            (Some("vrrp.data"), "/var/tmp/ka/vrrp.data"),
            (Some("dumps/vrrp.data"), "/var/tmp/ka/vrrp.data"),
            (Some("dumps/"), "/var/tmp/ka/keepalived.data"),
            (Some("./"), "/var/tmp/ka/keepalived.data"),
        ] {
            assert_eq!(
                dump_path(configured, "keepalived.data", temporary),
                PathBuf::from(path),
                "{configured:?}"
            );
        }
    }

    #[test]
    fn each_dump_keeps_its_usual_name_in_a_directory() {
        let temporary = Path::new("/tmp");
        assert_eq!(
            dump_path(None, "keepalived.json", temporary),
            PathBuf::from("/tmp/keepalived.json")
        );
        assert_eq!(
            dump_path(Some("/run/exporter/"), "keepalived.stats", temporary),
            PathBuf::from("/run/exporter/keepalived.stats")
        );
        assert_eq!(
            dump_path(Some("state.json"), "keepalived.json", temporary),
            PathBuf::from("/tmp/state.json")
        );
    }
}
