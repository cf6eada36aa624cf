//! The lexical layer against keepalived 2.2.7. Tests marked "verified" were
//! checked with `keepalived -t -f FILE -l -n` (2.2.7, Debian 12), reading
//! the words back from its "Unknown keyword" messages.

use super::values::{ValueError, parse_bool, parse_decimal, parse_timer};
use super::*;
use crate::diagnostic::Severity;

fn options() -> Options {
    Options {
        config_id: Some("vm".into()),
        all_config: false,
        random_seed: Some(7),
    }
}

struct Lexed {
    lines: Vec<Line>,
    diagnostics: Diagnostics,
    sources: Sources,
}

/// Each line's words, as text.
fn words_of(lines: &[Line]) -> Vec<Vec<String>> {
    lines
        .iter()
        .map(|line| {
            line.words
                .iter()
                .map(|word| word.text.to_string())
                .collect()
        })
        .collect()
}

impl Lexed {
    fn words(&self) -> Vec<Vec<String>> {
        words_of(&self.lines)
    }

    fn count(&self, severity: Severity) -> usize {
        self.diagnostics.count(severity)
    }

    fn messages(&self) -> String {
        self.diagnostics.render(&self.sources)
    }
}

fn lex_with(text: &str, options: &Options) -> Lexed {
    let mut sources = Sources::default();
    let mut diagnostics = Diagnostics::default();
    let lines = read_str("test.conf", text, options, &mut sources, &mut diagnostics);
    Lexed {
        lines,
        diagnostics,
        sources,
    }
}

fn lex(text: &str) -> Lexed {
    lex_with(text, &options())
}

fn words(text: &str) -> Vec<Vec<String>> {
    let lexed = lex(text);
    lexed.words()
}

fn expect(text: &str, expected: &[&[&str]]) {
    let expected: Vec<Vec<String>> = expected
        .iter()
        .map(|line| line.iter().map(|word| word.to_string()).collect())
        .collect();
    assert_eq!(words(text), expected, "input: {text:?}");
}

#[test]
fn comments_start_anywhere_outside_double_quotes() {
    // verified: `router_id "a b"#c` keeps "a b".
    expect("a b # c\nd ! e\n# all\n! all\n", &[&["a", "b"], &["d"]]);
    expect("k \"q#r\" s\n", &[&["k", "q#r", "s"]]);
    // Single quotes do not protect a comment (decomment only knows ").
    expect("k 'q#r' s\n", &[&["k", "'q"]]);
}

#[test]
fn escaped_comment_characters() {
    // verified: outside global_defs keepalived 2.2.7 removes comments twice
    // (its VRRP and checker processes re-read a decommented copy), so `\#`
    // ends up starting a comment: `bogus_\#two x` reads `bogus_`. Inside
    // double quotes the backslash stays.
    let lexed = lex("a\\#b c\n");
    assert_eq!(lexed.words(), [["a"]]);
    assert_eq!(lexed.count(Severity::Warning), 1, "{}", lexed.messages());
    expect("\"a\\#b\"\n", &[&["a\\#b"]]);
    expect("x\\!y z\n", &[&["x"]]);
    // One pass of comment removal, as global_defs sees it.
    let mut text: Vec<_> = "a\\#b \\\" # c"
        .bytes()
        .map(|byte| text::Cell {
            byte,
            span: Span {
                file: crate::syntax::FileId(0),
                line: 1,
                start: 1,
                end: 2,
            },
        })
        .collect();
    comment::decomment(&mut text);
    assert_eq!(text::to_string(&text), "a#b \\\"");
}

#[test]
fn double_quotes_make_one_word_and_end_unquoted_words() {
    // verified: "q r"s is `q r` then `s`; x"y z"w is `x`, `y z`, `w`;
    // 'q r't is `'q` (single quotes are ordinary here).
    expect("\"q r\"s\n", &[&["q r", "s"]]);
    expect("x\"y z\"w\n", &[&["x", "y z", "w"]]);
    expect("'q r't\n", &[&["'q", "r't"]]);
    let lexed = lex("a \"b c\" d\n");
    assert!(lexed.lines[0].words[1].quoted);
    assert!(!lexed.lines[0].words[0].quoted);
}

#[test]
fn unterminated_quote_is_one_error() {
    let lexed = lex("a \"b c\nd\n");
    assert_eq!(
        lexed.words(),
        vec![vec!["a".to_string()], vec!["d".to_string()]]
    );
    assert_eq!(lexed.count(Severity::Error), 1, "{}", lexed.messages());
    assert!(
        lexed.messages().contains("test.conf:1:3: error"),
        "{}",
        lexed.messages()
    );
    // A backslash hides the quote from the comment scan, not from the
    // word splitter.
    let lexed = lex("a \\\"b\n");
    assert_eq!(lexed.count(Severity::Error), 1, "{}", lexed.messages());
}

#[test]
fn braces_split_lines_like_keepalived() {
    // verified: `}abc` is `}` then `abc`; `def{ghi` is `def`, `{`, `ghi`.
    expect("a {\n b\n}\n", &[&["a", "{"], &["b"], &["}"]]);
    expect("}abc\n", &[&["}"], &["abc"]]);
    expect("def{ghi\n", &[&["def", "{"], &["ghi"]]);
    expect("a { b c } d\n", &[&["a", "{"], &["b", "c"], &["}"], &["d"]]);
    expect("{ x\n", &[&["{"], &["x"]]);
    expect("a\n{\n}\n", &[&["a"], &["{"], &["}"]]);
    expect(
        "virtual_ipaddress { 10.0.0.1/24 10.0.0.2/24 }\n",
        &[
            &["virtual_ipaddress", "{"],
            &["10.0.0.1/24", "10.0.0.2/24"],
            &["}"],
        ],
    );
    // Braces inside double quotes do not split (verified: `"{"zz` is one
    // line whose first word is `{`).
    expect("\"{\"zz\n", &[&["{", "zz"]]);
    expect("notify \"a { b }\" c\n", &[&["notify", "a { b }", "c"]]);
}

#[test]
fn raw_line_is_what_handlers_see() {
    let lexed = lex("notify_master \"/bin/x 'a b'\" {\n");
    assert_eq!(
        lexed.lines[0].raw.as_deref(),
        Some("notify_master \"/bin/x 'a b'\"")
    );
    assert_eq!(
        lexed.lines[0].words.last().map(|word| word.text.as_str()),
        Some("{")
    );
}

#[test]
fn words_know_their_columns() {
    let lexed = lex("  alpha \"be ta\" {\n");
    let spans: Vec<(u32, u32, u32)> = lexed.lines[0]
        .words
        .iter()
        .map(|word| (word.span.line, word.span.start, word.span.end))
        .collect();
    assert_eq!(spans, vec![(1, 3, 8), (1, 9, 16), (1, 17, 18)]);
}

#[test]
fn conditional_lines() {
    // verified with -i vm: @vm kept, @^vm dropped, @other dropped,
    // @^other kept, `@vm` alone dropped, `@ vm x` dropped.
    expect(
        "@vm yes1\n@^vm no1\n@other no2\n@^other yes2\n@vm\n@ vm no3\n@vm   spaced out\n",
        &[&["yes1"], &["yes2"], &["spaced", "out"]],
    );
    let other = Options {
        config_id: Some("other".into()),
        ..options()
    };
    let lexed = lex_with("@other a\n@vm b\n", &other);
    assert_eq!(lexed.words(), vec![vec!["a".to_string()]]);
}

#[test]
fn definitions_and_uses() {
    // verified: foo${X}bar with $X=1 reads foo1bar.
    expect("$X=1\nfoo${X}bar $X\n", &[&["foo1bar", "1"]]);
    // $NAME must be followed by white space, ',', ')' or the end.
    expect("$X=1\na $X.y $X,z ($X)\n", &[&["a", "$X.y", "1,z", "(1)"]]);
    // No space before '=': `$X =1` is not a definition.
    expect("$X =1\n", &[&["$X", "=1"]]);
    // Substitution happens at use: the man page's example.
    expect(
        "$ADDRESS_BASE=10.2.${ADDRESS_BASE_SUB}\n$ADDRESS_BASE_SUB=0\n${ADDRESS_BASE}.100/32\n$ADDRESS_BASE_SUB=10\n${ADDRESS_BASE}.100/32\n",
        &[&["10.2.0.100/32"], &["10.2.10.100/32"]],
    );
    // An empty value is allowed.
    expect("$E=\na${E}b\n", &[&["ab"]]);
    // A definition line's comment is removed first (verified: $H=# is empty).
    expect("$H=#\nh${H}k\n", &[&["hk"]]);
}

#[test]
fn substituted_words_point_at_the_use() {
    let lexed = lex("$X=hello world\nk $X\n");
    let word = &lexed.lines[0].words[1];
    assert_eq!((word.span.line, word.span.start, word.span.end), (2, 3, 5));
    assert_eq!(lexed.lines[0].words[2].span, word.span);
}

#[test]
fn undefined_parameters_stay_literal() {
    // verified: ${UNDEF}undef is split at its braces: `$`, `{`, `UNDEF`,
    // `}`, `undef`; $UNDEF2 stays as it is.
    let lexed = lex("${UNDEF}undef\n$UNDEF2\n");
    assert_eq!(
        lexed.words(),
        vec![
            vec!["$".to_string(), "{".to_string()],
            vec!["UNDEF".to_string()],
            vec!["}".to_string()],
            vec!["undef".to_string()],
            vec!["$UNDEF2".to_string()],
        ]
    );
    assert_eq!(lexed.count(Severity::Warning), 1, "{}", lexed.messages());
    // Inside double quotes (scripts) nothing is said.
    let lexed = lex("notify \"echo ${HOME}\"\n");
    assert_eq!(lexed.count(Severity::Warning), 0);
    let lexed = lex("a ${_ENV}\n");
    assert!(
        lexed.messages().contains("no ${_ENV}"),
        "{}",
        lexed.messages()
    );
}

#[test]
fn multiline_definitions() {
    // verified: the three lines expand at the use, with $N substituted.
    expect(
        "$M=m1 \\\n   m2_$N \\\n   m3\n$N=5\n$M\n",
        &[&["m1"], &["m2_5"], &["m3"]],
    );
    // The man page's example, abridged: blocks inside a definition.
    expect(
        "$I= \\\nvrrp_instance VI_${NUM} { \\\n  priority 1 \\\n}\n\n$NUM=0\n$I\n$NUM=1\n$I\n",
        &[
            &["vrrp_instance", "VI_0", "{"],
            &["priority", "1"],
            &["}"],
            &["vrrp_instance", "VI_1", "{"],
            &["priority", "1"],
            &["}"],
        ],
    );
    // Nested multi-line definitions.
    expect(
        "$RS= \\\nreal_server ${R} \\\nweight 1\n\n$VS= \\\nvs \\\n$R=1 \\\n$RS \\\n$R=2 \\\n$RS\n\n$VS\n",
        &[
            &["vs"],
            &["real_server", "1"],
            &["weight", "1"],
            &["real_server", "2"],
            &["weight", "1"],
        ],
    );
    // verified: a comment line ends a multi-line definition for
    // keepalived's VRRP and checker processes.
    let lexed = lex("$D= \\\nvrrp_instance V { \\\n# note\n bogus \\\n}\n\n$D\n");
    assert_eq!(
        lexed.words(),
        [vec!["bogus\\"], vec!["}"], vec!["vrrp_instance", "V", "{"]]
    );
    assert_eq!(lexed.count(Severity::Warning), 1, "{}", lexed.messages());
    // A multi-line definition only expands where its use ends the line.
    expect("$M=a \\\nb\n\nx $M y\n", &[&["x", "$M", "y"]]);
    // `$X= \` and one line is an ordinary definition.
    expect("$X= \\\nvalue\nk $X z\n", &[&["k", "value", "z"]]);
}

#[test]
fn standard_definitions() {
    // verified: ${_INSTANCE} is the config id; ${_PWD} the file's directory.
    expect("${_INSTANCE}inst\n", &[&["vminst"]]);
    let current = std::fs::canonicalize(".").unwrap();
    expect("${_PWD}/pwd\n", &[&[&format!("{}/pwd", current.display())]]);
    // verified: keepalived 2.2.7 removes comments again after
    // substituting, so ${_HASH} and ${_BANG} start comments outside quotes.
    expect(
        "foo${_HASH}x\nw${_BANG}y\n\"a${_HASH}b\"\n",
        &[&["foo"], &["w"], &["a#b"]],
    );
    // verified: `e${_RANDOM 5 5}r` reads `e5r_RANDOM 5 5}r` (a keepalived
    // bug), which then splits at the brace.
    let lexed = lex("e${_RANDOM 5 5}r\n");
    assert_eq!(
        lexed.words(),
        vec![
            vec!["e5r_RANDOM".to_string(), "5".to_string(), "5".to_string()],
            vec!["}".to_string()],
            vec!["r".to_string()],
        ]
    );
    expect("x ${_RANDOM 3 3}\n", &[&["x", "3"]]);
    let lexed = lex("x ${_RANDOM}\n");
    let value: u64 = lexed.words()[0][1].parse().unwrap();
    assert!(value <= 32767);
    // Redefining a standard definition overrides it.
    expect("$_INSTANCE=me\n${_INSTANCE}\n", &[&["me"]]);
}

#[test]
fn recursive_definitions_do_not_hang() {
    // keepalived loops for ever on $A=$A; Fulcrum stops with an error.
    let lexed = lex("$A=$A\nk $A\n");
    assert_eq!(lexed.count(Severity::Error), 1, "{}", lexed.messages());
    // A growing one hits keepalived's line length.
    let lexed = lex("$B=x${B}\nk ${B}\n");
    assert_eq!(lexed.count(Severity::Error), 1, "{}", lexed.messages());
}

#[test]
fn sequences() {
    // verified, all of them.
    expect("~SEQ(i, 1, 3) s$i\n", &[&["s1"], &["s2"], &["s3"]]);
    expect("~SEQ(i, 3) t$i\n", &[&["t1"], &["t2"], &["t3"]]);
    expect("~SEQ(i, 0) u$i\n", &[&["u1"], &["u0"]]);
    expect("~SEQx(i, 9, 3, 15) v$i\n", &[&["v9"], &["vc"], &["vf"]]);
    expect("~SEQ(i, 3, 1) d$i\n", &[&["d3"], &["d2"], &["d1"]]);
    expect(
        "~SEQ(i, 0x10, 8, 0x20) h$i\n",
        &[&["h16"], &["h24"], &["h32"]],
    );
    // Parameters may be definitions.
    expect("$N=2\n~SEQ(i, $N) n$i\n", &[&["n1"], &["n2"]]);
    // Nested: the inner sequence runs for each outer value.
    expect(
        "~SEQ(i, 2) ~SEQ(j, 2) p${i}_$j\n",
        &[&["p1_1"], &["p1_2"], &["p2_1"], &["p2_2"]],
    );
    // A sequence producing blocks.
    expect(
        "~SEQ(i, 2) vs$i { x }\n",
        &[&["vs1", "{"], &["x"], &["}"], &["vs2", "{"], &["x"], &["}"]],
    );
}

#[test]
fn bad_sequences_are_errors() {
    for text in [
        "~SEQ(i, 1, 0, 3) x\n",
        "~SEQ(i, 3, 1, 1) x\n",
        "~SEQ(i) x\n",
        "~SEQ(i, 1 x\n",
        "~SEQ i, 1) x\n",
        "~SEQx(i, -1, 3) x\n",
        "~SEQ(i, 1, 2, 3, 4) x\n",
    ] {
        let lexed = lex(text);
        assert_eq!(
            lexed.count(Severity::Error),
            1,
            "{text:?}: {}",
            lexed.messages()
        );
        assert!(lexed.lines.is_empty(), "{text:?}");
    }
    // verified: keepalived skips the byte after the variable name.
    let lexed = lex("~SEQ(i 1) x$i\n~SEQ(i 5 ,2) y$i\n");
    assert_eq!(lexed.words(), [["x1"], ["x0"], ["y0"], ["y1"], ["y2"]]);
    assert_eq!(lexed.count(Severity::Warning), 2, "{}", lexed.messages());
    // Huge sequences are refused rather than expanded for ever.
    let lexed = lex("~SEQ(i, 1, 1, 100000000) x$i\n");
    assert_eq!(lexed.count(Severity::Error), 1);
    assert!(lexed.lines.is_empty());
}

#[test]
fn lists() {
    // verified.
    expect("~LST(i, x, y) w$i\n", &[&["wx"], &["wy"]]);
    expect(
        "~LST({i, j}, {1, 2}, {3}) z${i}_${j}_\n",
        &[&["z1_2_"], &["z3__"]],
    );
    let lexed = lex("~LST({i}, {1, 2}) z$i\n");
    assert_eq!(lexed.count(Severity::Error), 1, "{}", lexed.messages());
    let lexed = lex("~LST(i x) z\n");
    assert_eq!(lexed.count(Severity::Error), 1, "{}", lexed.messages());
}

#[test]
fn tilde_lines_are_not_substituted() {
    expect("$X=1\n~x $X\n", &[&["~x", "$X"]]);
}

/// A directory of files for include tests, removed at the end.
struct Scratch {
    root: PathBuf,
}

impl Scratch {
    fn new(name: &str) -> Self {
        let root =
            std::env::temp_dir().join(format!("fulcrum-lexer-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        Scratch { root }
    }

    fn write(&self, path: &str, text: &str) -> PathBuf {
        let path = self.root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn read(&self, path: &str, options: &Options) -> Lexed {
        let mut sources = Sources::default();
        let mut diagnostics = Diagnostics::default();
        let lines = read_file(
            &self.root.join(path),
            options,
            &mut sources,
            &mut diagnostics,
        );
        Lexed {
            lines,
            diagnostics,
            sources,
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[test]
fn includes_are_relative_to_the_including_file() {
    // verified: sub/b.conf includes c.conf from sub/, and ${_PWD} there is
    // sub's absolute path.
    let scratch = Scratch::new("relative");
    scratch.write("main.conf", "a\ninclude sub/b.conf\nz\n");
    scratch.write("sub/b.conf", "b ${_PWD}\ninclude c.conf\n");
    scratch.write("sub/c.conf", "c\n");
    let lexed = scratch.read("main.conf", &options());
    let sub = std::fs::canonicalize(scratch.root.join("sub")).unwrap();
    assert_eq!(
        lexed.words(),
        vec![
            vec!["a".to_string()],
            vec!["b".to_string(), sub.display().to_string()],
            vec!["c".to_string()],
            vec!["z".to_string()],
        ]
    );
    assert_eq!(lexed.diagnostics.items.len(), 0, "{}", lexed.messages());
    let c_file = lexed.lines[2].words[0].span.file;
    assert!(lexed.sources.file(c_file).name.ends_with("sub/c.conf"));
    assert_eq!(
        lexed
            .sources
            .file(c_file)
            .included_from
            .map(|span| span.line),
        Some(2)
    );
}

#[test]
fn include_globs_and_braces_in_order() {
    let scratch = Scratch::new("globs");
    scratch.write(
        "main.conf",
        "include conf.d/*.conf\ninclude {x,a}.inc\ninclude conf.d/[bc]*.conf\n",
    );
    for name in ["c", "a", "b"] {
        scratch.write(&format!("conf.d/{name}.conf"), &format!("{name}\n"));
    }
    scratch.write("conf.d/.hidden.conf", "hidden\n");
    scratch.write("a.inc", "a_inc\n");
    scratch.write("x.inc", "x_inc\n");
    let lexed = scratch.read("main.conf", &options());
    let firsts: Vec<String> = lexed
        .words()
        .into_iter()
        .map(|line| line[0].clone())
        .collect();
    // Sorted within a pattern, brace alternatives in their written order.
    assert_eq!(firsts, ["a", "b", "c", "x_inc", "a_inc", "b", "c"]);
    assert_eq!(lexed.diagnostics.items.len(), 0, "{}", lexed.messages());
}

#[test]
fn include_problems_are_warnings_or_errors_by_include_kind() {
    let scratch = Scratch::new("missing");
    scratch.write(
        "main.conf",
        "include nothere.conf\ninclude none/*.conf\nincluder nothere.conf\nincludew empty/*.conf\nincludeb {a,nothere}.conf\nk\n",
    );
    scratch.write("a.conf", "a\n");
    std::fs::create_dir_all(scratch.root.join("empty")).unwrap();
    let lexed = scratch.read("main.conf", &options());
    let by_line: Vec<(u32, Severity)> = lexed
        .diagnostics
        .items
        .iter()
        .map(|item| (item.span.line, item.severity))
        .collect();
    assert_eq!(
        by_line,
        vec![
            (1, Severity::Warning),
            (2, Severity::Warning),
            // includer checks readability only: a missing file is a
            // warning (keepalived: "Config files missing", status 0).
            (3, Severity::Warning),
            (4, Severity::Error),
            (5, Severity::Error),
        ],
        "{}",
        lexed.messages()
    );
    // includeb refuses the whole include when an alternative is missing.
    assert_eq!(lexed.words(), vec![vec!["k".to_string()]]);
    // -e / --all-config makes the plain include an error.
    let strict = Options {
        all_config: true,
        ..options()
    };
    let lexed = scratch.read("main.conf", &strict);
    assert_eq!(lexed.count(Severity::Error), 5, "{}", lexed.messages());
}

#[test]
fn include_loops_stop() {
    let scratch = Scratch::new("loop");
    scratch.write("main.conf", "a\ninclude main.conf\nb\n");
    let lexed = scratch.read("main.conf", &options());
    assert_eq!(
        lexed.words(),
        vec![vec!["a".to_string()], vec!["b".to_string()]]
    );
    assert_eq!(lexed.count(Severity::Error), 1, "{}", lexed.messages());
}

#[test]
fn include_after_conditional_and_substitution() {
    // keepalived checks for `include` after processing the line.
    let scratch = Scratch::new("late");
    scratch.write(
        "main.conf",
        "$F=b.conf\n@vm include $F\n@other include c.conf\n",
    );
    scratch.write("b.conf", "b\n");
    scratch.write("c.conf", "c\n");
    let lexed = scratch.read("main.conf", &options());
    assert_eq!(lexed.words(), vec![vec!["b".to_string()]]);
}

#[test]
fn missing_main_file_is_an_error() {
    let scratch = Scratch::new("main");
    let lexed = scratch.read("absent.conf", &options());
    assert!(lexed.lines.is_empty());
    assert_eq!(lexed.count(Severity::Error), 1, "{}", lexed.messages());
    assert!(
        lexed.messages().contains("absent.conf: error"),
        "{}",
        lexed.messages()
    );
}

#[test]
fn executable_files_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = Scratch::new("exec");
    scratch.write("main.conf", "includer x.conf\n");
    let path = scratch.write("x.conf", "x\n");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let lexed = scratch.read("main.conf", &options());
    assert!(lexed.lines.is_empty());
    assert_eq!(lexed.count(Severity::Error), 1, "{}", lexed.messages());
}

#[test]
fn include_check_keyword_changes_later_includes() {
    let scratch = Scratch::new("check");
    scratch.write("main.conf", "include_check\ninclude nothere.conf\n");
    let lexed = scratch.read("main.conf", &options());
    assert_eq!(lexed.count(Severity::Error), 1, "{}", lexed.messages());
}

#[test]
fn odd_bytes_do_not_break_anything() {
    let lexed = lex("a\0b c\n\r\n\t\x0c\nd\r\n");
    assert_eq!(
        lexed.words(),
        vec![vec!["a".to_string()], vec!["d".to_string()]]
    );
    let long = format!("k {}\n", "x".repeat(2000));
    let lexed = lex(&long);
    assert_eq!(lexed.count(Severity::Warning), 1);
}

#[test]
fn quoted_escaped_splitting() {
    let split = |text: &str| -> Vec<String> {
        split_quoted_escaped(text)
            .unwrap()
            .into_iter()
            .map(|word| String::from_utf8_lossy(&word).into_owned())
            .collect()
    };
    assert_eq!(split("abcd\" efg h jkl \"mnop"), ["abcd efg h jkl mnop"]);
    assert_eq!(
        split("abcd \"efg h jkl\" mnop"),
        ["abcd", "efg h jkl", "mnop"]
    );
    assert_eq!(
        split("/bin/x 'a b' \\x41\\102\\t\\cA"),
        ["/bin/x", "a b", "AB\t\u{1}"]
    );
    assert_eq!(split("\"a\\\"b\""), ["a\"b"]);
    assert_eq!(
        split_quoted_escaped("'abc"),
        Err(QuoteError::Unterminated('\''))
    );
    assert_eq!(
        split_quoted_escaped("abc\\"),
        Err(QuoteError::TrailingBackslash)
    );
}

#[test]
fn booleans_and_timers() {
    assert_eq!(parse_bool("yes"), Some(true));
    assert_eq!(parse_bool("off"), Some(false));
    assert_eq!(parse_bool("Yes"), None);
    assert_eq!(parse_timer("2.71828"), Ok(2_718_280));
    assert_eq!(parse_timer("3"), Ok(3_000_000));
    assert_eq!(parse_timer(".5"), Ok(500_000));
    assert_eq!(parse_timer("5."), Ok(5_000_000));
    assert_eq!(parse_timer("0.000001"), Ok(1));
    assert_eq!(
        parse_timer("0.0000015"),
        Err(ValueError::TooManyDecimalPlaces {
            text: "0.0000015".into(),
            rounded: 2
        })
    );
    assert_eq!(parse_timer("-1"), Err(ValueError::Negative("-1".into())));
    assert_eq!(parse_timer("1e3"), Err(ValueError::Invalid("1e3".into())));
    assert_eq!(
        parse_timer("99999999999999999999"),
        Err(ValueError::OutOfRange("99999999999999999999".into()))
    );
    assert_eq!(parse_decimal("1.5", 3), Ok(1500));
}

#[test]
fn fuzz_regressions() {
    // Found by the mutation test: a definition ending in its own use,
    // followed by a brace, regrows every piece split off the line, for
    // ever (in keepalived too); pulse stops at its line limit.
    let lexed =
        lex("$M= \\\nvrrp_instance VI_${I} { \\$M\n  interface eth0 \\\n}\n\n~SEQ(I, 1, 3) $M\n");
    assert!(lexed.count(Severity::Error) >= 1, "{}", lexed.messages());
    assert!(lexed.lines.len() as u64 <= LINE_LIMIT);
    // Found by the mutation test: a multi-line definition whose line ends
    // in its own use nests expansions without end (keepalived runs out of
    // memory); took 45 s before the nesting limit.
    let started = std::time::Instant::now();
    let lexed = lex(
        "$M= \\\nvrrp_instance VI_${I} { \\\n  virtual_router_id ${I}$M \\\n}\n\n~SEQ(I, 1, 3) $M\n",
    );
    assert_eq!(lexed.count(Severity::Error), 3, "{}", lexed.messages());
    assert!(lexed.lines.len() < 1000);
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    // Found by cargo fuzz: the same as its last line, where the expansion
    // stack does not grow (took 9 s and 500,000 lines before).
    let lexed = lex("$VI= \\\nk $NUM \\\n$VI\n\n$NUM=2\n$VI\n");
    assert_eq!(lexed.words(), [["k", "2"]]);
    assert_eq!(lexed.count(Severity::Error), 1, "{}", lexed.messages());
    // Found by cargo fuzz: each undefined ${NAME} is reported once, not
    // once per piece the line is split into (a million warnings, 4 s).
    let line = format!("k {}\n", "${U}".repeat(200));
    let lexed = lex(&line);
    assert_eq!(lexed.count(Severity::Warning), 200);
    assert_eq!(lexed.lines.len(), 200 * 3);
    // Using one multi-line definition in another, repeatedly, is fine.
    expect(
        "$A= \\\na1 \\\na2\n\n$B= \\\nb \\\n$A \\\n$A\n\n$B\n$B\n",
        &[
            &["b"],
            &["a1"],
            &["a2"],
            &["a1"],
            &["a2"],
            &["b"],
            &["a1"],
            &["a2"],
            &["a1"],
            &["a2"],
        ],
    );
}

/// The plain-line shortcut gives exactly what the cell-by-cell path gives:
/// the same line with a comment added at its end (which forces the long
/// path and is removed by it) must lex the same, for tricky lines and for
/// every line of the keepalived corpus when it is present.
#[test]
fn plain_lines_lex_as_the_long_path_does() {
    let mut samples: Vec<String> = [
        "a",
        "  a b  ",
        "\ta\tb\t",
        "a {",
        "a{",
        "a  {  ",
        "{",
        "}",
        "  }  ",
        "\u{b}{",
        "a\u{b}b {",
        "a\rb",
        "a}",
        "a { b",
        "a {}",
        "{a",
        "x\u{e9}y z {",
        "include_check",
        "weight 1",
        "real_server 172.16.0.1 8080 {",
    ]
    .iter()
    .map(|line| line.to_string())
    .collect();
    let corpus =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/keepalived/configs");
    if let Ok(entries) = std::fs::read_dir(&corpus) {
        for entry in entries.flatten() {
            if let Ok(text) = std::fs::read(entry.path()) {
                let text = String::from_utf8_lossy(&text).into_owned();
                samples.extend(text.lines().map(str::to_string));
            }
        }
    }
    // A plain line may leave out its raw text where splitting it again
    // gives its words: compared as what the keywords that split it get.
    let lex = |text: &str| {
        let mut sources = Sources::default();
        let mut diagnostics = Diagnostics::default();
        let lines = read_str("t.conf", text, &options(), &mut sources, &mut diagnostics);
        let lines: Vec<_> = lines
            .into_iter()
            .map(|line| {
                // No keyword reads the raw text of a line that starts
                // with a `{`.
                let starts_with_open = line.words.first().is_some_and(Word::is_open);
                let split = match &line.raw {
                    _ if starts_with_open => None,
                    Some(raw) => split_quoted_escaped(raw).ok(),
                    // The raw text leaves out a final `{`.
                    None => Some(
                        line.words
                            .iter()
                            .enumerate()
                            .filter(|(index, word)| {
                                !(word.is_open() && *index == line.words.len() - 1)
                            })
                            .map(|(_, word)| word.text.as_bytes().to_vec())
                            .collect(),
                    ),
                };
                (line.words, split)
            })
            .collect();
        (lines, diagnostics.items.len())
    };
    let mut compared = 0;
    let mut fast = 0;
    for line in &samples {
        if line.contains('\0')
            || plain_line(
                line.as_bytes(),
                crate::syntax::FileId(0),
                1,
                &mut Vec::new(),
                &mut Vec::new(),
            )
            .is_none()
        {
            continue;
        }
        compared += 1;
        assert_eq!(lex(line), lex(&format!("{line} #x")), "{line:?}");
        // With 64 bytes after it, a line may take the path that reads 16
        // bytes at a time: the same again.
        #[cfg(target_arch = "x86_64")]
        {
            let padding = "\n".repeat(64);
            let padded = format!("{line}\n{padding}");
            if super::fast::plain_line(
                padded.as_bytes(),
                crate::syntax::FileId(0),
                1,
                &mut Vec::new(),
            )
            .is_some()
            {
                fast += 1;
            }
            assert_eq!(
                lex(&padded),
                lex(&format!("{line} #x\n{padding}")),
                "{line:?}"
            );
        }
    }
    assert!(compared >= 12, "{compared}");
    #[cfg(target_arch = "x86_64")]
    assert!(fast >= 10, "{fast}");
}

/// keepalived reads lines with fgets() and strlen(): a NUL byte ends the
/// line, whether what is before it is plain or not, and what follows it is
/// never read (not even a brace).
#[test]
fn a_nul_byte_ends_a_line() {
    let lex = |text: &str| {
        let mut sources = Sources::default();
        let mut diagnostics = Diagnostics::default();
        let lines = read_str("t.conf", text, &options(), &mut sources, &mut diagnostics);
        (lines, diagnostics.items.len())
    };
    for (with_nul, cut) in [
        ("weight 1\0 2 {", "weight 1"),
        ("a b {\0}", "a b {"),
        ("a # c\0 d", "a # c"),
        ("x \"y\0 z\"", "x \"y"),
        ("\0a b", ""),
        ("a\0", "a"),
    ] {
        assert_eq!(
            lex(&format!("{with_nul}\nnext\n")),
            lex(&format!("{cut}\nnext\n")),
            "{with_nul:?}"
        );
    }
}

/// A file is read a block at a time: whatever the block, and wherever it
/// cuts a line, the lines and the diagnostics are those of the whole text
/// in memory (every file of the corpus that includes nothing, the
/// benchmark's kind of file, and lines longer than a block).
#[test]
fn a_file_read_in_blocks_lexes_as_its_text_in_memory() {
    let directory = std::env::temp_dir().join(format!("fulcrum-blocks-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let mut texts: Vec<(String, Vec<u8>)> = vec![
        ("plain".into(), b"virtual_server 10.0.0.1 80 {\n    delay_loop 6\n    real_server 172.16.0.1 8080 {\n        weight 1\n    }\n}\n".repeat(50)),
        ("no final newline".into(), b"global_defs {\n    router_id a\n}".to_vec()),
        ("long line".into(), format!("global_defs {{\n    router_id {}\n}}\n{}\n", "x".repeat(3000), "y ".repeat(40)).into_bytes()),
        ("not UTF-8".into(), b"global_defs {\n    router_id caf\xe9 \xff\xfe\n    notification_email {\n \xc3\xa9t\xc3\xa9\n }\n}\n".to_vec()),
        ("CR LF and NUL".into(), b"global_defs {\r\n    router_id a\x00b\r\n}\r\n".to_vec()),
    ];
    let corpus =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/keepalived/configs");
    if let Ok(entries) = std::fs::read_dir(&corpus) {
        let mut paths: Vec<_> = entries.flatten().map(|entry| entry.path()).collect();
        paths.sort();
        for path in paths {
            if let Ok(bytes) = std::fs::read(&path) {
                // Included files would be looked for relative to the
                // current directory in memory, and to the file's on disk,
                // and so is `${_PWD}`; `${_RANDOM}` differs every time.
                let has = |word: &[u8]| bytes.windows(word.len()).any(|window| window == word);
                if bytes.len() < 64 * 1024 && !has(b"include") && !has(b"_PWD") && !has(b"_RANDOM")
                {
                    texts.push((path.display().to_string(), bytes));
                }
            }
        }
    }
    let lexed = |lines: Vec<Line>, sources: &Sources, diagnostics: Diagnostics| {
        let rendered = diagnostics.render(sources);
        (lines, diagnostics.items, rendered)
    };
    let mut compared = 0;
    for (name, bytes) in &texts {
        let path = directory.join("keepalived.conf");
        std::fs::write(&path, bytes).unwrap();
        let text = String::from_utf8_lossy(bytes);
        let in_memory = {
            let mut sources = Sources::default();
            let mut diagnostics = Diagnostics::default();
            let lines = read_str(
                &path.display().to_string(),
                &text,
                &options(),
                &mut sources,
                &mut diagnostics,
            );
            lexed(lines, &sources, diagnostics)
        };
        // Lossy text in memory has no invalid bytes to report.
        let valid = std::str::from_utf8(bytes).is_ok();
        for block in [1, 7, 200, super::file_text::FileText::BLOCK] {
            if block < 100 && bytes.len() > 8 * 1024 {
                continue;
            }
            let mut sources = Sources::default();
            let mut diagnostics = Diagnostics::default();
            let lines =
                open_file_in_blocks(&path, &options(), &mut sources, &mut diagnostics, block).run();
            let from_file = lexed(lines, &sources, diagnostics);
            if valid {
                assert_eq!(from_file, in_memory, "{name}, blocks of {block}");
            } else {
                // The words are the same text (invalid bytes replaced), at
                // the columns of the file's bytes (a replacement character
                // in memory is 3 bytes).
                assert_eq!(
                    words_of(&from_file.0),
                    words_of(&in_memory.0),
                    "{name}, blocks of {block}"
                );
                if name == "not UTF-8" {
                    assert_eq!(from_file.0[1].words[2].span.start, 20, "blocks of {block}");
                }
            }
            compared += 1;
        }
    }
    std::fs::remove_dir_all(&directory).unwrap();
    assert!(compared >= 5 * 4, "{compared}");
}

/// A diagnostic shows its line from the file as it was read; if the file
/// has changed since, it says so rather than show another text.
#[test]
fn a_diagnostic_shows_the_line_read_or_says_the_file_changed() {
    let directory = std::env::temp_dir().join(format!("fulcrum-changed-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join("keepalived.conf");
    std::fs::write(&path, "global_defs {\n    router_idd a\n}\n").unwrap();
    let read = |path: &Path| {
        let mut sources = Sources::default();
        let mut diagnostics = Diagnostics::default();
        open_file(path, &options(), &mut sources, &mut diagnostics).run();
        (sources, diagnostics)
    };
    let file = crate::syntax::FileId(0);
    let (sources, _) = read(&path);
    assert_eq!(sources.line_text(file, 2), Some("    router_idd a"));
    // Read once, kept: a change afterwards does not change what is shown.
    std::fs::write(&path, "global_defs {\n    router_id bb\n}\n").unwrap();
    assert_eq!(sources.line_text(file, 2), Some("    router_idd a"));
    let (sources, _) = read(&path);
    std::fs::write(&path, "global_defs {\n    router_id b\n}\n").unwrap();
    assert_eq!(sources.line_text(file, 2), None);
    assert!(sources.file(file).changed());
    let mut diagnostics = Diagnostics::default();
    diagnostics.push(crate::diagnostic::Diagnostic::error(
        crate::syntax::Span {
            file,
            line: 2,
            start: 5,
            end: 15,
        },
        "unknown keyword",
    ));
    let rendered = diagnostics.render(&sources);
    assert!(
        rendered.contains("keepalived.conf has changed since it was read: its line is not shown"),
        "{rendered}"
    );
    // A report reads only the lines it quotes, and sees a change too.
    std::fs::write(&path, "global_defs {\n    router_idd a\n}\n").unwrap();
    let (sources, _) = read(&path);
    assert!(
        diagnostics
            .render(&sources)
            .contains(" 2 |     router_idd a\n"),
        "{}",
        diagnostics.render(&sources)
    );
    std::fs::write(&path, "global_defs {\n    router_id b\n}\n").unwrap();
    assert!(
        diagnostics
            .render(&sources)
            .contains("has changed since it was read"),
        "{}",
        diagnostics.render(&sources)
    );
    std::fs::remove_dir_all(&directory).unwrap();
}
