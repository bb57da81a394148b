"""Ending the grader's own child processes: wait a while, then SIGKILL and wait for good; and the
sandboxes running now, so that a grading run told to stop (Ctrl-C, SIGTERM, SIGHUP) kills them
all at once and starts no other.

    running = Running()                       # one per Sandbox
    launch = running.add(proc, cgroup, jobs, status_dir)   # in the worker that started it
    running.stop()                            # any thread, or a signal handler: kill them all
    running.check()                           # before a launch: SandboxStopped once stopping
"""

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .cgroups import Cgroup


def reap(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Wait up to `timeout` seconds for `proc` (a Popen) to end, then kill it; it is reaped."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL `proc`'s whole process group (it was started in a session of its own); reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    reap(proc)


class SandboxStopped(BaseException):  # noqa: N818 - says what happened, like KeyboardInterrupt
    """The grading run is stopping: no sandbox is started any more. A BaseException, like
    KeyboardInterrupt, so that nothing takes it for a failure of the student or of the grader."""


class _Job(Protocol):
    """What a Launch reads of a NotebookJob (sandbox/__init__.py)."""

    @property
    def stem(self) -> str: ...


@dataclass(eq=False)
class Launch:
    """One running sandbox: its process (the leader of a session of its own), its cgroup, the
    NotebookJobs it runs in order, and where it writes their status files."""

    proc: subprocess.Popen[bytes]
    cgroup: Cgroup | None
    jobs: list[_Job]
    status: Path | int | None = None  # a Path, or an open folder's descriptor (pull.Folder.fd)
    thread: int = field(default_factory=threading.get_ident)  # the worker that started it
    started: float = field(default_factory=time.monotonic)

    def kill(self) -> None:
        """SIGKILL its process group and everything in its cgroup; never waits (the worker that
        started it reaps it and removes the cgroup)."""
        if self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        if self.cgroup is not None:
            self.cgroup.kill(patience=0)

    def begun(self) -> list[str]:
        """The stems of its jobs whose status file exists (each notebook writes one as it starts),
        in the jobs' order. One lstat per job: the sandbox may fill the folder with other names."""
        found = []
        for job in self.jobs:
            name = f"{job.stem}.json"
            try:
                if isinstance(self.status, int):
                    os.stat(name, dir_fd=self.status, follow_symlinks=False)
                elif self.status is not None:
                    os.lstat(self.status / name)
                else:
                    continue
            except OSError:
                continue
            found.append(job.stem)
        return found


class Running:
    """The sandboxes running now. stop() may be called from a signal handler in the main thread,
    which may hold the lock at that moment: hence a re-entrant lock."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._live: list[Launch] = []
        self.stopping = False

    def check(self) -> None:
        if self.stopping:
            raise SandboxStopped("the grading run is stopping")

    def add(
        self,
        proc: subprocess.Popen[bytes],
        cgroup: Cgroup | None,
        jobs: list[_Job],
        status: Path | int | None = None,
    ) -> Launch:
        launch = Launch(proc, cgroup, list(jobs), status)
        with self._lock:
            self._live.append(launch)
            stopping = self.stopping
        if stopping:  # stop() came between check() and the start: it is not left running
            launch.kill()
        return launch

    def watch(self, launch: Launch, status: Path | int | None) -> None:
        with self._lock:
            launch.status = status

    def discard(self, launch: Launch) -> None:
        """Before its folders are closed: begun() never reads a closed (or reused) descriptor."""
        with self._lock:
            if launch in self._live:
                self._live.remove(launch)

    def stop(self) -> None:
        with self._lock:
            self.stopping = True
            live = list(self._live)
        for launch in live:
            launch.kill()

    def progress(self) -> list[tuple[Launch, list[str]]]:
        """[(launch, stems begun)] of the sandboxes running now."""
        with self._lock:
            return [(launch, launch.begun()) for launch in self._live]
