//! Reading a configuration again after an edit: only the `virtual_server`
//! block the edit is in, when that gives what reading the whole file would.
//!
//! A reload of a large configuration usually changes one virtual server (a
//! weight, a real server's address). Reading the whole file again costs
//! the whole file: at 1,000 virtual servers, about 7 ms natively and about
//! 0.1 s in the lab's emulated guest, where keepalived's whole reload takes
//! 0.75 s. [`load_again`] compares the new text with the one the previous
//! [`Loaded`] was read from and reads again only the block the difference
//! lies in. Its rules, each a condition of the fast way (otherwise the
//! whole file is read, by [`load`]):
//!
//! - **One plain file.** The previous load read one file, found no problem
//!   in its lines or its blocks' shape (lexer and tree; a problem there can
//!   change how the lines after it are read), and its text uses nothing
//!   that carries meaning from one line to a later one: no `$` (definitions
//!   and their uses), no `~SEQ`, no `include`, no `@` conditional (an `@`
//!   right after a word, as in an e-mail address, is not one). Then the
//!   lexer starts every line in the same state, and a line's words depend
//!   on that line alone.
//! - **One block changed, its lines kept.** The bytes that differ lie
//!   within the lines of one top-level `virtual_server` block that has its
//!   lines to itself, and the edit adds or removes no line. The lines
//!   before and after are then the same lines with the same numbers, read
//!   into the same model with the same diagnostics (the tree builder is
//!   back at the top level after the block, as it was).
//! - **The block alone is one clean virtual_server block.** Its new lines,
//!   read by themselves (with their line numbers), give one top-level
//!   `virtual_server` node and no lexer or tree problem. Its reading then
//!   depends only on its own lines; what the whole file adds at the end
//!   (the group the block names, global `smtp_alert`, the objects its
//!   checkers reference) is taken from the previous model, whose other
//!   blocks are unchanged.
//!
//! The result is the whole read's model. Its diagnostics are the same set:
//! the previous ones outside the block and the block's new ones, which come
//! where the block's old ones were (a whole read orders them by phase, and
//! pulse sorts them by place before showing them).

use std::io::Read as _;
use std::ops::{Range, RangeInclusive};
use std::path::Path;

use crate::diagnostic::Diagnostics;
use crate::grammar;
use crate::lexer::{self, Options};
use crate::load::{Again, Loaded, load, plain};
use crate::syntax::{FileId, SourceFile, Sources};

/// How a configuration was read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reread {
    /// The text had not changed.
    Unchanged,
    /// One virtual server block was read again, the rest kept.
    OneBlock,
    /// The whole file was read.
    Whole,
}

/// Reads the configuration at `path` again, `previous` being its last
/// load: only the block an edit is in when the module's rules allow, else
/// the whole file. Also says which it did.
pub fn load_again(previous: Loaded, path: &Path, options: &Options) -> (Loaded, Reread) {
    match one_block(previous, path, options) {
        Some(again) => again,
        None => (load(path, options), Reread::Whole),
    }
}

/// [`load_again`]'s fast way; `None` where a rule does not hold.
fn one_block(mut previous: Loaded, path: &Path, options: &Options) -> Option<(Loaded, Reread)> {
    let again = previous.again.as_ref()?;
    let old_source = previous.sources.files.first()?;
    if previous.sources.files.len() != 1 || old_source.name != path.to_string_lossy() {
        return None;
    }
    let mut file = std::fs::File::open(path).ok()?;
    let metadata = file.metadata().ok()?;
    let mut text = Vec::with_capacity(metadata.len() as usize);
    file.read_to_end(&mut text).ok()?;
    let old: &[u8] = old_source.text()?.as_bytes();
    let source = |bytes: Vec<u8>| {
        SourceFile::on_disk_with_bytes(
            old_source.name.clone(),
            path.to_path_buf(),
            &metadata,
            bytes,
        )
    };
    if text == old {
        let mut sources = Sources::default();
        sources.add(source(text));
        return Some((
            Loaded {
                sources,
                diagnostics: previous.diagnostics,
                config: previous.config,
                again: previous.again,
            },
            Reread::Unchanged,
        ));
    }
    // The bytes that differ: `old[changed.clone()]` became
    // `text[changed.start..changed.end + grown]`.
    let prefix = common_prefix(old, &text);
    let suffix = common_suffix(&old[prefix..], &text[prefix..]);
    let changed = prefix..old.len() - suffix;
    let new_changed = prefix..text.len() - suffix;
    let changed_newlines = memchr::memchr_iter(b'\n', &old[changed.clone()]).count();
    if changed_newlines != memchr::memchr_iter(b'\n', &text[new_changed]).count() {
        return None;
    }
    // The lines holding the difference (1-based), then the block they are
    // in. The prefix is scanned once: the rest is counted from its end.
    let first_changed = memchr::memchr_iter(b'\n', &old[..changed.start]).count() as u32 + 1;
    let ends_a_line = changed.end > changed.start && old[changed.end - 1] == b'\n';
    let last_changed = first_changed + changed_newlines as u32 - ends_a_line as u32;
    let index = again
        .items
        .partition_point(|item| item.last < first_changed);
    let item = again.items.get(index)?;
    if !item.virtual_server
        || item.first > first_changed
        || item.last < last_changed
        || index > 0 && again.items[index - 1].last >= item.first
        || again
            .items
            .get(index + 1)
            .is_some_and(|next| next.first <= item.last)
    {
        return None;
    }
    let lines = lines_around(old, changed.start, first_changed, item.first..=item.last);
    let grown = text.len() as isize - old.len() as isize;
    let block = &text[lines.start..(lines.end as isize + grown) as usize];
    if !plain(block) {
        return None;
    }
    // The block by itself, its lines numbered as in the file.
    let mut scratch_sources = Sources::default();
    let mut lexer_diagnostics = Diagnostics::default();
    let mut read_diagnostics = Diagnostics::default();
    let server = {
        let mut lexer = lexer::open_str_at(
            &old_source.name,
            block,
            item.first,
            options,
            &mut scratch_sources,
            &mut lexer_diagnostics,
        );
        grammar::read_virtual_server_alone(&mut lexer, &previous.config, &mut read_diagnostics)
    }?;
    if !lexer_diagnostics.items.is_empty() {
        return None;
    }
    let mut config = std::mem::take(&mut previous.config);
    let before = config.virtual_servers.len();
    let position = again.items[..index]
        .iter()
        .filter(|item| item.made_virtual_server)
        .count();
    let made = server.is_some();
    match (item.made_virtual_server, server) {
        (true, Some(server)) => config.virtual_servers[position] = server,
        (true, None) => {
            config.virtual_servers.remove(position);
        }
        (false, Some(server)) => config.virtual_servers.insert(position, server),
        (false, None) => {}
    }
    debug_assert_eq!(
        config.virtual_servers.len() as isize - before as isize,
        made as isize - item.made_virtual_server as isize
    );
    let index_item = *item;
    let mut items = previous
        .again
        .take()
        .map(|again| again.items)
        .unwrap_or_default();
    items[index].made_virtual_server = made;
    // The block's old diagnostics give way to its new ones, in their place.
    let inside = |span: &crate::syntax::Span| {
        span.file == FileId(0) && (index_item.first..=index_item.last).contains(&span.line)
    };
    let mut diagnostics = Diagnostics::default();
    let mut new_ones = Some(read_diagnostics.items);
    for diagnostic in std::mem::take(&mut previous.diagnostics.items) {
        if inside(&diagnostic.span) {
            diagnostics
                .items
                .extend(new_ones.take().into_iter().flatten());
        } else {
            diagnostics.items.push(diagnostic);
        }
    }
    diagnostics.items.extend(new_ones.into_iter().flatten());
    let mut sources = Sources::default();
    sources.add(source(text));
    Some((
        Loaded {
            sources,
            diagnostics,
            config,
            again: Some(Again { items }),
        },
        Reread::OneBlock,
    ))
}

/// Texts are compared by pages (one memcmp each), then bytes: they are
/// mostly equal.
const PAGE: usize = 4096;

/// The length of the longest common prefix.
fn common_prefix(left: &[u8], right: &[u8]) -> usize {
    let length = left.len().min(right.len());
    let mut at = 0;
    while at + PAGE <= length && left[at..at + PAGE] == right[at..at + PAGE] {
        at += PAGE;
    }
    while at < length && left[at] == right[at] {
        at += 1;
    }
    at
}

/// The length of the longest common suffix.
fn common_suffix(left: &[u8], right: &[u8]) -> usize {
    let length = left.len().min(right.len());
    let (left, right) = (&left[left.len() - length..], &right[right.len() - length..]);
    let mut at = length;
    while at >= PAGE && left[at - PAGE..at] == right[at - PAGE..at] {
        at -= PAGE;
    }
    while at > 0 && left[at - 1] == right[at - 1] {
        at -= 1;
    }
    length - at
}

/// The bytes of `lines` (1-based, each with its newline), found from byte
/// `at`, which lies on line `line` (one of them): back to the start of the
/// first, on to the end of the last.
fn lines_around(text: &[u8], at: usize, line: u32, lines: RangeInclusive<u32>) -> Range<usize> {
    let (first, last) = (*lines.start(), *lines.end());
    debug_assert!(first <= line && line <= last);
    let start = memchr::memrchr_iter(b'\n', &text[..at])
        .nth((line - first) as usize)
        .map_or(0, |newline| newline + 1);
    let end = memchr::memchr_iter(b'\n', &text[at..])
        .nth((last - line) as usize)
        .map_or(text.len(), |newline| at + newline + 1);
    start..end
}

#[cfg(test)]
mod tests;
