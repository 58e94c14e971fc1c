//! [`TlsListener`] accepts TCP connections while the slot table has room (or can make it),
//! runs each TLS handshake in its own task with a deadline, answers plain HTTP with a 400
//! the way Go's servers do, and hands finished TLS connections ([`Conn`]) to the HTTP server.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;

use crate::conn::{Conn, ConnectionLimits};
use crate::slots::{Admitted, Slots};

/// The first byte of a TLS handshake record.
const TLS_HANDSHAKE: u8 = 0x16;
const PLAIN_HTTP_ANSWER: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
Connection: close\r\nContent-Length: 48\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// A listener whose connections have finished their TLS handshake, within
/// [`ConnectionLimits`]. The accept task stops when the listener is dropped.
pub(crate) struct TlsListener {
    rx: mpsc::Receiver<Conn>,
    addr: SocketAddr,
}

impl std::fmt::Debug for TlsListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsListener").field("addr", &self.addr).finish_non_exhaustive()
    }
}

impl TlsListener {
    /// Start accepting on `listener` within `limits` (on the current tokio runtime).
    pub(crate) fn with_limits(
        listener: TcpListener,
        acceptor: TlsAcceptor,
        limits: ConnectionLimits,
    ) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let (tx, rx) = mpsc::channel(128);
        tokio::spawn(accept_loop(listener, acceptor, Slots::new(limits), limits, tx));
        Ok(Self { rx, addr })
    }

    /// The next connection, `None` once the accept task has stopped.
    pub(crate) async fn accept(&mut self) -> Option<Conn> {
        self.rx.recv().await
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    slots: Arc<Slots>,
    limits: ConnectionLimits,
    tx: mpsc::Sender<Conn>,
) {
    loop {
        // Leave clients in the backlog while no slot can be had: accepting them would only
        // move the queue into this process.
        let accepted = tokio::select! {
            () = tx.closed() => return,
            a = async {
                slots.wait_for_room().await;
                listener.accept().await
            } => a,
        };
        let (tcp, peer) = match accepted {
            Ok(c) => c,
            Err(e) => {
                // Out of file descriptors, typically: give closing connections a moment.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let admitted = tokio::select! {
            () = tx.closed() => return,
            a = slots.admit_when_possible(peer.ip()) => a,
        };
        let _ = tcp.set_nodelay(true);
        tokio::spawn(handshake(tcp, peer, admitted, acceptor.clone(), limits, tx.clone()));
    }
}

async fn handshake(
    tcp: TcpStream,
    peer: SocketAddr,
    admitted: Admitted,
    acceptor: TlsAcceptor,
    limits: ConnectionLimits,
    tx: mpsc::Sender<Conn>,
) {
    let Admitted { slot, track, mut shed } = admitted;
    let handshake = async {
        let mut first = [0u8; 1];
        if tcp.peek(&mut first).await? == 1 && first[0] != TLS_HANDSHAKE {
            let mut tcp = tcp;
            tcp.write_all(PLAIN_HTTP_ANSWER).await?;
            tcp.shutdown().await?;
            return Ok(None);
        }
        acceptor.accept(tcp).await.map(Some)
    };
    let outcome = tokio::select! {
        o = tokio::time::timeout(limits.handshake_timeout, handshake) => o,
        _ = &mut shed => {
            tracing::debug!(%peer, phase = "handshake", "connection shed");
            return;
        }
    };
    match outcome {
        Ok(Ok(Some(io))) => {
            track.handshake_done();
            let _ = tx.send(Conn::new(io, peer, limits, track, shed, slot)).await;
        }
        Ok(Ok(None)) => tracing::debug!(%peer, "plain HTTP on the TLS port answered with 400"),
        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
        Err(_) => {
            tracing::debug!(%peer, limit_ms = u64::try_from(limits.handshake_timeout.as_millis()).unwrap_or(u64::MAX),
            "TLS handshake timed out")
        }
    }
}
