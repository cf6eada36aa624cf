use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};

use super::*;

fn directory(name: &str) -> PathBuf {
    let directory =
        std::env::temp_dir().join(format!("pulse-notify-fifo-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    std::fs::create_dir_all(&directory).unwrap();
    directory
}

fn global_with(path: &Path) -> config::GlobalDefs {
    let mut global = config::GlobalDefs::default();
    global.fifos.any = Some(config::NotifyFifo {
        path: path.display().to_string(),
        owner: None,
    });
    global
}

/// Reads what is in the FIFO now, without waiting for more.
fn read_available(reader: &mut std::fs::File) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => bytes.extend_from_slice(&buffer[..read]),
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(error) => panic!("{error}"),
        }
    }
    bytes
}

#[tokio::test]
async fn creates_the_fifo_writes_whole_lines_to_each_and_unlinks_what_it_made() {
    let directory = directory("lines");
    let global_path = directory.join("global");
    let vrrp_path = directory.join("vrrp");
    // One there already: used, and left at the stop.
    let existing = CString::new(vrrp_path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(existing.as_ptr(), 0o600) }, 0);
    let global = global_with(&global_path);
    let vrrp = config::NotifyFifo {
        path: vrrp_path.display().to_string(),
        owner: None,
    };
    let fifos = NotifyFifos::open(&global, Some(&vrrp), None, "vrrp_");
    let created = std::fs::metadata(&global_path).unwrap();
    assert!(created.file_type().is_fifo());
    // 0644 less keepalived's umask 0177.
    assert_eq!(created.permissions().mode() & 0o777, 0o600);
    let lines = fifos.lines();
    assert!(lines.is_open());
    let mut global_reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&global_path)
        .unwrap();
    let mut vrrp_reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&vrrp_path)
        .unwrap();
    lines.send(lines::instance("VI_1", lines::VrrpEvent::Master, 100));
    lines.send(lines::group("G1", lines::VrrpEvent::Master));
    lines.flush().await;
    let expected = b"INSTANCE \"VI_1\" MASTER 100\nGROUP \"G1\" MASTER 0\n";
    assert_eq!(read_available(&mut global_reader), expected);
    assert_eq!(read_available(&mut vrrp_reader), expected);
    fifos.terminate_scripts();
    drop(lines);
    fifos.close().await;
    assert!(!global_path.exists(), "the FIFO made here is unlinked");
    assert!(vrrp_path.exists(), "the FIFO found is left");
    std::fs::remove_dir_all(&directory).unwrap();
}

#[tokio::test]
async fn lines_wait_in_the_pipe_without_a_reader_and_a_full_pipe_drops_them() {
    let directory = directory("full");
    let path = directory.join("global");
    let fifos = NotifyFifos::open(&global_with(&path), None, None, "lvs_");
    let lines = fifos.lines();
    // No reader: nothing fails, nothing waits; 64 KiB fill the pipe.
    let line = "x".repeat(99) + "\n";
    for _ in 0..2000 {
        lines.send(line.clone());
    }
    lines.flush().await;
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
        .unwrap();
    let read = read_available(&mut reader);
    assert!(read.len() < 2000 * 100, "a full pipe dropped lines");
    assert_eq!(read.len() % 100, 0, "only whole lines");
    drop(lines);
    fifos.close().await;
    std::fs::remove_dir_all(&directory).unwrap();
}

#[tokio::test]
async fn runs_the_script_with_the_fifo_as_its_last_argument_and_ends_it_at_the_stop() {
    let directory = directory("script");
    let path = directory.join("global");
    let copy = directory.join("copy");
    let script_path = directory.join("reader.sh");
    // Ignores SIGTERM, as a script wanting the STOP lines would: SIGKILL
    // ends it.
    std::fs::write(
        &script_path,
        format!(
            "#!/bin/sh\ntrap '' TERM\necho \"$1 $2\" > {copy}.arguments\n\
             while read line; do echo \"$line\" >> {copy}; done < \"$2\"\n",
            copy = copy.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script_path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut global = global_with(&path);
    global.fifo_scripts.any = Some(fulcrum_scripts::run::reviewed(
        &[script_path.to_str().unwrap(), "first"],
        account::ours(),
    ));
    let fifos = NotifyFifos::open(&global, None, None, "vrrp_");
    let lines = fifos.lines();
    lines.send(lines::instance("VI_1", lines::VrrpEvent::Backup, 100));
    // Its trap set (the file is written after), so that SIGTERM finds it.
    let arguments = PathBuf::from(format!("{}.arguments", copy.display()));
    for _ in 0..500 {
        if arguments.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    fifos.terminate_scripts();
    lines.send(lines::instance("VI_1", lines::VrrpEvent::Stop, 100));
    drop(lines);
    let started = std::time::Instant::now();
    fifos.close().await;
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        std::fs::read_to_string(&arguments).unwrap(),
        format!("first {}\n", path.display())
    );
    assert_eq!(
        std::fs::read_to_string(&copy).unwrap(),
        "INSTANCE \"VI_1\" BACKUP 100\nINSTANCE \"VI_1\" STOP 100\n"
    );
    std::fs::remove_dir_all(&directory).unwrap();
}

#[tokio::test]
async fn vrrp_without_its_own_fifo_leaves_the_global_one_at_the_stop() {
    let directory = directory("kept");
    let path = directory.join("global");
    let vrrp = NotifyFifos::open(&global_with(&path), None, None, "vrrp_");
    vrrp.close().await;
    assert!(path.exists(), "keepalived's VRRP process leaves it");
    std::fs::remove_file(&path).unwrap();
    let lvs = NotifyFifos::open(&global_with(&path), None, None, "lvs_");
    lvs.close().await;
    assert!(!path.exists(), "the checkers' process unlinks it");
    std::fs::remove_dir_all(&directory).unwrap();
}

#[tokio::test]
async fn a_reload_makes_the_fifo_again_and_every_holder_writes_to_the_new_one() {
    let directory = directory("reload");
    let first = directory.join("first");
    let second = directory.join("second");
    let mut fifos = NotifyFifos::open(&global_with(&first), None, None, "lvs_");
    let lines = fifos.lines();
    fifos
        .reopen(&global_with(&second), None, None, "lvs_")
        .await;
    assert!(
        !first.exists(),
        "the FIFO made here is unlinked at the reload"
    );
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&second)
        .unwrap();
    lines.send(lines::virtual_server(
        &nanny::spec::VirtualServerKey::Fwmark(7),
        None,
        true,
    ));
    lines.flush().await;
    assert_eq!(read_available(&mut reader), b"VS FWM 7 UP\n");
    fifos.close().await;
    assert!(!second.exists());
    std::fs::remove_dir_all(&directory).unwrap();
}
