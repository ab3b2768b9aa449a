#!/usr/bin/env bash
# False leaks: every Go test package and Go suite in fixtures/ run under the goroutine leak check,
# counting the attempts the check flagged. Only fixtures/checks/go/leaky leaks on purpose (its
# TestChannelLeak and TestSubtestLeak); every other test, whether it passes, fails on its own
# iterations (the adapters' ledger) or races (racy, without -race), must never be flagged:
#   sweep   `flakehunt sweep --leak-check --profiles PROFILES --runs N` of each package (and of
#           leaky's TestJoined alone), under profiles that change its timing
#   suite   `flakehunt suite --runs N` of each package with more than one test (the check is on
#           by default), in shuffled orders
# Prints, per run, the attempts, the failures and the attempts the check flagged, with the places
# it named (a package with its own TestMain runs without the check, said so); then the false
# leaks over all the attempts under the check (keep it at 0).
#
# Usage: scripts/bench-false-leaks.sh   (env: N=100 attempts per profile; PROFILES=default,one-core,noisy;
#        SUITE_RUNS=20; FLAKEHUNT=path, else the release binary is built)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-100}
PROFILES=${PROFILES:-default,one-core,noisy}
SUITE_RUNS=${SUITE_RUNS:-20}
if [ -z "${FLAKEHUNT:-}" ]; then
  cargo build --release --quiet -p flakehunt --bin flakehunt
  target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  FLAKEHUNT=$target_dir/release/flakehunt
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOCACHE=${GOCACHE:-$tmp/gocache} GOPATH=$tmp/gopath GOFLAGS= GOPROXY=off GOTOOLCHAIN=local

# Every Go module of fixtures/ (a copy: builds write beside them), and its test packages.
runs=$tmp/runs
: >"$runs"
for mod in $(find fixtures -name go.mod -printf '%h\n' | sort); do
  copy=$tmp/$(echo "$mod" | tr / -)
  cp -r "$mod" "$copy"
  for pkg in $(cd "$copy" && go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{end}}' ./...); do
    rel=${pkg#"$copy"}
    name=$mod${rel}
    if [ "$name" = fixtures/checks/go/leaky ]; then
      targets=("-run TestJoined")
    else
      targets=("")
    fi
    for t in "${targets[@]}"; do
      rec=$tmp/rec-$(echo "$name$t" | tr '/ ' '--')
      # shellcheck disable=SC2086
      (cd "$pkg" && "$FLAKEHUNT" sweep -q --leak-check --profiles "$PROFILES" --runs "$N" --record "$rec" --go-test . $t >/dev/null 2>"$rec.err") || true
      echo "sweep $name $t|$rec" >>"$runs"
    done
    tests=$(cd "$pkg" && go test -list . 2>/dev/null | grep -c '^Test' || true)
    if [ "$name" != fixtures/checks/go/leaky ] && [ "$tests" -gt 1 ]; then
      rec=$tmp/suite-$(echo "$name" | tr / -)
      (cd "$pkg" && "$FLAKEHUNT" suite -q --runs "$SUITE_RUNS" --record "$rec" --go-test . >/dev/null 2>"$rec.err") || true
      echo "suite $name|$rec" >>"$runs"
    fi
  done
done

python3 - "$runs" <<'EOF'
import json, pathlib, sys
false_leaks = 0
total = 0
for line in open(sys.argv[1]):
    label, rec = line.rstrip("\n").split("|")
    rec = pathlib.Path(rec)
    try:
        attempts = [json.loads(l) for l in (rec / "attempts.jsonl").read_text().splitlines() if l.strip()]
        checks = json.loads((rec / "manifest.json").read_text())["plan"].get("checks", {})
    except (OSError, ValueError):
        print(f"{label:48} no record: {(rec.parent / (rec.name + '.err')).read_text().strip()[:200]}")
        continue
    flagged = [a for a in attempts if any(f["check"] == "goroutine-leak" for f in a.get("hidden", []))]
    failed = sum(a["outcome"] != "pass" for a in attempts)
    places = sorted({p for a in flagged for f in a["hidden"] for p in f.get("places", [])})
    on = "leak check on" if checks.get("goroutine_leaks") else "LEAK CHECK OFF"
    print(f"{label:48} {on}: {len(attempts):5} attempts, {failed:4} failed, {len(flagged):4} flagged {places}")
    if checks.get("goroutine_leaks"):
        total += len(attempts)
    false_leaks += len(flagged)
print(f"false leaks: {false_leaks} of {total} attempts under the check")
EOF
