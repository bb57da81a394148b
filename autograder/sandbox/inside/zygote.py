"""Runs INSIDE the sandbox: warm kernels, forked from one pre-loaded process per student.

    serve_forked(FD, ALIVE_FD)     # the zygote, forked from driver.py (its listening socket)
    python zygote.py --serve FD    # the same, started as a program

Starting a Python kernel and importing numpy, matplotlib and torch costs seconds per notebook.
The zygote imports them ONCE (torch only once a notebook that uses it asks for a kernel;
matplotlib.pyplot lazily, in a kernel that uses it; no thread, no ZMQ context: it only
imports), then forks a fresh process for every notebook, which becomes a bare IPython shell
(_shell): each notebook still gets its own kernel process, its own namespace, its own session
(setsid), signals and rlimits, and a crash in one cannot touch the next.

The driver asks for a kernel over a unix socket: it sends the kernel's stdin/stdout/stderr, its
end of a socketpair the shell reads its cells from, its working directory and environment, and
learns the kernel's pid. When the driver closes that connection the zygote SIGKILLs the kernel
and reaps it. Without the zygote (the grader's warm kernels turned off) the driver runs each
notebook in ipykernel through nbclient instead (driver._cold_client).
"""

import gc
import json
import os
import select
import signal
import socket
import sys
import types
from importlib.abc import Loader
from importlib.machinery import ModuleSpec

PRELOAD = (
    # what the bare shell (_shell) imports for itself: InteractiveShell, what its instance()
    # imports (the completer, the inspector, the magics, the history's sqlite3), and what its
    # first traceback imports (stack_data, pygments' Python lexer, the debugger's bdb). Not
    # ipykernel's own stack (the kernel app, zmq's shell, debugpy, psutil, tornado): no
    # warm kernel starts it, and importing it cost each student 0.24 CPU-s for nothing.
    "IPython.core.interactiveshell",
    "IPython.core.completer",
    "IPython.core.completerlib",
    "IPython.core.oinspect",
    "IPython.core.magics",
    "IPython.core.application",
    "IPython.core.debugger",
    "traitlets.config",
    "sqlite3",
    "stack_data",
    "pygments.lexers.python",
    "pygments.formatters.terminal256",
    "numpy",
    "matplotlib",
)
# Imported lazily, in the kernel that uses them: `import matplotlib.pyplot as plt` binds a module
# whose code runs on its first use (_Deferred). Every notebook imports pyplot, some twice (their
# own import cell, and an earlier notebook's through coursedata.import_earlier), but under grading
# only demo cells (skipped) plot: preloading pyplot cost each student about 0.5 CPU-s that no
# verdict needed. A kernel that does plot pays it then, once.
LAZY = ("matplotlib.pyplot",)
# Imported once, on the first request of a kernel whose notebook needs it (the driver says so in its
# request's "preload"): a NumPy-only submission never pays for torch,
# and the NumPy notebooks' kernels, forked before it, do not carry its address space.
ON_DEMAND = ("torch",)


# -- the zygote ---------------------------------------------------------------------------------
def _import_all(
    names: list[str] | tuple[str, ...],
) -> None:
    """Import `names` with the cyclic garbage collector paused (imports make many objects and
    few cycles: about 10 % of torch's import time went to collections), then freeze everything
    imported so far: the kernels forked later never scan it again, nor copy its pages to do so."""
    import importlib

    gc.disable()
    try:
        for name in names:
            try:
                importlib.import_module(name)
            except Exception as exc:  # noqa: BLE001 - a missing library costs its notebook time
                print(f"[zygote] could not preload {name}: {exc!r}", file=sys.stderr)
    finally:
        gc.enable()
    gc.freeze()


class _LazyFinder:
    """A meta-path finder for the modules in LAZY: the usual spec, with a deferring loader."""

    def find_spec(self, name, path=None, target=None) -> ModuleSpec | None:
        if name not in LAZY:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _DeferringLoader(spec.loader)
        return spec


class _DeferringLoader(Loader):
    """Creates the module as the real loader would and runs its code on first use (like
    importlib.util.LazyLoader, whose modules run as soon as anything, even the import system's
    own look at __spec__ when the module is imported a second time, touches them)."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        object.__setattr__(module, "__class__", _Deferred)


class _Deferred(types.ModuleType):
    """A module not run yet: what the import system reads of it is answered from its metadata;
    any other attribute, set or deleted, runs it first (then it is a plain module)."""

    METADATA = frozenset(
        {"__spec__", "__name__", "__loader__", "__package__", "__file__", "__path__", "__class__"}
    )

    def _run(self) -> None:
        spec = object.__getattribute__(self, "__spec__")
        loader = spec.loader.loader if isinstance(spec.loader, _DeferringLoader) else spec.loader
        object.__setattr__(self, "__class__", types.ModuleType)
        spec.loader = self.__loader__ = loader
        assert loader is not None  # _LazyFinder defers only a spec with a loader
        loader.exec_module(self)

    def __getattribute__(self, name):
        if name in _Deferred.METADATA:
            return object.__getattribute__(self, name)
        _Deferred._run(self)
        return getattr(self, name)

    def __setattr__(self, name, value) -> None:
        _Deferred._run(self)
        setattr(self, name, value)

    def __delattr__(self, name) -> None:
        _Deferred._run(self)
        delattr(self, name)


def _preload() -> None:
    # inside the sandbox: the zygote's own environment, before the kernels' imports
    os.environ.setdefault("MPLBACKEND", "Agg")
    _import_all(PRELOAD)
    sys.meta_path.insert(0, _LazyFinder())


def _preload_on_demand(wish) -> None:
    wanted = set(str(wish).split(","))
    missing = [name for name in ON_DEMAND if name in wanted and name not in sys.modules]
    if missing:
        _import_all(missing)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _child(
    conn: socket.socket, request, fds: list[int], closing: list[int | socket.socket]
) -> None:
    """In the forked process: become a fresh kernel; never returns."""
    code = 1
    try:
        os.setsid()  # like jupyter_client's start_new_session: killpg(0) stays in this kernel
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except Exception:  # noqa: BLE001
            pass
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        control = fds[3] if len(fds) == 4 else -1  # a bare shell's socket to the driver
        for target, fd in zip((0, 1, 2), fds[:3], strict=False):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2 and fd != control:
                os.close(fd)
        for item in closing:
            try:
                item.close() if hasattr(item, "close") else os.close(item)
            except OSError:
                pass
        conn.close()
        os.chdir(request["cwd"])
        # inside the sandbox: the kernel takes the environment the driver sent
        os.environ.clear()
        os.environ.update(request["env"])
        _reseed()
        sys.argv = ["ipython-shell", *request["args"]]
        if request.get("mode") != "shell" or control < 0:
            print(
                "[zygote] a kernel is asked for as a bare shell, with its socket", file=sys.stderr
            )
            return  # code 1: the driver sees the kernel end before its first cell
        code = _shell(control)
    except BaseException:  # noqa: BLE001 - whatever happens, never return into the zygote's loop
        import traceback

        traceback.print_exc()
    finally:
        _exit(code)


class _Counted:
    """A text stream that only counts what is written to it (a cell's prints: the driver needs
    how much, never what; writes to the descriptors themselves reach the sandbox's log)."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, fileno: int) -> None:
        self.chars, self._fileno = 0, fileno

    def write(self, text) -> int:
        self.chars += len(str(text))
        return len(str(text))

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._fileno

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False


def _shell(control: int) -> int:
    """A notebook's kernel without ipykernel: its cells run in a bare IPython shell, one JSON
    line in ({"code": ...}) and one out per cell ({"ename", "evalue", "printed", "result"}), over
    the socket the driver passed (`control`). No sockets of Jupyter's, no threads, no message
    protocol: a cell costs about what IPython's own run_cell does (benchmarks/kernel_overhead.py)."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    out, err = _Counted(1), _Counted(2)
    sys.stdout, sys.stderr = out, err
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    channel = os.fdopen(control, "rb", buffering=0)
    pending = b""
    while True:
        try:
            while b"\n" not in pending:
                chunk = channel.read(1 << 16)
                if not chunk:
                    return 0
                pending += chunk
        except KeyboardInterrupt:  # an interrupt between cells: nothing to stop
            continue
        line, _, pending = pending.partition(b"\n")
        request = json.loads(line)
        before = out.chars + err.chars
        reply: dict[str, object] = {"id": request.get("id"), "ename": None, "evalue": ""}
        try:
            result = shell.run_cell(request["code"], store_history=True)
            error = result.error_before_exec or result.error_in_exec
            if error is not None:
                reply["ename"], reply["evalue"] = type(error).__name__, str(error)[:2000]
            elif result.result is not None and request.get("want_result"):
                assert shell.display_formatter is not None  # made by the shell's __init__
                data, _ = shell.display_formatter.format(result.result)
                reply["result"] = str(data.get("text/plain", ""))[:2000]
        except KeyboardInterrupt:  # delivered outside the cell's own code
            reply["ename"], reply["evalue"] = "KeyboardInterrupt", ""
        except BaseException as exc:  # noqa: BLE001 - the shell itself failed: the cell's error
            reply["ename"], reply["evalue"] = type(exc).__name__, str(exc)[:2000]
        reply["printed"] = out.chars + err.chars - before
        while True:
            try:
                os.write(control, (json.dumps(reply) + "\n").encode())
                break
            except KeyboardInterrupt:
                continue


def _exit(code: int):
    """Leave this forked process at once (no atexit, no cleanup of the parent's objects)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    os._exit(code if isinstance(code, int) else 1)


def _reseed() -> None:
    """A cold kernel draws fresh random state; a forked one would share the zygote's."""
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed()
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.seed()


def serve_forked(listener_fd: int, alive_fd: int, unblock: tuple[str, ...] = ()) -> None:
    """serve() in a process forked from the driver (driver.py, Zygote.start); never returns.

    The driver's imports are kept (what ipykernel shares with jupyter_client is not paid again);
    its atexit handlers, its blocked imports (`unblock`: sys.modules entries set to None) and
    every descriptor but the listener are not: `alive_fd`, the read end of a pipe the driver
    holds open, becomes stdin, as for a zygote the driver started as a program."""
    code = 1
    try:
        import atexit

        atexit._clear()  # the driver's handlers are not the zygote's, nor its kernels'
        os.dup2(alive_fd, 0)
        os.close(alive_fd)
        os.closerange(3, listener_fd)
        os.closerange(listener_fd + 1, 1 << 16)
        for name in unblock:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]
        sys.argv = [__file__, "--serve", str(listener_fd)]
        code = serve(listener_fd) or 0
    except BaseException:  # noqa: BLE001 - never return into the driver
        import traceback

        traceback.print_exc()
    finally:
        _exit(code)


def serve(fd: int) -> int:
    # the driver bound and listens on it already: its requests queue there while the imports run
    listener = socket.socket(fileno=fd)
    _preload()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # die with the driver
    except Exception:  # noqa: BLE001
        pass
    conns: dict[socket.socket, int] = {}  # socket -> kernel pid
    pids: dict[int, socket.socket] = {}  # kernel pid -> socket
    stdin = sys.stdin.fileno()
    while True:
        readable, _, _ = select.select([listener, wake_r, stdin, *conns], [], [])
        if stdin in readable and not os.read(stdin, 1024):
            break  # the driver is gone or done
        if wake_r in readable:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
            while True:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                conn = pids.pop(pid, None)
                if conn is not None:
                    conns.pop(conn, None)
                    try:
                        conn.send(f"exit {status}".encode())
                    except OSError:
                        pass
                    conn.close()
        for conn in [c for c in readable if c in conns]:
            try:
                data = conn.recv(64)
            except OSError:
                data = b""
            if not data:  # the driver closed the connection (or died): its kernel goes too
                pid = conns.pop(conn)
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
                conn.close()  # pids keeps the entry until it is reaped
        if listener in readable:
            conn, _ = listener.accept()
            try:
                message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 4)
                request = json.loads(message.decode())
            except (OSError, ValueError):
                conn.close()
                continue
            _preload_on_demand(request.get("preload", ""))
            pid = os.fork()
            if pid == 0:
                _child(conn, request, fds, [listener, wake_r, wake_w, *conns])
            for fd in fds:
                os.close(fd)
            try:
                conn.send(f"pid {pid}".encode())
            except OSError:
                os.kill(pid, signal.SIGKILL)
            conns[conn] = pid
            pids[pid] = conn
    for pid in list(pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        sys.exit(serve(int(sys.argv[2])))
    else:
        sys.exit(__doc__)
