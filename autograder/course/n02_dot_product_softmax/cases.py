"""Hidden tests of notebook 02 (dot products and softmax, one query at a time): 10 points.

    softmax              3.0  1-D, an array and a list (0.5); square 2-D, default axis (0.5); axis=0 and a 3-D input
                              with axis=1 (0.5); magnitudes of 1e4 (0.5); -inf entries and an
                              integer input (0.5); inputs unmodified (0.5)
    scaled_scores        2.0  d_k = 8 (1.0); d_k = 3 with more keys (0.5); inputs unmodified (0.5)
    attend               2.0  random values (1.0); scores large enough to overflow exp, d_v != d_k
                              (0.5); inputs unmodified (0.5)
    attention_for_token  3.0  causal, a middle token (1.0); causal=False (0.5); the first and the
                              last token, large scores (0.5); later tokens cannot change a causal output (0.5);
                              inputs unmodified (0.5)

Shapes are chosen so that the usual mistakes give different numbers: d != d_k != d_v, and the
number of keys differs from d_k.
"""

import numpy as np

from autograder.course.numpy_shared.cases import (
    call,
    call_data,
    loud,
    overflowing,
    unmodified_case,
    value_case,
)
from autograder.course.probes import Case, probe
from autograder.judging import Judgement


@probe("softmax")
def softmax_cases(rng: np.random.Generator) -> list[Case]:
    x1 = rng.standard_normal(6) * 2
    x1_list = [float(v) for v in rng.standard_normal(5) * 2]  # "accept lists as well as arrays"
    x2 = rng.standard_normal((4, 4)) * 2
    x3 = rng.standard_normal((3, 5)) * 2
    x4 = rng.standard_normal((2, 3, 4)) * 2
    # rows of magnitude 1e4, and one row of scores near 1000 close together: exp overflows there
    # without a shift, and a shift by the whole array's maximum underflows it to 0/0, while a
    # shift by anything near the row's own values (its mean, say) does not: so the large case
    # tells those three mistakes apart.
    big = np.vstack([rng.standard_normal((3, 4)) * 1e4, 1000 + rng.standard_normal((1, 4)) * 3])
    with_inf = rng.standard_normal((3, 5))
    with_inf[rng.random((3, 5)) < 0.4] = -np.inf
    with_inf[np.arange(3), rng.integers(0, 5, 3)] = rng.standard_normal(3)  # one finite per row
    ints = rng.integers(-3, 4, size=(2, 4))
    x6 = rng.standard_normal((3, 4)) + 5
    return [
        value_case(
            "softmax",
            "a 1-D input, as an array and as a Python list",
            0.5,
            calls=[([x1], {}), ([x1_list], {})],
            lists=[[1, 0]],
        ),
        value_case("softmax", "a 2-D input, default axis=-1", 0.5, [x2]),
        value_case(
            "softmax",
            "axis=0, and a 3-D input with axis=1",
            0.5,
            calls=[([x3], {"axis": 0}), ([x4], {"axis": 1})],
        ),
        value_case("softmax", "inputs of magnitude 1e4 (no overflow)", 0.5, [big], large=True),
        value_case(
            "softmax",
            "-inf entries get weight 0; an integer input gives float weights",
            0.5,
            calls=[([with_inf], {}), ([ints], {})],
        ),
        unmodified_case("softmax", 0.5, [x6]),
    ]


@probe("scaled_scores")
def scaled_scores_cases(rng: np.random.Generator) -> list[Case]:
    q, K = rng.standard_normal(8), rng.standard_normal((5, 8))
    q2, K2 = rng.standard_normal(3), rng.standard_normal((7, 3))
    q3, K3 = rng.standard_normal(5), rng.standard_normal((4, 5))
    return [
        value_case("scaled_scores", "scores of one query, d_k = 8", 1.0, [q, K]),
        value_case("scaled_scores", "d_k = 3 with 7 keys", 0.5, [q2, K2]),
        unmodified_case("scaled_scores", 0.5, [q3, K3]),
    ]


@probe("attend")
def attend_cases(rng: np.random.Generator) -> list[Case]:
    q, K, V = rng.standard_normal(4), rng.standard_normal((6, 4)), rng.standard_normal((6, 3))
    q2, K2 = overflowing(rng.standard_normal(5) * 40, rng.standard_normal((4, 5)) * 40, 4000.0)
    V2 = rng.standard_normal((4, 2))
    q3, K3, V3 = rng.standard_normal(3), rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    return [
        value_case("attend", "weights and output of one query", 1.0, [q, K, V]),
        value_case(
            "attend",
            "scores large enough to overflow exp; d_v != d_k",
            0.5,
            [q2, K2, V2],
            large=True,
        ),
        unmodified_case("attend", 0.5, [q3, K3, V3]),
    ]


@probe("attention_for_token")
def attention_for_token_cases(rng: np.random.Generator) -> list[Case]:
    n, d, d_k, d_v = 6, 5, 4, 3

    def weights():  # scaled by 1/sqrt(d): scores of order 1, so no token's weight is ~0 and
        # looking at one token more or less always shows in the output
        return (
            rng.standard_normal((d, d_k)) / np.sqrt(d),
            rng.standard_normal((d, d_k)) / np.sqrt(d),
            rng.standard_normal((d, d_v)),
        )

    X = rng.standard_normal((n, d))
    W = weights()
    i = int(rng.integers(2, n - 2))
    X2, W2 = rng.standard_normal((n, d)), weights()
    X3, W3 = rng.standard_normal((n, d)), weights()
    Xl, Wl = rng.standard_normal((n, d)), weights()
    X4, W4 = rng.standard_normal((n, d)), weights()
    j = int(rng.integers(1, n - 1))
    X4b = X4.copy()
    X4b[j + 1 :] = rng.standard_normal((n - j - 1, d)) * 3  # the future changes
    X4c = X4.copy()
    X4c[: j + 1] = rng.standard_normal((j + 1, d)) * 3  # the past and present change
    X4d = X4.copy()
    X4d[:j] = rng.standard_normal((j, d)) * 3  # only the past changes (j >= 1)
    X5, W5 = rng.standard_normal((n, d)), weights()

    future = {
        "j": j,
        "calls": [
            call_data("attention_for_token", [X_, j, *W4], variants=False)
            for X_ in (X4, X4b, X4c, X4d)
        ],
    }

    return [
        value_case(
            "attention_for_token", f"causal output of a middle token of {n}", 1.0, [X, i, *W]
        ),
        value_case(
            "attention_for_token",
            "causal=False: every token is visible",
            0.5,
            [X2, int(rng.integers(1, n - 1)), *W2],
            {"causal": False},
        ),
        value_case(
            "attention_for_token",
            "the first and the last token; large scores",
            0.5,
            calls=[
                ([X3, 0, *W3], {}),
                ([X3, n - 1, *W3], {}),
                ([loud(Xl, *Wl[:2], row=n - 1), n - 1, *Wl], {}),
            ],
            large=True,
        ),
        Case(
            "attention_for_token",
            "later tokens do not change a causal output",
            0.5,
            [call(X_, j, *W4) for X_ in (X4, X4b, X4c, X4d)],
            Judgement("numpy_judges.token_ignores_the_future", future),
        ),
        unmodified_case("attention_for_token", 0.5, [X5, int(rng.integers(2, n)), *W5]),
    ]
