//! [`ReplayObserver`]: the [`Observer`] a replayed call reads its recorded answers from.
//!
//! - [`ReplayMode::Strict`] (the recorded script): the tape is served in order. A request
//!   that is not the next entry is a *divergence* (uncaptured nondeterminism or a fidelity
//!   bug, not a change); it is still answered as in keyed mode so that the call completes.
//!   [`ReplayObserver::finish`] makes entries left unread a divergence too.
//! - [`ReplayMode::Keyed`] (another version of the script, which may read other things in
//!   another order):
//!   - `get`: the first recorded `get` of the same kind, namespace and name; else an
//!     object of that name in a recorded `list` of the kind (a list that does not hold
//!     it answers "missing"); else *blind*: "missing" when the call observed the kind,
//!     "not observed" when it did not or never read it (the latter noted as blind).
//!   - `list`: the first recorded `list` of the kind; else, when the call read objects of
//!     the kind by name, those (blind: the list may have held more); else "not observed",
//!     noted as blind unless the call was told so.
//!   - `supply`: the recorded values of the same source, in order (the nth `Date` read gets
//!     the nth recorded `Date`; `randomString` of the same length, `fetch` of the same
//!     URL), the last one again once they run out. With none recorded: `now`, `Date` and
//!     `performance.timeOrigin` read the call's start (`at_ms`), `performance.now` 0; any
//!     other source is asked live, and noted as blind.
//!
//! [`ReplayObserver::blind_reads`] lists what the recording could not answer.

use std::collections::HashMap;
use std::sync::Arc;

use ctop_core::{Answer, Observer, Source};
use parking_lot::Mutex;

use crate::json::{Ident, join_array, split_array};
use crate::types::{CallRecord, TapeEntry, get_request, supply_request};

/// How a [`ReplayObserver`] serves the tape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayMode {
    /// In recorded order; anything else is a divergence.
    Strict,
    /// By key, in any order.
    Keyed,
}

/// An [`Observer`] that answers a replayed call from its recorded tape.
pub struct ReplayObserver {
    tape: Vec<TapeEntry>,
    at_ms: i64,
    mode: ReplayMode,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Strict: the next entry to serve.
    next: usize,
    divergence: Option<String>,
    blind: Vec<String>,
    /// Keyed: how many values of each (source, detail) were served.
    served: HashMap<(String, Option<String>), usize>,
}

/// What the tape says about a kind.
#[derive(PartialEq, Eq)]
enum Seen {
    /// Some read of it was answered.
    Observed,
    /// Reads of it were answered "not observed".
    Unobserved,
    /// The call never read it.
    Never,
}

impl ReplayObserver {
    /// An observer serving `record`'s tape.
    #[must_use]
    pub fn new(record: &CallRecord, mode: ReplayMode) -> Arc<Self> {
        Arc::new(Self {
            tape: record.tape.clone(),
            at_ms: record.at_ms,
            mode,
            state: Mutex::new(State::default()),
        })
    }

    /// Strict mode: the first request that did not match the next tape entry, or the
    /// entries left unread (after [`ReplayObserver::finish`]).
    pub fn divergence(&self) -> Option<String> {
        self.state.lock().divergence.clone()
    }

    /// The call is over: in strict mode, tape entries it did not read are a divergence.
    pub fn finish(&self) {
        if self.mode != ReplayMode::Strict {
            return;
        }
        let mut state = self.state.lock();
        if state.divergence.is_none()
            && let Some(next) = self.tape.get(state.next)
        {
            state.divergence = Some(format!(
                "the call ended after {} of {} recorded reads; the next was {}",
                state.next,
                self.tape.len(),
                next.request()
            ));
        }
    }

    /// Requests the recording could not answer (keyed mode, or strict after a divergence).
    pub fn blind_reads(&self) -> Vec<String> {
        self.state.lock().blind.clone()
    }

    /// Strict: the next entry if `matches` says it answers the request, advancing past it;
    /// else the divergence is noted and `None` returned.
    fn next_if<T>(
        &self,
        request: impl FnOnce() -> String,
        matches: impl FnOnce(&TapeEntry) -> Option<T>,
    ) -> Option<T> {
        let mut state = self.state.lock();
        if state.divergence.is_none() {
            let entry = self.tape.get(state.next);
            if let Some(answer) = entry.and_then(matches) {
                state.next += 1;
                return Some(answer);
            }
            let recorded = match entry {
                Some(e) => {
                    format!("has {} next (read {} of {})", e.request(), state.next + 1, self.tape.len())
                }
                None => format!("has no more reads (it has {})", self.tape.len()),
            };
            state.divergence = Some(format!("{}, where the recording {recorded}", request()));
        }
        None
    }

    fn blind(&self, note: String) {
        self.state.lock().blind.push(note);
    }

    fn seen(&self, kind: &str) -> Seen {
        let mut seen = Seen::Never;
        for e in &self.tape {
            match e {
                TapeEntry::List { kind: k, answer } if k == kind => {
                    if answer.is_some() {
                        return Seen::Observed;
                    }
                    seen = Seen::Unobserved;
                }
                TapeEntry::Get { kind: k, answer, .. } if k == kind => {
                    if answer.is_some() {
                        return Seen::Observed;
                    }
                    seen = Seen::Unobserved;
                }
                _ => {}
            }
        }
        seen
    }

    fn keyed_get(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Option<String>> {
        let recorded = self.tape.iter().find_map(|e| match e {
            TapeEntry::Get { kind: k, namespace: ns, name: n, answer }
                if k == kind && ns.as_deref() == namespace && n == name =>
            {
                Some(answer.clone())
            }
            _ => None,
        });
        if let Some(answer) = recorded {
            return answer;
        }
        let listed = self.tape.iter().find_map(|e| match e {
            TapeEntry::List { kind: k, answer: Some(text) } if k == kind => Some(text),
            _ => None,
        });
        if let Some(text) = listed {
            let items = split_array(text).unwrap_or_default();
            let found = items.into_iter().find(|item| Ident::of(item).is(namespace, name));
            return Some(found.map(str::to_owned));
        }
        let seen = self.seen(kind);
        if seen != Seen::Unobserved {
            self.blind(format!("{}: not in the recording", get_request(kind, namespace, name)));
        }
        (seen == Seen::Observed).then_some(None)
    }

    fn keyed_list(&self, kind: &str) -> Option<String> {
        let recorded = self.tape.iter().find_map(|e| match e {
            TapeEntry::List { kind: k, answer } if k == kind => Some(answer.clone()),
            _ => None,
        });
        if let Some(answer) = recorded {
            return answer;
        }
        match self.seen(kind) {
            Seen::Observed => {
                let mut items: Vec<&str> = Vec::new();
                for e in &self.tape {
                    if let TapeEntry::Get { kind: k, answer: Some(Some(text)), .. } = e
                        && k == kind
                        && !items.contains(&text.as_str())
                    {
                        items.push(text);
                    }
                }
                self.blind(format!("list {kind}: the recording holds only the objects read by name"));
                Some(join_array(&items))
            }
            Seen::Unobserved => None,
            Seen::Never => {
                self.blind(format!("list {kind}: not in the recording"));
                None
            }
        }
    }

    fn keyed_supply(&self, source: Source<'_>, live: &mut dyn FnMut() -> Answer) -> Answer {
        let (name, detail) = source_key(source);
        let recorded: Vec<&Answer> = self
            .tape
            .iter()
            .filter_map(|e| match e {
                TapeEntry::Supply { source: s, detail: d, answer, .. } if s == name && *d == detail => {
                    Some(answer)
                }
                _ => None,
            })
            .collect();
        let n = {
            let mut state = self.state.lock();
            let served = state.served.entry((name.to_owned(), detail.clone())).or_insert(0);
            *served += 1;
            *served - 1
        };
        if let Some(answer) = recorded.get(n).or(recorded.last()) {
            return (*answer).clone();
        }
        match source {
            #[allow(clippy::cast_precision_loss)] // milliseconds since 1970 are far below 2^53
            Source::Now | Source::Date | Source::PerformanceTimeOrigin => Answer::Number(self.at_ms as f64),
            Source::PerformanceNow => Answer::Number(0.0),
            Source::RandomString { .. } | Source::Fetch { .. } | Source::MathRandom => {
                self.blind(format!(
                    "{}: not in the recording, asked live",
                    supply_request(name, detail.as_deref())
                ));
                live()
            }
        }
    }
}

/// A source's name and the detail that tells its values apart (`randomString`'s length,
/// `fetch`'s URL).
fn source_key(source: Source<'_>) -> (&'static str, Option<String>) {
    let detail = match source {
        Source::RandomString { len } => Some(len.to_string()),
        Source::Fetch { url, .. } => Some(url.to_owned()),
        _ => None,
    };
    (source.name(), detail)
}

impl Observer for ReplayObserver {
    /// An attempt starts: serving starts again from the tape's beginning.
    fn runtime(&self, _serial: u64, _call: u64) {
        *self.state.lock() = State::default();
    }

    /// It answers from the tape, in memory.
    fn answers_from_memory(&self) -> bool {
        true
    }

    fn list(&self, kind: &str) -> Option<String> {
        if self.mode == ReplayMode::Strict {
            let answer = self.next_if(
                || format!("list {kind}"),
                |e| match e {
                    TapeEntry::List { kind: k, answer } if k == kind => Some(answer.clone()),
                    _ => None,
                },
            );
            if let Some(answer) = answer {
                return answer;
            }
        }
        self.keyed_list(kind)
    }

    fn get(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Option<String>> {
        if self.mode == ReplayMode::Strict {
            let answer = self.next_if(
                || get_request(kind, namespace, name),
                |e| match e {
                    TapeEntry::Get { kind: k, namespace: ns, name: n, answer }
                        if k == kind && ns.as_deref() == namespace && n == name =>
                    {
                        Some(answer.clone())
                    }
                    _ => None,
                },
            );
            if let Some(answer) = answer {
                return answer;
            }
        }
        self.keyed_get(kind, namespace, name)
    }

    fn supply(&self, source: Source<'_>, live: &mut dyn FnMut() -> Answer) -> Answer {
        if self.mode == ReplayMode::Strict {
            let (name, detail) = source_key(source);
            let answer = self.next_if(
                || supply_request(name, detail.as_deref()),
                |e| match e {
                    TapeEntry::Supply { source: s, detail: d, answer, .. } if s == name && *d == detail => {
                        Some(answer.clone())
                    }
                    _ => None,
                },
            );
            if let Some(answer) = answer {
                return answer;
            }
        }
        self.keyed_supply(source, live)
    }
}

#[cfg(test)]
#[path = "replay_tests.rs"]
mod tests;
