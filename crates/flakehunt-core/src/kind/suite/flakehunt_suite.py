"""flakehunt's pytest plugin for `flakehunt suite` and `--pytest`: what pytest collected, and each
test's result the moment it is known.

flakehunt writes this file where a run can load it, puts that directory on PYTHONPATH and loads
it with ``-p flakehunt_suite``. It changes nothing pytest does; it writes what pytest itself
knows, so that no option of a project (``-v``, ``-q -q``, a plugin that changes pytest's output)
changes what flakehunt reads:

- With ``--flakehunt-collect FILE``: once the session is configured, one JSON object naming
  pytest's rootdir, whether pytest-xdist distributes the tests and whether pytest-cov measures
  them; once collection is done, the
  same object with the node id of every item the session would run (``session.items``, after
  deselection and every plugin's changes: doctests and parametrized ids exactly as pytest names
  them) and every collection error in pytest's own words. It also stops the collection at a
  symlink that leads to a directory above it (``{"loop": ...}``): pytest would collect through it
  again and again, each level doubling the paths when there are two such links.
  The collection also names the paths pytest was given (``session._initialpaths``, the
  project's own paths or its ``testpaths``).
- With FLAKEHUNT_SUITE_INITPATHS set in the environment (a JSON list of those paths): the session
  takes only those as the paths it was given, whatever node ids a run names. pytest treats a
  file named on its command line specially: it collects it as a test module whatever its name,
  and rewrites its ``assert`` statements, which changes the message of an AssertionError that a
  doctest in it expects (zipp's ``Translator('xyz')``). A run that names the node ids of its
  tests then meets each module as the project's own run does.
- With FLAKEHUNT_SUITE_RESULTS set in the environment (each attempt's own file): one JSON line per
  event as it happens, flushed, so that a process that dies (a segfault, a kill at a timeout,
  ``os._exit``) leaves every event before its death: ``{"start": ID}``, then one
  ``{"report": ID, "when": ..., "outcome": ..., "message": ...}`` per phase, then
  ``{"finish": ID}``; ``{"collect_error": ID, "message": ...}`` for a file that could not be
  collected. The file is opened by the process that writes (a warm parent's fork, whose
  environment is its attempt's, opens its own).
"""

import json
import os

import pytest

_RESULTS = "FLAKEHUNT_SUITE_RESULTS"
_INITPATHS = "FLAKEHUNT_SUITE_INITPATHS"
# The longest message written per report: enough for an assertion's first lines.
_MESSAGE_LIMIT = 2000


def pytest_addoption(parser):
    parser.addoption(
        "--flakehunt-collect",
        metavar="FILE",
        default=None,
        help="write the collected node ids and pytest's rootdir to FILE (flakehunt)",
    )


class _Log(object):
    """The results file of the process that writes, opened at its first event."""

    def __init__(self):
        self.pid = None
        self.file = None

    def write(self, event):
        path = os.environ.get(_RESULTS)
        if not path:
            return
        if self.pid != os.getpid():
            self.file = open(path, "a")
            self.pid = os.getpid()
        self.file.write(json.dumps(event) + "\n")
        self.file.flush()


_LOG = _Log()
_COLLECTED = {"errors": []}


def _cut(text):
    text = str(text)
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT]


def _message(report):
    """A report's message: a skip's reason, a failure's crash line, else its text."""
    longrepr = report.longrepr
    if longrepr is None:
        return None
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return _cut(longrepr[2])
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        return _cut(crash.message)
    return _cut(getattr(report, "longreprtext", None) or longrepr)


def _error_line(report):
    """A collection error in one line: pytest's last `E   ` line, else its last line."""
    text = str(getattr(report, "longreprtext", None) or report.longrepr or "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    if errors:
        return _cut(errors[-1])
    return _cut(lines[-1]) if lines else "no message"


def _rootdir(config):
    root = getattr(config, "rootpath", None) or config.rootdir
    return str(root)


def _write_collected(config):
    path = config.getoption("flakehunt_collect")
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(_COLLECTED, f)
    os.replace(tmp, path)


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    _COLLECTED["rootdir"] = _rootdir(config)
    numprocesses = getattr(config.option, "numprocesses", None)
    _COLLECTED["xdist"] = bool(numprocesses) and config.pluginmanager.hasplugin("xdist")
    # pytest-cov registers its plugin only when the options ask for coverage (--cov).
    _COLLECTED["coverage"] = config.pluginmanager.get_plugin("_cov") is not None and not getattr(config.option, "no_cov", False)
    _write_collected(config)


def _loop(path, config):
    """Stops the collection at a symlink to a directory that pytest is already inside on the
    path it followed to the link (directly, or through other links)."""
    if not config.getoption("flakehunt_collect") or not os.path.islink(path):
        return None
    target = os.path.realpath(path)
    if not os.path.isdir(target):
        return None
    ancestors, up = set(), os.path.dirname(os.path.abspath(path))
    while True:
        ancestors.add(os.path.realpath(up))
        if os.path.dirname(up) == up:
            break
        up = os.path.dirname(up)
    if target in ancestors:
        _COLLECTED["loop"] = {"path": os.path.relpath(path, _COLLECTED.get("rootdir", ".")), "target": target}
        _write_collected(config)
        pytest.exit("flakehunt: %s is a symlink to %s, a directory that contains it" % (path, target), returncode=4)
    return None


if int(pytest.__version__.split(".")[0]) >= 7:

    def pytest_ignore_collect(collection_path, config):
        return _loop(str(collection_path), config)

else:

    def pytest_ignore_collect(path, config):
        return _loop(str(path), config)


def pytest_collectreport(report):
    if report.failed:
        message = _error_line(report)
        _COLLECTED["errors"].append({"nodeid": report.nodeid, "message": message})
        _LOG.write({"collect_error": report.nodeid, "message": message})


def pytest_collection_finish(session):
    _COLLECTED["items"] = [item.nodeid for item in session.items]
    _COLLECTED["initialpaths"] = sorted(str(p) for p in getattr(session, "_initialpaths", ()))
    _write_collected(session.config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    given = os.environ.get(_INITPATHS)
    if not given:
        return
    paths = frozenset(os.path.abspath(p) for p in json.loads(given))
    and_parents = set(paths)
    for p in paths:
        while os.path.dirname(p) != p:
            p = os.path.dirname(p)
            and_parents.add(p)

    def isinitpath(path, with_parents=False, **_):
        return os.path.abspath(str(path)) in (and_parents if with_parents else paths)

    # An attribute of this session, which both the collection and the assertion rewriter ask.
    session.isinitpath = isinitpath


def pytest_runtest_logstart(nodeid, location):
    _LOG.write({"start": nodeid})


def pytest_runtest_logreport(report):
    outcome = report.outcome
    event = {"report": report.nodeid, "when": report.when, "outcome": outcome}
    if outcome == "passed" and getattr(report, "wasxfail", None) is not None:
        # An xfail-marked test that passed (XPASS, not strict): its failures are reported as
        # skips (xfailed), so its passes are too; counted as passes alone, they would make a
        # test that still fails at some rate read as passing (`flakehunt verify`).
        event["outcome"] = "skipped"
        event["message"] = "XPASS %s" % (report.wasxfail or "(xfail)")
    elif outcome != "passed":
        message = _message(report)
        if message:
            event["message"] = message
    _LOG.write(event)


def pytest_runtest_logfinish(nodeid, location):
    _LOG.write({"finish": nodeid})
