"""Was a sandbox starved of CPU? Measured by the trusted parent, never taken from the sandbox.

A notebook whose time ran out on the wall-clock backstop (its CPU seconds were not used up) is
re-run when, over the notebook's time, its sandbox ran less than three quarters of its CPU share
and at least half of the time it was not running was spent on the run queue waiting for a CPU
that other programs held. That waiting is read per interval from
the run queue delay of the sandbox's threads (/proc/TID/schedstat), and counted only up to the CPU
the sandbox could have had and did not get (its share, `cpus`, less what it used): a student's
threads that outnumber the share wait for each other, not for other programs, so twenty busy
threads of one cell look like a sandbox using its share, never like starvation. Code that sleeps
or waits for something neither runs nor waits for a CPU, so its timeout stays its own, however
busy the machine. Without the sandbox's accounting (no cgroup, no schedstat) there is no
evidence, and no re-run.
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

from .cgroups import Cgroup

INTERVAL = 0.5
SHARE = 0.75  # starved: the sandbox ran less than this part of its CPU share (cpus) ...
WAITING = 0.5  # starved: waited for others' CPU at least this part of the time it did not run


class Sampler:
    """Samples (time, the sandbox's CPU seconds, its threads' seconds waiting for a CPU)."""

    def __init__(self, cgroup: Cgroup | None) -> None:
        self.cgroup = cgroup
        self.samples: list[tuple[float, float | None, float | None]] = []
        self.slowed = False  # a thread of the sandbox was seen with its priority lowered
        self.over = ""  # "cpu" or "wall": the parent killed the sandbox at that budget
        self._done = threading.Event()
        self._sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        if self.cgroup is None:
            self.samples.append((time.monotonic(), None, None))
            return
        wait, slowed = self.cgroup.wait_seconds(with_priority=True)
        self.slowed = self.slowed or slowed
        self.samples.append((time.monotonic(), self.cgroup.cpu_seconds(), wait))

    def _run(self) -> None:
        while not self._done.wait(INTERVAL):
            self._sample()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
        self._sample()

    def cpu_used(self) -> float | None:
        """The sandbox's CPU seconds from the first sample to the last, or None unmeasured."""
        measured = [s[1] for s in list(self.samples) if s[1] is not None]
        return measured[-1] - measured[0] if measured else None

    def share(self, start: float, end: float, cpus: float = 1.0) -> float | None:
        """The part of its CPU share (`cpus`) the sandbox got between `start` and `end`, or None
        unmeasured: what a second run's wall must make up for (rerun_wall_factor)."""
        inside = [(t, cpu) for t, cpu, _ in self.samples if start <= t <= end and cpu is not None]
        if len(inside) < 2:
            inside = [(t, cpu) for t, cpu, _ in self.samples if cpu is not None]
        if len(inside) < 2 or inside[-1][0] - inside[0][0] <= 0:
            return None
        return max(0.0, inside[-1][1] - inside[0][1]) / (cpus * (inside[-1][0] - inside[0][0]))

    def starved(self, start: float, end: float, cpus: float = 1.0) -> bool:
        """True when the sandbox was starved between `start` and `end` (time.monotonic, as the
        sandbox reported them: clipped to what was measured, so a lie only moves the window)."""
        if self.slowed:
            return False
        inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2:
            inside = self.samples
        used = queued = elapsed = 0.0
        for (t0, cpu0, wait0), (t1, cpu1, wait1) in zip(inside, inside[1:], strict=False):
            if cpu0 is None or cpu1 is None or wait0 is None or wait1 is None:
                continue  # not measured: no evidence either way
            dt = t1 - t0
            ran = max(0.0, cpu1 - cpu0)
            waited = max(0.0, wait1 - wait0)  # a thread that ended takes its count with it
            used += ran
            queued += others_held(waited, ran, cpus * dt)
            elapsed += dt
        idle = elapsed - used / cpus  # the time the sandbox was not running at its share
        if elapsed < 1.0 or used >= SHARE * cpus * elapsed:
            return False
        return queued >= WAITING * idle


def rerun_wall_factor(share: float | None, least: float, most: float) -> float:
    """A starved notebook's second run: its wall backstop as a multiple of its CPU budgets, far
    enough for the CPU the first run got (`share` of its share, Sampler.share) with a margin
    of two, at least `least` and at most `most` (Limits.starved_wall_factor, starved_wall_most).
    A multi-threaded cell on a machine so busy that its sandbox got a tenth of a CPU still
    reaches its CPU budget, and is graded, rather than running out of wall twice."""
    if not share or share <= 0:
        return most
    return min(most, max(least, 2.0 / share))


def others_held(waited: float, ran: float, share: float) -> float:
    """Of `waited` thread-seconds on the run queue in an interval where the sandbox ran `ran`
    CPU seconds and could have run `share`: the seconds other programs held the CPU it could
    have had. What its threads wait beyond that they wait for each other (more threads than
    its share), and a sandbox that ran its whole share was not held back at all."""
    return max(0.0, min(waited, share - ran))
