//! Bytes in, lexer and grammar over them: must not panic, hang or blow up.
//!
//! Run from config/fuzz: `RUSTC_BOOTSTRAP=1 cargo fuzz run parse corpus -- -max_total_time=600`
//! (the seed corpus: the keepalived corpus and Debian's samples, see
//! README.md).

#![no_main]

use fulcrum_config::lexer::Options;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let options = Options {
        config_id: Some("low".into()),
        all_config: false,
        random_seed: Some(1),
    };
    // Includes are relative to the current directory; fuzzing runs in an
    // empty one (see README.md), so they match nothing or the fuzzer's own
    // files.
    let loaded = fulcrum_config::load_str("fuzz.conf", &text, &options);
    let _ = loaded.diagnostics.render(&loaded.sources);
});
