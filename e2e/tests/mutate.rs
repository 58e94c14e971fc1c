//! The convergence fuzzer (`ctop-e2e`'s mutator) on the examples with the real `ctop`
//! binary, a fixed seed and a bounded number of steps: greeting, webapp and myresource
//! once plain and once with kubesim faults and an operator restart half-way; myapp and
//! pod-annotator with faults and a restart. A failure prints the seed, the broken
//! invariants and the trace of the objects involved; repeat it (or run longer) with
//! `cargo run -p ctop-e2e --bin ctop-mutate -- --example E --seed S --steps N --faults`.

use std::path::Path;
use std::time::Duration;

use ctop_e2e::binary;
use ctop_e2e::mutate::{self, Config, Example};

const SEED: u64 = 20_261_122;
const STEPS: u64 = 200;

async fn fuzz(example: Example, faults: bool, restart: bool) {
    let config = Config {
        example,
        seed: SEED,
        steps: STEPS,
        writers: 4,
        faults,
        restart,
        ctop: binary::ctop().to_owned(),
        examples_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples"),
        converge_timeout: Duration::from_secs(120),
    };
    let report = match mutate::run(config).await {
        Ok(r) => r,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(report.ok + report.refused, STEPS, "every step ran: {report}");
    assert!(report.ok >= STEPS / 5, "the writers changed the cluster: {report}");
    assert!(report.objects > 0, "objects are left to check: {report}");
    assert_eq!(report.restarts, u64::from(restart), "{report}");
    assert_eq!(report.faults > 0, faults, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutate_greeting_converges() {
    fuzz(Example::Greeting, false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutate_greeting_converges_under_faults_and_restart() {
    fuzz(Example::Greeting, true, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutate_webapp_converges() {
    fuzz(Example::Webapp, false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutate_webapp_converges_under_faults_and_restart() {
    fuzz(Example::Webapp, true, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutate_myresource_converges() {
    fuzz(Example::Myresource, false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutate_myresource_converges_under_faults_and_restart() {
    fuzz(Example::Myresource, true, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutate_myapp_converges_under_faults_and_restart() {
    fuzz(Example::Myapp, true, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutate_pod_annotator_converges_under_faults_and_restart() {
    fuzz(Example::PodAnnotator, true, true).await;
}

/// The fuzzer is not vacuous: a greeting operator that words family greetings wrongly is
/// caught, with the seed, the broken invariant and a trace of the objects involved. One
/// writer makes the sequence of operations, and so the Greetings left at the end, fixed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutate_catches_a_broken_operator() {
    let dir = tempfile::tempdir().expect("temp dir");
    let broken = dir.path().join("greeting");
    std::fs::create_dir_all(broken.join("samples")).expect("mkdir");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/greeting/operator.ct");
    let script = std::fs::read_to_string(source).expect("read the example");
    let message = "message: `Hello to the ${surname} family:";
    assert!(script.contains(message), "the example words the message as the test expects");
    let script = script.replace(message, "message: `Hi to the ${surname} family:");
    std::fs::write(broken.join("operator.ct"), script).expect("write the broken script");
    let config = Config {
        example: Example::Greeting,
        seed: SEED,
        steps: STEPS,
        writers: 1,
        faults: false,
        restart: false,
        ctop: binary::ctop().to_owned(),
        examples_dir: dir.path().to_owned(),
        converge_timeout: Duration::from_secs(5),
    };
    let failure = match mutate::run(config).await {
        Ok(report) => panic!("a broken operator passed: {report}"),
        Err(mutate::MutateError::NotConverged(f)) => f,
        Err(e) => panic!("expected NotConverged, got {e}"),
    };
    assert!(failure.violations.iter().any(|v| v.contains(": message Some(\"Hi to the")), "{failure}");
    assert!(!failure.trace.is_empty(), "{failure}");
    let text = failure.to_string();
    assert!(text.contains(&format!("--seed {SEED}")), "{text}");
    let _ = std::fs::remove_dir_all(&failure.logs);
}
