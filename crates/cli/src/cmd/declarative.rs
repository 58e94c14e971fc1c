//! Δ-controller `Operator` YAMLs where a script directory is accepted: the one seam the
//! commands share. A path naming a `.yaml`/`.yml` file whose document is a
//! `dcontroller.io/v1alpha1` `Operator` is read here into its [`OperatorHandlers`].

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use ctop_declarative::{Operator, OperatorHandlers};

/// The Operator at `path`, when `path` is a YAML file holding one; `None` for anything else
/// (a script directory). A YAML file that is no Operator, or a broken one, is an error.
pub fn operator_at(path: &Path) -> anyhow::Result<Option<Operator>> {
    let yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
    if !yaml || !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let op = Operator::from_yaml(&text).with_context(|| {
        format!("{} is a YAML file but no Operator ctop can run (ctop takes a script directory or an Operator YAML)", path.display())
    })?;
    for c in op.controllers.iter().filter_map(|c| c.broken.as_deref()) {
        tracing::warn!(operator = op.name, error = c, "this controller cannot run; the others will");
    }
    Ok(Some(op))
}

/// The handlers of `op`.
pub fn handlers(op: Operator) -> anyhow::Result<Arc<OperatorHandlers>> {
    let name = op.name.clone();
    Ok(Arc::new(OperatorHandlers::new(op).with_context(|| format!("cannot run the Operator {name:?}"))?))
}

/// `op` as the bundle `ctop manifests` ships in its ConfigMap: its JSON, gzipped
/// (deterministic: no name, no time), which `ctop run --bundle` recognises.
pub fn bundle_of(op: &Operator) -> anyhow::Result<ctop_manifests::ScriptBundle> {
    use sha2::Digest as _;
    use std::io::Write as _;
    let json = serde_json::to_vec(&op.object).context("cannot write the Operator as JSON")?;
    let mut gz = flate2::GzBuilder::new().mtime(0).write(Vec::new(), flate2::Compression::best());
    gz.write_all(&json).context("cannot compress the Operator")?;
    let gz = gz.finish().context("cannot compress the Operator")?;
    let sha256 = sha2::Sha256::digest(&gz).iter().map(|b| format!("{b:02x}")).collect();
    Ok(ctop_manifests::ScriptBundle { gz, sha256 })
}

/// The Operator in a bundle file, when it holds one ([`bundle_of`]) rather than a script.
pub fn operator_in_bundle(bytes: &[u8]) -> Option<Operator> {
    use std::io::Read as _;
    let mut json = Vec::new();
    // An Operator is small; a script bundle is read by the runtime, which has its own limit.
    flate2::read::GzDecoder::new(bytes).take(16 << 20).read_to_end(&mut json).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&json).ok()?;
    (value.get("kind").and_then(serde_json::Value::as_str) == Some("Operator"))
        .then(|| Operator::from_value(value).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_goes_through_its_bundle() {
        let op = Operator::from_yaml(
            "apiVersion: dcontroller.io/v1alpha1\nkind: Operator\nmetadata: {name: demo}\nspec:\n  controllers:\n    - name: c\n      sources: [{kind: A}]\n      pipeline: []\n      target: {kind: B}\n",
        )
        .expect("an operator");
        let b = bundle_of(&op).expect("bundle");
        assert_eq!(b.sha256, bundle_of(&op).expect("bundle").sha256, "deterministic");
        assert_eq!(operator_in_bundle(&b.gz).map(|o| o.name), Some("demo".to_string()));
        assert!(operator_in_bundle(b"not gzip").is_none());
    }
}
