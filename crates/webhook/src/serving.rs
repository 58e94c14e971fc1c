//! HTTP/1.1 over the [`TlsListener`]'s connections with hyper, reporting to each
//! connection's [`Track`] where its request is (head parsed, body read, response handed
//! over) so that its deadlines and its place in the slot table follow the request. This is
//! what `axum::serve` would do, plus that tracking, plus a graceful shutdown that lets
//! requests in flight finish.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::Router;
use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::sync::watch;

use crate::conn::{Conn, Track};
use crate::listener::TlsListener;

/// Serve `app` on the connections of `listener` until `shutdown` resolves, then stop
/// accepting and wait for the open connections to finish their requests.
pub(crate) async fn serve(mut listener: TlsListener, app: Router, shutdown: impl Future<Output = ()>) {
    let (stop_tx, stop_rx) = watch::channel(false);
    let (done_tx, done_rx) = watch::channel(());
    tokio::pin!(shutdown);
    loop {
        let conn = tokio::select! {
            () = &mut shutdown => break,
            c = listener.accept() => c,
        };
        let Some(conn) = conn else { break };
        tokio::spawn(connection(conn, app.clone(), stop_rx.clone(), done_rx.clone()));
    }
    drop(listener);
    let _ = stop_tx.send(true);
    drop(done_rx);
    // Resolves once every connection task has dropped its receiver.
    done_tx.closed().await;
}

async fn connection(conn: Conn, app: Router, mut stop: watch::Receiver<bool>, _done: watch::Receiver<()>) {
    let peer = conn.peer();
    let service = Tracked { app: TowerToHyperService::new(app), track: conn.track().clone() };
    let mut http = hyper::server::conn::http1::Builder::new();
    // The deadlines are the connection's own (see `conn`): hyper's would also close idle
    // keep-alive connections after the header deadline.
    http.header_read_timeout(None);
    let serving = http.serve_connection(TokioIo::new(conn), service);
    tokio::pin!(serving);
    let mut stopping = false;
    loop {
        tokio::select! {
            result = serving.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
                return;
            }
            _ = stop.wait_for(|stop| *stop), if !stopping => {
                stopping = true;
                serving.as_mut().graceful_shutdown();
            }
        }
    }
}

/// The app as a hyper service that reports the request's progress to the connection.
#[derive(Clone)]
struct Tracked {
    app: TowerToHyperService<Router>,
    track: Arc<Track>,
}

impl hyper::service::Service<Request<Incoming>> for Tracked {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        self.track.head_received();
        let track = self.track.clone();
        let request = request.map(|inner| RequestBody { inner, track: track.clone() });
        let answer = self.app.call(request);
        Box::pin(async move {
            let response = answer.await?;
            Ok(response.map(|inner| ResponseBody { inner, track }))
        })
    }
}

/// A request body telling its connection when it has been read to its end, or dropped.
struct RequestBody {
    inner: Incoming,
    track: Arc<Track>,
}

impl Body for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            self.track.body_done();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        self.track.body_done();
    }
}

/// A response body telling its connection when hyper is done with it.
struct ResponseBody {
    inner: axum::body::Body,
    track: Arc<Track>,
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        self.track.response_done();
    }
}
