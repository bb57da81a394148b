"""Fixtures shared by the torch probe tests (test_probes_torch, test_checks_gaps,
test_diagnosis_torch)."""

import os

import numpy as np
import pytest
import torch

from autograder.format_checkers import skip_format_checkers
from autograder.probes import autoregressive_lm as lm_probes
from autograder.probes.base import Case

# The grader's self-test (autograder/grading/selftest.py) guards real runs, once per environment; every
# small run of the tests, with limits of its own, would be an environment of its own (two
# students graded each time). tests/test_selftest.py tests the self-test itself.
os.environ.setdefault("AUTOGRADER_SKIP_SELFTEST", "1")

# as `python -m autograder` does: jsonschema without its slow optional format checkers
skip_format_checkers()

TRAIN_CASE = lm_probes._train_case  # the real one, before any test swaps it


def cheap_training(rng):
    """GPT's training case (10-20 s of training in the student's code) swapped for a free one
    worth the same points, for GPTs judged on their other cases."""
    points = TRAIN_CASE(np.random.default_rng(0)).points  # building it costs ~1 ms
    # drawn: a hidden request never equals a visible one (probes.torch_tools redraws them)
    idx = torch.from_numpy(rng.integers(0, lm_probes.GPT_INIT["vocab_size"], size=(1, 4))).long()
    request = {"op": "module", "init": lm_probes.GPT_INIT, "args": [idx]}
    return Case("GPT", "training (skipped in this test)", points, [request], lambda rs: None)


@pytest.fixture
def no_training(monkeypatch):
    monkeypatch.setattr(lm_probes, "_train_case", cheap_training)


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models: one thread is faster, and much faster on a loaded machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
