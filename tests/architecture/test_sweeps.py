"""tests/support/sweeps.py: a sweep keeps the first right answer of each graded name fast."""

import pytest
from sweeps import first_of_each_name


def test_the_first_answer_of_each_name_stays_fast_and_the_others_are_slow():
    a1, a2, b1, a3 = object(), object(), object(), object()
    params = first_of_each_name([("a", a1), ("a", a2), ("b", b1), ("a", a3)])
    assert params[0] == ("a", a1) and params[2] == ("b", b1)  # as they were: fast
    for param, answer in ((params[1], a2), (params[3], a3)):
        assert param.values == ("a", answer)
        assert [m.name for m in param.marks] == ["slow"]


def test_a_sweep_with_one_answer_per_name_loses_nothing():
    entries = [("a", 1), ("b", 2), ("c", 3)]
    assert first_of_each_name(entries) == entries


@pytest.mark.parametrize(("name", "answer"), first_of_each_name([("x", 1), ("x", 2)]))
def test_the_parameters_reach_the_test_whole(name, answer):
    assert name == "x" and answer in (1, 2)
