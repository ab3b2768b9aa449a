"""flakehunt's warm parent: imports a Python target once, then forks one child per attempt.

Started by flakehunt (crates/flakehunt-core/src/warm/mod.rs) as

    python3 parent.py SOCKET pytest -- PYTEST_ARGS...
    python3 parent.py SOCKET script -- SCRIPT ARGS...

It connects to flakehunt's SOCK_SEQPACKET socket at SOCKET, warms up, and sends one line:
{"ready": true, "native_threads": N} or {"refused": "why"}. Warm-up means:

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
        socket.send_fds(conn, [data], list(fds))
    else:
        conn.send(data)


def _native_threads():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _thread_refusal():
    """The refusal line when a Python thread besides this one is alive, else None."""
    threading = sys.modules.get("threading")
    if threading is None or threading.active_count() == 1:
        return None
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    names = []
    for t in others:
        target = getattr(t, "_target", None)
        origin = getattr(target, "__module__", None) or type(t).__module__
        names.append("%s (started from %s)" % (t.name, origin))
    return "warm mode refused: a module started a thread at import: %s; attempts run cold" % ", ".join(names)


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

    def pytest_runtestloop(self, session):
        if session.testsfailed:
            # pytest's own loop then stops the session and prints the errors, which flakehunt
            # quotes with the refusal.
            self.refusal = "warm mode refused: collection failed (%d errors); attempts run cold" % session.testsfailed
            return None
        refusal = _thread_refusal()
        if refusal:
            _refuse(self.conn, refusal)
        from _pytest import junitxml

        if "--junitxml" in self.args and junitxml.xml_key not in session.config.stash:
            _refuse(self.conn, "warm mode refused: pytest's junitxml plugin is not loaded; attempts run cold")
        capman = session.config.pluginmanager.getplugin("capturemanager")
        saved = _saved_fds(session.config, capman)
        _ready(self.conn, saved)
        request = _serve(self.conn)
        # In the child, whose fds 0, 1 and 2 are the attempt's now.
        self.child = True
        for fd, target in saved:
            os.dup2(target, fd)
        _fresh_capture_files(capman)
        _child_common()
        if "junitxml" in request:
            _point_junitxml(session.config, request["junitxml"])
        session.items = _reorder(session.items, self.args, request["argv"])
        session.testscollected = len(session.items)
        reporter = session.config.pluginmanager.getplugin("terminalreporter")
        if reporter is not None and hasattr(reporter, "_session_start"):
            from _pytest import timing

            reporter._session_start = timing.Instant()
            reporter._numcollected = len(session.items)
        import pytest

        sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py")] + request["argv"]
        # None: pytest's own loop runs the items, its reports and exit code as in a cold run.
        return None


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
        from _pytest.faulthandler import fault_handler_stderr_fd_key

        pairs.append((config.stash[fault_handler_stderr_fd_key], 2))
    except (ImportError, KeyError):
        pass
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


def _point_junitxml(config, path):
    """Points pytest's junitxml plugin at the attempt's own file (a suite's parent was started
    with a placeholder path, so that the plugin is set up), or, with none, turns it off."""
    from _pytest import junitxml, timing

    xml = config.stash.get(junitxml.xml_key, None)
    if xml is None:
        return
    if path is None:
        del config.stash[junitxml.xml_key]
        config.pluginmanager.unregister(xml)
        return
    xml.logfile = os.path.normpath(os.path.abspath(path))
    # The suite's time and timestamp are the attempt's, not the parent's warm-up.
    if hasattr(xml, "suite_start"):
        xml.suite_start = timing.Instant()


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

    gc.freeze()
    _send(conn, {"ready": True, "native_threads": _native_threads()})


def _child_common():
    """In the child: what a cold start would have done with the attempt's environment."""
    interval = os.environ.get("FLAKEHUNT_SWITCH_INTERVAL")
    if interval:
        # What the tight-gil profile's sitecustomize does at a cold start, which this
        # interpreter ran long ago (with the parent's environment).
        sys.setswitchinterval(float(interval))
        report = os.environ.get("FLAKEHUNT_SWITCH_REPORT")
        if report:
            try:
                with open("%s.%d" % (report, os.getpid()), "w") as f:
                    f.write(repr(sys.getswitchinterval()))
            except OSError:
                pass
    # `random` re-seeds itself after fork (os.register_at_fork in random.py); numpy's global
    # generator does not, and would repeat the same numbers in every attempt.
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        np_random.seed()


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
    if request.get("cwd"):
        os.chdir(request["cwd"])
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
    """Serves requests; returns the request in a forked child, exits in this process.

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
            pidfd = os.pidfd_open(pid)
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


def main():
    sock_path, kind = sys.argv[1], sys.argv[2]
    target = sys.argv[4:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    conn.connect(sock_path)
    try:
        refusal = _warm_up(conn, kind, target)
    except BaseException as e:  # noqa: BLE001 - a refusal, said to flakehunt
        refusal = "warm mode refused: warm-up failed: %s; attempts run cold" % (repr(e),)
    refusal = refusal or _thread_refusal()
    if refusal:
        _refuse(conn, refusal)
    _ready(conn)
    request = _serve(conn)
    _run_script(target, request)


if __name__ == "__main__":
    main()
