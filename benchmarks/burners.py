"""CPU-burning neighbours for a benchmark's "under load" figure (run_all.py, class_of_200.py).

    with burning(2):        # two processes spinning on the CPU until the block ends
        ...

Each burner is a process of its own session, as another program on the machine would be: the
kernel's autogroups share the CPU between sessions first, so burners in the benchmark's own
session would together take only one session's part from a sandbox or a kernel (each of which
runs in a session of its own). They are started before the benchmark measures anything, so a
cgroup it then moves itself into (grade_vs_nbgrader.py's CpuMeter) does not count them.
"""

import os
import signal
import subprocess
import sys
from contextlib import contextmanager

BURN = [sys.executable, "-c", "while True: pass"]


@contextmanager
def burning(count: int):
    """`count` processes spinning on the CPU for the whole block, stopped at its end."""
    burners = [subprocess.Popen(BURN, start_new_session=True) for _ in range(count)]
    try:
        yield burners
    finally:
        for burner in burners:
            try:
                os.killpg(burner.pid, signal.SIGKILL)
            except OSError:
                pass
        for burner in burners:
            burner.wait()
