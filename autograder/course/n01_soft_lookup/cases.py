"""Hidden tests of notebook 01 (a dictionary as a soft lookup): 6.5 points.

lookup       1.0  stored values (0.5); an unknown key raises KeyError naming it, while a
                  known one returns its value (0.5)
similarity   1.5  random values (1.0); one key, inputs unmodified (0.5)
percentages  2.0  random values (1.0); scores of magnitude 1e4 (0.5); inputs unmodified (0.5)
soft_lookup  2.0  random values, weights and output (1.0); d_v != d with large scores (0.5);
                  inputs unmodified (0.5)
"""

import numpy as np

from autograder.course.numpy_shared.cases import call, overflowing, unmodified_case, value_case
from autograder.course.probes import Case, probe
from autograder.judging import Judgement

FRUIT = ["apple", "banana", "lemon", "cherry", "grape", "melon", "peach", "plum"]
FRENCH = ["pomme", "banane", "citron", "cerise", "raisin", "melon", "pêche", "prune"]


@probe("lookup")
def lookup_cases(rng: np.random.Generator) -> list[Case]:
    k = 5
    order = rng.permutation(len(FRUIT))[:k]
    table = {FRUIT[i]: FRENCH[i] for i in order}
    numbers = {f"key{j}": rng.standard_normal(3) for j in range(3)}
    present = FRUIT[order[rng.integers(k)]]
    absent = "orange"

    lookups = [
        {"key": key, "want": tab[key], "keys": list(tab)}
        for tab, key in [(table, present), (numbers, "key1")]
    ]
    return [
        Case(
            "lookup",
            "returns the value stored under a key",
            0.5,
            [call(table, present), call(numbers, "key1")],
            Judgement("numpy_judges.lookup_present", {"lookups": lookups}),
        ),
        Case(
            "lookup",
            "an unknown key raises KeyError naming it",
            0.5,
            [call(table, absent), call(table, present)],
            Judgement("numpy_judges.lookup_absent", {"absent": absent, "present": lookups[0]}),
        ),
    ]


@probe("similarity")
def similarity_cases(rng: np.random.Generator) -> list[Case]:
    d, m = 5, 7
    q, K = rng.standard_normal(d), rng.standard_normal((m, d)) * 2
    q1, K1 = rng.standard_normal(3), rng.standard_normal((1, 3))
    q2, K2 = rng.standard_normal(4), rng.standard_normal((6, 4))
    return [
        value_case("similarity", "dot products with every key", 1.0, [q, K]),
        unmodified_case(
            "similarity",
            0.25,
            [q1, K1],
            name="a single key (m = 1) and inputs unmodified",
            values=True,
        ),
        unmodified_case("similarity", 0.25, [q2, K2]),
    ]


@probe("percentages")
def percentages_cases(rng: np.random.Generator) -> list[Case]:
    s = rng.standard_normal(6) * 2
    # magnitude 1e4: one large positive score (exp overflows), one large negative one and one
    # of order 1 (a shift by anything but the maximum still overflows or underflows there)
    big = np.concatenate(
        [rng.standard_normal(2) * 1e4, 1e4 * (1 + rng.random(2)) * [1, -1], rng.standard_normal(1)]
    )[rng.permutation(5)]
    neg = -np.abs(rng.standard_normal(4)) - 1
    return [
        value_case("percentages", "exp-normalised weights", 1.0, [s]),
        value_case("percentages", "scores of magnitude 1e4 (no overflow)", 0.5, [big], large=True),
        unmodified_case(
            "percentages", 0.5, [neg], name="all-negative scores, inputs unmodified", values=True
        ),
    ]


@probe("soft_lookup")
def soft_lookup_cases(rng: np.random.Generator) -> list[Case]:
    d, m, d_v = 4, 6, 4
    q, K, V = rng.standard_normal(d), rng.standard_normal((m, d)), rng.standard_normal((m, d_v))
    K2, V2 = rng.standard_normal((5, 3)) * 30, rng.standard_normal((5, 2))
    q2, K2 = overflowing(rng.standard_normal(3) * 30, K2)
    q3, K3, V3 = rng.standard_normal(3), rng.standard_normal((4, 3)), rng.standard_normal((4, 5))
    return [
        value_case("soft_lookup", "weights and the merged value", 1.0, [q, K, V]),
        value_case(
            "soft_lookup", "values of another width, large scores", 0.5, [q2, K2, V2], large=True
        ),
        unmodified_case("soft_lookup", 0.5, [q3, K3, V3]),
    ]
