#!/usr/bin/env bash
# flakehunt's own work per attempt, in instructions, which a loaded machine does not change (a
# wall-clock benchmark such as bench-overhead.sh needs a quiet one): valgrind's callgrind counts
# the instructions of the flakehunt process (all its threads, not the attempts it spawns) for a
# sweep of SMALL and of LARGE attempts of `true`; the difference over LARGE - SMALL attempts is
# the cost of one attempt, start-up excluded. Given BASE (another build of flakehunt, e.g. of the
# commit before a change), both are measured in the same run and the ratio is printed.
#
# Usage: scripts/bench-instructions.sh   (env: BASE=path/to/flakehunt, SMALL=100, LARGE=400,
#        FLAKEHUNT=path; without FLAKEHUNT it builds the release binary)
set -euo pipefail
cd "$(dirname "$0")/.."

SMALL=${SMALL:-100}
LARGE=${LARGE:-400}
if ! command -v valgrind >/dev/null; then
  echo "bench-instructions: valgrind is missing; install it (apt-get install valgrind)" >&2
  exit 2
fi
if [ -z "${FLAKEHUNT:-}" ]; then
  cargo build --release --quiet -p flakehunt --bin flakehunt
  target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  FLAKEHUNT=$target_dir/release/flakehunt
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Instructions of one sweep of $2 attempts by the binary $1.
instructions() {
  local out="$tmp/cg.$RANDOM"
  rm -rf "$tmp/record"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$1" sweep --profiles default --runs "$2" \
    --record "$tmp/record" -- true >/dev/null 2>"$out.log"
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$out.log"
}

# Instructions per attempt of the binary $1.
per_attempt() {
  local small large
  small=$(instructions "$1" "$SMALL")
  large=$(instructions "$1" "$LARGE")
  echo $(((large - small) / (LARGE - SMALL)))
}

new=$(per_attempt "$FLAKEHUNT")
echo "flakehunt: $new instructions per attempt ($FLAKEHUNT)"
if [ -n "${BASE:-}" ]; then
  base=$(per_attempt "$BASE")
  echo "base:      $base instructions per attempt ($BASE)"
  python3 -c "print(f'ratio (flakehunt / base): {$new / $base:.3f}')"
fi
