//! Scripts that attack the runtime's limits: each call fails alone, with an error naming the
//! limit, and the process and the pool survive. The golden case `tests/golden/hostile` pins
//! the errors of each hostile mode; this file holds what a golden call cannot show (the
//! process not aborting, runtimes being replaced, time bounds).

use std::time::Duration;

use ctop_runtime::{Limits, Script, ScriptError, VmError};
use serde_json::json;

fn script(source: &str, workers: usize, limits: Limits) -> Result<Script, ScriptError> {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("operator.ct"), source).expect("write operator.ct");
    Script::from_dir(dir.path(), "operator.ct", workers, limits)
}

fn thing(n: u32) -> String {
    json!({"object": {"apiVersion": "x.example.com/v1", "kind": "Thing",
                      "metadata": {"name": "t", "namespace": "d", "uid": "u"}, "spec": {"n": n}},
           "observed": {}, "env": {}, "values": {}})
    .to_string()
}

const FINDER: &str = r#"import { resource, z, operator, Result } from "ctop";
const r = resource("x.example.com/v1", "Thing", { scope: "Namespaced", spec: { n: z.number() }, status: {} });
const items = Array.from({ length: 1000 }, (_, i) => ({ i }));
const none = (x: { i: number }) => x.i < 0;
const tick = () => 0;
operator(r).reconcile(() => {
  // Every third round makes one more call, so the interrupt checks the deadline at every
  // kind of check inside findIndex over time, not always the same one.
  for (let k = 0; ; k++) {
    items.findIndex(none);
    if (k % 3 === 0) tick();
  }
  return Result.ok();
});
"#;

/// QuickJS-ng frees the element twice when the deadline stops a script at the interrupt check
/// at the top of `findIndex`'s loop, and the process aborts when the runtime is freed
/// (`vendor/README.md`). About half the interrupts land on that check; thirty runs, each
/// discarding its runtime, would all but surely abort without the patch.
#[test]
fn an_interrupt_inside_find_does_not_abort_the_process() {
    let limits = Limits { timeout: Duration::from_millis(60), ..Limits::default() };
    let s = script(FINDER, 1, limits).expect("loads");
    for _ in 0..30 {
        let err = s.dispatch("reconcile", 0, &thing(1)).expect_err("loops until its deadline");
        assert!(matches!(err, VmError::Timeout { .. }), "{err}");
    }
}
