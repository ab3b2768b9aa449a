"""flakehunt's warm parent: imports a Python target once, then forks one child per attempt.

Started by flakehunt (crates/flakehunt-core/src/warm/mod.rs) as

    python3 parent.py SOCKET pytest -- PYTEST_ARGS...
    python3 parent.py SOCKET script -- SCRIPT ARGS...

It connects to flakehunt's SOCK_SEQPACKET socket at SOCKET, warms up, and sends one line:
{"ready": true, "native_threads": N} or {"refused": "why"}. Warm-up means:

- pytest: a `--collect-only` session with the target's own arguments, which imports pytest, its
  plugins, the conftests, the test modules and everything they import. Its output goes to this
  process's stdout and stderr, which flakehunt reads while it waits (a refusal quotes them).
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


def _warm_up(kind, args):
    """Imports what the target needs; returns a refusal line or None."""
    if kind == "pytest":
        # As `python3 -m pytest` has it: the working directory first on sys.path.
        sys.path[0] = os.getcwd()
        import pytest

        code = pytest.main(list(args) + ["--collect-only", "-qq"])
        # 5: nothing collected; the attempts then say so themselves, as cold ones would.
        if int(code) not in (0, 5):
            return "warm mode refused: collection failed (pytest exit code %d); attempts run cold" % int(code)
        return None
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
    # The whole environment of the attempt, set before any of the user's code runs in the child.
    os.environ.clear()
    os.environ.update(request["env"])


def _serve(conn):
    """Serves requests; returns (request, argv) in a forked child, exits in this process."""
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    children = {}  # pidfd -> (pid, status fd)
    open_ = True
    while open_ or children:
        for fd, _events in poller.poll():
            if fd != conn.fileno():
                pid, status_fd = children.pop(fd)
                poller.unregister(fd)
                _, status, usage = os.wait4(pid, 0)
                try:
                    os.write(status_fd, (json.dumps({"status": status, "cpu": usage.ru_utime + usage.ru_stime}) + "\n").encode())
                except OSError:
                    pass
                os.close(status_fd)
                os.close(fd)
                continue
            try:
                msg, fds, _flags, _addr = socket.recv_fds(conn, 1 << 22, 64)
            except (ConnectionResetError, OSError):
                msg, fds = b"", []
            if not msg:
                open_ = False
                poller.unregister(conn.fileno())
                continue
            request = json.loads(msg)
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


def _run(kind, target, request):
    """In the child: runs exactly the attempt, as the cold command would."""
    argv = request["argv"]
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
    if kind == "pytest":
        import pytest

        sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py")] + argv
        raise SystemExit(pytest.console_main())
    # As `python3 SCRIPT` runs it: argv[0] as given, `__file__` absolute (since 3.9), a fresh
    # `__main__` module (runpy.run_path would make argv[0] the absolute path).
    import types

    sys.argv = [target[0]] + argv
    main_module = types.ModuleType("__main__")
    main_module.__file__ = _SCRIPT[0]
    main_module.__builtins__ = __builtins__
    sys.modules["__main__"] = main_module
    with open(_SCRIPT[0], "rb") as f:
        code = compile(f.read(), _SCRIPT[0], "exec")
    exec(code, main_module.__dict__)


def main():
    sock_path, kind = sys.argv[1], sys.argv[2]
    target = sys.argv[4:]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    conn.connect(sock_path)
    try:
        refusal = _warm_up(kind, target)
    except BaseException as e:  # noqa: BLE001 - a refusal, said to flakehunt
        refusal = "warm mode refused: warm-up failed: %s; attempts run cold" % (repr(e),)
    refusal = refusal or _thread_refusal()
    if refusal:
        _send(conn, {"refused": refusal})
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(3)
    # flakehunt stops reading this process's output once it is ready: what it would write from
    # now on goes nowhere (flushed first, and redirected before the ready line, so that no
    # write meets a closed pipe).
    sys.stdout.flush()
    sys.stderr.flush()
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    _send(conn, {"ready": True, "native_threads": _native_threads()})
    request = _serve(conn)
    _run(kind, target, request)


if __name__ == "__main__":
    main()
