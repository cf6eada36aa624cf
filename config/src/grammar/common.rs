//! Small readers shared by several block families.

use super::{Context, Node, values};
use crate::model::{RawSetting, Script};
use crate::syntax::Word;

/// `KEYWORD <STRING>|<QUOTED-STRING> [username [groupname]]`.
pub fn script(node: &Node) -> Option<Script> {
    let command = node.argument(0)?;
    Some(Script {
        command: command.text.clone(),
        user: node.argument(1).map(|word| word.text.clone()),
        group: node.argument(2).map(|word| word.text.clone()),
    })
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
        .map(|word| word.text.clone())
        .unwrap_or_default()
}

/// A keyword and its block, as written.
pub fn raw(node: &Node) -> RawSetting {
    RawSetting {
        keyword: node.keyword.text.clone(),
        arguments: node
            .arguments
            .iter()
            .map(|word| word.text.clone())
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
