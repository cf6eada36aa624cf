//! An open file's bytes, read a block at a time as its lines are lexed.
//!
//! A large configuration is never held whole: the lexer needs a line and a
//! little look-ahead, and the tree and the model copy what they keep. A
//! generated file of 10,000 virtual servers is 18.5 MB, which, read whole,
//! was a third of `pulse -t`'s memory and a sixth of its time (the kernel
//! zeroing and mapping a page for every 4 KiB of it, then copying the file
//! into them). A diagnostic's line is read again from the file when it is
//! shown ([`crate::syntax::SourceFile`]).

use std::fs::File;
use std::io::Read;

pub(crate) struct FileText {
    /// `None` once the file's end is reached (or for text in memory).
    reader: Option<File>,
    buffer: Buffer,
    /// The unread bytes are `buffer[start..end]`.
    start: usize,
    end: usize,
    /// Bytes asked of the file at a time.
    block: usize,
    /// A read that failed, for the lexer to report; the file ends there.
    pub error: Option<std::io::Error>,
}

impl FileText {
    /// The bytes read at a time from a file: large enough for few system
    /// calls, small enough to stay in the processor's cache.
    pub const BLOCK: usize = 64 * 1024;

    /// The look-ahead [`FileText::rest`] keeps when the file has it: the
    /// fast path reads a line's first 64 bytes at once, and copies up to
    /// 22 bytes from a word's start.
    const AHEAD: usize = 128;

    /// Text already in memory (a string given to the lexer).
    pub fn in_memory(bytes: Vec<u8>) -> Self {
        FileText {
            reader: None,
            end: bytes.len(),
            buffer: Buffer::Own(bytes),
            start: 0,
            block: Self::BLOCK,
            error: None,
        }
    }

    /// The bytes `range` of a file read whole, shared with the lexers of
    /// its other parts (read on other threads) and kept for its
    /// [`crate::syntax::SourceFile`] once they are done.
    pub fn part_of(bytes: std::sync::Arc<Vec<u8>>, range: std::ops::Range<usize>) -> Self {
        FileText {
            reader: None,
            start: range.start,
            end: range.end,
            buffer: Buffer::Shared(bytes),
            block: Self::BLOCK,
            error: None,
        }
    }

    /// A file, read `block` bytes at a time.
    pub fn streamed(file: File, block: usize) -> Self {
        let block = block.max(1);
        FileText {
            reader: Some(file),
            // Room for a block and the unread part of the last one.
            buffer: Buffer::Own(vec![0; block + Self::AHEAD]),
            start: 0,
            end: 0,
            block,
            error: None,
        }
    }

    /// The unread bytes, at least [`FileText::AHEAD`] of them unless the
    /// file ends first (more are read when fewer are left).
    pub fn rest(&mut self) -> &[u8] {
        if self.end - self.start < Self::AHEAD {
            self.read_more();
        }
        &self.buffer[self.start..self.end]
    }

    /// The unread bytes up to and with the next `\n`, or up to the end of
    /// the file when no `\n` is left, read from the file as needed (a line
    /// may be longer than a block).
    pub fn line(&mut self) -> &[u8] {
        let mut searched = 0;
        loop {
            let unread = &self.buffer[self.start..self.end];
            if let Some(newline) = memchr::memchr(b'\n', &unread[searched..]) {
                let length = searched + newline + 1;
                return &self.buffer[self.start..self.start + length];
            }
            searched = unread.len();
            if !self.read_more() {
                return &self.buffer[self.start..self.end];
            }
        }
    }

    /// [`FileText::line`], marked read.
    pub fn take_line(&mut self) -> &[u8] {
        let length = self.line().len();
        self.start += length;
        &self.buffer[self.start - length..self.start]
    }

    /// Marks `count` bytes of [`FileText::rest`] or [`FileText::line`] read.
    pub fn consume(&mut self, count: usize) {
        debug_assert!(count <= self.end - self.start);
        self.start += count;
    }

    /// Reads more of the file after the unread bytes; whether any came.
    fn read_more(&mut self) -> bool {
        let (Some(reader), Buffer::Own(buffer)) = (self.reader.as_mut(), &mut self.buffer) else {
            return false;
        };
        // The unread bytes go to the front, then room is made for a block
        // after them (more than the buffer only for a line longer than a
        // block).
        if self.start > 0 {
            buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if buffer.len() < self.end + self.block {
            // Doubled, so that a line of any length costs its length in
            // copies, not its length times its blocks.
            let length = (self.end + self.block).max(2 * buffer.len());
            buffer.resize(length, 0);
        }
        loop {
            match reader.read(&mut buffer[self.end..]) {
                Ok(0) => {
                    self.reader = None;
                    return false;
                }
                Ok(count) => {
                    self.end += count;
                    return true;
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => {
                    self.error = Some(error);
                    self.reader = None;
                    return false;
                }
            }
        }
    }
}

/// A [`FileText`]'s bytes: its own (a file read a block at a time, or text
/// given), or a part of a file read whole and shared.
enum Buffer {
    Own(Vec<u8>),
    Shared(std::sync::Arc<Vec<u8>>),
}

impl std::ops::Deref for Buffer {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Buffer::Own(bytes) => bytes,
            Buffer::Shared(bytes) => bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FileText;
    use std::io::Write;

    /// An open file holding `bytes` (its name is removed at once).
    fn file_of(bytes: &[u8]) -> std::fs::File {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "fulcrum-file-text-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::File::create(&path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
        let file = std::fs::File::open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        file
    }

    /// Every line, as `line` gives them, for blocks of each size.
    #[test]
    fn lines_come_whole_whatever_the_block() {
        let mut text = Vec::new();
        for index in 0..300 {
            text.extend(std::iter::repeat_n(b'x', index * 7 % 301));
            text.push(b'\n');
        }
        text.extend(b"last line without an end");
        let expected: Vec<&[u8]> = text.split_inclusive(|&byte| byte == b'\n').collect();
        for block in [1, 2, 7, 64, 127, 128, 1000, 1 << 20] {
            let mut file = FileText::streamed(file_of(&text), block);
            let mut lines = Vec::new();
            loop {
                let line = file.line().to_vec();
                if line.is_empty() {
                    break;
                }
                file.consume(line.len());
                lines.push(line);
            }
            assert_eq!(lines, expected, "block {block}");
            assert!(file.error.is_none());
        }
    }

    #[test]
    fn the_rest_holds_the_look_ahead_while_the_file_has_it() {
        let text: Vec<u8> = (0..1000u32).map(|index| (index % 251) as u8).collect();
        let mut file = FileText::streamed(file_of(&text), 10);
        let mut read = 0;
        while read < text.len() {
            let rest = file.rest();
            assert_eq!(
                rest.len().min(FileText::AHEAD),
                (text.len() - read).min(FileText::AHEAD)
            );
            assert_eq!(rest, &text[read..read + rest.len()]);
            let step = rest.len().min(3);
            file.consume(step);
            read += step;
        }
        assert!(file.rest().is_empty());
    }

    #[test]
    fn text_in_memory_is_read_in_place() {
        let mut file = FileText::in_memory(b"a\nb".to_vec());
        assert_eq!(file.line(), b"a\n");
        file.consume(2);
        assert_eq!(file.rest(), b"b");
        assert_eq!(file.line(), b"b");
        file.consume(1);
        assert!(file.line().is_empty());
    }
}
