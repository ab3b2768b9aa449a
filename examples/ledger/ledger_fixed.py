"""The ledger from ledger.py with the race fixed.

One lock makes "read balances, journal, write balances" a single step with
respect to other transfers, so no update can be lost in between. A per-account
lock would allow more parallelism but needs a fixed locking order to avoid
deadlocks; with the GIL there is little parallelism to gain anyway.
"""

import threading
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
        self._lock = threading.Lock()

    def total(self):
        with self._lock:
            return sum(self.balances.values())

    def transfer(self, src, dst, amount):
        with self._lock:
            src_balance = self.balances[src]
            dst_balance = self.balances[dst]
            if src_balance < amount:
                raise InsufficientFunds(f"{src} has {src_balance}, needs {amount}")
            self.journal.append(Entry(src, dst, amount))
            self.balances[src] = src_balance - amount
            self.balances[dst] = dst_balance + amount
