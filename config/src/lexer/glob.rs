//! glibc's `glob()` as keepalived calls it for `include`: `GLOB_MARK |
//! GLOB_BRACE | GLOB_ALTDIRFUNC`, counting missing files and directories
//! the way keepalived's `gl_lstat`/`gl_opendir` hooks do.
//!
//! Written by hand rather than with the `glob` crate: keepalived's include
//! checks need to know which brace alternatives matched nothing and whether
//! a wildcard was involved, and glibc sorts each brace alternative's matches
//! separately, which the crate does not model.

use std::path::{Path, PathBuf};

/// What one `include` pattern matched.
#[derive(Debug, Default)]
pub(crate) struct GlobResult {
    /// In glibc's order: brace alternatives in order, each sorted.
    pub matches: Vec<Match>,
    /// Literal paths that do not exist (keepalived's `missing_files`).
    pub missing_files: usize,
    /// Directories that could not be opened (`missing_directories`).
    pub missing_directories: usize,
    /// Whether a wildcard had to be expanded (`have_wildcards`).
    pub have_wildcards: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Match {
    /// As glob returns it: relative patterns give relative paths.
    pub path: String,
    /// `GLOB_MARK`: a directory (keepalived skips it).
    pub is_directory: bool,
}

/// At most this many brace alternatives per pattern.
const ALTERNATIVE_LIMIT: usize = 1024;

/// Expands `pattern` (relative paths are taken relative to `base`).
pub(crate) fn glob(pattern: &str, base: &Path) -> GlobResult {
    let mut result = GlobResult::default();
    for alternative in expand_braces(pattern) {
        let mut matches = Vec::new();
        glob_one(&alternative, base, &mut result, &mut matches);
        matches
            .sort_by(|left: &Match, right: &Match| left.path.as_bytes().cmp(right.path.as_bytes()));
        result.matches.extend(matches);
    }
    result
}

/// keepalived's `have_brace`: an unescaped `{`.
pub(crate) fn has_brace(pattern: &str) -> bool {
    let bytes = pattern.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'\\' => index += 2,
            b'{' => return true,
            _ => index += 1,
        }
    }
    false
}

/// csh-style brace expansion as glibc's `GLOB_BRACE` does it: the first
/// unescaped `{` with a matching `}` splits on its top-level commas,
/// recursively; an unmatched `{` is taken literally; a lone `{}` is kept.
pub(crate) fn expand_braces(pattern: &str) -> Vec<String> {
    let mut out = Vec::new();
    expand_into(pattern, &mut out);
    out
}

fn expand_into(pattern: &str, out: &mut Vec<String>) {
    if out.len() >= ALTERNATIVE_LIMIT {
        return;
    }
    let bytes = pattern.as_bytes();
    if pattern == "{}" {
        out.push(pattern.to_string());
        return;
    }
    let mut index = 0;
    let mut open = None;
    while index < bytes.len() {
        match bytes[index] {
            b'\\' => index += 1,
            b'{' => {
                open = Some(index);
                break;
            }
            _ => {}
        }
        index += 1;
    }
    let Some(open) = open else {
        out.push(pattern.to_string());
        return;
    };
    let mut depth = 0;
    let mut commas = Vec::new();
    let mut close = None;
    let mut index = open + 1;
    while index < bytes.len() {
        match bytes[index] {
            b'\\' => index += 1,
            b'{' => depth += 1,
            b'}' if depth == 0 => {
                close = Some(index);
                break;
            }
            b'}' => depth -= 1,
            b',' if depth == 0 => commas.push(index),
            _ => {}
        }
        index += 1;
    }
    let Some(close) = close else {
        // An invalid expression: glibc drops GLOB_BRACE and globs literally.
        out.push(pattern.to_string());
        return;
    };
    let prefix = &pattern[..open];
    let suffix = &pattern[close + 1..];
    let mut start = open + 1;
    for end in commas.into_iter().chain(std::iter::once(close)) {
        let alternative = &pattern[start..end];
        expand_into(&format!("{prefix}{alternative}{suffix}"), out);
        start = end + 1;
    }
}

fn has_wildcard(component: &str) -> bool {
    let bytes = component.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'\\' => index += 1,
            b'*' | b'?' | b'[' => return true,
            _ => {}
        }
        index += 1;
    }
    false
}

fn unescape(component: &str) -> String {
    let mut out = String::new();
    let mut characters = component.chars();
    while let Some(character) = characters.next() {
        if character == '\\' {
            if let Some(next) = characters.next() {
                out.push(next);
            }
        } else {
            out.push(character);
        }
    }
    out
}

fn glob_one(pattern: &str, base: &Path, result: &mut GlobResult, matches: &mut Vec<Match>) {
    if pattern.is_empty() {
        return;
    }
    let absolute = pattern.starts_with('/');
    let components: Vec<&str> = pattern.split('/').filter(|part| !part.is_empty()).collect();
    // Each candidate: the path as glob prints it, and where it is on disk.
    let mut candidates: Vec<(String, PathBuf)> = vec![(
        if absolute {
            "/".to_string()
        } else {
            String::new()
        },
        if absolute {
            PathBuf::from("/")
        } else {
            base.to_path_buf()
        },
    )];
    for (position, component) in components.iter().enumerate() {
        let last = position + 1 == components.len();
        let mut next = Vec::new();
        for (shown, real) in candidates {
            let join = |name: &str| {
                let shown = if shown.is_empty() || shown.ends_with('/') {
                    format!("{shown}{name}")
                } else {
                    format!("{shown}/{name}")
                };
                (shown, real.join(name))
            };
            if has_wildcard(component) {
                result.have_wildcards = true;
                let Ok(entries) = std::fs::read_dir(&real) else {
                    result.missing_directories += 1;
                    continue;
                };
                let mut names: Vec<String> = entries
                    .filter_map(|entry| entry.ok())
                    .filter_map(|entry| entry.file_name().into_string().ok())
                    .filter(|name| fnmatch(component.as_bytes(), name.as_bytes()))
                    .collect();
                names.sort();
                for name in names {
                    let (shown, real) = join(&name);
                    if !last && !real.is_dir() {
                        continue;
                    }
                    next.push((shown, real));
                }
            } else {
                let (shown, real) = join(&unescape(component));
                if std::fs::symlink_metadata(&real).is_err() {
                    result.missing_files += 1;
                    continue;
                }
                next.push((shown, real));
            }
        }
        candidates = next;
    }
    if components.is_empty() {
        // "/" itself.
        candidates.retain(|(_, real)| real.exists());
    }
    for (shown, real) in candidates {
        let is_directory = real.is_dir();
        matches.push(Match {
            path: if is_directory && !shown.ends_with('/') {
                format!("{shown}/")
            } else {
                shown
            },
            is_directory,
        });
    }
}

/// `fnmatch(pattern, name, 0)` for one path component, with glob's rule
/// that a leading `.` must be matched literally.
pub(crate) fn fnmatch(pattern: &[u8], name: &[u8]) -> bool {
    if name.first() == Some(&b'.') && pattern.first() != Some(&b'.') {
        return false;
    }
    match_from(pattern, name, 0)
}

fn match_from(pattern: &[u8], name: &[u8], depth: usize) -> bool {
    if depth > 64 {
        return false;
    }
    let (mut pattern_index, mut name_index) = (0, 0);
    while pattern_index < pattern.len() {
        match pattern[pattern_index] {
            b'*' => {
                while pattern.get(pattern_index) == Some(&b'*') {
                    pattern_index += 1;
                }
                if pattern_index == pattern.len() {
                    return true;
                }
                return (name_index..=name.len())
                    .any(|start| match_from(&pattern[pattern_index..], &name[start..], depth + 1));
            }
            b'?' => {
                if name_index >= name.len() {
                    return false;
                }
                pattern_index += 1;
                name_index += 1;
            }
            b'[' => {
                let Some(&byte) = name.get(name_index) else {
                    return false;
                };
                match bracket(pattern, pattern_index, byte) {
                    Some((matched, end)) => {
                        if !matched {
                            return false;
                        }
                        pattern_index = end;
                        name_index += 1;
                    }
                    None => {
                        // No closing ']': a literal '['.
                        if byte != b'[' {
                            return false;
                        }
                        pattern_index += 1;
                        name_index += 1;
                    }
                }
            }
            literal => {
                let literal = if literal == b'\\' && pattern_index + 1 < pattern.len() {
                    pattern_index += 1;
                    pattern[pattern_index]
                } else {
                    literal
                };
                if name.get(name_index) != Some(&literal) {
                    return false;
                }
                pattern_index += 1;
                name_index += 1;
            }
        }
    }
    name_index == name.len()
}

/// `[...]` at `start`: whether `byte` matches, and the index after `]`.
fn bracket(pattern: &[u8], start: usize, byte: u8) -> Option<(bool, usize)> {
    let mut index = start + 1;
    let negated = matches!(pattern.get(index), Some(b'!' | b'^'));
    if negated {
        index += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let current = *pattern.get(index)?;
        if current == b']' && !first {
            return Some((matched != negated, index + 1));
        }
        first = false;
        let low = if current == b'\\' {
            index += 1;
            *pattern.get(index)?
        } else {
            current
        };
        if pattern.get(index + 1) == Some(&b'-')
            && pattern.get(index + 2).is_some_and(|&high| high != b']')
        {
            let high = pattern[index + 2];
            if low <= byte && byte <= high {
                matched = true;
            }
            index += 3;
        } else {
            if low == byte {
                matched = true;
            }
            index += 1;
        }
    }
}
