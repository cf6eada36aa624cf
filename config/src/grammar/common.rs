//! Small readers shared by several block families.

use super::{Context, Node, values};
use crate::model::{RawSetting, Script};
use crate::syntax::Word;

/// `KEYWORD <STRING>|<QUOTED-STRING> [username [groupname]]`. keepalived
/// re-splits the raw line of script keywords with `'` and `"` quotes and
/// escapes (`alloc_strvec_quoted_escaped`): the first word after the keyword
/// is the command line, the next ones the user and group.
///
/// The arity of script keywords is only known once the raw line is re-split,
/// so words after the group are warned about here.
pub fn script_checked(node: &Node, context: Option<&mut Context>) -> Option<Script> {
    let words = command_words(node);
    if let (Some(context), true) = (context, words.len() > 3) {
        context.warning(
            node.span(),
            format!(
                "'{}' takes a command, a user and a group; keepalived ignores the rest (quote a command with arguments)",
                node.name()
            ),
        );
    }
    Some(Script::new(words.first()?, words.get(1).cloned(), words.get(2).cloned()).at(node.span()))
}

/// The words after the keyword, split as keepalived splits script lines
/// (falling back to the ordinary words where the raw line is not at hand or
/// does not split, which the lexer has already reported).
pub fn command_words(node: &Node) -> Vec<String> {
    let split = node
        .raw
        .and_then(|raw| crate::lexer::split_quoted_escaped(raw).ok())
        .filter(|words| words.first().map(Vec::as_slice) == Some(node.keyword.text.as_bytes()));
    match split {
        Some(words) => words
            .into_iter()
            .skip(1)
            .map(|word| String::from_utf8_lossy(&word).into_owned())
            .collect(),
        None => node
            .arguments
            .iter()
            .map(|word| word.text.to_string())
            .collect(),
    }
}

/// The whole argument list as one string (keepalived's `set_value`, which
/// joins the words with spaces).
pub fn joined(node: &Node) -> String {
    node.arguments
        .iter()
        .map(|word| word.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn first(node: &Node) -> String {
    node.argument(0)
        .map(|word| word.text.to_string())
        .unwrap_or_default()
}

/// A keyword and its block, as written.
pub fn raw(node: &Node) -> RawSetting {
    RawSetting {
        keyword: node.keyword.text.to_string(),
        arguments: node
            .arguments
            .iter()
            .map(|word| word.text.to_string())
            .collect(),
        block: node.children.iter().map(raw).collect(),
        line: node.keyword.span.line,
    }
}

/// `weight N [reverse|noreverse|no_reverse]` after a name in `track_*`
/// lines, and `weight N [reverse]` keywords.
pub fn weight_and_reverse(
    context: &mut Context,
    words: &[&Word],
    minimum: i128,
    maximum: i128,
    what: &str,
) -> (Option<i32>, bool) {
    let mut weight = None;
    let mut reverse = false;
    let mut index = 0;
    while index < words.len() {
        let word = words[index];
        match word.text.as_str() {
            "weight" => match words.get(index + 1) {
                Some(value) => {
                    weight = values::integer(context, value, minimum, maximum, what);
                    index += 1;
                }
                None => context.error(word.span, format!("'weight' needs a value for {what}")),
            },
            "reverse" => reverse = true,
            "noreverse" | "no_reverse" => reverse = false,
            other => context.error(
                word.span,
                format!("unexpected '{other}' for {what}: expected 'weight N' and 'reverse'"),
            ),
        }
        index += 1;
    }
    (weight, reverse)
}

/// Reports a keyword given twice where keepalived keeps the first and
/// ignores the second (its "already specified - ignoring" messages).
pub fn ignored_duplicate(context: &mut Context, node: &Node) {
    context.warning(
        node.keyword.span,
        format!(
            "'{}' already given; keepalived ignores this second one",
            node.name()
        ),
    );
}
