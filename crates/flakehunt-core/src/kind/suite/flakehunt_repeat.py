"""flakehunt's pytest plugin: runs the selected tests twice in one session.

pytest runs a node id given twice on the command line only once, even with
--keep-duplicates, so a test that passes the first time and fails the second
(non-idempotent) cannot be shown by repeating it there. flakehunt writes this
file into a scratch directory, puts that directory on PYTHONPATH and loads it
with ``-p flakehunt_repeat --flakehunt-repeat NODEID`` (or
``--flakehunt-repeat-all``, the pass that looks for non-idempotent tests among
all of them): each selected item then runs twice in a row in the same process.
Only the item itself is torn down between the two runs (its function-scoped
fixtures); module and class fixtures and module globals stay, which is what
"run twice in one process" means.
"""

import pytest
from _pytest.runner import runtestprotocol


def pytest_addoption(parser):
    parser.addoption(
        "--flakehunt-repeat",
        action="append",
        default=[],
        metavar="NODEID",
        help="run this test twice in a row in this session (flakehunt)",
    )
    parser.addoption(
        "--flakehunt-repeat-all",
        action="store_true",
        default=False,
        help="run every test twice in a row in this session (flakehunt)",
    )


def _repeated(config, item):
    return config.getoption("flakehunt_repeat_all") or item.nodeid in config.getoption("flakehunt_repeat")


def pytest_collection_modifyitems(session, config, items):
    # A node id that was not collected would otherwise be silently not repeated.
    wanted = set(config.getoption("flakehunt_repeat"))
    missing = sorted(wanted - {item.nodeid for item in items})
    if missing:
        raise pytest.UsageError("--flakehunt-repeat: not collected: " + ", ".join(missing))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if not _repeated(item.config, item):
        return None
    # The first run's teardown target is the item's parent, so that the item
    # itself is torn down (and set up afresh) while its parents stay set up;
    # passing the item would keep its fixtures and skip the second setup.
    # A doctest's runner empties the doctest's namespace when it ends (doctest's
    # ``clear_globs``), so its second run would find none of its module's names: each run
    # starts from the namespace pytest gave the first (the module's names, the same objects).
    dtest = getattr(item, "dtest", None)
    globs = dict(dtest.globs) if dtest is not None else None
    for following in (item.parent, nextitem):
        if globs is not None:
            dtest.globs.clear()
            dtest.globs.update(globs)
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        runtestprotocol(item, nextitem=following, log=True)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
