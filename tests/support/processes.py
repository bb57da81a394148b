"""Finding, from the host, the processes a test's submissions left running.

Tests run in parallel (pytest-xdist) and several of them start sleepers, so every marker is
unique to the test process that made it: a test never takes another's sleepers for its own.
"""

import os
from pathlib import Path


def marker(tag):
    """A number `sleep` accepts, unique to this test process: put it in a sleeper's command line."""
    return f"{tag}{os.getpid()}.{tag}"


def processes_with(text):
    """Pids (ints) of every other process whose command line contains `text`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if text in (proc / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(proc.name))
        except OSError:
            continue
    return found
