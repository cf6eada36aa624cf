//! Reading a whole configuration: files, lines, model.

use std::path::Path;

use crate::diagnostic::Diagnostics;
use crate::grammar::Outline;
use crate::lexer::{self, Options};
use crate::model::Config;
use crate::syntax::Sources;

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

/// What a load keeps for [`crate::load_again`]: when it read one plain
/// file on disk and found no problem in its lines or its tree (the rules
/// of [`crate::reload`]). The file is read once more for its text (the
/// lexer keeps none), and kept only if it has not changed meanwhile.
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
