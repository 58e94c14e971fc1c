#!/usr/bin/env bash
# Runs every check and test of the workspace. Installs what the tests need that cargo
# does not fetch by itself, into the project (never system-wide, except Debian packages
# on a machine that lacks them).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

if ! command -v kubectl >/dev/null 2>&1; then
  echo "error: kubectl is not on PATH. The kubesim tests drive the real kubectl (v1.32)." >&2
  echo "       Install it (e.g. from the Kubernetes apt repository) and run this script again." >&2
  exit 1
fi

step "sdk (node tests and the TypeScript compiler)"
if ! command -v npm >/dev/null 2>&1; then
  echo "error: npm is not on PATH. The SDK tests need Node.js 20+ and npm." >&2
  exit 1
fi
(cd crates/runtime/sdk && npm ci --no-audit --no-fund --loglevel=error && npm test)
# The runtime's npm tests (crates/runtime/tests/npm.rs) load real packages from this lockfile.
(cd crates/runtime/tests/npm && npm ci --no-audit --no-fund --loglevel=error)
# The operator's page in a browser (e2e/ui: puppeteer-core, which downloads no browser).
(cd e2e/ui && npm ci --no-audit --no-fund --loglevel=error)
# Examples that import npm packages (examples/cronjob: cron-parser).
for lock in examples/*/package-lock.json; do
  (cd "$(dirname "$lock")" && npm ci --no-audit --no-fund --loglevel=error)
done

step "format"
cargo fmt --all --check

step "lint"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "tests"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast
else
  cargo test --workspace --locked --no-fail-fast
fi

# The binary the tests just ran (the e2e tests run target/debug/ctop). Not `cargo run -p
# ctop`: Cargo resolves features for ctop alone differently than for the workspace and
# would compile kube, oxc and their dependents a second time.
ctop="${CARGO_TARGET_DIR:-target}/debug/ctop"
if [ ! -x "$ctop" ]; then
  echo "error: $ctop is missing, though the tests step builds it (for crates/cli/tests/binary.rs)." >&2
  exit 1
fi

step "the operator's page in a real browser: ctop dev examples/webapp and headless Chromium"
# Debian's chromium, never a downloaded browser build. The test fails (never skips) when
# anything is missing.
if ! command -v chromium >/dev/null 2>&1; then
  { apt-get update -qq && apt-get install -y -qq chromium; } || {
    echo "error: chromium is not installed and apt-get could not install it; the page's test needs it" >&2
    exit 1
  }
fi
(cd e2e/ui && CTOP_BIN="$ctop" CHROMIUM="$(command -v chromium)" node --test page.test.mjs)

step "check: a scaffolded operator, every example and golden case pass ctop check"
# ctop check type-checks with the real TypeScript compiler (the SDK's, put on PATH; an
# operator's own node_modules/.bin/tsc would come first) and makes the manifest, name and
# RBAC checks without a cluster.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$ctop" init "$tmp/op" --kind Demo --group demo.example.com
"$ctop" types "$tmp/op"
sdk_bin="$PWD/crates/runtime/sdk/node_modules/.bin"
for op_dir in "$tmp/op" examples/*/ crates/runtime/tests/golden/*/; do
  [ -e "$op_dir/operator.ct" ] || continue
  case "$op_dir" in
    # Two golden scripts break a declaration rule, and their runtime tests keep them as
    # they are: the plan's script (as the plan wrote it) reads Secrets it does not
    # declare; every-function's Tenant controller applies a ConfigMap it does not manage
    # (the controller would refuse it). ctop check must say so and fail.
    */golden/plan/) expect='calls getObserved(Secret, ...)' ;;
    */golden/every-function/) expect='operator "tenant" applies ConfigMap' ;;
    *) expect='' ;;
  esac
  if [ -z "$expect" ]; then
    PATH="$sdk_bin:$PATH" CTOP_LOG=error "$ctop" check "${op_dir%/}"
  elif out="$(PATH="$sdk_bin:$PATH" CTOP_LOG=error "$ctop" check "${op_dir%/}" 2>&1)"; then
    echo "error: ctop check passed ${op_dir%/}, which breaks a declaration rule" >&2
    exit 1
  elif ! grep -qF "$expect" <<<"$out"; then
    echo "$out" >&2
    echo "error: ctop check of ${op_dir%/} did not report: $expect" >&2
    exit 1
  else
    echo "${op_dir%/}: reported as expected: $expect"
  fi
done

step "ctop test: every example's tests (expectations, golden files, oracles), and a scaffold's first test"
# Each test runs on an in-process kubesim with a virtual clock: the whole step takes seconds.
# The scaffold has no golden file yet: --update records it (as its author would), and a
# second run compares with it.
"$ctop" test --update "$tmp/op"
"$ctop" test "$tmp/op"
"$ctop" test examples/*/ --junit "${CARGO_TARGET_DIR:-target}/ctop-test.junit.xml"
# Δ-controller's examples, their Operator YAMLs unchanged, with tests of what their README
# and envtest assert.
"$ctop" test crates/declarative/tests/examples/*/*-operator.yaml \
  crates/declarative/tests/examples/deployment-configmap-handler/deployment_configmap_handler.yaml \
  crates/declarative/tests/examples/endpointslice-annotator/endpointslice_annotator.yaml

step "manifests: validated by kubernetes-validate against the Kubernetes 1.33 schemas"
# An independent validator, in a venv inside the repository (.venv is git-ignored). It
# ships the JSON schemas of the built-in kinds. The manifests hold only built-in kinds and
# CRDs, and a CRD is validated as what it is, an apiextensions.k8s.io/v1 object (its
# openAPIV3Schema against JSONSchemaProps). Custom resources (the samples) are not in the
# output and kubernetes-validate cannot know their kinds: kubesim checks them against the
# generated CRD instead (e2e/tests/manifests.rs). So any WARN ("schema not found")
# means an unexpected kind and fails the step, like an ERROR does.
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv || {
    echo "error: cannot create .venv; the manifest check needs python3 with venv (Debian: python3-venv)." >&2
    exit 1
  }
fi
.venv/bin/pip install -q --disable-pip-version-check "kubernetes-validate==1.37.0"
mkdir -p "$tmp/manifests"
for op_dir in "$tmp/op" examples/*/ crates/runtime/tests/golden/*/; do
  [ -e "$op_dir/operator.ct" ] || continue
  out="$tmp/manifests/$(echo "${op_dir%/}" | tr '/' '_').yaml"
  CTOP_LOG=error "$ctop" manifests "$op_dir" --pdb --network-policy -o "$out"
  report="$(.venv/bin/kubernetes-validate --strict -k 1.33.0 --quiet "$out")" || { echo "$report" >&2; exit 1; }
  if [ -n "$report" ]; then
    echo "$report" >&2
    echo "error: kubernetes-validate warned about $out (a kind without a schema)" >&2
    exit 1
  fi
  echo "valid: manifests of ${op_dir%/} ($(grep -c '^kind: ' "$out") documents)"
done
step "bench: 100 CRs through ctop, native kube-rs and kopf (fails only if one does not converge)"; bench/ci.sh

step "ctop test --fuzz: 2,000 steps with faults on every example; webapp twice, byte-identical traces"
# The release binary bench/ci.sh just built: the fuzzer is the same code as in the debug
# build, several times faster. A failure prints the seed and the shrunk trace.
release="${CARGO_TARGET_DIR:-target}/release/ctop"
for op_dir in examples/*/; do
  name="$(basename "$op_dir")"
  "$release" test "${op_dir%/}" --fuzz --seed 20261126 --steps 2000 --faults --trace "$tmp/fuzz-$name.trace"
done
"$release" test examples/webapp --fuzz --seed 20261126 --steps 2000 --faults --trace "$tmp/fuzz-webapp-again.trace"
if ! cmp "$tmp/fuzz-webapp.trace" "$tmp/fuzz-webapp-again.trace"; then
  diff "$tmp/fuzz-webapp.trace" "$tmp/fuzz-webapp-again.trace" | head -20 >&2
  echo "error: the same seed gave two different fuzz traces of examples/webapp" >&2
  exit 1
fi
echo "examples/webapp: the same seed gave the same trace ($(wc -l <"$tmp/fuzz-webapp.trace") lines)"
