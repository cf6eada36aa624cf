//! Reading a whole configuration: files, lines, model.

use std::path::Path;

use crate::diagnostic::Diagnostics;
use crate::lexer::{self, Options};
use crate::model::Config;
use crate::syntax::Sources;

/// A configuration as read: the model, every problem found, and the text
/// the problems point into.
#[derive(Debug)]
pub struct Loaded {
    pub sources: Sources,
    pub diagnostics: Diagnostics,
    pub config: Config,
}

/// Reads the configuration at `path` (with its includes) into the model.
/// Never fails: what cannot be read is a diagnostic.
pub fn load(path: &Path, options: &Options) -> Loaded {
    let mut sources = Sources::default();
    let mut diagnostics = Diagnostics::default();
    let mut grammar_diagnostics = Diagnostics::default();
    let mut lexer = lexer::open_file(path, options, &mut sources, &mut diagnostics);
    let config = crate::grammar::parse_streamed(&mut lexer, &mut grammar_diagnostics);
    drop(lexer);
    // The lexer's diagnostics first, as if it had read every line before
    // the grammar started.
    diagnostics.items.append(&mut grammar_diagnostics.items);
    Loaded {
        sources,
        diagnostics,
        config,
    }
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
    }
}
