//! Users and groups by name, as keepalived resolves a script's user
//! (notify.c `set_uid_gid`: getpwnam_r, then getgrnam_r for a group given),
//! and the ids this process runs with.

use std::ffi::CString;

use fulcrum_config::model::Account;

/// Why a user or group name gives no account, in keepalived's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccountError {
    #[error("Unable to resolve script username '{0}' - ignoring")]
    UnresolvedUser(String),
    #[error("Script user '{0}' does not exist")]
    NoSuchUser(String),
    #[error("Unable to resolve script group name '{0}' - ignoring")]
    UnresolvedGroup(String),
    #[error("Script group '{0}' does not exist")]
    NoSuchGroup(String),
}

/// Where accounts come from: the system's databases, or a table in tests.
pub trait Accounts {
    /// `user`'s id and primary group; `group`'s id instead when given.
    fn lookup(&self, user: &str, group: Option<&str>) -> Result<Account, AccountError>;
}

/// The system's users and groups (nsswitch: /etc/passwd, LDAP...).
#[derive(Debug, Clone, Copy, Default)]
pub struct System;

impl Accounts for System {
    fn lookup(&self, user: &str, group: Option<&str>) -> Result<Account, AccountError> {
        let (uid, primary) = passwd(user)
            .ok_or_else(|| AccountError::UnresolvedUser(user.to_owned()))?
            .ok_or_else(|| AccountError::NoSuchUser(user.to_owned()))?;
        let gid = match group {
            None => primary,
            Some(group) => group_id(group)
                .ok_or_else(|| AccountError::UnresolvedGroup(group.to_owned()))?
                .ok_or_else(|| AccountError::NoSuchGroup(group.to_owned()))?,
        };
        Ok(Account { uid, gid })
    }
}

/// The ids this process runs with (keepalived's `our_uid`, `our_gid`:
/// the effective ones).
pub fn ours() -> Account {
    // SAFETY: geteuid and getegid have no preconditions.
    unsafe {
        Account {
            uid: libc::geteuid(),
            gid: libc::getegid(),
        }
    }
}

/// The buffer getpwnam_r and getgrnam_r need, as keepalived sizes it.
fn buffer_length() -> usize {
    // SAFETY: sysconf has no memory effects.
    let (passwd, group) = unsafe {
        (
            libc::sysconf(libc::_SC_GETPW_R_SIZE_MAX),
            libc::sysconf(libc::_SC_GETGR_R_SIZE_MAX),
        )
    };
    let passwd = if passwd == -1 { 1024 } else { passwd as usize };
    passwd.max(group.max(0) as usize)
}

/// `Some(None)`: no such user; `None`: the lookup itself failed.
fn passwd(name: &str) -> Option<Option<(u32, u32)>> {
    // SAFETY: getpwnam_r with the pointers `reentrant` hands it.
    reentrant(
        name,
        |name, record: &mut libc::passwd, buffer, length, entry| unsafe {
            libc::getpwnam_r(name, record, buffer, length, entry)
        },
    )
    .map(|found| found.map(|record| (record.pw_uid, record.pw_gid)))
}

fn group_id(name: &str) -> Option<Option<u32>> {
    // SAFETY: getgrnam_r with the pointers `reentrant` hands it.
    reentrant(
        name,
        |name, record: &mut libc::group, buffer, length, entry| unsafe {
            libc::getgrnam_r(name, record, buffer, length, entry)
        },
    )
    .map(|found| found.map(|record| record.gr_gid))
}

/// One of the C library's `get*nam_r`: `Some(None)` when `name` has no
/// entry, `None` when the lookup failed. The record's strings point into
/// the buffer, so only its numbers are to be read from what is returned.
fn reentrant<Record: Copy>(
    name: &str,
    lookup: impl Fn(
        *const libc::c_char,
        &mut Record,
        *mut libc::c_char,
        usize,
        *mut *mut Record,
    ) -> libc::c_int,
) -> Option<Option<Record>> {
    let name = CString::new(name).ok()?;
    let mut buffer = vec![0 as libc::c_char; buffer_length()];
    loop {
        // SAFETY: a C record of integers and pointers, all-zero is valid.
        let mut record: Record = unsafe { std::mem::zeroed() };
        let mut entry: *mut Record = std::ptr::null_mut();
        match lookup(
            name.as_ptr(),
            &mut record,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut entry,
        ) {
            0 if entry.is_null() => return Some(None),
            0 => return Some(Some(record)),
            // keepalived's buffer is sysconf's size; a longer entry is
            // read with a larger one rather than failed.
            libc::ERANGE => buffer.resize(buffer.len() * 2, 0),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_uid_0_and_an_unknown_user_is_said_as_keepalived_says_it() {
        assert_eq!(System.lookup("root", None), Ok(Account { uid: 0, gid: 0 }));
        assert_eq!(
            System.lookup("no-such-user-here", None),
            Err(AccountError::NoSuchUser("no-such-user-here".into()))
        );
        assert_eq!(
            System
                .lookup("root", Some("no-such-group-here"))
                .unwrap_err()
                .to_string(),
            "Script group 'no-such-group-here' does not exist"
        );
    }
}
