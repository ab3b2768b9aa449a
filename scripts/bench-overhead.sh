#!/usr/bin/env bash
# How much flakehunt costs next to the test it runs.
#
# 1. Throughput: `flakehunt sweep --profiles default --runs N --record DIR -- true` against a
#    minimal spawn-and-wait loop (scripts/spawn_loop.rs, `plain`) on the same machine in the same
#    run, sequentially and with --jobs 2. Each is timed REPEAT times, alternating, and the best
#    time of each is kept (the least disturbed by whatever else the machine does). Target: ratio
#    >= 0.95. Also shown: the ratio against a loop that captures output as any harness must
#    (`capture`: own process group, stdin from /dev/null, stdout and stderr piped and read), and
#    against the plain loop given the absolute path of `true`: flakehunt looks a program up in
#    PATH once per hunt, where the loop's children search PATH on every spawn.
# 2. Memory: peak RSS of flakehunt for 1,000 and 100,000 attempts; it must not grow.
#
# Usage: scripts/bench-overhead.sh   (env: RUNS=5000 REPEAT=5 SMALL=1000 LARGE=100000)
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5000}
REPEAT=${REPEAT:-5}
SMALL=${SMALL:-1000}
LARGE=${LARGE:-100000}
TIME=/usr/bin/time
if ! [ -x "$TIME" ]; then
  echo "bench-overhead: $TIME is missing; install it (apt-get install time)" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cargo build --release --quiet -p flakehunt --bin flakehunt
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
FLAKEHUNT=$target_dir/release/flakehunt
# The baseline is std only: rustc builds it in seconds, without the workspace's dev-dependencies.
LOOP=$tmp/spawn_loop
rustc -O --edition 2021 -o "$LOOP" scripts/spawn_loop.rs
n=0

now() { date +%s.%N; }

# Seconds flakehunt takes for RUNS attempts of `true` with $1 jobs.
time_flakehunt() {
  n=$((n + 1))
  local start end
  start=$(now)
  "$FLAKEHUNT" sweep --profiles default --runs "$RUNS" --jobs "$1" --record "$tmp/run-$n" -- true >/dev/null 2>&1
  end=$(now)
  rm -rf "$tmp/run-$n"
  python3 -c "print(f'{$end - $start:.6f}')"
}

# Seconds the bare loop takes for RUNS spawns of `true` with $1 threads, in mode $2 (program $3).
time_loop() {
  local start end
  start=$(now)
  "$LOOP" "$RUNS" "$1" "${3:-true}" "$2" >/dev/null
  end=$(now)
  python3 -c "print(f'{$end - $start:.6f}')"
}

min() { printf '%s\n' "$@" | sort -g | head -1; }

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -sr)"
echo "throughput: $RUNS attempts of 'true', best of $REPEAT"
TRUE_PATH=$(command -v true)
printf '%-12s %10s %10s %10s %12s %10s %13s %8s %14s %14s\n' mode "loop s" "abs s" "capture s" "flakehunt s" "loop /s" "flakehunt /s" ratio "vs abs loop" "vs capture"
for jobs in 1 2; do
  loops=() abs=() captures=() hunts=()
  for _ in $(seq "$REPEAT"); do
    loops+=("$(time_loop "$jobs" plain)")
    abs+=("$(time_loop "$jobs" plain "$TRUE_PATH")")
    captures+=("$(time_loop "$jobs" capture)")
    hunts+=("$(time_flakehunt "$jobs")")
  done
  l=$(min "${loops[@]}")
  a=$(min "${abs[@]}")
  c=$(min "${captures[@]}")
  h=$(min "${hunts[@]}")
  python3 - "$jobs" "$l" "$a" "$c" "$h" "$RUNS" <<'PY'
import sys
jobs, l, a, c, h, runs = int(sys.argv[1]), *map(float, sys.argv[2:6]), int(sys.argv[6])
mode = "sequential" if jobs == 1 else f"--jobs {jobs}"
print(f"{mode:<12} {l:10.3f} {a:10.3f} {c:10.3f} {h:12.3f} {runs / l:10.0f} {runs / h:13.0f} {l / h:8.3f} {a / h:14.3f} {c / h:14.3f}")
PY
done

echo "peak RSS of flakehunt (--jobs 2)"
rss() {
  n=$((n + 1))
  "$TIME" -f '%M' -o "$tmp/rss" "$FLAKEHUNT" sweep --profiles default --runs "$1" --jobs 2 --record "$tmp/run-$n" -- true >/dev/null 2>&1
  rm -rf "$tmp/run-$n"
  cat "$tmp/rss"
}
small=$(rss "$SMALL")
large=$(rss "$LARGE")
python3 - "$SMALL" "$small" "$LARGE" "$large" <<'PY'
import sys
s, sk, l, lk = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print(f"{s:>9} attempts: {sk} KiB")
print(f"{l:>9} attempts: {lk} KiB")
print(f"ratio: {lk / sk:.3f}")
PY
