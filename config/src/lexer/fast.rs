//! The common line, read sixteen bytes at a time.
//!
//! Most lines of a large configuration are a few words after some blanks
//! (`        weight 1`, `    real_server 10.0.0.2 80 {`). For those,
//! [`plain_line`] finds the line's end, its words and its final `{` from
//! bit masks of the line's first 64 bytes (SSE2 compares, part of every
//! x86_64), where [`super::plain_line`] looks at each byte several times
//! and `memchr` finds the line's end first. Anything else (a line longer
//! than 63 bytes, any byte `read_line` would act on, white space other
//! than blanks, a `'`, a byte over 0x7f, a brace elsewhere) is left to the
//! general path, which gives the same result for these lines (the test
//! `plain_lines_lex_as_the_long_path_does` compares them on every line of
//! the corpus).

use core::arch::x86_64::{
    __m128i, _mm_andnot_si128, _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_min_epu8,
    _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8, _mm_setzero_si128, _mm_sub_epi8,
};

use crate::syntax::{FileId, Line, Text, Word};

/// Where the bytes of the line's first chunks are, one bit per byte.
#[derive(Default)]
struct Masks {
    newline: u64,
    blank: u64,
    /// Bytes that make the line not plain, or not one for this path.
    other: u64,
    open: u64,
    close: u64,
}

/// Classifies `bytes` 16 at a time up to the chunk with the first `\n`.
fn classify(bytes: &[u8; 64]) -> Masks {
    let mut masks = Masks::default();
    for chunk in 0..4 {
        // SAFETY: SSE2 is part of the x86_64 baseline; the unaligned load
        // reads bytes 16 * chunk .. 16 * chunk + 16 of the 64-byte array.
        unsafe {
            let vector = _mm_loadu_si128(bytes.as_ptr().add(chunk * 16).cast::<__m128i>());
            let equal = |byte: u8| _mm_cmpeq_epi8(vector, _mm_set1_epi8(byte as i8));
            // Unsigned `vector - low <= high - low`, byte by byte.
            let within = |low: u8, high: u8| {
                let offset = _mm_sub_epi8(vector, _mm_set1_epi8(low as i8));
                _mm_cmpeq_epi8(
                    _mm_min_epu8(offset, _mm_set1_epi8((high - low) as i8)),
                    offset,
                )
            };
            let bits =
                |vector: __m128i| u64::from(_mm_movemask_epi8(vector) as u16) << (chunk * 16);
            let newline = equal(b'\n');
            let tab = equal(b'\t');
            // `read_line`'s bytes (see `BYTE_CLASS`: `!"#$` are
            // consecutive), control bytes but tab and newline (NUL, and
            // white space that is not a blank), `'` (a line that keeps its
            // raw text), and bytes over 0x7f: a file is read a block at a
            // time, not checked to be UTF-8 as a whole, and a line of ASCII
            // needs no check (the general path checks each word).
            let control = _mm_andnot_si128(_mm_or_si128(newline, tab), within(0, 0x1f));
            // Signed, a byte over 0x7f is below 0.
            let high = _mm_cmplt_epi8(vector, _mm_setzero_si128());
            let other = _mm_or_si128(
                _mm_or_si128(_mm_or_si128(control, high), within(b'!', b'$')),
                _mm_or_si128(
                    _mm_or_si128(equal(b'@'), equal(b'\\')),
                    _mm_or_si128(equal(b'~'), equal(b'\'')),
                ),
            );
            masks.newline |= bits(newline);
            masks.blank |= bits(_mm_or_si128(equal(b' '), tab));
            masks.other |= bits(other);
            masks.open |= bits(equal(b'{'));
            masks.close |= bits(equal(b'}'));
        }
        if masks.newline != 0 {
            break;
        }
    }
    masks
}

/// The plain line at the start of `rest` (at least 64 bytes of a file's
/// text), as [`super::plain_line`] gives it, and its length without the
/// `\n`; `None` for a line this path leaves to the general one.
pub(super) fn plain_line(
    rest: &[u8],
    file: FileId,
    line: u32,
    spare: &mut Vec<Vec<Word>>,
) -> Option<(Line, usize)> {
    let masks = classify(rest.first_chunk::<64>()?);
    if masks.newline == 0 {
        return None;
    }
    let length = masks.newline.trailing_zeros() as usize;
    let in_line = (1u64 << length) - 1;
    if masks.other & in_line != 0 {
        return None;
    }
    let text = in_line & !masks.blank;
    if text == 0 {
        return None;
    }
    let start = text.trailing_zeros() as usize;
    let last = 63 - text.leading_zeros() as usize;
    if rest[start..].starts_with(b"include") {
        return None;
    }
    let braces = (masks.open | masks.close) & in_line;
    let (words_mask, brace, text_end) = match braces.count_ones() {
        0 => (text, None, last + 1),
        // A brace alone on its line: a word of its own.
        1 if start == last => (text, None, last + 1),
        // A last `{`, after the line's text (trimmed of blanks).
        1 if masks.open & in_line == 1 << last => {
            let before = text & !braces;
            let text_end = 64 - before.leading_zeros() as usize;
            (before, Some(last), text_end)
        }
        _ => return None,
    };
    let span = super::spans_of(file, line);
    // A word starts where a text byte follows a blank (or the line's
    // start), and ends where a blank follows.
    let mut starts = words_mask & !(words_mask << 1);
    let mut ends = words_mask & !(words_mask >> 1);
    // A vector of a line the tree is done with (recycled empty), filled
    // in place.
    let mut words = spare
        .pop()
        .unwrap_or_else(|| Vec::with_capacity(starts.count_ones() as usize + 1));
    while starts != 0 {
        let from = starts.trailing_zeros() as usize;
        let to = ends.trailing_zeros() as usize + 1;
        let text = match rest.get(from..).and_then(<[u8]>::first_chunk) {
            // A short word of valid UTF-8 text, followed by enough of the
            // file to copy a whole inline block.
            Some(window) if to - from <= Text::INLINE => {
                // SAFETY: the word's bytes are ASCII (a byte over 0x7f is
                // in `other`), so valid UTF-8.
                unsafe { Text::from_window(window, to - from) }
            }
            // SAFETY: as above, ASCII.
            _ => Text::new(unsafe { std::str::from_utf8_unchecked(&rest[from..to]) }),
        };
        words.push(Word {
            text,
            span: span(from, to),
            quoted: false,
        });
        starts &= starts - 1;
        ends &= ends - 1;
    }
    let line = super::assemble(rest, words, span, brace, start..text_end, false);
    Some((line, length))
}
