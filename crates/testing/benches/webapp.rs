//! How long a 10-step test of `examples/webapp` takes, start-up included (kubesim, the
//! script, the CRDs, the controllers), with and without the oracles that act on the world
//! after the last step; and the fuzzer's steps per second on it, with and without faults.
//! `cargo bench -p ctop-testing --bench webapp` (add `--profile dev` to skip an optimized
//! build); prints the median and fastest of 15 runs of each test, and of 3 fuzz runs.
#![allow(clippy::print_stdout, missing_docs)]

use std::path::Path;
use std::time::Duration;

use ctop_testing::fuzz::{FuzzConfig, fuzz};
use ctop_testing::{GoldenMode, Operator, TestFile, run_test};

const STEPS: &str = r#"
golden: false
steps:
  - apply: samples/webapp.yaml
    expect:
      - kind: WebApp
        metadata: {name: shop}
        status: {phase: Running}
  - patch: WebApp/shop
    merge: {spec: {replicas: 3}}
    expect:
      - {apiVersion: apps/v1, kind: Deployment, metadata: {name: shop}, spec: {replicas: 3}}
  - patch: WebApp/shop
    merge: {spec: {image: "nginx:1.28"}}
  - advance: 10m
  - apply:
      apiVersion: apps.example.com/v1
      kind: WebApp
      metadata: {name: blog}
      spec: {image: "nginx:1.27"}
  - pods: "app.kubernetes.io/name=blog:fail"
  - fault: {verb: apply, resource: services, code: 500}
  - patch: WebApp/blog
    merge: {spec: {port: 8081}}
  - fault: clear
  - advance: 1m
    expect:
      - kind: WebApp
        metadata: {name: blog}
        status: {phase: Pending}
"#;

fn measure(test: &TestFile, op: &Operator) -> (Duration, Duration) {
    let mut times: Vec<Duration> = (0..15)
        .map(|_| {
            let r = run_test(op, test, GoldenMode::Compare);
            assert!(r.passed(), "{:#?}", r.failures);
            r.wall
        })
        .collect();
    times.sort();
    (times[times.len() / 2], times[0])
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/webapp");
    let op = Operator { dir: dir.clone(), entry: "operator.ct".into() };
    let with = TestFile::parse(&dir.join("tests/bench.yaml"), STEPS, &dir).expect("valid");
    let without_text = STEPS.replace(
        "golden: false\n",
        "golden: false\noracles:\n  idempotence: bench\n  failed-apply-prunes-nothing: bench\n  deletion-cleans-up: bench\n",
    );
    let without = TestFile::parse(&dir.join("tests/bench.yaml"), &without_text, &dir).expect("valid");
    let one_text = "golden: false\noracles:\n  idempotence: bench\n  failed-apply-prunes-nothing: bench\n  deletion-cleans-up: bench\nsteps:\n  - apply: samples/webapp.yaml\n";
    let one = TestFile::parse(&dir.join("tests/bench.yaml"), one_text, &dir).expect("valid");
    let (median, fastest) = measure(&one, &op);
    println!("start-up and one step:             median {median:?}, fastest {fastest:?}");
    let (median, fastest) = measure(&without, &op);
    println!("10-step webapp test, steps only:   median {median:?}, fastest {fastest:?}");
    let (median, fastest) = measure(&with, &op);
    println!("10-step webapp test, with oracles: median {median:?}, fastest {fastest:?}");
    for faults in [false, true] {
        let mut rates: Vec<f64> = (0..3)
            .map(|seed| {
                let config = FuzzConfig { seed, steps: 500, faults, shrink: None };
                let r = fuzz(&op, &config).expect("the fuzzer runs");
                assert!(r.failure.is_none(), "{:#?}", r.trace);
                r.steps_run as f64 / r.wall.as_secs_f64()
            })
            .collect();
        rates.sort_by(f64::total_cmp);
        let what = if faults { "with faults" } else { "no faults  " };
        println!("fuzzer, 500 steps, {what}:      median {:.0} steps/s, fastest {:.0}", rates[1], rates[2]);
    }
}
