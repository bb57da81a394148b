"""Ending the grader's own child processes: wait a while, then SIGKILL and wait for good."""

import os
import signal
import subprocess


def reap(proc, timeout=10.0):
    """Wait up to `timeout` seconds for `proc` (a Popen) to end, then kill it; it is reaped."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def kill_group(proc):
    """SIGKILL `proc`'s whole process group (it was started in a session of its own); reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    reap(proc)
