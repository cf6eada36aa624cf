//! Durations in the serialized model (`pulse --dump-config`) are numbers of
//! seconds, with keepalived's microsecond resolution as decimals (`1.5`),
//! rather than serde's `{"secs": 1, "nanos": 500000000}`.

use std::time::Duration;

use serde::Serializer;

pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(value.as_secs_f64())
}

pub fn serialize_option<S: Serializer>(
    value: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => serializer.serialize_some(&value.as_secs_f64()),
        None => serializer.serialize_none(),
    }
}
