//! FILE_CHECK: the number in a tracked file decides (check_file.c,
//! track_file.c).
//!
//! The file holds an integer (read as `strtol` does: leading blanks, a
//! sign, digits; anything else, or no file, reads as 0). With weight 0 the
//! checker is down when the number is not 0 (`reverse`: when it is 0).
//! Otherwise it is down when `number * weight` (negated with `reverse`) is
//! at most keepalived's IPVS_WEIGHT_FAULT, -254; above that it is up, and
//! the real server's weight moves by that product (the success's
//! `weight_offset`).

use crate::outcome::{Failure, Outcome, Success};
use crate::spec::FileSpec;

/// keepalived's IPVS_WEIGHT_FAULT: -(IPVS_WEIGHT_LIMIT + 1).
pub const WEIGHT_FAULT: i64 = -254;

pub async fn check(file: &FileSpec) -> Outcome {
    let number = match tokio::fs::read_to_string(&file.path).await {
        Ok(text) => leading_integer(&text),
        Err(_) => 0,
    };
    verdict(file, number)
}

pub fn verdict(file: &FileSpec, number: i64) -> Outcome {
    let fault = || Err(Failure::Other(format!("{} holds {number}", file.path)));
    if file.weight == 0 {
        return if (number != 0) != file.reverse {
            fault()
        } else {
            Ok(Success::default())
        };
    }
    let sign = if file.reverse { -1 } else { 1 };
    let offset = number
        .saturating_mul(i64::from(file.weight))
        .saturating_mul(sign);
    if offset <= WEIGHT_FAULT {
        return fault();
    }
    Ok(Success {
        weight_offset: Some(offset),
        ..Success::default()
    })
}

/// `strtol(text, NULL, 10)`, saturating.
pub fn leading_integer(text: &str) -> i64 {
    let text = text.trim_start();
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let mut value: i64 = 0;
    for byte in digits.bytes().take_while(u8::is_ascii_digit) {
        value = value
            .saturating_mul(10)
            .saturating_add(i64::from(byte - b'0'));
    }
    if negative { -value } else { value }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(path: &str, weight: i32, reverse: bool) -> FileSpec {
        FileSpec {
            path: path.to_owned(),
            weight,
            reverse,
        }
    }

    #[test]
    fn numbers_read_like_strtol() {
        assert_eq!(leading_integer("  42\n"), 42);
        assert_eq!(leading_integer("-7 apples"), -7);
        assert_eq!(leading_integer("+3"), 3);
        assert_eq!(leading_integer("x1"), 0);
        assert_eq!(leading_integer(""), 0);
    }

    #[test]
    fn weight_zero_is_a_switch() {
        assert!(verdict(&spec("f", 0, false), 0).is_ok());
        assert!(verdict(&spec("f", 0, false), 1).is_err());
        assert!(verdict(&spec("f", 0, true), 0).is_err());
        assert!(verdict(&spec("f", 0, true), 5).is_ok());
    }

    #[test]
    fn weighted_numbers_fault_at_minus_254() {
        assert_eq!(
            verdict(&spec("f", 1, false), -253),
            Ok(Success {
                weight_offset: Some(-253),
                ..Success::default()
            })
        );
        assert_eq!(
            verdict(&spec("f", 3, true), 2).unwrap().weight_offset,
            Some(-6)
        );
        assert!(verdict(&spec("f", 1, false), -254).is_err());
        assert!(verdict(&spec("f", 2, false), -127).is_err());
        assert!(verdict(&spec("f", 2, true), 127).is_err());
        assert!(verdict(&spec("f", 2, true), -127).is_ok());
    }

    #[tokio::test]
    async fn the_file_is_read_at_each_attempt() {
        let directory = std::env::temp_dir().join(format!("nanny-file-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join("status");
        let file = spec(path.to_str().unwrap(), 0, false);
        assert_eq!(
            check(&file).await,
            Ok(Success::default()),
            "no file reads 0"
        );
        std::fs::write(&path, "1\n").unwrap();
        assert_eq!(
            check(&file).await,
            Err(Failure::Other(format!("{} holds 1", path.display())))
        );
        std::fs::write(&path, "0\n").unwrap();
        assert_eq!(check(&file).await, Ok(Success::default()));
        let _ = std::fs::remove_dir_all(&directory);
    }
}
