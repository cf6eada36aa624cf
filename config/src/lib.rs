//! The keepalived.conf parser and its typed model.
//!
//! Nothing here yet: the grammar, the model and the diagnostics are the subject
//! of a later issue.
