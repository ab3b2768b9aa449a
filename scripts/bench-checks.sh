#!/usr/bin/env bash
# What the checks of failures the exit status hides cost per attempt, as ratios against the
# same attempt without them, measured in one run:
#   1. Go: the clean fixture package (fixtures/checks/go/clean: workers, timers, os/signal,
#      parallel tests) built with `go test -c` and with the goroutine leak check given through
#      -overlay, as flakehunt builds it; each binary run N times in turn, wall time per run.
#   2. Python: a warm pytest attempt (fixtures/checks/python/test_worker.py::test_clean) through
#      `flakehunt sweep --warm` with --thread-check and without; seconds per attempt from the
#      record (the span from the first attempt's start to the last one's end, over the attempts).
#   3. Python: the same for a cold script (fixtures/checks/python/clean.py), --no-warm.
#
# Usage: scripts/bench-checks.sh   (env: N=200 runs per case and side; PROFILE=dev uses the
#        debug build of flakehunt)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200}
PROFILE=${PROFILE:-release}
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOCACHE=${GOCACHE:-$tmp/gocache} GOPATH=$tmp/gopath GOFLAGS= GOPROXY=off GOTOOLCHAIN=local

# 1. Go, with and without the overlay.
cp -r fixtures/checks/go "$tmp/go"
sed 's/^package PACKAGE$/package clean/' crates/flakehunt-core/src/checks/leakcheck.go >"$tmp/leakcheck_test.go"
printf '{"Replace":{"%s/go/clean/flakehunt_leakcheck_test.go":"%s/leakcheck_test.go"}}' "$tmp" "$tmp" >"$tmp/overlay.json"
(cd "$tmp/go" && go test -c -o "$tmp/plain.test" ./clean && go test -c -vet=off -overlay "$tmp/overlay.json" -o "$tmp/checked.test" ./clean)
time_runs() { # BINARY: seconds for N runs, alternating would mix caches less fairly than blocks
  local start end
  start=$(date +%s.%N)
  for _ in $(seq "$N"); do (cd "$tmp/go/clean" && "$1" >/dev/null); done
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
time_runs "$tmp/plain.test" >/dev/null # warm the page cache
plain=$(time_runs "$tmp/plain.test")
checked=$(time_runs "$tmp/checked.test")
plain2=$(time_runs "$tmp/plain.test")
plain=$(echo "($plain + $plain2) / 2" | bc -l)
printf 'go test binary (clean package, %d runs): %.2f ms plain, %.2f ms with the leak check: x%.2f\n' \
  "$N" "$(echo "$plain * 1000 / $N" | bc -l)" "$(echo "$checked * 1000 / $N" | bc -l)" "$(echo "$checked / $plain" | bc -l)"

# 2 and 3. Python, through flakehunt.
if [ "$PROFILE" = dev ]; then cargo build -q -p flakehunt; fh=$root/target/debug/flakehunt
else cargo build -q --release -p flakehunt; fh=$root/target/release/flakehunt; fi
cp -r fixtures/checks/python "$tmp/py"
per_attempt() { # RECORD: seconds per attempt over the span of the attempts
  python3 - "$1" <<'PY'
import json, sys
from datetime import datetime
rows = [json.loads(l) for l in open(sys.argv[1] + "/attempts.jsonl")]
start = lambda a: datetime.fromisoformat(a["started_at"].replace("Z", "+00:00")).timestamp()
first = min(start(a) for a in rows)
last = max(start(a) + a["seconds"] for a in rows)
print((last - first) / len(rows))
PY
}
bench_py() { # LABEL ARGS...: one sweep with the check, one without, twice each, alternating
  local label=$1; shift
  local on=0 off=0 i
  for i in 1 2; do
    (cd "$tmp/py" && "$fh" sweep --quiet --profiles default --runs "$N" --thread-check --record "$tmp/on-$label-$i" "$@" >/dev/null 2>&1 || true)
    (cd "$tmp/py" && "$fh" sweep --quiet --profiles default --runs "$N" --no-thread-check --record "$tmp/off-$label-$i" "$@" >/dev/null 2>&1 || true)
    on=$(echo "$on + $(per_attempt "$tmp/on-$label-$i")" | bc -l)
    off=$(echo "$off + $(per_attempt "$tmp/off-$label-$i")" | bc -l)
  done
  printf '%s (%d attempts x2 per side): %.2f ms without the thread check, %.2f ms with it: x%.2f\n' \
    "$label" "$N" "$(echo "$off * 500" | bc -l)" "$(echo "$on * 500" | bc -l)" "$(echo "$on / $off" | bc -l)"
}
bench_py "warm pytest attempt" --warm --pytest test_worker.py::test_clean
bench_py "cold script attempt" --no-warm -- python3 clean.py
