//! Whether one script may run, as keepalived 2.2.7 decides it
//! (lib/notify.c `check_script_secure`, `find_path`, `check_security`),
//! with keepalived's log lines word for word.
//!
//! The rules, in keepalived's order:
//!
//! 1. A command starting `<` then `/` (blanks between allowed) only tests
//!    that a file opens: it runs through the shell and is not checked
//!    ([`Findings::system`]).
//! 2. A bare name is looked for along `PATH` (else the C library's default
//!    path) as execvp would, with the script's user's permissions: a
//!    regular file that user may execute. Found, it is replaced by the
//!    whole path, with a warning.
//! 3. The path is resolved (realpath, as the script's user): `/./`, `/../`,
//!    repeated `/` and symbolic links go. A symbolic link to a file of
//!    another name keeps the name it was called by (some programs act on
//!    their name) if that name in the target's directory is the same
//!    file.
//! 4. The file must be executable for the script's user (root: any `x`
//!    bit; the owner: `u+x`; the group: `g+x`; anyone else: `o+x`;
//!    supplementary groups do not count).
//! 5. Only a script run as uid 0 or gid 0, or setuid/setgid root, is
//!    checked further: every prefix of its path (and of the resolved one,
//!    when the name was kept), from `/` down, read without following
//!    links, must be owned by root, and neither a file nor a directory
//!    without the sticky bit may be writable by a group other than root's
//!    or by others. A path that fails is insecure; with
//!    `enable_script_security` it is also inhibited.
//!
//! keepalived changes its effective ids to the script's for steps 2 and 3;
//! pulse runs those steps on a thread of their own whose filesystem ids
//! and groups are the script's (Linux keeps credentials per thread; the
//! raw system calls change only the calling one), so no other thread ever
//! runs with them.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;

use fulcrum_config::model::Account;

/// What the check found (keepalived's `SC_*` flags).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Findings {
    /// `SC_INSECURE`: a part of its path may be changed by someone other
    /// than root.
    pub insecure: bool,
    /// `SC_ISSCRIPT`: a file was found (what makes keepalived say
    /// "SECURITY VIOLATION" without `enable_script_security`).
    pub is_script: bool,
    /// `SC_INHIBIT`: it must not run.
    pub inhibit: bool,
    /// `SC_NOTFOUND`: it, or a part of its path, cannot be found or read.
    pub not_found: bool,
    /// `SC_EXECUTABLE`: its user may execute it.
    pub executable: bool,
    /// `SC_SYSTEM`: a `</path` test, run through the shell unchecked.
    pub system: bool,
}

impl Findings {
    /// What either found.
    pub fn merge(&mut self, other: Findings) {
        self.insecure |= other.insecure;
        self.is_script |= other.is_script;
        self.inhibit |= other.inhibit;
        self.not_found |= other.not_found;
        self.executable |= other.executable;
        self.system |= other.system;
    }
}

/// What the check needs besides the script.
#[derive(Debug, Clone)]
pub struct Context {
    /// The ids this process runs with.
    pub ours: Account,
    /// `enable_script_security`.
    pub security: bool,
    /// Where bare names are looked for: `PATH` when pulse started, else
    /// the C library's default path.
    pub search_path: OsString,
}

impl Context {
    /// This process's ids and `PATH`.
    pub fn of_this_process(security: bool) -> Context {
        Context {
            ours: crate::account::ours(),
            security,
            search_path: std::env::var_os("PATH").unwrap_or_else(default_search_path),
        }
    }
}

/// The C library's default path (`confstr(_CS_PATH)`), where `PATH` is
/// not set.
fn default_search_path() -> OsString {
    let mut buffer = vec![0u8; 256];
    // SAFETY: the buffer is valid for its length; confstr writes at most
    // that many bytes, NUL included.
    let length = unsafe { libc::confstr(libc::_CS_PATH, buffer.as_mut_ptr().cast(), buffer.len()) };
    if length == 0 || length > buffer.len() {
        return OsString::from("/bin:/usr/bin");
    }
    buffer.truncate(length - 1);
    OsString::from_vec(buffer)
}

/// Checks the script whose command line is `argv` (run as `account`), as
/// keepalived's `check_script_secure`: the program may be replaced by the
/// path it was found at or resolves to; each line keepalived logs on the
/// way is pushed to `log`.
pub fn check_script(
    argv: &mut [String],
    account: Account,
    context: &Context,
    log: &mut Vec<String>,
) -> Findings {
    let Some(program) = argv.first() else {
        return Findings::default();
    };
    // A `</path` test of a file being openable is not executed.
    if let Some(rest) = program.strip_prefix('<')
        && rest.trim_start_matches([' ', '\t']).starts_with('/')
    {
        return Findings {
            system: true,
            ..Findings::default()
        };
    }
    let not_found = Findings {
        not_found: true,
        ..Findings::default()
    };
    if !program.contains('/') {
        match find_path(program, account, context) {
            Ok(found) => {
                log.push(format!(
                    "WARNING - script `{program}` resolved by path search to `{found}`. Please \
                     specify full path."
                ));
                argv[0] = found;
            }
            Err(errno) => {
                log.push(if errno == libc::EACCES {
                    format!("Permissions failure for script {program} in path - disabling")
                } else {
                    format!("Cannot find script {program} in path - disabling")
                });
                return not_found;
            }
        }
    }
    if account != context.ours && context.ours.uid != 0 {
        // keepalived's seteuid/setegid fail unless it runs as root.
        log.push(format!(
            "Unable to set uid:gid {}:{} for script {} - disabling",
            account.uid, account.gid, argv[0]
        ));
        return Findings {
            inhibit: true,
            ..Findings::default()
        };
    }
    let program = argv[0].clone();
    let resolved = as_account(account, context.ours, || std::fs::canonicalize(&program));
    let resolved = match resolved {
        Ok(resolved) => resolved.into_os_string().into_string().unwrap_or_default(),
        Err(error) => {
            log.push(format!(
                "Script {program} cannot be accessed - {}",
                strerror(&error)
            ));
            return not_found;
        }
    };
    let mut real_file_path = None;
    if program != resolved {
        let mut new_path = resolved.clone();
        let (original_name, resolved_name) = (file_part(&program), file_part(&resolved));
        if original_name != resolved_name {
            // Called by another name than its target's: keep the name, if
            // that name in the target's directory is the same file.
            let directory = &resolved[..resolved.len() - resolved_name.len()];
            let named = format!("{directory}{original_name}");
            let same_file = match (std::fs::metadata(&resolved), std::fs::metadata(&named)) {
                (Ok(real), Ok(named)) => real.dev() == named.dev() && real.ino() == named.ino(),
                (Ok(_), Err(_)) => false,
                // keepalived keeps the name when the target cannot be read.
                (Err(_), _) => true,
            };
            if same_file {
                real_file_path = Some(resolved);
                new_path = named;
            }
        }
        if program != new_path {
            argv[0] = new_path;
        }
    }
    let program = &argv[0];
    let file = match std::fs::metadata(real_file_path.as_deref().unwrap_or(program)) {
        Ok(file) => file,
        Err(_) => {
            log.push(format!("Unable to access script `{program}` - disabling"));
            return not_found;
        }
    };
    let mut findings = Findings {
        is_script: true,
        ..Findings::default()
    };
    let mode = file.mode();
    let mut protect = false;
    if is_executable(mode, file.uid(), file.gid(), account) {
        findings.executable = true;
        let setuid_root = file.uid() == 0 && mode & 0o100 != 0 && mode & 0o4000 != 0;
        let setgid_root = file.gid() == 0 && mode & 0o010 != 0 && mode & 0o2000 != 0;
        protect = account.uid == 0 || account.gid == 0 || setuid_root || setgid_root;
    } else {
        log.push(format!(
            "WARNING - script '{program}' is not executable for uid:gid {}:{} - disabling.",
            account.uid, account.gid
        ));
    }
    if !protect {
        return findings;
    }
    findings.merge(check_security(program, context.security, log));
    if let Some(real_file_path) = &real_file_path {
        findings.merge(check_security(real_file_path, context.security, log));
    }
    findings
}

/// keepalived's `is_executable`: root needs any `x` bit; otherwise the
/// owner's, the group's or the others' bit, whichever class `account`
/// falls in (by its primary group only).
pub fn is_executable(mode: u32, owner: u32, group: u32, account: Account) -> bool {
    (account.uid == 0 && mode & 0o111 != 0)
        || (account.uid == owner && mode & 0o100 != 0)
        || (account.uid != owner
            && ((account.gid == group && mode & 0o010 != 0)
                || (account.gid != group && mode & 0o001 != 0)))
}

/// The part after the last `/`.
fn file_part(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// keepalived's `find_path` (glibc's execvpe search): the first regular
/// file along the search path that `account` may execute; the errno
/// otherwise (EACCES when one was found that it may not execute).
fn find_path(file: &str, account: Account, context: &Context) -> Result<String, i32> {
    if file.is_empty() {
        return Err(libc::ENOENT);
    }
    if file.len() >= libc::PATH_MAX as usize || file.len() > 255 {
        return Err(libc::ENAMETOOLONG);
    }
    let search_path = context.search_path.clone();
    as_account(account, context.ours, move || {
        let mut denied = false;
        for directory in search_path.as_bytes().split(|byte| *byte == b':') {
            // An empty entry is the current directory, as execvp has it.
            let candidate = if directory.is_empty() {
                file.to_owned()
            } else {
                format!("{}/{file}", String::from_utf8_lossy(directory))
            };
            match std::fs::metadata(&candidate) {
                Ok(found) => {
                    if found.is_file()
                        && is_executable(found.mode(), found.uid(), found.gid(), account)
                    {
                        return Ok(candidate);
                    }
                    denied = true;
                }
                Err(error) => match error.raw_os_error() {
                    Some(
                        libc::ENOEXEC
                        | libc::EACCES
                        | libc::ENOENT
                        | libc::ESTALE
                        | libc::ENOTDIR
                        | libc::ENODEV
                        | libc::ETIMEDOUT,
                    ) => {}
                    // Another error: something was found but cannot be
                    // used; keepalived gives up there.
                    _ => return Err(-1),
                },
            }
        }
        Err(if denied { libc::EACCES } else { libc::ENOENT })
    })
}

/// keepalived's `check_security`: every prefix of `filename` from `/`
/// down, read without following links, must be owned by root and not
/// writable by another group or by others (a directory with the sticky
/// bit may be).
fn check_security(filename: &str, security: bool, log: &mut Vec<String>) -> Findings {
    let bytes = filename.as_bytes();
    let mut prefixes: Vec<&[u8]> = bytes
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'/')
        .map(|(index, _)| {
            if index == 0 {
                &bytes[..1]
            } else {
                &bytes[..index]
            }
        })
        .collect();
    prefixes.push(bytes);
    let last = prefixes.len() - 1;
    for (position, prefix) in prefixes.into_iter().enumerate() {
        let is_last = position == last;
        let status = match std::fs::symlink_metadata(OsStr::from_bytes(prefix)) {
            Ok(status) => status,
            Err(error) => {
                let errno = error.raw_os_error().unwrap_or(0);
                log.push(
                    if matches!(
                        errno,
                        libc::EACCES | libc::ELOOP | libc::ENOENT | libc::ENOTDIR
                    ) {
                        format!(
                            "check_script_secure could not find script '{filename}' - disabling"
                        )
                    } else {
                        format!(
                            "check_script_secure('{filename}') returned errno {errno} - {} - \
                             disabling",
                            strerror(&error)
                        )
                    },
                );
                return Findings {
                    not_found: true,
                    ..Findings::default()
                };
            }
        };
        let kind = status.file_type();
        if (!is_last && !kind.is_dir()) || (is_last && !kind.is_file() && !kind.is_symlink()) {
            log.push(format!(
                "Wrong file type found in script path '{filename}'."
            ));
            return Findings {
                inhibit: true,
                ..Findings::default()
            };
        }
        let mode = status.mode();
        let sticky = mode & 0o1000 != 0;
        let writable = (status.gid() != 0 && mode & 0o020 != 0) || mode & 0o002 != 0;
        if status.uid() != 0 || (((kind.is_dir() && !sticky) || kind.is_file()) && writable) {
            log.push(format!(
                "Unsafe permissions found for script '{filename}'{}.",
                if security { " - disabling" } else { "" }
            ));
            return Findings {
                insecure: true,
                inhibit: security,
                ..Findings::default()
            };
        }
    }
    Findings::default()
}

/// The C library's text for an error (`strerror`), without Rust's
/// " (os error N)".
pub fn strerror(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.rfind(" (os error ") {
        Some(end) => text[..end].to_owned(),
        None => text,
    }
}

/// Runs `work` with `account`'s filesystem ids and `[gid]` as its groups,
/// as keepalived's seteuid/setegid/setgroups around its path search and
/// realpath: on a thread of its own, since Linux keeps credentials per
/// thread and the raw system calls (not the C library's wrappers, which
/// change every thread) change only the calling one. Going from uid 0 to
/// another fsuid drops the filesystem capabilities (CAP_DAC_OVERRIDE...)
/// of that thread too, so root's bypass of permissions does not apply.
fn as_account<T: Send>(account: Account, ours: Account, work: impl FnOnce() -> T + Send) -> T {
    if account == ours {
        return work();
    }
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let groups = [account.gid as libc::gid_t];
                // SAFETY: raw system calls with valid arguments; they
                // change this thread's credentials only, and the thread
                // ends with `work`.
                unsafe {
                    if account.gid != ours.gid || account.uid != ours.uid {
                        libc::syscall(libc::SYS_setgroups, 1, groups.as_ptr());
                    }
                    if account.gid != ours.gid {
                        libc::syscall(libc::SYS_setfsgid, account.gid);
                    }
                    if account.uid != ours.uid {
                        libc::syscall(libc::SYS_setfsuid, account.uid);
                    }
                }
                work()
            })
            .join()
            .expect("the check does not panic")
    })
}

/// The command as keepalived prints it (notify.c `cmd_str`): each word in
/// single quotes, except a first word starting `<` or `>` (a shell
/// redirection).
pub fn quoted_command(argv: &[String]) -> String {
    argv.iter()
        .enumerate()
        .map(|(index, word)| {
            if index == 0 && (word.starts_with('<') || word.starts_with('>')) {
                word.clone()
            } else {
                format!("'{word}'")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
