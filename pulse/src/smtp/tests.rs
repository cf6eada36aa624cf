use super::*;

fn settings() -> Settings {
    Settings {
        server: "192.0.2.25:25".parse().unwrap(),
        recipients: vec!["ops@example.com".to_owned(), "noc@example.com".to_owned()],
        from: Some("root@lb1.example.com".to_owned()),
        helo: Some("lb1.example.com".to_owned()),
        router_id: Some("lb1".to_owned()),
        timeout: DEFAULT_TIMEOUT,
    }
}

fn master_alert() -> (Alert, &'static str) {
    let (what, body) = instance_words("MASTER").unwrap();
    (
        Alert::Instance {
            name: "VI_1".to_owned(),
            what,
        },
        body,
    )
}

const DATE: &str = "Tue, 08 Dec 2026 00:30:00 +0000";

#[test]
fn an_instance_entering_master_is_keepalived_s_message() {
    let (alert, body) = master_alert();
    let letter = Letter::new(&settings(), &alert, body, DATE);
    assert_eq!(letter.helo, "lb1.example.com");
    assert_eq!(letter.from, "root@lb1.example.com");
    assert_eq!(
        String::from_utf8(letter.data).unwrap(),
        "Date: Tue, 08 Dec 2026 00:30:00 +0000\r\n\
         From: root@lb1.example.com\r\n\
         Subject: [lb1] VRRP Instance VI_1 - Entering MASTER state\r\n\
         X-Mailer: Keepalived\r\n\
         To: ops@example.com, noc@example.com\r\n\
         \r\n\
         => VRRP Instance is now owning VRRP VIPs <=\r\n\
         \r\n\
         .\r\n"
    );
}

#[test]
fn each_state_has_keepalived_s_words() {
    let group = |state| group_words(state).unwrap();
    let instance = |state| instance_words(state).unwrap();
    assert_eq!(
        instance("BACKUP"),
        (
            "Entering BACKUP state",
            "=> VRRP Instance is no longer owning VRRP VIPs <="
        )
    );
    assert_eq!(
        instance("FAULT"),
        (
            "Entering FAULT state",
            "=> VRRP Instance is no longer owning VRRP VIPs <="
        )
    );
    assert_eq!(
        instance("STOP"),
        ("Stopping", "=> VRRP Instance stopping <=")
    );
    assert_eq!(
        group("MASTER").1,
        "=> All VRRP group instances are now in MASTER state <="
    );
    assert_eq!(
        group("BACKUP").1,
        "=> All VRRP group instances are now in BACKUP state <="
    );
    assert_eq!(
        group("FAULT").1,
        "=> All VRRP group instances are now in FAULT state <="
    );
    assert_eq!(
        group("STOP"),
        (
            "Stopping",
            "=> All VRRP group instances are now stopping <="
        )
    );
    assert_eq!(
        instance("DELETED"),
        ("Deleted", "=> VRRP Deleted at reload <=")
    );
    assert_eq!(group_words("DELETED"), None);
    let subject = |alert: Alert| {
        let letter = Letter::new(&settings(), &alert, "", DATE);
        let text = String::from_utf8(letter.data).unwrap();
        text.lines()
            .find_map(|line| line.strip_prefix("Subject: "))
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        subject(Alert::Group {
            name: "G".to_owned(),
            what: group("FAULT").0
        }),
        "[lb1] VRRP Group G - Entering FAULT state"
    );
}

#[test]
fn the_checkers_alerts_name_the_servers_as_keepalived() {
    let subject = |alert: Alert| {
        let letter = Letter::new(&settings(), &alert, "", DATE);
        let text = String::from_utf8(letter.data).unwrap();
        text.lines()
            .find_map(|line| line.strip_prefix("Subject: "))
            .unwrap()
            .to_owned()
    };
    assert_eq!(
        subject(Alert::RealServer {
            real_server: "[10.0.0.2]:tcp:80".to_owned(),
            virtual_server: "[192.0.2.1]:tcp:80".to_owned(),
            up: false,
        }),
        "[lb1] Realserver [10.0.0.2]:tcp:80 of virtual server [192.0.2.1]:tcp:80 - DOWN"
    );
    assert_eq!(
        subject(Alert::VirtualServer {
            virtual_server: "FWM 7".to_owned(),
            up: true,
        }),
        "[lb1] Virtualserver FWM 7 - UP"
    );
}

#[test]
fn keepalived_s_buffers_cut_the_subject_the_body_and_the_list() {
    let long = "x".repeat(600);
    let alert = Alert::Instance {
        name: long.clone(),
        what: "Stopping",
    };
    let mut settings = settings();
    // 100 addresses of 20 bytes: 1023 bytes hold 46 with their ", ",
    // the 47th's separator, not the address.
    settings.recipients = (0..100)
        .map(|n| format!("{n:04}@example.invalid"))
        .collect();
    let to = to_header(&settings.recipients);
    assert_eq!(to.len(), 46 * 20 + 45 * 2 + 2);
    assert!(to.ends_with(b", "));
    settings.recipients.truncate(2);
    let letter = Letter::new(&settings, &alert, &long, DATE);
    let text = String::from_utf8(letter.data).unwrap();
    let subject = text
        .lines()
        .find_map(|line| line.strip_prefix("Subject: "))
        .unwrap();
    assert_eq!(subject.len(), 255);
    let body = text.split("\r\n\r\n").nth(1).unwrap();
    assert_eq!(body, "x".repeat(511));
    // The whole DATA fits keepalived's 1023 bytes here, its end too.
    assert!(text.ends_with("\r\n\r\n.\r\n"));
    // Not with a long list: keepalived's snprintf cuts the end off.
    settings.recipients = (0..100)
        .map(|n| format!("{n:04}@example.invalid"))
        .collect();
    let letter = Letter::new(&settings, &alert, &long, DATE);
    assert_eq!(letter.data.len(), 1023);
}

/// Runs `replies` through a dialogue: what it sent after each.
fn converse(replies: &[&str]) -> (Vec<Turn>, Dialogue) {
    let (alert, body) = master_alert();
    let letter = Letter::new(&settings(), &alert, body, DATE);
    let mut dialogue = Dialogue::new(letter, "[192.0.2.25]:25");
    let turns = replies
        .iter()
        .map(|reply| dialogue.read(reply.as_bytes()))
        .collect();
    (turns, dialogue)
}

fn sent(turn: &Turn) -> String {
    match &turn.action {
        Action::Send(bytes) => String::from_utf8(bytes.clone()).unwrap(),
        other => format!("{other:?}"),
    }
}

#[test]
fn the_dialogue_is_keepalived_s_from_the_greeting_to_quit() {
    let (turns, dialogue) = converse(&[
        "220 mail ESMTP\r\n",
        "250 mail\r\n",
        "250 2.1.0 Ok\r\n",
        "250 2.1.5 Ok\r\n",
        "250 2.1.5 Ok\r\n",
        "354 End data with <CR><LF>.<CR><LF>\r\n",
        "250 2.0.0 Ok: queued\r\n",
        "221 2.0.0 Bye\r\n",
    ]);
    let sent: Vec<String> = turns.iter().map(sent).collect();
    assert_eq!(sent[0], "HELO lb1.example.com\r\n");
    assert_eq!(sent[1], "MAIL FROM:<root@lb1.example.com>\r\n");
    assert_eq!(sent[2], "RCPT TO:<ops@example.com>\r\n");
    assert_eq!(sent[3], "RCPT TO:<noc@example.com>\r\n");
    assert_eq!(sent[4], "DATA\r\n");
    assert!(sent[5].starts_with("Date: "));
    assert!(sent[5].ends_with("\r\n.\r\n"));
    assert_eq!(sent[6], "QUIT\r\n");
    assert_eq!(
        turns[6].logs,
        vec![Log::Detail("SMTP alert successfully sent.".to_owned())]
    );
    assert_eq!(sent[7], "Close");
    assert_eq!(dialogue.stage(), Stage::End);
    assert!(turns[..6].iter().all(|turn| turn.logs.is_empty()));
}

#[test]
fn multi_line_replies_and_split_reads_are_read_as_keepalived_reads_them() {
    let (turns, dialogue) = converse(&[
        "220 mail ESMTP\r\n",
        // A continuation line alone: nothing yet.
        "250-mail\r\n",
        "250-PIPELINING\r\n250 8BITMIME\r\n",
        // Half a line, then the rest.
        "25",
        "0 Ok\r\n",
    ]);
    assert_eq!(sent(&turns[0]), "HELO lb1.example.com\r\n");
    assert_eq!(turns[1].action, Action::Wait);
    assert_eq!(sent(&turns[2]), "MAIL FROM:<root@lb1.example.com>\r\n");
    assert_eq!(turns[3].action, Action::Wait);
    assert_eq!(sent(&turns[4]), "RCPT TO:<ops@example.com>\r\n");
    assert_eq!(dialogue.stage(), Stage::Rcpt);
}

#[test]
fn a_refusal_is_logged_and_quits() {
    let (turns, dialogue) = converse(&[
        "220 mail ESMTP\r\n",
        "250 mail\r\n",
        "250 Ok\r\n",
        "550 5.1.1 <ops@example.com>: Recipient address rejected\r\n",
        "221 Bye\r\n",
    ]);
    assert_eq!(
        turns[3].logs,
        vec![Log::Info(
            "Error processing RCPT cmd on SMTP server [192.0.2.25]:25. SMTP status code = 550"
                .to_owned()
        )]
    );
    assert_eq!(sent(&turns[3]), "QUIT\r\n");
    assert_eq!(turns[4].action, Action::Close);
    assert_eq!(dialogue.stage(), Stage::End);
    // A greeting that is not 220: keepalived's "(E)SMTP".
    let (turns, _) = converse(&["554 no\r\n"]);
    assert_eq!(
        turns[0].logs,
        vec![Log::Info(
            "Error processing (E)SMTP cmd on SMTP server [192.0.2.25]:25. SMTP status code = 554"
                .to_owned()
        )]
    );
    assert_eq!(sent(&turns[0]), "QUIT\r\n");
}

#[test]
fn a_silent_server_gets_quit_then_is_left() {
    let (_, mut dialogue) = converse(&["220 mail ESMTP\r\n"]);
    let turn = dialogue.timed_out();
    assert_eq!(
        turn.logs,
        vec![Log::Info(
            "Timeout reading data to remote SMTP server [192.0.2.25]:25.".to_owned()
        )]
    );
    assert_eq!(sent(&turn), "QUIT\r\n");
    assert_eq!(dialogue.timed_out().action, Action::Close);
    // A failed read quits too.
    let (_, mut dialogue) = converse(&["220 mail ESMTP\r\n"]);
    let turn = dialogue.read_failed();
    assert_eq!(
        turn.logs,
        vec![Log::Info(
            "Error reading data from remote SMTP server [192.0.2.25]:25.".to_owned()
        )]
    );
    assert_eq!(sent(&turn), "QUIT\r\n");
}

#[test]
fn more_than_keepalived_s_buffer_holds_is_an_overflow() {
    let (_, mut dialogue) = converse(&["220 mail ESMTP\r\n"]);
    let turn = dialogue.read(&[b'x'; 1100]);
    assert_eq!(
        turn.logs,
        vec![Log::Info(
            "Received buffer from remote SMTP server [192.0.2.25]:25 overflow our get read buffer length."
                .to_owned()
        )]
    );
    assert_eq!(sent(&turn), "QUIT\r\n");
}

#[test]
fn the_defaults_are_keepalived_s() {
    let mut global = GlobalDefs {
        notification_email: vec!["ops@example.com".to_owned()],
        ..GlobalDefs::default()
    };
    let server = "[2001:db8::25]:2525".parse().unwrap();
    assert_eq!(server_name(server), "[2001:db8::25]:2525");
    let found = settings_of(&global, server, Some("lb1.example.com"));
    assert_eq!(found.router_id.as_deref(), Some("lb1.example.com"));
    assert_eq!(found.helo.as_deref(), Some("lb1.example.com"));
    assert_eq!(found.from.as_deref(), Some("root@lb1.example.com"));
    assert_eq!(found.timeout, Duration::from_secs(30));
    // Without a name keepalived's router_id is "[unknown]" and it has
    // neither HELO name (it says localhost) nor sender.
    let found = settings_of(&global, server, None);
    assert_eq!(found.router_id.as_deref(), Some("[unknown]"));
    assert_eq!(found.helo, None);
    assert_eq!(found.from, None);
    let letter = Letter::new(&found, &master_alert().0, "", DATE);
    assert_eq!(letter.helo, "localhost");
    assert_eq!(letter.from, "(null)");
    // What is written wins, and the name is not asked for.
    global.router_id = Some("lb1".to_owned());
    global.smtp_helo_name = Some("helo.example.com".to_owned());
    global.notification_email_from = Some("lb@example.com".to_owned());
    global.smtp_connect_timeout = Some(Duration::from_secs(5));
    let found = Settings::from_global(&global, server, || panic!("asked"), || panic!("asked"));
    assert_eq!(found.router_id.as_deref(), Some("lb1"));
    assert_eq!(found.helo.as_deref(), Some("helo.example.com"));
    assert_eq!(found.from.as_deref(), Some("lb@example.com"));
    assert_eq!(found.timeout, Duration::from_secs(5));
}

fn settings_of(global: &GlobalDefs, server: SocketAddr, name: Option<&str>) -> Settings {
    Settings::from_global(
        global,
        server,
        || name.map(str::to_owned),
        || Some("root".to_owned()),
    )
}

#[test]
fn the_date_is_strftime_s_in_the_local_zone() {
    let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_689_800);
    let seconds = 1_796_689_800 as libc::time_t;
    let mut buffer = [0 as libc::c_char; 80];
    // SAFETY: the buffers live through the calls; strftime is told the
    // length of the one it writes.
    let expected = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&seconds, &mut tm);
        let format = c"%a, %d %b %Y %H:%M:%S %z";
        let length = libc::strftime(buffer.as_mut_ptr(), buffer.len(), format.as_ptr(), &tm);
        String::from_utf8_lossy(std::slice::from_raw_parts(
            buffer.as_ptr().cast::<u8>(),
            length,
        ))
        .into_owned()
    };
    assert_eq!(rfc822_date(time), expected);
}

#[test]
fn mailer_needs_a_server_and_addresses() {
    let mut global = GlobalDefs::default();
    assert!(Mailer::new(&global).unwrap().is_none());
    global.smtp_server = Some(fulcrum_config::model::SmtpServer {
        address: Some("192.0.2.25".parse().unwrap()),
        host: None,
        port: 25,
    });
    assert!(Mailer::new(&global).unwrap().is_none());
    global.notification_email = vec!["ops@example.com".to_owned()];
    global.router_id = Some("lb1".to_owned());
    global.smtp_helo_name = Some("lb1".to_owned());
    global.notification_email_from = Some("lb1@example.com".to_owned());
    let mailer = Mailer::new(&global).unwrap().unwrap();
    assert_eq!(mailer.settings().server, "192.0.2.25:25".parse().unwrap());
}

/// A server on a local port, answering as a mail server does and keeping
/// what it was sent: the sender against real sockets.
#[tokio::test]
async fn the_sender_delivers_to_a_server_and_never_waits_on_a_silent_one() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let server = listener.local_addr().unwrap();
    let received = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let (reader, mut writer) = stream.into_split();
        let mut reader = BufReader::new(reader);
        let mut everything = String::new();
        writer.write_all(b"220 test ESMTP\r\n").await.unwrap();
        let mut in_data = false;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).await.unwrap() == 0 {
                break;
            }
            everything.push_str(&line);
            let reply: &[u8] = if in_data {
                if line != ".\r\n" {
                    continue;
                }
                in_data = false;
                b"250 queued\r\n"
            } else if line == "DATA\r\n" {
                in_data = true;
                b"354 go on\r\n"
            } else if line == "QUIT\r\n" {
                writer.write_all(b"221 bye\r\n").await.unwrap();
                break;
            } else {
                b"250 ok\r\n"
            };
            writer.write_all(reply).await.unwrap();
        }
        everything
    });
    let mut settings = settings();
    settings.server = server;
    settings.timeout = Duration::from_secs(5);
    let (alert, body) = master_alert();
    let letter = Letter::new(&settings, &alert, body, DATE);
    deliver(&settings, letter.clone()).await;
    let everything = received.await.unwrap();
    let mut expected = String::from(
        "HELO lb1.example.com\r\nMAIL FROM:<root@lb1.example.com>\r\n\
         RCPT TO:<ops@example.com>\r\nRCPT TO:<noc@example.com>\r\nDATA\r\n",
    );
    expected.push_str(std::str::from_utf8(&letter.data).unwrap());
    expected.push_str("QUIT\r\n");
    assert_eq!(everything, expected);
    // A server that accepts and says nothing: given up after the timeout.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    settings.server = listener.local_addr().unwrap();
    settings.timeout = Duration::from_millis(200);
    let holder = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut sink = Vec::new();
        let _ = stream.read_to_end(&mut sink).await;
        sink
    });
    let started = std::time::Instant::now();
    deliver(&settings, letter).await;
    // Timeout, QUIT, timeout again: two timeouts.
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(holder.await.unwrap(), b"QUIT\r\n");
}

/// A configuration with one real server per checker kind, and its checks.
fn checker_plan() -> (fulcrum_config::model::Config, nanny::spec::Plan) {
    let text = "global_defs {
    router_id lb1
    notification_email {
        ops@example.com
    }
    notification_email_from lb1@example.com
    smtp_helo_name lb1.example.com
    smtp_server 127.0.0.1 2525
}
virtual_server 192.0.2.1 80 {
    protocol TCP
    real_server 10.0.0.1 80 {
        TCP_CHECK {
        }
    }
    real_server 10.0.0.2 80 {
        HTTP_GET {
            url {
                path /
                status_code 200
            }
        }
    }
    real_server 10.0.0.3 80 {
        MISC_CHECK {
            misc_path /bin/true
        }
    }
    real_server 10.0.0.4 80 {
        PING_CHECK {
        }
    }
    real_server 10.0.0.5 80 {
        DNS_CHECK {
            name example.com
        }
    }
    real_server 10.0.0.6 80 {
        SMTP_CHECK {
        }
    }
}
virtual_server fwmark 7 {
    protocol UDP
    real_server 2001:db8::7 53 {
        UDP_CHECK {
        }
    }
}
";
    let configuration = fulcrum_config::load_str("test.conf", text, &Default::default()).config;
    let plan = nanny::spec::Plan::from_config(&configuration);
    (configuration, plan)
}

fn transition<'a>(
    plan: &'a nanny::spec::Plan,
    checker: &str,
    up: bool,
    was_up: bool,
    initial: bool,
    failure: Option<&'a Failure>,
) -> CheckTransition<'a> {
    let check = plan
        .checks
        .iter()
        .find(|check| check.spec.kind.name() == checker)
        .unwrap_or_else(|| panic!("no {checker}"));
    let slot = &plan.slots[check.subscribers[0].0];
    CheckTransition {
        check: &check.spec,
        real_server: &slot.real_server,
        virtual_server: &slot.virtual_server,
        up,
        was_up,
        initial,
        server_changed: up != was_up,
        server_up: up,
        failure,
    }
}

#[test]
fn each_checker_says_what_keepalived_s_says() {
    let (_, plan) = checker_plan();
    let refused = Failure::ConnectionRefused;
    let timeout = Failure::Timeout {
        after: Duration::from_secs(3),
    };
    let body = |checker: &str, up: bool, was_up: bool, initial: bool, failure| {
        let transition = transition(&plan, checker, up, was_up, initial, failure);
        checker_body(&transition.check.kind, &transition)
    };
    let cases: [(&str, &str, &str); 6] = [
        (
            "TCP_CHECK",
            "=> TCP CHECK succeed on service <=",
            "=> TCP CHECK failed on service <=",
        ),
        (
            "HTTP_GET",
            "=> CHECK succeed on service <=",
            "=> CHECK failed on service : HTTP request failed <=",
        ),
        (
            "PING_CHECK",
            "=> ICMP CHECK succeed on service <=",
            "=> ICMP CHECK failed on service <=",
        ),
        (
            "DNS_CHECK",
            "=> DNS_CHECK: succeed on service <=",
            "=> DNS_CHECK: failed on service <=",
        ),
        (
            "SMTP_CHECK",
            "=> CHECK succeed on service <=",
            "=> CHECK failed on service <=",
        ),
        (
            "UDP_CHECK",
            "=> UDP CHECK succeed on service <=",
            "=> UDP CHECK failed on service <=",
        ),
    ];
    for (checker, succeed, failed) in cases {
        assert_eq!(
            body(checker, true, false, false, None).as_deref(),
            Some(succeed)
        );
        assert_eq!(
            body(checker, false, true, false, Some(&refused)).as_deref(),
            Some(failed)
        );
        // No change, no alert: a first success of a checker without
        // alpha (it starts up).
        assert_eq!(body(checker, true, true, true, None), None, "{checker}");
    }
    // MISC_CHECK alerts at its first outcome too, and says a timeout.
    assert_eq!(
        body("MISC_CHECK", true, true, true, None).as_deref(),
        Some("=> MISC CHECK succeeded on service <=")
    );
    assert_eq!(
        body("MISC_CHECK", false, true, false, Some(&timeout)).as_deref(),
        Some("=> MISC CHECK timed out on service <=")
    );
    assert_eq!(
        body("MISC_CHECK", false, true, false, Some(&refused)).as_deref(),
        Some("=> MISC CHECK failed on service <=")
    );
    assert_eq!(body("MISC_CHECK", true, true, false, None), None);
}

#[test]
fn the_servers_are_named_as_keepalived_names_them() {
    let (_, plan) = checker_plan();
    let tcp = transition(&plan, "TCP_CHECK", false, true, false, None);
    assert_eq!(
        virtual_server_name(tcp.virtual_server),
        "[192.0.2.1]:tcp:80"
    );
    let udp = transition(&plan, "UDP_CHECK", false, true, false, None);
    assert_eq!(virtual_server_name(udp.virtual_server), "FWM 7");
    assert_eq!(
        service_name(
            udp.real_server.address,
            Some(fulcrum_config::model::Protocol::Udp)
        ),
        "[2001:db8::7]:udp:53"
    );
    assert_eq!(
        virtual_server_name(&VirtualServerKey::Group {
            name: "web".into(),
            protocol: None
        }),
        "[web]:0"
    );
    // The real server's smtp_alert, and with no_checker_emails a change
    // of the real server's state.
    let mut unchanged = tcp;
    unchanged.server_changed = false;
    assert!(checker_alert_wanted(true, false, &unchanged));
    assert!(!checker_alert_wanted(true, true, &unchanged));
    assert!(checker_alert_wanted(true, true, &tcp));
    assert!(!checker_alert_wanted(false, false, &tcp));
}

/// The observer pulse gives nanny's scheduler, against a server on a local
/// port: a TCP_CHECK's failure mailed as keepalived mails it.
#[tokio::test]
async fn a_checker_s_failure_is_mailed_as_keepalived_mails_it() {
    use nanny::scheduler::AttemptObserver;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (mut configuration, plan) = checker_plan();
    configuration.global.smtp_server = Some(fulcrum_config::model::SmtpServer {
        address: Some("127.0.0.1".parse().unwrap()),
        host: None,
        port,
    });
    let alerts = crate::lvs::alerts::CheckerAlerts::new(std::sync::Arc::new(
        crate::metrics::CheckDurations::default(),
    ));
    alerts.configure(&configuration);
    let refused = Failure::ConnectionRefused;
    alerts.transition(&transition(
        &plan,
        "TCP_CHECK",
        false,
        true,
        false,
        Some(&refused),
    ));
    let message = receive_one(&listener).await;
    assert_eq!(
        message,
        "From: lb1@example.com\r\n\
         Subject: [lb1] Realserver [10.0.0.1]:tcp:80 of virtual server [192.0.2.1]:tcp:80 - DOWN\r\n\
         X-Mailer: Keepalived\r\n\
         To: ops@example.com\r\n\
         \r\n\
         => TCP CHECK failed on service <=\r\n\
         \r\n\
         .\r\n"
    );
}

/// Accepts one connection on `listener`, answers as a mail server does,
/// and returns the message after its `Date:` line.
async fn receive_one(listener: &tokio::net::TcpListener) -> String {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let (stream, _) = listener.accept().await.unwrap();
    let (reader, mut writer) = stream.into_split();
    let mut reader = BufReader::new(reader);
    writer.write_all(b"220 test\r\n").await.unwrap();
    let mut message = String::new();
    let mut in_data = false;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await.unwrap();
        if in_data {
            message.push_str(&line);
            if line == ".\r\n" {
                in_data = false;
                writer.write_all(b"250 queued\r\n").await.unwrap();
            }
            continue;
        }
        match line.as_str() {
            "DATA\r\n" => {
                in_data = true;
                writer.write_all(b"354 go on\r\n").await.unwrap();
            }
            "QUIT\r\n" => break,
            _ => writer.write_all(b"250 ok\r\n").await.unwrap(),
        }
    }
    message
        .split_once("\r\n")
        .map(|(date, rest)| {
            assert!(date.starts_with("Date: "));
            rest
        })
        .unwrap()
        .to_owned()
}

#[test]
fn a_quorum_says_what_keepalived_s_says() {
    assert_eq!(
        quorum_body(true, false, 1, 0, 1, 2),
        "=> Gained quorum 1+0=1 <= 2 <="
    );
    assert_eq!(
        quorum_body(true, true, 3, 1, 4, 4),
        "=> Starting with quorum up 3+1=4 <= 4 <="
    );
    // keepalived writes `+` whichever way it counted.
    assert_eq!(
        quorum_body(false, false, 3, 1, 2, 1),
        "=> Lost quorum 3+1=2 <= 1 <="
    );
    assert_eq!(
        quorum_body(false, true, 3, 1, 4, 0),
        "=> Starting with quorum down 3+1=4 <= 0 <="
    );
}

/// A virtual server's quorum, mailed from the reconciler's side (its
/// blocking pool: no task of the runtime) when its own `smtp_alert` says
/// so; the real servers' default says nothing of it.
#[tokio::test]
async fn a_lost_quorum_is_mailed_when_the_virtual_server_says_so() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (mut configuration, _) = checker_plan();
    configuration.global.smtp_server = Some(fulcrum_config::model::SmtpServer {
        address: Some("127.0.0.1".parse().unwrap()),
        host: None,
        port,
    });
    let alerts = std::sync::Arc::new(crate::lvs::alerts::CheckerAlerts::new(std::sync::Arc::new(
        crate::metrics::CheckDurations::default(),
    )));
    let change =
        |virtual_server: &fulcrum_config::model::VirtualServer| crate::lvs::desired::QuorumChange {
            virtual_server: VirtualServerKey::from_config(virtual_server),
            up: false,
            initial: false,
            weight_sum: 0,
            threshold: 1,
        };
    // Off by default: nothing sent (the next message is the one below).
    alerts.configure(&configuration);
    let virtual_server = configuration.virtual_servers[0].clone();
    alerts.quorum(&virtual_server, &change(&virtual_server));
    configuration.global.smtp_alert_checker = Some(true);
    alerts.configure(&configuration);
    let sender = alerts.clone();
    tokio::task::spawn_blocking(move || sender.quorum(&virtual_server, &change(&virtual_server)))
        .await
        .unwrap();
    let message = receive_one(&listener).await;
    assert_eq!(
        message,
        "From: lb1@example.com\r\n\
         Subject: [lb1] Virtualserver [192.0.2.1]:tcp:80 - DOWN\r\n\
         X-Mailer: Keepalived\r\n\
         To: ops@example.com\r\n\
         \r\n\
         => Lost quorum 1+0=1 <= 0 <=\r\n\
         \r\n\
         .\r\n"
    );
}
