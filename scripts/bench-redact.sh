#!/usr/bin/env bash
# What redaction costs per attempt: an output tail (4 KiB) and a kept log (1 MiB), with and
# without secrets. Budget: well under the ~0.5 ms flakehunt may spend on an attempt.
# Usage: scripts/bench-redact.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --release --locked -p flakehunt-core --example redact_cost
