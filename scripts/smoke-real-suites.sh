#!/usr/bin/env bash
# Smoke test of `flakehunt suite` on real projects' test suites: small PyPI packages at pinned
# versions, each with the tests of its sdist, in a virtualenv of its own, chosen for the
# configurations they meet flakehunt with:
#
#   six 1.16.0            its module and tests at the root; PYTEST_ADDOPTS=-v (verbose output)
#   zipp 3.21.0           --doctest-modules and --import-mode importlib in pytest.ini, a conftest
#                         with pytest_configure; its package's doctests (tests/ needs timing
#                         tests and a dozen dependencies: left out)
#   cachetools 5.5.0      unittest.TestCase classes; pytest-xdist installed, PYTEST_ADDOPTS=-n 2
#   MarkupSafe 2.1.5      a conftest of session fixtures parametrized over two modules (one of
#                         them compiled), filterwarnings = error
#   semver 3.0.2          pytest-cov (--cov in addopts) with PYTEST_ADDOPTS=--cov-fail-under=100,
#                         doctests of .rst files, pythonpath, parametrize ids of odd objects
#   more-itertools 10.5.0 unittest.TestCase classes, about 660 tests; Debian's own Python
#
# Each runs on the Python it names when pyenv has it (3.9 to 3.13; `system`: Debian's
# /usr/bin/python3, with python3-venv), else on the python3 this script finds (a fresh CI
# machine has pyenv's 3.11 alone, and Debian's 3.11 once .ci/run installed python3-venv). For each package it runs pytest once
# as the project would (the plain run, its outcomes read from its JUnit XML) and
# `flakehunt suite --runs 3 --seed 1`, and asserts:
#   - no tool error: exit 0 or 1, a complete summary, no attempt that pytest ended with an
#     internal error;
#   - warm attempts: every shuffled attempt ran warm;
#   - per-test results that match the plain run: the same tests collected, each test's outcome
#     in the attempt that ran the collected order is the plain run's, and the tests the summary
#     names are those that failed in the plain run and the known findings below (a test named
#     otherwise is a false alarm), each known finding in its category.
# Deterministic: pinned packages, a fixed seed, no test that measures time or needs the network.
#
# Usage: scripts/smoke-real-suites.sh [NAME...]
#   env: FLAKEHUNT (default: target/debug/flakehunt, built if missing), KEEP=DIR (keep the
#   virtualenvs, sources and records there), PYTHON (one interpreter for every package).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if [ -z "${FLAKEHUNT:-}" ]; then
  [ -x target/debug/flakehunt ] || cargo build -q -p flakehunt
  FLAKEHUNT=$root/target/debug/flakehunt
fi
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  work=$(cd "$KEEP" && pwd)
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
export PYTHONDONTWRITEBYTECODE=1 PIP_DISABLE_PIP_VERSION_CHECK=1

# The pytest every package runs with, and its dependencies.
PYTEST="pytest==8.3.3 iniconfig==2.0.0 packaging==24.1 pluggy==1.5.0 exceptiongroup==1.2.2 tomli==2.0.1"

# name | package==version (its wheel, or sdist when it has none here) | Python | more
# requirements | pytest paths (empty: the project's) | environment (NAME=VALUE, separated by ;) |
# known findings (id=category, separated by ;)
packages=(
  "six|six==1.16.0|3.9|||PYTEST_ADDOPTS=-v|test_six.py::test_lazy=non-idempotent"
  "zipp|zipp==3.21.0|3.10||zipp||"
  "cachetools|cachetools==5.5.0|3.11|pytest-xdist==3.6.1 execnet==2.1.1||PYTEST_ADDOPTS=-n 2|"
  "markupsafe|MarkupSafe==2.1.5|3.12||||"
  "semver|semver==3.0.2|3.13|pytest-cov==5.0.0 coverage==7.6.1||PYTEST_ADDOPTS=--cov-fail-under=100|$(
    for id in cmd_bump-args0-expectation0 cmd_bump-args1-expectation1 cmd_bump-args2-expectation2 \
      cmd_bump-args3-expectation3 cmd_bump-args4-expectation4 cmd_compare-args5-expectation5 \
      cmd_compare-args6-expectation6 cmd_compare-args7-expectation7 cmd_check-args8-expectation8 \
      cmd_nextver-args10-expectation10; do
      printf 'tests/test_pysemver-cli.py::test_should_process_parsed_cli_arguments[%s]=non-idempotent;' "$id"
    done
  )"
  "more-itertools|more-itertools==10.5.0|system||||"
)
if [ $# -gt 0 ]; then
  wanted=" $* "
  selected=()
  for p in "${packages[@]}"; do
    [[ $wanted == *" ${p%%|*} "* ]] && selected+=("$p")
  done
  packages=("${selected[@]}")
fi

# The interpreter for Python X.Y (or `system`): pyenv's (Debian's), if it has it, else the
# python3 found here.
fallback=$(python3 -c 'import sys; print(sys.executable)')
interpreter() {
  if [ -n "${PYTHON:-}" ]; then
    echo "$PYTHON"
    return
  fi
  if [ "$1" = system ]; then
    if /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null; then
      echo /usr/bin/python3
    else
      echo "$fallback"
    fi
    return
  fi
  local pyenv_root
  pyenv_root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
  for dir in "$pyenv_root"/versions/"$1".*; do
    if [ -x "$dir/bin/python3" ]; then
      echo "$dir/bin/python3"
      return
    fi
  done
  echo "$fallback"
}

failed=0
started=$(date +%s)
for p in "${packages[@]}"; do
  IFS='|' read -r name spec version requirements paths environment known <<<"$p"
  python=$(interpreter "$version")
  dir=$work/$name
  rm -rf "$dir"
  mkdir -p "$dir/sdist"
  t0=$(date +%s)
  # The sdist holds the tests; the package itself is installed from its pinned wheel.
  python3 -m pip download -q --no-deps --no-binary :all: -d "$dir/sdist" "$spec" >/dev/null
  tar -xzf "$dir"/sdist/*.tar.gz -C "$dir"
  src=$(find "$dir" -mindepth 1 -maxdepth 1 -type d ! -name sdist ! -name venv | head -1)
  "$python" -m venv "$dir/venv"
  # shellcheck disable=SC2086
  "$dir/venv/bin/python" -m pip install -q --no-deps $PYTEST $requirements "$spec"
  IFS=';' read -ra env_words <<<"$environment"
  # shellcheck disable=SC2206
  path_words=($paths)
  # The plain run, as the project runs it (no plugin of flakehunt's; the order as collected).
  (cd "$src" && env "${env_words[@]}" "$dir/venv/bin/python" -m pytest -p no:randomly -p no:cacheprovider \
    --junitxml "$dir/plain.xml" "${path_words[@]}" >"$dir/plain.out" 2>&1) || true
  code=0
  (cd "$src" && env "${env_words[@]}" "$FLAKEHUNT" suite --runs 3 --seed 1 --json --quiet --record "$dir/record" \
    --python "$dir/venv/bin/python" --pytest "${path_words[@]}" >"$dir/summary.json" 2>"$dir/stderr") || code=$?
  seconds=$(($(date +%s) - t0))
  pyversion=$("$dir/venv/bin/python" -c 'import platform; print(platform.python_version())')
  python3 - "$name" "$spec" "$dir" "$code" "$known" "$seconds" "$pyversion" <<'PY' || failed=1
import json, re, sys, xml.etree.ElementTree as ET

name, spec, d, code, known, seconds, pyversion = sys.argv[1:8]
errors = []

def mangled(nodeid):
    """A node id as pytest's JUnit XML names it: (classname, name)."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]

plain = {}
for case in ET.parse(f"{d}/plain.xml").iter("testcase"):
    key = (case.get("classname"), case.get("name"))
    tags = {child.tag for child in case}
    outcome = "fail" if tags & {"failure", "error"} else "skip" if "skipped" in tags else "pass"
    if plain.get(key) != "fail":
        plain[key] = outcome

try:
    summary = json.load(open(f"{d}/summary.json"))
except ValueError:
    summary = None
if code not in ("0", "1") or summary is None:
    errors.append(f"flakehunt exited {code}: {open(f'{d}/stderr').read()[-2000:]}")
else:
    manifest = json.load(open(f"{d}/record/manifest.json"))
    selection = manifest["extra"]["suite"]["selection"]
    if {mangled(t) for t in selection} != set(plain):
        only_here = sorted(set(map(mangled, selection)) - set(plain))[:5]
        only_plain = sorted(set(plain) - set(map(mangled, selection)))[:5]
        errors.append(f"collected {len(selection)} tests, the plain run {len(plain)}: only collected {only_here}, only in the plain run {only_plain}")
    if not summary.get("complete", True):
        errors.append("the summary is incomplete")
    attempts = [json.loads(line) for line in open(f"{d}/record/attempts.jsonl")]
    shuffled = sorted((a for a in attempts if a["suite"]["role"] == "shuffled"), key=lambda a: a["id"])
    cold = [a["id"] for a in shuffled if a.get("mode") != "warm"]
    if cold:
        errors.append(f"shuffled attempts {cold} ran cold: {[n for n in summary['notes'] if 'warm' in n]}")
    internal = [a["id"] for a in attempts if "INTERNALERROR" in (a["suite"].get("failed_otherwise") or "") + (a["suite"].get("incomplete") or "")]
    if internal:
        errors.append(f"pytest ended attempts {internal} with an internal error")
    collected = next((a for a in shuffled if a["suite"].get("strategy") == "collected"), None)
    if collected is None:
        errors.append("no attempt ran the collected order")
    else:
        outcomes = {}
        for r in collected["suite"]["tests"]:
            key = mangled(r["id"])
            o = {"pass": "pass", "skip": "skip"}.get(r["outcome"], "fail")
            if outcomes.get(key) != "fail":
                outcomes[key] = o
        differ = [f"{k[0]}::{k[1]}: {outcomes.get(k, 'no result')} here, {v} in the plain run" for k, v in plain.items() if outcomes.get(k, "none") != v]
        if differ:
            errors.append(f"{len(differ)} tests differ from the plain run in the collected order: {differ[:5]}")
    expected = dict(item.split("=", 1) for item in known.split(";") if item)
    named = {t["id"]: t["category"] for t in summary["tests"]}
    failed_plain = {k for k, v in plain.items() if v == "fail"}
    for test, category in named.items():
        if test in expected:
            if expected[test] != category:
                errors.append(f"{test} is {category}, expected {expected[test]}")
        elif mangled(test) not in failed_plain:
            errors.append(f"{test} is called {category} but passes in the plain run and is no known finding")
    for test, category in expected.items():
        if test not in named:
            errors.append(f"the known finding {test} ({category}) was not found")
    by_category = {}
    for c in named.values():
        by_category[c] = by_category.get(c, 0) + 1
    found = ", ".join(f"{n} {c}" for c, n in sorted(by_category.items())) or "none"
    counts = {o: list(plain.values()).count(o) for o in ("pass", "fail", "skip")}
    cost = (summary.get("cost") or {})
    print(f"{name} ({spec}, Python {pyversion}): {len(selection)} tests; plain run {counts}; flakehunt exit {code}, "
          f"{len(shuffled)} warm attempts, named: {found}; classification {cost.get('runs', 0)} runs "
          f"{cost.get('seconds', 0)} s; {seconds} s in all")
for e in errors:
    print(f"  FAILED {name}: {e}")
sys.exit(1 if errors else 0)
PY
done
echo "smoke test of real suites: $(($(date +%s) - started)) s"
exit $failed
