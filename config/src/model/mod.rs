//! The typed keepalived configuration, with keepalived's defaults applied.
//!
//! Every field documents the default keepalived uses when the keyword is
//! absent; `Option` is used where keepalived distinguishes "unset".

use serde::Serialize;

/// A whole keepalived.conf.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Config {}
