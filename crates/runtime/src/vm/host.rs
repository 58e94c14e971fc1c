//! The host functions a script's `globalThis.__ct_host` holds ([`HOST_FUNCTIONS`]; what they
//! do: the parent module's docs and `RUNTIME.md`): [`install_host`] builds the frozen object
//! once per runtime; each function bounds what it takes from the script. `now`, `randomString` and
//! `fetch` report to the call's [`super::Observer`] and take their value from its
//! [`super::Observer::supply`] (live: the clock, the OS generator, the request; see
//! `nondet.rs`), so a recorder sees and a replayer gives what the script gets.

use std::sync::Arc;

use ctop_core::Source;
use rand::TryRng;
use rand::rngs::SysRng;
use rquickjs::function::Opt;
use rquickjs::{Coerced, Ctx, Exception, Function, Object, Value};

use super::deadline::Deadline;
use super::env::describe;
use super::nondet::{Nondet, report, supply_number, supply_text};
use super::{HOST_GLOBAL, MAX_LOG_TEXT, MAX_RANDOM_STRING, ObserverSlot, SnapshotSlot};
use crate::fetch::Fetcher;

/// Every member of `globalThis.__ct_host`, in the order [`install_host`] sets them: the one
/// list of host function names (`maxChildren` is a number). Tests check that the installed
/// object has exactly these, and that the SDK uses every one and no other: it reads the
/// host in one way only, `host().name` (`sdk/src/host.js`).
#[cfg_attr(not(test), allow(dead_code, reason = "the list tests check the host and the SDK against"))]
pub const HOST_FUNCTIONS: &[&str] = &[
    "maxChildren",
    "tooManyChildren",
    "snap",
    "release",
    "randomString",
    "now",
    "observed",
    "log",
    "fetch",
    "decodeBase64",
    "health",
    "cronNext",
    "cronBetween",
];

pub(super) fn install_host<'js>(
    ctx: &Ctx<'js>,
    fetch: HostFetch,
    observer: ObserverSlot,
    snapshots: SnapshotSlot,
    options: &super::VmOptions,
) -> rquickjs::Result<()> {
    let limits = &options.limits;
    let host = Object::new(ctx.clone())?;
    // The SDK's apply()/patch() stop a runaway loop at the limit: `tooManyChildren` marks the
    // call failed (so catching the error changes nothing) and throws. The vm also counts the
    // output's children, in case the SDK's count was got around.
    host.set("maxChildren", limits.max_children as f64)?;
    let marker = Arc::clone(&snapshots);
    let limit = limits.max_children;
    let too_many = move |ctx: Ctx<'js>| -> rquickjs::Result<()> {
        // `try_lock`: a getter run by a copy in progress holds the store (never wait on it).
        if let Some(mut store) = marker.try_lock() {
            store.mark_too_many();
        }
        Err(Exception::throw_range(&ctx, &format!("more than {limit} children in one call")))
    };
    host.set("tooManyChildren", Function::new(ctx.clone(), too_many)?.with_name("tooManyChildren")?)?;
    let released = Arc::clone(&snapshots);
    let snap = move |ctx: Ctx<'js>, value: Value<'js>, namespace: Opt<Value<'js>>| {
        // A getter or toJSON that calls apply() while a copy is running finds the store taken.
        let Some(mut store) = snapshots.try_lock() else {
            return Err(Exception::throw_type(
                &ctx,
                "apply/patch cannot be called while an object is being copied",
            ));
        };
        let namespace = namespace.0.and_then(|n| n.as_string().and_then(|s| s.to_string().ok()));
        store.push(&ctx, &value, namespace)
    };
    host.set("snap", Function::new(ctx.clone(), snap)?.with_name("snap")?)?;
    let release = move |index: f64| {
        if let Some(mut store) = released.try_lock()
            && index >= 0.0
            && index.fract() == 0.0
        {
            // A whole, non-negative number: the index `snap` returned.
            store.release(index as usize);
        }
    };
    host.set("release", Function::new(ctx.clone(), release)?.with_name("release")?)?;
    // `now`, `randomString` and `fetch` tell the call's observer first, then take their value
    // from its `supply` (see `nondet.rs`).
    let slot = Arc::clone(&observer);
    let random = move |ctx: Ctx<'js>, n: f64| {
        report(&slot, Nondet::RandomString);
        let len = random_length(&ctx, n)?;
        let source = Source::RandomString { len };
        supply_text(&ctx, &slot, Nondet::RandomString, source, || random_string(&ctx, len))
    };
    host.set("randomString", Function::new(ctx.clone(), random)?.with_name("randomString")?)?;
    let slot = Arc::clone(&observer);
    let source = Arc::clone(&options.clock);
    let clock = move |ctx: Ctx<'js>| {
        report(&slot, Nondet::Now);
        supply_number(&ctx, &slot, Nondet::Now, Source::Now, || Ok(source.now_ms()))
    };
    host.set("now", Function::new(ctx.clone(), clock)?.with_name("now")?)?;
    let slot = Arc::clone(&observer);
    let fetch = move |ctx: Ctx<'js>, url: Coerced<String>, init: Opt<Coerced<String>>| {
        report(&slot, Nondet::Fetch);
        let init = init.0.map_or_else(|| "{}".to_owned(), |i| i.0);
        let source = Source::Fetch { url: &url.0, init: &init };
        supply_text(&ctx, &slot, Nondet::Fetch, source, || Ok(fetch.call(&url.0, &init)))
    };
    let observed = move |ctx: Ctx<'_>,
                         op: Coerced<String>,
                         kind: Coerced<String>,
                         ns: Opt<Coerced<String>>,
                         name: Opt<Coerced<String>>| {
        observed(&ctx, &observer, &op.0, &kind.0, ns.0.map(|n| n.0), name.0.map(|n| n.0))
    };
    host.set("observed", Function::new(ctx.clone(), observed)?.with_name("observed")?)?;
    host.set("log", Function::new(ctx.clone(), log)?.with_name("log")?)?;
    host.set("fetch", Function::new(ctx.clone(), fetch)?.with_name("fetch")?)?;
    host.set("decodeBase64", Function::new(ctx.clone(), decode_base64)?.with_name("decodeBase64")?)?;
    host.set("health", Function::new(ctx.clone(), health)?.with_name("health")?)?;
    crate::cron::install(ctx, &host)?;
    ctx.globals().set(HOST_GLOBAL, host)?;
    // A script must not replace the host functions (e.g. lift `maxChildren`).
    ctx.eval::<(), _>(format!(
        "Object.freeze(globalThis.{HOST_GLOBAL}); \
         Object.defineProperty(globalThis, \"{HOST_GLOBAL}\", {{ writable: false, configurable: false }});"
    ))
}

/// `__ct_host.observed(op, kind, namespace, name)`: `op` is `list` or `get` (see the
/// module docs); an empty namespace means none. A missing object is the JSON text `null`.
fn observed(
    ctx: &Ctx<'_>,
    slot: &ObserverSlot,
    op: &str,
    kind: &str,
    namespace: Option<String>,
    name: Option<String>,
) -> rquickjs::Result<Option<String>> {
    let Some(observer) = slot.lock().observer().cloned() else {
        return Ok(None);
    };
    match op {
        "list" => Ok(observer.list(kind)),
        "get" => {
            let namespace = namespace.filter(|n| !n.is_empty());
            Ok(observer
                .get(kind, namespace.as_deref(), name.as_deref().unwrap_or_default())
                .map(|found| found.unwrap_or_else(|| "null".to_owned())))
        }
        _ => Err(Exception::throw_type(ctx, &format!("observed: unknown operation {op:?}"))),
    }
}

/// The length `__ct_host.randomString(n)` asks for: a `RangeError` unless `n` is a whole
/// number from 0 to [`MAX_RANDOM_STRING`].
fn random_length(ctx: &Ctx<'_>, n: f64) -> rquickjs::Result<usize> {
    if !(n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= MAX_RANDOM_STRING as f64) {
        return Err(Exception::throw_range(
            ctx,
            &format!("randomString: length must be an integer from 0 to {MAX_RANDOM_STRING}"),
        ));
    }
    // `n` was checked to be a whole number in 0..=MAX_RANDOM_STRING.
    Ok(n as usize)
}

/// `__ct_host.randomString(n)`, live: `len` characters of [a-zA-Z0-9] from the OS generator.
fn random_string(ctx: &Ctx<'_>, len: usize) -> rquickjs::Result<String> {
    const ALPHABET: &[u8; 62] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::with_capacity(len);
    let mut buf = [0u8; 256];
    while out.len() < len {
        SysRng.try_fill_bytes(&mut buf).map_err(|e| {
            Exception::throw_internal(ctx, &format!("randomString: OS randomness failed: {e}"))
        })?;
        // 248 = 4 * 62: rejecting larger bytes keeps every character equally likely.
        for &b in buf.iter().filter(|&&b| b < 248) {
            if out.len() == len {
                break;
            }
            out.push(char::from(ALPHABET[usize::from(b % 62)]));
        }
    }
    Ok(out)
}

/// `__ct_host.log(level, message, fieldsJson)`: one `tracing` event, target `ctop::script`.
fn log<'js>(
    ctx: Ctx<'js>,
    level: Coerced<String>,
    message: Coerced<String>,
    fields: Opt<Value<'js>>,
) -> rquickjs::Result<()> {
    let message = clip(message.0);
    let fields = match fields.0 {
        None => String::new(),
        Some(v) if v.is_undefined() || v.is_null() => String::new(),
        Some(v) => match v.as_string() {
            Some(s) => s.to_string()?,
            None => describe(&ctx, &v),
        },
    };
    let fields = clip(fields);
    match level.0.as_str() {
        "debug" => tracing::debug!(target: "ctop::script", fields = %fields, "{message}"),
        "warn" => tracing::warn!(target: "ctop::script", fields = %fields, "{message}"),
        "error" => tracing::error!(target: "ctop::script", fields = %fields, "{message}"),
        _ => tracing::info!(target: "ctop::script", fields = %fields, "{message}"),
    }
    Ok(())
}

fn clip(mut text: String) -> String {
    if text.len() > MAX_LOG_TEXT {
        text.truncate(text.floor_char_boundary(MAX_LOG_TEXT));
        text.push('…');
    }
    text
}

/// `__ct_host.decodeBase64(text)`: standard base64 (as the API server encodes a Secret's
/// `data`) decoded to UTF-8 text; a `TypeError` if it is not base64 or not UTF-8.
fn decode_base64(ctx: Ctx<'_>, text: Coerced<String>) -> rquickjs::Result<String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.0.as_bytes())
        .map_err(|e| Exception::throw_type(&ctx, &format!("not base64: {e}")))?;
    String::from_utf8(bytes).map_err(|_| {
        Exception::throw_type(
            &ctx,
            "the decoded bytes are not UTF-8 text; read the base64 `data` field instead",
        )
    })
}

/// Longest JSON text `__ct_host.health` reads: twice the 3 MiB body the API server accepts
/// in one request, so any object it can store fits, while a script's runaway value cannot
/// make the host parse (and hold) many times the runtime's own memory limit.
const MAX_HEALTH_JSON: usize = 6 << 20;

/// `__ct_host.health(objectJson)`: the object's health by kstatus' rules (`ctop-health`,
/// the rules of the controller's `Ready` condition), as `{status, reason, message}`; the
/// text `null` is `NotFound`. The SDK sends `JSON.stringify` of the script's value, so a
/// `TypeError` (not JSON) or `RangeError` (too long) reaches only a caller going around it.
fn health<'js>(ctx: Ctx<'js>, object: Coerced<String>) -> rquickjs::Result<Object<'js>> {
    let text = object.0;
    if text.len() > MAX_HEALTH_JSON {
        return Err(Exception::throw_range(
            &ctx,
            &format!(
                "health(obj): the object's JSON is {} bytes, more than the {MAX_HEALTH_JSON} read",
                text.len()
            ),
        ));
    }
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Exception::throw_type(&ctx, &format!("health(obj): not a JSON object: {e}")))?;
    let verdict = ctop_health::health(&value);
    let out = Object::new(ctx)?;
    out.set("status", verdict.status.as_str())?;
    out.set("reason", verdict.reason)?;
    out.set("message", verdict.message)?;
    Ok(out)
}

/// `__ct_host.fetch(url, initJson)`: what the host function needs.
pub(super) struct HostFetch {
    pub(super) fetcher: Arc<Fetcher>,
    pub(super) deadline: Arc<Deadline>,
}

impl HostFetch {
    /// Runs the request (`init`: its options as JSON text) within what is left of the
    /// deadline and returns the reply JSON.
    fn call(&self, url: &str, init: &str) -> String {
        let cap = self.deadline.remaining();
        let reply = if cap.is_some_and(|left| left.is_zero()) {
            "{\"error\":\"the script call's deadline has passed\"}".to_owned()
        } else {
            self.fetcher.fetch_json(url, init, cap)
        };
        // The interrupt handler could not run during the request: if the deadline passed,
        // mark it so the call fails with a timeout even if the script returns right away.
        self.deadline.expired();
        reply
    }
}
