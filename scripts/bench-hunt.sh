#!/usr/bin/env bash
# Seconds to the second failure, per fixture of fixtures/hunt/, for three ways of hunting a flaky
# program on this machine:
#   hunt    `flakehunt hunt` (skipped, and said so, while this build has no such command)
#   sweep   the default `flakehunt sweep --until-fails 2` (every built-in profile that applies)
#   stress  Go's `stress -p CPUS` (Debian golang-golang-x-tools, binary golang-stress): plain
#           parallel re-running, judging the exit status only
# Each tool gets CAP seconds per fixture ("none" when it did not fail twice by then), one tool
# at a time so they never disturb each other. For flakehunt the second failure is read from its
# record: the first cell to fail twice, from the hunt's start to the end of that failure (with
# --oracle majority, an output unlike the most common one is a failure). For stress a wrapper
# stamps the end of every failing run.
#
# The hunt's cell says whether the hunt confirmed it against the baseline (",confirmed"), did not
# (",unconfirmed": a failure no condition explains), or found the plain target failing ("default").
#
# Prints a table and the median ratios stress/hunt and stress/sweep over the fixtures where
# either side reproduced (a "none" counts as CAP, so a ratio against it is a lower bound).
#
# Usage: scripts/bench-hunt.sh [FIXTURE...]   (env: CAP=120, FLAKEHUNT=path, TOOLS="hunt sweep stress")
# Without FLAKEHUNT it builds the release binary first.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

CAP=${CAP:-120}
TOOLS=${TOOLS:-"hunt sweep stress"}
CPUS=$(nproc)
STRESS=$(command -v golang-stress || command -v stress || true)

if [ -z "${FLAKEHUNT:-}" ]; then
  cargo build --release --quiet -p flakehunt --bin flakehunt
  target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  FLAKEHUNT=$target_dir/release/flakehunt
fi
# The real interpreter, not a version manager's shim (a shim adds a shell and its own start-up to
# every attempt, for every tool alike, and hides the test's own duration).
PYTHON=$(python3 -c 'import sys; print(sys.executable)')

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; rm -f /tmp/flakehunt-bench-copies-*' EXIT
for c in timing-window lease-deadlock pinned-race; do
  cc -O2 -pthread -o "$tmp/$c" "fixtures/hunt/$c.c"
done

# name | extra flakehunt options | command
fixtures=(
  "timing-window||$tmp/timing-window"
  "copies||sh $root/fixtures/hunt/copies.sh"
  "lost-update||$PYTHON $root/fixtures/hunt/lost-update.py"
  "lease-deadlock||$tmp/lease-deadlock"
  "pinned-race||$tmp/pinned-race"
  "random-2pct||sh $root/fixtures/hunt/random-2pct.sh"
  "wrong-sum|--oracle majority|$PYTHON $root/fixtures/hunt/wrong-sum.py"
)
if [ $# -gt 0 ]; then
  wanted=" $* "
  selected=()
  for f in "${fixtures[@]}"; do
    [[ $wanted == *" ${f%%|*} "* ]] && selected+=("$f")
  done
  fixtures=("${selected[@]}")
fi

# The seconds to the second failure in a flakehunt record, the cell, and the attempts run by
# then; "none" when no cell failed twice.
second_failure() {
  python3 - "$1" "$2" <<'EOF'
import collections, datetime, json, pathlib, sys
rec, majority = pathlib.Path(sys.argv[1]), sys.argv[2] == "1"
try:
    manifest = json.loads((rec / "manifest.json").read_text())
    attempts = [json.loads(l) for l in (rec / "attempts.jsonl").read_text().splitlines() if l.strip()]
except (OSError, ValueError):
    print("none - 0"); sys.exit()
def t(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
start = t(manifest["started_at"])
leader = None
if majority:
    hashes = collections.Counter(a.get("stdout_hash") for a in attempts if a["outcome"] == "pass" and a.get("stdout_hash"))
    leader = hashes.most_common(1)[0][0] if hashes else None
def failed(a):
    if a["outcome"] in ("fail", "crash", "timeout", "wrong-output"):
        return True
    return leader is not None and a["outcome"] == "pass" and a.get("stdout_hash") not in (None, leader)
# What the hunt concluded of the cell: confirmed against the baseline (p < 0.01 on fresh
# attempts), not confirmed (a failure no condition explains), or the baseline itself.
try:
    summary = json.loads((rec / "summary.json").read_text())
except (OSError, ValueError):
    summary = {}
details = summary.get("details") or {}
def verdict(cell):
    if manifest.get("kind") != "hunt" or cell == "default":
        return cell
    p = details.get("p_value")
    return f"{cell},{'confirmed' if p is not None and p < 0.01 else 'unconfirmed'}"
# A hunt's own reproduction (the arm its plan confirmed, folded in id order) when it has one.
repro = summary.get("reproduction")
if manifest.get("kind") == "hunt" and repro:
    print(f'{repro["seconds"]:.1f} {verdict(repro["cell"])} {repro["attempts"]}'); sys.exit()
fails = collections.Counter()
for n, a in enumerate(attempts, 1):
    if failed(a):
        fails[a["cell"]] += 1
        if fails[a["cell"]] == 2:
            print(f'{t(a["started_at"]) + a["seconds"] - start:.1f} {verdict(a["cell"])} {n}'); sys.exit()
print(f"none - {len(attempts)}")
EOF
}

run_flakehunt() { # tool options command...
  local tool=$1 opts=$2
  shift 2
  local rec=$tmp/rec-$tool-$RANDOM
  local majority=0
  [[ $opts == *majority* ]] && majority=1
  local args=(--budget "${CAP}s" --record "$rec" -q)
  [ "$tool" = sweep ] && args+=(--until-fails 2)
  # shellcheck disable=SC2086
  timeout -k 5 $((CAP + 60)) "$FLAKEHUNT" "$tool" "${args[@]}" $opts -- "$@" >/dev/null 2>&1 || true
  second_failure "$rec" "$majority"
}

run_stress() { # command...
  local stamps=$tmp/stamps-$RANDOM wrapper=$tmp/wrapper-$RANDOM.sh
  : >"$stamps"
  {
    echo '#!/bin/sh'
    printf '%q ' "$@"
    echo '>/dev/null 2>&1'
    echo 'rc=$?'
    echo "[ \$rc -ne 0 ] && date +%s.%N >> $stamps"
    echo 'exit $rc'
  } >"$wrapper"
  chmod +x "$wrapper"
  local start
  start=$(date +%s.%N)
  BENCH_KEY=stress-$RANDOM "$STRESS" -p "$CPUS" -o "$tmp/stress-" "$wrapper" >/dev/null 2>&1 &
  local pid=$!
  local deadline=$(($(date +%s) + CAP))
  while [ "$(wc -l <"$stamps")" -lt 2 ] && [ "$(date +%s)" -lt "$deadline" ]; do
    sleep 0.2
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ "$(wc -l <"$stamps")" -ge 2 ]; then
    python3 -c "print(f'{$(sed -n 2p "$stamps") - $start:.1f} - -')"
  else
    echo "none - -"
  fi
}

has_hunt=0
if "$FLAKEHUNT" hunt --help >/dev/null 2>&1; then
  has_hunt=1
else
  echo "bench-hunt: this flakehunt has no 'hunt' command yet: its column says absent" >&2
fi
if [ -z "$STRESS" ]; then
  echo "bench-hunt: golang-stress is missing (apt-get install golang-golang-x-tools): its column says absent" >&2
fi

results=$tmp/results
: >"$results"
printf '%-15s %-26s %-30s %-10s\n' fixture hunt sweep stress
for f in "${fixtures[@]}"; do
  IFS='|' read -r name opts cmd <<<"$f"
  # shellcheck disable=SC2206
  argv=($cmd)
  h="absent - -" s="skipped - -" g="skipped - -"
  for tool in $TOOLS; do
    case $tool in
      hunt) [ $has_hunt = 1 ] && h=$(run_flakehunt hunt "$opts" "${argv[@]}") ;;
      sweep) s=$(run_flakehunt sweep "$opts" "${argv[@]}") ;;
      stress) if [ -n "$STRESS" ]; then g=$(run_stress "${argv[@]}"); else g="absent - -"; fi ;;
    esac
  done
  read -r hs hc hn <<<"$h"
  read -r ss sc sn <<<"$s"
  read -r gs _ _ <<<"$g"
  fmt() { if [ "$2" = - ]; then echo "$1"; else echo "$1 s ($2, $3 att.)"; fi; }
  printf '%-15s %-26s %-30s %-10s\n' "$name" "$(fmt "$hs" "$hc" "$hn")" "$(fmt "$ss" "$sc" "$sn")" "$gs"
  echo "$name $hs $ss $gs" >>"$results"
done

python3 - "$results" "$CAP" <<'EOF'
import statistics, sys
cap = float(sys.argv[2])
rows = [l.split() for l in open(sys.argv[1])]
def val(x):
    return cap if x == "none" else (float(x) if x.replace(".", "", 1).isdigit() else None)
for label, col in (("hunt", 1), ("sweep", 2)):
    ratios = []
    for r in rows:
        mine, stress = val(r[col]), val(r[3])
        if mine is None or stress is None or (r[col] == "none" and r[3] == "none"):
            continue
        ratios.append(stress / max(mine, 0.1))
    if ratios:
        print(f"median stress/{label} ratio: {statistics.median(ratios):.2f} over {len(ratios)} fixture(s) either reproduced (>1: {label} faster)")
    else:
        print(f"median stress/{label} ratio: n/a (no fixture to compare)")
EOF
