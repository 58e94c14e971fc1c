#!/usr/bin/env bash
# Writes crates/cli/hot-functions.txt: the functions `ctop run` executes while it starts,
# reconciles, updates and deletes WebApps of examples/webapp on kubesim, and answers its
# health and metrics endpoints, as `valgrind --tool=callgrind` counts them (every function
# run, not a sample). crates/cli/build.rs has the linker place them first, so a running
# operator maps a few megabytes of code instead of pages all over the binary
# (bench/README.md, "Base memory and the shipped build").
#
#   cargo build --release -p ctop && cp target/release/ctop /tmp/ctop-alone
#   cargo build --release -p ctop -p ctop-bench     # what bench/ci.sh and the bench build
#   cargo build --profile dist --locked -p ctop      # what deploy/Dockerfile builds (~20 min)
#   bench/hot-functions.sh /tmp/ctop-alone target/release/ctop target/dist/ctop
#   cargo build --release -p ctop                   # links with the new list
#
# The names carry hashes of the profile, of the dependencies' versions and of the features
# cargo unified for the packages built together (`-p ctop` alone, as `./ctop` builds, and
# with `-p ctop-bench` differ; `dist` is another profile), so the list is the union over the
# binaries given. Run it
# again after a dependency update or a new toolchain, and after changing code: the
# release profile's ThinLTO renames the locals it promotes (`name.llvm.<hash of the
# codegen unit>`), so an edit renames some of its crate's hot functions (a two-file change
# to the runtime and the applier dropped 420 of 4,850 names and added 5 MB to the base RSS
# of the release build). A stale list costs memory, never correctness. `--add` keeps the
# names already listed (those of the builds not given, e.g. `dist` after a release-only
# refresh) and adds the new ones. Needs valgrind and kubectl; takes about ten seconds per
# binary.
#
# Cargo reruns crates/cli/build.rs, which hands the list to the linker, only when the list
# is newer than the script's last run in that target directory, and another checkout
# sharing the directory (a worktree of an older commit, for an A/B build) runs it with its
# own list. Then this checkout links with that list until its own changes: the base RSS of
# a release build read 22-24 MB instead of 15.9 once so (bench/README.md, "Base RSS and the
# page cache"). `touch crates/cli/hot-functions.txt` after building another checkout there.
set -euo pipefail
cd "$(dirname "$0")/.."
add=false
if [ "${1:-}" = --add ]; then
  add=true
  shift
fi
[ $# -gt 0 ] || set -- target/release/ctop
out=crates/cli/hot-functions.txt
. bench/kubesim.sh
need_tools valgrind kubectl nm curl

top=$(mktemp -d)
cleanup() { kill_started; rm -rf "$top"; }
trap cleanup EXIT

# The functions one binary runs, written to $1.
trace() {
  local names=$1 work
  work=$(mktemp -d -p "$top")
  if ! nm "$ctop" 2>/dev/null | grep ' main$' >/dev/null; then
    echo "error: $ctop has no symbol table; build it with the release profile of Cargo.toml (strip = \"debuginfo\")" >&2
    exit 1
  fi

  start_kubesim "$ctop" "$work"

  "$ctop" bundle examples/webapp -o "$work/webapp.js.gz" >/dev/null 2>&1
  "$ctop" manifests examples/webapp 2>/dev/null | kubectl apply --server-side -f - >/dev/null
  webapp() {
    printf -- '---\napiVersion: apps.example.com/v1\nkind: WebApp\nmetadata: {name: %s, namespace: default}\nspec: {image: "%s", replicas: 1, port: 8080}\n' "$1" "$2"
}
for n in a b c; do webapp "$n" nginx:1.27; done | kubectl apply -f - >/dev/null

valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.out" \
  "$ctop" run --bundle "$work/webapp.js.gz" --kubeconfig "$work/kubeconfig" \
  --health-port 18081 --metrics-port 18080 >"$work/run.log" 2>&1 &
pids+=($!)
vg=$!

reconciled() { # name generation
  kubectl wait --timeout=180s --for=jsonpath='{.status.observedGeneration}'="$2" "webapp/$1" >/dev/null
}
for n in a b c; do reconciled "$n" 1; done
webapp a nginx:1.28 | kubectl apply -f - >/dev/null
reconciled a 2
kubectl delete webapp c --wait=true >/dev/null
curl -fsS http://127.0.0.1:18081/healthz >/dev/null
curl -fsS http://127.0.0.1:18081/readyz >/dev/null
curl -fsS http://127.0.0.1:18080/metrics >/dev/null

kill -INT "$vg"
for _ in $(seq 1 300); do kill -0 "$vg" 2>/dev/null || break; sleep 0.1; done
[ -s "$work/callgrind.out" ] || { echo "error: callgrind wrote nothing: $(tail -3 "$work/run.log")" >&2; exit 1; }

# The functions callgrind saw that the binary defines (not libc's), one per line.
nm --defined-only "$ctop" | awk '$2 ~ /^[tTwW]$/ {print $3}' | sort -u >"$work/defined"
grep -oE '^c?fn=\([0-9]+\) .+' "$work/callgrind.out" | sed -E "s/^c?fn=\([0-9]+\) //; s/'[0-9]+$//" | sort -u \
  | comm -12 - "$work/defined" >"$names"
kill "${pids[0]}" 2>/dev/null || true
pids=()
echo "$ctop: $(wc -l <"$names") functions"
}

i=0
for bin in "$@"; do
  ctop=$(realpath "$bin")
  trace "$top/names.$i"
  i=$((i + 1))
done
if $add && [ -f "$out" ]; then
  cp "$out" "$top/names.kept"
fi
sort -u "$top"/names.* >"$out"
echo "$out: $(wc -l <"$out") functions"
