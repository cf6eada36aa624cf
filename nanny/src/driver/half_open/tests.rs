//! The half-open check against listeners on loopback (raw sockets: root or
//! CAP_NET_RAW, as in CI), and its socket filter run by a small classic
//! BPF interpreter.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::time::Instant;

use super::*;
use crate::driver::tcp::check_half_open;
use crate::driver::tcp::tests::{closed_port, endpoint, saturated_listener};
use crate::outcome::Success;

/// Whether this process may open raw sockets; the tests that need them
/// say so and pass without, as the bind_if test does for SO_BINDTODEVICE.
fn raw_sockets() -> bool {
    available().is_ok()
}

async fn half_open(endpoint: &Endpoint, timeout: Duration) -> crate::outcome::Outcome {
    check_half_open(endpoint, Instant::now(), timeout).await
}

/// Whether `listener` has a connection to accept within `wait`.
async fn accepts(listener: &TcpListener, wait: Duration) -> bool {
    tokio::time::timeout(wait, listener.accept()).await.is_ok()
}

#[tokio::test]
async fn up_when_something_listens_and_nothing_is_accepted() {
    if !raw_sockets() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = endpoint(listener.local_addr().unwrap());
    for _ in 0..3 {
        let outcome = half_open(&target, Duration::from_secs(5)).await;
        assert_eq!(outcome, Ok(Success::default()));
    }
    // The half-open requests were reset by this machine's kernel: the
    // listener's application never got a connection.
    assert!(!accepts(&listener, Duration::from_millis(500)).await);
    // While a connect is accepted at once (the test sees what it should).
    let _client = tokio::net::TcpStream::connect(target.address)
        .await
        .unwrap();
    assert!(accepts(&listener, Duration::from_secs(5)).await);
}

#[tokio::test]
async fn refused_when_nothing_listens() {
    if !raw_sockets() {
        return;
    }
    let address = closed_port().await;
    let outcome = half_open(&endpoint(address), Duration::from_secs(5)).await;
    assert_eq!(outcome, Err(Failure::ConnectionRefused));
}

#[tokio::test]
async fn a_dropped_syn_times_out() {
    if !raw_sockets() {
        return;
    }
    let (_listener, _held, address) = saturated_listener().await;
    let outcome = half_open(&endpoint(address), Duration::from_millis(300)).await;
    assert_eq!(
        outcome,
        Err(Failure::Timeout {
            after: Duration::from_millis(300)
        })
    );
    // The attempt left the map when it timed out.
    let prober = prober(&endpoint(address)).unwrap();
    let waiting = lock(&prober.state)
        .waiting
        .keys()
        .any(|(server, _)| *server == address);
    assert!(!waiting);
}

#[tokio::test]
async fn a_dropped_syn_is_sent_again() {
    if !raw_sockets() {
        return;
    }
    let (listener, held, address) = saturated_listener().await;
    let attempt =
        tokio::spawn(async move { half_open(&endpoint(address), Duration::from_secs(5)).await });
    // The first SYN was dropped (the accept queue full); room now lets the
    // one sent again a second later through, as connect's would be.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!attempt.is_finished());
    let (first, _) = listener.accept().await.unwrap();
    drop((first, held));
    let outcome = attempt.await.unwrap();
    assert_eq!(outcome, Ok(Success::default()));
}

#[tokio::test]
async fn bindto_and_bind_port_are_the_source() {
    if !raw_sockets() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut target = endpoint(listener.local_addr().unwrap());
    target.bind_address = Some("127.0.0.2".parse().unwrap());
    let outcome = half_open(&target, Duration::from_secs(5)).await;
    assert_eq!(outcome, Ok(Success::default()));
    let source_port = closed_port().await.port();
    target.bind_port = Some(source_port);
    let outcome = half_open(&target, Duration::from_secs(5)).await;
    assert_eq!(outcome, Ok(Success::default()));
    // The port is held while the prober lives: a socket without
    // SO_REUSEADDR cannot bind it (std's listeners set it).
    let other = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    let taken = other.bind(&SocketAddr::from(([127, 0, 0, 2], source_port)).into());
    assert_eq!(
        taken.map_err(|error| error.kind()),
        Err(io::ErrorKind::AddrInUse)
    );
    // A second attempt on the same 4-tuple while one waits: refused here,
    // the first one unharmed.
    let (_saturated, _held, hanging) = saturated_listener().await;
    let mut same = endpoint(hanging);
    same.bind_address = target.bind_address;
    same.bind_port = Some(source_port);
    let (first, second) = tokio::join!(half_open(&same, Duration::from_millis(500)), async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        half_open(&same, Duration::from_millis(500)).await
    });
    assert_eq!(
        first,
        Err(Failure::Timeout {
            after: Duration::from_millis(500)
        })
    );
    assert!(
        matches!(&second, Err(Failure::Bind(why)) if why.contains("probing")),
        "{second:?}"
    );
    // An address this machine does not have: a bind failure, as connect's.
    target.bind_address = Some("192.0.2.1".parse().unwrap());
    target.bind_port = None;
    let outcome = half_open(&target, Duration::from_secs(5)).await;
    assert!(matches!(outcome, Err(Failure::Bind(_))), "{outcome:?}");
}

#[tokio::test]
async fn the_source_is_the_one_connect_would_use() {
    if !raw_sockets() {
        return;
    }
    // 127.0.0.3 is reached from 127.0.0.1 (the loopback route's source):
    // a SYN whose checksum used another address would be dropped by the
    // listener's kernel, and the check would time out.
    let listener = TcpListener::bind("127.0.0.3:0").await.unwrap();
    let target = endpoint(listener.local_addr().unwrap());
    let outcome = half_open(&target, Duration::from_secs(5)).await;
    assert_eq!(outcome, Ok(Success::default()));
    let prober = prober(&target).unwrap();
    let mut key = target.address;
    key.set_port(9);
    let source = lock(&prober.state).sources.get(&key).copied();
    assert_eq!(source, Some("127.0.0.1".parse().unwrap()));
}

#[tokio::test]
async fn ipv6_too() {
    if !raw_sockets() {
        return;
    }
    let Ok(listener) = TcpListener::bind("[::1]:0").await else {
        // No IPv6 on this machine.
        return;
    };
    let outcome = half_open(
        &endpoint(listener.local_addr().unwrap()),
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(outcome, Ok(Success::default()));
    assert!(!accepts(&listener, Duration::from_millis(300)).await);
    let closed = std::net::TcpListener::bind("[::1]:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let outcome = half_open(&endpoint(closed), Duration::from_secs(5)).await;
    assert_eq!(outcome, Err(Failure::ConnectionRefused));
}

#[tokio::test]
async fn many_probes_at_once_each_get_their_own_answer() {
    if !raw_sockets() {
        return;
    }
    // Listeners and closed ports interleaved on several addresses, several
    // probes each at once: every answer must reach its own attempt.
    let mut listeners = Vec::new();
    let mut targets = Vec::new();
    for index in 0..200u8 {
        let address = format!("127.0.{}.{}:0", 20 + index % 4, 1 + index / 4);
        let listener = std::net::TcpListener::bind(address.as_str()).unwrap();
        let bound = listener.local_addr().unwrap();
        if index % 3 == 0 {
            drop(listener);
            targets.push((bound, false));
        } else {
            listeners.push(listener);
            targets.push((bound, true));
        }
    }
    let mut attempts = tokio::task::JoinSet::new();
    for round in 0..3 {
        for (address, up) in &targets {
            let (address, up) = (*address, *up);
            attempts.spawn(async move {
                let outcome = half_open(&endpoint(address), Duration::from_secs(10)).await;
                (address, up, round, outcome)
            });
        }
    }
    let mut answered = 0;
    while let Some(result) = attempts.join_next().await {
        let (address, up, round, outcome) = result.unwrap();
        let expected = if up {
            Ok(Success::default())
        } else {
            Err(Failure::ConnectionRefused)
        };
        assert_eq!(outcome, expected, "{address}, round {round}");
        answered += 1;
    }
    assert_eq!(answered, 600);
    // No listener got a connection.
    for listener in &listeners {
        listener.set_nonblocking(true).unwrap();
        assert!(listener.accept().is_err());
    }
}

/// Drops CAP_NET_RAW from this thread's effective capabilities (Linux
/// capabilities are per thread).
fn drop_net_raw() -> io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    const CAP_NET_RAW: u32 = 13;
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget and capset read and write the structures given, of
    // the layout version 3 defines (two data entries).
    unsafe {
        if libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        data[0].effective &= !(1 << CAP_NET_RAW);
        if libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[test]
fn without_raw_sockets_the_check_connects() {
    if !raw_sockets() {
        return;
    }
    let outcome = std::thread::spawn(|| {
        drop_net_raw().unwrap();
        // This thread may not open a raw socket any more...
        let refused = available().unwrap_err();
        assert_eq!(refused.raw_os_error(), Some(libc::EPERM));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let mut target = endpoint(listener.local_addr().unwrap());
            // A mark of its own: no other test's prober serves it.
            target.fwmark = Some(0x5e4d);
            let (outcome, accepted) = tokio::join!(
                half_open(&target, Duration::from_secs(5)),
                accepts(&listener, Duration::from_secs(5))
            );
            // ...so its TCP_CHECK connected: the listener accepted.
            assert!(accepted);
            assert!(prober(&target).is_none());
            outcome
        })
    })
    .join()
    .unwrap();
    assert_eq!(outcome, Ok(Success::default()));
}

/// Replies handed to the dispatch: not ours, malformed, or wrongly
/// summed are ignored; the right one is answered.
#[tokio::test]
async fn only_the_right_reply_answers() {
    if !raw_sockets() {
        return;
    }
    let server: SocketAddr = "127.0.0.1:8080".parse().unwrap();
    let local: IpAddr = "127.0.0.1".parse().unwrap();
    // A mark of its own: replies only from this test.
    let mut target = endpoint(server);
    target.fwmark = Some(0x5e4e);
    let prober = prober(&target).unwrap();
    let port = prober.state.lock().unwrap().pool[0].0;
    let (sent, mut answer) = oneshot::channel();
    lock(&prober.state).waiting.insert(
        (server, port),
        Waiting {
            sequence: 1000,
            answer: sent,
        },
    );
    let ipv4 = |repr: Repr, checksum_source: IpAddr| {
        let mut packet = vec![0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0];
        packet.extend_from_slice(&[127, 0, 0, 1, 127, 0, 0, 1]);
        let mut segment = [0u8; HEADER_LENGTH];
        repr.emit(
            &mut Packet::new_unchecked(&mut segment[..]),
            checksum_source,
            local,
        );
        packet.extend_from_slice(&segment);
        packet
    };
    let syn_ack = |acknowledgment: u32, source_port: u16| Repr {
        source_port,
        destination_port: port,
        sequence: 5,
        acknowledgment,
        flags: segment::FLAG_SYN | segment::FLAG_ACK,
        window: 100,
    };
    // Another probe's acknowledgment, another server port, a wrong
    // checksum, a short packet: nothing.
    prober.dispatch(&ipv4(syn_ack(1002, 8080), local), None);
    prober.dispatch(&ipv4(syn_ack(1001, 8081), local), None);
    prober.dispatch(
        &ipv4(syn_ack(1001, 8080), "10.9.9.9".parse().unwrap()),
        None,
    );
    prober.dispatch(&ipv4(syn_ack(1001, 8080), local)[..30], None);
    assert!(answer.try_recv().is_err());
    assert!(lock(&prober.state).waiting.contains_key(&(server, port)));
    // The right one.
    prober.dispatch(&ipv4(syn_ack(1001, 8080), local), None);
    assert_eq!(answer.try_recv(), Ok(Answer::Accepted));
    assert!(!lock(&prober.state).waiting.contains_key(&(server, port)));
}

/// Runs a classic BPF program over `packet`, as the kernel would: the
/// bytes it keeps (0: dropped). Only the instructions the filter uses.
fn run_filter(program: &[libc::sock_filter], packet: &[u8]) -> u32 {
    let (mut a, mut x, mut pc) = (0u32, 0u32, 0usize);
    let byte = |offset: u32| u32::from(packet.get(offset as usize).copied().unwrap_or(0));
    let half = |offset: u32| byte(offset) << 8 | byte(offset + 1);
    loop {
        let step = program[pc];
        pc += 1;
        match step.code {
            LD_H_ABS => a = half(step.k),
            LD_H_IND => a = half(x + step.k),
            LD_B_IND => a = byte(x + step.k),
            LDX_B_MSH => x = (byte(step.k) & 0x0f) * 4,
            LDX_IMM => x = step.k,
            ALU_AND_K => a &= step.k,
            JMP_JEQ_K | JMP_JSET_K => {
                let taken = if step.code == JMP_JEQ_K {
                    a == step.k
                } else {
                    a & step.k != 0
                };
                pc += usize::from(if taken { step.jt } else { step.jf });
            }
            RET_K => return step.k,
            code => panic!("instruction {code:#x}"),
        }
    }
}

#[test]
fn the_filter_keeps_answers_to_our_ports() {
    let source = IpAddr::from([10, 0, 0, 2]);
    let destination = IpAddr::from([10, 0, 0, 1]);
    let segment = |flags: u8, port: u16| {
        let repr = Repr {
            source_port: 80,
            destination_port: port,
            sequence: 1,
            acknowledgment: 2,
            flags,
            window: 1,
        };
        let mut bytes = [0u8; HEADER_LENGTH];
        repr.emit(
            &mut Packet::new_unchecked(&mut bytes[..]),
            source,
            destination,
        );
        bytes
    };
    // An IPv4 header with 4 bytes of options (IHL 6).
    let ipv4 = |segment: [u8; HEADER_LENGTH], fragment: u8| {
        let mut packet = vec![0x46, 0, 0, 44, 0, 0, fragment, 0, 64, 6, 0, 0];
        packet.extend_from_slice(&[10, 0, 0, 2, 10, 0, 0, 1, 1, 1, 1, 1]);
        packet.extend_from_slice(&segment);
        packet
    };
    use segment::{FLAG_ACK, FLAG_RST, FLAG_SYN};
    let v4 = filter_program(false, &[40_000, 40_001]);
    let v6 = filter_program(true, &[40_000, 40_001]);
    for (flags, port, kept) in [
        (FLAG_SYN | FLAG_ACK, 40_001, true),
        (FLAG_RST | FLAG_ACK, 40_000, true),
        (FLAG_RST, 40_000, true),
        (FLAG_SYN | FLAG_ACK, 40_002, false),
        (FLAG_SYN, 40_000, false),
        (FLAG_ACK, 40_000, false),
    ] {
        let bytes = segment(flags, port);
        assert_eq!(
            run_filter(&v4, &ipv4(bytes, 0x40)) != 0,
            kept,
            "{flags:#x} {port}"
        );
        assert_eq!(run_filter(&v6, &bytes) != 0, kept, "{flags:#x} {port}");
    }
    // A fragment (more fragments set): dropped.
    let bytes = segment(FLAG_SYN | FLAG_ACK, 40_000);
    assert_eq!(run_filter(&v4, &ipv4(bytes, 0x20)), 0);
    // Too many ports for short jumps: every port's answers are kept.
    let ports: Vec<u16> = (1..=300).collect();
    let wide = filter_program(false, &ports);
    assert_ne!(
        run_filter(&wide, &ipv4(segment(FLAG_SYN | FLAG_ACK, 9), 0)),
        0
    );
}

#[tokio::test]
async fn a_missing_interface_connects_and_is_tried_again_later() {
    if !raw_sockets() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut target = endpoint(listener.local_addr().unwrap());
    target.bind_interface = Some("nanny-none1".to_owned());
    // No prober (SO_BINDTODEVICE fails): the connect's own failure.
    let outcome = half_open(&target, Duration::from_secs(5)).await;
    assert!(
        matches!(&outcome, Err(Failure::Bind(why)) if why.starts_with("interface nanny-none1")),
        "{outcome:?}"
    );
    // Not for good: the interface may come.
    let probers = lock(&PROBERS);
    let entry = probers
        .iter()
        .find(|(key, _)| key.serves(&target))
        .map(|(_, entry)| entry);
    assert!(
        matches!(entry, Some(Entry::Unavailable { retry_at: Some(_) })),
        "no retry planned"
    );
}

/// A raw socket's full send buffer says ENOBUFS (its SYNs waiting for ARP)
/// and is waited out; a gone interface is bound again; a source that is
/// no longer this machine's (IPv6: EINVAL, IPv4: ENETUNREACH) is asked
/// again: none of them is taken as the server's verdict at once (found in
/// review, each reported live servers down).
#[test]
fn a_send_error_is_told_by_what_it_means_for_the_probe() {
    let failure = |errno| send_failure(&io::Error::from_raw_os_error(errno));
    assert_eq!(failure(libc::ENOBUFS), SendFailure::BufferFull);
    assert_eq!(failure(libc::ENOMEM), SendFailure::BufferFull);
    assert_eq!(failure(libc::ENODEV), SendFailure::DeviceGone);
    assert_eq!(failure(libc::ENXIO), SendFailure::DeviceGone);
    for errno in [
        libc::EINVAL,
        libc::EADDRNOTAVAIL,
        libc::ENETUNREACH,
        libc::EHOSTUNREACH,
    ] {
        assert_eq!(failure(errno), SendFailure::SourceGone, "{errno}");
    }
    assert_eq!(failure(libc::EPERM), SendFailure::Other);
    assert_eq!(failure(libc::EMSGSIZE), SendFailure::Other);
}
