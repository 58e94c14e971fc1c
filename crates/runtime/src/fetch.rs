//! `__ct_host.fetch(url, initJson)`: a blocking HTTP/1.1 client for scripts.
//!
//! The script side (`fetch` in the sdk) sends `init = {method, headers, body?: string,
//! timeout?: "5s"}` as JSON and gets back `{status, statusText, headers, body, url}` or
//! `{error}` (which the sdk throws as a `TypeError`). Every HTTP status, 404 and 500
//! included, is a normal reply; only failing to get one is an error.
//!
//! The transport is [`ureq`] with rustls on the `ring` provider and the Mozilla roots of
//! `webpki-roots`; it honours `HTTP(S)_PROXY`/`NO_PROXY`. This module adds what a reconcile
//! needs on top of it, bounded by [`FetchLimits`]:
//! - only `http` and `https` URLs, on every hop;
//! - one time budget for the whole call (DNS, connect, redirects, body), `init.timeout` or
//!   [`FetchLimits::timeout`], never beyond what is left of the script call's deadline;
//! - request and response bodies capped in bytes;
//! - redirects followed here, at most [`FetchLimits::max_redirects`], with fetch's rules:
//!   303 (and 301/302 after a POST) becomes a GET without body, 307/308 repeat the method and
//!   body, and `authorization` is dropped when the origin changes.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use ureq::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use ureq::http::{Method, Request, Response, Uri};
use ureq::unversioned::resolver::DefaultResolver;
use ureq::unversioned::transport::DefaultConnector;

use crate::egress::{EgressSlot, GuardedResolver};

const MIB: usize = 1024 * 1024;
const USER_AGENT: &str = concat!("ctop/", env!("CARGO_PKG_VERSION"));

/// Bounds of `__ct_host.fetch`, part of [`crate::vm::Limits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLimits {
    /// Time for one fetch, redirects and body included, when the script gives no `timeout`
    /// (default 10 s). Any timeout is cut to what is left of the call's deadline.
    pub timeout: Duration,
    /// Largest response body in bytes (default 4 MiB); a larger one fails the fetch.
    pub max_response: usize,
    /// Largest request body in bytes (default 4 MiB); a larger one fails the fetch.
    pub max_request: usize,
    /// Redirects followed per fetch (default 5); one more fails the fetch.
    pub max_redirects: u32,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits {
            timeout: Duration::from_secs(10),
            max_response: 4 * MIB,
            max_request: 4 * MIB,
            max_redirects: 5,
        }
    }
}

/// Why a fetch produced no response; the text becomes the reply's `error`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// Not a URL, or one without a host.
    #[error("invalid URL {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
    /// A URL whose scheme is not http or https.
    #[error("unsupported URL scheme {scheme:?} in {url:?}: only http and https are allowed")]
    Scheme { url: String, scheme: String },
    /// The init JSON is not what the sdk sends (bad method, header, timeout, …).
    #[error("bad request: {0}")]
    BadInit(String),
    /// The request body is over [`FetchLimits::max_request`].
    #[error("the request body is {size} bytes, more than the {limit}-byte limit")]
    RequestTooLarge { size: usize, limit: usize },
    /// The response body is over [`FetchLimits::max_response`].
    #[error("the response body is larger than the {limit}-byte limit")]
    ResponseTooLarge { limit: usize },
    /// The time budget ran out.
    #[error(
        "timed out after {after:?}{}",
        if *.by_deadline { " (all that was left of the script call's deadline)" } else { "" }
    )]
    Timeout { after: Duration, by_deadline: bool },
    /// More redirects than [`FetchLimits::max_redirects`].
    #[error("more than {0} redirects")]
    TooManyRedirects(u32),
    /// A redirect response whose `location` cannot be followed.
    #[error("bad redirect: {0}")]
    BadRedirect(String),
    /// Network, TLS or protocol failure.
    #[error("{0}")]
    Transport(String),
    /// The egress policy refuses the destination (see [`crate::egress`]).
    #[error("{0}")]
    Denied(String),
}

/// What the script sends as `initJson`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Init {
    method: Option<String>,
    headers: Option<BTreeMap<String, serde_json::Value>>,
    body: Option<String>,
    timeout: Option<serde_json::Value>,
}

/// A response, as the script receives it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Reply {
    pub status: u16,
    pub status_text: String,
    /// Lower-case names; repeated headers joined with `", "`.
    pub headers: BTreeMap<String, String>,
    /// The body as UTF-8 (invalid sequences replaced).
    pub body: String,
    /// The URL that answered, after redirects.
    pub url: String,
}

/// The fetch client of one [`crate::Vm`]: limits plus a lazily built connection pool.
pub(crate) struct Fetcher {
    limits: FetchLimits,
    policy: EgressSlot,
    proxy_from_env: bool,
    agent: OnceLock<ureq::Agent>,
}

impl Fetcher {
    pub(crate) fn new(limits: FetchLimits, policy: EgressSlot) -> Self {
        Fetcher { limits, policy, proxy_from_env: true, agent: OnceLock::new() }
    }

    fn agent(&self) -> &ureq::Agent {
        self.agent.get_or_init(|| {
            let config = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                .user_agent(USER_AGENT)
                .max_idle_connections(4)
                .max_idle_connections_per_host(2);
            let config = if self.proxy_from_env { config } else { config.proxy(None) };
            let resolver =
                GuardedResolver { policy: Arc::clone(&self.policy), inner: DefaultResolver::default() };
            ureq::Agent::with_parts(config.build(), DefaultConnector::new(), resolver)
        })
    }

    /// The host call: `initJson` in, reply JSON (or `{"error": …}`) out. `cap` is what is
    /// left of the script call's deadline (`None`: no deadline).
    pub(crate) fn fetch_json(&self, url: &str, init_json: &str, cap: Option<Duration>) -> String {
        let reply = serde_json::from_str::<Init>(if init_json.trim().is_empty() { "{}" } else { init_json })
            .map_err(|e| FetchError::BadInit(format!("init is not valid JSON: {e}")))
            .and_then(|init| self.fetch(url, init, cap));
        let json = match reply {
            Ok(reply) => serde_json::to_string(&reply),
            Err(error) => serde_json::to_string(&serde_json::json!({ "error": error.to_string() })),
        };
        json.unwrap_or_else(|e| format!("{{\"error\":\"cannot encode the reply: {e}\"}}"))
    }

    fn fetch(&self, url: &str, init: Init, cap: Option<Duration>) -> Result<Reply, FetchError> {
        let started = Instant::now();
        let mut uri = parse_url(url)?;
        let method = init.method.as_deref().unwrap_or("GET").trim().to_ascii_uppercase();
        let mut method = Method::from_bytes(method.as_bytes())
            .map_err(|_| FetchError::BadInit(format!("invalid method {method:?}")))?;
        if method == Method::CONNECT || method == Method::TRACE {
            return Err(FetchError::BadInit(format!("method {method} is not allowed")));
        }
        let mut headers = HeaderMap::new();
        for (name, value) in init.headers.unwrap_or_default() {
            let value = match value {
                serde_json::Value::String(s) => s,
                v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_)) => v.to_string(),
                v => return Err(FetchError::BadInit(format!("header {name:?} has a non-string value {v}"))),
            };
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| FetchError::BadInit(format!("invalid header name {name:?}")))?;
            // The client frames the message itself.
            if matches!(name.as_str(), "content-length" | "transfer-encoding" | "connection" | "host" | "te")
            {
                continue;
            }
            let value = HeaderValue::from_str(&value)
                .map_err(|_| FetchError::BadInit(format!("invalid value for header {name}")))?;
            headers.append(name, value);
        }
        let mut body = init.body.map(String::into_bytes);
        if let Some(b) = &body {
            if b.len() > self.limits.max_request {
                return Err(FetchError::RequestTooLarge { size: b.len(), limit: self.limits.max_request });
            }
            if method == Method::GET || method == Method::HEAD {
                return Err(FetchError::BadInit(format!("a {method} request cannot have a body")));
            }
        }
        let wanted = match init.timeout {
            None => self.limits.timeout,
            Some(t) => parse_timeout(&t)?,
        };
        let (budget, by_deadline) = match cap {
            Some(cap) if cap < wanted => (cap, true),
            _ => (wanted, false),
        };
        let timeout = || FetchError::Timeout { after: budget, by_deadline };
        let end = started + budget;

        let mut redirects = 0;
        loop {
            self.policy.read().check(&uri).map_err(|denied| FetchError::Denied(denied.to_string()))?;
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timeout());
            }
            let response = self
                .send(&method, &uri, &headers, body.as_deref(), left)
                .map_err(|e| transport(e, timeout))?;
            let status = response.status();
            let location = response.headers().get(header::LOCATION);
            if !(status.is_redirection() && location.is_some()) || status == 304 {
                return self.reply(response, &uri, timeout);
            }
            redirects += 1;
            if redirects > self.limits.max_redirects {
                return Err(FetchError::TooManyRedirects(self.limits.max_redirects));
            }
            let location = location
                .and_then(|l| l.to_str().ok())
                .ok_or_else(|| FetchError::BadRedirect("the location header is not text".to_owned()))?;
            let next = resolve(&uri, location)?;
            if status == 303 && method != Method::HEAD
                || (status == 301 || status == 302) && method == Method::POST
            {
                method = Method::GET;
                body = None;
                for name in ["content-type", "content-encoding", "content-language", "content-location"] {
                    headers.remove(name);
                }
            }
            if origin(&next) != origin(&uri) {
                headers.remove(header::AUTHORIZATION);
                headers.remove(header::COOKIE);
            }
            uri = next;
        }
    }

    fn send(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Option<&[u8]>,
        left: Duration,
    ) -> Result<Response<ureq::Body>, ureq::Error> {
        let mut builder = Request::builder().method(method.clone()).uri(uri.clone());
        if let Some(h) = builder.headers_mut() {
            h.extend(headers.iter().map(|(n, v)| (n.clone(), v.clone())));
        }
        let agent = self.agent();
        match body {
            Some(body) => {
                let request = builder.body(body)?;
                agent.run(agent.configure_request(request).timeout_global(Some(left)).build())
            }
            None => {
                let request = builder.body(())?;
                agent.run(agent.configure_request(request).timeout_global(Some(left)).build())
            }
        }
    }

    /// Reads the body within the limit and builds the reply.
    fn reply(
        &self,
        response: Response<ureq::Body>,
        uri: &Uri,
        timeout: impl Fn() -> FetchError,
    ) -> Result<Reply, FetchError> {
        let limit = self.limits.max_response;
        let (parts, body) = response.into_parts();
        let declared =
            parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(FetchError::ResponseTooLarge { limit });
        }
        let mut bytes = Vec::new();
        body.into_reader()
            .take(limit as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| transport(ureq::Error::from(e), &timeout))?;
        if bytes.len() > limit {
            return Err(FetchError::ResponseTooLarge { limit });
        }
        let mut headers = BTreeMap::<String, String>::new();
        for (name, value) in &parts.headers {
            let value = String::from_utf8_lossy(value.as_bytes());
            headers
                .entry(name.as_str().to_owned())
                .and_modify(|v| {
                    v.push_str(", ");
                    v.push_str(&value);
                })
                .or_insert_with(|| value.into_owned());
        }
        Ok(Reply {
            status: parts.status.as_u16(),
            status_text: parts.status.canonical_reason().unwrap_or_default().to_owned(),
            headers,
            body: String::from_utf8(bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            url: uri.to_string(),
        })
    }
}

fn transport(error: ureq::Error, timeout: impl Fn() -> FetchError) -> FetchError {
    match error {
        ureq::Error::Timeout(_) => timeout(),
        ureq::Error::HostNotFound => FetchError::Transport("host not found".to_owned()),
        ureq::Error::Io(e) if e.kind() == std::io::ErrorKind::TimedOut => timeout(),
        ureq::Error::Io(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            FetchError::Denied(e.to_string())
        }
        ureq::Error::Io(e) => FetchError::Transport(format!("connection failed: {e}")),
        ureq::Error::Rustls(e) => FetchError::Transport(format!("TLS: {e}")),
        e => FetchError::Transport(e.to_string()),
    }
}

/// Parses an absolute http or https URL.
fn parse_url(url: &str) -> Result<Uri, FetchError> {
    let bad = |reason: &str| FetchError::BadUrl { url: url.to_owned(), reason: reason.to_owned() };
    if let Some(scheme) = scheme_of(url.trim())
        && !scheme.eq_ignore_ascii_case("http")
        && !scheme.eq_ignore_ascii_case("https")
    {
        return Err(FetchError::Scheme { url: url.to_owned(), scheme: scheme.to_owned() });
    }
    let uri: Uri = url.trim().parse().map_err(|e: ureq::http::uri::InvalidUri| bad(&e.to_string()))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(scheme) => return Err(FetchError::Scheme { url: url.to_owned(), scheme: scheme.to_owned() }),
        None => return Err(bad("not an absolute URL (it needs http:// or https://)")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    Ok(uri)
}

/// Resolves a `location` header against the URL that sent it (RFC 3986, section 5.2).
fn resolve(base: &Uri, location: &str) -> Result<Uri, FetchError> {
    let location = location.trim();
    let location = location.split_once('#').map_or(location, |(l, _)| l);
    let scheme = base.scheme_str().unwrap_or("http");
    let authority = base.authority().map_or("", |a| a.as_str());
    let absolute = if scheme_of(location).is_some() {
        location.to_owned()
    } else if location.starts_with("//") {
        format!("{scheme}:{location}")
    } else {
        let path = if location.is_empty() || location.starts_with('?') {
            let base_path = base.path();
            format!(
                "{base_path}{}",
                if location.is_empty() {
                    base.query().map_or(String::new(), |q| format!("?{q}"))
                } else {
                    location.to_owned()
                }
            )
        } else if location.starts_with('/') {
            location.to_owned()
        } else {
            let dir = base.path().rsplit_once('/').map_or("", |(d, _)| d);
            format!("{dir}/{location}")
        };
        let (path, query) = path.split_once('?').map_or((path.as_str(), None), |(p, q)| (p, Some(q)));
        let path = remove_dots(path);
        match query {
            Some(q) => format!("{scheme}://{authority}{path}?{q}"),
            None => format!("{scheme}://{authority}{path}"),
        }
    };
    parse_url(&absolute).map_err(|e| FetchError::BadRedirect(format!("location {location:?}: {e}")))
}

/// The scheme of an absolute URL (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`).
fn scheme_of(url: &str) -> Option<&str> {
    let (scheme, _) = url.split_once(':')?;
    let mut bytes = scheme.bytes();
    let first = bytes.next()?;
    (first.is_ascii_alphabetic() && bytes.all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)))
        .then_some(scheme)
}

/// Removes `.` and `..` segments from an absolute path.
fn remove_dots(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *segment {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                out.pop();
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    format!("/{}", out.join("/"))
}

/// Scheme, host and port: what decides whether credentials follow a redirect.
fn origin(uri: &Uri) -> (Option<&str>, Option<&str>, Option<u16>) {
    let port = uri.port_u16().or(match uri.scheme_str() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    });
    (uri.scheme_str(), uri.host(), port)
}

/// A timeout as the sdk sends it (`"1m30s"`, `"250ms"`), or a number of seconds.
fn parse_timeout(value: &serde_json::Value) -> Result<Duration, FetchError> {
    let bad = || FetchError::BadInit(format!("invalid timeout {value} (write e.g. \"5s\" or \"500ms\")"));
    let duration = match value {
        serde_json::Value::Number(n) => n
            .as_f64()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .and_then(|s| Duration::try_from_secs_f64(s).ok()),
        serde_json::Value::String(s) => parse_duration(s.trim()),
        _ => None,
    }
    .ok_or_else(bad)?;
    if duration.is_zero() {
        return Err(FetchError::BadInit("the timeout must be more than 0".to_owned()));
    }
    Ok(duration)
}

/// `(\d+(ms|s|m|h|d))+`.
fn parse_duration(text: &str) -> Option<Duration> {
    let mut rest = text;
    let mut total = Duration::ZERO;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, len) = if rest.starts_with("ms") {
            (Duration::from_millis(1), 2)
        } else {
            let unit = match rest.bytes().next()? {
                b's' => 1,
                b'm' => 60,
                b'h' => 3600,
                b'd' => 86400,
                _ => return None,
            };
            (Duration::from_secs(unit), 1)
        };
        rest = &rest[len..];
        total = total.checked_add(unit.checked_mul(u32::try_from(n).ok()?)?)?;
    }
    Some(total)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;
    use crate::egress::EgressPolicy;
    use std::io::Write;
    use std::net::{SocketAddr, TcpListener, TcpStream};
    use std::sync::mpsc;
    use std::thread;

    /// One request as the test server saw it.
    #[derive(Debug)]
    pub(crate) struct Seen {
        pub head: String,
        pub body: Vec<u8>,
    }

    impl Seen {
        pub(crate) fn header(&self, name: &str) -> Option<&str> {
            self.head.lines().skip(1).find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
            })
        }

        pub(crate) fn request_line(&self) -> &str {
            self.head.lines().next().unwrap_or_default()
        }
    }

    fn read_request(stream: &mut TcpStream) -> Option<Seen> {
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        while !buf.ends_with(b"\r\n\r\n") {
            if stream.read(&mut byte).ok()? == 0 {
                return None;
            }
            buf.push(byte[0]);
        }
        let head = String::from_utf8(buf).ok()?;
        let mut seen = Seen { head, body: Vec::new() };
        let len: usize = seen.header("content-length").map_or(0, |v| v.parse().unwrap());
        seen.body = vec![0; len];
        stream.read_exact(&mut seen.body).ok()?;
        Some(seen)
    }

    /// A loopback server answering `n` connections, one request each, with `respond`; the
    /// requests come out of the receiver.
    pub(crate) fn serve(
        n: usize,
        respond: impl Fn(&Seen, SocketAddr) -> Vec<u8> + Send + 'static,
    ) -> (String, mpsc::Receiver<Seen>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for stream in listener.incoming().take(n) {
                let mut stream = stream.unwrap();
                let Some(seen) = read_request(&mut stream) else { continue };
                let out = respond(&seen, addr);
                // Before answering, so the client sees every request it got a reply to.
                let _ = tx.send(seen);
                let _ = stream.write_all(&out);
            }
        });
        (format!("http://{addr}"), rx)
    }

    pub(crate) fn response(status: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
        let mut out = format!("HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n", body.len());
        for (n, v) in headers {
            out.push_str(&format!("{n}: {v}\r\n"));
        }
        out.push_str("\r\n");
        out.push_str(body);
        out.into_bytes()
    }

    /// A server that accepts connections and never answers; it lives as long as the test.
    pub(crate) fn silent() -> (String, mpsc::Sender<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = mpsc::channel::<()>();
        thread::spawn(move || {
            let held = listener.accept();
            let _ = stopped.recv_timeout(Duration::from_secs(30));
            drop(held);
        });
        (format!("http://{addr}"), stop)
    }

    /// A fetcher allowed to reach the test servers on loopback (and nothing else).
    fn fetcher(limits: FetchLimits) -> Fetcher {
        let rules = ["http://127.0.0.1:*", "https://127.0.0.1:*"].map(|r| r.parse().unwrap()).to_vec();
        let policy = Arc::new(parking_lot::RwLock::new(EgressPolicy { rules, own_ports: vec![] }));
        Fetcher { limits, policy, proxy_from_env: false, agent: OnceLock::new() }
    }

    #[test]
    fn fetch_refuses_undeclared_destinations_and_redirects_to_them() {
        let f = fetcher(FetchLimits::default());
        let err = f.fetch("http://169.254.169.254/latest/meta-data/", Init::default(), None).unwrap_err();
        assert!(
            matches!(err, FetchError::Denied(ref m) if m.contains("not an allowed destination")),
            "{err}"
        );
        // An allowed server that redirects to the metadata address: the hop is refused.
        let (base, _seen) = serve(1, |_, _| {
            response("302 Found", &[("location", "http://169.254.169.254/latest/meta-data/")], "")
        });
        let err = f.fetch(&format!("{base}/go"), Init::default(), None).unwrap_err();
        assert!(
            matches!(err, FetchError::Denied(ref m) if m.starts_with("http://169.254.169.254/")),
            "{err}"
        );
    }

    #[test]
    fn fetch_never_connects_to_the_operators_own_ports() {
        let (base, _seen) = serve(1, |_, _| response("200 OK", &[], "metrics"));
        let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
        let f = fetcher(FetchLimits::default());
        f.policy.write().own_ports = vec![port];
        let err = f.fetch(&format!("{base}/metrics"), Init::default(), None).unwrap_err();
        assert!(
            matches!(err, FetchError::Denied(ref m) if m.contains("one of the operator's own ports")),
            "{err}"
        );
    }

    fn init(json: serde_json::Value) -> Init {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn fetch_get_sends_headers_and_returns_the_reply() {
        let (base, seen) = serve(1, |_, _| {
            response("200 OK", &[("x-reply", "a"), ("set-cookie", "p=1"), ("Set-Cookie", "q=2")], "hello ✓")
        });
        let f = fetcher(FetchLimits::default());
        let reply = f
            .fetch(
                &format!("{base}/path?q=1"),
                init(serde_json::json!({ "headers": { "X-Token": "t", "n": 7 } })),
                None,
            )
            .unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(reply.status_text, "OK");
        assert_eq!(reply.body, "hello ✓");
        assert_eq!(reply.headers["x-reply"], "a");
        assert_eq!(reply.headers["set-cookie"], "p=1, q=2");
        assert_eq!(reply.url, format!("{base}/path?q=1"));
        let req = seen.recv().unwrap();
        assert_eq!(req.request_line(), "GET /path?q=1 HTTP/1.1");
        assert_eq!(req.header("x-token"), Some("t"));
        assert_eq!(req.header("n"), Some("7"));
        assert!(req.header("user-agent").is_some_and(|u| u.starts_with("ctop/")));
    }

    #[test]
    fn fetch_post_sends_the_body() {
        let (base, seen) =
            serve(1, |req, _| response("201 Created", &[], &format!("got {}", req.body.len())));
        let f = fetcher(FetchLimits::default());
        let reply = f
            .fetch_json(
                &base,
                r#"{"method":"post","headers":{"content-type":"application/json","content-length":"999"},"body":"{\"a\":1}"}"#,
                None,
            );
        let reply: serde_json::Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(reply["status"], 201);
        assert_eq!(reply["statusText"], "Created");
        assert_eq!(reply["body"], "got 7");
        let req = seen.recv().unwrap();
        assert_eq!(req.request_line(), "POST / HTTP/1.1");
        assert_eq!(req.header("content-type"), Some("application/json"));
        assert_eq!(req.header("content-length"), Some("7"));
        assert_eq!(req.body, b"{\"a\":1}");
    }

    #[test]
    fn fetch_404_and_500_are_normal_replies() {
        let (base, _seen) = serve(2, |req, _| {
            if req.request_line().contains("/missing") {
                response("404 Not Found", &[], "nope")
            } else {
                response("500 Internal Server Error", &[], "")
            }
        });
        let f = fetcher(FetchLimits::default());
        let reply = f.fetch(&format!("{base}/missing"), Init::default(), None).unwrap();
        assert_eq!(
            (reply.status, reply.status_text.as_str(), reply.body.as_str()),
            (404, "Not Found", "nope")
        );
        let reply = f.fetch(&base, Init::default(), None).unwrap();
        assert_eq!(reply.status, 500);
    }

    #[test]
    fn fetch_response_over_the_limit_fails() {
        // One with a content-length, one that only ends when the connection closes.
        let (base, _seen) = serve(3, |req, _| {
            if req.request_line().contains("/streamed") {
                let mut out = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n".to_vec();
                out.extend(std::iter::repeat_n(b'x', 5000));
                out
            } else {
                response("200 OK", &[], &"x".repeat(2000))
            }
        });
        let f = fetcher(FetchLimits { max_response: 1000, ..FetchLimits::default() });
        let err = f.fetch(&base, Init::default(), None).unwrap_err();
        assert!(matches!(err, FetchError::ResponseTooLarge { limit: 1000 }), "{err:?}");
        assert!(err.to_string().contains("1000-byte limit"), "{err}");
        let err = f.fetch(&format!("{base}/streamed"), Init::default(), None).unwrap_err();
        assert!(matches!(err, FetchError::ResponseTooLarge { limit: 1000 }), "{err:?}");
        // Exactly at the limit is fine.
        let f = fetcher(FetchLimits { max_response: 2000, ..FetchLimits::default() });
        assert_eq!(f.fetch(&base, Init::default(), None).unwrap().body.len(), 2000);
    }

    #[test]
    fn fetch_request_over_the_limit_fails_before_sending() {
        let f = fetcher(FetchLimits { max_request: 10, ..FetchLimits::default() });
        let init = init(serde_json::json!({ "method": "PUT", "body": "x".repeat(11) }));
        let err = f.fetch("http://127.0.0.1:9/", init, None).unwrap_err();
        assert!(matches!(err, FetchError::RequestTooLarge { size: 11, limit: 10 }), "{err:?}");
    }

    #[test]
    fn fetch_times_out_on_a_silent_server() {
        let (base, _hold) = silent();
        let f = fetcher(FetchLimits::default());
        let started = Instant::now();
        let err = f.fetch(&base, init(serde_json::json!({ "timeout": "300ms" })), None).unwrap_err();
        let took = started.elapsed();
        assert!(matches!(err, FetchError::Timeout { by_deadline: false, .. }), "{err:?}");
        assert_eq!(err.to_string(), "timed out after 300ms");
        assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(3), "{took:?}");
        // The call's deadline cuts a longer timeout short.
        let started = Instant::now();
        let err = f.fetch(&base, Init::default(), Some(Duration::from_millis(200))).unwrap_err();
        assert!(matches!(err, FetchError::Timeout { by_deadline: true, .. }), "{err:?}");
        assert!(err.to_string().contains("deadline"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn fetch_follows_redirects() {
        let (base, seen) = serve(7, |req, addr| {
            let line = req.request_line().to_owned();
            if line.contains(" /start ") {
                response("302 Found", &[("location", "/hop/one")], "")
            } else if line.contains(" /hop/one ") {
                response("307 Temporary Redirect", &[("location", "../end?x=1")], "")
            } else if line.contains(" /post ") {
                response("307 Temporary Redirect", &[("location", &format!("http://{addr}/end"))], "")
            } else if line.contains(" /see-other ") {
                response("303 See Other", &[("location", "end")], "")
            } else {
                response("200 OK", &[], &format!("{} {}", line, String::from_utf8_lossy(&req.body)))
            }
        });
        let f = fetcher(FetchLimits::default());
        let reply = f.fetch(&format!("{base}/start"), Init::default(), None).unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body, "GET /end?x=1 HTTP/1.1 ");
        assert_eq!(reply.url, format!("{base}/end?x=1"));
        // 307 repeats the method and the body; 303 turns into a GET without body.
        let post = || {
            init(
                serde_json::json!({ "method": "POST", "body": "data", "headers": { "content-type": "text/plain" } }),
            )
        };
        let reply = f.fetch(&format!("{base}/post"), post(), None).unwrap();
        assert_eq!(reply.body, "POST /end HTTP/1.1 data");
        let reply = f.fetch(&format!("{base}/see-other"), post(), None).unwrap();
        assert_eq!(reply.body, "GET /end HTTP/1.1 ");
        let seen: Vec<Seen> = seen.try_iter().collect();
        let lines: Vec<&str> = seen.iter().map(Seen::request_line).collect();
        assert_eq!(
            lines,
            [
                "GET /start HTTP/1.1",
                "GET /hop/one HTTP/1.1",
                "GET /end?x=1 HTTP/1.1",
                "POST /post HTTP/1.1",
                "POST /end HTTP/1.1",
                "POST /see-other HTTP/1.1",
                "GET /end HTTP/1.1",
            ]
        );
        assert_eq!(seen[4].header("content-type"), Some("text/plain"));
        assert_eq!(seen[6].header("content-type"), None);
        assert_eq!(seen[6].header("content-length"), None);
    }

    #[test]
    fn fetch_stops_after_max_redirects() {
        let (base, seen) = serve(10, |_, _| response("302 Found", &[("location", "/again")], ""));
        let f = fetcher(FetchLimits { max_redirects: 3, ..FetchLimits::default() });
        let err = f.fetch(&base, Init::default(), None).unwrap_err();
        assert!(matches!(err, FetchError::TooManyRedirects(3)), "{err:?}");
        assert_eq!(seen.try_iter().count(), 4);
    }

    #[test]
    fn fetch_refuses_other_schemes_and_bad_urls() {
        let f = fetcher(FetchLimits::default());
        for url in ["ftp://example.com/x", "file:///etc/passwd", "javascript:alert(1)"] {
            let err = f.fetch(url, Init::default(), None).unwrap_err();
            assert!(matches!(err, FetchError::Scheme { .. }), "{url}: {err:?}");
            assert!(err.to_string().contains("only http and https"), "{err}");
        }
        for url in ["", "not a url", "/relative", "http://", "http://exa mple.com/", "https://ünï.example/"]
        {
            let err = f.fetch(url, Init::default(), None).unwrap_err();
            assert!(matches!(err, FetchError::BadUrl { .. }), "{url}: {err:?}");
        }
        // A redirect to another scheme is refused too.
        let (base, _seen) = serve(1, |_, _| response("302 Found", &[("location", "file:///etc/passwd")], ""));
        let err = f.fetch(&base, Init::default(), None).unwrap_err();
        assert!(
            matches!(err, FetchError::BadRedirect(ref m) if m.contains("only http and https")),
            "{err:?}"
        );
        // Bad init is an error reply, never a panic.
        for bad in [
            "nope",
            r#"{"method":"G T"}"#,
            r#"{"timeout":"soon"}"#,
            r#"{"timeout":"0"}"#,
            r#"{"headers":{"a b":"x"}}"#,
            r#"{"body":"x"}"#,
        ] {
            let reply: serde_json::Value =
                serde_json::from_str(&f.fetch_json("http://127.0.0.1:9/", bad, None)).unwrap();
            assert!(reply["error"].as_str().is_some_and(|e| e.starts_with("bad request")), "{bad}: {reply}");
        }
    }

    #[test]
    fn connection_refused_is_an_error_reply() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let f = fetcher(FetchLimits::default());
        let reply: serde_json::Value =
            serde_json::from_str(&f.fetch_json(&format!("http://127.0.0.1:{port}/"), "{}", None)).unwrap();
        assert!(reply["error"].as_str().is_some_and(|e| e.contains("connection failed")), "{reply}");
    }

    #[test]
    fn locations_resolve_against_the_base() {
        let base: Uri = "http://h:8080/a/b/c?q=1".parse().unwrap();
        let cases = [
            ("/x", "http://h:8080/x"),
            ("x", "http://h:8080/a/b/x"),
            ("../x?y=2", "http://h:8080/a/x?y=2"),
            ("./", "http://h:8080/a/b/"),
            ("../../../../x", "http://h:8080/x"),
            ("?z", "http://h:8080/a/b/c?z"),
            ("", "http://h:8080/a/b/c?q=1"),
            ("//other/p#frag", "http://other/p"),
            ("https://secure/", "https://secure/"),
        ];
        for (location, want) in cases {
            assert_eq!(resolve(&base, location).unwrap().to_string(), want, "{location}");
        }
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("5s"), Some(Duration::from_secs(5)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(parse_duration("1h2m3s4ms"), Some(Duration::from_millis(3_723_004)));
        assert_eq!(parse_duration("0"), None);
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("s"), None);
        assert_eq!(parse_timeout(&serde_json::json!(1.5)).unwrap(), Duration::from_millis(1500));
    }
}
