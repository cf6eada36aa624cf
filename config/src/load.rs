//! Reading a whole configuration: files, lines, model.

use std::path::Path;

use crate::diagnostic::Diagnostics;
use crate::grammar::{self, Outline};
use crate::lexer::{self, Options};
use crate::model::Config;
use crate::syntax::{SourceFile, Sources};

/// A configuration as read: the model, every problem found, and the text
/// the problems point into.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub sources: Sources,
    pub diagnostics: Diagnostics,
    pub config: Config,
    /// What [`crate::load_again`] needs to read one block again, when the
    /// load allows it.
    pub(crate) again: Option<Again>,
}

impl Loaded {
    /// Whether [`crate::load_again`] can read one block of this load's file
    /// again rather than the whole file: worth keeping the load for.
    pub fn can_read_one_block_again(&self) -> bool {
        self.again.is_some()
    }
}

/// Reads the configuration at `path` (with its includes) into the model.
/// Never fails: what cannot be read is a diagnostic.
pub fn load(path: &Path, options: &Options) -> Loaded {
    let mut sources = Sources::default();
    let mut diagnostics = Diagnostics::default();
    let mut grammar_diagnostics = Diagnostics::default();
    let mut outline = Outline::default();
    let mut lexer = lexer::open_file(path, options, &mut sources, &mut diagnostics);
    let config =
        crate::grammar::parse_streamed_outlined(&mut lexer, &mut grammar_diagnostics, &mut outline);
    drop(lexer);
    let again = again(&sources, &diagnostics, outline);
    // The lexer's diagnostics first, as if it had read every line before
    // the grammar started.
    diagnostics.items.append(&mut grammar_diagnostics.items);
    Loaded {
        sources,
        diagnostics,
        config,
        again,
    }
}

/// Files from this size on are read on two threads by
/// [`load_on_two_threads`]: below it, a thread costs about what it saves.
const TWO_THREADS_FROM: u64 = 256 * 1024;

/// [`load`], a large plain file (the rules of [`crate::reload`]: no line
/// means anything to a later one but through the blocks it opens and
/// closes) read on two threads, each its own half: the second half from
/// the first `virtual_server` line at the start of a line from the
/// middle on, read as `virtual_server` blocks alone, then joined after the
/// first half's model as one whole read would have it. The outcome is the
/// whole read's, diagnostics included, in the same order (tested on every
/// place of every plain file of the corpus where the second half can
/// start). Where the halves cannot be told apart with certainty (an item
/// other than a `virtual_server` in the second half, a problem in either
/// half's tree, which may mean the split line was inside a block), the
/// file is read whole as [`load`] reads it. On the lab's emulated
/// processors a file of 1,000 virtual servers takes a quarter of a
/// second to read, most of what pulse does before its start's batch.
pub fn load_on_two_threads(path: &Path, options: &Options) -> Loaded {
    load_in_two_parts(path, options, TWO_THREADS_FROM, None).unwrap_or_else(|| load(path, options))
}

/// [`load_on_two_threads`] for a file of at least `from` bytes, its second
/// part starting at byte `at` (at the start of a line; `None`: from the
/// middle, see above); `None` where it cannot.
fn load_in_two_parts(
    path: &Path,
    options: &Options,
    from: u64,
    at: Option<usize>,
) -> Option<Loaded> {
    // The path as the lexer's glob would take it, matching only itself.
    let name = path.to_str()?;
    if name
        .bytes()
        .any(|byte| matches!(byte, b'*' | b'?' | b'[' | b'{' | b'\\'))
    {
        return None;
    }
    let mut file = std::fs::File::open(path).ok()?;
    let metadata = file.metadata().ok()?;
    if !metadata.is_file() || metadata.len() < from {
        return None;
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize + 1);
    std::io::Read::read_to_end(&mut file, &mut bytes).ok()?;
    drop(file);
    if !plain(&bytes) {
        return None;
    }
    let split = match at {
        Some(at) => at,
        None => second_part_start(&bytes)?,
    };
    let first_line = memchr::memchr_iter(b'\n', &bytes[..split]).count() as u32 + 1;
    let length = bytes.len();
    let bytes = std::sync::Arc::new(bytes);
    let mut sources = Sources::default();
    let id = sources.add(SourceFile::on_disk(
        name.to_string(),
        path.to_path_buf(),
        &metadata,
        None,
    ));
    let mut diagnostics = Diagnostics::default();
    let mut tree_diagnostics = Diagnostics::default();
    let mut outline = Outline::default();
    let (first, second) = std::thread::scope(|scope| {
        let second_bytes = bytes.clone();
        let second = scope.spawn(move || {
            let mut sources = Sources::default();
            sources.add(SourceFile::in_memory(name.to_string(), String::new(), None));
            let mut lexer_diagnostics = Diagnostics::default();
            let mut tree_diagnostics = Diagnostics::default();
            let mut outline = Outline::default();
            let part = {
                let mut lexer = lexer::open_part(
                    id,
                    second_bytes,
                    split..length,
                    first_line,
                    options,
                    &mut sources,
                    &mut lexer_diagnostics,
                );
                grammar::read_streamed_part(&mut lexer, &mut tree_diagnostics, &mut outline, true)
            };
            (part, lexer_diagnostics, tree_diagnostics, outline)
        });
        let first = {
            let mut lexer = lexer::open_part(
                id,
                bytes.clone(),
                0..split,
                1,
                options,
                &mut sources,
                &mut diagnostics,
            );
            grammar::read_streamed_part(&mut lexer, &mut tree_diagnostics, &mut outline, false)
        };
        let second = second
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (first, second)
    });
    // The lexers are done with the text: the file's, kept as read (what
    // a reload compares the file with, and a diagnostic quotes).
    if let Ok(bytes) = std::sync::Arc::try_unwrap(bytes) {
        sources.files[id.0 as usize].keep_text(bytes);
    }
    let (second, mut second_lexer, mut second_tree, second_outline) = second;
    if !second.only_virtual_servers
        || outline.tree_problems > 0
        || second_outline.tree_problems > 0
        || second_outline.items.first().map(|item| item.first) != Some(first_line)
    {
        return None;
    }
    // As a whole read orders them: the lexer's, the tree's, the readers',
    // then the checks at the end.
    diagnostics.items.append(&mut second_lexer.items);
    tree_diagnostics.items.append(&mut second_tree.items);
    let config = grammar::finish_parts(vec![first, second], &mut tree_diagnostics);
    outline.items.extend(second_outline.items);
    let again = again(&sources, &diagnostics, outline);
    diagnostics.items.append(&mut tree_diagnostics.items);
    Some(Loaded {
        sources,
        diagnostics,
        config,
        again,
    })
}

/// Where [`load_on_two_threads`] starts its second half: the first line
/// from the middle of `text` on that starts with `virtual_server` and a
/// blank.
fn second_part_start(text: &[u8]) -> Option<usize> {
    const KEYWORD: &[u8] = b"\nvirtual_server";
    let middle = text.len() / 2;
    memchr::memmem::find_iter(&text[middle..], KEYWORD)
        .map(|at| middle + at)
        .find(|at| {
            text.get(at + KEYWORD.len())
                .is_some_and(|next| matches!(next, b' ' | b'\t'))
        })
        .map(|at| at + 1)
}

/// What a load keeps for [`crate::load_again`]: when it read one plain
/// file on disk and found no problem in its lines or its tree (the rules
/// of [`crate::reload`]). Its text is the one the two-thread read kept, or
/// else the file read once more (the streaming lexer keeps none), kept only
/// if it has not changed meanwhile.
fn again(sources: &Sources, lexer_diagnostics: &Diagnostics, outline: Outline) -> Option<Again> {
    let [file] = sources.files.as_slice() else {
        return None;
    };
    if !file.is_on_disk() || !lexer_diagnostics.items.is_empty() || outline.tree_problems > 0 {
        return None;
    }
    let text = file.text()?;
    plain(text.as_bytes()).then_some(Again {
        items: outline.items,
    })
}

/// [`load`] for text in memory (tests, fuzzing); includes are relative to
/// the current directory.
pub fn load_str(name: &str, text: &str, options: &Options) -> Loaded {
    let mut sources = Sources::default();
    let mut diagnostics = Diagnostics::default();
    let mut grammar_diagnostics = Diagnostics::default();
    let mut lexer = lexer::open_str(name, text, options, &mut sources, &mut diagnostics);
    let config = crate::grammar::parse_streamed(&mut lexer, &mut grammar_diagnostics);
    drop(lexer);
    // The lexer's diagnostics first, as if it had read every line before
    // the grammar started.
    diagnostics.items.append(&mut grammar_diagnostics.items);
    Loaded {
        sources,
        diagnostics,
        config,
        again: None,
    }
}

/// What a load keeps to read its file again by [`crate::load_again`].
#[derive(Debug, Clone)]
pub(crate) struct Again {
    /// The top-level items, in order (the text is the source file's, which
    /// holds it).
    pub items: Vec<crate::grammar::TopLevel>,
}

/// The text is plain (see the rules of [`crate::reload`]): no byte that can carry
/// meaning to a later line.
pub(crate) fn plain(text: &[u8]) -> bool {
    if memchr::memchr(b'$', text).is_some()
        || memchr::memmem::find(text, b"~SEQ").is_some()
        || memchr::memmem::find(text, b"include").is_some()
    {
        return false;
    }
    // An `@` starting a word may be a conditional (at a line's start, or
    // after a brace split the line); one inside a word is not.
    memchr::memchr_iter(b'@', text).all(|at| {
        at > 0
            && !matches!(
                text[at - 1],
                b' ' | b'\t' | b'\n' | b'\r' | b'{' | b'}' | 0x0b | 0x0c
            )
    })
}

#[cfg(test)]
mod tests;
