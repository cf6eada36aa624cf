//! `track_bfd` against keepalived: node c runs keepalived with a
//! `bfd_instance` alone (keepalived runs its BFD process for it) whose
//! neighbor is node a; node a's VRRP instance (priority 150) tracks a
//! `bfd_instance` with c as neighbor, weight 0; node b's (100) follows.
//! Stopping c's keepalived takes the session down, and the tracking end
//! into FAULT (b takes the address); starting it again brings the session
//! up, and the tracking end takes the address back. pulse tracks with
//! keepalived following, then keepalived tracks with pulse following, so
//! both ends are compared on the same steps.
//!
//! keepalived as the tracking end runs without `-P`: its BFD process is
//! a child of its own, which `-P` (VRRP alone) would not start. pulse's
//! BFD sessions are part of the process, `-P` or not.

use super::*;

/// c's keepalived: one BFD session with a.
fn bfd_peer_configuration(segment: &Segment) -> String {
    format!(
        "bfd_instance tracker {{\n    neighbor_ip {}\n    source_ip {}\n}}\n",
        segment.ipv4(1),
        segment.ipv4(3)
    )
}

/// a's configuration: the session with c, tracked with weight 0.
fn tracking_configuration(segment: &Segment, address: IpAddr) -> String {
    let instance = Instance {
        extra: "    track_bfd {\n        peer\n    }\n".to_owned(),
        ..Instance::v3(150, format!("{address}/24"))
    };
    format!(
        "bfd_instance peer {{\n    neighbor_ip {}\n    source_ip {}\n}}\n{}",
        segment.ipv4(3),
        segment.ipv4(1),
        instance.configuration()
    )
}

pub fn track_bfd(segment: &Segment, scenario: &str) -> Result<()> {
    for tracking in [Kind::Pulse, Kind::Keepalived] {
        one_round(segment, scenario, tracking).with_context(|| format!("{tracking} tracking"))?;
    }
    Ok(())
}

fn one_round(segment: &Segment, scenario: &str, tracking_kind: Kind) -> Result<()> {
    let address = segment.ipv4(100);
    let directory = &segment.directory;
    let following_kind = match tracking_kind {
        Kind::Pulse => Kind::Keepalived,
        Kind::Keepalived => Kind::Pulse,
    };
    let round = format!("{tracking_kind}");
    let follower = Instance::v3(100, format!("{address}/24"));
    let settle = Duration::from_secs_f64(follower.interval) * 3;
    let (tracking_node, following_node) = (&segment.a, &segment.b);
    // keepalived's BFD child writes its pid to /run/keepalived_bfd.pid
    // unless told otherwise, and refuses to start where another's is.
    let bfd_pid_file = |name: &str| {
        directory
            .join(format!("{name}-bfd.pid"))
            .to_string_lossy()
            .into_owned()
    };
    let start_peer = |attempt: u32| {
        let name = format!("{round}-bfd-peer{attempt}");
        Daemon::start_as(
            Kind::Keepalived,
            &segment.c,
            directory,
            &name,
            &bfd_peer_configuration(segment),
            false,
            &["-b", &bfd_pid_file(&name)],
        )
    };
    let mut peer = start_peer(1)?;
    let mut following = Daemon::start(
        following_kind,
        following_node,
        directory,
        &format!("{round}-following"),
        &follower,
    )?;
    let tracking_bfd_pid_file = bfd_pid_file(&format!("{round}-tracking"));
    let keepalived_arguments = ["-b", tracking_bfd_pid_file.as_str()];
    let mut tracking = Daemon::start_as(
        tracking_kind,
        tracking_node,
        directory,
        &format!("{round}-tracking"),
        &tracking_configuration(segment, address),
        tracking_kind == Kind::Pulse,
        match tracking_kind {
            Kind::Pulse => &[],
            Kind::Keepalived => &keepalived_arguments,
        },
    )?;
    let result = (|| -> Result<()> {
        // The session comes up at BFD's slow rate (1 s) at first.
        let took = wait_master(
            "the tracking end becomes master once its BFD session is up",
            bound(follower.master_down_interval()) + Duration::from_secs(5),
            settle,
            tracking_node,
            following_node,
            address,
        )?;
        report(
            scenario,
            &format!("{tracking_kind} tracking: master with the session up"),
            took,
            Duration::ZERO,
        );
        peer.terminate()?;
        let took = wait_master(
            "the follower takes over once the BFD session is down",
            bound(follower.master_down_interval()),
            settle,
            following_node,
            tracking_node,
            address,
        )?;
        report(
            scenario,
            &format!("{tracking_kind} tracking (weight 0): session down, the follower took over"),
            took,
            Duration::ZERO,
        );
        peer = start_peer(2)?;
        let took = wait_master(
            "the tracking end takes the address back once the session is up again",
            bound(follower.master_down_interval()) + Duration::from_secs(5),
            settle,
            tracking_node,
            following_node,
            address,
        )?;
        report(
            scenario,
            &format!("{tracking_kind} tracking: session up again, it preempted"),
            took,
            Duration::ZERO,
        );
        let log = tracking.log();
        for line in [
            "(VI_1) Entering FAULT STATE",
            "Tracked BFD instance peer is DOWN",
            "Tracked BFD instance peer is UP",
        ] {
            ensure!(log.contains(line), "{tracking_kind} did not log {line:?}");
        }
        tracking.terminate()?;
        following.terminate()?;
        peer.terminate()?;
        Ok(())
    })();
    let result = result.map_err(|error| error.context(format!("BFD peer log:\n{}", peer.log())));
    match tracking_kind {
        Kind::Pulse => with_logs(result, &tracking, &following),
        Kind::Keepalived => with_logs(result, &following, &tracking),
    }
}
