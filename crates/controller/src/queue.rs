//! The work queue of one controller, in the style of client-go's workqueue (and
//! controller-runtime's priority queue on top of it): [`WorkQueue`].
//!
//! - One entry per object: an object queued twice is queued once (the *dirty* set); one
//!   being reconciled is not handed to a second worker, and a trigger that arrives
//!   meanwhile queues it again once the worker is [`done`](WorkQueue::done) (the
//!   *processing* set).
//! - FIFO within two priorities: real changes (an object's or a child's edit, a `.watches()`
//!   event, a script replacement) go ahead of background work (the initial list, periodic
//!   resyncs, requeue timers, retries), so a backlog of resyncs never delays an edit, and
//!   no object waits behind the others forever.
//! - Each object has at most one timer ([`schedule`](WorkQueue::schedule)): the outcome of
//!   its last reconcile (`requeue(d)`, `every`, a backoff) replaces the one before.
//!
//! kube-runtime's scheduler, which this replaces, releases held objects in hash order: at
//! 10,000 objects with a short period some waited several periods while others ran.
//! The `workqueue_*` metrics are kept here, named after the controller.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use foldhash::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::health::Metrics;

/// Which line of the queue an object waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Priority {
    /// A real change: served first.
    Change,
    /// The initial list, a resync, a requeue timer, a retry.
    Background,
}

/// What a reconcile asks for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Nothing until the object (or a child, or a watched object) changes.
    AwaitChange,
    /// Run again after this long (requeue, period, backoff).
    After(Duration),
}

/// The work queue of one controller (see the module docs). Keys are `namespace/name`.
pub(crate) struct WorkQueue {
    name: String,
    metrics: Option<Metrics>,
    state: Mutex<State>,
    /// Wakes workers waiting for an item.
    ready: Notify,
    /// Wakes the timer task when an earlier timer is set.
    timers: Notify,
    /// Wakes those waiting for a worker to finish (see [`WorkQueue::wait_idle`]).
    idle: Notify,
}

#[derive(Default)]
struct State {
    changes: VecDeque<String>,
    background: VecDeque<String>,
    /// Objects queued (in one of the lines, or waiting for their worker to finish), with
    /// when and at which priority.
    dirty: HashMap<String, (Instant, Priority)>,
    processing: HashMap<String, ()>,
    /// The timer of each object, and the heap that orders them (entries whose time is not
    /// the object's current timer are stale and skipped).
    timer_of: HashMap<String, Instant>,
    heap: BinaryHeap<Reverse<(Instant, String)>>,
    shut_down: bool,
}

impl State {
    fn depth(&self) -> usize {
        self.changes.len() + self.background.len()
    }
}

impl WorkQueue {
    /// An empty queue named `name` (the `name` label of its metrics, when given).
    pub(crate) fn new(name: String, metrics: Option<Metrics>) -> Arc<Self> {
        Arc::new(Self {
            name,
            metrics,
            state: Mutex::default(),
            ready: Notify::new(),
            timers: Notify::new(),
            idle: Notify::new(),
        })
    }

    /// Queue `key` now. A key already waiting stays where it is, except that a change moves
    /// a background entry to the change line; a key being processed is queued again when
    /// its worker is done.
    pub(crate) fn add(&self, key: String, priority: Priority) {
        let depth = {
            let mut st = self.state.lock();
            if st.shut_down {
                return;
            }
            match st.dirty.get_mut(&key) {
                Some((_, p)) => {
                    if *p == Priority::Background && priority == Priority::Change {
                        *p = Priority::Change;
                        if let Some(i) = st.background.iter().position(|k| *k == key) {
                            st.background.remove(i);
                            st.changes.push_back(key);
                        }
                    }
                    return;
                }
                None => {
                    st.dirty.insert(key.clone(), (Instant::now(), priority));
                    if !st.processing.contains_key(&key) {
                        match priority {
                            Priority::Change => st.changes.push_back(key),
                            Priority::Background => st.background.push_back(key),
                        }
                    }
                }
            }
            st.depth()
        };
        if let Some(m) = &self.metrics {
            m.queue_add(&self.name);
            m.set_queue_depth(&self.name, depth);
        }
        self.ready.notify_one();
    }

    /// Queue `key` (in the background line) at `at`, replacing its timer; `None` cancels it.
    pub(crate) fn schedule(&self, key: &str, at: Option<Instant>) {
        let earliest = {
            let mut st = self.state.lock();
            match at {
                None => {
                    st.timer_of.remove(key);
                    return;
                }
                Some(at) => {
                    st.timer_of.insert(key.to_owned(), at);
                    st.heap.push(Reverse((at, key.to_owned())));
                    st.heap.peek().is_some_and(|Reverse((first, _))| *first == at)
                }
            }
        };
        if earliest {
            self.timers.notify_one();
        }
    }

    /// The next key to work on, changes first, each line in order; waits for one. `None`
    /// once the queue is shut down.
    pub(crate) async fn get(&self) -> Option<String> {
        loop {
            let ready = self.ready.notified();
            {
                let mut st = self.state.lock();
                if st.shut_down {
                    return None;
                }
                let key = match st.changes.pop_front() {
                    Some(k) => Some(k),
                    None => st.background.pop_front(),
                };
                if let Some(key) = key {
                    let waited = st.dirty.remove(&key).map(|(at, _)| at.elapsed());
                    st.processing.insert(key.clone(), ());
                    let depth = st.depth();
                    drop(st);
                    if let Some(m) = &self.metrics {
                        if let Some(w) = waited {
                            m.observe_queue_duration(&self.name, w);
                        }
                        m.set_queue_depth(&self.name, depth);
                    }
                    return Some(key);
                }
            }
            ready.await;
        }
    }

    /// The worker is done with `key`: if it was queued again meanwhile, it goes back in line.
    pub(crate) fn done(&self, key: &str) {
        let requeued = {
            let mut st = self.state.lock();
            st.processing.remove(key);
            self.idle.notify_waiters();
            match st.dirty.get(key).map(|(_, p)| *p) {
                Some(Priority::Change) => st.changes.push_back(key.to_owned()),
                Some(Priority::Background) => st.background.push_back(key.to_owned()),
                None => return,
            }
            st.depth()
        };
        if let Some(m) = &self.metrics {
            m.set_queue_depth(&self.name, requeued);
        }
        self.ready.notify_one();
    }

    /// Forget `key`, whose object is gone: its timer is cancelled. If it waits in line, a
    /// worker takes it and finds nothing to do (cheaper than searching the lines here).
    pub(crate) fn forget(&self, key: &str) {
        self.state.lock().timer_of.remove(key);
    }

    /// Wait until no worker is on `key` (a sharded member handing an object over waits for
    /// the reconcile in flight; see `shard::drain`).
    pub(crate) async fn wait_idle(&self, key: &str) {
        loop {
            let idle = self.idle.notified();
            let mut idle = std::pin::pin!(idle);
            idle.as_mut().enable();
            if !self.state.lock().processing.contains_key(key) {
                return;
            }
            idle.await;
        }
    }

    /// Stop handing out keys: waiting and future [`get`](Self::get)s return `None`.
    pub(crate) fn shut_down(&self) {
        self.state.lock().shut_down = true;
        self.ready.notify_waiters();
        self.timers.notify_one();
    }

    /// Move due timers into the queue, forever (until shutdown). Run it in a task.
    pub(crate) async fn run_timers(self: Arc<Self>) {
        loop {
            let wake = self.timers.notified();
            let next = {
                let mut st = self.state.lock();
                if st.shut_down {
                    return;
                }
                let now = Instant::now();
                let mut due = Vec::new();
                while let Some(Reverse((at, _))) = st.heap.peek() {
                    if *at > now {
                        break;
                    }
                    let Some(Reverse((at, key))) = st.heap.pop() else { break };
                    // A stale entry: the key's timer was replaced or cancelled.
                    if st.timer_of.get(&key) == Some(&at) {
                        st.timer_of.remove(&key);
                        due.push(key);
                    }
                }
                // Stale entries pile up when timers are replaced faster than they fire;
                // rebuild the heap from the live timers when they dominate it.
                if st.heap.len() > 64 && st.heap.len() > 4 * st.timer_of.len() {
                    let live: Vec<_> = st.timer_of.iter().map(|(k, at)| Reverse((*at, k.clone()))).collect();
                    st.heap = live.into();
                }
                let next = st.heap.peek().map(|Reverse((at, _))| *at);
                drop(st);
                for key in due {
                    self.add(key, Priority::Background);
                }
                next
            };
            match next {
                Some(at) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = wake => {}
                    }
                }
                None => wake.await,
            }
        }
    }

    /// Keys waiting (not counting those being processed).
    #[cfg(test)]
    fn depth(&self) -> usize {
        self.state.lock().depth()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn next(q: &WorkQueue) -> String {
        tokio::time::timeout(Duration::from_secs(60), q.get()).await.ok().flatten().unwrap_or_default()
    }

    #[tokio::test]
    async fn one_entry_per_object_in_fifo_order() {
        let q = WorkQueue::new("t".into(), None);
        for k in ["a", "b", "a", "c", "b"] {
            q.add(k.into(), Priority::Background);
        }
        assert_eq!(q.depth(), 3);
        assert_eq!([next(&q).await, next(&q).await, next(&q).await], ["a", "b", "c"]);
        assert_eq!(q.depth(), 0);
    }

    #[tokio::test]
    async fn changes_go_ahead_of_background_work() {
        let q = WorkQueue::new("t".into(), None);
        q.add("resync-1".into(), Priority::Background);
        q.add("resync-2".into(), Priority::Background);
        q.add("edit".into(), Priority::Change);
        // A change to an object already waiting in the background line moves it up.
        q.add("resync-2".into(), Priority::Change);
        assert_eq!([next(&q).await, next(&q).await, next(&q).await], ["edit", "resync-2", "resync-1"]);
    }

    #[tokio::test]
    async fn an_object_is_never_handed_to_two_workers() {
        let q = WorkQueue::new("t".into(), None);
        q.add("a".into(), Priority::Change);
        assert_eq!(next(&q).await, "a");
        // Changed while being reconciled: held back until the worker is done.
        q.add("a".into(), Priority::Change);
        q.add("b".into(), Priority::Background);
        assert_eq!(next(&q).await, "b");
        assert_eq!(q.depth(), 0);
        q.done("a");
        assert_eq!(next(&q).await, "a");
        q.done("a");
        q.done("b");
        assert_eq!(q.depth(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn each_object_has_one_timer_and_the_last_one_counts() {
        let q = WorkQueue::new("t".into(), None);
        tokio::spawn(q.clone().run_timers());
        let now = Instant::now();
        q.schedule("a", Some(now + Duration::from_secs(10)));
        q.schedule("b", Some(now + Duration::from_secs(5)));
        // `a` reconciled again meanwhile: its timer is replaced by the later one.
        q.schedule("a", Some(now + Duration::from_secs(20)));
        q.schedule("c", Some(now + Duration::from_secs(1)));
        q.schedule("c", None);
        assert_eq!(next(&q).await, "b");
        assert!(Instant::now() >= now + Duration::from_secs(5));
        assert_eq!(next(&q).await, "a");
        assert!(Instant::now() >= now + Duration::from_secs(20), "the replaced timer did not fire");
        assert_eq!(q.depth(), 0);
    }

    #[tokio::test]
    async fn shutdown_releases_waiting_workers() {
        let q = WorkQueue::new("t".into(), None);
        let waiting = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        };
        tokio::task::yield_now().await;
        q.shut_down();
        assert_eq!(waiting.await.ok().flatten(), None);
    }
}
