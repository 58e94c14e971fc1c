#!/usr/bin/env bash
# The small benchmark CI runs so it cannot rot: 100 WebApp CRs through ctop, the native
# kube-rs controller and kopf, one after another on kubesim, then the memory soak's smoke
# run (2 waves of 50 CRs each; 14–19 s for the three on a loaded 2-core machine). It fails
# when an implementation does not converge (or the bench cannot run), never on timing or
# memory.
set -euo pipefail
cd "$(dirname "$0")/.."

KOPF_VERSION=1.45.2
if ! bench/.venv/bin/kopf --version 2>/dev/null | grep -q "$KOPF_VERSION"; then
  # Start over: a venv that was moved or copied keeps scripts pointing at its old path.
  rm -rf bench/.venv
  python3 -m venv bench/.venv || {
    echo "error: cannot create bench/.venv; the benchmark needs python3 with venv (Debian: python3-venv)." >&2
    exit 1
  }
  bench/.venv/bin/pip install -q --disable-pip-version-check "kopf==$KOPF_VERSION"
fi

cargo build -q --release --locked -p ctop -p ctop-bench
bin="${CARGO_TARGET_DIR:-target}/release"
# How much of crates/cli/hot-functions.txt this build still defines (crates/cli/build.rs):
# informational, a stale list costs memory, not correctness.
if command -v nm >/dev/null; then
  defined=$(nm --defined-only "$bin/ctop" 2>/dev/null | awk '{print $3}' | sort -u | comm -12 - <(sort -u crates/cli/hot-functions.txt) | wc -l)
  echo "hot-functions.txt: $defined of $(wc -l <crates/cli/hot-functions.txt) names are functions of this build (the list also holds other builds' names; when this falls after a code change or a dependency or toolchain update, run bench/hot-functions.sh --add with this build)"
fi
"$bin/ctop-bench" --sizes 100 --steady-secs 3 --timeout-secs 300 \
  --ctop "$bin/ctop" --native "$bin/webapp-native" \
  --out "${CARGO_TARGET_DIR:-target}/bench-ci" --require-convergence
cat "${CARGO_TARGET_DIR:-target}/bench-ci/results.md"
"$bin/ctop-bench-soak" --sizes 50 --waves 2 --impls ctop,native,kopf --timeout-secs 120 \
  --ctop "$bin/ctop" --native "$bin/webapp-native" \
  --out "${CARGO_TARGET_DIR:-target}/bench-ci-soak" --require-convergence
cat "${CARGO_TARGET_DIR:-target}/bench-ci-soak/results.md"
