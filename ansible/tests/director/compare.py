#!/usr/bin/env python3
"""Compare two keepalived.conf files: ours (fulcrum.lvs.director) and
evrardjp/ansible-keepalived's, rendered from the same variables.

Two comparisons, both printed:

1. The keyword trees, read as keepalived's lexer reads them (comments from
   '#' or '!' outside double quotes removed, double quotes removed, braces
   as tokens, blank lines and indentation dropped), with the known
   equivalences below applied to evrardjp's tree first and counted.
2. pulse's model of each file (`pulse --dump-config`): what pulse will run,
   after defaults.

Before them, the layout of ours: every line indented four spaces a level.

Exit status: 0 when both are equal, 1 when the trees differ, 2 when only
the models differ, 3 when pulse could not dump a file, 4 when only the
layout is wrong. Without EVRARDJP, only the layout is checked.

Usage: compare.py OURS [EVRARDJP] --pulse PULSE
"""

import argparse
import difflib
import json
import re
import subprocess
import sys

# Lines evrardjp's template writes differently from ours, with the same
# meaning to keepalived 2.2 (its parser maps the first to the second).
EQUIVALENT = [
    # HTTP_GET and SSL_GET: keepalived 2.2 reads nb_get_retry as retry and
    # warns that it is deprecated (keepalived -t exits 5).
    (re.compile(r"^(\s*)nb_get_retry (.*)$"), r"\1retry \2", "nb_get_retry is retry"),
]


def tokens(line):
    """Split one line as keepalived does: words, "quoted strings" (quotes
    dropped), braces; stop at a comment."""
    out = []
    i = 0
    while i < len(line):
        c = line[i]
        if c.isspace():
            i += 1
        elif c in "#!":
            break
        elif c in "{}":
            out.append(c)
            i += 1
        elif c == '"':
            end = line.find('"', i + 1)
            if end < 0:
                end = len(line)
            out.append(line[i + 1:end])
            i = end + 1
        else:
            j = i
            while j < len(line) and not line[j].isspace() and line[j] not in '{}"#!':
                j += 1
            out.append(line[i:j])
            i = j
    return out


def tree(path):
    """The file as indented lines: one per statement, two spaces a level."""
    lines = []
    depth = 0
    with open(path, encoding="utf-8") as f:
        for raw in f:
            words = tokens(raw)
            while words:
                if words[0] == "}":
                    depth = max(depth - 1, 0)
                    lines.append("  " * depth + "}")
                    words = words[1:]
                    continue
                if "{" in words or "}" in words:
                    cut = min(words.index(b) for b in "{}" if b in words)
                    head, words = words[:cut], words[cut:]
                    if words[0] == "{":
                        lines.append("  " * depth + " ".join(head + ["{"]))
                        depth += 1
                        words = words[1:]
                    else:
                        if head:
                            lines.append("  " * depth + " ".join(head))
                    continue
                lines.append("  " * depth + " ".join(words))
                words = []
    return lines


def layout(path):
    """Lines of ours not indented four spaces a level (as read by tree())."""
    wrong = []
    depth = 0
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            words = tokens(raw)
            if not words:
                continue
            expected = depth - 1 if words[0] == "}" else depth
            indent = len(raw) - len(raw.lstrip(" "))
            if indent != 4 * expected or raw.startswith("\t"):
                wrong.append(f"{number}: {raw.rstrip()}")
            depth += words.count("{") - words.count("}")
    return wrong


def dump(pulse, path):
    run = subprocess.run([pulse, "--dump-config", "-f", path], capture_output=True, text=True, check=False)
    try:
        return json.dumps(json.loads(run.stdout), indent=1, sort_keys=True).splitlines()
    except json.JSONDecodeError:
        return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ours")
    parser.add_argument("evrardjp", nargs="?")
    parser.add_argument("--pulse", required=True)
    args = parser.parse_args()

    wrong = layout(args.ours)
    if wrong:
        print("layout: lines of ours not indented four spaces a level:")
        for line in wrong:
            print("  " + line)
    else:
        print("layout: ok")
    if args.evrardjp is None:
        return 4 if wrong else 0

    ours = tree(args.ours)
    theirs = []
    applied = {}
    for line in tree(args.evrardjp):
        for pattern, replacement, why in EQUIVALENT:
            if pattern.match(line):
                line = pattern.sub(replacement, line)
                applied[why] = applied.get(why, 0) + 1
        theirs.append(line)

    status = 0
    for why, count in applied.items():
        print(f"equivalent: {why} ({count} line{'s' if count > 1 else ''} of evrardjp's file)")
    if ours == theirs:
        print(f"keyword trees: the same ({len(ours)} lines)")
    else:
        status = 1
        print("keyword trees differ (- evrardjp, + ours):")
        for line in difflib.unified_diff(theirs, ours, "evrardjp", "fulcrum", n=2, lineterm=""):
            print("  " + line)

    ours_model = dump(args.pulse, args.ours)
    theirs_model = dump(args.pulse, args.evrardjp)
    if ours_model is None or theirs_model is None:
        which = "ours" if ours_model is None else "evrardjp's"
        print(f"pulse's models: pulse --dump-config cannot read {which}")
        return status or 3
    if ours_model == theirs_model:
        print("pulse's models: the same")
    else:
        status = status or 2
        print("pulse's models differ (- evrardjp, + ours):")
        for line in difflib.unified_diff(theirs_model, ours_model, "evrardjp", "fulcrum", n=1, lineterm=""):
            print("  " + line)
    return status or (4 if wrong else 0)


if __name__ == "__main__":
    sys.exit(main())
