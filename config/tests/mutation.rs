//! A bounded random-mutation test of the parser that runs with `cargo test`
//! (cargo fuzz, in config/fuzz, needs libFuzzer and runs for minutes): seed
//! configurations, mutated with bytes and tokens that exercise the lexer's
//! machinery, must load without a panic and quickly. Deterministic; set
//! FULCRUM_MUTATIONS to run more cases.

use fulcrum_config::lexer::Options;
use std::time::{Duration, Instant};

const SEEDS: &[&str] = &[
    "global_defs {\n  router_id ${NAME}\n  @low notification_email { a@b }\n}\n",
    "$M= \\\nvrrp_instance VI_${I} { \\\n  interface eth0 \\\n  virtual_router_id ${I} \\\n  priority 100 \\\n  virtual_ipaddress { 10.0.0.${I}/24 } \\\n}\n\n~SEQ(I, 1, 3) $M\n",
    "virtual_server 10.0.0.1 80 {\n  lb_algo rr\n  lb_kind NAT\n  real_server 10.0.1.1 80 {\n    weight 1\n    TCP_CHECK { connect_timeout 3 }\n  }\n}\n",
    "~LST({a, b}, {1, x}, {2, y}) vrrp_script s$a { script \"/bin/true $b\" }\n",
    "vrrp_instance V {\n notify_master \"/bin/echo 'a b' \\x41\"\n track_script {\n  s1 weight -10\n }\n}\n",
    "include conf.d/*.conf\n$X=$Y\n$Y=x\nk ${X} ${_RANDOM 1 9} ${_PWD} ${_INSTANCE} ${_HASH} ${_BANG}\n",
];

const TOKENS: &[&str] = &[
    "{",
    "}",
    "\"",
    "'",
    "\\",
    "#",
    "!",
    "\n",
    " ",
    "$X",
    "${X}",
    "$X=",
    "${_RANDOM 1 2}",
    "${_RANDOM 5 5}",
    "~SEQ(",
    "~SEQx(i,1,2)",
    "~LST(",
    ")",
    ",",
    "@low ",
    "@^low ",
    "include ",
    "includea ",
    "$M",
    "\\\n",
    "\0",
    "\r",
    "${",
    "$",
    "@",
    "~",
];

struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }
}

fn mutate(random: &mut Random, seed: &str) -> Vec<u8> {
    let mut bytes = seed.as_bytes().to_vec();
    for _ in 0..1 + random.below(8) {
        let at = random.below(bytes.len() + 1);
        match random.below(4) {
            0 if !bytes.is_empty() => {
                let end = (at + random.below(6)).min(bytes.len());
                bytes.drain(at.min(end)..end);
            }
            1 => bytes.insert(at, random.next() as u8),
            _ => {
                let token = TOKENS[random.below(TOKENS.len())];
                bytes.splice(at..at, token.bytes());
            }
        }
    }
    bytes
}

#[test]
fn mutated_configurations_load() {
    let cases: usize = std::env::var("FULCRUM_MUTATIONS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(3000);
    let options = Options {
        config_id: Some("low".into()),
        all_config: false,
        random_seed: Some(1),
    };
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    let mut slowest = Duration::ZERO;
    let mut slowest_text = String::new();
    for case in 0..cases {
        let seed = SEEDS[case % SEEDS.len()];
        let input = mutate(&mut random, seed);
        let text = String::from_utf8_lossy(&input).into_owned();
        let started = Instant::now();
        let result = std::panic::catch_unwind(|| {
            let loaded = fulcrum_config::load_str("mutated.conf", &text, &options);
            let _ = loaded.diagnostics.render(&loaded.sources);
            // Streaming the lines to the grammar must change nothing: the
            // same model and diagnostics as from all the lines at once.
            let mut sources = fulcrum_config::syntax::Sources::default();
            let mut diagnostics = fulcrum_config::diagnostic::Diagnostics::default();
            let lines = fulcrum_config::lexer::read_str(
                "mutated.conf",
                &text,
                &options,
                &mut sources,
                &mut diagnostics,
            );
            let config = fulcrum_config::grammar::parse(&lines, &mut diagnostics);
            assert_eq!(
                format!("{:?}", (&loaded.diagnostics, &loaded.config)),
                format!("{:?}", (&diagnostics, &config)),
                "streamed and whole parses differ"
            );
        });
        let elapsed = started.elapsed();
        if elapsed > slowest {
            slowest = elapsed;
            slowest_text = text.clone();
        }
        assert!(result.is_ok(), "case {case} panicked on {text:?}");
    }
    println!("{cases} mutated configurations loaded; slowest {slowest:?}");
    assert!(
        slowest < Duration::from_secs(5),
        "slowest case took {slowest:?}: {slowest_text:?}"
    );
}
