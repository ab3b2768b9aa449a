#!/bin/sh
# Count one event: increment counter.txt and append a line to events.log, both
# in the current directory (flakehunt fire runs this in a copy of state/).
#
# BUG: the read-modify-write of counter.txt is not locked. Two instances that
# read the same value both write value+1, so one increment is lost, and
# events.log gets the same line twice. See bump_locked.sh for the fix.
set -eu
# BUMP_FIXED=1 stands for the fix made after the hunt: the same command line then runs
# bump_locked.sh, so that `flakehunt verify` of the hunt's record can prove it.
if [ -n "${BUMP_FIXED:-}" ]; then exec sh "$(dirname "$0")/bump_locked.sh"; fi

n=$(cat counter.txt)
# Stands in for real work between the read and the write. It makes the window
# wide enough that concurrent instances collide nearly every time.
sleep 0.01
echo $((n + 1)) > counter.txt
# No PID or timestamp: a correct run must leave exactly the same files as a
# sequential one.
echo "counter -> $((n + 1))" >> events.log
