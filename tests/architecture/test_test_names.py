"""A hidden test has one name for the whole class.

Each student's inputs are drawn from their own seed, but the class page and summary group the
students' results by test name: a name that printed a seed's sizes ("27 positions") split one
test into several rows, and the summary used to blank every digit to merge them back ("softmax:
a N-D input, default axis=-N").
"""

import pytest

from autograder.course.probes import build_cases
from autograder.curriculum import NOTEBOOKS

SEEDS = (0, 1, 2, 3, 7, 11, 2024, 99991)


@pytest.mark.slow  # a sweep of seeds
@pytest.mark.parametrize("stem", [nb.stem for nb in NOTEBOOKS])
def test_every_seed_gives_the_same_test_names(stem):
    names = {seed: [(c.function, c.name) for c in build_cases(stem, seed)] for seed in SEEDS}
    first = names[SEEDS[0]]
    for seed, these in names.items():
        assert these == first, (seed, sorted(set(these) ^ set(first)))


def test_test_names_are_distinct_within_a_function():
    for nb in NOTEBOOKS:
        names = [(c.function, c.name) for c in build_cases(nb.stem, 5)]
        assert len(names) == len(set(names)), nb.stem
