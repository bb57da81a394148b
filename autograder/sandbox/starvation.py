"""Was a sandbox starved of CPU? Measured by the trusted parent, never taken from the sandbox.

A notebook whose time ran out on the wall-clock backstop (its CPU seconds were not used up) is
re-run when, over the notebook's time, its sandbox got less than half of its CPU share while its
threads spent at least half of that time runnable but waiting for a CPU: other programs had the
CPU. Code that sleeps or waits for something neither runs nor waits for a CPU, so its timeout
stays its own, however busy the machine; busy processes of the sandbox's own use its share.
Without the sandbox's accounting (no cgroup, no schedstat) there is no evidence, and no re-run.
A sandbox that lowered its own priority (a thread with a nice value above 0, or SCHED_BATCH /
SCHED_IDLE: what a student may do to look starved next to busy neighbours) is never taken for
starved, nor is one the parent killed for using up its CPU budget.

    sampler = Sampler(cgroup)       # when the sandbox starts
    ...
    sampler.stop()
    sampler.starved(start, end, cpus=1.0)
"""

import threading
import time

INTERVAL = 0.5
SHARE = 0.5  # the sandbox got less than this part of its CPUs
WAITING = 0.5  # while its threads waited for a CPU at least this part of the time


class Sampler:
    """Samples (time, the sandbox's CPU seconds, its threads' seconds waiting for a CPU)."""

    def __init__(self, cgroup):
        self.cgroup = cgroup
        self.samples = []
        self.slowed = False  # a thread of the sandbox was seen with its priority lowered
        self.over = ""  # "cpu" or "wall": the parent killed the sandbox at that budget
        self._done = threading.Event()
        self._sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self):
        if self.cgroup is None:
            self.samples.append((time.monotonic(), None, None))
            return
        wait, slowed = self.cgroup.wait_seconds(with_priority=True)
        self.slowed = self.slowed or slowed
        self.samples.append((time.monotonic(), self.cgroup.cpu_seconds(), wait))

    def _run(self):
        while not self._done.wait(INTERVAL):
            self._sample()

    def stop(self):
        self._done.set()
        self._thread.join()
        self._sample()

    def cpu_used(self):
        """The sandbox's CPU seconds from the first sample to the last, or None unmeasured."""
        measured = [s[1] for s in list(self.samples) if s[1] is not None]
        return measured[-1] - measured[0] if measured else None

    def starved(self, start, end, cpus=1.0):
        """True when the sandbox was starved between `start` and `end` (time.monotonic, as the
        sandbox reported them: clipped to what was measured, so a lie only moves the window)."""
        if self.slowed:
            return False
        inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2:
            inside = self.samples
        used = waited = elapsed = 0.0
        for (t0, cpu0, wait0), (t1, cpu1, wait1) in zip(inside, inside[1:], strict=False):
            if None in (cpu0, cpu1, wait0, wait1):
                continue  # not measured: no evidence either way
            used += max(0.0, cpu1 - cpu0)
            waited += max(0.0, wait1 - wait0)  # a thread that ended takes its count with it
            elapsed += t1 - t0
        if elapsed < 1.0:
            return False
        return used < SHARE * cpus * elapsed and waited >= WAITING * elapsed
