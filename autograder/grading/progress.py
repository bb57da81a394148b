"""The class run's progress line: the students and notebooks running over their budget.

    watch = OverBudget(sandbox.running, limits)    # sandbox/processes.py's Running
    graded = watch.grading(student, grade_student) # the worker calls this: who runs where
    watch.text()    # "ada 06_autoregressive_lm: 3 min, over its 2 min budget" (one line, or "")

A notebook's budget is the CPU seconds its limits give it: its cells' --timeout plus its hidden
tests' time (NotebookJob.serve_seconds). Its time is the wall clock since this parent first saw
it start (each notebook writes its status file as it starts: only the names of the run's own
notebooks are looked up, the status's content is not read). A notebook past its budget on the
wall clock holds a worker longer than its work should take: sleeping, waiting, or a machine
too busy; the sandbox still stops it at its wall-clock backstop. Student ids are escaped by
autograder.escaping.terminal, the one path for text bound to a terminal.
"""

import threading
import time

from autograder.escaping import terminal

SHOWN = 2  # students named on the line; the others are counted


def notebook_budget(limits, job):
    """Seconds: the notebook's cells' CPU budget and its hidden tests' together, as the sandbox
    applies them (Limits.notebook_budgets: measured by the self-test, or --timeout)."""
    cells, tests = limits.notebook_budgets(job.stem, job.serve_seconds)
    return float(cells) + float(tests)


def duration(seconds):
    """Seconds below two minutes ("45 s"), else whole minutes ("3 min")."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


class OverBudget:
    def __init__(self, running, limits, clock=time.monotonic):
        self.running = running
        self.limits = limits
        self.clock = clock
        self._students = {}  # worker thread -> the student it grades
        self._seen = {}  # (launch, stem) -> when this parent first saw the notebook start

    def grading(self, student, function, *args, **kwargs):
        """function(*args, **kwargs) in a worker, known as grading `student` meanwhile."""
        me = threading.get_ident()
        self._students[me] = student
        try:
            return function(*args, **kwargs)
        finally:
            self._students.pop(me, None)

    def over(self):
        """[(student, stem, seconds running, budget)] of the notebooks over their budget now."""
        now, found, live = self.clock(), [], set()
        for launch, begun in self.running.progress():
            student = self._students.get(launch.thread)
            if student is None or not launch.jobs:
                continue
            stem = begun[-1] if begun else launch.jobs[0].stem  # not begun: the first, starting
            key = (launch, stem)
            live.add(key)
            since = self._seen.setdefault(key, launch.started if not begun else now)
            job = next(j for j in launch.jobs if j.stem == stem)
            budget = notebook_budget(self.limits, job)
            if now - since > budget:
                found.append((student, stem, now - since, budget))
        self._seen = {k: v for k, v in self._seen.items() if k in live}
        return sorted(found)

    def text(self):
        over = self.over()
        parts = [
            f"{terminal(student)} {stem}: {duration(seconds)}, over its {duration(budget)} budget"
            for student, stem, seconds, budget in over[:SHOWN]
        ]
        if len(over) > SHOWN:
            parts.append(f"{len(over) - SHOWN} more over budget")
        return "; ".join(parts)
