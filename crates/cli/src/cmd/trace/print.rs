//! What `ctop trace` prints: the object's conditions, its tree with each object's health,
//! its last reconciles and its events, as text (a pure function of what was gathered).

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use ctop_controller::history::{Child, ChildAction, Ended, FieldChange, Read, ReadCall, Reconcile, Trigger};
use ctop_controller::inspect::EventSummary;
use ctop_controller::inspect::tree::Node;
use serde_json::Value;
use unicode_width::UnicodeWidthStr;

use super::History;

/// Everything `ctop trace` gathered about one object.
pub struct Trace {
    /// The object as the API server returned it.
    pub object: Value,
    /// It and its children, with their health.
    pub tree: Node,
    /// Its recent events, newest first.
    pub events: Vec<EventSummary>,
    /// Its reconciles from the operator, or why they could not be read.
    pub history: History,
    /// What else could not be read.
    pub problems: Vec<String>,
    /// Reconciles to print.
    pub last: usize,
    /// Now, for the ages.
    pub now: DateTime<Utc>,
}

impl Trace {
    /// The text to print.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.head(&mut out);
        out.push('\n');
        tree(&mut out, &self.tree);
        out.push('\n');
        self.reconciles(&mut out);
        out.push('\n');
        self.events(&mut out);
        for p in &self.problems {
            let _ = writeln!(out, "warning: {p}");
        }
        out
    }

    /// The object's name and its conditions.
    fn head(&self, out: &mut String) {
        let o = &self.object;
        let name = match o["metadata"]["namespace"].as_str() {
            Some(ns) => format!("{ns}/{}", self.tree.name),
            None => self.tree.name.clone(),
        };
        let _ = writeln!(out, "{} {name}", self.tree.kind);
        let rows: Vec<[String; 4]> = o["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let text = |k: &str| c[k].as_str().unwrap_or_default().to_owned();
                [text("type"), text("status"), text("reason"), text("message")]
            })
            .collect();
        if rows.is_empty() {
            let _ = writeln!(out, "  no conditions yet: the operator has not reconciled it");
        }
        table(out, "  ", &["CONDITION", "STATUS", "REASON", "MESSAGE"], &rows);
        if let Some(g) = o["metadata"]["generation"].as_i64() {
            match o["status"]["observedGeneration"].as_i64() {
                Some(seen) if seen == g => {}
                Some(seen) => {
                    let _ = writeln!(out, "  generation {g}, the status reports on generation {seen}");
                }
                None => {
                    let _ = writeln!(out, "  generation {g}, no observedGeneration in the status yet");
                }
            }
        }
    }

    /// The last reconciles, newest last.
    fn reconciles(&self, out: &mut String) {
        let answer = match &self.history {
            Ok(answer) => answer,
            Err(why) => {
                let _ = writeln!(out, "RECONCILES: not shown: {why}");
                return;
            }
        };
        let shown = answer.history.len().min(self.last);
        let skipped = match answer.skipped {
            0 => String::new(),
            n => format!("; {n} skipped, nothing they read had changed"),
        };
        let _ = writeln!(out, "RECONCILES (last {shown} of {} kept{skipped})", answer.history.len());
        if shown == 0 {
            let _ = writeln!(out, "  none yet");
        }
        for r in &answer.history[answer.history.len() - shown..] {
            reconcile(out, r, self.now);
        }
    }

    /// The recent events, newest first.
    fn events(&self, out: &mut String) {
        if self.events.is_empty() {
            let _ = writeln!(out, "EVENTS: none");
            return;
        }
        let _ = writeln!(out, "EVENTS");
        let rows: Vec<[String; 4]> = self
            .events
            .iter()
            .map(|e| {
                let age = e.last_seen.as_deref().map_or_else(|| "?".into(), |t| age(t, self.now));
                let count = if e.count > 1 { format!(" (x{})", e.count) } else { String::new() };
                [age, e.type_.clone(), e.reason.clone(), format!("{}{count}", e.message)]
            })
            .collect();
        table(out, "  ", &["AGE", "TYPE", "REASON", "MESSAGE"], &rows);
    }
}

/// The tree as kubectl-like rows: NAME drawn as a tree, HEALTH, REASON, MESSAGE.
fn tree(out: &mut String, root: &Node) {
    let mut rows = Vec::new();
    walk(root, "", "", &mut rows);
    table(out, "", &["NAME", "HEALTH", "REASON", "MESSAGE"], &rows);
}

fn walk(node: &Node, lead: &str, below: &str, rows: &mut Vec<[String; 4]>) {
    rows.push([
        format!("{lead}{}/{}", node.kind, node.name),
        node.health.status.to_string(),
        node.health.reason.clone(),
        node.health.message.clone(),
    ]);
    let last = node.children.len().saturating_sub(1);
    for (i, child) in node.children.iter().enumerate() {
        let (lead, next) = if i == last && node.more_children == 0 {
            (format!("{below}└── "), format!("{below}    "))
        } else {
            (format!("{below}├── "), format!("{below}│   "))
        };
        walk(child, &lead, &next, rows);
    }
    if node.more_children > 0 {
        rows.push([
            format!("{below}└── … {} more", node.more_children),
            String::new(),
            String::new(),
            String::new(),
        ]);
    }
}

/// `rows` under `header` in columns as wide as their widest cell (the last one free).
fn table<const N: usize>(out: &mut String, indent: &str, header: &[&str; N], rows: &[[String; N]]) {
    if rows.is_empty() {
        return;
    }
    let mut widths = header.map(UnicodeWidthStr::width);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.width());
        }
    }
    let mut line = |cells: Vec<&str>| {
        let mut text = String::from(indent);
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            text.push_str(cell);
            if i + 1 < N {
                text.push_str(&" ".repeat(w - cell.width() + 2));
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

/// One reconcile: when, how long, how it ended; then why, what it read and did.
fn reconcile(out: &mut String, r: &Reconcile, now: DateTime<Utc>) {
    let ended = match &r.ended {
        Ended::Succeeded { next_in_seconds: Some(s) } => format!("succeeded, again in {}", seconds(*s)),
        Ended::Succeeded { next_in_seconds: None } => "succeeded".to_owned(),
        Ended::Failed { reason, message, terminal, .. } => {
            let terminal = if *terminal { " (not retried until the object or script changes)" } else { "" };
            format!("FAILED {reason}: {message}{terminal}")
        }
    };
    let generation = r.generation.map_or_else(String::new, |g| format!("  generation {g}"));
    let _ = writeln!(out, "  {} ago  took {:.0}ms{generation}  {ended}", age(&r.started, now), r.took_ms);
    if let Ended::Failed { code_frame: Some(frame), .. } = &r.ended {
        for line in frame.lines() {
            let _ = writeln!(out, "      {line}");
        }
    }
    let mut triggers: Vec<String> = r.triggers.iter().map(trigger).collect();
    if r.more_triggers > 0 {
        triggers.push(format!("{} more", r.more_triggers));
    }
    if triggers.is_empty() {
        triggers.push("nothing noted".into());
    }
    item(out, "why", &triggers);
    let mut reads: Vec<String> = r.reads.iter().map(read).collect();
    if r.more_reads > 0 {
        reads.push(format!("{} more", r.more_reads));
    }
    item(out, "read", &reads);
    let mut children: Vec<String> =
        r.children.iter().filter(|c| c.action != ChildAction::Unchanged).map(child).collect();
    let unchanged = r.children.iter().filter(|c| c.action == ChildAction::Unchanged).count();
    if unchanged > 0 {
        children.push(format!("{unchanged} unchanged"));
    }
    if r.more_children > 0 {
        children.push(format!("{} more", r.more_children));
    }
    item(out, "children", &children);
    let status: Vec<String> = r.status.iter().map(field).collect();
    item(out, "status", &status);
    let events: Vec<String> =
        r.events.iter().map(|e| format!("{} {}: {}", e.type_, e.reason, e.message)).collect();
    item(out, "events", &events);
}

/// One labelled list of a reconcile, one entry per line; nothing when empty.
fn item(out: &mut String, label: &str, entries: &[String]) {
    for (i, entry) in entries.iter().enumerate() {
        let label = if i == 0 { format!("{label}:") } else { String::new() };
        let _ = writeln!(out, "      {label:<10}{entry}");
    }
}

fn trigger(t: &Trigger) -> String {
    let named = |kind: &str, ns: &Option<String>, name: &str| match ns {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    };
    match t {
        Trigger::Started => "the operator started and listed it".into(),
        Trigger::Relisted => "the watch was relisted".into(),
        Trigger::Changed { generation, .. } => match generation {
            Some(g) => format!("it changed (generation {g})"),
            None => "it changed".into(),
        },
        Trigger::Child { kind, namespace, name, deleted } => {
            let what = if *deleted { "was deleted" } else { "changed" };
            format!("its child {} {what}", named(kind, namespace, name))
        }
        Trigger::Watched { kind, namespace, name } => {
            format!("watched {} changed", named(kind, namespace, name))
        }
        Trigger::Tick => "its period came round (every)".into(),
        Trigger::Requeue => "the script asked for it (requeue)".into(),
        Trigger::Retry => "a retry after a failure".into(),
        Trigger::ScriptReplaced => "the script was replaced".into(),
        Trigger::Leader => "this replica became the leader".into(),
        Trigger::Other => "other".into(),
    }
}

fn read(r: &Read) -> String {
    let place = r.namespace.as_deref().map_or_else(String::new, |ns| format!("{ns}/"));
    match r.call {
        ReadCall::Get => match (&r.name, &r.resource_version) {
            (Some(name), Some(rv)) => format!("{} {place}{name} (resourceVersion {rv})", r.kind),
            (Some(name), None) => format!("{} {place}{name} (not found)", r.kind),
            (None, _) => format!("{} {place}", r.kind),
        },
        ReadCall::List => {
            let place = if place.is_empty() {
                "in every namespace".into()
            } else {
                format!("in {}", r.namespace.as_deref().unwrap_or_default())
            };
            format!("{} list {place}: {} objects", r.kind, r.count.unwrap_or_default())
        }
    }
}

fn child(c: &Child) -> String {
    let action = match c.action {
        ChildAction::Created => "created",
        ChildAction::Configured => "configured",
        ChildAction::Unchanged => "unchanged",
        ChildAction::Adopted => "adopted",
        ChildAction::Pruned => "pruned",
        ChildAction::Kept => "kept (prune: false)",
        ChildAction::Deleted => "deleted",
    };
    match &c.namespace {
        Some(ns) => format!("{action} {} {ns}/{}", c.kind, c.name),
        None => format!("{action} {} {}", c.kind, c.name),
    }
}

fn field(f: &FieldChange) -> String {
    let show = |v: &Option<Value>| v.as_ref().map_or_else(|| "(none)".to_owned(), value);
    format!("{}: {} → {}", f.path, show(&f.before), show(&f.after))
}

/// A status value; a condition as `Status (Reason): message`.
fn value(v: &Value) -> String {
    match (v["status"].as_str(), v["reason"].as_str()) {
        (Some(status), Some(reason)) => match v["message"].as_str().filter(|m| !m.is_empty()) {
            Some(message) => format!("{status} ({reason}): {message}"),
            None => format!("{status} ({reason})"),
        },
        _ => v.to_string(),
    }
}

/// `s` seconds as kubectl prints a duration: `45s`, `5m`, `5m30s`, `2h`.
fn seconds(s: f64) -> String {
    // Whole seconds: a history's durations are for reading, not measuring.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let s = s.max(0.0).round() as u64;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, 0, _) => format!("{h}h"),
        (h, m, _) => format!("{h}h{m}m"),
    }
}

/// The age of `rfc3339` at `now`, as kubectl prints ages.
fn age(rfc3339: &str, now: DateTime<Utc>) -> String {
    match DateTime::parse_from_rfc3339(rfc3339) {
        Ok(t) => {
            let ms = (now - t.with_timezone(&Utc)).num_milliseconds();
            // Milliseconds to seconds for display only.
            #[allow(clippy::cast_precision_loss)]
            seconds(ms as f64 / 1000.0)
        }
        Err(_) => rfc3339.to_owned(),
    }
}

#[cfg(test)]
mod tests;
