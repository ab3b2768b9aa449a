"""flakehunt's pytest plugin for the state an order-dependent test trips over.

Loaded with ``-p flakehunt_state --flakehunt-state REQUEST.json`` in a pytest whose arguments are
the suite's own and whose node ids include the tests the request names. REQUEST is a JSON object:

    {"victims": [{"victim": ID, "polluters": [ID, ...], "brittle": false}, ...], "runs": 2,
     "max_trials": 64, "out": PATH}

and the answer ``{"results": [RESULT, ...]}``, one per victim in order (or ``{"error": ...}``).

pytest collects once (imports the conftests, the test modules and what they import); then this
plugin takes over the run loop and forks, as the warm parent does, so that every trial starts
from the same imported, untouched process:

1. One fork takes a fingerprint of the process state, runs the polluters (for a brittle test:
   its state-setters), takes a second fingerprint and reports the differences: module globals
   of every loaded module (the project's and its libraries', pytest's own excepted), followed
   into the attributes of classes defined there and of objects (to a bounded depth), each
   value compared by a stable digest (never ``id()``); ``sys.modules`` (added, removed,
   replaced), ``sys.path``, ``os.environ``, the working directory, ``random``'s state and
   numpy's global generator, ``warnings`` filters, logging's levels and handlers, signal
   handlers, the locale and the time zone, and the files under the working directory and the
   temporary directory.
2. Each trial forks, runs the polluters, puts a subset of the differences back (or, for a
   brittle test, puts back all but the subset) and runs the victim. Delta debugging (Zeller's
   ddmin) finds the smallest subset whose restoration makes the victim pass; the subset is
   then confirmed ``runs`` more times.

The victims of one set of polluters share the first fingerprints (a victim whose failure they do
not explain, since the polluters' fixtures may end differently before it, gets its own), and each
tries first the smallest state found for an earlier one.

Every fork undoes its changes to the files it can see before it exits, so that one trial's
files are not the next one's state. Nothing is printed; the result is one JSON object at
``out``. The walk is bounded: at most ``_MAX_ENTRIES`` values, ``_MAX_ITEMS`` elements per
container and ``_DEPTH`` levels into a value; the result says what a fingerprint cost.
"""

import hashlib
import json
import os
import re
import stat
import sys
import time
import types

import pytest

# The bounds of a fingerprint.
_MAX_ENTRIES = 200000
_MAX_ITEMS = 256
_DEPTH = 3
_MAX_FILES = 20000
_MAX_FILE_BYTES = 1 << 20
# Files up to this size are kept at the first fingerprint so that a trial can put them back.
_KEEP_FILE_BYTES = 1 << 16
_COPY_LIMIT = 10000
# The modules of the test runner and of flakehunt itself: their state is the run's, not the
# suite's, and putting it back would break the runner rather than explain a test.
_RUNNER = ("_pytest", "pytest", "pluggy", "py", "iniconfig", "flakehunt_", "_hypothesis_pytestplugin", "xdist", "execnet")
# Modules whose state has its own kind below (compared and put back as a whole), or that is
# nothing but the interpreter's bookkeeping.
_SPECIAL = ("sys", "os", "posix", "logging", "warnings", "random", "signal", "locale", "time", "gc", "tracemalloc", "linecache", "builtins")
# What makes a repr differ between two processes holding equal values.
_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), tuple, frozenset, type, types.ModuleType, types.FunctionType)
_TEST_MODULE = re.compile(r"(^|\.)(test_[^.]*|[^.]*_test|conftest|tests?)(\.|$)")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+| id='[0-9]+'")


def pytest_addoption(parser):
    parser.addoption("--flakehunt-state", metavar="REQUEST", default=None, help="find the state a test trips over (flakehunt)")


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    path = session.config.getoption("flakehunt_state")
    if not path:
        return None
    with open(path) as f:
        request = json.load(f)
    try:
        result = _analyse(session, request)
    except Exception as e:  # noqa: BLE001 -- the result says why, flakehunt reports it
        result = {"error": "%s: %s" % (type(e).__name__, e)}
    tmp = request["out"] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, request["out"])
    return True


# --- digests -------------------------------------------------------------------------------


def _runner_module(name):
    return any(name == r.rstrip("_") or name.startswith(r if r.endswith("_") else r + ".") or (r.endswith("_") and name.startswith(r)) for r in _RUNNER)


def _short(value):
    if isinstance(value, (list, tuple, dict, set, frozenset)) and len(value) > _MAX_ITEMS:
        return "<%s of %d items>" % (type(value).__name__, len(value))
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 -- a failing __repr__ is the value's, not ours
        text = "<%s with a failing __repr__>" % type(value).__name__
    text = _ADDRESS.sub("", text)
    return text if len(text) <= 120 else text[:117] + "..."


def _canon(value, depth, seen):
    """A canonical text of `value`, stable across processes: no addresses, bounded in size."""
    t = type(value)
    if value is None or t in (bool, int, float, complex):
        return repr(value)
    if t in (str, bytes):
        return repr(value) if len(value) <= 4096 else "%s#%d:%s" % (t.__name__, len(value), hashlib.blake2b(value if t is bytes else value.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest())
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, type, types.ModuleType, types.MethodType)):
        owner = getattr(value, "__module__", None) or ""
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "?")
        return "%s:%s.%s" % (t.__name__, owner, name)
    if depth <= 0:
        return t.__name__
    if id(value) in seen:
        return "<cycle>"
    seen.add(id(value))
    try:
        if t in (list, tuple) or isinstance(value, (list, tuple)):
            items = [_canon(v, depth - 1, seen) for v in value[:_MAX_ITEMS]]
            return "%s[%d](%s)" % (t.__name__, len(value), ",".join(items))
        if isinstance(value, dict):
            keys = list(value.keys())[:_MAX_ITEMS]
            pairs = sorted("%s:%s" % (_canon(k, 1, seen), _canon(value[k], depth - 1, seen)) for k in keys)
            return "%s{%d}(%s)" % (t.__name__, len(value), ",".join(pairs))
        if isinstance(value, (set, frozenset)):
            items = sorted(_canon(v, depth - 1, seen) for v in list(value)[:_MAX_ITEMS])
            return "%s{%d}(%s)" % (t.__name__, len(value), ",".join(items))
        attrs = getattr(value, "__dict__", None)
        if isinstance(attrs, dict):
            return "%s.%s%s" % (t.__module__, t.__qualname__, _canon(dict(attrs), depth - 1, seen))
        return "%s.%s:%s" % (t.__module__, t.__qualname__, _short(value))
    except Exception as e:  # noqa: BLE001 -- a value that cannot be read is named, not raised
        return "<%s unreadable: %s>" % (t.__name__, type(e).__name__)
    finally:
        seen.discard(id(value))


def _digest(value):
    try:
        text = _canon(value, _DEPTH, set())
    except Exception as e:  # noqa: BLE001 -- a value that cannot be read is named, not raised
        text = "<unreadable: %s>" % type(e).__name__
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


# --- the fingerprint -----------------------------------------------------------------------


class _Entry(object):
    """One piece of state: its kind, a digest, its text, and how to put it back."""

    __slots__ = ("kind", "digest", "text", "restore", "ident")

    def __init__(self, kind, digest, text, restore, ident=None):
        self.kind, self.digest, self.text, self.restore = kind, digest, text, restore
        # The object's identity within this process, for a mutable one: two paths to one
        # object (`from registry import SETTINGS`) are one piece of state.
        self.ident = ident


def _attribute_restorer(owner, name, value):
    """Puts `owner.name` back to `value`, and a list's, dict's or set's contents as they are now."""
    copy = None
    if isinstance(value, (list, dict, set, bytearray)) and len(value) <= _COPY_LIMIT:
        copy = type(value).copy(value) if not isinstance(value, (list, bytearray)) else value[:]

    def restore():
        setattr(owner, name, value)
        if copy is not None:
            if isinstance(value, (list, bytearray)):
                value[:] = copy
            else:
                value.clear()
                value.update(copy)

    return restore


def _absent_restorer(owner, name):
    def restore():
        if name in getattr(owner, "__dict__", {}):
            delattr(owner, name)

    return restore


def _walk_attributes(out, prefix, owner, depth, seen, budget, kind):
    try:
        attrs = dict(vars(owner))
    except TypeError:
        return
    for name in sorted(attrs, key=str):
        if len(out) >= budget:
            return
        if not isinstance(name, str) or name in ("__builtins__", "__warningregistry__", "__dict__", "__weakref__", "__loader__", "__spec__", "__cached__"):
            continue
        value = attrs[name]
        path = prefix + "." + name
        ident = None if isinstance(value, _IMMUTABLE) else id(value)
        out[path] = _Entry(kind, _digest(value), _short(value), _attribute_restorer(owner, name, value), ident)
        if depth <= 1 or id(value) in seen:
            continue
        module = getattr(owner, "__name__", None) if isinstance(owner, types.ModuleType) else getattr(owner, "__module__", None)
        if isinstance(value, type) and value.__module__ == module:
            seen.add(id(value))
            _walk_attributes(out, path, value, depth - 1, seen, budget, "class attribute")
        elif not isinstance(value, (type, types.ModuleType, types.FunctionType)) and type(value).__module__ not in ("builtins",) and isinstance(getattr(value, "__dict__", None), dict):
            seen.add(id(value))
            _walk_attributes(out, path, value, depth - 1, seen, budget, "object attribute")


def _files(root, skip):
    """Path -> (size, mtime, digest) under `root`, bounded."""
    found = {}
    for here, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__", ".pytest_cache", ".hypothesis", ".tox", ".venv", "node_modules") and not d.startswith("pytest-of-") and os.path.join(here, d) not in skip)
        for name in sorted(names):
            if len(found) >= _MAX_FILES:
                return found
            path = os.path.join(here, name)
            if path in skip:
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            digest = "%d" % st.st_size
            if stat.S_ISLNK(st.st_mode):
                digest = "-> %s" % _link(path)
            elif stat.S_ISREG(st.st_mode):
                data = _read_regular(path, _MAX_FILE_BYTES)
                if data is not None:
                    digest = hashlib.blake2b(data, digest_size=12).hexdigest()
            found[path] = (st.st_size, digest)
    return found


def _mtime(path):
    try:
        return os.lstat(path).st_mtime
    except OSError:
        return 0.0


def _read_regular(path, limit):
    """The bytes of `path` when it is a regular file of at most `limit` bytes, else None: never
    through a symbolic link, never from a FIFO or a device (which could block or never end)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        return f.read(limit + 1)


def _link(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


def _file_restorer(path, before):
    """What puts `path` back as it is now: a small regular file's bytes, a link's target (the
    link itself, never what it points to); a FIFO, a device or a large file is left as it is."""
    content, target = None, None
    if before is not None:
        target = _link(path)
        if target is None:
            content = _read_regular(path, _KEEP_FILE_BYTES)

    def restore():
        if before is None:
            try:
                os.remove(path)
            except OSError:
                pass
        elif target is not None:
            if _link(path) != target:
                if os.path.lexists(path):
                    os.remove(path)
                os.symlink(target, path)
        elif content is not None and _read_regular(path, _KEEP_FILE_BYTES) != content:
            # Written as a file again, never through a link the test left in its place.
            if os.path.islink(path):
                os.remove(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as f:
                f.write(content)

    return restore


def _fingerprint(skip_files):
    """The process state, as path -> _Entry."""
    out = {}
    seen = set()
    budget = _MAX_ENTRIES
    for name in sorted(sys.modules):
        module = sys.modules[name]
        if module is None or _runner_module(name) or name in _SPECIAL:
            continue
        # The one digest that is an identity: whether the entry is still the same module object
        # is the question, asked within one process, whose reference keeps it alive.
        out["sys.modules[%r]" % name] = _Entry("sys.modules", "module@%x" % id(module), "<module %s>" % name, _module_restorer(name, module))
        if isinstance(module, types.ModuleType):
            _walk_attributes(out, name, module, _DEPTH, seen, budget, "module global")
    for name in sorted(sys.modules):
        if name in _SPECIAL and not _runner_module(name):
            out["sys.modules[%r]" % name] = _Entry("sys.modules", "module@%x" % id(sys.modules[name]), "<module %s>" % name, _module_restorer(name, sys.modules[name]))
    out["sys.path"] = _Entry("sys.path", _digest(sys.path), _short(sys.path), _attribute_restorer(sys, "path", sys.path))
    for key in sorted(os.environ):
        out["os.environ[%r]" % key] = _Entry("environment variable", _digest(os.environ[key]), _short(os.environ[key]), _env_restorer(key, os.environ[key]))
    cwd = os.getcwd()
    out["os.getcwd()"] = _Entry("working directory", cwd, repr(cwd), lambda: os.chdir(cwd))
    import random

    state = random.getstate()
    out["random.getstate()"] = _Entry("random state", _digest(state), "<state %s>" % _digest(state)[:8], lambda: random.setstate(state))
    np = sys.modules.get("numpy")
    if np is not None and hasattr(np, "random"):
        npstate = np.random.get_state()
        out["numpy.random.get_state()"] = _Entry("random state", _digest([str(x) for x in npstate]), "<numpy state>", lambda: np.random.set_state(npstate))
    import warnings

    filters = list(warnings.filters)
    out["warnings.filters"] = _Entry("warnings filters", _digest([str(f) for f in filters]), _short(filters[:3]) + ("..." if len(filters) > 3 else ""), _attribute_restorer(warnings, "filters", warnings.filters))
    _logging(out)
    _signals(out)
    import locale

    try:
        current = locale.setlocale(locale.LC_ALL, None)
        out["locale.setlocale(LC_ALL)"] = _Entry("locale", current, repr(current), lambda: locale.setlocale(locale.LC_ALL, current))
    except locale.Error:
        pass
    zone = (time.tzname, time.timezone)
    out["time.tzname"] = _Entry("time zone", _digest(zone), _short(time.tzname), time.tzset)
    for root, kind in _ROOTS:
        for path, meta in _files(root, skip_files).items():
            out["file %s" % path] = _Entry(kind, meta[1], "%d bytes" % meta[0], _file_restorer(path, meta))
    return out


def _module_restorer(name, module):
    def restore():
        sys.modules[name] = module

    return restore


def _env_restorer(key, value):
    def restore():
        os.environ[key] = value

    return restore


def _logging(out):
    logging = sys.modules.get("logging")
    if logging is None:
        return
    loggers = [("root", logging.getLogger())]
    for name in sorted(logging.Logger.manager.loggerDict):
        logger = logging.Logger.manager.loggerDict[name]
        if isinstance(logger, logging.Logger):
            loggers.append((name, logger))
    for name, logger in loggers:
        # pytest's own capture handlers come and go with each test: not the suite's state.
        handlers = [h for h in logger.handlers if not type(h).__module__.startswith("_pytest")]
        value = (logger.level, [type(h).__name__ for h in handlers], logger.propagate, logger.disabled)
        default = (0, [], True, False) if name != "root" else None
        if value == default:
            continue
        out["logging.getLogger(%r)" % name] = _Entry("logging", _digest(value), "level=%s handlers=%s propagate=%s disabled=%s" % value, _logger_restorer(logger, list(logger.handlers)))


def _logger_restorer(logger, handlers):
    level, propagate, disabled = logger.level, logger.propagate, logger.disabled

    def restore():
        logger.setLevel(level)
        logger.handlers[:] = handlers
        logger.propagate, logger.disabled = propagate, disabled

    return restore


def _signals(out):
    import signal

    for number in sorted(int(s) for s in signal.valid_signals()) if hasattr(signal, "valid_signals") else []:
        try:
            handler = signal.getsignal(number)
        except (OSError, ValueError):
            continue
        if handler is None:
            continue
        name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else str(number)
        out["signal.getsignal(%s)" % name] = _Entry("signal handler", _digest(handler), _short(handler), _signal_restorer(number, handler))


def _signal_restorer(number, handler):
    import signal

    return lambda: signal.signal(number, handler)


def _memory():
    """(VmRSS, VmHWM) of this process in KiB."""
    found = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    found[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return found.get("VmRSS", 0), found.get("VmHWM", 0)


def _differences(before, after):
    """Paths whose state differs. A module added or removed is one difference, not one per
    global of it."""
    diffs = []
    gone = set()
    for path in set(before) ^ set(after):
        if path.startswith("sys.modules["):
            gone.add(path[len("sys.modules["):-1].strip("'\""))
    changed_owners = set(before) ^ set(after)
    for path in sorted(set(before) | set(after)):
        b, a = before.get(path), after.get(path)
        if b is not None and a is not None and b.digest == a.digest:
            continue
        kind = (b or a).kind
        if any(path.startswith(m + ".") for m in gone):
            continue
        # The attributes of an object that is itself new or gone are part of that difference.
        owner = path.rpartition(".")[0]
        if owner in changed_owners and (owner in before) != (owner in after):
            continue
        diffs.append({"path": path, "kind": kind, "before": b.text if b else None, "after": a.text if a else None})
    return _aliases_merged(diffs, before, after)


def _aliases_merged(diffs, before, after):
    """One difference per object changed in place, named by its path in a module that is not a
    test module (the shortest such), with its other paths as `aliases`."""
    groups = {}
    for d in diffs:
        b, a = before.get(d["path"]), after.get(d["path"])
        if b is not None and a is not None and b.ident is not None and b.ident == a.ident:
            groups.setdefault(b.ident, []).append(d)
    merged = set()
    for group in groups.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda d: (bool(_TEST_MODULE.search(d["path"].rpartition(".")[0])), len(d["path"]), d["path"]))
        group[0]["aliases"] = [d["path"] for d in group[1:]]
        merged.update(d["path"] for d in group[1:])
    return [d for d in diffs if d["path"] not in merged]


def _undo_addition(path, kind):
    """What removes state the polluter added: an attribute, a module, a variable, a file."""
    if kind == "sys.modules":
        name = path[len("sys.modules["):-1].strip("'\"")
        return lambda: sys.modules.pop(name, None)
    if kind == "environment variable":
        key = path[len("os.environ["):-1].strip("'\"")
        return lambda: os.environ.pop(key, None)
    if kind.startswith("file"):
        name = path[len("file "):]
        return lambda: os.remove(name)
    owner_path, _, name = path.rpartition(".")
    return lambda: _delete_attribute(owner_path, name)


def _delete_attribute(owner_path, name):
    parts = owner_path.split(".")
    for i in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:i]))
        if module is not None:
            owner = module
            for part in parts[i:]:
                owner = getattr(owner, part)
            if name in getattr(owner, "__dict__", {}):
                delattr(owner, name)
            return


# --- running tests in forks ------------------------------------------------------------------


class _Outcomes(object):
    def __init__(self):
        self.failed = set()

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed.add(report.nodeid)


def _fork(work):
    """Runs `work()` in a fork with its output discarded; its JSON result, or an error."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        # A second early, so that a file system whose times are coarse still counts the fork's.
        _STARTED[0] = time.time() - 1
        os.close(read)
        code = 0
        try:
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 1)
            os.dup2(null, 2)
            # pytest's terminal writes to a copy of the original stdout: quiet it too.
            for name in ("terminalreporter", "junitxml"):
                plugin = _SESSION[0].config.pluginmanager.get_plugin(name)
                if plugin is not None:
                    _SESSION[0].config.pluginmanager.unregister(plugin)
            data = json.dumps(work()).encode()
        except BaseException as e:  # noqa: BLE001 -- the parent reports it
            data = json.dumps({"error": "%s: %s" % (type(e).__name__, e)}).encode()
            code = 1
        with os.fdopen(write, "wb") as f:
            f.write(data)
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    try:
        return json.loads(data.decode() or "{}")
    except ValueError:
        return {"error": "the trial's process ended without a result"}


def _run(session, items, outcomes):
    for i, item in enumerate(items):
        item.ihook.pytest_runtest_protocol(item=item, nextitem=items[i + 1] if i + 1 < len(items) else None)


class _GaveUp(Exception):
    """The trials' limit was reached."""


_SESSION = [None]
# The directories whose files a fingerprint reads: the working directory and the temporary
# directory as the run started, whatever directory a test moves to.
_ROOTS = []
_STARTED = [0.0]


def _analyse(session, request):
    _SESSION[0] = session
    import tempfile

    _ROOTS[:] = [(os.getcwd(), "file under the working directory"), (tempfile.gettempdir(), "file in the temporary directory")]
    by_id = {item.nodeid: item for item in session.items}
    victims = request["victims"]
    missing = [t for v in victims for t in [v["victim"]] + v["polluters"] if t not in by_id]
    if missing:
        return {"error": "not collected: %s" % ", ".join(sorted(set(missing)))}
    outcomes = _Outcomes()
    session.config.pluginmanager.register(outcomes, "flakehunt-state-outcomes")
    search = _Search(request, by_id, outcomes)
    return {"results": [search.one(v) for v in victims]}


class _Search(object):
    """The searches of one run: the victims of one set of polluters share its fingerprints (the
    survey, taken once) and try the state an earlier victim was found to trip over first."""

    def __init__(self, request, by_id, outcomes):
        self.by_id = by_id
        self.outcomes = outcomes
        self.confirm = int(request.get("runs", 2))
        self.limit = int(request.get("max_trials", 64))
        self.skip = {request["out"], request["out"] + ".tmp", os.path.abspath(_SESSION[0].config.getoption("flakehunt_state"))}
        # Per (polluters, brittle): the survey, and the smallest states found.
        self.surveys = {}
        self.found = {}

    def survey(self, polluters, victim):
        skip = self.skip

        def work():
            rss, _ = _memory()
            start = time.perf_counter()
            before = _fingerprint(skip)
            first = time.perf_counter() - start
            _, hwm = _memory()
            _run_until(polluters, victim)
            start = time.perf_counter()
            after = _fingerprint(skip)
            second = time.perf_counter() - start
            diffs = _differences(before, after)
            _restore_files(before, skip)
            cost = {"seconds": [round(first, 4), round(second, 4)], "entries": len(before), "kib": max(0, hwm - rss)}
            return {"differences": diffs, "cost": cost}

        return _fork(work)

    def one(self, entry):
        victim = self.by_id[entry["victim"]]
        polluters = [self.by_id[t] for t in entry["polluters"]]
        brittle = bool(entry.get("brittle"))
        key = (tuple(entry["polluters"]), brittle)
        shared = key in self.surveys
        found = self.surveys[key] if shared else self.survey(polluters, victim)
        if "error" in found:
            return dict(found, victim=victim.nodeid)
        self.surveys.setdefault(key, found)
        trials = [0]
        skip, outcomes, limit = self.skip, self.outcomes, self.limit
        state = {"paths": [], "kinds": {}}

        def take(survey):
            state["kinds"] = {d["path"]: d["kind"] for d in survey["differences"]}
            state["paths"] = sorted(state["kinds"])

        take(found)

        def good(subset):
            """Whether the victim passes after the polluters with the differences in `subset` put
            back; for a brittle test, with only those kept (all the others put back)."""
            if trials[0] >= limit:
                raise _GaveUp()
            trials[0] += 1
            chosen = set(subset)
            paths, kinds = state["paths"], state["kinds"]

            def work():
                before = _fingerprint(skip)
                _run_until(polluters, victim)
                for path in paths:
                    if (path in chosen) != brittle:
                        entry = before.get(path)
                        _call(entry.restore if entry is not None else _undo_addition(path, kinds[path]))
                victim.ihook.pytest_runtest_protocol(item=victim, nextitem=None)
                _restore_files(before, skip)
                return {"passed": victim.nodeid not in outcomes.failed}

            return bool(_fork(work).get("passed"))

        result = {"victim": victim.nodeid, "polluters": entry["polluters"], "brittle": brittle}
        try:
            if good([]):
                result["verdict"] = "passes after its state-setters with all their state put back: the state is outside what a fingerprint sees" if brittle else "passes after its polluters in a fork: nothing to explain"
            else:
                # The state an earlier victim of the same polluters tripped over, first: when it
                # makes this one pass too, the whole set need not be tried.
                minimal = None
                for earlier in self.found.get(key, []):
                    if set(earlier) <= set(state["paths"]) and good(earlier):
                        minimal = earlier if len(earlier) == 1 else _ddmin(list(earlier), good)
                        break
                explained = minimal is not None or good(state["paths"])
                if not explained and shared:
                    # The survey taken before another victim: the polluters' fixtures may end
                    # differently before this one. Its own survey.
                    found = self.survey(polluters, victim)
                    if "error" in found:
                        return dict(found, victim=victim.nodeid)
                    take(found)
                    explained = good(state["paths"])
                if not explained:
                    result["verdict"] = "fails after its state-setters in a fork" if brittle else "putting back every difference does not make it pass: the state is outside what a fingerprint sees"
                else:
                    if minimal is None:
                        minimal = _ddmin(state["paths"], good)
                    searched = trials[0]
                    passed = sum(1 for _ in range(self.confirm) if good(minimal))
                    result["state"] = [d for d in found["differences"] if d["path"] in set(minimal)]
                    result["confirmed"] = [passed, self.confirm]
                    result["search_trials"] = searched
                    if passed == self.confirm and minimal not in self.found.setdefault(key, []):
                        self.found[key].append(minimal)
        except _GaveUp:
            result["verdict"] = "no smallest set found within %d trials" % limit
        result["differences"] = found["differences"][:200]
        result["different"] = len(state["paths"])
        result["cost"] = found["cost"]
        result["trials"] = trials[0]
        return result


def _run_until(polluters, victim):
    """Runs the polluters as a run that goes on to the victim would (its fixtures kept)."""
    for i, item in enumerate(polluters):
        item.ihook.pytest_runtest_protocol(item=item, nextitem=polluters[i + 1] if i + 1 < len(polluters) else victim)


def _call(restore):
    try:
        restore()
    except Exception:  # noqa: BLE001 -- a piece that cannot be put back stays as it is
        pass


def _restore_files(before, skip):
    """Puts the files a fork can see back as `before` had them: removes the ones created since,
    writes back the (small) ones changed or removed."""
    for root, _ in _ROOTS:
        for path in _files(root, skip):
            # Only a file written since this fork started is its own to remove.
            if "file %s" % path not in before and _mtime(path) >= _STARTED[0]:
                _call(lambda: os.remove(path))
    for path, entry in before.items():
        if entry.kind.startswith("file"):
            _call(entry.restore)


def _ddmin(items, passes):
    """Zeller's ddmin: a 1-minimal subset of `items` for which `passes` holds, given that it
    holds for `items` (Zeller and Hildebrandt, "Simplifying and Isolating Failure-Inducing
    Input", TSE 2002)."""
    n = 2
    while len(items) >= 2:
        size = len(items) // n
        chunks = [items[i:i + size] for i in range(0, len(items), size)] if size else [[x] for x in items]
        reduced = False
        for chunk in chunks:
            if passes(chunk):
                items, n, reduced = chunk, 2, True
                break
        if not reduced:
            for chunk in chunks:
                rest = [x for x in items if x not in chunk]
                if n > 2 and passes(rest):
                    items, n, reduced = rest, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(items):
                break
            n = min(len(items), n * 2)
    if len(items) == 1:
        return items
    return items
