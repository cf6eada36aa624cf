//! MISC_CHECK: runs a script (placeholder until the driver lands).

use crate::outcome::{Failure, Outcome};
use crate::spec::MiscSpec;

pub async fn check(misc: &MiscSpec) -> Outcome {
    Err(Failure::Other(format!(
        "MISC_CHECK {} is not implemented in nanny yet",
        misc.command
    )))
}
