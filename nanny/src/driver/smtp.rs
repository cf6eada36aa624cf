//! SMTP_CHECK: greeting, HELO, QUIT (check_smtp.c `smtp_engine_thread`).
//!
//! The greeting must be 220, the HELO answer 250; after QUIT any line
//! will do. One deviation, so as never to call a healthy server down:
//! keepalived reads only the first line of a reply and so fails on
//! multi-line replies (`220-...` continuation lines); nanny reads a reply
//! to its last line, as SMTP defines it.

use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::time::Instant;

use crate::outcome::{Failure, Outcome, Success};
use crate::spec::{Endpoint, SmtpSpec};

/// The longest reply line accepted (RFC 5321 allows 512).
const LINE_LIMIT: usize = 4096;

pub async fn check(endpoint: &Endpoint, smtp: &SmtpSpec, connect_timeout: Duration) -> Outcome {
    let started = Instant::now();
    super::by(started + connect_timeout, started, async {
        let stream = super::tcp::connect(endpoint).await?;
        let mut stream = BufReader::new(stream);
        expect(&mut stream, 220, "greeting").await?;
        send(
            &mut stream,
            format!("HELO {}\r\n", smtp.helo_name).as_bytes(),
        )
        .await?;
        expect(&mut stream, 250, "HELO").await?;
        send(&mut stream, b"QUIT\r\n").await?;
        read_line(&mut stream).await?;
        Ok(Success::default())
    })
    .await
}

async fn send(stream: &mut BufReader<tokio::net::TcpStream>, line: &[u8]) -> Result<(), Failure> {
    stream
        .get_mut()
        .write_all(line)
        .await
        .map_err(|error| Failure::from_io(&error))
}

/// Reads a whole reply and checks its code.
async fn expect<R>(reader: &mut R, code: u16, step: &str) -> Result<(), Failure>
where
    R: AsyncBufRead + Unpin,
{
    loop {
        let line = read_line(reader).await?;
        let status = line
            .get(..3)
            .filter(|digits| digits.bytes().all(|byte| byte.is_ascii_digit()))
            .and_then(|digits| digits.parse::<u16>().ok());
        let Some(status) = status else {
            return Err(Failure::Malformed(format!(
                "{step} reply {:?}",
                short(&line)
            )));
        };
        if status != code {
            return Err(Failure::Other(format!(
                "{step} answered {:?}, expected {code}",
                short(&line)
            )));
        }
        // "220-" continues, "220 " or "220" ends the reply.
        if line.as_bytes().get(3) != Some(&b'-') {
            return Ok(());
        }
    }
}

fn short(line: &str) -> String {
    line.trim_end().chars().take(80).collect()
}

async fn read_line<R>(reader: &mut R) -> Result<String, Failure>
where
    R: AsyncBufRead + Unpin,
{
    let mut line = Vec::new();
    let mut limited = AsyncReadExt::take(&mut *reader, LINE_LIMIT as u64 + 1);
    let read = limited
        .read_until(b'\n', &mut line)
        .await
        .map_err(|error| Failure::from_io(&error))?;
    if read == 0 {
        return Err(Failure::NoResponse);
    }
    if line.len() > LINE_LIMIT {
        return Err(Failure::Malformed(format!(
            "a line over {LINE_LIMIT} bytes"
        )));
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::tcp::tests::{closed_port, endpoint};
    use std::net::SocketAddr;
    use tokio::net::TcpListener;

    /// An SMTP server speaking `script`: for each step, the reply to send
    /// (the greeting first, then one per line received).
    async fn server(script: &'static [&'static str]) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut stream = BufReader::new(stream);
                    for (index, reply) in script.iter().enumerate() {
                        if index > 0 {
                            let mut line = String::new();
                            if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                                return;
                            }
                        }
                        if stream.get_mut().write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        address
    }

    fn helo() -> SmtpSpec {
        SmtpSpec {
            helo_name: "checker.test".to_owned(),
        }
    }

    const TIMEOUT: Duration = Duration::from_secs(2);

    #[tokio::test]
    async fn a_polite_server_is_up() {
        let address = server(&[
            "220 mail.test ESMTP\r\n",
            "250 mail.test\r\n",
            "221 bye\r\n",
        ])
        .await;
        assert_eq!(
            check(&endpoint(address), &helo(), TIMEOUT).await,
            Ok(Success::default())
        );
    }

    #[tokio::test]
    async fn multi_line_replies_are_read_whole() {
        let address = server(&[
            "220-mail.test ESMTP\r\n220-more banner\r\n220 end\r\n",
            "250 mail.test\r\n",
            "221 bye\r\n",
        ])
        .await;
        assert_eq!(
            check(&endpoint(address), &helo(), TIMEOUT).await,
            Ok(Success::default())
        );
    }

    #[tokio::test]
    async fn a_bad_greeting_or_helo_is_down_with_the_reply() {
        let busy = server(&["554 no service\r\n"]).await;
        let outcome = check(&endpoint(busy), &helo(), TIMEOUT).await;
        assert_eq!(
            outcome,
            Err(Failure::Other(
                "greeting answered \"554 no service\", expected 220".to_owned()
            ))
        );
        let refusing = server(&["220 ok\r\n", "501 bad helo\r\n"]).await;
        let outcome = check(&endpoint(refusing), &helo(), TIMEOUT).await;
        assert!(
            matches!(&outcome, Err(Failure::Other(why)) if why.starts_with("HELO answered")),
            "{outcome:?}"
        );
    }

    #[tokio::test]
    async fn silence_refusal_and_garbage() {
        let silent = server(&[]).await;
        assert_eq!(
            check(&endpoint(silent), &helo(), TIMEOUT).await,
            Err(Failure::NoResponse)
        );
        let closed = closed_port().await;
        assert_eq!(
            check(&endpoint(closed), &helo(), TIMEOUT).await,
            Err(Failure::ConnectionRefused)
        );
        let garbage = server(&["\x00\x01\x02\r\n"]).await;
        let outcome = check(&endpoint(garbage), &helo(), TIMEOUT).await;
        assert!(matches!(outcome, Err(Failure::Malformed(_))), "{outcome:?}");
    }

    #[tokio::test]
    async fn a_server_that_never_greets_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let budget = Duration::from_millis(300);
        let outcome = check(&endpoint(address), &helo(), budget).await;
        assert_eq!(outcome, Err(Failure::Timeout { after: budget }));
        drop(listener);
    }
}
