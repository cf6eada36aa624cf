//! Health checkers for real servers.
//!
//! Nothing here yet: the checkers are the subject of a later issue.
