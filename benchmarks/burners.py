"""CPU-burning neighbours for a benchmark's "under load" figure (run_all.py, class_of_200.py).

    with burning(2):        # two processes spinning on the CPU until the block ends
        ...

They are forked before the benchmark measures anything, so a cgroup it then moves itself into
(grade_vs_nbgrader.py's CpuMeter) does not count them.
"""

import multiprocessing
from contextlib import contextmanager


def _burn() -> None:
    while True:
        pass


@contextmanager
def burning(count: int):
    """`count` processes spinning on the CPU for the whole block, stopped at its end."""
    fork = multiprocessing.get_context("fork")  # nothing to pickle, however the script was loaded
    burners = [fork.Process(target=_burn, daemon=True) for _ in range(count)]
    for burner in burners:
        burner.start()
    try:
        yield burners
    finally:
        for burner in burners:
            burner.terminate()
        for burner in burners:
            burner.join()
