#!/usr/bin/env bash
# What `flakehunt snapshot` costs: the median wall time of N snapshots of this repository (the
# interpreter's distributions, go env and go list -m all where go is installed, rustc -vV and
# Cargo.lock, every default tool line), against what the workflow's own snapshot runs,
# `pip freeze`, and against flakehunt starting and exiting (`flakehunt --version`), measured in
# the same run. Prints the snapshot's own capture_seconds too (without process start).
# Usage: scripts/bench-snapshot.sh [N]   (default 10; debug build unless FLAKEHUNT=path)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
if [ -z "${FLAKEHUNT:-}" ]; then
  cargo build --quiet --locked -p flakehunt
  FLAKEHUNT=target/debug/flakehunt
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Median seconds of N runs of the command given as arguments.
median() {
  local times=()
  for _ in $(seq "$n"); do
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1 || true
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc)")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

start=$(median "$FLAKEHUNT" --version)
snap=$(median "$FLAKEHUNT" snapshot --output "$tmp/s.json")
freeze=$(median python3 -m pip freeze)
"$FLAKEHUNT" snapshot --output "$tmp/s.json"
inner=$(python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(s['capture_seconds'], len((s.get('python') or {}).get('packages', {})), len(((s.get('rust') or {}).get('cargo_lock') or {}).get('packages', {})))" "$tmp/s.json")
read -r capture packages crates <<<"$inner"
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
echo "flakehunt --version:          ${start} s"
echo "flakehunt snapshot:           ${snap} s  (capture_seconds ${capture}; ${packages} Python distributions, ${crates} crates)"
echo "python3 -m pip freeze:        ${freeze} s"
echo "snapshot / pip freeze:        $(echo "scale=2; $snap / $freeze" | bc)"
