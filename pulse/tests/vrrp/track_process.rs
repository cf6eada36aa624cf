//! `vrrp_track_process` against keepalived: a real process (a copy of
//! /bin/sleep under a name of its own: the kernel's process events are the
//! whole host's, whatever the network namespace) started, killed and
//! started again, and the tracking end's priority or FAULT state seen by
//! the other end, which takes over and gives back the address.
//!
//! pulse tracks, keepalived follows. keepalived cannot be the tracking
//! end here: started in a network namespace (`ip netns exec`), it cannot
//! subscribe to the process events (the kernel's connector exists in the
//! initial namespace only, and refuses the subscription from any other),
//! and Debian's keepalived 2.2.7 is built without `net_namespace`, with
//! which it would open its socket before entering the namespace. pulse
//! started inside the node opens its socket in the initial namespace
//! itself. What keepalived would do with the same file (its log lines, its
//! delays) is what pulse is checked against.

use super::*;

/// A copy of /bin/sleep whose name (at most 15 characters: the kernel's
/// `comm`) no other process of the host has.
pub(super) fn distinctive_sleep(segment: &Segment) -> Result<(PathBuf, String)> {
    let name = format!("fp{}s{}", std::process::id() % 100_000, segment.subnet);
    let path = segment.directory.join(&name);
    fs::copy("/bin/sleep", &path)?;
    Ok((path, name))
}

pub(super) fn start_process(path: &Path) -> Result<Child> {
    Ok(Command::new(path).arg("600").stdin(Stdio::null()).spawn()?)
}

pub(super) fn stop_process(process: &mut Child) -> Result<()> {
    process.kill()?;
    process.wait()?;
    Ok(())
}

/// The tracking end's configuration: priority 150, the process tracked
/// with `weight` (and `terminate_delay`, `fork_delay`).
fn tracking_configuration(segment: &Segment, name: &str, weight: i32) -> String {
    let address = segment.ipv4(100);
    let instance = Instance {
        extra: "    track_process {\n        daemon\n    }\n".to_owned(),
        ..Instance::v3(150, format!("{address}/24"))
    };
    format!(
        "vrrp_track_process daemon {{\n    process {name}\n    weight {weight}\n    \
         terminate_delay {TERMINATE_DELAY}\n    fork_delay 0.5\n}}\n{}",
        instance.configuration()
    )
}

/// Seconds, as written in the configuration.
const TERMINATE_DELAY: f64 = 1.5;

/// pulse (priority 150) tracks the process, keepalived (100) follows:
/// with weight -60 the process's death lets keepalived preempt, not
/// before `terminate_delay` (pulse's priority 90 from then on); its return
/// (an exec: no delay) lets pulse take the address back; with weight 0 its
/// death puts pulse in FAULT, after the same delay.
pub fn track_process(segment: &Segment, scenario: &str) -> Result<()> {
    let (path, name) = distinctive_sleep(segment)?;
    for weight in [-60, 0] {
        one_round(segment, scenario, &path, &name, weight)
            .with_context(|| format!("weight {weight}"))?;
    }
    Ok(())
}

fn one_round(
    segment: &Segment,
    scenario: &str,
    path: &Path,
    name: &str,
    weight: i32,
) -> Result<()> {
    let address = segment.ipv4(100);
    let directory = &segment.directory;
    let round = format!("weight{}", weight.unsigned_abs());
    let follower = Instance::v3(100, format!("{address}/24"));
    let settle = Duration::from_secs_f64(follower.interval) * 3;
    let (tracking_node, following_node) = (&segment.a, &segment.b);
    let mut process = start_process(path)?;
    let mut following = Daemon::start(
        Kind::Keepalived,
        &segment.b,
        directory,
        &format!("{round}-following"),
        &follower,
    )?;
    let mut tracking = Daemon::start_with(
        Kind::Pulse,
        &segment.a,
        directory,
        &format!("{round}-tracking"),
        &tracking_configuration(segment, name, weight),
    )?;
    let result = (|| -> Result<()> {
        wait_master(
            "pulse becomes master while its process runs",
            bound(follower.master_down_interval()),
            settle,
            tracking_node,
            following_node,
            address,
        )?;
        stop_process(&mut process)?;
        let took = wait_master(
            "keepalived takes over once pulse's process is gone",
            Duration::from_secs_f64(TERMINATE_DELAY) + bound(follower.master_down_interval()),
            settle,
            following_node,
            tracking_node,
            address,
        )?;
        report(
            scenario,
            &format!("pulse (weight {weight}) lost its process: keepalived took over"),
            took,
            Duration::from_secs_f64(TERMINATE_DELAY),
        );
        // pulse's priority drops (or it enters FAULT) only once
        // terminate_delay has passed.
        ensure!(
            took >= Duration::from_secs_f64(TERMINATE_DELAY),
            "keepalived took over {took:?} after the kill, within terminate_delay"
        );
        process = start_process(path)?;
        let took = wait_master(
            "pulse takes the address back once its process runs again",
            bound(follower.master_down_interval()),
            settle,
            tracking_node,
            following_node,
            address,
        )?;
        report(
            scenario,
            &format!("pulse (weight {weight}) has its process again: it preempted"),
            took,
            Duration::ZERO,
        );
        let log = tracking.log();
        let expected: &[&str] = if weight == 0 {
            &["(VI_1) Entering FAULT STATE"]
        } else {
            &[
                "(VI_1) Changing effective priority from 150 to 90",
                "(VI_1) Changing effective priority from 90 to 150",
            ]
        };
        for line in expected
            .iter()
            .chain(&["Quorum lost for tracked process daemon"])
        {
            ensure!(log.contains(line), "pulse did not log {line:?}");
        }
        tracking.terminate()?;
        following.terminate()?;
        Ok(())
    })();
    let _ = stop_process(&mut process);
    with_logs(result, &tracking, &following)
}
