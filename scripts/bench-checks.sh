#!/usr/bin/env bash
# What the checks of failures the exit status hides cost per attempt, as ratios against the
# same attempt without them, measured in one run. Each case runs ROUNDS rounds, each round the
# side without the check then the side with it (N runs each), so that a change of the machine's
# load falls on both sides; it prints the ratio over all rounds and the lowest and highest
# round's ratio (their spread says how firm the figure is on this machine now):
#   1. Go: the clean fixture package (fixtures/checks/go/clean: workers, timers, os/signal,
#      parallel tests) built with `go test -c` and with the goroutine leak check given through
#      -overlay, as flakehunt builds it; each binary run N times, wall time per run.
#   2. Go: the same package built with -race (--race) against the plain build.
#   3. Python: a warm pytest attempt (fixtures/checks/python/test_worker.py::test_clean) through
#      `flakehunt sweep --warm` with --thread-check and without; seconds per attempt from the
#      record (the span from the first attempt's start to the last one's end, over the attempts).
#   4. Python: the same for a cold script (fixtures/checks/python/clean.py), --no-warm.
#   5. Rust: a passing test with four threads that prints (fixtures/checks/rust, joined_workers)
#      through `flakehunt sweep --cargo-test` with --thread-check (libtest's --show-output, the
#      successes read for panics) and without.
#
# Usage: scripts/bench-checks.sh   (env: N=100 runs per side and round; ROUNDS=4; PROFILE=dev
#        uses the debug build of flakehunt; CASES="go race pytest script rust" picks cases)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-100}
ROUNDS=${ROUNDS:-4}
PROFILE=${PROFILE:-release}
CASES=${CASES:-go race pytest script rust}
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOCACHE=${GOCACHE:-$tmp/gocache} GOPATH=$tmp/gopath GOFLAGS= GOPROXY=off GOTOOLCHAIN=local
export CARGO_TARGET_DIR=$tmp/target
wants() { [[ " $CASES " == *" $1 "* ]]; }

# report LABEL UNIT OFF_TOTALS ON_TOTALS: the ratio of the sums, and the rounds' extremes.
report() {
  python3 - "$@" <<'PY'
import sys
label, unit, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
off = [float(x) for x in sys.argv[4].split()]
on = [float(x) for x in sys.argv[5].split()]
ratios = sorted(b / a for a, b in zip(off, on))
per = lambda xs: sum(xs) / (len(xs) * runs) * 1000
print("%s (%d rounds of %d per side): %.2f ms without, %.2f ms with: x%.3f (rounds x%.3f .. x%.3f)"
      % (label, len(off), runs, per(off), per(on), sum(on) / sum(off), ratios[0], ratios[-1]))
PY
}

# 1 and 2. Go binaries, with and without the overlay, and with -race.
if wants go || wants race; then
  cp -r fixtures/checks/go "$tmp/go"
  sed 's/^package PACKAGE$/package clean/' crates/flakehunt-core/src/checks/leakcheck.go >"$tmp/leakcheck_test.go"
  printf '{"Replace":{"%s/go/clean/flakehunt_leakcheck_test.go":"%s/leakcheck_test.go"}}' "$tmp" "$tmp" >"$tmp/overlay.json"
  (cd "$tmp/go" && go test -c -o "$tmp/plain.test" ./clean)
  wants go && (cd "$tmp/go" && go test -c -vet=off -overlay "$tmp/overlay.json" -o "$tmp/checked.test" ./clean)
  wants race && (cd "$tmp/go" && go test -c -race -o "$tmp/race.test" ./clean)
  time_runs() { # BINARY: seconds for N runs
    local start end
    start=$(date +%s.%N)
    for _ in $(seq "$N"); do (cd "$tmp/go/clean" && "$1" >/dev/null); done
    end=$(date +%s.%N)
    echo "$end - $start" | bc -l
  }
  time_runs "$tmp/plain.test" >/dev/null # warm the page cache
  bench_go() { # LABEL BINARY
    local off="" on="" r
    for r in $(seq "$ROUNDS"); do
      off="$off $(time_runs "$tmp/plain.test")"
      on="$on $(time_runs "$2")"
    done
    report "$1" ms "$N" "$off" "$on"
  }
  wants go && bench_go "go test binary, leak check (clean package)" "$tmp/checked.test"
  wants race && bench_go "go test binary, race detector (clean package)" "$tmp/race.test"
fi

# 3 to 5. Through flakehunt.
if [ "$PROFILE" = dev ]; then cargo build -q -p flakehunt; fh=$root/target/debug/flakehunt
else cargo build -q --release -p flakehunt; fh=$root/target/release/flakehunt; fi
cp -r fixtures/checks/python "$tmp/py"
cp -r fixtures/checks/rust "$tmp/rust"
per_attempt() { # RECORD: seconds per attempt over the span of the attempts, times N
  python3 - "$1" "$N" <<'PY'
import json, sys
from datetime import datetime
rows = [json.loads(l) for l in open(sys.argv[1] + "/attempts.jsonl")]
start = lambda a: datetime.fromisoformat(a["started_at"].replace("Z", "+00:00")).timestamp()
first = min(start(a) for a in rows)
last = max(start(a) + a["seconds"] for a in rows)
failed = sum(a["outcome"] != "pass" for a in rows)
if failed:
    sys.exit("%s: %d attempts did not pass" % (sys.argv[1], failed))
print((last - first) / len(rows) * int(sys.argv[2]))
PY
}
bench_fh() { # LABEL DIR ARGS...: sweeps without the check and with it, alternating by round
  local label=$1 dir=$2; shift 2
  local off="" on="" r
  for r in $(seq "$ROUNDS"); do
    (cd "$dir" && "$fh" sweep --quiet --profiles default --runs "$N" --no-thread-check --record "$tmp/off-$r" "$@" >/dev/null 2>&1 || true)
    (cd "$dir" && "$fh" sweep --quiet --profiles default --runs "$N" --thread-check --record "$tmp/on-$r" "$@" >/dev/null 2>&1 || true)
    off="$off $(per_attempt "$tmp/off-$r")"
    on="$on $(per_attempt "$tmp/on-$r")"
    rm -rf "$tmp/off-$r" "$tmp/on-$r"
  done
  report "$label" ms "$N" "$off" "$on"
}
wants pytest && bench_fh "warm pytest attempt, thread check" "$tmp/py" --warm --pytest test_worker.py::test_clean
wants script && bench_fh "cold script attempt, thread check" "$tmp/py" --no-warm -- python3 clean.py
if wants rust; then
  (cd "$tmp/rust" && cargo test -q --no-run >/dev/null 2>&1)
  bench_fh "cargo test attempt, thread check (--show-output)" "$tmp/rust" --cargo-test joined_workers
fi
