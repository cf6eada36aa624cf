//! The keepalived.conf parser and its typed model.
//!
//! Two layers meet at [`syntax`]: the lexical layer turns files into
//! keepalived's lines of words, with locations; the grammar turns lines into
//! the model, with keepalived's defaults, and reports every problem as a
//! [`diagnostic::Diagnostic`].

pub mod diagnostic;
pub mod grammar;
pub mod lexer;
mod load;
pub mod model;
mod reload;
#[cfg(test)]
mod scratch;
pub mod syntax;

pub use load::{Loaded, load, load_on_two_threads, load_str};
pub use reload::{Reread, load_again};
