//! How much memory the operator's container requests and may use, from the pool and the
//! limits `ctop run` is given.
//!
//! `ctop run` holds one QuickJS runtime per concurrent call: `--concurrency` of them for
//! reconciles, and `--webhook-concurrency` more for admission and conversion when the
//! script has `validate`/`mutate` handlers or resources with several versions (the
//! manifests then generate the webhook and pass `--webhook-port`). A runtime's heap is capped at `--script-memory`; what a call returns
//! is copied out of it under `--max-output`. So the worst case, every runtime busy and at
//! its caps at once, is bounded, and the limit is that bound:
//!
//! ```text
//! per runtime = script memory + max output + slack
//! limit       = base + runtimes × per runtime
//! request     = base + 1 × per runtime
//! ```
//!
//! - **base = 64Mi**: the process without scripts (binary, async runtime, HTTP clients and
//!   servers, metrics), measured at about 20 MB idle, and the informer caches of the
//!   watched kinds, which grow with the cluster: the remaining ~44Mi is their headroom.
//!   A cluster with many large watched objects wants a larger limit (see below).
//! - **slack = 8Mi** per runtime: a call's transient copies that neither cap counts, the
//!   input object as JSON and a `fetch`'s request and response bodies (4 MiB each at most).
//! - **request**: the runtimes' heaps grow on demand, so an operator at rest uses little
//!   more than the base; the request reserves the base plus one busy runtime, and the limit
//!   allows the rest as burst.
//!
//! Both are rounded up to whole Mi. With the defaults (4 runtimes, 64Mi script memory,
//! 16Mi output): limit 64 + 4 × (64 + 16 + 8) = **416Mi**, request 64 + 88 = **152Mi**;
//! with webhooks, 8 runtimes: limit 64 + 8 × 88 = 768Mi.
//!
//! A memory request or limit set in [`ContainerResources`](crate::ContainerResources) wins
//! over the formula; when only one side is set, the other is kept on its side of it (the
//! request never above the limit).

use ctop_core::{ByteSize, OperatorSpec};

use crate::Error;
use crate::options::Options;

/// What the process needs besides its script runtimes (see the [module docs](self)).
pub const BASE_MEMORY: ByteSize = ByteSize::mib(64);
/// Transient copies of one call outside the runtime's caps: input JSON, fetch bodies.
pub const CALL_SLACK: ByteSize = ByteSize::mib(8);

const MIB: u64 = 1 << 20;

/// The container's memory and how it was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memory {
    /// Script runtimes `ctop run` will hold: reconciles, plus the webhook's when served.
    pub runtimes: u32,
    /// What one runtime may take: script memory + max output + [`CALL_SLACK`].
    pub per_runtime: ByteSize,
    /// `requests.memory`.
    pub request: ByteSize,
    /// `limits.memory`.
    pub limit: ByteSize,
}

/// The container's memory for `spec` run with `options`: the formula of the
/// [module docs](self), unless [`ContainerResources`](crate::ContainerResources) says
/// otherwise.
pub fn memory(spec: &OperatorSpec, options: &Options) -> Result<Memory, Error> {
    let mut runtimes = u32::from(options.concurrency);
    if crate::webhook::served(spec) {
        runtimes += u32::from(options.webhook_concurrency);
    }
    let overflow = || Error::MemoryOverflow { runtimes };
    let per_runtime = options
        .script_memory
        .as_u64()
        .checked_add(options.max_output.as_u64())
        .and_then(|n| n.checked_add(CALL_SLACK.as_u64()))
        .ok_or_else(overflow)?;
    let total = |count: u32| {
        per_runtime
            .checked_mul(u64::from(count))
            .and_then(|n| n.checked_add(BASE_MEMORY.as_u64()))
            .and_then(|n| n.div_ceil(MIB).checked_mul(MIB))
            .map(ByteSize::bytes)
            .ok_or_else(overflow)
    };
    let (request, limit) = match (options.resources.memory_request, options.resources.memory_limit) {
        (Some(request), Some(limit)) if request > limit => {
            return Err(Error::RequestAboveLimit { request, limit });
        }
        (Some(request), Some(limit)) => (request, limit),
        (Some(request), None) => (request, total(runtimes)?.max(request)),
        (None, Some(limit)) => (total(1)?.min(limit), limit),
        (None, None) => (total(1)?, total(runtimes)?),
    };
    Ok(Memory { runtimes, per_runtime: ByteSize::bytes(per_runtime), request, limit })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(handlers: &[&str]) -> OperatorSpec {
        serde_json::from_value(serde_json::json!({
            "resources": [],
            "controllers": [{
                "index": 0, "name": "c", "for": {"apiVersion": "v1", "kind": "ConfigMap"},
                "manages": [], "reads": [], "watches": [], "permissions": [], "handlers": handlers,
            }],
        }))
        .unwrap()
    }

    fn mib(n: u64) -> ByteSize {
        ByteSize::mib(n)
    }

    #[test]
    fn defaults_size_four_runtimes() {
        let m = memory(&spec(&["reconcile"]), &Options::new("op")).unwrap();
        assert_eq!(m, Memory { runtimes: 4, per_runtime: mib(88), request: mib(152), limit: mib(416) });
        assert_eq!((m.request.to_string(), m.limit.to_string()), ("152Mi".into(), "416Mi".into()));
    }

    #[test]
    fn webhooks_add_their_runtimes() {
        let mut o = Options::new("op");
        let m = memory(&spec(&["reconcile", "validate"]), &o).unwrap();
        assert_eq!((m.runtimes, m.request, m.limit), (8, mib(152), mib(64 + 8 * 88)));
        o.webhook_concurrency = 2;
        o.concurrency = 1;
        let m = memory(&spec(&["mutate"]), &o).unwrap();
        assert_eq!((m.runtimes, m.limit), (3, mib(64 + 3 * 88)));
        // Without handlers the webhook runtimes do not exist, whatever the option says.
        assert_eq!(memory(&spec(&["reconcile"]), &o).unwrap().limit, mib(64 + 88));
    }

    #[test]
    fn the_limits_follow_the_options_and_round_up_to_whole_mi() {
        let mut o = Options::new("op");
        o.concurrency = 2;
        o.script_memory = mib(128);
        o.max_output = ByteSize::bytes(1_000_000); // 0.95Mi
        let m = memory(&spec(&["reconcile"]), &o).unwrap();
        let per = (128 + 8) * MIB + 1_000_000;
        assert_eq!(m.per_runtime, ByteSize::bytes(per));
        assert_eq!(m.limit, ByteSize::bytes((64 * MIB + 2 * per).div_ceil(MIB) * MIB));
        assert_eq!(m.limit.to_string(), "338Mi");
        assert_eq!(m.request.to_string(), "201Mi");
    }

    #[test]
    fn an_explicit_value_wins_and_keeps_the_request_under_the_limit() {
        let s = spec(&["reconcile"]);
        let mut o = Options::new("op");
        o.resources.memory_limit = Some(mib(1024));
        o.resources.memory_request = Some(mib(100));
        let m = memory(&s, &o).unwrap();
        assert_eq!((m.request, m.limit), (mib(100), mib(1024)));

        o.resources.memory_request = None;
        o.resources.memory_limit = Some(mib(128));
        assert_eq!(memory(&s, &o).map(|m| (m.request, m.limit)).unwrap(), (mib(128), mib(128)));

        o.resources.memory_limit = None;
        o.resources.memory_request = Some(mib(512));
        assert_eq!(memory(&s, &o).map(|m| (m.request, m.limit)).unwrap(), (mib(512), mib(512)));
        o.resources.memory_request = Some(mib(100));
        assert_eq!(memory(&s, &o).map(|m| (m.request, m.limit)).unwrap(), (mib(100), mib(416)));

        o.resources.memory_limit = Some(mib(64));
        assert_eq!(
            memory(&s, &o).map_err(|e| e.to_string()),
            Err("the memory request 100Mi is above the memory limit 64Mi".into())
        );
    }

    #[test]
    fn absurd_sizes_are_refused_not_wrapped() {
        let mut o = Options::new("op");
        o.script_memory = ByteSize::bytes(u64::MAX / 2);
        assert!(matches!(memory(&spec(&["reconcile"]), &o), Err(Error::MemoryOverflow { runtimes: 4 })));
        o.script_memory = ByteSize::bytes(u64::MAX);
        assert!(matches!(memory(&spec(&["reconcile"]), &o), Err(Error::MemoryOverflow { .. })));
    }
}
