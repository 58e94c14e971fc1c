//! The connection slots, and which connection gives its slot up when they are all taken.
//!
//! Deadlines alone do not keep a server available: 1,024 clients that each take ten seconds
//! to send nothing useful hold every slot for those ten seconds, then reconnect. So a full
//! table makes room for a new client by *shedding* a connection that has not earned its slot:
//!
//! 1. Only connections without a request being handled are candidates (`Busy` ones never
//!    are), and only those past [`ConnectionLimits::shed_grace`]: a client just let in gets
//!    that long to finish its handshake and send its request, however many clients follow.
//! 2. While any *pending* connection exists (one that has not yet sent a whole request: in
//!    its TLS handshake, its head or its body), only pending ones are candidates, the one
//!    opened longest ago first. Pending connections from a client address that holds more
//!    than [`ConnectionLimits::pending_per_client`] of them go before all others, so one
//!    slow client cannot push out the new connections of another.
//! 3. Otherwise settled connections (which have sent a request) that are idle or reading a
//!    later request are candidates, the one whose current wait started longest ago first.
//! 4. At most [`ConnectionLimits::shed_rate`] connections are shed a second (a token bucket
//!    holding one second's worth).
//! 5. With no candidate or no token yet the new client waits in the kernel's backlog until
//!    a connection closes, one becomes a candidate, a grace runs out or a token comes.
//!
//! Slow clients that reconnect as soon as they are shed come back as new clients and are
//! shed in turn: without the rate every slow connection would be replaced once per grace,
//! each time with a TLS handshake (a signature with the serving key, about a millisecond
//! with RSA-2048), and that churn alone can use up the CPU. With it, an API server whose
//! keep-alive connection is open is not touched while pending connections exist, and one
//! that opens a new connection waits behind the slow clients already in the backlog, let in
//! at `shed_rate` a second. Clients behind one address (every test on loopback) are told
//! apart only by these rules; the per-address quota adds fairness between addresses.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

use crate::conn::{ConnectionLimits, Phase, State, Track};

/// The open connections (TLS handshakes included).
#[derive(Debug)]
pub(crate) struct Slots {
    limits: ConnectionLimits,
    /// Told when a connection closes or may have become a candidate for shedding.
    changed: Arc<Notify>,
    table: Mutex<Table>,
}

#[derive(Debug)]
struct Table {
    next_id: u64,
    open: HashMap<u64, Entry>,
    /// Shed tokens, as of `refilled`.
    tokens: f64,
    refilled: Instant,
    /// Connections shed since the last warning, and when it was.
    shed_since_warning: u64,
    warned_at: Option<Instant>,
}

#[derive(Debug)]
struct Entry {
    client: IpAddr,
    track: Arc<Track>,
    /// Dropped (with the entry) to shed the connection.
    _shed: oneshot::Sender<()>,
}

/// A taken slot, given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    id: u64,
    slots: Arc<Slots>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.slots.table().open.remove(&self.id);
        self.slots.changed.notify_one();
    }
}

/// A connection let in: its slot, its phase, and what resolves when it is shed.
#[derive(Debug)]
pub(crate) struct Admitted {
    pub(crate) slot: Slot,
    pub(crate) track: Arc<Track>,
    pub(crate) shed: oneshot::Receiver<()>,
}

/// Whether a new connection can be let in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Room {
    /// A slot is free.
    Free,
    /// The connection with this id is to be shed.
    Shed(u64),
    /// No candidate before this instant (a grace runs out then).
    At(Instant),
    /// Every connection is busy: only a change can make room.
    Busy,
}

/// How long to wait before warning again that connections are being shed.
const WARN_EVERY: Duration = Duration::from_secs(10);

impl Slots {
    pub(crate) fn new(limits: ConnectionLimits) -> Arc<Self> {
        let table = Table {
            next_id: 0,
            open: HashMap::new(),
            tokens: f64::from(limits.shed_rate),
            refilled: Instant::now(),
            shed_since_warning: 0,
            warned_at: None,
        };
        Arc::new(Self { limits, changed: Arc::new(Notify::new()), table: Mutex::new(table) })
    }

    /// The shed tokens at `now`, and when the next whole one comes if there is none.
    fn tokens(&self, table: &Table, now: Instant) -> (f64, Option<Instant>) {
        let rate = f64::from(self.limits.shed_rate);
        let tokens =
            (table.tokens + now.saturating_duration_since(table.refilled).as_secs_f64() * rate).min(rate);
        if tokens >= 1.0 || rate == 0.0 {
            return (tokens, None);
        }
        (tokens, Some(now + Duration::from_secs_f64((1.0 - tokens) / rate)))
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn room_in(&self, table: &Table, now: Instant) -> Room {
        if table.open.len() < self.limits.max_connections.max(1) {
            return Room::Free;
        }
        if self.limits.shed_rate == 0 {
            return Room::Busy;
        }
        if let (_, Some(next)) = self.tokens(table, now) {
            return Room::At(next);
        }
        choose(table.open.iter().map(|(id, e)| (*id, e.client, e.track.get())), &self.limits, now)
    }

    /// Take a slot for a connection from `client`, shedding another if the table is full;
    /// what to wait for when no slot can be had yet.
    pub(crate) fn admit(self: &Arc<Self>, client: IpAddr, now: Instant) -> Result<Admitted, Room> {
        let client = client.to_canonical();
        let mut table = self.table();
        match self.room_in(&table, now) {
            Room::Free => {}
            Room::Shed(id) => {
                let (tokens, _) = self.tokens(&table, now);
                table.tokens = tokens - 1.0;
                table.refilled = now;
                if let Some(shed) = table.open.remove(&id) {
                    let state = shed.track.get();
                    tracing::debug!(client = %shed.client, phase = state.phase.as_str(), settled = state.settled,
                        age_ms = u64::try_from(now.duration_since(state.opened).as_millis()).unwrap_or(u64::MAX),
                        "all connection slots taken: shedding a connection to admit a new one");
                    table.shed_since_warning += 1;
                    if table.warned_at.is_none_or(|at| now.duration_since(at) >= WARN_EVERY) {
                        tracing::warn!(
                            max_connections = self.limits.max_connections,
                            shed = table.shed_since_warning,
                            "all connection slots taken: shedding connections that have not sent a request in time"
                        );
                        table.warned_at = Some(now);
                        table.shed_since_warning = 0;
                    }
                }
            }
            wait @ (Room::At(_) | Room::Busy) => return Err(wait),
        }
        let id = table.next_id;
        table.next_id += 1;
        let track = Arc::new(Track::new(now, self.changed.clone()));
        let (tx, rx) = oneshot::channel();
        table.open.insert(id, Entry { client, track: track.clone(), _shed: tx });
        Ok(Admitted { slot: Slot { id, slots: self.clone() }, track, shed: rx })
    }

    /// Wait until [`admit`](Self::admit) can let a connection in.
    pub(crate) async fn wait_for_room(&self) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let room = self.room_in(&self.table(), Instant::now());
            match room {
                Room::Free | Room::Shed(_) => return,
                Room::At(at) => {
                    tokio::select! {
                        () = changed => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                Room::Busy => changed.await,
            }
        }
    }

    /// [`admit`](Self::admit), waiting for room as long as it takes.
    pub(crate) async fn admit_when_possible(self: &Arc<Self>, client: IpAddr) -> Admitted {
        loop {
            match self.admit(client, Instant::now()) {
                Ok(admitted) => return admitted,
                Err(_) => self.wait_for_room().await,
            }
        }
    }
}

/// The shedding policy of the module docs over a full table of `(id, client, state)`.
fn choose(open: impl Iterator<Item = (u64, IpAddr, State)>, limits: &ConnectionLimits, now: Instant) -> Room {
    let open: Vec<_> = open.collect();
    let mut pending: HashMap<IpAddr, usize> = HashMap::new();
    for (_, client, state) in &open {
        if !state.settled {
            *pending.entry(*client).or_default() += 1;
        }
    }
    let any_pending = !pending.is_empty();
    let mut best: Option<((u8, Instant, u64), u64)> = None;
    let mut earliest: Option<Instant> = None;
    for (id, client, state) in &open {
        let (class, from) = match (any_pending, state.settled, state.phase) {
            (_, _, Phase::Busy) | (true, true, _) => continue,
            (true, false, _) => {
                let crowded = pending.get(client).copied().unwrap_or(0) > limits.pending_per_client;
                (u8::from(!crowded), state.opened)
            }
            (false, _, _) => (2, state.since),
        };
        let eligible = from + limits.shed_grace;
        if eligible > now {
            earliest = Some(earliest.map_or(eligible, |e| e.min(eligible)));
            continue;
        }
        let key = (class, from, *id);
        if best.is_none_or(|(b, _)| key < b) {
            best = Some((key, *id));
        }
    }
    match (best, earliest) {
        (Some((_, id)), _) => Room::Shed(id),
        (None, Some(at)) => Room::At(at),
        (None, None) => Room::Busy,
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

    fn state(phase: Phase, opened: Instant, since: Instant, settled: bool) -> State {
        State { phase, since, opened, settled }
    }

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            shed_grace: Duration::from_secs(1),
            pending_per_client: 2,
            ..ConnectionLimits::default()
        }
    }

    #[tokio::test]
    async fn shedding_is_rate_limited() {
        let limits = ConnectionLimits {
            max_connections: 2,
            shed_grace: Duration::ZERO,
            shed_rate: 2,
            ..ConnectionLimits::default()
        };
        let slots = Slots::new(limits);
        let now = Instant::now();
        let mut held = Vec::new();
        for _ in 0..2 {
            held.push(slots.admit(A, now).unwrap());
        }
        // Two tokens: two connections shed, the oldest first.
        for oldest in 0..2 {
            held.push(slots.admit(A, now).unwrap());
            let shed = held[oldest].shed.try_recv();
            assert!(
                matches!(shed, Err(oneshot::error::TryRecvError::Closed)),
                "connection {oldest} was not shed"
            );
        }
        let Err(Room::At(next)) = slots.admit(A, now) else { panic!("a third connection was shed at once") };
        assert_eq!(next, now + Duration::from_millis(500));
        held.push(slots.admit(A, next).unwrap());
        // Never more than max_connections.
        assert_eq!(slots.table().open.len(), 2);
        drop(held);
        assert!(slots.table().open.is_empty());
    }

    #[test]
    fn the_oldest_pending_connection_past_its_grace_is_shed() {
        let now = Instant::now() + Duration::from_secs(100);
        let s = |secs: u64| now - Duration::from_secs(secs);
        let open = [
            (1, A, state(Phase::Head, s(5), s(5), false)),
            (2, A, state(Phase::Handshake, s(8), s(8), false)),
            (3, B, state(Phase::Idle, s(60), s(60), true)),
            (4, B, state(Phase::Busy, s(90), s(90), true)),
        ];
        assert_eq!(choose(open.into_iter(), &limits(), now), Room::Shed(2));
    }

    #[test]
    fn a_crowded_client_loses_its_pending_connections_first() {
        let now = Instant::now() + Duration::from_secs(100);
        let s = |secs: u64| now - Duration::from_secs(secs);
        let open = [
            (1, B, state(Phase::Head, s(9), s(9), false)),
            (2, A, state(Phase::Head, s(3), s(3), false)),
            (3, A, state(Phase::Head, s(4), s(4), false)),
            (4, A, state(Phase::Body, s(2), s(2), false)),
        ];
        assert_eq!(choose(open.into_iter(), &limits(), now), Room::Shed(3));
    }

    #[test]
    fn settled_connections_go_only_when_no_pending_one_is_left() {
        let now = Instant::now() + Duration::from_secs(100);
        let s = |ms: u64| now - Duration::from_millis(ms);
        // A young pending connection: wait for its grace rather than shed an idle one.
        let open = [
            (1, A, state(Phase::Head, s(300), s(300), false)),
            (2, B, state(Phase::Idle, s(60_000), s(30_000), true)),
        ];
        assert_eq!(choose(open.into_iter(), &limits(), now), Room::At(s(300) + Duration::from_secs(1)));
        let open = [
            (1, A, state(Phase::Busy, s(9000), s(1), true)),
            (2, B, state(Phase::Idle, s(60_000), s(3000), true)),
            (3, B, state(Phase::Head, s(60_000), s(2000), true)),
        ];
        assert_eq!(choose(open.into_iter(), &limits(), now), Room::Shed(2));
        let open = [(1, A, state(Phase::Busy, s(9000), s(1), true))];
        assert_eq!(choose(open.into_iter(), &limits(), now), Room::Busy);
    }
}
