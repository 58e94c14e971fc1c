# Sourced by bench/hot-functions.sh and bench/instructions.sh: what both do before they run
# `ctop run` under valgrind.

# Fail with what to install unless every tool named is on PATH.
need_tools() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "error: $tool is not on PATH (Debian: apt-get install valgrind binutils curl; kubectl as for the tests)" >&2; exit 1; }
  done
}

# Processes started with `pids+=($!)` are killed on exit.
pids=()
kill_started() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }

# Start `$1 sim` (plain HTTP, no workloads) with its kubeconfig and log in $2, wait until it
# serves, and point kubectl at it.
start_kubesim() {
  local ctop=$1 work=$2
  "$ctop" sim --addr 127.0.0.1:0 --plain-http --no-workloads --kubeconfig "$work/kubeconfig" >"$work/sim.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 200); do [ -s "$work/kubeconfig" ] && break; sleep 0.1; done
  [ -s "$work/kubeconfig" ] || { echo "error: kubesim did not start: $(tail -3 "$work/sim.log")" >&2; exit 1; }
  export KUBECONFIG="$work/kubeconfig"
}
