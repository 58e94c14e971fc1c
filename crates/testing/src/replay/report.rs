//! A replay's result, grouped by object, with the summary a reviewer reads first and the
//! exit code CI acts on: [`build`] makes a [`Report`] of the replayed calls,
//! [`Report::text`] renders it, [`Report::exit_code`] judges it. Pure functions.

use std::collections::{BTreeMap, BTreeSet};

use ctop_recording::Recording;
use serde::Serialize;

use super::diff::ChildChange;
use super::{CallReport, Verdict};

/// How many objects a summary line names before it says "and N more".
const NAMED: usize = 5;

/// What `ctop replay` exits with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ExitCode {
    /// Every call gave what was recorded (0).
    Identical,
    /// Outcomes differ, none fails anew (1).
    Differences,
    /// Some call fails that did not (2).
    NewFailures,
    /// The recorded script did not reproduce its recording, or calls were not recorded (3).
    Diverged,
}

impl ExitCode {
    /// The process exit code.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            ExitCode::Identical => 0,
            ExitCode::Differences => 1,
            ExitCode::NewFailures => 2,
            ExitCode::Diverged => 3,
        }
    }
}

/// One object's calls.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReport {
    /// The controller's name.
    pub controller: String,
    /// The object's kind.
    pub kind: String,
    /// `namespace/name` (empty for `onStart`).
    pub object: String,
    /// How many of its calls were replayed.
    pub calls: usize,
    /// How many of them did not give what was recorded.
    pub differing: usize,
    /// Its last call (the state it would be left in).
    pub last: CallReport,
    /// Its other calls that did not give what was recorded, oldest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<CallReport>,
}

/// What a replay found.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The recording's id.
    pub recording: String,
    /// The operator it recorded.
    pub operator: String,
    /// What ran: "the recorded script" or the other script's label.
    pub script: String,
    /// Calls replayed.
    pub calls: usize,
    /// Of which gave what was recorded.
    pub identical: usize,
    /// Calls the recording lost (its writer could not keep up): the replay is incomplete.
    pub dropped: u64,
    /// What the reader noted (a torn last block, a missing part).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Objects with at least one call that did not give what was recorded.
    pub objects: Vec<ObjectReport>,
    /// The headline, one finding a line.
    pub summary: Vec<String>,
    /// What the run exits with.
    pub exit: ExitCode,
}

/// Groups `calls` by object and writes the summary.
#[must_use]
pub fn build(recording: &Recording, script: String, calls: Vec<CallReport>) -> Report {
    let total = calls.len();
    let identical = calls.iter().filter(|c| c.verdict == Verdict::Identical).count();
    // Objects in first-seen order, their calls in recorded order.
    let mut order: Vec<(String, String)> = Vec::new();
    let mut by_object: BTreeMap<(String, String), Vec<CallReport>> = BTreeMap::new();
    for call in calls {
        let key = (call.controller.clone(), call.object.clone());
        if !by_object.contains_key(&key) {
            order.push(key.clone());
        }
        by_object.entry(key).or_default().push(call);
    }
    let mut every: Vec<ObjectReport> = Vec::new();
    for key in order {
        let Some(mut list) = by_object.remove(&key) else { continue };
        let calls = list.len();
        let differing = list.iter().filter(|c| c.verdict != Verdict::Identical).count();
        let Some(last) = list.pop() else { continue };
        let earlier = list.into_iter().filter(|c| c.verdict != Verdict::Identical).collect();
        every.push(ObjectReport {
            controller: key.0,
            kind: last.kind.clone(),
            object: key.1,
            calls,
            differing,
            last,
            earlier,
        });
    }
    let summary = summary(&script, &every, total, identical, recording.dropped);
    let exit = exit_code(&every, recording.dropped);
    Report {
        recording: recording.header.recording_id.clone(),
        operator: recording.header.operator.clone(),
        script,
        calls: total,
        identical,
        dropped: recording.dropped,
        notes: recording.notes.clone(),
        objects: every.into_iter().filter(|o| o.differing > 0).collect(),
        summary,
        exit,
    }
}

fn all_calls(o: &ObjectReport) -> impl Iterator<Item = &CallReport> {
    o.earlier.iter().chain(std::iter::once(&o.last))
}

fn exit_code(objects: &[ObjectReport], dropped: u64) -> ExitCode {
    let any = |f: fn(&Verdict) -> bool| objects.iter().flat_map(all_calls).any(|c| f(&c.verdict));
    if dropped > 0 || any(|v| matches!(v, Verdict::Diverged { .. })) {
        ExitCode::Diverged
    } else if any(|v| matches!(v, Verdict::NewFailure { .. })) {
        ExitCode::NewFailures
    } else if any(|v| !matches!(v, Verdict::Identical | Verdict::NotCompared { .. })) {
        ExitCode::Differences
    } else {
        ExitCode::Identical
    }
}

/// The headline: what each object's last call would change, counted over the objects of its
/// kind; then failures, divergences, and the count of identical calls.
fn summary(
    script: &str,
    objects: &[ObjectReport],
    calls: usize,
    identical: usize,
    dropped: u64,
) -> Vec<String> {
    let mut out = Vec::new();
    // Objects per kind, and per (kind, finding) the objects whose last call shows it.
    let mut of_kind: BTreeMap<&str, usize> = BTreeMap::new();
    let mut findings: BTreeMap<(&str, String), BTreeSet<&str>> = BTreeMap::new();
    for o in objects.iter().filter(|o| !o.object.is_empty()) {
        *of_kind.entry(o.kind.as_str()).or_default() += 1;
        if let Verdict::Different { diff } = &o.last.verdict {
            let mut seen = BTreeSet::new();
            for c in &diff.children {
                seen.insert(format!("{} {}", c.verb(), c.child().kind));
            }
            for f in &diff.status {
                let what = match (&f.before, &f.after) {
                    (None, _) => "adds status field",
                    (_, None) => "removes status field",
                    _ => "changes status field",
                };
                seen.insert(format!("{what} {}", f.path));
            }
            for f in &diff.other {
                seen.insert(format!("changes its {}", f.path));
            }
            for finding in seen {
                findings.entry((o.kind.as_str(), finding)).or_default().insert(o.object.as_str());
            }
        }
    }
    for ((kind, finding), objects) in &findings {
        let total = of_kind.get(kind).copied().unwrap_or(0);
        out.push(format!("{script} {finding} on {} of {total} {}", objects.len(), plural(kind)));
    }
    let failing: Vec<(&ObjectReport, &CallReport, &str)> = objects
        .iter()
        .filter_map(|o| {
            all_calls(o).find_map(|c| match &c.verdict {
                Verdict::NewFailure { message } => Some((o, c, message.as_str())),
                _ => None,
            })
        })
        .collect();
    if !failing.is_empty() {
        let names = failing.iter().map(|(o, c, m)| format!("{} {} ({})", o.kind, name_of(o, c), m));
        out.push(format!(
            "{} object{} now fail{}: {}",
            failing.len(),
            s(failing.len()),
            if failing.len() == 1 { "s" } else { "" },
            first(names, failing.len())
        ));
    }
    let fixed: Vec<&ObjectReport> =
        objects.iter().filter(|o| matches!(o.last.verdict, Verdict::Fixed { .. })).collect();
    if !fixed.is_empty() {
        let names = fixed.iter().map(|o| format!("{} {}", o.kind, name_of(o, &o.last)));
        out.push(format!(
            "{} object{} no longer fail: {}",
            fixed.len(),
            s(fixed.len()),
            first(names, fixed.len())
        ));
    }
    let diverged: Vec<&CallReport> = objects
        .iter()
        .flat_map(all_calls)
        .filter(|c| matches!(c.verdict, Verdict::Diverged { .. }))
        .collect();
    if let Some(c) = diverged.first()
        && let Verdict::Diverged { why } = &c.verdict
    {
        out.push(format!(
            "{} call{} diverged from the recording (the recording missed an input); the first, call {} ({} {}): {why}",
            diverged.len(),
            s(diverged.len()),
            c.seq,
            c.handler,
            if c.object.is_empty() { "-" } else { c.object.as_str() },
        ));
    }
    let blind: usize = objects.iter().flat_map(all_calls).map(|c| c.blind_reads.len()).sum();
    if blind > 0 {
        out.push(format!(
            "{blind} read{} the recording cannot answer (the script reads what the recorded one did not); their answers were made up",
            s(blind)
        ));
    }
    if dropped > 0 {
        out.push(format!(
            "{dropped} call{} were not recorded (the recorder fell behind): the replay is incomplete",
            s(dropped as usize)
        ));
    }
    out.push(if identical == calls {
        format!("all {calls} call{} identical", s(calls))
    } else {
        format!("{identical} of {calls} calls identical")
    });
    out
}

fn name_of(o: &ObjectReport, c: &CallReport) -> String {
    if o.object.is_empty() { c.handler.clone() } else { o.object.clone() }
}

/// The first [`NAMED`] of `names`, then how many more.
fn first(names: impl Iterator<Item = String>, count: usize) -> String {
    let mut text: Vec<String> = names.take(NAMED).collect();
    if count > NAMED {
        text.push(format!("and {} more", count - NAMED));
    }
    text.join(", ")
}

fn s(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A kind's English plural (`WebApp` → `WebApps`, `Policy` → `Policies`).
fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower.ends_with('s') || lower.ends_with('x') || lower.ends_with("ch") || lower.ends_with("sh") {
        format!("{kind}es")
    } else if lower.ends_with('y')
        && !lower.ends_with("ay")
        && !lower.ends_with("ey")
        && !lower.ends_with("oy")
    {
        format!("{}ies", &kind[..kind.len() - 1])
    } else {
        format!("{kind}s")
    }
}

impl Report {
    /// The process exit code.
    #[must_use]
    pub fn exit_code(&self) -> ExitCode {
        self.exit
    }

    /// The report as text: each object with differences (its last call in full, earlier
    /// differing calls in a line each), then the summary.
    #[must_use]
    pub fn text(&self) -> String {
        let mut out = format!(
            "replayed {} call{} of recording {} ({}) against {}\n",
            self.calls,
            s(self.calls),
            self.recording,
            self.operator,
            self.script
        );
        for note in &self.notes {
            out.push_str(&format!("note: {note}\n"));
        }
        for o in &self.objects {
            let name = if o.object.is_empty() { o.last.handler.as_str() } else { o.object.as_str() };
            out.push_str(&format!(
                "\n{} {name}: {} of {} call{} differ\n",
                o.kind,
                o.differing,
                o.calls,
                s(o.calls)
            ));
            for c in &o.earlier {
                out.push_str(&format!("  call {} ({}): {}\n", c.seq, c.handler, one_line(&c.verdict)));
            }
            out.push_str(&format!(
                "  last call {} ({}): {}\n",
                o.last.seq,
                o.last.handler,
                one_line(&o.last.verdict)
            ));
            if let Verdict::Different { diff } = &o.last.verdict {
                for c in &diff.children {
                    out.push_str(&format!("    {} {}\n", c.verb(), c.child()));
                    if let ChildChange::Changed { fields, .. } = c {
                        for f in fields {
                            out.push_str(&format!("      {f}\n"));
                        }
                    }
                }
                for f in &diff.status {
                    out.push_str(&format!("    status {f}\n"));
                }
                for f in &diff.other {
                    out.push_str(&format!("    {f}\n"));
                }
            }
            for read in &o.last.blind_reads {
                out.push_str(&format!("    blind read: {read}\n"));
            }
        }
        out.push_str("\nsummary:\n");
        for line in &self.summary {
            out.push_str(&format!("  {line}\n"));
        }
        out
    }
}

fn one_line(v: &Verdict) -> String {
    match v {
        Verdict::Identical => "identical".into(),
        Verdict::Different { diff } => {
            let n = diff.children.len() + diff.status.len() + diff.other.len();
            format!("{n} difference{}", s(n))
        }
        Verdict::NewFailure { message } => format!("now fails: {message}"),
        Verdict::Fixed { was } => format!("no longer fails (was: {was})"),
        Verdict::NotCompared { why } => format!("not compared: {why}"),
        Verdict::Diverged { why } => format!("diverged: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_have_english_plurals() {
        assert_eq!(plural("WebApp"), "WebApps");
        assert_eq!(plural("Policy"), "Policies");
        assert_eq!(plural("Gateway"), "Gateways");
        assert_eq!(plural("Ingress"), "Ingresses");
    }

    #[test]
    fn exit_codes_rank_divergence_then_failures_then_differences() {
        assert_eq!(ExitCode::Diverged.code(), 3);
        assert_eq!(exit_code(&[], 0), ExitCode::Identical);
        assert_eq!(exit_code(&[], 2), ExitCode::Diverged);
    }
}
