//! What the lexical layer hands the grammar: keepalived's "lines" of words,
//! each word remembering where in which file it came from.
//!
//! This is the contract between the two halves of the crate:
//! - `lexer` (sources, `include`, `@id` conditionals, `$NAME` definitions,
//!   `~SEQ`/`~LST`, comments, quoting, brace splitting) produces
//!   [`Line`]s, exactly the word vectors keepalived's `alloc_strvec` would
//!   give its keyword handlers, in the order keepalived would see them;
//! - `grammar` (the keyword tree, the model, defaults and checks) consumes
//!   them and never looks at raw text again, except through
//!   [`Sources`] to render a diagnostic.

/// Index of a file in [`Sources`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// Where a piece of text is: one file, one line, a range of columns.
///
/// Lines and columns are 1-based; columns count bytes, like compilers'
/// `file:line:col`. `end` is exclusive. A word produced by a `$NAME`
/// substitution points at the `$NAME` use; a word produced by `~SEQ` points
/// at the `~SEQ(...)` text. Line 0 means the whole file (a file that
/// cannot be read has no line to point at).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Span {
    pub file: FileId,
    pub line: u32,
    pub start: u32,
    pub end: u32,
}

/// The text of a word or a line: a string that holds up to
/// [`Text::INLINE`] bytes without a heap allocation (most keepalived words
/// and many whole lines are that short), and dereferences to `str`.
#[derive(Clone)]
pub struct Text(Repr);

// `repr(u8)` fixes the layout `Text::from_window` writes: the tag (0 for
// `Inline`, the first variant) in byte 0, `length` in byte 1, `bytes` in
// bytes 2 to 23; `Heap`'s box in bytes 8 to 23.
#[derive(Clone)]
#[repr(u8)]
enum Repr {
    Inline {
        length: u8,
        bytes: [u8; Text::INLINE],
    },
    Heap(Box<str>),
}

impl Text {
    /// The longest text held without a heap allocation.
    pub const INLINE: usize = 22;

    pub fn new(text: &str) -> Self {
        if text.len() <= Self::INLINE {
            let mut bytes = [0; Self::INLINE];
            bytes[..text.len()].copy_from_slice(text.as_bytes());
            Text(Repr::Inline {
                length: text.len() as u8,
                bytes,
            })
        } else {
            Text(Repr::Heap(text.into()))
        }
    }

    /// The text of `length` bytes, if they are all ASCII (`None` if not),
    /// without an intermediate `String`.
    pub(crate) fn from_ascii(length: usize, bytes: impl Iterator<Item = u8>) -> Option<Self> {
        if length <= Self::INLINE {
            let mut inline = [0; Self::INLINE];
            let mut filled = 0;
            for (slot, byte) in inline.iter_mut().zip(bytes) {
                if !byte.is_ascii() {
                    return None;
                }
                *slot = byte;
                filled += 1;
            }
            Some(Text(Repr::Inline {
                length: filled as u8,
                bytes: inline,
            }))
        } else {
            let mut text = String::with_capacity(length);
            for byte in bytes {
                if !byte.is_ascii() {
                    return None;
                }
                text.push(byte as char);
            }
            Some(Text(Repr::Heap(text.into_boxed_str())))
        }
    }

    /// The text of the first `length` bytes of `window`, copied as one
    /// block of [`Text::INLINE`] bytes (a fixed-size copy, where
    /// [`Text::new`] zeroes the block and copies a variable length; the
    /// lexer's common path makes most words this way). The bytes after
    /// `length` are kept but never read.
    ///
    /// # Safety
    /// The first `length` bytes of `window` are valid UTF-8 (and `length`
    /// is at most [`Text::INLINE`]).
    pub(crate) unsafe fn from_window(window: &[u8; Self::INLINE], length: usize) -> Self {
        debug_assert!(std::str::from_utf8(&window[..length]).is_ok());
        debug_assert!(length <= Self::INLINE);
        // Built as three whole 64-bit words: a copy of the text (into a
        // `Word`, then the vector of a line) then reads what one store
        // wrote. Written as `Repr::Inline { .. }` the compiler copied the
        // window with two overlapping stores, and the next 8-byte load of
        // the overlap waited for both to reach the cache (a failed store
        // forwarding: a quarter of the fast path's cycles, by perf).
        let word = |from: usize| {
            u64::from_le_bytes(*window[from..].first_chunk::<8>().expect("8 bytes of 22"))
        };
        // Bytes 0 and 1: the tag (0: `Inline`) and the length; 2 to 7:
        // the text's first six bytes.
        let head = (word(0) << 16) | ((length as u64) << 8);
        let words = [head.to_le(), word(6).to_le(), word(14).to_le()];
        // SAFETY: `Repr` is `repr(u8)`, 24 bytes aligned as a `u64`, and
        // these bytes are its `Inline` variant (tag 0, the length, the
        // window's 22 bytes), whose first `length` bytes are valid UTF-8
        // (the caller's promise).
        Text(unsafe { std::mem::transmute::<[u64; 3], Repr>(words) })
    }

    /// Whether the text is the one byte `byte`, without making a `str` of
    /// it (every word of every line is asked whether it is a brace).
    pub fn is_byte(&self, byte: u8) -> bool {
        match &self.0 {
            Repr::Inline { length, bytes } => *length == 1 && bytes[0] == byte,
            Repr::Heap(text) => text.as_bytes() == [byte],
        }
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline { length, bytes } => {
                let bytes = &bytes[..usize::from(*length)];
                // SAFETY: an inline text's first `length` bytes are only
                // ever filled from a `&str` (`new`, `from_window`) or from
                // ASCII bytes (`from_ascii`), whole.
                unsafe { std::str::from_utf8_unchecked(bytes) }
            }
            Repr::Heap(text) => text,
        }
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl Default for Text {
    fn default() -> Self {
        Text::new("")
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Self {
        Text::new(text)
    }
}

impl From<String> for Text {
    fn from(text: String) -> Self {
        if text.len() <= Self::INLINE {
            Text::new(&text)
        } else {
            Text(Repr::Heap(text.into_boxed_str()))
        }
    }
}

impl From<&Text> for String {
    fn from(text: &Text) -> Self {
        text.as_str().to_string()
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), formatter)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self.as_str(), formatter)
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    // Inlined, the length is compared first and most calls end there (the
    // lexer asks each line whether it is `include_check`).
    #[inline]
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<Text> for str {
    fn eq(&self, other: &Text) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Text> for &str {
    fn eq(&self, other: &Text) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Text> for String {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

/// One word of a line, after quoting, escapes and substitutions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub text: Text,
    pub span: Span,
    /// Written in double quotes (keepalived keeps `{`, `}`, `#` and `!`
    /// literal inside them, so a quoted `{` is not a block opener).
    pub quoted: bool,
}

impl Word {
    /// An unquoted `{`.
    pub fn is_open(&self) -> bool {
        !self.quoted && self.text.is_byte(b'{')
    }

    /// An unquoted `}`.
    pub fn is_close(&self) -> bool {
        !self.quoted && self.text.is_byte(b'}')
    }
}

/// One keepalived line: the first word is the keyword, the rest its
/// arguments. Braces are words of their own, wherever they were written
/// (`virtual_server 10.0.0.1 80 {` is one line of four words; a `}` alone
/// on a source line is a line of one word).
///
/// keepalived splits `keyword args {` into two lines (`keyword args`, then
/// `{`); here the `{` stays the last word of the keyword's line. Note that
/// keepalived itself compares words, not quoting, when it looks for braces:
/// a line whose first word is a quoted `"{"` is taken as an unexpected `{`
/// by keepalived 2.2.7 (verified); [`Word::quoted`] lets the grammar choose.
#[derive(Debug, Clone, Default)]
pub struct Line {
    pub words: Vec<Word>,
    /// The line as keepalived's keyword handlers see it (its `buf_extern`):
    /// after comments, conditionals and substitutions, before the split
    /// into words, without a trailing `{`. Keywords that take a command
    /// line (notify scripts, `misc_path`, track scripts) re-split it with
    /// `lexer::split_quoted_escaped`, which knows `'` quotes and escapes.
    /// `None` where that split gives the words themselves (a file line with
    /// no quote, escape or substitution: most lines, which are then not
    /// copied twice). A box rather than a [`Text`]: most lines have none,
    /// and `None` is then one word of zeros, which a move of the line
    /// copies without waiting (an inline `Text`'s `None` is one byte, and a
    /// wider load of it right after waited for the store to complete).
    pub raw: Option<Box<str>>,
    /// Whether no word but the last can be a brace (set by the lexer for
    /// the plain lines it reads straight from a file, which have at most a
    /// final `{` or a brace alone): the tree then splits the line without
    /// asking each word. `false` says nothing.
    pub braces_last_only: bool,
}

// Equal by words and raw text: `braces_last_only` is a hint of the path
// that read the line (the same words read by another path have it unset).
impl PartialEq for Line {
    fn eq(&self, other: &Self) -> bool {
        self.words == other.words && self.raw == other.raw
    }
}

impl Eq for Line {}

impl Line {
    /// A line of `words`, its raw text being the words joined by spaces
    /// (for tests that build lines by hand).
    pub fn new(words: Vec<Word>) -> Self {
        let raw = words
            .iter()
            .filter(|word| !word.is_open())
            .map(|word| word.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
            .into();
        let braces_last_only = words
            .iter()
            .rev()
            .skip(1)
            .all(|word| !word.is_open() && !word.is_close());
        Line {
            words,
            raw: Some(raw),
            braces_last_only,
        }
    }
}

/// One source file as read (the text diagnostics quote).
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The path as given or as found by `include` (what diagnostics print).
    pub name: String,
    /// Where the file was included from, if it was.
    pub included_from: Option<Span>,
    /// The file's text (invalid UTF-8 replaced): set from the start for
    /// text given in memory; for a file on disk, read again when a
    /// diagnostic first shows one of its lines (the lexer reads a file a
    /// block at a time and keeps none of it), and `None` if the file has
    /// changed since.
    text: std::sync::OnceLock<Option<String>>,
    on_disk: Option<OnDisk>,
}

/// A file the lexer read from disk, and what it was then.
#[derive(Debug, Clone)]
struct OnDisk {
    path: std::path::PathBuf,
    identity: Identity,
}

impl OnDisk {
    /// What `read` gets from the file, if the file is as it was when it was
    /// lexed, before and after the read; `None` if it has changed (or gone).
    fn read_unchanged<T>(&self, read: impl FnOnce(&std::fs::File) -> Option<T>) -> Option<T> {
        let file = std::fs::File::open(&self.path).ok()?;
        if Identity::of(&file.metadata().ok()?) != self.identity {
            return None;
        }
        let read = read(&file)?;
        if Identity::of(&file.metadata().ok()?) != self.identity {
            return None;
        }
        Some(read)
    }
}

/// The `wanted` lines (1-based) of a text (invalid UTF-8 replaced, line
/// endings removed), reading it no further than the last of them.
fn pick_lines(
    mut reader: impl std::io::BufRead,
    wanted: &std::collections::BTreeSet<u32>,
) -> Option<std::collections::HashMap<u32, String>> {
    let last = *wanted.last()?;
    let mut lines = std::collections::HashMap::new();
    let mut bytes = Vec::new();
    for number in 1..=last {
        bytes.clear();
        if reader.read_until(b'\n', &mut bytes).ok()? == 0 {
            break;
        }
        if wanted.contains(&number) {
            let text = String::from_utf8_lossy(&bytes);
            let text = text.strip_suffix('\n').unwrap_or(&text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            lines.insert(number, text.to_string());
        }
    }
    Some(lines)
}

/// The lines a report quotes ([`Sources::excerpts`]).
#[derive(Debug, Default)]
pub struct Excerpts {
    lines: std::collections::HashMap<(FileId, u32), String>,
    /// Files on disk that have changed since they were lexed.
    changed: std::collections::HashSet<FileId>,
}

impl Excerpts {
    pub fn line(&self, file: FileId, line: u32) -> Option<&str> {
        self.lines.get(&(file, line)).map(String::as_str)
    }

    /// Whether `file` has changed on disk since it was lexed (its lines
    /// are then not shown).
    pub fn changed(&self, file: FileId) -> bool {
        self.changed.contains(&file)
    }
}

/// What tells a file from a changed one: an edit changes its modification
/// time (nanoseconds on Linux's file systems) or its length, a new file
/// put in its place its inode.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    device: u64,
    inode: u64,
    length: u64,
    modified: (i64, i64),
}

impl Identity {
    fn of(metadata: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Identity {
            device: metadata.dev(),
            inode: metadata.ino(),
            length: metadata.len(),
            modified: (metadata.mtime(), metadata.mtime_nsec()),
        }
    }
}

impl SourceFile {
    /// Text given in memory (tests, fuzzing, a file's name in a diagnostic
    /// about it).
    pub fn in_memory(name: String, text: String, included_from: Option<Span>) -> Self {
        SourceFile {
            name,
            included_from,
            text: std::sync::OnceLock::from(Some(text)),
            on_disk: None,
        }
    }

    /// A file being read from disk: `metadata` is the open file's, taken
    /// before its first byte was read.
    pub fn on_disk(
        name: String,
        path: std::path::PathBuf,
        metadata: &std::fs::Metadata,
        included_from: Option<Span>,
    ) -> Self {
        SourceFile {
            name,
            included_from,
            text: std::sync::OnceLock::new(),
            on_disk: Some(OnDisk {
                path,
                identity: Identity::of(metadata),
            }),
        }
    }

    /// A file read from disk whole (a reload that compares it with what was
    /// read before): its text is known from the start.
    pub fn on_disk_with_bytes(
        name: String,
        path: std::path::PathBuf,
        metadata: &std::fs::Metadata,
        bytes: Vec<u8>,
    ) -> Self {
        SourceFile {
            name,
            included_from: None,
            text: std::sync::OnceLock::from(Some(text_of(bytes))),
            on_disk: Some(OnDisk {
                path,
                identity: Identity::of(metadata),
            }),
        }
    }

    /// Keeps `bytes` as the file's text: what the lexer read of a file on
    /// disk, whole (a file read in parts on several threads).
    pub(crate) fn keep_text(&self, bytes: Vec<u8>) {
        let _ = self.text.set(Some(text_of(bytes)));
    }

    /// Whether the file was read from disk (not given in memory).
    pub fn is_on_disk(&self) -> bool {
        self.on_disk.is_some()
    }

    /// The file's text as the lexer read it; `None` for a file on disk that
    /// has changed (or gone) since.
    pub fn text(&self) -> Option<&str> {
        self.text
            .get_or_init(|| {
                let bytes = self.on_disk.as_ref()?.read_unchanged(|mut file| {
                    let mut bytes = Vec::new();
                    std::io::Read::read_to_end(&mut file, &mut bytes).ok()?;
                    Some(bytes)
                })?;
                Some(text_of(bytes))
            })
            .as_deref()
    }

    /// Whether the file's text cannot be shown: it has changed on disk
    /// since it was read.
    pub fn changed(&self) -> bool {
        self.text().is_none()
    }
}

/// A file's bytes as the text diagnostics show: the lexer reads invalid
/// UTF-8 as replacement characters, and so does this (without a copy when
/// the bytes are valid).
fn text_of(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    }
}

/// Every file read for one configuration.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub files: Vec<SourceFile>,
}

impl Sources {
    pub fn add(&mut self, file: SourceFile) -> FileId {
        self.files.push(file);
        FileId(self.files.len() as u32 - 1)
    }

    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    /// The `wanted` lines (1-based), read for a report in one pass per
    /// file, up to the last line wanted (a file on disk is read again, as
    /// long as it has not changed), keeping only the lines wanted. Read whole, the file was held in memory
    /// for the report (18.5 MB more for the benchmark's file and its one
    /// note) and read to its end.
    pub fn excerpts(&self, wanted: impl IntoIterator<Item = (FileId, u32)>) -> Excerpts {
        let mut by_file: std::collections::BTreeMap<FileId, std::collections::BTreeSet<u32>> =
            std::collections::BTreeMap::new();
        for (file, line) in wanted {
            if line > 0 {
                by_file.entry(file).or_default().insert(line);
            }
        }
        let mut excerpts = Excerpts::default();
        for (id, lines) in by_file {
            let file = self.file(id);
            let read = match (file.text.get(), &file.on_disk) {
                // Given in memory, or read whole before (`None`: found
                // changed then).
                (Some(text), _) => text
                    .as_deref()
                    .and_then(|text| pick_lines(text.as_bytes(), &lines)),
                (None, Some(on_disk)) => on_disk.read_unchanged(|file| {
                    pick_lines(std::io::BufReader::with_capacity(64 * 1024, file), &lines)
                }),
                (None, None) => None,
            };
            match read {
                Some(read) => {
                    for (line, text) in read {
                        excerpts.lines.insert((id, line), text);
                    }
                }
                None => {
                    excerpts.changed.insert(id);
                }
            }
        }
        excerpts
    }

    /// The text of a 1-based line, without its line ending.
    pub fn line_text(&self, file: FileId, line: u32) -> Option<&str> {
        // Line ends found with memchr (much faster on a large file than
        // `str::split`); a '\n' never falls inside a character.
        let text = self.file(file).text()?.as_bytes();
        let index = line.checked_sub(1)? as usize;
        let start = match index {
            0 => 0,
            _ => memchr::memchr_iter(b'\n', text).nth(index - 1)? + 1,
        };
        let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |end| start + end);
        let bytes = &text[start..end];
        let text = std::str::from_utf8(bytes).ok()?;
        Some(text.strip_suffix('\r').unwrap_or(text))
    }
}

#[cfg(test)]
mod tests {
    use super::Text;

    #[test]
    fn a_text_from_a_window_is_the_text_of_its_first_bytes() {
        let window: [u8; Text::INLINE] = *b"abcdefghijklmnopqrstuv";
        for length in 0..=Text::INLINE {
            // SAFETY: ASCII.
            let text = unsafe { Text::from_window(&window, length) };
            let expected = std::str::from_utf8(&window[..length]).unwrap();
            assert_eq!(text.as_str(), expected);
            assert_eq!(text.is_byte(b'a'), length == 1);
            assert_eq!(text.clone().as_str(), expected);
            // The niche `Option<Text>` uses is still there.
            assert!(Some(text).is_some());
        }
        assert_eq!(std::mem::size_of::<Option<Text>>(), 24);
    }
}
