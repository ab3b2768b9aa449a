"""A tiny in-memory bank ledger shared by several worker threads.

It has a real concurrency bug: `transfer` reads both balances, does some
bookkeeping, then writes them back, without a lock. If another thread changes
one of those accounts in between, that thread's update is overwritten: lost.

The GIL does not prevent this. It keeps single bytecodes atomic, but the
interpreter may switch threads between the read and the write: it forces a
switch when a thread has held the GIL for the switch interval (5 ms by
default). With the default interval that rarely lands inside the window, so
the test usually passes; with a tiny interval it fails most of the time.

ledger_fixed.py is the same code with a lock.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    src: str
    dst: str
    amount: int


class InsufficientFunds(Exception):
    pass


class Ledger:
    def __init__(self, balances):
        self.balances = dict(balances)
        self.journal = []

    def total(self):
        return sum(self.balances.values())

    def transfer(self, src, dst, amount):
        # BUG: unlocked read-modify-write of shared balances.
        src_balance = self.balances[src]
        dst_balance = self.balances[dst]
        if src_balance < amount:
            raise InsufficientFunds(f"{src} has {src_balance}, needs {amount}")
        # Building the journal entry runs Python code (the dataclass __init__),
        # a point where the interpreter may hand the GIL to another thread: the
        # balances read above can be stale by the time they are written below.
        self.journal.append(Entry(src, dst, amount))
        self.balances[src] = src_balance - amount
        self.balances[dst] = dst_balance + amount
