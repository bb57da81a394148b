"""The parent's own work for a student (her cases, then judging and reports) is done by one
worker at a time, while the other workers' students run in their sandboxes
(grading/student.py, PARENT_TURN): Python threads doing it at once cost 2.6x the CPU.

The steps are replaced by stand-ins that count how many run at once: the parent's steps sleep a
little, and the sandbox step waits until all three students are in their sandboxes at once
(a barrier), which can only happen if it does not take the turn. A control run without the
lock shows the parent's stand-ins do overlap when nothing stops them, so the test can fail.
"""

import contextlib
import threading
import time
from pathlib import Path

import pytest

from autograder.config import Config
from autograder.grading import student
from autograder.grading.run_state import RunState


class Stop(Exception):
    pass


class Overlap:
    """How many stand-ins of each kind ran at once, at most."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = {"parent": 0, "sandbox": 0}
        self.most = {"parent": 0, "sandbox": 0}

    def busy(self, kind: str, wait=lambda: time.sleep(0.1)) -> None:
        with self.lock:
            self.now[kind] += 1
            self.most[kind] = max(self.most[kind], self.now[kind])
        try:
            wait()
        finally:
            with self.lock:
                self.now[kind] -= 1


def _grade_three(monkeypatch, tmp_path: Path) -> Overlap:
    seen = Overlap()
    together = threading.Barrier(3, timeout=30)  # all three students in their sandboxes

    def plan(*args, **kwargs):
        seen.busy("parent")
        return []

    def sandbox(*args, **kwargs):
        seen.busy("sandbox", together.wait)  # BrokenBarrierError if the turn held them apart
        return {}, []

    def judge(*args, **kwargs):
        seen.busy("parent")
        raise Stop  # the rest (results and feedback) needs a real grading

    monkeypatch.setattr(student, "plan_notebooks", plan)
    monkeypatch.setattr(student, "run_in_sandbox", sandbox)
    monkeypatch.setattr(student, "judge", judge)
    config = Config(out=tmp_path / "out")
    errors = []

    def one(name: str) -> None:
        try:
            student._grade_student(
                name, tmp_path, config, RunState(), None, tmp_path, 0.0, {}, {}, {}
            )
        except Stop:
            pass
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(f"s{i}",)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not errors, errors
    return seen


def test_one_worker_at_a_time_does_the_parents_work(monkeypatch, tmp_path):
    seen = _grade_three(monkeypatch, tmp_path)
    assert seen.most["parent"] == 1
    assert seen.most["sandbox"] == 3  # the sandboxes' waits are not serialized


def test_without_the_turn_the_stand_ins_overlap(monkeypatch, tmp_path):
    monkeypatch.setattr(student, "PARENT_TURN", contextlib.nullcontext())
    seen = _grade_three(monkeypatch, tmp_path)
    assert seen.most["parent"] > 1


@pytest.fixture(autouse=True)
def _no_leftover_turn():
    yield
    assert not student.PARENT_TURN.locked()
