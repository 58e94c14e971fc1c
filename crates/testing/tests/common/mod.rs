//! What the recording tests share: examples/webapp started in a `World` whose handler calls
//! are recorded.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use ctop_recording::{RecordOptions, RecordWriter};
use ctop_testing::replay::recorded;
use ctop_testing::{Operator, World};
use serde_json::json;

/// examples/webapp.
pub fn webapp() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/webapp")
}

/// examples/webapp in a world with workloads, every handler call recorded into `file`
/// (close the writer after stopping the world).
pub async fn recorded_webapp(file: &Path) -> (World, RecordWriter) {
    let op = Operator { dir: webapp(), entry: "operator.ct".into() };
    let config = ctop_testing::WorldConfig {
        workloads: Some(ctop_kubesim::WorkloadConfig::default()),
        values: ctop_testing::values_for(&op.dir, None).expect("values"),
        env: json!({}),
        crds: Vec::new(),
    };
    let options =
        RecordOptions { path: file.to_owned(), operator: "webapp".into(), ..RecordOptions::default() };
    let writer = RecordWriter::create(options, config.env.clone(), config.values.clone()).expect("recording");
    let recorder = writer.clone();
    let world =
        World::start_wrapped(&op, &config, move |handlers, script| recorded(handlers, script, recorder))
            .await
            .expect("world starts");
    (world, writer)
}
