//! The Fulcrum daemon: configuration and health checks in, IPVS state out.
//!
//! Nothing here yet: the daemon is the subject of later issues.
