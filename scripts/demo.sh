#!/usr/bin/env bash
# `ctop dev examples/webapp` with a scripted kubectl session: kubesim in-process, the
# WebApp operator and its sample, then the operator keeps running until Ctrl-C so you can
# explore with the printed kubectl command (and edit examples/webapp/operator.ct: it reloads).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
work="${CTOP_DEMO_DIR:-$here/.ctop/demo}"
mkdir -p "$work"
kubeconfig="$work/kubeconfig"
rm -f "$kubeconfig"

# Build (first use) in the foreground, then run in the background.
"$here/ctop" --version >/dev/null
"$here/ctop" dev "$here/examples/webapp" --kubeconfig "$kubeconfig" &
dev=$!
trap 'kill $dev 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do [ -s "$kubeconfig" ] && break; sleep 0.1; done
[ -s "$kubeconfig" ] || { echo "ctop dev did not start; see the log above" >&2; exit 1; }

k() { echo "\$ kubectl $*"; kubectl --kubeconfig "$kubeconfig" --cache-dir "$work/cache" "$@"; echo; }
for _ in $(seq 1 100); do
  kubectl --kubeconfig "$kubeconfig" --cache-dir "$work/cache" get deployment shop >/dev/null 2>&1 && break
  sleep 0.2
done
k get webapps
k get deployments,services,secrets -l app.kubernetes.io/part-of=webapp
k patch webapp shop --type=merge -p '{"spec":{"replicas":3}}'
sleep 1
k get deployment shop -o jsonpath='{.spec.replicas}{"\n"}'
echo "ctop dev keeps running. Try:"
echo "  kubectl --kubeconfig $kubeconfig get webapps -w"
echo "Press Ctrl-C to stop."
wait $dev
