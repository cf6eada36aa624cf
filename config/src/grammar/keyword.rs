//! Keyword tables as static data: enumerable (completions, "did you mean"),
//! and enough for the tree builder to check names, argument counts and
//! braces before any block reader runs.

/// How many arguments (words after the keyword, braces excluded) a keyword
/// takes. Too few is an error; too many a warning (keepalived ignores extra
/// words almost everywhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arity {
    pub minimum: u8,
    /// `None`: any number.
    pub maximum: Option<u8>,
}

/// What follows a keyword's line.
#[derive(Debug, Clone, Copy)]
pub enum Body {
    /// Nothing: a `{` after it is a mistake.
    None,
    /// A `{ ... }` block of keywords from this table.
    Keywords(&'static [Keyword]),
    /// A `{ ... }` block of free-form lines (addresses, names, routes...),
    /// each read by the block's reader.
    Lines,
}

/// Whether Fulcrum acts on a keyword yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Parsed, stored and (or: will be, by the issue that consumes it) used.
    Acted,
    /// Parsed and stored, but reported as a note "accepted, not yet acted on".
    NotYet,
}

#[derive(Debug, Clone, Copy)]
pub struct Keyword {
    pub name: &'static str,
    pub arity: Arity,
    pub body: Body,
    pub support: Support,
}

impl Keyword {
    /// A keyword without a block.
    pub const fn leaf(name: &'static str, minimum: u8, maximum: Option<u8>) -> Keyword {
        Keyword {
            name,
            arity: Arity { minimum, maximum },
            body: Body::None,
            support: Support::Acted,
        }
    }

    /// A keyword opening a block of keywords.
    pub const fn block(
        name: &'static str,
        minimum: u8,
        maximum: Option<u8>,
        table: &'static [Keyword],
    ) -> Keyword {
        Keyword {
            name,
            arity: Arity { minimum, maximum },
            body: Body::Keywords(table),
            support: Support::Acted,
        }
    }

    /// A keyword opening a block of free-form lines.
    pub const fn lines(name: &'static str, minimum: u8, maximum: Option<u8>) -> Keyword {
        Keyword {
            name,
            arity: Arity { minimum, maximum },
            body: Body::Lines,
            support: Support::Acted,
        }
    }

    pub const fn with_body(mut self, body: Body) -> Keyword {
        self.body = body;
        self
    }

    /// Marks a keyword as accepted but not yet acted on (the tree builder
    /// then reports the uniform note).
    pub const fn not_acted_on(mut self) -> Keyword {
        self.support = Support::NotYet;
        self
    }

    pub fn opens_block(&self) -> bool {
        !matches!(self.body, Body::None)
    }
}

/// Finds a keyword in a table (keepalived compares keywords exactly).
pub fn find(table: &'static [Keyword], name: &str) -> Option<&'static Keyword> {
    // Every line's keyword is looked up in its block's table, one entry
    // after another: of the names of the same length, the first bytes are
    // compared before the whole names (a call to memcmp each).
    table.iter().find(|keyword| {
        keyword.name.len() == name.len()
            && keyword.name.as_bytes().first() == name.as_bytes().first()
            && keyword.name == name
    })
}
