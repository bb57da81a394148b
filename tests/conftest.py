"""Fixtures shared by the torch probe tests (test_probes_torch, test_checks_gaps,
test_diagnosis_torch)."""

import os

import pytest
import torch
from fixtures import cheap_training

from autograder.course.n06_autoregressive_lm import cases_gpt as lm_probes
from autograder.format_checkers import skip_format_checkers

# The grader's self-test (autograder/grading/selftest.py) guards real runs, once per environment; every
# small run of the tests, with limits of its own, would be an environment of its own (two
# students graded each time). tests/grading/test_selftest.py tests the self-test itself.
os.environ.setdefault("AUTOGRADER_SKIP_SELFTEST", "1")

# as `python -m autograder` does: jsonschema without its slow optional format checkers
skip_format_checkers()

# One thread per test process: the tests' models are tiny, and `-n 2` already runs a process per
# core; two threads each made four on two cores, and each of torch's threads spun waiting for the
# other (a tiny model's training step took 11 ms instead of a fraction of one on a busy machine).
# What a sandbox runs is a process of its own and keeps its own threads.
torch.set_num_threads(1)


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


@pytest.fixture(scope="session", autouse=True)
def one_font_cache_per_test_process(tmp_path_factory):
    """A real run hands every sandbox its Config's cache folder, where matplotlib's font cache is
    built once (sandbox/fontcache.py); the tests that make a Sandbox() of their own get one shared
    folder the same way, instead of building the cache again for each (about a CPU-second)."""
    from autograder.sandbox import Sandbox

    defaults = Sandbox.__init__.__kwdefaults__
    before = defaults["cache"]
    defaults["cache"] = tmp_path_factory.mktemp("grader-cache")
    yield
    defaults["cache"] = before
