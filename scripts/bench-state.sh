#!/usr/bin/env bash
# What the state search of `flakehunt suite` costs (README, "state search"), on the fixture suite
# fixtures/suite/state (one polluter per kind of state), or on any pytest project:
#   1. per fingerprint: its time (before and after the polluters), the pieces of state it read,
#      and how much the fork's memory grew while it took it; from the record's state.json;
#   2. the trials the search needed (ddmin's and its two confirmations);
#   3. the check of each cleanup: its runs and their time (the forks only);
#   4. against a baseline measured in the same run: one plain pytest run of the polluters and
#      the victim (the reproducer as printed), so that a loaded machine shows in both.
# Prints figures; asserts nothing (timings depend on the machine: see the README).
#
# Usage: scripts/bench-state.sh                      the fixture suite
#        scripts/bench-state.sh DIR PYTHON ARGS...   `flakehunt suite --python PYTHON ARGS` in DIR
#        (env: N=6 shuffled attempts; PROFILE=dev uses the debug build)
set -euo pipefail
cd "$(dirname "$0")/.."

N=${N:-6}
PROFILE=${PROFILE:-dev}
cargo build -q --profile "$PROFILE" -p flakehunt
dir=$([ "$PROFILE" = dev ] && echo debug || echo "$PROFILE")
flakehunt="$PWD/target/$dir/flakehunt"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PYTHONDONTWRITEBYTECODE=1
if [ $# -eq 0 ]; then
  cp -r fixtures/suite/state "$tmp/project"
  project="$tmp/project" python=$(command -v python3) args=(--pytest tests)
else
  project=$1 python=$2 args=("${@:3}")
fi
mkdir "$tmp/tmp"
start=$(date +%s.%N)
(cd "$project" && TMPDIR="$tmp/tmp" "$flakehunt" suite --quiet --runs "$N" --seed 1 --python "$python" \
  --record "$tmp/rec" "${args[@]}" >/dev/null 2>"$tmp/stderr") || grep -m1 "error" "$tmp/stderr" || true
echo "the hunt: $(python3 -c "import time; print(f'{time.time() - $start:.1f} s')")"

python3 - "$tmp/rec" "$project" <<'PY'
import json, subprocess, sys, time
rec, project = sys.argv[1], sys.argv[2]
findings = json.load(open(f"{rec}/state.json"))
summary = json.load(open(f"{rec}/summary.json"))
reproducers = {t["id"]: t["reproducer"] for t in summary["tests"]}
for f in findings:
    argv = reproducers.get(f["test"]) or []
    plain = None
    if argv:
        t = time.perf_counter()
        subprocess.run(argv, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        plain = time.perf_counter() - t
    cost, c = f.get("cost") or {}, f.get("cleanup") or {}
    named = ", ".join(d["path"] for d in f.get("state", [])) or f.get("verdict", "-")
    line = f"{f['test']}: {named}\n  fingerprint {'/'.join(f'{s:.2f}' for s in cost.get('seconds', []))} s, " \
           f"{cost.get('entries', 0)} pieces, +{cost.get('kib', 0) / 1024:.0f} MB per fork; {f.get('trials', 0)} trials"
    if c.get("checked"):
        line += f"; check {c['checked'][0]}/{c['checked'][1]} runs in {c.get('seconds') or 0:.2f} s ({'proved' if c.get('proved') else 'not proved'})"
    if plain is not None:
        line += f"; one plain run of the reproducer {plain:.2f} s"
    print(line)
PY
