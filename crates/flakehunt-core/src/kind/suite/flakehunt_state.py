"""flakehunt's pytest plugin for the state an order-dependent test trips over.

Loaded with ``-p flakehunt_state --flakehunt-state REQUEST.json`` in a pytest whose arguments are
the suite's own and whose node ids include the tests the request names. REQUEST is a JSON object:

    {"victims": [{"victim": ID, "polluters": [ID, ...], "brittle": false, "repeat": false}, ...],
     "runs": 2, "max_trials": 64, "out": PATH}

and the answer ``{"results": [RESULT, ...]}``, one per victim in order (or ``{"error": ...}``). A
non-idempotent test (``repeat``) is its own polluter: its first run, then its second. With
``"check": {"fixture", "apply_to", "runs", "polluters_failed"}`` the run checks the cleanup of its
one victim instead (the cleanup's module loaded as a plugin): the answer is ``{"check": ...}``.

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
3. One more fork writes a cleanup of that subset: a fixture that saves it before the polluter
   and puts it back after (for a brittle test: sets it), as code to paste into a conftest.py.

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
# An attribute that is not there.
_MISSING = object()


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

    __slots__ = ("kind", "digest", "text", "restore", "ident", "contents")

    def __init__(self, kind, digest, text, restore, ident=None, contents=None):
        self.kind, self.digest, self.text, self.restore = kind, digest, text, restore
        # The object's identity within this process, for a mutable one: two paths to one
        # object (`from registry import SETTINGS`) are one piece of state.
        self.ident = ident
        # A container's contents as they were (see `_contents_of`).
        self.contents = contents


def _attribute_restorer(owner, name, value, contents=None):
    """Puts `owner.name` back to `value`, and the contents of a list, dict or set (and of the
    containers in it, to a bounded depth) back in place as they are now (`contents`)."""
    if contents is None:
        contents = _contents_of(value, _DEPTH, _COPY_LIMIT)

    def restore():
        # The same object changed in place is not set again: an owner may refuse that (a
        # settings wrapper's __setattr__), where putting its contents back is what matters.
        if vars(owner).get(name, _MISSING) is not value:
            setattr(owner, name, value)
        if contents is not None:
            _put_contents_back(contents)

    return restore


def _contents_of(value, depth, limit):
    """A copy of what the container `value` holds, and of the containers it holds to `depth`
    levels (those of at most `limit` items), for `_put_contents_back`; None for anything else."""
    if depth <= 0:
        return None
    if isinstance(value, dict) and len(value) <= limit:
        return (value, [(k, v, _contents_of(v, depth - 1, _MAX_ITEMS)) for k, v in list(value.items())])
    if isinstance(value, list) and len(value) <= limit:
        return (value, [(None, v, _contents_of(v, depth - 1, _MAX_ITEMS)) for v in value])
    if isinstance(value, (set, bytearray)) and len(value) <= limit:
        return (value, [(None, v, None) for v in value])
    return None


def _put_contents_back(contents):
    """Puts a container's contents back in place as `_contents_of` copied them: the same
    objects in it, each container among them with its own contents."""
    container, items = contents
    for _, v, inner in items:
        if inner is not None:
            _put_contents_back(inner)
    if isinstance(container, dict):
        container.clear()
        container.update((k, v) for k, v, _ in items)
    elif isinstance(container, set):
        container.clear()
        container.update(v for _, v, _ in items)
    else:
        container[:] = type(container)(v for _, v, _ in items)


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
        contents = _contents_of(value, _DEPTH, _COPY_LIMIT)
        out[path] = _Entry(kind, _digest(value), _short(value), _attribute_restorer(owner, name, value, contents), ident, contents)
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
    out.update(_file_entries(skip_files))
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
        diff = {"path": path, "kind": kind, "before": b.text if b else None, "after": a.text if a else None}
        if kind.startswith("file"):
            # Named where the user's run would have it: the search's own TMPDIR is no name of theirs.
            name = path[len("file "):]
            for root, prefix in ((_ROOTS[1][0], "$TMPDIR/"), (_ROOTS[0][0], "")):
                rel = os.path.relpath(name, root)
                if not rel.startswith(os.pardir):
                    diff["shown"] = "file " + prefix + rel
                    break
        if b is not None and a is not None and b.ident is not None and b.ident == a.ident and b.contents and a.contents:
            # A dict changed in place is named by the one entry in it that changed, where its
            # short text cannot show that (`config['display']['max_rows'] = 3 (was 60)`).
            changes = _inner_changes(b.contents, a.contents, "")
            if changes is not None and len(changes) == 1:
                where, was, now = changes[0]
                diff.update(shown=path + where, before=was, after=now)
        diffs.append(diff)
    return _aliases_merged(diffs, before, after)


def _as_was(value, contents):
    """`value` as `_contents_of` copied it: a container with the contents it had then."""
    if contents is None:
        return value
    container, items = contents
    if isinstance(container, dict):
        return {k: _as_was(v, inner) for k, v, inner in items}
    if isinstance(container, list):
        return [_as_was(v, inner) for _, v, inner in items]
    return type(container)(v for _, v, _ in items)


def _inner_changes(old, new, where):
    """(where, before, after) of each entry that differs between two copies of one dict's
    contents (`_contents_of`), into the dicts in it that were changed in place; None for
    anything but a dict."""
    if not isinstance(old[0], dict):
        return None
    was = {k: (v, inner) for k, v, inner in old[1]}
    now = {k: (v, inner) for k, v, inner in new[1]}
    changes = []
    for key in list(was) + [k for k in now if k not in was]:
        at = "%s[%s]" % (where, _short(key))
        if key not in now or key not in was:
            changes.append((at, _short(_as_was(*was[key])) if key in was else None, _short(_as_was(*now[key])) if key in now else None))
            continue
        (v, before), (w, after) = was[key], now[key]
        inner = _inner_changes(before, after, at) if v is w and before is not None and after is not None else None
        if inner is not None:
            changes.extend(inner)
        elif _digest(_as_was(v, before)) != _digest(_as_was(w, after)):
            changes.append((at, _short(_as_was(v, before)), _short(_as_was(w, after))))
    return changes


def _aliases_merged(diffs, before, after):
    """One difference per object changed in place, named by its path in a module that is not a
    test module (the shortest such), with its other paths as `aliases`."""
    groups = {}
    for d in diffs:
        b, a = before.get(d["path"]), after.get(d["path"])
        if b is not None and a is not None and b.ident is not None and b.ident == a.ident:
            groups.setdefault(b.ident, []).append(d)
    merged = set()
    imported = {name: i for i, name in enumerate(sys.modules)}
    for group in groups.values():
        if len(group) < 2:
            continue
        # The name a user knows it by: in the project's (or a library's) module rather than a
        # test module's, where it is stored (a module global) rather than reached through an
        # object, in the module imported first (the one that made it: the others import it
        # from there), and the shortest.
        group.sort(key=lambda d: (bool(_TEST_MODULE.search(d["path"].rpartition(".")[0])), d["kind"] != "module global", imported.get(d["path"].rpartition(".")[0], len(imported)), len(d["path"]), d["path"]))
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
    """The tests that failed (in any phase) since the last clear, and those skipped (a skip
    mark, ``pytest.skip`` in the test or a fixture, an ``xfail`` that failed as expected)."""

    def __init__(self):
        self.failed = set()
        self.skipped = set()

    def clear(self):
        self.failed.clear()
        self.skipped.clear()

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed.add(report.nodeid)
        elif report.skipped or getattr(report, "wasxfail", None) is not None:
            # An xfail-marked test's pass (XPASS) is no pass either: its failures are hidden.
            self.skipped.add(report.nodeid)


_OUTCOMES = _Outcomes()
# A doctest's names as pytest gave them, by item, for its runs after the first.
_GLOBS = {}


def _protocol(item, nextitem):
    """Runs `item` as a run that goes on to `nextitem` would; whether it passed. The same item
    run again (a non-idempotent test's second run) is torn down in between, its parents kept,
    as ``flakehunt_repeat`` runs it twice. A skipped run did not pass: its body's checks never
    ran, so a state whose restoration makes a victim skip itself is not the state it trips
    over, and a cleanup after which it skips is not proved (see `_skipped`)."""
    if nextitem is item:
        nextitem = item.parent
    dtest = getattr(item, "dtest", None)
    if dtest is not None:
        # A doctest's runner empties its namespace when it ends (doctest's ``clear_globs``):
        # each run starts from the names pytest gave the first.
        globs = _GLOBS.setdefault(id(item), dict(dtest.globs))
        dtest.globs.clear()
        dtest.globs.update(globs)
    _OUTCOMES.clear()
    item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
    return item.nodeid not in _OUTCOMES.failed and item.nodeid not in _OUTCOMES.skipped


def _skipped(item):
    """Whether `item`'s last run (see `_protocol`) was skipped rather than failed."""
    return item.nodeid in _OUTCOMES.skipped and item.nodeid not in _OUTCOMES.failed


def _run_until(polluters, victim):
    """Runs the polluters as a run that goes on to the victim would (its fixtures kept); the ids
    of those that failed."""
    failed = []
    for i, item in enumerate(polluters):
        if not _protocol(item, polluters[i + 1] if i + 1 < len(polluters) else victim):
            failed.append(item.nodeid)
    return failed


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
    session.config.pluginmanager.register(_OUTCOMES, "flakehunt-state-outcomes")
    search = _Search(request, by_id)
    if request.get("check"):
        v = victims[0]
        return _check(request["check"], by_id, [by_id[t] for t in v["polluters"]], by_id[v["victim"]], search.skip)
    return {"results": [search.one(v) for v in victims]}


class _Search(object):
    """The searches of one run: the victims of one set of polluters share its fingerprints (the
    survey, taken once) and try the state an earlier victim was found to trip over first."""

    def __init__(self, request, by_id):
        self.by_id = by_id
        self.request = request
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
            failed = _run_until(polluters, victim)
            start = time.perf_counter()
            after = _fingerprint(skip)
            second = time.perf_counter() - start
            diffs = _differences(before, after)
            _restore_files(before, skip)
            cost = {"seconds": [round(first, 4), round(second, 4)], "entries": len(before), "kib": max(0, hwm - rss)}
            return {"differences": diffs, "cost": cost, "polluters_failed": failed}

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
        skip, limit = self.skip, self.limit
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
                passed = _protocol(victim, None)
                _restore_files(before, skip)
                return {"passed": passed}

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
                    named = [d for d in found["differences"] if d["path"] in set(minimal)]
                    result["confirmed"] = [passed, self.confirm]
                    result["search_trials"] = searched
                    if passed == self.confirm:
                        if minimal not in self.found.setdefault(key, []):
                            self.found[key].append(minimal)
                        result["cleanup"] = _fork(lambda: _write_cleanup(_SESSION[0], entry, named, polluters, victim, brittle))
                    # Each piece as the user would name it (an entry of a dict, a file where
                    # their run has it); the cleanup was written from where it is.
                    result["state"] = [dict(d, path=d.get("shown", d["path"])) for d in named]
        except _GaveUp:
            result["verdict"] = "no smallest set found within %d trials" % limit
        result["differences"] = found["differences"][:200]
        result["different"] = len(state["paths"])
        result["cost"] = found["cost"]
        result["polluters_failed"] = found.get("polluters_failed", [])
        result["trials"] = trials[0]
        return result


def _call(restore):
    try:
        restore()
    except Exception:  # noqa: BLE001 -- a piece that cannot be put back stays as it is
        pass


def _file_entries(skip):
    """The files a fork can see, as fingerprint entries (see `_restore_files`)."""
    out = {}
    for root, kind in _ROOTS:
        for path, meta in _files(root, skip).items():
            out["file %s" % path] = _Entry(kind, meta[1], "%d bytes" % meta[0], _file_restorer(path, meta))
    return out


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
    return items


# --- the cleanup: a fixture that puts the state back, and its check ----------------------------


class _NoCode(Exception):
    """A piece of state no fixture can put back (or, for a brittle test, set)."""


# Source longer than this is not written into a fixture: a value that long is no literal a
# user would keep in a conftest.py.
_LITERAL_LIMIT = 400
# Seeds tried to name a brittle test's random state: a state-setter that calls random.seed(N)
# leaves the state seed N gives, which `random.seed(N)` then sets.
_SEEDS = 1024


def _identifier(name):
    import keyword

    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def _q(text):
    """`text` as a Python string literal, in double quotes where JSON's escapes do (they are
    Python's too), as code is mostly written."""
    if isinstance(text, str):
        quoted = json.dumps(text)
        if "\\u" not in quoted:
            return quoted
    return repr(text)


def _literal(value):
    """Python source that evaluates to `value` (a literal of at most _LITERAL_LIMIT characters),
    or None."""
    import ast

    try:
        text = repr(value)
        if len(text) > _LITERAL_LIMIT:
            return None
        back = ast.literal_eval(text)
    except Exception:  # noqa: BLE001 -- no literal, then
        return None
    if type(back) is not type(value) or back != value:
        return None
    return _q(value) if isinstance(value, str) else text


def _key(path, prefix):
    """`K` of `prefix[K]` (`os.environ['K']`, `sys.modules['m']`)."""
    import ast

    return ast.literal_eval(path[len(prefix) + 1:-1])


def _attribute(path):
    """(module, attribute names from it to the owner, the owner, the name) of an attribute
    path `module.Class.name`: the module is the longest prefix that is a loaded module."""
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:i])
        if sys.modules.get(module) is not None:
            owner = sys.modules[module]
            for name in parts[i:-1]:
                owner = getattr(owner, name)
            return module, parts[i:-1], owner, parts[-1]
    raise _NoCode("%s is no attribute of a loaded module" % path)


def _capture(diff):
    """What the code of a piece needs of its state now: for an attribute, where it is and its
    value; for a variable, a module or a file, its value."""
    kind, path = diff["kind"], diff["path"]
    if kind in ("module global", "class attribute", "object attribute"):
        where = _attribute(path)
        return {"where": where, "value": vars(where[2]).get(where[3], _MISSING)}
    if kind == "environment variable":
        return {"value": os.environ.get(_key(path, "os.environ"), _MISSING)}
    if kind == "sys.modules":
        return {"value": sys.modules.get(_key(path, "sys.modules"), _MISSING)}
    if kind == "working directory":
        return {"value": os.getcwd()}
    if kind.startswith("file"):
        name = path[len("file "):]
        data = _read_regular(name, _LITERAL_LIMIT)
        return {"value": data if data is not None else (_MISSING if not os.path.lexists(name) else None)}
    if kind == "random state":
        if path.startswith("numpy"):
            return {"value": sys.modules["numpy"].random.get_state()}
        import random

        return {"value": random.getstate()}
    if kind == "locale":
        import locale

        return {"value": locale.setlocale(locale.LC_ALL, None)}
    return {"value": None}


class _Code(object):
    """The fixture's source, piece by piece."""

    def __init__(self):
        self.imports = set()
        self.body_imports = set()
        self.setup = []
        self.teardown = []
        self.last = []
        self.names = set()
        self.request = False
        self.files = False

    def var(self, hint, prefix="saved_"):
        """A new local name for the saved value of `hint` (or with another `prefix`)."""
        base = prefix + (re.sub(r"\W+", "_", str(hint)).strip("_").lower() or "state")
        name, n = base, 1
        while name in self.names:
            n += 1
            name = "%s_%d" % (base, n)
        self.names.add(name)
        return name

    def owner(self, module, chain):
        """An expression of the object `module.chain...`."""
        parent = module.rpartition(".")[0]
        if all(_identifier(p) for p in module.split(".")) and (not parent or parent in sys.modules):
            self.body_imports.add("import %s" % module)
            expr = module
        else:
            self.imports.add("import sys")
            expr = "sys.modules[%s]" % _q(module)
        for name in chain:
            expr = "%s.%s" % (expr, name) if _identifier(name) else "getattr(%s, %s)" % (expr, _q(name))
        return expr


def _descriptor(value):
    """Whether reading `value` through its class would give something else (a staticmethod, a
    classmethod, a property): then it is read from the class's own dict."""
    import types as _types

    return not isinstance(value, _types.FunctionType) and hasattr(type(value), "__get__")


# How the contents of a container changed in place are copied, and put back into it in place
# (so that every name bound to it sees them): {x} is the container, {v} the copy.
_COPIES = (
    (list, "list({x})", ["{x}[:] = {v}"]),
    (bytearray, "bytearray({x})", ["{x}[:] = {v}"]),
    (dict, "dict({x})", ["{x}.clear()", "{x}.update({v})"]),
    (set, "set({x})", ["{x}.clear()", "{x}.update({v})"]),
)


def _contents(code, read, value):
    """(the copy's expression, the statements that put `{v}` back) of the container `value`
    that `read` reads, or (None, None) when it is no container; a container of containers is
    copied deep."""
    for t, copy, back in _COPIES:
        if isinstance(value, t):
            items = list(value.values() if isinstance(value, dict) else value)[:_MAX_ITEMS]
            if any(isinstance(v, (list, dict, set, bytearray)) for v in items):
                code.imports.add("import copy")
                copy = "copy.deepcopy({x})"
            return copy.replace("{x}", read), [line.replace("{x}", read) for line in back]
    return None, None


def _attribute_piece(code, diff, before, brittle):
    path, kind = diff["path"], diff["kind"]
    module, chain, owner_obj, name = before["where"]
    owner = code.owner(module, chain)
    had, was = before["value"] is not _MISSING, before["value"]
    now = vars(owner_obj).get(name, _MISSING)
    has = now is not _MISSING
    plain = _identifier(name) and not (kind == "class attribute" and _descriptor(was if had else now))
    read = "%s.%s" % (owner, name) if plain else "vars(%s)[%s]" % (owner, _q(name))

    def assign(value):
        return "%s.%s = %s" % (owner, name, value) if plain else "setattr(%s, %s, %s)" % (owner, _q(name), value)

    delete = "del %s.%s" % (owner, name) if plain else "delattr(%s, %s)" % (owner, _q(name))
    saved = code.var(name)
    copy, back = (None, None)
    if had and has and now is was:
        copy, back = _contents(code, read, was)
    if copy is not None:
        code.setup.append("%s = %s" % (saved, copy))
        code.teardown.extend(line.replace("{v}", saved) for line in back)
    elif had:
        code.setup.append("%s = %s" % (saved, read))
        code.teardown.append(assign(saved))
    else:
        code.teardown.extend(["if %s in vars(%s):" % (_q(name), owner), "    " + delete])
    if not brittle:
        return
    if not has:
        code.setup.append(delete)
        return
    literal = _literal(now)
    if literal is None:
        raise _NoCode("the value it sets %s to cannot be written as code (%s)" % (path, _short(now)))
    if copy is not None:
        code.setup.extend(line.replace("{v}", literal) for line in back)
    else:
        code.setup.append(assign(literal))


def _seed(state, get, seed):
    """The seed below _SEEDS whose state `get()` gives right after `seed(n)`, or None."""
    for n in range(_SEEDS):
        seed(n)
        if _digest(get()) == _digest(state):
            return n
    return None


def _piece(code, diff, before, after, brittle, session):
    """Adds to `code` what saves one difference before the test and puts it back after; for a
    brittle test, what sets it as the state-setters leave it."""
    kind, path = diff["kind"], diff["path"]
    if kind in ("module global", "class attribute", "object attribute"):
        return _attribute_piece(code, diff, before, brittle)
    value = after["value"]
    if kind in ("environment variable", "sys.modules"):
        table = "os.environ" if kind == "environment variable" else "sys.modules"
        code.imports.add("import %s" % table.split(".")[0])
        key = _key(path, table)
        saved = code.var(key)
        code.setup.append("%s = %s.get(%s)" % (saved, table, _q(key)))
        code.teardown.extend(["if %s is None:" % saved, "    %s.pop(%s, None)" % (table, _q(key)), "else:", "    %s[%s] = %s" % (table, _q(key), saved)])
        if not brittle:
            return
        if value is _MISSING:
            code.setup.append("%s.pop(%s, None)" % (table, _q(key)))
        elif kind == "environment variable":
            code.setup.append("os.environ[%s] = %s" % (_q(key), _q(value)))
        elif before["value"] is _MISSING:
            code.imports.add("import importlib")
            code.setup.append("importlib.import_module(%s)" % _q(key))
        else:
            raise _NoCode("its state-setters replace the module %s in sys.modules, which no code can repeat" % key)
        return
    if kind == "working directory":
        code.imports.add("import os")
        code.setup.append("saved_cwd = os.getcwd()")
        code.teardown.append("os.chdir(saved_cwd)")
        if brittle:
            code.setup.append("os.chdir(%s)" % _under_root(code, value, session))
        return
    if kind.startswith("file"):
        name = path[len("file "):]
        code.imports.add("import os")
        code.files = True
        where = code.var(os.path.basename(name), "path_")
        saved = code.var(os.path.basename(name))
        code.setup.append("%s = %s" % (where, _under_root(code, name, session)))
        code.setup.append("%s = _file_bytes(%s)" % (saved, where))
        code.teardown.append("_put_file_back(%s, %s)" % (where, saved))
        if brittle:
            if value is None:
                raise _NoCode("the file %s its state-setters leave is no small regular file" % name)
            code.setup.append("_put_file_back(%s, %s)" % (where, "None" if value is _MISSING else repr(value)))
        return
    if kind == "random state":
        module, seed = ("numpy.random", "numpy.random.seed") if path.startswith("numpy") else ("random", "random.seed")
        if module == "random":
            code.imports.add("import random")
        else:
            code.body_imports.add("import numpy.random")
        saved = code.var("%s_state" % module)
        code.setup.append("%s = %s.%s()" % (saved, module, "getstate" if module == "random" else "get_state"))
        code.teardown.append("%s.%s(%s)" % (module, "setstate" if module == "random" else "set_state", saved))
        if brittle:
            if module == "random":
                import random

                n = _seed(value, random.getstate, random.seed)
            else:
                np = sys.modules["numpy"]
                n = _seed([str(x) for x in value], lambda: [str(x) for x in np.random.get_state()], np.random.seed)
            if n is None:
                raise _NoCode("the random state its state-setters leave is none a seed below %d gives" % _SEEDS)
            code.setup.append("%s(%d)" % (seed, n))
        return
    if kind == "sys.path" and not brittle:
        code.imports.add("import sys")
        code.setup.append("saved_sys_path = list(sys.path)")
        code.teardown.append("sys.path[:] = saved_sys_path")
        return
    if kind == "warnings filters" and not brittle:
        code.imports.add("import warnings")
        code.setup.append("saved_filters = list(warnings.filters)")
        # resetwarnings also tells the warnings module its filters changed.
        code.teardown.extend(["warnings.resetwarnings()", "warnings.filters.extend(saved_filters)"])
        return
    if kind == "logging" and not brittle:
        import ast

        code.imports.add("import logging")
        name = ast.literal_eval(path[len("logging.getLogger("):-1])
        logger = code.var(name, "logger_")
        saved = code.var("%s_state" % name)
        code.setup.append("%s = logging.getLogger(%s)" % (logger, "" if name == "root" else _q(name)))
        code.setup.append("%s = (%s.level, list(%s.handlers), %s.propagate, %s.disabled)" % ((saved,) + (logger,) * 4))
        code.teardown.extend(["%s.setLevel(%s[0])" % (logger, saved), "%s.handlers[:] = %s[1]" % (logger, saved), "%s.propagate, %s.disabled = %s[2:]" % (logger, logger, saved)])
        return
    if kind == "signal handler" and not brittle:
        code.imports.add("import signal")
        number = path[len("signal.getsignal("):-1]
        saved = code.var(number)
        code.setup.append("%s = signal.getsignal(signal.%s)" % (saved, number))
        code.teardown.append("signal.signal(signal.%s, %s)" % (number, saved))
        return
    if kind == "locale":
        code.imports.add("import locale")
        code.setup.append("saved_locale = locale.setlocale(locale.LC_ALL)")
        code.teardown.append("locale.setlocale(locale.LC_ALL, saved_locale)")
        if brittle:
            code.setup.append("locale.setlocale(locale.LC_ALL, %s)" % _q(value))
        return
    if kind == "time zone" and not brittle:
        # The zone follows TZ, which a piece of its own puts back first.
        code.imports.add("import time")
        code.last.append("time.tzset()")
        return
    raise _NoCode("no code sets %s (%s) as its state-setters leave it" % (path, kind))


def _under_root(code, path, session):
    """An expression of `path` in the user's terms: under the temporary directory, under the
    rootdir, or as it is."""
    tmp = _ROOTS[1][0]
    root = str(getattr(session.config, "rootpath", None) or session.config.rootdir)
    for base, expr in ((tmp, "tempfile.gettempdir()"), (root, "str(request.config.rootpath)")):
        rel = os.path.relpath(path, base)
        if rel == os.curdir:
            rel = None
        elif rel.startswith(os.pardir):
            continue
        if base == tmp:
            code.imports.add("import tempfile")
        else:
            code.request = True
        return "os.path.join(%s, %s)" % (expr, _q(rel)) if rel else expr
    return _q(path)


_FILE_HELPERS = '''

def _file_bytes(path):
    """The bytes of the file at `path`, or None when there is none."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _put_file_back(path, data):
    """Puts the file at `path` back as `_file_bytes` read it (None: removes it)."""
    if data is None:
        if os.path.lexists(path):
            os.remove(path)
    else:
        with open(path, "wb") as f:
            f.write(data)'''


def _said(diff, session):
    """A piece of state as a fixture's docstring names it: a file by where it is to the user."""
    if not diff["kind"].startswith("file"):
        return diff["path"]
    name = diff["path"][len("file "):]
    root = str(getattr(session.config, "rootpath", None) or session.config.rootdir)
    for base, where in ((_ROOTS[1][0], "in the temporary directory"), (root, "under the rootdir")):
        rel = os.path.relpath(name, base)
        if not rel.startswith(os.pardir):
            return "the file %s %s" % (rel, where)
    return "the file %s" % name


def _name_hint(diff):
    kind, path = diff["kind"], diff["path"]
    if kind == "environment variable":
        hint = "environ_" + _key(path, "os.environ")
    elif kind == "sys.modules":
        hint = "module_" + _key(path, "sys.modules")
    elif kind.startswith("file"):
        hint = "file_" + os.path.basename(path)
    elif kind == "working directory":
        hint = "cwd"
    elif path.endswith("()"):
        hint = path[:-2].replace("getstate", "state").replace("get_state", "state")
    else:
        hint = path
    return re.sub(r"(\W|_)+", "_", hint).strip("_")


def _write_cleanup(session, entry, state, polluters, victim, brittle):
    """The fixture that puts `state` back after each polluter (for a brittle test: sets it
    before the test, and puts it back after), as {"fixture", "code", "apply_to", "conftest"};
    or {"none": why}. `entry` is the victim's part of the request."""
    code = _Code()
    try:
        captured = [(d, _capture(d)) for d in state]
        _run_until(polluters, victim)
        for d, before in captured:
            _piece(code, d, before, _capture(d), brittle, session)
    except _NoCode as e:
        return {"none": str(e)}
    repeat = bool(entry.get("repeat"))
    apply_to = [victim.nodeid] if brittle or repeat else list(entry["polluters"])
    prefix = "set_" if brittle else "restore_"
    hint = _name_hint(state[0]) if len(state) == 1 else "state_of_" + re.sub(r"\W+", "_", apply_to[0].rpartition("::")[2]).strip("_")
    fixture = prefix + hint
    defined = getattr(getattr(session, "_fixturemanager", None), "_arg2fixturedefs", {})
    n = 1
    while fixture in defined:
        n += 1
        fixture = "%s%s_%d" % (prefix, hint, n)
    pieces = ", ".join(_said(d, session) for d in state)
    if brittle:
        doc = "Sets %s as %s leaves it, which %s needs and does not set itself; puts it back after." % (pieces, " + ".join(entry["polluters"]), victim.nodeid)
    elif repeat:
        doc = "Puts back %s after %s, which changes it and trips over the change when it runs again in the process." % (pieces, victim.nodeid)
    else:
        doc = "Puts back %s after %s, which changes it and %s trips over the change." % (pieces, " and ".join(apply_to), victim.nodeid)
    doc += " Found and checked by flakehunt."
    import textwrap

    lines = sorted(code.imports) + ["", "import pytest"]
    if code.files:
        lines += _FILE_HELPERS.split("\n")
    lines += ["", "", "@pytest.fixture", "def %s(%s):" % (fixture, "request" if code.request else "")]
    lines += textwrap.wrap('"""%s"""' % doc, width=96, initial_indent="    ", subsequent_indent="    ")
    if code.body_imports:
        lines += ["    " + i for i in sorted(code.body_imports)] + [""]
    lines += ["    " + line for line in code.setup]
    lines.append("    yield")
    lines += ["    " + line for line in code.teardown + code.last]
    source = "\n".join(lines).lstrip("\n") + "\n"
    compile(source, "conftest.py", "exec")
    where = os.path.dirname(apply_to[0].split("::")[0])
    return {"fixture": fixture, "code": source, "apply_to": apply_to, "conftest": os.path.join(where, "conftest.py")}


def _function_id(nodeid):
    """The node id of the function a test item is made from (a parametrized one's, without
    its parameters): what `@pytest.mark.usefixtures` is put on."""
    head, sep, last = nodeid.rpartition("::")
    return head + sep + last.split("[", 1)[0]


_TARGETS = {}


def _cleanup_targets(config):
    """(fixture, the functions it is applied to) of the request's check, read once; None when
    the run checks no cleanup."""
    if "read" not in _TARGETS:
        _TARGETS["read"] = None
        path = config.getoption("flakehunt_state", None)
        if path:
            with open(path) as f:
                check = json.load(f).get("check")
            if check:
                _TARGETS["read"] = (check["fixture"], [_function_id(t) for t in check["apply_to"]])
    return _TARGETS["read"]


def _use(fixture, function):
    """Puts `@pytest.mark.usefixtures(fixture)` on `function`, as the user is told to."""
    marks = getattr(function, "pytestmark", [])
    if not any(m.name == "usefixtures" and fixture in m.args for m in marks):
        pytest.mark.usefixtures(fixture)(function)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector, name, obj):
    # A check marks the functions the cleanup is applied to before pytest makes items of them,
    # as the decorator the user puts on them would: a fixture added to an item once it is made
    # would not be in its fixtures' order.
    targets = _cleanup_targets(collector.config)
    if targets is None:
        return None
    fixture, functions = targets
    own = "%s::%s" % (collector.nodeid, name) if collector.nodeid else name
    for target in functions:
        if target == own and callable(obj):
            _use(fixture, obj)
        elif isinstance(obj, type) and target.startswith(own + "::") and "::" not in target[len(own) + 2:]:
            # A unittest.TestCase's methods are made into items without this hook.
            method = getattr(obj, target[len(own) + 2:], None)
            if callable(method):
                _use(fixture, method)
    return None


def _check(check, by_id, polluters, victim, skip):
    """Runs the polluters and the victim `runs` times, each in a fork, with the cleanup applied
    (this process collected with it); stops at the first run in which the victim fails or the
    cleanup breaks a polluter that passed without it."""
    fixture = check["fixture"]
    unapplied = [t for t in check["apply_to"] if fixture not in getattr(by_id[t], "fixturenames", ())]
    if unapplied:
        return {"check": {"passed": 0, "runs": 0, "why": "pytest gives %s no fixture, so the cleanup cannot be applied to it" % unapplied[0]}}
    allowed = set(check.get("polluters_failed", []))
    runs = int(check["runs"])
    start = time.perf_counter()
    itself = polluters == [victim]
    for i in range(runs):

        def work():
            files = _file_entries(skip)
            failed = _run_until(polluters, victim)
            passed = _protocol(victim, None)
            skipped = _skipped(victim)
            _restore_files(files, skip)
            return {"passed": passed, "skipped": skipped, "broken": [t for t in failed if t not in allowed]}

        ran = _fork(work)
        seconds = round(time.perf_counter() - start, 4)
        if "error" in ran:
            return {"check": {"passed": i, "runs": i + 1, "seconds": seconds, "why": "run %d of the check failed to run: %s" % (i + 1, ran["error"])}}
        if ran["broken"]:
            return {"check": {"passed": i, "runs": i + 1, "seconds": seconds, "why": "with it in place, %s failed (run %d of %d)" % (ran["broken"][0], i + 1, runs)}}
        if not ran["passed"]:
            what = "its second run" if itself else victim.nodeid
            if ran.get("skipped"):
                why = "with it in place, %s was skipped (run %d of %d): a skipped run is no pass" % (what, i + 1, runs)
            else:
                why = "with it in place, %s still failed (run %d of %d)" % (what, i + 1, runs)
            return {"check": {"passed": i, "runs": i + 1, "seconds": seconds, "why": why}}
    return {"check": {"passed": runs, "runs": runs, "seconds": round(time.perf_counter() - start, 4)}}
