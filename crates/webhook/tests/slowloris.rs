//! Slow clients against the webhook server over real TLS on loopback: clients trickling a
//! request head or body are closed at the deadline of the request, not kept alive by each
//! byte; a keep-alive connection is not held to those deadlines between requests; and
//! while more slow clients than connection slots hold the server, a valid review is still
//! answered promptly.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use ctop_core::AdmissionOutcome;
use ctop_webhook::{AdmissionCall, ConnectionLimits, HookError, ServerConfig, review_for};
use serde_json::Value;
use support::{
    Slow, SlowClients, allowed, client_config, connect, connect_tls, post, start_with_limits, widget,
    widget_routes,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const VALIDATE: &str = "/validate/demo.ctop.dev/v1/widgets";

fn allow(_: &AdmissionCall<'_>) -> Result<AdmissionOutcome, HookError> {
    Ok(allowed())
}

fn review(uid: &str) -> Vec<u8> {
    serde_json::to_vec(&review_for(uid, "CREATE", &widget("blue"), None)).unwrap()
}

/// Read until the server closes the connection (EOF or an error); whatever it sent.
async fn until_closed(mut tls: impl tokio::io::AsyncRead + Unpin) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while let Ok(n @ 1..) = tls.read(&mut buf).await {
        got.extend_from_slice(&buf[..n]);
    }
    got
}

/// Write `bytes` one at a time, `every` apart, until the server closes the connection; how
/// many were written.
async fn trickle(
    tls: tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    bytes: &[u8],
    every: Duration,
) -> usize {
    let (rd, mut wr) = tokio::io::split(tls);
    let closed = until_closed(rd);
    tokio::pin!(closed);
    let mut tick = tokio::time::interval(every);
    for (i, byte) in bytes.chunks(1).enumerate() {
        tokio::select! {
            _ = &mut closed => return i,
            _ = tick.tick() => if wr.write_all(byte).await.is_err() { return i },
        }
    }
    closed.await;
    bytes.len()
}

fn short_deadlines() -> ConnectionLimits {
    ConnectionLimits {
        header_read_timeout: Duration::from_millis(400),
        request_read_timeout: Duration::from_millis(800),
        idle_timeout: Duration::from_secs(30),
        ..ConnectionLimits::default()
    }
}

/// The head deadline runs from the end of the handshake whatever arrives: a silent client
/// and one sending a byte every 50 ms are both closed at 400 ms (the idle time is 30 s).
#[tokio::test]
async fn a_head_that_never_completes_is_closed_at_the_header_deadline() {
    let (addr, ca) =
        start_with_limits(allow, &widget_routes(), ServerConfig::default(), short_deadlines()).await;
    let tls = client_config(&ca);
    let head = format!("POST {VALIDATE} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: {}\r\n\r\n", "a".repeat(1000));

    let silent = connect_tls(addr, tls.clone()).await.unwrap();
    let trickling = connect_tls(addr, tls).await.unwrap();
    let started = Instant::now();
    let silent = tokio::spawn(async move {
        until_closed(silent).await;
        started.elapsed()
    });
    let sent = trickle(trickling, head.as_bytes(), Duration::from_millis(50)).await;
    let trickled_for = started.elapsed();
    let silent_for = silent.await.unwrap();

    assert!(sent > 3 && sent < head.len(), "{sent} bytes of the head were written");
    for took in [trickled_for, silent_for] {
        assert!(took >= Duration::from_millis(350), "closed after {took:?}, before the deadline");
        assert!(took < Duration::from_secs(3), "closed after {took:?}, long after the 400 ms deadline");
    }
}

/// Head and body together have 800 ms: a body trickling in after a prompt head is cut off
/// there, 400 ms after the head deadline would have passed.
#[tokio::test]
async fn a_trickling_body_is_closed_at_the_request_deadline() {
    let (addr, ca) =
        start_with_limits(allow, &widget_routes(), ServerConfig::default(), short_deadlines()).await;
    let mut tls = connect_tls(addr, client_config(&ca)).await.unwrap();
    let started = Instant::now();
    let body = review("slow-body");
    let head = format!(
        "POST {VALIDATE} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    let sent = trickle(tls, &body, Duration::from_millis(50)).await;
    let took = started.elapsed();
    assert!(sent < body.len(), "the whole body was written ({sent} bytes)");
    assert!(took >= Duration::from_millis(700), "closed after {took:?}, before the request deadline");
    assert!(took < Duration::from_secs(3), "closed after {took:?}, long after the 800 ms deadline");
}

/// Between requests a keep-alive connection has the idle time, not the head deadline: a
/// second review after more than the head deadline of silence is answered on the same
/// connection.
#[tokio::test]
async fn a_keep_alive_connection_is_not_held_to_the_header_deadline() {
    let (addr, ca) =
        start_with_limits(allow, &widget_routes(), ServerConfig::default(), short_deadlines()).await;
    let mut c = connect(addr, client_config(&ca)).await.unwrap();
    let (status, _) = post(&mut c, VALIDATE, review("first")).await;
    assert_eq!(status, 200);
    // Let the head deadline (400 ms) pass twice over on the idle connection.
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(!c.is_closed(), "the idle keep-alive connection was closed");
    let (status, _) = post(&mut c, VALIDATE, review("second")).await;
    assert_eq!(status, 200);
}

/// The idle time starts when the response is out, also after a handler that kept the
/// connection busy (hyper reads nothing more until bytes arrive, so the connection has to
/// wake itself for the idle deadline).
#[tokio::test]
async fn a_connection_left_idle_after_a_slow_handler_is_closed_at_the_idle_deadline() {
    fn slow(_: &AdmissionCall<'_>) -> Result<AdmissionOutcome, HookError> {
        std::thread::sleep(Duration::from_millis(300));
        Ok(allowed())
    }
    let limits = ConnectionLimits { idle_timeout: Duration::from_millis(400), ..ConnectionLimits::default() };
    let (addr, ca) = start_with_limits(slow, &widget_routes(), ServerConfig::default(), limits).await;
    let mut tls = connect_tls(addr, client_config(&ca)).await.unwrap();
    let body = review("slow");
    let head = format!(
        "POST {VALIDATE} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    tls.write_all(&[head.as_bytes(), &body].concat()).await.unwrap();
    // Read the answer (its head and Content-Length bytes of body), then wait for the close.
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    let answered = loop {
        let n = tls.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed before answering: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        let Some((head, rest)) = text.split_once("\r\n\r\n") else { continue };
        let length = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(str::to_owned))
            .unwrap()
            .parse::<usize>()
            .unwrap();
        if rest.len() >= length {
            break Instant::now();
        }
    };
    assert!(got.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&got));
    let extra = until_closed(tls).await;
    let idle_for = answered.elapsed();
    assert!(extra.is_empty());
    assert!(idle_for >= Duration::from_millis(300), "closed after {idle_for:?} of idleness");
    assert!(idle_for < Duration::from_secs(3), "closed after {idle_for:?}, long after the 400 ms idle time");
}

/// 40 clients trickling request heads against 16 slots, opening a new connection whenever
/// one is closed: a review on a new connection is answered within a few graces, and a
/// second one on the same connection at once.
#[tokio::test]
async fn a_valid_review_is_answered_while_slow_clients_outnumber_the_slots() {
    let limits = ConnectionLimits {
        max_connections: 16,
        shed_grace: Duration::from_millis(300),
        ..ConnectionLimits::default()
    };
    let (addr, ca) = start_with_limits(allow, &widget_routes(), ServerConfig::default(), limits).await;
    let tls = client_config(&ca);
    let slow = SlowClients::spawn(addr, tls.clone(), 40, Slow::Trickle(Duration::from_millis(100)));
    // Every slow client got in at least once: the slots were full and shedding.
    let seen = tokio::time::timeout(Duration::from_secs(8), slow.wait_for(|c| c.ever == 40)).await;
    let seen = seen.unwrap_or_else(|_| panic!("the slow clients never all got in: {:?}", slow.counts()));
    assert!(seen.closed >= 24, "{seen:?}");

    let started = Instant::now();
    let answered = tokio::time::timeout(Duration::from_secs(5), async {
        let mut c = connect(addr, tls.clone()).await.unwrap();
        let (status, body) = post(&mut c, VALIDATE, review("valid")).await;
        let first = started.elapsed();
        let again = Instant::now();
        let (status2, _) = post(&mut c, VALIDATE, review("again")).await;
        (status, body, first, status2, again.elapsed())
    })
    .await;
    let (status, body, first, status2, second) = answered.expect("no answer within 5 s");
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_slice::<Value>(&body).unwrap()["response"]["uid"], "valid");
    assert_eq!(status2, 200);
    // A new connection waits for the grace of the newest slow ones (300 ms), not for their
    // 10 s head deadline; a settled one not at all.
    assert!(first < Duration::from_secs(3), "the review took {first:?}");
    assert!(second < Duration::from_secs(1), "the second review took {second:?}");
    let during = slow.counts();
    assert!(during.open >= 8, "the slow clients no longer hold the server: {during:?}");
}

/// The same with slow clients that connect over TCP and never start TLS.
#[tokio::test]
async fn a_valid_review_is_answered_while_silent_tcp_clients_outnumber_the_slots() {
    let limits = ConnectionLimits {
        max_connections: 16,
        shed_grace: Duration::from_millis(300),
        ..ConnectionLimits::default()
    };
    let (addr, ca) = start_with_limits(allow, &widget_routes(), ServerConfig::default(), limits).await;
    let tls = client_config(&ca);
    let slow = SlowClients::spawn(addr, tls.clone(), 40, Slow::Silent);
    let seen =
        tokio::time::timeout(Duration::from_secs(8), slow.wait_for(|c| c.open == 40 && c.closed >= 24)).await;
    seen.unwrap_or_else(|_| panic!("the silent clients never filled the server: {:?}", slow.counts()));

    let started = Instant::now();
    let answered = tokio::time::timeout(Duration::from_secs(5), async {
        let mut c = connect(addr, tls.clone()).await.unwrap();
        post(&mut c, VALIDATE, review("valid")).await
    })
    .await;
    let (status, _) = answered.expect("no answer within 5 s");
    assert_eq!(status, 200);
    assert!(started.elapsed() < Duration::from_secs(3), "the review took {:?}", started.elapsed());
}
