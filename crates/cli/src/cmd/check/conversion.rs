//! The conversions of the script's resources with several versions, run on every sample of
//! them: each converted to every other version and back must come back unchanged (what a
//! conversion drops, the API server loses when it stores the object in another version).
//! A conversion that throws, returns an invalid object or is not pure is an error too. The
//! check is [`ctop_runtime::ScriptHandlers::round_trip`], the one `ctop test`'s
//! `conversion-round-trip` oracle runs after every step.

use std::sync::Arc;

use ctop_runtime::{Script, ScriptHandlers};
use serde_json::Value;

use super::frame::Finding;
use super::samples::Sample;

/// The round trip of every sample the API server would accept, of a resource with several
/// versions.
pub fn check(script: &Arc<Script>, samples: &[Sample], values: &Value) -> Vec<Finding> {
    let spec = script.spec();
    if spec.converting().next().is_none() {
        return Vec::new();
    }
    let handlers = ScriptHandlers::new(script.clone(), &ctop_runtime::script_env(), values);
    let mut findings = Vec::new();
    for sample in samples.iter().filter(|s| !s.refused) {
        let o = &sample.object;
        let group = ctop_core::group_of(o["apiVersion"].as_str().unwrap_or_default());
        let Some(resource) = spec.converting().find(|r| r.group == group && o["kind"] == r.kind.as_str())
        else {
            continue;
        };
        if let Err(e) = handlers.round_trip(resource, o) {
            let name = o["metadata"]["name"].as_str().unwrap_or("(no name)");
            findings.push(Finding::error(
                "conversion",
                format!("{}: {} {name}: {e}", sample.file, resource.kind),
                Some(format!(
                    "make {}'s toHub and fromHub keep every field (one a version cannot hold can travel in an \
                     annotation, as the kubebuilder book's conversions do)",
                    resource.kind
                )),
            ));
        }
    }
    findings
}
