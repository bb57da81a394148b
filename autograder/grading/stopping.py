"""Stopping a class run: Ctrl-C (SIGINT), SIGTERM and SIGHUP alike.

    with Stopping() as stop:              # the handlers, for the run's length (main thread only)
        stop.on_stop(sandbox.stop)        # called at the first signal: kills the sandboxes
        ...                               # Interrupted is raised in the main thread
        with stop.deferred():             # the class report: written whole, then the exit
            ...
        with stop.deferred(raise_after=True):   # made whole, then stop if a signal came
            ...
    raise RunStopped(stop.signum)         # exit status 128 + the signal (130 for Ctrl-C)

At the first signal the sandboxes running are killed at once (their workers stop, and no new
one starts: sandbox/processes.py), then Interrupted is raised in the main thread, which lets the
workers end, keeps the students whose results.json was written and writes the class report
from what is finished (grading/classrun.py). A second signal only says that the run is
stopping. Why a handler: Python's own KeyboardInterrupt left the pool of workers grading every
queued student before the process could exit (ThreadPoolExecutor's exit waits for its queue),
and SIGTERM and SIGHUP ended the process at once, leaving its work folders and cgroups. A signal
the run was started with ignored (nohup, a background job) stays ignored.
"""

import contextlib
import os
import signal
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):  # noqa: N818 - like KeyboardInterrupt, which it replaces
    """Raised in the main thread at the first stopping signal."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class RunStopped(SystemExit):  # noqa: N818
    """The run stopped on a signal, after cleaning up: exits with 128 + the signal's number."""

    def __init__(self, signum):
        super().__init__(128 + signum)
        self.signum = signum


def signal_name(signum):
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Stopping:
    def __init__(self):
        self.signum = None
        self.raising = True
        self.raised = False
        self._callbacks = []
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                if signal.getsignal(signum) is signal.SIG_IGN:
                    continue
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()
        return False

    def on_stop(self, callback):
        """`callback()` at the first signal (from the handler: it must not block), or now if the
        run is already stopping."""
        self._callbacks.append(callback)
        if self.signum is not None:
            callback()

    @contextlib.contextmanager
    def deferred(self, raise_after=False):
        """A signal inside the block is noted (stop.signum), not raised: the block completes.
        raise_after: then Interrupted is raised at the block's end (setting up: the run must
        not go on as if no signal had come); else the caller looks at stop.signum (cleaning up,
        writing what is finished)."""
        raising, self.raising = self.raising, False
        try:
            yield self
        finally:
            self.raising = raising
        if raise_after and raising and self.signum is not None and not self.raised:
            self.raised = True
            raise Interrupted(self.signum)

    def _handle(self, signum, frame):
        if self.signum is not None:
            _say(f"\n{signal_name(signum)}: the run is already stopping, cleaning up.\n")
            return
        self.signum = signum
        _say(
            f"\n{signal_name(signum)}: stopping: the running sandboxes are killed, the finished "
            "students kept.\n"
        )
        for callback in self._callbacks:
            try:
                callback()
            except Exception:  # noqa: BLE001, S110 - the run stops all the same
                pass
        if self.raising:
            self.raised = True
            raise Interrupted(signum)


def _say(text):
    """To stderr without Python's buffered streams (a handler may interrupt a print), and never
    failing (after SIGHUP the terminal may be gone)."""
    try:
        os.write(2, text.encode())
    except OSError:
        pass
