//! HTTP_GET and SSL_GET: a small HTTP/1.0-1.1 GET client,
//! as keepalived's own is.
//!
//! keepalived's request, kept byte for byte (servers and their logs see the
//! same thing): `GET <path> HTTP/<v>`, `User-Agent: KeepAliveClient`,
//! `Connection: close` for `1.0C` and `1.1`, and `Host: <virtualhost>` or
//! `Host: <address>:<port>` (IPv6 in brackets). Each URL is fetched over its
//! own connection; the whole exchange of one URL (connect, send, headers,
//! body) is bounded by `connect_timeout`, so a server trickling bytes cannot
//! hold a check longer (keepalived bounds each read only).
//!
//! Verdict, in keepalived's order (check_http.c `http_handle_response`): no
//! response at all, then the status code against the accepted ranges, then
//! the MD5 digest of the body.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use md5::{Digest, Md5};
use regex::bytes::Regex;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::time::Instant;

use crate::outcome::{Failure, Outcome, Success};
use crate::spec::{Endpoint, HttpSpec, HttpVersion, RegexSpec, TlsSpec, UrlSpec};

/// The most a response's headers may take.
pub const HEADER_LIMIT: usize = 64 * 1024;
/// The most of a body nanny reads (the digest needs it all; a status check
/// does not, but keepalived reads to the end too).
pub const BODY_LIMIT: u64 = 16 * 1024 * 1024;

/// What a server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// MD5 of the body (after chunked decoding).
    pub digest: [u8; 16],
    pub body_length: u64,
    /// The body, when asked for (a url with a regex); empty otherwise.
    pub body: Vec<u8>,
}

/// HTTP_GET: every URL must answer with an accepted status and, if given,
/// the digest. The first URL that fails decides the reason.
pub async fn check(endpoint: &Endpoint, http: &HttpSpec, connect_timeout: Duration) -> Outcome {
    // keepalived: "if there are no URLs in list, enable server w/o checking".
    for url in &http.urls {
        let response = fetch(
            endpoint,
            url,
            http.version,
            http.tls.as_ref(),
            connect_timeout,
        )
        .await?;
        judge(url, &response)?;
    }
    Ok(Success::default())
}

/// Fetches one URL (over TLS with `tls`) and returns the response,
/// whatever its status (what genhash does), all under `timeout`.
pub async fn fetch(
    endpoint: &Endpoint,
    url: &UrlSpec,
    version: HttpVersion,
    tls: Option<&TlsSpec>,
    timeout: Duration,
) -> Result<Response, Failure> {
    let connector = tls.map(super::tls::connector).transpose()?;
    let started = Instant::now();
    super::by(started + timeout, started, async {
        let mut stream = super::tcp::connect(endpoint).await?;
        let request = request(url, version, endpoint);
        let keep_body = url.regex.is_some();
        match (connector, tls) {
            (Some(connector), Some(tls)) => {
                let server_name = super::tls::server_name(tls, endpoint)?;
                let mut stream = connector
                    .connect(server_name, stream)
                    .await
                    .map_err(|error| Failure::Tls(error.to_string()))?;
                exchange(&mut stream, request.as_bytes(), BODY_LIMIT, keep_body).await
            }
            _ => exchange(&mut stream, request.as_bytes(), BODY_LIMIT, keep_body).await,
        }
    })
    .await
}

/// A URL split for fetching: `http://HOST[:PORT][/PATH]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedUrl {
    /// `https://`.
    pub tls: bool,
    pub host: String,
    pub port: u16,
    pub path: String,
}

/// Splits an `http://` or `https://` URL.
pub fn parse_url(text: &str) -> Result<ParsedUrl, Failure> {
    let invalid = |why: &str| Failure::Other(format!("URL {text:?}: {why}"));
    let (tls, rest) = if let Some(rest) = text.strip_prefix("http://") {
        (false, rest)
    } else if let Some(rest) = text.strip_prefix("https://") {
        (true, rest)
    } else {
        return Err(invalid("not http:// or https://"));
    };
    let (authority, path) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, "/"),
    };
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let end = bracketed.find(']').ok_or_else(|| invalid("unclosed '['"))?;
        let port = &bracketed[end + 1..];
        (&bracketed[..end], port.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(invalid("no host"));
    }
    let port = match port {
        Some(port) => port.parse().map_err(|_| invalid("bad port"))?,
        None if tls => 443,
        None => 80,
    };
    Ok(ParsedUrl {
        tls,
        host: host.to_owned(),
        port,
        path: path.to_owned(),
    })
}

/// keepalived's verdict on one URL's response.
pub fn judge(url: &UrlSpec, response: &Response) -> Result<(), Failure> {
    if !url.accepts(response.status) {
        return Err(Failure::Status(response.status));
    }
    if let Some(expected) = url.digest
        && expected != response.digest
    {
        return Err(Failure::DigestMismatch {
            expected: hex(&expected),
            actual: hex(&response.digest),
        });
    }
    if let Some(regex) = &url.regex {
        let compiled = compiled(regex)?;
        let start = regex.min_offset.unwrap_or(0).min(usize::MAX as u64) as usize;
        let matched = start <= response.body.len()
            && compiled
                .find_at(&response.body, start)
                .is_some_and(|found| {
                    regex
                        .max_offset
                        .is_none_or(|max| (found.start() as u64) < max)
                });
        if matched == regex.no_match {
            return Err(Failure::Other(format!(
                "body {} regex {:?}",
                if matched { "matches" } else { "does not match" },
                regex.pattern
            )));
        }
    }
    Ok(())
}

/// Compiled regexes, shared by every attempt.
fn compiled(regex: &RegexSpec) -> Result<Arc<Regex>, Failure> {
    static CACHE: OnceLock<Mutex<HashMap<RegexSpec, Arc<Regex>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(found) = cache.get(regex) {
        return Ok(found.clone());
    }
    let built = Arc::new(regex.compile().map_err(Failure::Other)?);
    cache.insert(regex.clone(), built.clone());
    Ok(built)
}

/// Lower-case hex, as genhash prints digests.
pub fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(text, "{byte:02x}");
    }
    text
}

/// keepalived's request for `url`.
pub fn request(url: &UrlSpec, version: HttpVersion, endpoint: &Endpoint) -> String {
    let (version_text, connection) = match version {
        HttpVersion::Http10 => ("1.0", ""),
        HttpVersion::Http10Close => ("1.0", "Connection: close\r\n"),
        HttpVersion::Http11 => ("1.1", "Connection: close\r\n"),
    };
    // A virtualhost is sent without a port, the address with one.
    let host = match &url.virtualhost {
        Some(host) => host.clone(),
        None => endpoint.address.to_string(),
    };
    format!(
        "GET {} HTTP/{version_text}\r\nUser-Agent: KeepAliveClient\r\n{connection}Host: {host}\r\n\r\n",
        url.path
    )
}

/// Sends `request` and reads the response, its body into the digest.
pub async fn exchange<S>(
    stream: &mut S,
    request: &[u8],
    body_limit: u64,
    keep_body: bool,
) -> Result<Response, Failure>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    stream
        .write_all(request)
        .await
        .map_err(|error| Failure::from_io(&error))?;
    stream
        .flush()
        .await
        .map_err(|error| Failure::from_io(&error))?;
    let mut reader = BufReader::new(stream);
    read_response(&mut reader, body_limit, keep_body).await
}

/// Reads a response: status line, headers, body.
pub async fn read_response<R>(
    reader: &mut R,
    body_limit: u64,
    keep_body: bool,
) -> Result<Response, Failure>
where
    R: AsyncBufRead + Unpin,
{
    let mut header_bytes = 0usize;
    let status_line = match read_line(reader, HEADER_LIMIT).await? {
        Some(line) => line,
        // keepalived: "Read, no data received from".
        None => return Err(Failure::NoResponse),
    };
    header_bytes += status_line.len();
    let status = parse_status_line(&status_line)?;
    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    loop {
        let Some(line) = read_line(reader, HEADER_LIMIT - header_bytes.min(HEADER_LIMIT)).await?
        else {
            return Err(Failure::Malformed(
                "connection closed in the headers".to_owned(),
            ));
        };
        header_bytes += line.len();
        if header_bytes > HEADER_LIMIT {
            return Err(Failure::Malformed(format!(
                "headers over {HEADER_LIMIT} bytes"
            )));
        }
        let line = trim_line_end(&line);
        if line.is_empty() {
            break;
        }
        let Some(colon) = line.iter().position(|byte| *byte == b':') else {
            return Err(Failure::Malformed("a header line without ':'".to_owned()));
        };
        let name = String::from_utf8_lossy(&line[..colon])
            .trim()
            .to_ascii_lowercase();
        let value = String::from_utf8_lossy(&line[colon + 1..])
            .trim()
            .to_owned();
        match name.as_str() {
            "content-length" => {
                content_length = Some(
                    value
                        .parse()
                        .map_err(|_| Failure::Malformed(format!("content-length {value:?}")))?,
                );
            }
            "transfer-encoding" => {
                chunked = value
                    .rsplit(',')
                    .next()
                    .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
            }
            _ => {}
        }
    }
    let mut digest = Md5::new();
    let mut body = keep_body.then(Vec::new);
    let body_length = if chunked {
        read_chunked(reader, &mut digest, &mut body, body_limit).await?
    } else if let Some(length) = content_length {
        if length > body_limit {
            return Err(Failure::TooLarge {
                limit: body_limit as usize,
            });
        }
        let copied = copy_into(reader, &mut digest, &mut body, length).await?;
        if copied < length {
            return Err(Failure::Malformed(format!(
                "body of {copied} bytes, content-length {length}"
            )));
        }
        copied
    } else {
        // Delimited by the end of the connection, as keepalived reads.
        let copied = copy_into(reader, &mut digest, &mut body, body_limit + 1).await?;
        if copied > body_limit {
            return Err(Failure::TooLarge {
                limit: body_limit as usize,
            });
        }
        copied
    };
    Ok(Response {
        status,
        digest: digest.finalize().into(),
        body_length,
        body: body.unwrap_or_default(),
    })
}

/// The reader's next bytes; empty at the end of the stream. A TLS peer that
/// closes without close_notify ends the stream too (keepalived's OpenSSL
/// reads treat it so; most servers do it).
async fn fill<R>(reader: &mut R) -> Result<&[u8], Failure>
where
    R: AsyncBufRead + Unpin,
{
    match reader.fill_buf().await {
        Ok(available) => Ok(available),
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => Ok(&[]),
        Err(error) => Err(Failure::from_io(&error)),
    }
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn parse_status_line(line: &[u8]) -> Result<u16, Failure> {
    let text = String::from_utf8_lossy(trim_line_end(line)).into_owned();
    let mut words = text.split_ascii_whitespace();
    let malformed = || Failure::Malformed(format!("status line {:?}", truncate(&text)));
    let version = words.next().ok_or_else(malformed)?;
    if !version.starts_with("HTTP/") {
        return Err(malformed());
    }
    let code = words.next().ok_or_else(malformed)?;
    if code.len() != 3 || !code.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(malformed());
    }
    code.parse().map_err(|_| malformed())
}

fn truncate(text: &str) -> String {
    text.chars().take(60).collect()
}

/// One line up to and including `\n`, at most `limit` bytes; `None` at a
/// clean end of stream.
async fn read_line<R>(reader: &mut R, limit: usize) -> Result<Option<Vec<u8>>, Failure>
where
    R: AsyncBufRead + Unpin,
{
    let mut line = Vec::new();
    loop {
        let available = fill(reader).await?;
        if available.is_empty() {
            return if line.is_empty() {
                Ok(None)
            } else {
                Err(Failure::Malformed("truncated line".to_owned()))
            };
        }
        let (taken, done) = match available.iter().position(|byte| *byte == b'\n') {
            Some(end) => (end + 1, true),
            None => (available.len(), false),
        };
        line.extend_from_slice(&available[..taken]);
        reader.consume(taken);
        if line.len() > limit {
            return Err(Failure::Malformed(format!("a line over {limit} bytes")));
        }
        if done {
            return Ok(Some(line));
        }
    }
}

/// Feeds up to `most` bytes into `digest` (and `body` if kept); returns how
/// many (fewer at the end of the stream).
async fn copy_into<R>(
    reader: &mut R,
    digest: &mut Md5,
    body: &mut Option<Vec<u8>>,
    most: u64,
) -> Result<u64, Failure>
where
    R: AsyncBufRead + Unpin,
{
    let mut copied = 0u64;
    while copied < most {
        let available = fill(reader).await?;
        if available.is_empty() {
            break;
        }
        let taken = available.len().min((most - copied) as usize);
        digest.update(&available[..taken]);
        if let Some(body) = body {
            body.extend_from_slice(&available[..taken]);
        }
        reader.consume(taken);
        copied += taken as u64;
    }
    Ok(copied)
}

async fn read_chunked<R>(
    reader: &mut R,
    digest: &mut Md5,
    body: &mut Option<Vec<u8>>,
    limit: u64,
) -> Result<u64, Failure>
where
    R: AsyncBufRead + Unpin,
{
    let truncated = || Failure::Malformed("truncated chunked body".to_owned());
    let mut total = 0u64;
    loop {
        let line = read_line(reader, 1024).await?.ok_or_else(truncated)?;
        let text = String::from_utf8_lossy(trim_line_end(&line)).into_owned();
        let size_text = text.split(';').next().unwrap_or("").trim();
        let size = u64::from_str_radix(size_text, 16)
            .map_err(|_| Failure::Malformed(format!("chunk size {:?}", truncate(&text))))?;
        if size == 0 {
            // Trailers, up to the empty line (or the end of the stream).
            while let Some(trailer) = read_line(reader, HEADER_LIMIT).await? {
                if trim_line_end(&trailer).is_empty() {
                    break;
                }
            }
            return Ok(total);
        }
        total = total.saturating_add(size);
        if total > limit {
            return Err(Failure::TooLarge {
                limit: limit as usize,
            });
        }
        if copy_into(reader, digest, body, size).await? < size {
            return Err(truncated());
        }
        let end = read_line(reader, 2).await?.ok_or_else(truncated)?;
        if !trim_line_end(&end).is_empty() {
            return Err(Failure::Malformed("chunk without its CRLF".to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::tcp::tests::{closed_port, endpoint};
    use std::net::SocketAddr;
    use tokio::io::AsyncReadExt;
    use tokio::net::{TcpListener, TcpStream};

    fn md5(bytes: &[u8]) -> [u8; 16] {
        Md5::digest(bytes).into()
    }

    fn url(path: &str) -> UrlSpec {
        UrlSpec {
            path: path.to_owned(),
            digest: None,
            status_codes: vec![200..=299],
            virtualhost: None,
            regex: None,
        }
    }

    fn spec(urls: Vec<UrlSpec>) -> HttpSpec {
        HttpSpec {
            version: HttpVersion::Http10,
            tls: None,
            urls,
        }
    }

    /// Reads a request up to its empty line.
    async fn read_request(stream: &mut TcpStream) -> String {
        let mut request = Vec::new();
        let mut byte = [0u8; 1];
        while !request.ends_with(b"\r\n\r\n") {
            if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                break;
            }
            request.push(byte[0]);
        }
        String::from_utf8_lossy(&request).into_owned()
    }

    /// A server that handles each connection with `behaviour`, forever.
    async fn serve<F, Fut>(behaviour: F) -> SocketAddr
    where
        F: Fn(TcpStream, String) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let behaviour = std::sync::Arc::new(behaviour);
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let behaviour = behaviour.clone();
                tokio::spawn(async move {
                    let request = read_request(&mut stream).await;
                    behaviour(stream, request).await;
                });
            }
        });
        address
    }

    async fn respond(mut stream: TcpStream, bytes: Vec<u8>) {
        let _ = stream.write_all(&bytes).await;
        let _ = stream.shutdown().await;
    }

    fn ok_response(body: &str) -> Vec<u8> {
        format!("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n{body}").into_bytes()
    }

    const TIMEOUT: Duration = Duration::from_secs(2);

    #[tokio::test]
    async fn up_on_200_with_the_right_digest() {
        let address = serve(|stream, _| respond(stream, ok_response("hello"))).await;
        let mut health = url("/health");
        health.digest = Some(md5(b"hello"));
        let outcome = check(&endpoint(address), &spec(vec![health]), TIMEOUT).await;
        assert_eq!(outcome, Ok(Success::default()));
    }

    #[tokio::test]
    async fn sends_keepalived_request_with_host_and_virtualhost() {
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let address = serve(move |stream, request| {
            let _ = sender.send(request);
            respond(stream, ok_response(""))
        })
        .await;
        let mut with_host = url("/b");
        with_host.virtualhost = Some("www.example.test".to_owned());
        let mut http = spec(vec![url("/a"), with_host]);
        http.version = HttpVersion::Http11;
        assert_eq!(
            check(&endpoint(address), &http, TIMEOUT).await,
            Ok(Success::default())
        );
        assert_eq!(
            receiver.recv().await.unwrap(),
            format!(
                "GET /a HTTP/1.1\r\nUser-Agent: KeepAliveClient\r\nConnection: close\r\nHost: {address}\r\n\r\n"
            )
        );
        assert_eq!(
            receiver.recv().await.unwrap(),
            "GET /b HTTP/1.1\r\nUser-Agent: KeepAliveClient\r\nConnection: close\r\nHost: www.example.test\r\n\r\n"
        );
    }

    #[tokio::test]
    async fn down_on_a_status_outside_the_ranges() {
        let address = serve(|stream, _| {
            respond(stream, b"HTTP/1.1 503 Service Unavailable\r\n\r\n".to_vec())
        })
        .await;
        let outcome = check(&endpoint(address), &spec(vec![url("/")]), TIMEOUT).await;
        assert_eq!(outcome, Err(Failure::Status(503)));
        assert_eq!(outcome.unwrap_err().to_string(), "status 503");
    }

    #[tokio::test]
    async fn status_ranges_accept_what_they_list() {
        let address =
            serve(|stream, _| respond(stream, b"HTTP/1.1 302 Found\r\n\r\n".to_vec())).await;
        let mut redirect = url("/");
        redirect.status_codes = vec![200..=200, 300..=302];
        let outcome = check(&endpoint(address), &spec(vec![redirect]), TIMEOUT).await;
        assert_eq!(outcome, Ok(Success::default()));
    }

    #[tokio::test]
    async fn down_on_a_digest_mismatch_with_both_digests() {
        let address = serve(|stream, _| respond(stream, ok_response("changed"))).await;
        let mut health = url("/");
        health.digest = Some(md5(b"hello"));
        let outcome = check(&endpoint(address), &spec(vec![health]), TIMEOUT).await;
        assert_eq!(
            outcome,
            Err(Failure::DigestMismatch {
                expected: hex(&md5(b"hello")),
                actual: hex(&md5(b"changed")),
            })
        );
    }

    #[tokio::test]
    async fn content_length_and_chunked_bodies_are_digested_decoded() {
        let address = serve(|stream, request| {
            let body = if request.starts_with("GET /chunked") {
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2;x=y\r\nlo\r\n0\r\n\r\n"
                    .to_vec()
            } else {
                // Content-Length stops the read: trailing garbage is not
                // the body, and the connection is left open.
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA".to_vec()
            };
            async move {
                let mut stream = stream;
                let _ = stream.write_all(&body).await;
                tokio::time::sleep(Duration::from_secs(30)).await;
            }
        })
        .await;
        for path in ["/chunked", "/length"] {
            let mut health = url(path);
            health.digest = Some(md5(b"hello"));
            let outcome = check(&endpoint(address), &spec(vec![health]), TIMEOUT).await;
            assert_eq!(outcome, Ok(Success::default()), "{path}");
        }
    }

    #[tokio::test]
    async fn regexes_match_within_their_offsets() {
        let address = serve(|stream, _| respond(stream, ok_response("status: OK, load 3"))).await;
        let check_with = |pattern: &str, no_match: bool, min: Option<u64>, max: Option<u64>| {
            let mut health = url("/");
            health.regex = Some(RegexSpec {
                pattern: pattern.to_owned(),
                options: vec!["caseless".to_owned()],
                no_match,
                min_offset: min,
                max_offset: max,
            });
            spec(vec![health])
        };
        let target = endpoint(address);
        let up = Ok(Success::default());
        assert_eq!(
            check(
                &target,
                &check_with("status: ok", false, None, None),
                TIMEOUT
            )
            .await,
            up
        );
        assert_eq!(
            check(
                &target,
                &check_with("load [0-9]", false, Some(8), Some(20)),
                TIMEOUT
            )
            .await,
            up
        );
        let outcome = check(
            &target,
            &check_with("status", false, Some(1), None),
            TIMEOUT,
        )
        .await;
        assert_eq!(
            outcome,
            Err(Failure::Other(
                "body does not match regex \"status\"".to_owned()
            ))
        );
        let outcome = check(&target, &check_with("load", false, None, Some(12)), TIMEOUT).await;
        assert!(
            outcome.is_err(),
            "a match past regex_max_offset does not count"
        );
        let outcome = check(&target, &check_with("error", true, None, None), TIMEOUT).await;
        assert_eq!(outcome, up, "regex_no_match");
        let outcome = check(&target, &check_with("OK", true, None, None), TIMEOUT).await;
        assert_eq!(
            outcome,
            Err(Failure::Other("body matches regex \"OK\"".to_owned()))
        );
    }

    #[tokio::test]
    async fn refused_is_refused() {
        let address = closed_port().await;
        let outcome = check(&endpoint(address), &spec(vec![url("/")]), TIMEOUT).await;
        assert_eq!(outcome, Err(Failure::ConnectionRefused));
    }

    #[tokio::test]
    async fn accept_then_hang_times_out() {
        let address = serve(|stream, _| async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(stream);
        })
        .await;
        let budget = Duration::from_millis(300);
        let outcome = check(&endpoint(address), &spec(vec![url("/")]), budget).await;
        assert_eq!(outcome, Err(Failure::Timeout { after: budget }));
    }

    #[tokio::test]
    async fn trickling_bytes_times_out_on_the_whole_exchange() {
        let address = serve(|mut stream, _| async move {
            for byte in b"HTTP/1.0 200 OK\r\n\r\nslow body".iter().cycle() {
                if stream.write_all(&[*byte]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        let budget = Duration::from_millis(400);
        let outcome = check(&endpoint(address), &spec(vec![url("/")]), budget).await;
        assert_eq!(outcome, Err(Failure::Timeout { after: budget }));
    }

    #[tokio::test]
    async fn reset_and_close_without_answer_are_failures() {
        let reset = serve(|stream, _| async move {
            // SO_LINGER 0 turns the close into a reset.
            let _ = stream.set_zero_linger();
            drop(stream);
        })
        .await;
        let outcome = check(&endpoint(reset), &spec(vec![url("/")]), TIMEOUT).await;
        assert!(
            matches!(outcome, Err(Failure::ConnectionReset | Failure::NoResponse)),
            "{outcome:?}"
        );
        let silent = serve(|stream, _| async move { drop(stream) }).await;
        let outcome = check(&endpoint(silent), &spec(vec![url("/")]), TIMEOUT).await;
        assert_eq!(outcome, Err(Failure::NoResponse));
    }

    #[tokio::test]
    async fn garbage_is_malformed() {
        let address = serve(|stream, _| respond(stream, b"\x00\x01garbage\r\n\r\n".to_vec())).await;
        let outcome = check(&endpoint(address), &spec(vec![url("/")]), TIMEOUT).await;
        assert!(matches!(outcome, Err(Failure::Malformed(_))), "{outcome:?}");
        let endless_header = serve(|stream, _| {
            respond(
                stream,
                [b"HTTP/1.0 200 OK\r\nX: ".to_vec(), vec![b'a'; 100_000]].concat(),
            )
        })
        .await;
        let outcome = check(&endpoint(endless_header), &spec(vec![url("/")]), TIMEOUT).await;
        assert!(matches!(outcome, Err(Failure::Malformed(_))), "{outcome:?}");
    }

    #[tokio::test]
    async fn a_huge_body_stops_at_the_limit() {
        let huge = [b"HTTP/1.0 200 OK\r\n\r\n".to_vec(), vec![b'x'; 4096]].concat();
        let mut reader = BufReader::new(&huge[..]);
        let outcome = read_response(&mut reader, 1000, false).await;
        assert_eq!(outcome, Err(Failure::TooLarge { limit: 1000 }));
        let declared = b"HTTP/1.0 200 OK\r\nContent-Length: 99999999999\r\n\r\n".to_vec();
        let outcome = read_response(&mut BufReader::new(&declared[..]), 1000, false).await;
        assert_eq!(outcome, Err(Failure::TooLarge { limit: 1000 }));
    }

    #[tokio::test]
    async fn a_hanging_server_does_not_delay_another_check() {
        let hanging = serve(|stream, _| async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop(stream);
        })
        .await;
        let healthy = serve(|stream, _| respond(stream, ok_response("ok"))).await;
        let slow_budget = Duration::from_secs(5);
        let slow = tokio::spawn(async move {
            check(&endpoint(hanging), &spec(vec![url("/")]), slow_budget).await
        });
        // The healthy check finishes while the other still hangs.
        let fast = check(&endpoint(healthy), &spec(vec![url("/")]), TIMEOUT).await;
        assert_eq!(fast, Ok(Success::default()));
        assert!(!slow.is_finished());
        slow.abort();
    }

    #[test]
    fn urls() {
        assert_eq!(
            parse_url("http://example.test:8080/a/b?c"),
            Ok(ParsedUrl {
                tls: false,
                host: "example.test".to_owned(),
                port: 8080,
                path: "/a/b?c".to_owned()
            })
        );
        assert_eq!(parse_url("http://[::1]").unwrap().host, "::1");
        assert_eq!(parse_url("http://[::1]:81").unwrap().port, 81);
        assert_eq!(parse_url("http://h").unwrap().path, "/");
        assert_eq!(parse_url("https://h/").unwrap().port, 443);
        assert!(parse_url("https://h/").unwrap().tls);
        assert!(parse_url("ftp://h/").is_err());
        assert!(parse_url("http://:80/").is_err());
    }

    #[test]
    fn status_lines() {
        assert_eq!(parse_status_line(b"HTTP/1.1 204 No Content\r\n"), Ok(204));
        assert_eq!(parse_status_line(b"HTTP/1.0 200\n"), Ok(200));
        assert!(parse_status_line(b"ICY 200 OK\r\n").is_err());
        assert!(parse_status_line(b"HTTP/1.1 2000 OK\r\n").is_err());
    }
}
