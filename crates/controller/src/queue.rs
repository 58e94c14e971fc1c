//! The `workqueue_*` figures of one controller.

use std::collections::HashMap;
use std::time::Instant;

use parking_lot::Mutex;

use crate::health::Metrics;

/// The `workqueue_*` figures of one controller, observed around kube-runtime's scheduler
/// (which does not expose its queue): an object is queued when a trigger names it (its own
/// change, an owned child's, a `.watches()` mapping) and leaves the queue when a reconcile
/// of it starts; like the workqueue, an object queued twice is counted once. Requeues
/// scheduled by a result (`requeue`, `every`, backoff) are counted as retries only on error.
pub(crate) struct QueueStats {
    name: String,
    metrics: Metrics,
    pending: Mutex<HashMap<String, Instant>>,
}

impl QueueStats {
    /// The figures of the queue `name`.
    pub(crate) fn new(name: String, metrics: Metrics) -> Self {
        Self { name, metrics, pending: Mutex::default() }
    }

    pub(crate) fn add(&self, key: String) {
        let depth = {
            let mut p = self.pending.lock();
            if p.contains_key(&key) {
                return;
            }
            p.insert(key, Instant::now());
            p.len()
        };
        self.metrics.queue_add(&self.name);
        self.metrics.set_queue_depth(&self.name, depth);
    }

    pub(crate) fn started(&self, key: &str) {
        let (waited, depth) = {
            let mut p = self.pending.lock();
            (p.remove(key), p.len())
        };
        if let Some(at) = waited {
            self.metrics.observe_queue_duration(&self.name, at.elapsed());
            self.metrics.set_queue_depth(&self.name, depth);
        }
    }
}
