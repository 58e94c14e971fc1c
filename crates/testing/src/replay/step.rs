//! `replay: FILE` in a test: the recording's calls run again ([`super::replay`]) against
//! the script under test, or the one in `script: DIR`, with no cluster involved. The step
//! passes when every call gives what was recorded; `allow: differences` lets outcomes that
//! differ pass; calls that fail anew, and a recording that does not replay, always fail it.
//! Start with [`run`]; [`judge`] and [`golden`] are its pure parts.

use std::path::PathBuf;
use std::sync::Arc;

use ctop_runtime::{Limits, Script};
use serde_json::{Value, json};

use super::{ExitCode, ReplayError, Report, Target};
use crate::format::ReplayStep;
use crate::world::Operator;

/// Why a replay step could not replay at all.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The recording could not be read.
    #[error("cannot replay the recording")]
    Read(#[source] ctop_recording::ReadError),
    /// The script to replay against did not load.
    #[error("the script in {} does not load", dir.display())]
    Load {
        /// Its directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: ctop_runtime::ScriptError,
    },
    /// The recording names a script it does not hold, or one that does not load.
    #[error("the recording cannot be replayed")]
    Replay(#[source] ReplayError),
    /// Reading the recording or loading the script stopped (its task panicked).
    #[error("the replay stopped")]
    Stopped(#[source] tokio::task::JoinError),
}

/// What a replay step found.
#[derive(Clone, Debug, PartialEq)]
pub struct Replayed {
    /// Why the step fails, if it does.
    pub failure: Option<String>,
    /// The report for the step's golden document (`None` when nothing was replayed).
    pub golden: Option<Value>,
}

/// Replays `step` against its script: the directory of `script:`, else the operator's
/// (with the operator's entry file either way).
pub async fn run(op: &Operator, step: &ReplayStep) -> Replayed {
    match report(op, step).await {
        Ok(report) => {
            Replayed { failure: judge(&report, step.allow_differences), golden: Some(golden(&report)) }
        }
        Err(e) => Replayed { failure: Some(ctop_core::Chain(&e).to_string()), golden: None },
    }
}

async fn report(op: &Operator, step: &ReplayStep) -> Result<Report, StepError> {
    let path = step.recording.path.clone();
    let recording = tokio::task::spawn_blocking(move || ctop_recording::read(&path))
        .await
        .map_err(StepError::Stopped)?
        .map_err(StepError::Read)?;
    let dir = step.script.as_ref().map_or_else(|| op.dir.clone(), |s| s.path.clone());
    let (from, entry) = (dir.clone(), op.entry.clone());
    // Loaded afresh, as `ctop replay --script` loads it: one runtime, so calls that share
    // module state run on it in recorded order, and nothing shared with the operator.
    let script = tokio::task::spawn_blocking(move || Script::from_dir(&from, &entry, 1, Limits::default()))
        .await
        .map_err(StepError::Stopped)?
        .map_err(|source| StepError::Load { dir, source })?;
    let target = Target::Script { script: Arc::new(script), label: step.label() };
    super::replay(&recording, target).await.map_err(StepError::Replay)
}

/// Why `report` fails the step, if it does: its exit names the finding, and its summary
/// lines follow, one a line.
pub fn judge(report: &Report, allow_differences: bool) -> Option<String> {
    let headline = match report.exit {
        ExitCode::Identical => return None,
        ExitCode::Differences if allow_differences => return None,
        ExitCode::Differences => {
            "the replay gives other outcomes than the recording (add `allow: differences` to the step if they are intended)"
        }
        ExitCode::NewFailures => "the replay has calls that fail now and did not when recorded",
        ExitCode::Diverged => {
            "the recording did not replay: a call diverged from it, or calls were not recorded"
        }
    };
    let lines: Vec<String> = report.summary.iter().map(|l| format!("\n  {l}")).collect();
    Some(format!("{headline}:{}", lines.concat()))
}

/// The part of `report` a golden file shows: the exit, the summary and the objects whose
/// calls differ; not the recording's id, and times and uids masked as in the rest of the
/// file, so that the same recording gives the same text every run.
pub fn golden(report: &Report) -> Value {
    let mut v = json!({
        "exit": report.exit,
        "summary": report.summary,
        "objects": report.objects,
    });
    crate::golden::mask_volatile(&mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(exit: ExitCode) -> Report {
        Report {
            recording: "0123456789abcdef0123456789abcdef".into(),
            operator: "webapp".into(),
            script: "v2".into(),
            calls: 2,
            identical: 1,
            dropped: 0,
            notes: Vec::new(),
            objects: Vec::new(),
            summary: vec!["v2 prunes v1/Service on 1 of 1 WebApps".into(), "1 of 2 calls identical".into()],
            exit,
        }
    }

    #[test]
    fn only_identical_passes_unless_differences_are_allowed() {
        assert_eq!(judge(&report(ExitCode::Identical), false), None);
        assert_eq!(judge(&report(ExitCode::Differences), true), None);
        let m = judge(&report(ExitCode::Differences), false).expect("a failure");
        assert!(
            m.contains("allow: differences")
                && m.ends_with("\n  v2 prunes v1/Service on 1 of 1 WebApps\n  1 of 2 calls identical"),
            "{m}"
        );
        for exit in [ExitCode::NewFailures, ExitCode::Diverged] {
            assert!(judge(&report(exit), true).is_some(), "{exit:?} passed");
        }
    }

    #[test]
    fn the_golden_part_has_the_findings_and_not_the_recording_id() {
        let v = golden(&report(ExitCode::Differences));
        assert_eq!(v["exit"], "differences");
        assert_eq!(v["summary"][0], "v2 prunes v1/Service on 1 of 1 WebApps");
        assert_eq!(v["objects"], json!([]));
        assert!(!v.to_string().contains("0123456789abcdef"), "{v}");
    }
}
