#!/usr/bin/env bash
# Warm attempts against cold ones: attempts per second of the same Python target, cold (a new
# interpreter per attempt, through flakehunt's spawn path) and warm (forks of one warm parent,
# crates/flakehunt-core/src/warm), one attempt at a time, in one run, for
#   1. a trivial pytest test,
#   2. a pytest test whose module imports numpy (installed for the python3 on PATH if missing),
#   3. a plain Python script that imports numpy,
#   4. a no-op script: its warm attempt is flakehunt's overhead per warm attempt (request, fork,
#      the child's set-up, its exit and the status report), since its test takes no time,
#   5. a fixture race (two threads, a sleep inside the critical section), whose failure rate
#      cold and warm should agree within noise.
# First through the library (crates/flakehunt-core/examples/warm_bench.rs drives both modes),
# then through the real binary: `flakehunt sweep --profiles default --warm` against `--no-warm`
# for the same cases, attempts per second from the record (attempts over the span from the first
# attempt's start to the last one's end, so warm-ups of recycled parents are inside it) and from
# the wall clock of the whole invocation (flakehunt's own start and the first warm-up included).
# Targets: warm >= 10x cold for the pytest cases; overhead under 2 ms per warm attempt (the no-op
# script's time per attempt with one parent, less the bare fork of the floor line).
#
# Usage: scripts/bench-warm.sh   (env: N=100 attempts per case and mode; LIBRARY=0 measures only
#        through the binary; RACE_N sizes the race; PROFILE=dev uses the
#        debug build, which spares a release build of the dependencies on a busy machine)
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-100}
PROFILE=${PROFILE:-release}
if ! python3 -c 'import pytest' 2>/dev/null; then
  echo "bench-warm: python3 has no pytest: python3 -m pip install pytest" >&2
  exit 2
fi
if ! python3 -c 'import numpy' 2>/dev/null; then
  python3 -m pip install -q numpy || python3 -m pip install -q --break-system-packages numpy
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/test_trivial.py" <<'PY'
def test_trivial():
    assert 1 + 1 == 2
PY
cat >"$tmp/test_numpy.py" <<'PY'
import numpy as np

def test_numpy():
    assert np.arange(10).sum() == 45
PY
cat >"$tmp/script_numpy.py" <<'PY'
import numpy as np

assert np.arange(10).sum() == 45
PY
: >"$tmp/noop.py"
# The race: two threads increment a counter without a lock; an increment is lost when the GIL
# switches threads between a read and its write, so the failure rate depends on how long the
# threads run against the 5 ms switch interval (RACE_N increments each; 12,000 fails 20-60 % of
# attempts on the 2-CPU machine this was written on: a rate away from 0 and 1, so that the cold
# and warm rates can be compared).
cat >"$tmp/test_race.py" <<PY
import threading

def test_race():
    box = {"n": 0}
    def bump():
        for _ in range(${RACE_N:-12000}):
            v = box["n"]
            v = int(str(v)) + 1  # the window between the read and the write
            box["n"] = v
    threads = [threading.Thread(target=bump) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert box["n"] == 2 * ${RACE_N:-12000}
PY

cargo build --profile "$PROFILE" --quiet -p flakehunt-core --example warm_bench
cargo build --profile "$PROFILE" --quiet -p flakehunt --bin flakehunt
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
BENCH=$target_dir/$([ "$PROFILE" = dev ] && echo debug || echo "$PROFILE")/examples/warm_bench
FLAKEHUNT=$target_dir/$([ "$PROFILE" = dev ] && echo debug || echo "$PROFILE")/flakehunt
PYTEST=(python3 -m pytest -q -p no:randomly -p no:rerunfailures -p no:flaky -p no:cacheprovider)

echo "N=$N attempts ($PROFILE build) per case and mode, one at a time, on $(nproc) CPUs (load: $(cut -d' ' -f1-3 /proc/loadavg))"
if [ "${LIBRARY:-1}" = 1 ]; then
printf '%-16s ' "pytest trivial"; "$BENCH" "$N" "$tmp" -- "${PYTEST[@]}" test_trivial.py::test_trivial
printf '%-16s ' "pytest numpy"; "$BENCH" "$N" "$tmp" -- "${PYTEST[@]}" test_numpy.py::test_numpy
printf '%-16s ' "script numpy"; "$BENCH" "$N" "$tmp" -- python3 script_numpy.py
printf '%-16s ' "no-op script"; "$BENCH" "$N" "$tmp" -- python3 noop.py
fi
# The floor under a warm attempt, with no flakehunt in it: a Python process forking a child that
# exits at once, and reaping it. A no-op warm attempt minus this is flakehunt's overhead.
floor=$(python3 - "$N" <<'PY'
import os, sys, time
n = int(sys.argv[1]) * 4
t = time.perf_counter()
for _ in range(n):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
print("%.3f" % ((time.perf_counter() - t) / n * 1e3))
PY
)
printf '%-16s fork, exit and reap in Python alone: %s ms\n' floor "$floor"
if [ "${LIBRARY:-1}" = 1 ]; then
printf '%-16s ' "pytest race"; "$BENCH" "$N" "$tmp" -- "${PYTEST[@]}" test_race.py::test_race
fi

# Through the binary: one sweep per case and mode, N attempts of the default profile.
rates() { # rates RECORD WALL_SECONDS: "attempts failures record-rate wall-rate ms-per-attempt modes"
  python3 - "$1" "$2" <<'PY'
import json, sys, datetime
rec, wall = sys.argv[1], float(sys.argv[2])
def t(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
attempts = [json.loads(l) for l in open(rec + "/attempts.jsonl")]
first = min(t(a["started_at"]) for a in attempts)
last = max(t(a["started_at"]) + a["seconds"] for a in attempts)
span = max(last - first, 1e-9)
failures = sum(a["outcome"] in ("fail", "crash", "timeout", "wrong-output") for a in attempts)
modes = sorted({a.get("mode", "cold") for a in attempts})
# The cost of one attempt: the span over the attempts (started_at has millisecond resolution,
# so a per-attempt gap would be quantised to whole milliseconds; over the span it is not).
print(len(attempts), failures, "%.1f" % (len(attempts) / span), "%.1f" % (len(attempts) / wall), "%.3f" % (span / len(attempts) * 1e3), ",".join(modes))
PY
}
sweep() { # sweep MODE ARGV...: prints rates
  local mode=$1
  shift
  local rec
  rec=$(mktemp -d "$tmp/rec-XXXX")
  rmdir "$rec"
  local start end
  start=$(date +%s.%N)
  (cd "$tmp" && "$FLAKEHUNT" sweep --profiles default --runs "$N" "$mode" -q --record "$rec" -- "$@" >/dev/null 2>"$rec.err") || true
  end=$(date +%s.%N)
  rates "$rec" "$(python3 -c "print($end - $start)")"
}
echo
echo "through flakehunt sweep ($PROFILE build), N=$N attempts per case and mode:"
printf '%-16s %22s %22s %8s %8s\n' case "cold /s (record, wall)" "warm /s (record, wall)" ratio wall-ratio
declare -A per_attempt
for case in "pytest trivial|${PYTEST[*]} test_trivial.py::test_trivial" \
  "pytest numpy|${PYTEST[*]} test_numpy.py::test_numpy" \
  "script numpy|python3 script_numpy.py" \
  "no-op script|python3 noop.py" \
  "pytest race|${PYTEST[*]} test_race.py::test_race"; do
  name=${case%%|*}
  read -r -a argv <<<"${case#*|}"
  read -r cn cf crate cwall cms cmodes <<<"$(sweep --no-warm "${argv[@]}")"
  read -r wn wf wrate wwall wms wmodes <<<"$(sweep --warm "${argv[@]}")"
  per_attempt[$name]=$wms
  printf '%-16s %10s %11s %10s %11s %7sx %7sx' "$name" "$crate" "$cwall" "$wrate" "$wwall" \
    "$(python3 -c "print('%.1f' % ($wrate / $crate))")" "$(python3 -c "print('%.1f' % ($wwall / $cwall))")"
  [ "$wmodes" = warm ] || printf '  (warm run recorded modes: %s)' "$wmodes"
  [ "$name" = "pytest race" ] && printf '  failures: cold %s/%s, warm %s/%s' "$cf" "$cn" "$wf" "$wn"
  echo
done
# flakehunt's overhead per warm attempt: the no-op script's time per attempt, with one parent for
# all of them (`[warm] recycle-after = 0`), less the bare fork of the floor line. The table's
# rates count the default recycling (a new parent every 50 attempts): its share per attempt is
# the difference between the two no-op figures.
printf '[warm]\nrecycle-after = 0\n' >"$tmp/flakehunt.toml"
read -r _ _ _ _ noop _ <<<"$(sweep --warm python3 noop.py)"
rm "$tmp/flakehunt.toml"
recycled=${per_attempt[no-op script]}
echo "no-op warm attempt through flakehunt: $noop ms per attempt with one parent ($recycled ms with a new parent every 50), floor $floor ms:" \
  "flakehunt's overhead per warm attempt $(python3 -c "print('%.2f' % ($noop - $floor))") ms (target < 2 ms);" \
  "recycling adds $(python3 -c "print('%.2f' % ($recycled - $noop))") ms per attempt"
# The race's rate drifts with the machine's load, so two sweeps one after the other can differ:
# interleaved in one sweep (every second attempt cold, `[warm] cold-every = 2`), the summary's
# `modes` compares the two rates on the same minutes of the machine.
printf '[warm]\ncold-every = 2\n' >"$tmp/flakehunt.toml"
(cd "$tmp" && "$FLAKEHUNT" sweep --profiles default --runs $((2 * N)) --warm -q --record "$tmp/interleaved" --json -- \
  "${PYTEST[@]}" test_race.py::test_race 2>/dev/null || true) |
  python3 -c 'import json, sys; print("pytest race, interleaved in one sweep:", [n for n in json.load(sys.stdin)["notes"] if n.startswith("warm attempts")][0])'
