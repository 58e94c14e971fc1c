#!/usr/bin/env bash
# Counts the instructions `ctop run` executes for N creates and N spec updates of
# examples/webapp's WebApps on kubesim (`valgrind --tool=callgrind`, every instruction, no
# sampling), and prints them per call into the script (a reconcile that ran it). CPU seconds of two runs of
# the same build differ by up to a third on this machine; the count moves by a few percent
# (how the events of a burst batch up), so it shows changes of that size that
# `ctop-bench`'s CPU figures cannot. It is not CPU time: valgrind runs SHA-256 without the
# CPU's SHA extensions, for one, so the applier's fingerprints weigh ~10x what they cost.
#
#   bench/instructions.sh target/release/ctop [N=200] [callgrind.out to keep]
#   callgrind_annotate --inclusive=yes <kept file>     # where they go
#
# Needs valgrind and kubectl (as bench/hot-functions.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ctop=$(realpath "${1:-target/release/ctop}")
n=${2:-200}
keep=${3:-}
. bench/kubesim.sh
need_tools valgrind kubectl
work=$(mktemp -d)
cleanup() { kill_started; rm -rf "$work"; }
trap cleanup EXIT

start_kubesim "$ctop" "$work"
"$ctop" manifests examples/webapp 2>/dev/null | kubectl apply --server-side -f - >/dev/null

valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
  "$ctop" run examples/webapp --kubeconfig "$work/kubeconfig" --leader-elect=false \
  --health-port 0 --metrics-port 0 >"$work/run.log" 2>&1 &
vg=$!
pids+=("$vg")

webapps() { # image
  for i in $(seq 1 "$n"); do
    printf -- '---\napiVersion: apps.example.com/v1\nkind: WebApp\nmetadata: {name: app-%05d, namespace: default}\nspec: {image: "%s", replicas: 1, port: 8080}\n' "$i" "$1"
  done
}
count() { # jsonpath pattern
  kubectl get "$1" -o jsonpath="$2" | grep -c "$3" || true
}
until_count() { # what jsonpath pattern
  for _ in $(seq 1 1200); do
    [ "$(count "$1" "$2" "$3")" = "$n" ] && return 0
    sleep 0.5
  done
  echo "error: not every $1 reached $3 (see $work/run.log)" >&2
  exit 1
}
webapps nginx:1.27 | kubectl apply -f - >/dev/null
# Without workloads no Deployment becomes available: a written status says Pending.
until_count webapps '{range .items[*]}{.status.phase}{"\n"}{end}' Pending
webapps nginx:1.28 | kubectl apply -f - >/dev/null
until_count deployments '{range .items[*]}{.spec.template.spec.containers[0].image}{"\n"}{end}' 1.28
# Until the echoes of the last writes are in.
sleep 3
kill -INT "$vg"
wait "$vg" || true

total=$(sed -n 's/^summary: //p' "$work/callgrind.out")
# The calls into the script: `Vm::dispatch` runs one handler call (synchronous, so callgrind
# counts calls, not polls).
reconciles=$(callgrind_annotate --inclusive=yes --tree=calling "$work/callgrind.out" 2>/dev/null \
  | grep -oE '>   \S+:ctop_runtime::vm::Vm::dispatch \(([0-9,]+)x\)' | grep -oE '[0-9,]+x' \
  | tr -d ',x' | awk '{s += $1} END {print s + 0}')
echo "instructions: $total for $n creates and $n updates"
if [ -n "$reconciles" ] && [ "$reconciles" -gt 0 ]; then
  echo "script calls: $reconciles; instructions per call: $((total / reconciles))"
fi
[ -z "$keep" ] || cp "$work/callgrind.out" "$keep"
