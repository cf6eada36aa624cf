//! The notify FIFOs against keepalived: the same configuration
//! (`notify_fifo` and `vrrp_notify_fifo`, each with a `*_fifo_script`
//! copying what it reads to a file; a sync group; the instance with
//! `notify_priority_changes` and two tracked files, the group with
//! `sync_group_tracking_weight`) run by keepalived, then by pulse, in `a`,
//! with keepalived in `b` as the peer each time. Each goes through its
//! start (BACKUP, then MASTER over the peer's lower priority), a priority
//! change (a tracked file lowers it below the peer's: the peer takes
//! over), its return (a takes the address back), a reload of the same
//! file (`fifo_write_vrrp_states_on_reload`), FAULT (the other file, of
//! weight 0) and its stop; the lines each daemon's scripts copied are
//! then compared, FIFO by FIFO, byte for byte, and the modes of the FIFOs
//! each made.
//!
//! Nothing is normalised: each daemon has FIFOs and copies of its own (the
//! paths differ, the lines do not name them). The copying scripts ignore
//! SIGTERM, which both daemons send them at the stop before the STOP
//! lines, so that those lines are read too (keepalived then kills them a
//! second later; pulse likewise). The FIFOs the daemons created are gone
//! after the stop.

use super::*;

/// Whose FIFOs: the file names of a daemon's FIFOs and copies.
struct Paths {
    global_fifo: PathBuf,
    vrrp_fifo: PathBuf,
    global_copy: PathBuf,
    vrrp_copy: PathBuf,
    track_file: PathBuf,
    fault_file: PathBuf,
}

impl Paths {
    fn of(directory: &Path, kind: Kind) -> Paths {
        Paths {
            global_fifo: directory.join(format!("{kind}-global.fifo")),
            vrrp_fifo: directory.join(format!("{kind}-vrrp.fifo")),
            global_copy: directory.join(format!("{kind}-global.lines")),
            vrrp_copy: directory.join(format!("{kind}-vrrp.lines")),
            track_file: directory.join(format!("{kind}-weight")),
            fault_file: directory.join(format!("{kind}-fault")),
        }
    }
}

/// A FIFO's reader: its output file, then the FIFO (keepalived's last
/// argument); each line appended as read.
fn copying_script(directory: &Path) -> Result<PathBuf> {
    let path = directory.join("copy-fifo.sh");
    fs::write(
        &path,
        "#!/bin/sh\ntrap '' TERM\nwhile read -r line; do\n    printf '%s\\n' \"$line\" >> \"$1\"\ndone < \"$2\"\n",
    )?;
    fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    Ok(path)
}

fn configuration(paths: &Paths, script: &Path, address: IpAddr) -> String {
    let instance = Instance {
        extra:
            "    notify_priority_changes\n    track_file {\n        weight\n        fault\n    }\n"
                .to_owned(),
        ..Instance::v3(150, format!("{address}/24"))
    };
    format!(
        "global_defs {{
    notify_fifo {}
    notify_fifo_script \"{} {}\"
    vrrp_notify_fifo {}
    vrrp_notify_fifo_script \"{} {}\"
    fifo_write_vrrp_states_on_reload
}}
vrrp_track_file weight {{
    file {}
    weight 1
}}
vrrp_track_file fault {{
    file {}
    weight 0
}}
vrrp_sync_group G1 {{
    group {{
        VI_1
    }}
    sync_group_tracking_weight
}}
{}",
        paths.global_fifo.display(),
        script.display(),
        paths.global_copy.display(),
        paths.vrrp_fifo.display(),
        script.display(),
        paths.vrrp_copy.display(),
        paths.track_file.display(),
        paths.fault_file.display(),
        instance.configuration()
    )
}

pub fn notify_fifo(segment: &Segment, scenario: &str) -> Result<()> {
    let script = copying_script(&segment.directory)?;
    let mut copies = Vec::new();
    let mut fifo_modes = Vec::new();
    for kind in [Kind::Keepalived, Kind::Pulse] {
        let paths = Paths::of(&segment.directory, kind);
        let modes = one_round(segment, kind, &paths, &script).with_context(|| format!("{kind}"))?;
        println!(
            "{scenario}: {kind}: the FIFOs it made: modes {:o} (global), {:o} (VRRP's)",
            modes[0], modes[1]
        );
        fifo_modes.push(modes);
        let global = fs::read_to_string(&paths.global_copy).unwrap_or_default();
        let vrrp = fs::read_to_string(&paths.vrrp_copy).unwrap_or_default();
        println!(
            "{scenario}: {kind}: notify_fifo: {}",
            global.lines().collect::<Vec<_>>().join(" / ")
        );
        println!(
            "{scenario}: {kind}: vrrp_notify_fifo: {}",
            vrrp.lines().collect::<Vec<_>>().join(" / ")
        );
        ensure!(
            !paths.global_fifo.exists() && !paths.vrrp_fifo.exists(),
            "{kind} left the FIFOs it created"
        );
        copies.push((global, vrrp));
    }
    ensure!(
        fifo_modes[0] == fifo_modes[1],
        "the FIFOs' modes: keepalived {:o} {:o}, pulse {:o} {:o}",
        fifo_modes[0][0],
        fifo_modes[0][1],
        fifo_modes[1][0],
        fifo_modes[1][1]
    );
    let (keepalived, pulse) = (&copies[0], &copies[1]);
    ensure!(
        keepalived.0 == pulse.0,
        "notify_fifo: keepalived wrote\n{}pulse\n{}",
        keepalived.0,
        pulse.0
    );
    ensure!(
        keepalived.1 == pulse.1,
        "vrrp_notify_fifo: keepalived wrote\n{}pulse\n{}",
        keepalived.1,
        pulse.1
    );
    ensure!(
        keepalived.0.contains("INSTANCE \"VI_1\" STOP"),
        "no STOP line: {}",
        keepalived.0
    );
    Ok(())
}

/// One daemon's run; the modes of the FIFOs it made (global, VRRP's).
fn one_round(segment: &Segment, kind: Kind, paths: &Paths, script: &Path) -> Result<[u32; 2]> {
    let address = segment.ipv4(100);
    let directory = &segment.directory;
    fs::write(&paths.track_file, "0\n")?;
    fs::write(&paths.fault_file, "0\n")?;
    let peer_instance = Instance::v3(100, format!("{address}/24"));
    let settle = Duration::from_secs_f64(peer_instance.interval) * 3;
    let mut peer = Daemon::start(
        Kind::Keepalived,
        &segment.b,
        directory,
        &format!("{kind}-fifo-peer"),
        &peer_instance,
    )?;
    let mut daemon = Daemon::start_with(
        kind,
        &segment.a,
        directory,
        &format!("{kind}-fifo"),
        &configuration(paths, script, address),
    )?;
    let result = (|| -> Result<[u32; 2]> {
        wait_master(
            "a becomes master over the peer's lower priority",
            Duration::from_secs(10),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        let mode = |path: &Path| -> Result<u32> {
            use std::os::unix::fs::PermissionsExt;
            Ok(fs::metadata(path)?.permissions().mode())
        };
        let modes = [mode(&paths.global_fifo)?, mode(&paths.vrrp_fifo)?];
        // 150 - 60: below the peer's 100, which preempts
        // (MASTER_PRIORITY, then BACKUP).
        fs::write(&paths.track_file, "-60\n")?;
        wait_master(
            "the peer takes over once a's priority is 90",
            Duration::from_secs(10),
            settle,
            &segment.b,
            &segment.a,
            address,
        )?;
        // Back to 150 (BACKUP_PRIORITY): a preempts.
        fs::write(&paths.track_file, "0\n")?;
        wait_master(
            "a takes the address back at 150",
            Duration::from_secs(10),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        // A reload of the same file: the scripts are restarted on FIFOs
        // made again, and `fifo_write_vrrp_states_on_reload` writes what
        // kept its state.
        signal(daemon.child.id() as i32, libc::SIGHUP);
        thread::sleep(Duration::from_secs(2));
        wait_master(
            "a is still master after the reload",
            Duration::from_secs(10),
            settle,
            &segment.a,
            &segment.b,
            address,
        )?;
        // A tracked file of weight 0 not at 0: FAULT.
        fs::write(&paths.fault_file, "1\n")?;
        wait_master(
            "the peer takes over from a in FAULT",
            Duration::from_secs(10),
            settle,
            &segment.b,
            &segment.a,
            address,
        )?;
        daemon.terminate()?;
        // The scripts are killed a second after the stop's SIGTERM; what
        // they read is written by then.
        thread::sleep(Duration::from_millis(500));
        peer.terminate()?;
        Ok(modes)
    })();
    result.map_err(|error| {
        error.context(format!(
            "{kind} log:\n{}\npeer's log:\n{}",
            daemon.log(),
            peer.log()
        ))
    })
}
