#!/usr/bin/env bash
# What `flakehunt suite` costs on the fixture suites of fixtures/suite/ (pytest and Go):
#   1. time per attempt against the suite's own run time: the same runner command started
#      directly N times, one after the other (pytest with every node id, as an attempt gives
#      them; the Go test binary with -test.v=test2json through test2json), against the hunt's
#      N shuffled attempts: their mean recorded duration, and the wall time of the whole
#      shuffled phase per attempt (which adds flakehunt's own work between attempts: reading
#      the junit xml or the event stream, writing the record). Target: within 5 %.
#   2. the runs each bisection needed (its two confirmation runs included), from summary.json;
#   3. pytest: the whole hunt's wall time with warm attempts (suite's default) and with --no-warm;
#   4. the classification's cost on a suite with eight victims of one polluter
#      (fixtures/suite/pytest-shared, 29 tests of about 30 ms each): its wall time against the
#      suite's plain run as the summary estimates it (`cost.ratio`) and against the suite run
#      directly (cold pytest, before and after the hunt), its phases, and the whole hunt's time
#      (the state search included). Target: the classification within 10x the plain run.
# Prints figures; asserts nothing (timings depend on the machine: see the README).
#
# Usage: scripts/bench-suite.sh   (env: N=20 attempts; PROFILE=dev uses the debug build, which
#        spares a release build of the dependencies on a busy machine; PROFILE=release for the
#        figures the README quotes)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

N=${N:-20}
PROFILE=${PROFILE:-dev}
cargo build -q --profile "$PROFILE" -p flakehunt
dir=$([ "$PROFILE" = dev ] && echo debug || echo "$PROFILE")
flakehunt="$PWD/target/$dir/flakehunt"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r fixtures/suite/pytest "$tmp/pytest"
cp -r fixtures/suite/go "$tmp/go"
export PYTHONDONTWRITEBYTECODE=1 GOCACHE="$tmp/gocache" GOPATH="$tmp/gopath" GOPROXY=off GOFLAGS= GOTOOLCHAIN=local

# Runs "$@" N/2 times; prints the mean wall seconds. Called before and after the hunt, whose
# figures are set against the mean of both, so that a change of the machine's load during the
# measurement shows as a difference between the two rather than as overhead.
direct() {
  python3 - "$((N / 2))" "$@" <<'PY'
import subprocess, sys, time
n, argv = max(int(sys.argv[1]), 1), sys.argv[2:]
total = 0.0
for i in range(n):
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    total += time.perf_counter() - t
print(f"{total / n:.4f}")
PY
}

# Prints the figures of a suite record against the direct mean $2.
figures() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys, datetime
rec, direct, name = sys.argv[1], float(sys.argv[2]), sys.argv[3]
attempts = [json.loads(l) for l in open(f"{rec}/attempts.jsonl")]
shuffled = [a for a in attempts if a.get("suite", {}).get("role") == "shuffled"]
t = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
mean = sum(a["seconds"] for a in shuffled) / len(shuffled)
start = min(t(a["started_at"]) for a in shuffled)
end = max(t(a["started_at"]) + a["seconds"] for a in shuffled)
wall = (end - start) / len(shuffled)
print(f"{name}: suite run directly {direct*1000:.1f} ms; attempt (recorded) {mean*1000:.1f} ms "
      f"({(mean/direct-1)*100:+.1f} %); shuffled phase per attempt {wall*1000:.1f} ms ({(wall/direct-1)*100:+.1f} %)")
summary = json.load(open(f"{rec}/summary.json"))
for test in summary["tests"]:
    b = test.get("bisection")
    if b:
        print(f"{name}:   bisection of {test['id']} for {b['searched']}: {b['runs']} runs over a prefix of {b['prefix']} tests ({b['status']})")
confirm = len(attempts) - len(shuffled)
print(f"{name}:   classification: {confirm} confirmation runs for {len(summary['tests'])} failing tests; categories: "
      + ", ".join(f"{x['id']}={x['category']}" for x in summary["tests"]))
PY
}

# pytest: the attempt's own command, every node id in collection order. The interpreter itself,
# not a shim on PATH (pyenv's costs ~170 ms a start, and a Python child would bypass it while
# flakehunt's would not), for both.
cd "$tmp/pytest"
py=$(python3 -c 'import sys; print(sys.executable)')
mapfile -t ids < <("$py" -m pytest -p no:randomly -p no:cacheprovider -q --collect-only | grep '::')
pytest_run=("$py" -m pytest -p no:randomly -p no:cacheprovider -p no:rerunfailures -p no:flaky -q \
  --junitxml "$tmp/direct.xml" "${ids[@]}")
before=$(direct "${pytest_run[@]}")
"$flakehunt" suite --runs "$N" --seed 1 --quiet --record "$tmp/rec-pytest" --python "$py" --no-warm --pytest >/dev/null || true
after=$(direct "${pytest_run[@]}")
echo "pytest: direct runs before the hunt $before s, after $after s"
pytest_direct=$(python3 -c "print(($before + $after) / 2)")
figures "$tmp/rec-pytest" "$pytest_direct" pytest

# 3. warm attempts (suite's default) against cold ones: the wall time of the whole hunt, its
#    shuffled attempts and its classification, once in each mode (the repeat runs and the
#    reproducer checks run cold in both).
for mode in warm no-warm; do
  start=$(date +%s.%N)
  "$flakehunt" suite --runs "$N" --seed 1 --quiet --record "$tmp/rec-$mode" --python "$py" "--$mode" --pytest >/dev/null || true
  echo "pytest --$mode: whole hunt $(python3 -c "import time; print(f'{time.time() - $start:.2f}')") s"
  figures "$tmp/rec-$mode" "$pytest_direct" "pytest --$mode"
done

# 4. Eight victims of one polluter.
cp -r "$root/fixtures/suite/pytest-shared" "$tmp/shared"
cd "$tmp/shared"
shared_run=("$py" -m pytest -p no:randomly -p no:cacheprovider -q)
before=$(direct "${shared_run[@]}")
start=$(date +%s.%N)
"$flakehunt" suite --runs 3 --seed 1 --quiet --record "$tmp/rec-shared" --python "$py" --pytest >/dev/null || true
whole=$(python3 -c "import time; print(time.time() - $start)")
after=$(direct "${shared_run[@]}")
python3 - "$tmp/rec-shared" "$before" "$after" "$whole" <<'PY'
import collections, datetime, json, sys
rec, before, after, whole = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
direct = (before + after) / 2
summary = json.load(open(f"{rec}/summary.json"))
cost = summary["cost"]
print(f"shared: the suite run directly {before:.2f} s before the hunt, {after:.2f} s after; the summary's plain run {cost['plain_run']:.2f} s")
print(f"shared: classification {cost['seconds']:.1f} s, {cost['runs']} runs, up to {cost['at_once']} at once: "
      f"{cost['ratio']:.1f}x the summary's plain run, {cost['seconds'] / direct:.1f}x the direct run (target: 10x)")
t = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
phases = collections.defaultdict(list)
for line in open(f"{rec}/attempts.jsonl"):
    a = json.loads(line)
    if a.get("phase"):
        phases[a["phase"]].append((t(a["started_at"]), t(a["started_at"]) + a["seconds"]))
for phase, spans in phases.items():
    wall = max(e for _, e in spans) - min(s for s, _ in spans)
    print(f"shared:   {phase}: {len(spans)} runs, {wall:.1f} s")
known = sum(1 for x in summary["tests"] if (x.get("bisection") or {}).get("known"))
categories = collections.Counter(x["category"] for x in summary["tests"])
print(f"shared:   {dict(categories)}; {known} victims tried the polluter already found instead of a bisection")
print(f"shared: the whole hunt {whole:.1f} s ({whole / direct:.1f}x the direct run), the state search included")
PY

# Go: the binary the hunt built, through the same test2json.
cd "$tmp/go"
"$flakehunt" suite --runs "$N" --seed 2 --quiet --record "$tmp/rec-go" --go-test . >/dev/null || true
bin=$(ls "$tmp"/rec-go/go-test/*.test)
t2j=$(go tool -n test2json)
verbose=-test.v=test2json
"$bin" -test.v=test2json -test.run='^$' >/dev/null 2>&1 || verbose=-test.v  # before Go 1.20
go_run=(sh -c "exec \"\$@\" >$tmp/direct.json" sh "$t2j" -t -p x "$bin" "$verbose" -test.shuffle=1)
before=$(direct "${go_run[@]}")
rm -rf "$tmp/rec-go2"
"$flakehunt" suite --runs "$N" --seed 2 --quiet --record "$tmp/rec-go2" --go-test . >/dev/null || true
after=$(direct "${go_run[@]}")
echo "go: direct runs before the hunt $before s, after $after s"
figures "$tmp/rec-go2" "$(python3 -c "print(($before + $after) / 2)")" go
