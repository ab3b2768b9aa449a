#!/usr/bin/env bash
# False alarms on clean targets: every negative control of fixtures/controls/ (a pytest test with
# threads, one behind a 1.5 s import and a slow session fixture, one that runs for 2 s, the same
# threads as a script, a Go test with goroutines, a Rust test with threads, a C program with
# pthreads doing 80,000 lock/unlock pairs) hunted with the default settings:
#   hunt    `flakehunt hunt --budget BUDGET --seed S` for each seed of SEEDS
#   sweep   `flakehunt sweep --budget BUDGET` under every built-in profile that applies, with
#           the checks of failures the exit status hides that apply (--leak-check for Go,
#           --thread-check for Python and Rust; CHECKS=0 leaves them off, a sweep's default)
#   suite   `flakehunt suite --budget BUDGET` of the pytest, Go and Rust controls
# hunt and suite run their checks by default. None of the controls ever fails, so any verdict but
# `not-reproduced` (exit 0), or an attempt a check flagged, is a false alarm: flakehunt's own
# artefact. Prints each run's verdict and conclusion, the false-alarm count over
# all of them (keep it at 0), and for each arm of the hunts the hang limits its attempts were
# judged by against its longest passing attempt, and its slow attempts (ended by flakehunt's own
# limit while still at work: no evidence).
#
# Usage: scripts/bench-false-alarms.sh [CONTROL...]  (env: BUDGET=60, SEEDS="1 2",
#        TOOLS="hunt sweep suite", CHECKS=1, FLAKEHUNT=path; without FLAKEHUNT it builds the
#        release binary; KEEP=DIR keeps every record there, to look into a false alarm)
# Controls: py-threads py-slow-start py-two-seconds script go rust c
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

BUDGET=${BUDGET:-60}
SEEDS=${SEEDS:-"1 2"}
TOOLS=${TOOLS:-"hunt sweep suite"}
CHECKS=${CHECKS:-1}

if [ -z "${FLAKEHUNT:-}" ]; then
  cargo build --release --quiet -p flakehunt --bin flakehunt
  target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  FLAKEHUNT=$target_dir/release/flakehunt
fi
PYTHON=$(python3 -c 'import sys; print(sys.executable)')

if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  tmp=$(mktemp -d -p "$(cd "$KEEP" && pwd)")
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
fi
# Copies: building the Go and Rust tests writes beside them.
cp -r fixtures/controls "$tmp/controls"
cc -O2 -pthread -o "$tmp/controls/c/mutex_counter" fixtures/controls/c/mutex_counter.c
c=$tmp/controls

# name | directory | hunt and sweep target options | suite target options (empty: none)
controls=(
  "py-threads|$c/pytest|--python $PYTHON --pytest test_clean_threads.py::test_threads_sum|--python $PYTHON --pytest test_clean_threads.py test_slow_start.py"
  "py-slow-start|$c/pytest|--python $PYTHON --pytest test_slow_start.py::test_after_slow_start|"
  "py-two-seconds|$c/pytest|--python $PYTHON --pytest test_two_seconds.py::test_two_seconds|"
  "script|$c|-- $PYTHON $c/clean_threads.py|"
  "go|$c/go|--go-test . -run TestCleanGoroutines|--go-test ."
  "rust|$c/cargo-clean|--cargo-test threads_sum|--cargo-test"
  "c|$c|-- $c/c/mutex_counter|"
)
if [ $# -gt 0 ]; then
  wanted=" $* "
  selected=()
  for f in "${controls[@]}"; do
    [[ $wanted == *" ${f%%|*} "* ]] && selected+=("$f")
  done
  controls=("${selected[@]}")
fi

checks_for() { # name: the sweep options that put the checks that apply to the control on
  [ "$CHECKS" = 1 ] || return 0
  case $1 in
    py-* | script | rust) echo --thread-check ;;
    go) echo --leak-check ;;
  esac
}

profiles_for() { # name: every built-in profile that can apply to the control
  case $1 in
    py-* | script) echo default,one-core,one-core-native,cpu-starved,noisy,idle,pause,tight-gil,jitter ;;
    go) echo default,one-core,one-core-native,cpu-starved,noisy,idle,pause ;;
    *) echo default,one-core,one-core-native,cpu-starved,noisy,idle,pause,jitter ;;
  esac
}

runs=$tmp/runs
: >"$runs"
run() { # label dir record tool args... (the target's options last)
  local label=$1 dir=$2 rec=$3 tool=$4
  shift 4
  local code=0
  (cd "$dir" && timeout -k 10 $((BUDGET * 4 + 300)) "$FLAKEHUNT" "$tool" --record "$rec" -q "$@" >"$rec.out" 2>"$rec.err") || code=$?
  echo "$label|$rec|$code" >>"$runs"
  python3 - "$label" "$rec" "$code" <<'EOF'
import json, pathlib, sys
label, rec, code = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
try:
    s = json.loads((rec / "summary.json").read_text())
except (OSError, ValueError):
    print(f"{label:34} exit {code:>3}  (no summary: {rec}.err)", flush=True)
    sys.exit()
words = (s.get("details") or {}).get("conclusion") or s.get("verdict_text", "")
checks = s.get("checks")
said = f"  [checks: {', '.join(checks['on'])}; {checks['failed']} flagged]" if checks else "  [no check]"
print(f"{label:34} exit {code:>3}  {s['verdict']:20} {words[:160]}{said}", flush=True)
EOF
}

echo "budget ${BUDGET}s per run, seeds: $SEEDS"
for f in "${controls[@]}"; do
  IFS='|' read -r name dir target suite_target <<<"$f"
  # shellcheck disable=SC2206
  targs=($target)
  for tool in $TOOLS; do
    case $tool in
      hunt)
        for seed in $SEEDS; do
          run "hunt  $name seed=$seed" "$dir" "$tmp/hunt-$name-$seed" hunt --budget "${BUDGET}s" --seed "$seed" "${targs[@]}"
        done
        ;;
      sweep)
        # shellcheck disable=SC2046
        run "sweep $name" "$dir" "$tmp/sweep-$name" sweep --budget "${BUDGET}s" --profiles "$(profiles_for "$name")" $(checks_for "$name") "${targs[@]}"
        ;;
      suite)
        if [ -n "$suite_target" ]; then
          # shellcheck disable=SC2206
          sargs=($suite_target)
          run "suite $name" "$dir" "$tmp/suite-$name" suite --budget "${BUDGET}s" "${sargs[@]}"
        fi
        ;;
    esac
  done
done

python3 - "$runs" <<'EOF'
import collections, json, pathlib, sys
alarms, total = [], 0
limits = collections.defaultdict(lambda: {"limits": [], "pass": None, "tight": None, "slow": 0, "timeout": 0, "attempts": 0})
for line in open(sys.argv[1]):
    label, rec, code = line.rstrip("\n").split("|")
    rec = pathlib.Path(rec)
    total += 1
    try:
        s = json.loads((rec / "summary.json").read_text())
        verdict = s["verdict"]
    except (OSError, ValueError, KeyError):
        verdict = "no-summary"
    if verdict != "not-reproduced" or code != "0":
        alarms.append(f"{label}: {verdict}, exit {code}")
    elif (s.get("checks") or {}).get("failed"):
        alarms.append(f"{label}: {s['checks']['failed']} attempts flagged by the checks")
    if not label.startswith("hunt"):
        continue
    control = label.split()[1]
    try:
        attempts = [json.loads(l) for l in (rec / "attempts.jsonl").read_text().splitlines() if l.strip()]
    except OSError:
        continue
    for a in attempts:
        k = limits[(control, a["cell"], a.get("mode", "cold"))]
        k["attempts"] += 1
        if a.get("hang"):
            k["limits"].append(a["hang"]["limit"])
        limit = (a.get("hang") or {}).get("limit")
        if a["outcome"] == "pass":
            # The longest pass and the limit it ran under; the tightest pass (the smallest
            # limit over length among passes judged by a limit).
            if k["pass"] is None or a["seconds"] > k["pass"][0]:
                k["pass"] = (a["seconds"], limit)
            if limit and a["seconds"] > 0 and (k["tight"] is None or limit / a["seconds"] < k["tight"]):
                k["tight"] = limit / a["seconds"]
        k["slow"] += a["outcome"] == "slow"
        k["timeout"] += a["outcome"] == "timeout"
print()
print("hang limits per arm (all seeds): the limits its attempts were judged by; its longest passing attempt and the limit")
print("that attempt ran under; the tightest pass (smallest limit / length among passes run under a limit)")
print(f"{'control':15} {'arm':22} {'mode':5} {'attempts':>8} {'limits min..max':>18} {'longest pass':>13} {'its limit':>10} {'tightest':>8} {'slow':>5} {'timeout':>7}")
for (control, cell, mode), k in sorted(limits.items()):
    span = f"{min(k['limits']):.2f}..{max(k['limits']):.2f} s" if k["limits"] else "none"
    longest, its = k["pass"] if k["pass"] else (None, None)
    longest = f"{longest:.3f} s" if longest is not None else "-"
    its = f"{its:.2f} s" if its else "none"
    tight = f"x{k['tight']:.1f}" if k["tight"] else "-"
    print(f"{control:15} {cell:22} {mode:5} {k['attempts']:>8} {span:>18} {longest:>13} {its:>10} {tight:>8} {k['slow']:>5} {k['timeout']:>7}")
print()
for a in alarms:
    print(f"false alarm: {a}")
print(f"false alarms: {len(alarms)} of {total} runs")
EOF
