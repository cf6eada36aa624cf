//! Against this kernel, as root (skipped otherwise): the connector's own
//! messages, and a tracked process started and killed.

use super::*;

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped: the process events connector needs root");
    }
    root
}

/// A copy of /bin/sleep under a name of its own (the connector is the
/// whole host's: another test's sleep must not count).
fn distinctive_sleep(tag: &str) -> (std::path::PathBuf, String) {
    let name = format!("ft{tag}{}", std::process::id() % 1_000_000);
    let directory = std::env::temp_dir().join(format!("pulse-processes-{name}"));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join(&name);
    std::fs::copy("/bin/sleep", &path).unwrap();
    (path, name)
}

#[tokio::test]
async fn the_kernel_s_messages_round_trip() {
    if !root() {
        return;
    }
    let socket = ConnectorSocket::open().unwrap();
    let (path, _) = distinctive_sleep("rt");
    let mut child = std::process::Command::new(&path).arg("0").spawn().unwrap();
    let pid = child.id() as i32;
    child.wait().unwrap();
    let mut seen = Vec::new();
    let mut buffer = Vec::with_capacity(4096);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !seen.contains(&"exit") {
        tokio::time::timeout_at(deadline, socket.receive(&mut buffer))
            .await
            .expect("the child's events in time")
            .unwrap();
        let packet = Packet::new_checked(&buffer[..]).unwrap();
        let repr = Repr::parse(&packet).unwrap();
        // Whatever the kernel sent, emitted again, is the same bytes.
        assert_eq!(repr.to_bytes(), buffer, "{repr:?}");
        match repr.event {
            Event::Fork { child_tgid, .. } if child_tgid == pid => seen.push("fork"),
            Event::Exec { tgid, .. } if tgid == pid => seen.push("exec"),
            Event::Exit { tgid, .. } if tgid == pid => seen.push("exit"),
            _ => {}
        }
    }
    assert_eq!(seen, ["fork", "exec", "exit"]);
    socket.unsubscribe();
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

/// A child that sleeps 0.2 s, renames itself `name`, then sleeps.
fn renaming_child(name: &str) -> i32 {
    let name = std::ffi::CString::new(name).unwrap();
    // SAFETY: the child calls only async-signal-safe functions (prctl,
    // nanosleep, _exit) before it is killed.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 200_000_000,
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
            libc::prctl(libc::PR_SET_NAME, name.as_ptr());
            let long = libc::timespec {
                tv_sec: 30,
                tv_nsec: 0,
            };
            libc::nanosleep(&long, std::ptr::null_mut());
            libc::_exit(0);
        }
        pid
    }
}

#[tokio::test]
async fn a_tracked_process_started_renamed_and_killed() {
    if !root() {
        return;
    }
    let (path, name) = distinctive_sleep("q");
    let definition = config::TrackProcess {
        name: "tracked".into(),
        process: Some(vec![name.clone()]),
        quorum: 1,
        quorum_max: None,
        weight: 0,
        weight_reverse: false,
        terminate_delay: None,
        fork_delay: None,
        full_command: false,
        param_match: None,
    };
    let (sender, mut changes) = mpsc::channel(8);
    let (mut monitor, quorums) = ProcessMonitor::start(&[definition], sender);
    assert_eq!(quorums.get("tracked"), Some(&false));
    let next = async |changes: &mut mpsc::Receiver<QuorumChange>| {
        tokio::time::timeout(Duration::from_secs(5), changes.recv())
            .await
            .expect("a change in time")
            .expect("the task runs")
    };
    let mut child = std::process::Command::new(&path).arg("30").spawn().unwrap();
    assert!(next(&mut changes).await.have_quorum);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!next(&mut changes).await.have_quorum);
    // A process renaming itself (only a process's own threads may): a
    // child of this test, which counts for nothing until it takes the
    // name.
    let renamed = renaming_child(&name);
    assert!(next(&mut changes).await.have_quorum);
    // SAFETY: a child of this test, killed and reaped once.
    unsafe {
        libc::kill(renamed, libc::SIGKILL);
        libc::waitpid(renamed, std::ptr::null_mut(), 0);
    }
    assert!(!next(&mut changes).await.have_quorum);
    // Found by the first reading of /proc when already running.
    let mut child = std::process::Command::new(&path).arg("30").spawn().unwrap();
    assert!(next(&mut changes).await.have_quorum);
    monitor.stop();
    let (sender, _changes) = mpsc::channel(8);
    let definition = monitor.definitions[0].clone();
    let (mut monitor, quorums) = ProcessMonitor::start(&[definition], sender);
    assert_eq!(quorums.get("tracked"), Some(&true));
    monitor.stop();
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn the_socket_opens_from_another_network_namespace() {
    if !root() {
        return;
    }
    // A thread in a fresh network namespace, where the connector refuses
    // the subscription: the socket is opened in the initial one.
    let opened = std::thread::spawn(|| {
        // SAFETY: unshare moves only this thread, which ends here.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        assert_eq!(
            subscribed().err().and_then(|error| error.raw_os_error()),
            Some(libc::ECONNREFUSED)
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let socket = ConnectorSocket::open()?;
            let mut buffer = Vec::with_capacity(4096);
            tokio::time::timeout(Duration::from_secs(5), socket.receive(&mut buffer))
                .await
                .map_err(|_| io::Error::other("no event"))??;
            socket.unsubscribe();
            Ok(())
        })
    })
    .join()
    .unwrap();
    opened.unwrap();
}

#[tokio::test]
async fn a_burst_overruns_a_small_buffer_with_enobufs() {
    if !root() {
        return;
    }
    let socket = ConnectorSocket::open().unwrap();
    // The smallest buffer the kernel allows (it doubles what is set): a
    // few messages.
    socket.socket.get_ref().set_rx_buf_sz(256).unwrap();
    let small = socket.socket.get_ref().get_rx_buf_sz().unwrap();
    for _ in 0..50 {
        std::process::Command::new("/bin/true").status().unwrap();
    }
    let mut buffer = Vec::with_capacity(4096);
    let mut overrun = false;
    for _ in 0..1000 {
        match tokio::time::timeout(Duration::from_secs(1), socket.receive(&mut buffer)).await {
            Ok(Ok(())) => continue,
            Ok(Err(error)) => {
                assert_eq!(error.raw_os_error(), Some(libc::ENOBUFS), "{error}");
                overrun = true;
                break;
            }
            Err(_) => break,
        }
    }
    assert!(overrun, "150 events fitted in {small} bytes");
    // keepalived's answer: twice the buffer.
    assert_eq!(socket.grow().unwrap(), 2 * small);
    // The socket goes on receiving.
    std::process::Command::new("/bin/true").status().unwrap();
    tokio::time::timeout(Duration::from_secs(5), socket.receive(&mut buffer))
        .await
        .unwrap()
        .unwrap();
    socket.unsubscribe();
}
