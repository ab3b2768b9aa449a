"""Concurrent transfers must keep the ledger consistent with its journal.

Run directly: `python3 examples/ledger/test_ledger.py`. Exits 0 on success and
1 with an AssertionError naming the accounts whose balance went wrong.
Set LEDGER_MODULE=ledger_fixed to run the same test against the fixed ledger.
"""

import importlib
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
Ledger = importlib.import_module(os.environ.get("LEDGER_MODULE", "ledger")).Ledger

ACCOUNTS = ["alice", "bob", "carol", "dave"]
OPENING = 1_000_000
THREADS = 4
TRANSFERS_PER_THREAD = int(os.environ.get("LEDGER_TRANSFERS", "1000"))


def worker(ledger, n, start):
    start.wait()  # release all workers at once, like a burst of requests
    # Deterministic, overlapping traffic: every thread moves money around the
    # ring of accounts, so any two threads regularly touch the same account.
    for i in range(TRANSFERS_PER_THREAD):
        src = ACCOUNTS[(i + n) % len(ACCOUNTS)]
        dst = ACCOUNTS[(i + n + 1) % len(ACCOUNTS)]
        ledger.transfer(src, dst, 1 + (i * 7 + n) % 10)


def main():
    ledger = Ledger({name: OPENING for name in ACCOUNTS})
    start = threading.Barrier(THREADS)
    threads = [
        threading.Thread(target=worker, args=(ledger, n, start)) for n in range(THREADS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    # Replaying the journal gives what every balance should be. Comparing per
    # account (not just the total) also catches lost updates that happen to
    # cancel out.
    expected = {name: OPENING for name in ACCOUNTS}
    for entry in ledger.journal:
        expected[entry.src] -= entry.amount
        expected[entry.dst] += entry.amount
    wrong = {
        name: ledger.balances[name] - expected[name]
        for name in ACCOUNTS
        if ledger.balances[name] != expected[name]
    }
    drift = ledger.total() - OPENING * len(ACCOUNTS)
    assert not wrong, (
        f"lost updates after {len(ledger.journal)} transfers: "
        + ", ".join(f"{name} off by {diff:+d}" for name, diff in wrong.items())
        + f"; total money changed by {drift:+d}"
    )
    print(f"ok: {len(ledger.journal)} transfers, balances match the journal")


if __name__ == "__main__":
    main()
