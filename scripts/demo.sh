#!/usr/bin/env bash
# The Quick start's main command (for now): start kubesim, the embedded Kubernetes API
# server, show a kubectl session against it, then keep serving until Ctrl-C so you can
# explore with the printed kubectl command.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
work="${CTOP_DEMO_DIR:-$here/.ctop/demo}"
mkdir -p "$work"
kubeconfig="$work/kubeconfig"
rm -f "$kubeconfig"
port="${CTOP_DEMO_PORT:-16443}"

# Build (first use) in the foreground, then serve in the background.
"$here/ctop" --version >/dev/null
"$here/ctop" sim --addr "127.0.0.1:$port" --kubeconfig "$kubeconfig" &
sim=$!
trap 'kill $sim 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do [ -s "$kubeconfig" ] && break; sleep 0.1; done
[ -s "$kubeconfig" ] || { echo "kubesim did not start; see the log above" >&2; exit 1; }

k() { echo "\$ kubectl $*"; kubectl --kubeconfig "$kubeconfig" --cache-dir "$work/cache" "$@"; echo; }
k version
k get namespaces
k apply -f "$here/crates/kubesim/testdata/widget-crd.yaml"
k wait --for=condition=established crd/widgets.example.com
k apply -f "$here/crates/kubesim/testdata/widgets.yaml"
k get widgets
k apply --server-side -f "$here/crates/kubesim/testdata/widgets.yaml" --field-manager demo
k get widget small -o jsonpath='{.metadata.managedFields[*].manager}{"\n"}'
echo "\$ kubectl apply -f bad-widget.yaml   # rejected by the CRD schema:"
kubectl --kubeconfig "$kubeconfig" --cache-dir "$work/cache" apply -f "$here/crates/kubesim/testdata/bad-widget.yaml" || true
echo
echo "kubesim keeps serving at https://127.0.0.1:$port. Try:"
echo "  kubectl --kubeconfig $kubeconfig get widgets -w"
echo "Press Ctrl-C to stop."
wait $sim
