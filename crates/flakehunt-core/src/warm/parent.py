"""flakehunt's warm parent: imports a Python target once, then forks one child per attempt.

Started by flakehunt (crates/flakehunt-core/src/warm/mod.rs) as

    python3 parent.py SOCKET pytest -- PYTEST_ARGS...
    python3 parent.py SOCKET script -- SCRIPT ARGS...

It connects to flakehunt's SOCK_SEQPACKET socket at SOCKET, warms up, and sends one line:
{"ready": true, "changed": [...]} or {"refused": "why"}. Warm-up means:

- pytest: a session with the target's own arguments, which imports pytest, its plugins, the
  conftests, the test modules and everything they import, and collects; it is held where it
  would start running tests (`_WarmSession`), and each fork runs the attempt's items from there.
  A suite's parent has the suite's options, a placeholder `--junitxml` and every node id; a
  request then names its own xml file ("junitxml"), which the fork points pytest's plugin at.
  Its header goes to this process's stdout, which flakehunt reads while it waits (a refusal
  quotes it); an attempt's output starts with its first test.
- script: the script's top level is its test, so none of it runs here. The modules it imports at
  module level (found by reading its syntax tree: `import a.b`, `from a.b import c`, also inside
  top-level `if`/`try`/`with`, not inside functions) are imported, so each attempt pays only for
  the script's own code. A module that fails to import is skipped: the attempt meets the error.

Then it serves requests, one SOCK_SEQPACKET message each: a JSON object and the fds it names
(stdout, stderr, status, then one `cgroup.procs` per cgroup). For each it forks; the child
applies the request (its own process group, cgroups, affinity, rlimits, SCHED_IDLE or nice, the
capture pipes as fds 1 and 2, /dev/null as 0, the working directory, the whole environment) and
says over a pipe that it is set up (or why not); this process then replies {"pid": PID} with a
pidfd of the child (opened while the child cannot have been reaped, so it cannot name another
process), or {"error": "...", "errno": N}. When the child ends, this process reaps it and writes
{"status": WAIT_STATUS, "cpu": SECONDS} to the request's status fd, then closes it.

This process does no test work and starts no threads (a module that started a thread at import
makes it refuse: a fork keeps only the forking thread, and a lock that thread held stays locked
in every child). End-of-file on the socket means flakehunt is done: it waits for its children and
exits.
"""

from __future__ import print_function  # so that Python 2 reads this far, to be refused

import array
import ast
import json
import os
import select
import socket
import sys

# The script's absolute path, found at warm-up (before any attempt changes directory).
_SCRIPT = [None]


def _send(conn, obj, fds=()):
    data = (json.dumps(obj) + "\n").encode()
    if fds:
        # sendmsg rather than socket.send_fds, which Python 3.8 and older lack.
        conn.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        conn.send(data)


# What the program's own start-up (the warm-up) changed of this process, found by comparing it
# with what it was before: see `_unfit`. A fork inherits all of it, and a cold start would have
# applied the attempt's settings before the program changed them, not after.
_BEFORE = {}
_CHANGED = {"settings": [], "switch_interval": False}
# Signal dispositions the program set at warm-up that this process cannot keep (it waits for its
# children, and writes to pipes whose reader may be gone): restored in each fork.
_RESTORE_SIGNALS = {}
# sys.setswitchinterval as Python has it; the warm-up runs with a wrapper that notes a call.
_SET_SWITCH_INTERVAL = [None]


def _settings():
    """The settings of this process that a fork inherits and a request may set."""
    import resource

    limits, seen = {}, set()
    for name in sorted(dir(resource)):
        # One name per limit: RLIMIT_OFILE is RLIMIT_NOFILE's other name.
        number = getattr(resource, name)
        if name.startswith("RLIMIT_") and name != "RLIMIT_INFINITY" and number not in seen:
            seen.add(number)
            try:
                limits[name[len("RLIMIT_"):].lower()] = resource.getrlimit(number)
            except (OSError, ValueError):
                pass
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    return {
        "cwd": cwd,
        "rlimits": limits,
        "cpus": sorted(os.sched_getaffinity(0)),
        "nice": (os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0)),
        "switch_interval": sys.getswitchinterval(),
    }


def _watch_start_up():
    """Notes this process's settings before the warm-up, and whether the program calls
    sys.setswitchinterval during it (to the same value as before, too)."""
    _BEFORE.update(_settings())
    original = sys.setswitchinterval
    _SET_SWITCH_INTERVAL[0] = original

    def setswitchinterval(interval):
        _CHANGED["switch_interval"] = True
        return original(interval)

    sys.setswitchinterval = setswitchinterval


def _start_up_changes():
    """What the warm-up changed that a request may set again: `cwd`, `cpus`, `nice`,
    `rlimit NAME`; and whether it set the switch interval."""
    sys.setswitchinterval = _SET_SWITCH_INTERVAL[0]
    now = _settings()
    changed = []
    if now["cwd"] != _BEFORE["cwd"]:
        changed.append("cwd")
    if now["cpus"] != _BEFORE["cpus"]:
        changed.append("cpus")
    if now["nice"] != _BEFORE["nice"]:
        changed.append("nice")
    for name, limit in sorted(now["rlimits"].items()):
        if _BEFORE["rlimits"].get(name) != limit:
            changed.append("rlimit " + name)
    _CHANGED["settings"] = changed
    if now["switch_interval"] != _BEFORE["switch_interval"]:
        _CHANGED["switch_interval"] = True


def _signal_masks():
    """(ignored, caught) signal bit masks of this process, as the kernel has them."""
    ignored = caught = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("SigIgn:"):
                ignored = int(line.split()[1], 16)
            elif line.startswith("SigCgt:"):
                caught = int(line.split()[1], 16)
    return ignored, caught


def _hold_signals():
    """Gives this process the dispositions it depends on: SIGCHLD default (a module that sets
    SIG_IGN, common in server code, has the kernel reap the children before this process
    waits for them; a handler would run the program's code here at each attempt's end), and
    SIGPIPE ignored (as Python starts; a program may set the default, and this process writes
    to pipes whose reader may be gone). The program's own dispositions are given back in each
    fork, as a cold start would have them. Returns a refusal line, or None."""
    import signal

    ignored, caught = _signal_masks()
    for sig, needed in ((signal.SIGCHLD, signal.SIG_DFL), (signal.SIGPIPE, signal.SIG_IGN)):
        bit = 1 << (int(sig) - 1)
        python = signal.getsignal(sig)
        if caught & bit:
            if not callable(python):
                return "warm mode refused: a compiled module set a handler for %s at import, which a fork of the warm parent cannot give back; attempts run cold" % sig.name
            program = python
        elif ignored & bit:
            program = signal.SIG_IGN
        else:
            program = signal.SIG_DFL
        if program != needed:
            signal.signal(sig, needed)
            _RESTORE_SIGNALS[sig] = program
    return None


def _processes_started():
    """(pid, command) of the processes the warm-up started that are still alive: children of
    this process, members of its process group, and processes whose environment carries its
    warm-up's FLAKEHUNT_WARMUP (one that left the group, or whose parent exited)."""
    me, group = os.getpid(), os.getpgrp()
    marker = ("FLAKEHUNT_WARMUP=%s" % os.environ.get("FLAKEHUNT_WARMUP", "")).encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        try:
            with open("/proc/%d/stat" % pid, "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] in (b"Z", b"X"):
            continue
        ours = int(fields[1]) == me or int(fields[3]) == group
        if not ours and os.environ.get("FLAKEHUNT_WARMUP"):
            try:
                with open("/proc/%d/environ" % pid, "rb") as f:
                    ours = marker in f.read().split(b"\0")
            except OSError:
                continue
        if ours:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    command = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            except OSError:
                command = "?"
            found.append((pid, command[:80]))
    return found


def _other_threads():
    """Thread ids of this process besides the main one (whose id is the pid), as the kernel
    lists them: threads of `threading`, of `_thread` and of compiled code alike."""
    try:
        return sorted(int(t) for t in os.listdir("/proc/self/task") if int(t) != os.getpid())
    except OSError:
        return []


def _thread_names(tids):
    threading = sys.modules.get("threading")
    python = {}
    if threading is not None:
        for t in threading.enumerate():
            if getattr(t, "native_id", None) is not None:
                python[t.native_id] = t
    names = []
    for tid in tids:
        t = python.get(tid)
        if t is not None:
            target = getattr(t, "_target", None)
            origin = getattr(target, "__module__", None) or type(t).__module__
            names.append("%s (started from %s)" % (t.name, origin))
            continue
        try:
            with open("/proc/self/task/%d/comm" % tid) as f:
                comm = f.read().strip()
        except OSError:
            comm = "?"
        names.append("thread %d (%s, not from threading)" % (tid, comm))
    return names


def _descriptors(conn):
    """Descriptions of the descriptors a fork would share with this process and every other
    fork where a cold start has its own: sockets (a connection, a listening socket, asyncio's
    self-pipe) and event queues (epoll, eventfd, signalfd, timerfd, inotify)."""
    shared = []
    for name in sorted(os.listdir("/proc/self/fd"), key=lambda n: int(n) if n.isdigit() else -1):
        if not name.isdigit() or int(name) == conn.fileno():
            continue
        try:
            target = os.readlink("/proc/self/fd/" + name)
        except OSError:
            continue
        if target.startswith("socket:") or target in ("anon_inode:[eventpoll]", "anon_inode:[eventfd]",
                                                      "anon_inode:[signalfd]", "anon_inode:[timerfd]",
                                                      "anon_inode:inotify"):
            shared.append("fd %s (%s)" % (name, target))
    return shared


def _unfit(conn):
    """The refusal line when the warm-up left this process unfit to fork attempts from, else
    None; also holds the signal dispositions this process needs and notes what the program's
    start-up changed (`_start_up_changes`)."""
    _start_up_changes()
    refusal = _hold_signals()
    if refusal:
        return refusal
    started = _processes_started()
    if started:
        # Not any attempt's: ended here, as flakehunt ends what an attempt leaves behind.
        for pid, _ in started:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        return "warm mode refused: the target's start-up left a process running: %s; a fork would not own it, so attempts run cold" % ", ".join(
            "%d (%s)" % p for p in started)
    tids = _other_threads()
    if tids:
        # A thread pool that stops itself around fork (OpenBLAS's, with pthread_atfork) is no
        # harm: what is left after a fork is what every fork would start with.
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        tids = _other_threads()
    if tids:
        return "warm mode refused: a module started a thread at import: %s; a fork keeps only the forking thread, with any lock another held; attempts run cold" % ", ".join(
            _thread_names(tids))
    shared = _descriptors(conn)
    if shared:
        return "warm mode refused: the target's start-up opened %s, which every fork would share; attempts run cold" % ", ".join(shared)
    return None


def _script_imports(path):
    """Absolute module names the script imports at module level."""
    with open(path, "rb") as f:
        tree = ast.parse(f.read(), filename=path)
    found = []

    def visit(body):
        for node in body:
            if isinstance(node, ast.Import):
                found.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0 and node.module:
                    found.append(node.module)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, field, None)
                    if isinstance(inner, list):
                        visit(inner)

    visit(tree.body)
    return found


def _warm_up(conn, kind, args):
    """Imports what the target needs; returns a refusal line, or None once ready.

    For pytest this does not return in a forked child until its session has run the attempt:
    see `_WarmSession`."""
    if kind == "pytest":
        # As `python3 -m pytest` has it: the working directory first on sys.path.
        sys.path[0] = os.getcwd()
        import pytest

        plugin = _WarmSession(conn, args)
        code = pytest.main(list(args), plugins=[plugin])
        if plugin.child:
            _finish(int(code))
        if plugin.refusal:
            return plugin.refusal
        return "warm mode refused: pytest ended during warm-up (exit code %d); attempts run cold" % int(code)
    if kind == "script":
        script = args[0]
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        _SCRIPT[0] = os.path.abspath(script)
        import importlib

        for name in _script_imports(script):
            try:
                importlib.import_module(name)
            except BaseException:  # noqa: BLE001 - the attempt meets the same error itself
                pass
        return None
    return "warm mode refused: unknown target kind %r" % kind


class _WarmSession:
    """A pytest plugin that holds the session after collection: each request forks, and the
    child's session runs the attempt's items (in the attempt's order) from the collection the
    parent made, as if it had collected them itself. A session's per-run state starts fresh in
    each child: no test has run in the parent, so no fixture is set up and nothing is counted."""

    def __init__(self, conn, args):
        self.conn = conn
        self.args = list(args)
        self.child = False
        self.refusal = None

    def pytest_internalerror(self, excrepr, excinfo):
        # Quoted in the refusal: pytest exits with code 3 and the traceback is the cause.
        if not self.child and self.refusal is None:
            text = str(excrepr).strip()
            last = text.splitlines()[-1] if text else "?"
            self.refusal = "warm mode refused: pytest failed with an internal error during warm-up (%s); attempts run cold\n%s" % (
                last.strip(), "\n".join("  INTERNALERROR> " + line for line in text.splitlines()[-40:]))

    def pytest_runtestloop(self, session):
        if session.testsfailed:
            # pytest's own loop then stops the session and prints the errors, which flakehunt
            # quotes with the refusal.
            self.refusal = "warm mode refused: collection failed (%d errors); attempts run cold" % session.testsfailed
            return None
        refusal = _unfit(self.conn)
        if refusal:
            _refuse(self.conn, refusal)
        config = session.config
        if "--junitxml" in self.args and _junitxml(config) is None:
            _refuse(self.conn, "warm mode refused: pytest's junitxml plugin is not loaded; attempts run cold")
        capman = config.pluginmanager.getplugin("capturemanager")
        saved = _saved_fds(config, capman)
        reporter = config.pluginmanager.getplugin("terminalreporter")
        # Found before any fork, so that a child's set-up cannot fail on this pytest's version.
        clocks = [_clock(reporter, "_session_start", "_sessionstarttime")]
        xml = _junitxml(config)
        if xml is not None:
            clocks.append(_clock(xml, "suite_start", "suite_start_time"))
        _ready(self.conn, saved)
        request = _serve(self.conn)
        # In the child, whose fds 0, 1 and 2 are the attempt's now.
        self.child = True
        for fd, target in saved:
            os.dup2(target, fd)
        _fresh_capture_files(capman)
        _child_common()
        if "junitxml" in request:
            _point_junitxml(config, request["junitxml"])
        _own_session_process(config)
        session.items = _reorder(session.items, self.args, request["argv"])
        session.testscollected = len(session.items)
        # The session's time and timestamp are the attempt's, not the parent's warm-up.
        for restart in clocks:
            restart()
        if reporter is not None and hasattr(reporter, "_numcollected"):
            reporter._numcollected = len(session.items)
        import pytest

        sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py")] + request["argv"]
        # None: pytest's own loop runs the items, its reports and exit code as in a cold run.
        return None


def _stash(config):
    """pytest's per-run store: `config.stash` (pytest 7 and later), `config._store` (6)."""
    return config.stash if hasattr(config, "stash") else getattr(config, "_store", None)


def _junitxml(config):
    """pytest's junitxml plugin object of this run, or None when it is off."""
    from _pytest import junitxml

    key = getattr(junitxml, "xml_key", None)
    if key is None:
        return getattr(config, "_xml", None)  # pytest 5
    stash = _stash(config)
    return stash.get(key, None) if stash is not None else None


def _clock(owner, instant_attr, time_attr):
    """A function that restarts the clock `owner` keeps of the session's start: an Instant
    (pytest 8) or a time.time() float (older), whichever this pytest has; or does nothing."""
    if owner is None:
        return lambda: None
    try:
        from _pytest import timing
    except ImportError:  # pytest 5
        import time as timing
    if hasattr(owner, instant_attr) and hasattr(timing, "Instant"):
        return lambda: setattr(owner, instant_attr, timing.Instant())
    if hasattr(owner, time_attr):
        return lambda: setattr(owner, time_attr, timing.time())
    return lambda: None


def _saved_fds(config, capman):
    """(fd, standard fd) pairs of the copies pytest keeps of the standard streams (the capture's
    saved streams, faulthandler's stderr), which a child points at its own streams."""
    pairs = []
    capturing = getattr(capman, "_global_capturing", None) if capman is not None else None
    for name, std in (("out", 1), ("err", 2)):
        cap = getattr(capturing, name, None)
        saved = getattr(cap, "targetfd_save", None)
        if isinstance(saved, int):
            pairs.append((saved, std))
    try:
        from _pytest import faulthandler
    except ImportError:
        return pairs
    stash = _stash(config)
    # An fd (pytest 7.4 and later) or a file (older) that faulthandler writes tracebacks to.
    for key in ("fault_handler_stderr_fd_key", "fault_handler_stderr_key"):
        value = None
        if stash is not None and hasattr(faulthandler, key):
            value = stash.get(getattr(faulthandler, key), None)
        if hasattr(value, "fileno"):
            value = value.fileno()
        if isinstance(value, int):
            pairs.append((value, 2))
    return pairs


def _fresh_capture_files(capman):
    """Gives the child capture files of its own: the parent's are shared by every fork (one file
    offset), and pytest rewinds and truncates them for each test."""
    import tempfile

    capturing = getattr(capman, "_global_capturing", None) if capman is not None else None
    for name in ("out", "err"):
        tmpfile = getattr(getattr(capturing, name, None), "tmpfile", None)
        fileno = getattr(tmpfile, "fileno", None)
        if fileno is None or not hasattr(getattr(capturing, name), "targetfd_save"):
            continue
        with tempfile.TemporaryFile(buffering=0) as fresh:
            os.dup2(fresh.fileno(), fileno())


def _own_session_process(config):
    """Tells pytest-cov that this fork is its session's process. pytest-cov remembers the pid
    that started its session, and a test run in another process (made for pytest-forked) gets a
    coverage of its own, started before the test and stopped after it: in a fork, the one of
    the first test then stops the tracer the fork inherited, the session's coverage ends in an
    internal error (`assert self._collectors`), and every test pays a coverage start (four times
    a cold run's time on semver's suite). The fork carries the session's coverage on, as a cold
    run's own process does; coverage writes its data under the fork's pid."""
    cov = config.pluginmanager.get_plugin("_cov")
    if cov is not None and isinstance(getattr(cov, "pid", None), int):
        cov.pid = os.getpid()


def _point_junitxml(config, path):
    """Points pytest's junitxml plugin at the attempt's own file (a suite's parent was started
    with a placeholder path, so that the plugin is set up), or, with none, turns it off."""
    from _pytest import junitxml

    xml = _junitxml(config)
    if xml is None:
        return
    if path is None:
        key = getattr(junitxml, "xml_key", None)
        if key is not None:
            del _stash(config)[key]
        else:
            del config._xml
        config.pluginmanager.unregister(xml)
        return
    xml.logfile = os.path.normpath(os.path.abspath(path))


def _reorder(items, parent_argv, argv):
    """The collected items an attempt's arguments select, in their order. flakehunt sends only
    arguments that are the parent's, reordered (or, for a suite, any of its node ids): each node
    id selects the items it names."""
    if argv == parent_argv:
        return items
    chosen, seen = [], set()
    by_id = {item.nodeid: item for item in items}
    for arg in argv:
        if arg in parent_argv and arg.startswith("-"):
            continue
        exact = by_id.get(arg)
        if exact is not None:
            # A suite's attempt names thousands of items, each exactly: found without a scan.
            if id(exact) not in seen:
                seen.add(id(exact))
                chosen.append(exact)
            continue
        for item in items:
            nodeid = item.nodeid
            if id(item) not in seen and (nodeid == arg or nodeid.startswith(arg + "::") or nodeid.startswith(arg + "[")):
                seen.add(id(item))
                chosen.append(item)
    return chosen


def _refuse(conn, reason):
    _send(conn, {"refused": reason})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(3)


def _ready(conn, saved=()):
    # flakehunt stops reading this process's output once it is ready: what it would write from
    # now on goes nowhere (flushed first, and redirected before the ready line, so that no
    # write meets a closed pipe).
    sys.stdout.flush()
    sys.stderr.flush()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in [1, 2] + [fd for fd, _ in saved]:
        os.dup2(null, fd)
    os.close(null)
    # Objects that exist now are never freed by a child: frozen, the collector of each child
    # does not walk them, and does not copy their pages on write.
    import gc

    if hasattr(gc, "freeze"):  # Python 3.7 and later
        gc.freeze()
    # What the program's start-up changed that an attempt may set again: flakehunt runs an
    # attempt that sets one of them cold (a cold start applies it before the program's change).
    _send(conn, {"ready": True, "changed": _CHANGED["settings"]})


def _child_common():
    """In the child: what a cold start would have done with the attempt's environment."""
    if _RESTORE_SIGNALS:
        import signal

        for sig, disposition in _RESTORE_SIGNALS.items():
            signal.signal(sig, disposition)
    interval = os.environ.get("FLAKEHUNT_SWITCH_INTERVAL")
    if interval:
        # What the tight-gil profile's sitecustomize does at a cold start, which this
        # interpreter ran long ago (with the parent's environment), before the program's own
        # start-up: a program that set its own interval then (in the parent's warm-up) keeps it.
        if not _CHANGED["switch_interval"]:
            sys.setswitchinterval(float(interval))
        report = os.environ.get("FLAKEHUNT_SWITCH_REPORT")
        if report:
            _report_switch_interval("%s.%d" % (report, os.getpid()))
    # `random` re-seeds itself after fork (os.register_at_fork in random.py, Python 3.7 and
    # later); numpy's global generator does not, and would repeat the same numbers in every
    # attempt.
    if not hasattr(os, "register_at_fork") and "random" in sys.modules:
        sys.modules["random"].seed()
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        np_random.seed()


def _report_switch_interval(path):
    """Writes the switch interval to `path` now, and again at exit (once the program has run,
    and may have set its own), as the tight-gil profile's sitecustomize does."""

    def write():
        try:
            with open(path, "w") as f:
                f.write(repr(sys.getswitchinterval()))
        except OSError:
            pass

    write()
    import atexit

    atexit.register(write)


def _finish(code):
    """Ends the child as an interpreter's exit would, without tearing down every module: the
    non-daemon threads are joined and the atexit handlers run, the streams are flushed, then
    the process exits. (Freeing what the parent imported would copy most of its memory, page by
    page, for nothing; objects' finalizers at interpreter shutdown are what a warm attempt skips.)"""
    threading = sys.modules.get("threading")
    if threading is not None and hasattr(threading, "_shutdown"):
        threading._shutdown()
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001 - a closed or broken stream, as at a cold exit
            pass
    os._exit(code & 0xFF if isinstance(code, int) else 1)


def _apply(request, fds):
    """In the child: applies the attempt's settings. Raises OSError on a refused setting."""
    out, err, _status = fds[0], fds[1], fds[2]
    for fd in fds[3:]:
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
    if request.get("cpus") is not None:
        os.sched_setaffinity(0, request["cpus"])
    if request.get("rlimits"):
        import resource

        for name, soft, hard in request["rlimits"]:
            inf = resource.RLIM_INFINITY
            limit = (inf if soft is None else soft, inf if hard is None else hard)
            resource.setrlimit(getattr(resource, "RLIMIT_" + name.upper()), limit)
    if request.get("sched_idle"):
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:
            # As for cold attempts: refused (a container policy), nice 19 instead.
            os.setpriority(os.PRIO_PROCESS, 0, 19)
    if request.get("nice") is not None:
        os.setpriority(os.PRIO_PROCESS, 0, request["nice"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    for fd in {null, out, err}:
        if fd > 2:
            os.close(fd)
    cwd = request.get("cwd")
    # A program that changed directory at start-up (in the warm-up) is where it went, as a cold
    # start in the same directory would be; flakehunt runs an attempt elsewhere cold.
    if cwd and not ("cwd" in _CHANGED["settings"] and os.path.realpath(cwd) == _BEFORE["cwd"]):
        os.chdir(cwd)
    # The attempt's environment, set before any of the user's code runs in the child: flakehunt
    # sends what differs from the environment the parent was started with (a fork writes only
    # those variables, since each write copies a page it shares with the parent). What the
    # warm-up itself set (pytest's PYTEST_VERSION) stays, as a cold start sets it again.
    for name in request["unset"]:
        os.environ.pop(name, None)
    for name, value in request["set"].items():
        os.environ[name] = value


def _reap(pid, status_fd, pidfd):
    """Reaps an exited child and writes its status and CPU time to its status fd."""
    _, status, usage = os.wait4(pid, 0)
    try:
        os.write(status_fd, (json.dumps({"status": status, "cpu": usage.ru_utime + usage.ru_stime}) + "\n").encode())
    except OSError:
        pass
    os.close(status_fd)
    os.close(pidfd)


def _recv(conn):
    """One message and the fds it carries; b"" at end-of-file. Read into one buffer, mapped
    once (its pages are touched only as far as a message reaches): a request may name thousands
    of node ids, and a buffer of that size allocated and unmapped per message costs a mapping
    and a TLB flush on every CPU each time."""
    if _BUFFER[0] is None:
        import mmap

        _BUFFER[0] = mmap.mmap(-1, 1 << 22)
    fds = array.array("i")
    try:
        size, ancillary, _flags, _addr = conn.recvmsg_into([_BUFFER[0]], socket.CMSG_SPACE(64 * fds.itemsize))
    except OSError:
        return b"", []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return _BUFFER[0][:size], list(fds)


_BUFFER = [None]


def _serve(conn):
    """Serves requests; returns the request in a forked child, exits in this process. An error
    of this process's own is said to flakehunt (`{"gone": "..."}`) before it exits, so that the
    cold attempts that follow say why."""
    me = os.getpid()
    try:
        return _serve_requests(conn)
    except BaseException as e:  # noqa: BLE001 - said to flakehunt
        if os.getpid() != me:
            raise
        try:
            _send(conn, {"gone": "%s: %s" % (type(e).__name__, e)})
        except BaseException:  # noqa: BLE001 - flakehunt may be gone too
            pass
        os._exit(70)


def _serve_requests(conn):
    """The loop of `_serve`.

    A child that has exited is reaped only once flakehunt has said `{"settled": PID}` (it has
    read the child's /proc entries, as it reads a cold attempt's before waiting for it), or once
    the connection is closed."""
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    children = {}  # pidfd -> (pid, status fd), running
    exited = {}  # pid -> (status fd, pidfd), waiting to be settled
    settled = set()  # pids flakehunt has settled that have not exited yet
    open_ = True
    while open_ or children or exited:
        if not open_:
            for pid, (status_fd, pidfd) in list(exited.items()):
                _reap(pid, status_fd, pidfd)
            exited.clear()
            if not children:
                break
        for fd, _events in poller.poll():
            if fd != conn.fileno():
                pid, status_fd = children.pop(fd)
                poller.unregister(fd)
                if pid in settled or not open_:
                    settled.discard(pid)
                    _reap(pid, status_fd, fd)
                else:
                    exited[pid] = (status_fd, fd)
                continue
            msg, fds = _recv(conn)
            if not msg:
                open_ = False
                poller.unregister(conn.fileno())
                continue
            request = json.loads(msg)
            if "settled" in request:
                pid = request["settled"]
                if pid in exited:
                    status_fd, pidfd = exited.pop(pid)
                    _reap(pid, status_fd, pidfd)
                else:
                    settled.add(pid)
                continue
            if len(fds) < 3:
                for f in fds:
                    os.close(f)
                _send(conn, {"error": "a request needs three fds, got %d" % len(fds), "errno": 22})
                continue
            ready_r, ready_w = os.pipe()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                os.setpgid(0, 0)
                os.close(ready_r)
                conn.close()
                for f, (_, s) in children.items():
                    os.close(f)
                    os.close(s)
                for s, f in exited.values():
                    os.close(f)
                    os.close(s)
                os.close(fds[2])
                try:
                    _apply(request, fds)
                except OSError as e:
                    os.write(ready_w, json.dumps({"error": str(e), "errno": e.errno or 5}).encode())
                    os._exit(127)
                except ValueError as e:
                    # What Python checks itself before the system call (setrlimit with a soft
                    # limit above the hard one) is the kernel's EINVAL for a cold start.
                    os.write(ready_w, json.dumps({"error": str(e), "errno": 22}).encode())
                    os._exit(127)
                except BaseException as e:  # noqa: BLE001 - reported to flakehunt, not raised
                    os.write(ready_w, json.dumps({"error": repr(e), "errno": 5}).encode())
                    os._exit(127)
                os.close(ready_w)
                return request
            try:
                os.setpgid(pid, pid)
            except OSError:
                pass  # the child has set it itself, or is gone
            os.close(ready_w)
            for f in fds[:2] + fds[3:]:
                os.close(f)
            report = b""
            while True:
                chunk = os.read(ready_r, 4096)
                if not chunk:
                    break
                report += chunk
            os.close(ready_r)
            if report:
                os.waitpid(pid, 0)
                os.close(fds[2])
                _send(conn, json.loads(report))
                continue
            pidfd = _pidfd_open(pid)
            children[pidfd] = (pid, fds[2])
            poller.register(pidfd, select.POLLIN)
            _send(conn, {"pid": pid}, [pidfd])
    os._exit(0)


def _run_script(target, request):
    """In the child: runs the script as `python3 SCRIPT ARGS` would, and exits with its code."""
    _child_common()
    # As `python3 SCRIPT` runs it: argv[0] as given, `__file__` absolute (since 3.9), a fresh
    # `__main__` module (runpy.run_path would make argv[0] the absolute path).
    import types

    sys.argv = [target[0]] + request["argv"]
    main_module = types.ModuleType("__main__")
    main_module.__file__ = _SCRIPT[0]
    main_module.__builtins__ = __builtins__
    sys.modules["__main__"] = main_module
    try:
        with open(_SCRIPT[0], "rb") as f:
            code = compile(f.read(), _SCRIPT[0], "exec")
        exec(code, main_module.__dict__)
    except SystemExit as e:
        _finish(_exit_code(e))
    except BaseException:  # noqa: BLE001 - printed as the interpreter prints it
        import traceback

        traceback.print_exc()
        _finish(1)
    _finish(0)


def _exit_code(e):
    """The exit status `raise SystemExit(e.code)` gives at the top level."""
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code
    print(e.code, file=sys.stderr)
    return 1


def _pidfd_open(pid):
    """os.pidfd_open, or on Python 3.8 and older (which lack it) the system call itself."""
    if hasattr(os, "pidfd_open"):
        return os.pidfd_open(pid)
    if _LIBC[0] is None:
        import ctypes

        _LIBC[0] = ctypes.CDLL(None, use_errno=True)
    # pidfd_open is system call 434 on every architecture (numbers from 424 on are shared).
    fd = _LIBC[0].syscall(434, pid, 0)
    if fd < 0:
        import ctypes

        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return fd


_LIBC = [None]


def main():
    sock_path, kind = sys.argv[1], sys.argv[2]
    target = sys.argv[4:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    conn.connect(sock_path)
    if sys.version_info < (3, 6):
        _refuse(conn, "warm mode needs Python 3.6 or later, and the target runs Python %d.%d; attempts run cold" % sys.version_info[:2])
    _watch_start_up()
    try:
        refusal = _warm_up(conn, kind, target)
    except BaseException as e:  # noqa: BLE001 - a refusal, said to flakehunt
        refusal = "warm mode refused: warm-up failed: %s; attempts run cold" % (repr(e),)
    refusal = refusal or _unfit(conn)
    if refusal:
        _refuse(conn, refusal)
    _ready(conn)
    request = _serve(conn)
    _run_script(target, request)


if __name__ == "__main__":
    main()
