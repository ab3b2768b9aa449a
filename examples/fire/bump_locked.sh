#!/bin/sh
# bump.sh with the fix: the whole read-modify-write-append runs under an
# exclusive flock(1), so concurrent instances take turns and none is lost.
set -eu

# Lock counter.txt itself rather than a separate lock file, so the state
# directory ends up with the same files as a sequential run. This is sound
# because the file is rewritten in place (same inode), never replaced.
exec 9< counter.txt
flock 9

n=$(cat counter.txt)
sleep 0.01
echo $((n + 1)) > counter.txt
echo "counter -> $((n + 1))" >> events.log
# The lock is released when the script exits and fd 9 is closed.
