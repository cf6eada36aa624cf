//! `ipvsctl`: a drop-in replacement for `ipvsadm`.
//!
//! Nothing here yet: the command line, its output and its exit codes are the
//! subject of a later issue. The crate exists so the workspace has its final
//! shape from the first commit.
