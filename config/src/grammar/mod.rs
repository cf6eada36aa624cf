//! The keyword tree: turns keepalived's lines of words into the model.
//!
//! keepalived's parser is a tree of keyword tables: each block level has a
//! table of keywords, each with a handler reading its arguments, and a `{`
//! opens the sub-table of the keyword on the same line. We do the same in two
//! steps:
//! 1. [`tree`] walks the lines with the static [`Keyword`] tables, checks
//!    braces, keyword names and argument counts, and builds a tree of
//!    [`Node`]s (unknown keywords and misplaced braces are reported once
//!    here and left out of the tree);
//! 2. one module per block family reads the tree into the typed model,
//!    checking argument values with [`values`] and applying keepalived's
//!    defaults and rules.

pub mod bfd;
pub mod checkers;
mod common;
pub mod global_defs;
mod keyword;
pub mod sdn;
pub mod tree;
pub mod values;
pub mod virtual_server;
pub mod vrrp;

pub use keyword::{Arity, Body, Keyword, Support};
pub use tree::Node;

use crate::diagnostic::{Diagnostic, Diagnostics, Severity};
use crate::model::Config;
use crate::syntax::{Line, Span, Word};

/// Parses the lines of one configuration into the model, reporting every
/// problem to `diagnostics` (all of them, in one run).
pub fn parse(lines: &[Line], diagnostics: &mut Diagnostics) -> Config {
    parse_with(diagnostics, None, &mut |diagnostics, each| {
        tree::build_each(lines, ROOT, diagnostics, each)
    })
}

/// [`parse`] for lines pulled one by one from `source` (the lexer), each
/// top-level block's lines being dropped once it is read: the lines of a
/// whole configuration are never held.
pub fn parse_streamed(source: &mut impl tree::LineSource, diagnostics: &mut Diagnostics) -> Config {
    parse_with(diagnostics, None, &mut |diagnostics, each| {
        tree::build_streamed(source, ROOT, diagnostics, each)
    })
}

/// Where a top-level item was and what it made: what a reload needs to
/// read one block again ([`crate::reload`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TopLevel {
    pub file: crate::syntax::FileId,
    /// Its first and last lines (of its keyword and its closing brace).
    pub first: u32,
    pub last: u32,
    pub virtual_server: bool,
    /// It added a virtual server to the model (one without real servers
    /// is dropped).
    pub made_virtual_server: bool,
}

/// How a streamed parse went, for [`crate::reload`].
#[derive(Debug, Default)]
pub(crate) struct Outline {
    pub items: Vec<TopLevel>,
    /// Problems found building the tree (before the blocks were read),
    /// notes aside ("accepted, not yet acted on" is said of each use, and
    /// carries nothing from one item to the next).
    pub tree_problems: usize,
}

/// [`parse_streamed`], recording each top-level item's place.
pub(crate) fn parse_streamed_outlined(
    source: &mut impl tree::LineSource,
    diagnostics: &mut Diagnostics,
    outline: &mut Outline,
) -> Config {
    parse_with(diagnostics, Some(outline), &mut |diagnostics, each| {
        tree::build_streamed(source, ROOT, diagnostics, each)
    })
}

/// Reads `source`'s lines as one top-level `virtual_server` block taken out
/// of the configuration `around` (its other blocks as they are there): its
/// virtual server (`None` if the block makes none), its problems added to
/// `diagnostics`. `None` if the lines are not exactly one such block, or
/// building its tree found a problem.
pub(crate) fn read_virtual_server_alone(
    source: &mut impl tree::LineSource,
    around: &Config,
    diagnostics: &mut Diagnostics,
) -> Option<Option<crate::model::VirtualServer>> {
    let mut tree_diagnostics = Diagnostics::default();
    let mut read_diagnostics = Diagnostics::default();
    let mut context = Context {
        diagnostics: &mut read_diagnostics,
        virtual_servers: Vec::new(),
        references: Vec::new(),
    };
    let mut scratch = Config::default();
    let mut items = 0;
    let mut one_block = true;
    tree::build_streamed(source, ROOT, &mut tree_diagnostics, &mut |node| {
        items += 1;
        if items > 1 || node.name() != "virtual_server" || node.close.is_none() {
            one_block = false;
            return;
        }
        virtual_server::read(&node, &mut scratch, &mut context);
    });
    if items != 1
        || !one_block
        || tree_diagnostics
            .items
            .iter()
            .any(|item| item.severity != Severity::Note)
    {
        return None;
    }
    // The tree's notes before what reading found, as in a whole read.
    diagnostics.items.append(&mut tree_diagnostics.items);
    // As the whole file's end would: references first, then the group.
    let references = std::mem::take(&mut context.references);
    for reference in &references {
        vrrp::check_reference(around, reference, &mut context);
    }
    let server = match (scratch.virtual_servers.pop(), context.virtual_servers.pop()) {
        (Some(mut server), Some(pending)) => {
            virtual_server::finish_one(
                &mut server,
                &pending,
                &around.virtual_server_groups,
                &around.global,
                &around.virtual_networks,
                &mut context,
            );
            Some(server)
        }
        _ => None,
    };
    diagnostics.items.append(&mut read_diagnostics.items);
    Some(server)
}

/// Builds a tree into the diagnostics given, handing each top-level node
/// to the reader given.
type BuildTree<'b> = dyn FnMut(&mut Diagnostics, &mut dyn FnMut(Node<'_>)) + 'b;

/// [`parse`] with the tree built by `build`.
fn parse_with(
    diagnostics: &mut Diagnostics,
    outline: Option<&mut Outline>,
    build: &mut BuildTree<'_>,
) -> Config {
    let part = read_part(diagnostics, outline, build, false);
    finish_parts(vec![part], diagnostics)
}

/// Some of a file's top-level items read into the model: what
/// [`finish_parts`] completes with the checks that need the whole file.
pub(crate) struct Part {
    config: Config,
    /// The readers' problems (the tree's went to the diagnostics given).
    read_diagnostics: Diagnostics,
    pending: Vec<virtual_server::Pending>,
    references: Vec<Reference>,
    /// Asked to read `virtual_server` blocks only: every item was one, and
    /// closed. A part after the first must be so: a `virtual_server`'s
    /// reading takes nothing from the items before it (its group, the
    /// global settings and the names it uses are looked up at the end), and
    /// only its list of the model grows.
    pub only_virtual_servers: bool,
}

/// Reads the items of the tree `build` makes (its problems into
/// `diagnostics`); with `only_virtual_servers`, items of other kinds are
/// not read, and the part says so.
fn read_part(
    diagnostics: &mut Diagnostics,
    mut outline: Option<&mut Outline>,
    build: &mut BuildTree<'_>,
    only_virtual_servers: bool,
) -> Part {
    // Each top-level block is read into the model as soon as its tree is
    // built, then dropped. The readers' diagnostics are kept apart and come
    // after the tree's, as if the whole tree had been built first.
    let mut read_diagnostics = Diagnostics::default();
    let mut context = Context {
        diagnostics: &mut read_diagnostics,
        virtual_servers: Vec::new(),
        references: Vec::new(),
    };
    let mut config = Config::default();
    let mut all_virtual_servers = true;
    let tree_problems_before = diagnostics.items.len();
    build(diagnostics, &mut |node| {
        let made = config.virtual_servers.len();
        let virtual_server = node.name() == "virtual_server";
        if only_virtual_servers && !(virtual_server && node.close.is_some()) {
            all_virtual_servers = false;
        } else if all_virtual_servers {
            read_top_level(&node, &mut config, &mut context);
        }
        if let Some(outline) = outline.as_deref_mut() {
            outline.items.push(TopLevel {
                file: node.keyword.span.file,
                first: node.keyword.span.line,
                last: node
                    .close
                    .map_or(node.keyword.span.line, |close| close.span.line),
                virtual_server,
                made_virtual_server: config.virtual_servers.len() > made,
            });
        }
    });
    if let Some(outline) = outline {
        outline.tree_problems += diagnostics.items[tree_problems_before..]
            .iter()
            .filter(|item| item.severity != Severity::Note)
            .count();
    }
    let Context {
        virtual_servers: pending,
        references,
        ..
    } = context;
    Part {
        config,
        read_diagnostics,
        pending,
        references,
        only_virtual_servers: only_virtual_servers && all_virtual_servers,
    }
}

/// The parts of a file, in order, made one model: the later parts'
/// virtual servers after the first part's, then the checks that need the
/// whole file. The readers' problems go to `diagnostics` (after the
/// tree's, which are there), then those of the checks.
pub(crate) fn finish_parts(parts: Vec<Part>, diagnostics: &mut Diagnostics) -> Config {
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return Config::default();
    };
    let Part {
        mut config,
        mut read_diagnostics,
        mut pending,
        mut references,
        ..
    } = first;
    for mut part in parts {
        config
            .virtual_servers
            .append(&mut part.config.virtual_servers);
        debug_assert_eq!(
            format!("{:?}", part.config),
            format!("{:?}", Config::default()),
            "a later part holds virtual servers only"
        );
        read_diagnostics
            .items
            .append(&mut part.read_diagnostics.items);
        pending.append(&mut part.pending);
        references.append(&mut part.references);
    }
    let mut context = Context {
        diagnostics: &mut read_diagnostics,
        virtual_servers: pending,
        references,
    };
    vrrp::finish(&mut config, &mut context);
    virtual_server::finish(&mut config, &mut context);
    diagnostics.items.append(&mut read_diagnostics.items);
    config
}

/// Reads `source`'s lines as a part of a file ([`Part`]): its tree's
/// problems into `diagnostics`, its items' places into `outline`.
pub(crate) fn read_streamed_part(
    source: &mut impl tree::LineSource,
    diagnostics: &mut Diagnostics,
    outline: &mut Outline,
    only_virtual_servers: bool,
) -> Part {
    read_part(
        diagnostics,
        Some(outline),
        &mut |diagnostics, each| tree::build_streamed(source, ROOT, diagnostics, each),
        only_virtual_servers,
    )
}

/// Reads one top-level block into the model.
fn read_top_level(node: &Node, config: &mut Config, context: &mut Context) {
    match node.name() {
        "global_defs" => global_defs::read(node, &mut config.global, context),
        "vrrp_script" => vrrp::read_script(node, config, context),
        "vrrp_track_process" => vrrp::read_track_process(node, config, context),
        "track_file" | "vrrp_track_file" => vrrp::read_track_file(node, config, context),
        "vrrp_sync_group" => vrrp::read_sync_group(node, config, context),
        "garp_group" => vrrp::read_garp_group(node, config, context),
        "vrrp_instance" => vrrp::read_instance(node, config, context),
        "static_ipaddress" => {
            vrrp::read_addresses(node, &mut config.static_addresses, true, context)
        }
        "static_routes" => vrrp::read_routes(node, &mut config.static_routes, true, context),
        "static_rules" => vrrp::read_rules(node, &mut config.static_rules, true, context),
        "virtual_server_group" => virtual_server::read_group(node, config, context),
        "virtual_server" => virtual_server::read(node, config, context),
        "SSL" => checkers::read_ssl(node, config, context),
        "bfd_instance" => bfd::read_instance(node, config, context),
        "virtual_network" => sdn::read_virtual_network(node, config, context),
        "mux" | "host_agent" => sdn::read_endpoint(node, config, context),
        "net_namespace" => {
            // keepalived's: the first one counts.
            if config.net_namespace.is_some() {
                context.warning(
                    node.keyword.span,
                    format!(
                        "Duplicate net_namespace definition {} - ignoring",
                        common::first(node)
                    ),
                );
            } else {
                config.net_namespace = Some(common::first(node));
            }
        }
        // Top-level keywords not acted on yet (already reported as such).
        _ => {
            vrrp::check_stored(node, context);
            config.other.push(common::raw(node));
        }
    }
}

/// The top level of keepalived.conf.
pub static ROOT: &[Keyword] = &[
    Keyword::block("global_defs", 0, Some(0), global_defs::KEYWORDS),
    Keyword::block("vrrp_script", 1, Some(1), vrrp::SCRIPT),
    Keyword::block("vrrp_track_process", 1, Some(1), vrrp::TRACK_PROCESS),
    Keyword::block("track_file", 1, Some(1), vrrp::TRACK_FILE),
    // keepalived's older name for track_file.
    Keyword::block("vrrp_track_file", 1, Some(1), vrrp::TRACK_FILE),
    Keyword::block("vrrp_sync_group", 1, Some(1), vrrp::SYNC_GROUP),
    Keyword::block("garp_group", 0, Some(0), vrrp::GARP_GROUP),
    Keyword::block("vrrp_instance", 1, Some(1), vrrp::INSTANCE),
    Keyword::lines("static_ipaddress", 0, Some(0)),
    Keyword::lines("static_routes", 0, Some(0)),
    Keyword::lines("static_rules", 0, Some(0)),
    Keyword::lines("linkbeat_interfaces", 0, Some(0)).not_acted_on(),
    Keyword::leaf("linkbeat_use_polling", 0, Some(0)).not_acted_on(),
    Keyword::lines("interface_up_down_delays", 0, Some(0)).not_acted_on(),
    Keyword::block("track_group", 1, Some(1), vrrp::TRACK_GROUP).not_acted_on(),
    Keyword::block("virtual_server_group", 1, Some(1), &[]).with_body(Body::Lines),
    Keyword::block("virtual_server", 1, Some(2), virtual_server::VIRTUAL_SERVER),
    Keyword::block("SSL", 0, Some(0), checkers::SSL),
    Keyword::block("bfd_instance", 1, Some(1), bfd::INSTANCE),
    // The SDN mode (docs/sdn.md).
    Keyword::block("virtual_network", 1, Some(1), sdn::VIRTUAL_NETWORK),
    Keyword::block("mux", 0, Some(0), sdn::MUX),
    Keyword::block("host_agent", 0, Some(0), sdn::ENDPOINT),
    Keyword::leaf("net_namespace", 1, Some(1)),
    Keyword::leaf("net_namespace_ipvs", 1, Some(1)).not_acted_on(),
    Keyword::leaf("namespace_with_ipsets", 0, Some(0)).not_acted_on(),
    Keyword::leaf("instance", 1, Some(1)).not_acted_on(),
    Keyword::leaf("use_pid_dir", 0, Some(0)).not_acted_on(),
    Keyword::leaf("child_wait_time", 1, Some(1)).not_acted_on(),
];

/// The keywords allowed inside the block reached by `path` from the top
/// level (`&[]`: the top level; `&["virtual_server", "real_server"]`: a real
/// server's), for completions and documentation. `None` if a step is not a
/// keyword block (blocks of free-form lines, like `virtual_ipaddress`, have
/// no keywords).
pub fn keywords_at(path: &[&str]) -> Option<&'static [Keyword]> {
    let mut table = ROOT;
    for step in path {
        match keyword::find(table, step)?.body {
            Body::Keywords(next) => table = next,
            Body::None | Body::Lines => return None,
        }
    }
    Some(table)
}

/// What the block readers share: where diagnostics go, and helpers to report
/// them against words.
pub struct Context<'d> {
    pub diagnostics: &'d mut Diagnostics,
    /// Virtual servers read so far, for the checks made at the end.
    pub(crate) virtual_servers: Vec<virtual_server::Pending>,
    /// Names used before (or without) their definition, checked at the end
    /// (keepalived resolves them once the whole file is read).
    pub(crate) references: Vec<Reference>,
}

/// A use of a named object: `track_script { NAME }`, a sync group member...
#[derive(Debug, Clone)]
pub(crate) struct Reference {
    pub kind: ReferenceKind,
    pub name: String,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReferenceKind {
    Script,
    File,
    Process,
    Bfd,
    Instance,
}

impl Context<'_> {
    pub fn error(&mut self, span: Span, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic::error(span, message));
    }

    pub fn warning(&mut self, span: Span, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic::warning(span, message));
    }

    pub fn note(&mut self, span: Span, message: impl Into<String>) {
        self.diagnostics.push(Diagnostic::note(span, message));
    }

    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }

    /// The uniform report for a keyword stored in the model but not yet used
    /// by Fulcrum.
    pub fn not_acted_on(&mut self, node: &Node) {
        self.option_not_acted_on(node.keyword);
    }

    /// The same report for one word of a line: an option of an address,
    /// a route or a rule that Fulcrum keeps in the model but does not
    /// apply yet.
    pub fn option_not_acted_on(&mut self, word: &Word) {
        self.note(
            word.span,
            format!("'{}' accepted, not yet acted on", word.text),
        );
    }

    /// A keyword given twice where keepalived keeps only one value.
    pub fn replaced(&mut self, node: &Node) {
        self.warning(
            node.keyword.span,
            format!(
                "'{}' given more than once; this later value replaces the earlier one",
                node.name()
            ),
        );
    }
}

/// The span covering several words of one line (for diagnostics about a
/// whole argument list).
pub fn span_of(words: &[&Word]) -> Option<Span> {
    let first = words.first()?;
    let last = words.last()?;
    let mut span = first.span;
    if last.span.file == span.file && last.span.line == span.line {
        span.end = last.span.end.max(span.end);
    }
    Some(span)
}

/// The closest keyword to `word` by edit distance, for "did you mean".
pub fn suggestion<'k>(word: &str, candidates: impl Iterator<Item = &'k str>) -> Option<&'k str> {
    let limit = (word.len() / 3).clamp(1, 3);
    let word = word.to_lowercase();
    let length = word.chars().count();
    candidates
        // The distance is at least the difference of the lengths: most
        // candidates need no table.
        .filter(|candidate| candidate.chars().count().abs_diff(length) <= limit)
        .map(|candidate| (edit_distance(&word, &candidate.to_lowercase()), candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance, counting a swap of two neighbours as one edit
/// (the commonest typo).
pub fn edit_distance(left: &str, right: &str) -> usize {
    let left: Vec<char> = left.chars().collect();
    let right: Vec<char> = right.chars().collect();
    let width = right.len() + 1;
    let mut table = vec![0usize; (left.len() + 1) * width];
    for (row, cell) in table.iter_mut().step_by(width).enumerate() {
        *cell = row;
    }
    for (column, cell) in table.iter_mut().take(width).enumerate() {
        *cell = column;
    }
    for row in 1..=left.len() {
        for column in 1..=right.len() {
            let cost = usize::from(left[row - 1] != right[column - 1]);
            let mut best = (table[(row - 1) * width + column] + 1)
                .min(table[row * width + column - 1] + 1)
                .min(table[(row - 1) * width + column - 1] + cost);
            if row > 1
                && column > 1
                && left[row - 1] == right[column - 2]
                && left[row - 2] == right[column - 1]
            {
                best = best.min(table[(row - 2) * width + column - 2] + 1);
            }
            table[row * width + column] = best;
        }
    }
    table[left.len() * width + right.len()]
}

#[cfg(test)]
pub(crate) mod tests;
