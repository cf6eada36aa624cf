//! Bytes in, BFD control packets and a session over them: parsing must not
//! panic, what parses must write back to the same packet, and a session fed
//! any sequence of accepted packets and timer ticks must keep its
//! invariants.
//!
//! Run from nanny/fuzz: `RUSTC_BOOTSTRAP=1 cargo fuzz run bfd_packet -s none -- -max_total_time=120`

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use nanny::bfd::packet::{HEADER_LENGTH, Packet, Repr, State};
use nanny::bfd::session::{Config, Event, Session};
use nanny::machine::Timestamp;

fuzz_target!(|data: &[u8]| {
    // The whole input as one datagram.
    if let Ok(packet) = Packet::new_checked(data)
        && let Ok(repr) = Repr::parse(&packet)
    {
        let bytes = repr.to_bytes();
        let again = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!(again, repr);
        // The header reads back byte for byte, but for the length, which
        // is the header's alone (bytes past it are not the packet's).
        assert_eq!(bytes[..3], data[..3]);
        assert_eq!(bytes[3], HEADER_LENGTH as u8);
        assert_eq!(bytes[4..], data[4..HEADER_LENGTH]);
    }
    // The input as a sequence of (milliseconds to wait, datagram) steps fed
    // to one session.
    let mut session = Session::new(
        Config {
            desired_min_tx: Duration::from_millis(100),
            required_min_rx: Duration::from_millis(100),
            idle_tx: Duration::from_secs(1),
            detect_multiplier: 3,
            passive: data.first().is_some_and(|byte| byte & 1 == 1),
        },
        0x0102_0304,
        Timestamp::ZERO,
        1,
    );
    let mut now = Timestamp::ZERO;
    for step in data.chunks(2 + HEADER_LENGTH) {
        let wait = u64::from(u16::from_be_bytes([step[0], *step.get(1).unwrap_or(&0)]));
        now = now + Duration::from_millis(wait);
        // Timers first, as a driver woken late would.
        while let Some(at) = session.poll_at() {
            if at > now {
                break;
            }
            let actions = session.handle(at, Event::Timer);
            if let Some(sent) = actions.send {
                check_sent(&session, &sent);
            }
            // Time moves on: the loop ends.
            assert!(session.poll_at().is_none_or(|next| next > at));
        }
        let Some(bytes) = step.get(2..) else { continue };
        let Ok(repr) = Packet::new_checked(bytes).and_then(|packet| Repr::parse(&packet)) else {
            continue;
        };
        let actions = session.handle(now, Event::Received(&repr));
        if let Some(sent) = actions.send {
            assert!(sent.final_, "only a poll is answered outside the schedule");
            check_sent(&session, &sent);
        }
        if let Some(change) = actions.change {
            assert_ne!(change.from, change.to);
            assert_eq!(change.to, session.state());
        }
    }
});

fn check_sent(session: &Session, sent: &Repr) {
    assert!(!(sent.poll && sent.final_));
    assert_eq!(sent.state, session.state());
    assert_eq!(sent.my_discriminator, 0x0102_0304);
    if sent.state != State::Up {
        assert!(sent.desired_min_tx >= Duration::from_secs(1));
    }
    let bytes = sent.to_bytes();
    assert_eq!(
        Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).as_ref(),
        Ok(sent)
    );
}
