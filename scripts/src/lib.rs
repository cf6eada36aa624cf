//! The scripts keepalived runs, as keepalived 2.2.7 runs them: whom each
//! runs as ([`account`]), whether it may run at all
//! (`enable_script_security`, [`security`]), and starting it
//! ([`run`]). pulse's VRRP and LVS halves and nanny's MISC_CHECK all go
//! through here.

pub mod account;
pub mod review;
pub mod run;
pub mod security;
