//! The text form of captured netlink exchanges, shared by the crates whose
//! messages are tested over bytes a real kernel exchanged
//! (ipvs/tests/captured, pulse/tests/captured/nftables): one message a
//! line, `request HEX` or `reply HEX`, in wire order, among comments and
//! the headers each crate reads itself.

use std::fmt::Write as _;

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The program under capture (ipvsadm, keepalived).
    Request,
    /// The kernel.
    Reply,
}

/// One `request`/`reply` line of a capture.
#[derive(Debug, Clone)]
pub struct Line {
    /// Its line number in the file, for messages.
    pub number: usize,
    pub direction: Direction,
    pub bytes: Vec<u8>,
}

impl Line {
    /// Line `number` of a capture, if it is a message line: `None` for any
    /// other line, an error for a message line that does not read.
    pub fn read(number: usize, line: &str) -> Option<Result<Line, String>> {
        let (direction, hex) = line.split_once(' ')?;
        let direction = match direction {
            "request" => Direction::Request,
            "reply" => Direction::Reply,
            _ => return None,
        };
        Some(decode_hex(hex).map(|bytes| Line {
            number,
            direction,
            bytes,
        }))
    }
}

/// The bytes of a line's hexadecimal digits.
pub fn decode_hex(text: &str) -> Result<Vec<u8>, String> {
    if text.len() % 2 != 0 {
        return Err(format!("odd number of hex digits ({})", text.len()));
    }
    (0..text.len())
        .step_by(2)
        .map(|index| {
            u8::from_str_radix(&text[index..index + 2], 16)
                .map_err(|error| format!("bad hex at {index}: {error}"))
        })
        .collect()
}

/// `bytes` as a capture writes them.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut text, byte| {
        write!(text, "{byte:02x}").expect("writing to a String");
        text
    })
}
