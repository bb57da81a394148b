"""Hidden tests of notebook 03 (attention in matrix form): 10 points.

    attention_scores              2.0  n_q != n_k, d_k = 8 (1.0); leading batch dimensions
                                       (0.5); inputs unmodified (0.5)
    causal_mask                   2.0  n in 4..12 (1.0); n in 1..3 and n in 13..30 (0.5); boolean
                                       dtype (0.5); sizes drawn, like every hidden input
    scaled_dot_product_attention  3.0  no mask, n_q != n_k, d_v != d_k (1.0); causal mask (0.5);
                                       a random mask broadcast over batch dimensions (0.5);
                                       large scores with batch dimensions, no mask (0.5);
                                       inputs unmodified (0.5)
    self_attention                3.0  no mask, d != d_k != d_v, and large scores (1.0); causal mask (0.5); batch
                                       dimensions (0.5); permutation equivariance (0.25);
                                       causality: later tokens don't change earlier outputs
                                       (0.25); inputs unmodified (0.5)

A correct answer with an additive -1e9 mask, or one that zeroes the masked weights and then
renormalises the rows, passes: both are equal to masking with -inf within the tolerance. (The
second is unstable when a masked score exceeds every visible one by ~745, where its visible
weights underflow to 0/0; that is why the large-score case has no mask.)
"""

import numpy as np

from autograder.course.numpy_shared.cases import (
    call,
    call_data,
    causal_mask_of,
    label,
    loud,
    random_mask,
    unmodified_case,
    value_case,
)
from autograder.course.probes import Case, probe
from autograder.judging import Judgement


@probe("attention_scores")
def attention_scores_cases(rng: np.random.Generator) -> list[Case]:
    Q, K = rng.standard_normal((4, 8)), rng.standard_normal((6, 8))
    Qb, Kb = rng.standard_normal((2, 3, 5, 4)), rng.standard_normal((2, 3, 5, 4))
    Q3, K3 = rng.standard_normal((3, 2)), rng.standard_normal((5, 2))
    return [
        value_case("attention_scores", "4 queries against 6 keys, d_k = 8", 1.0, [Q, K]),
        value_case(
            "attention_scores", "leading batch dimensions (2, 3)", 0.5, [Qb, Kb], batched=True
        ),
        unmodified_case("attention_scores", 0.5, [Q3, K3]),
    ]


def _mask(n):
    """What the causal-mask judges need to know of causal_mask(n)."""
    return call_data("causal_mask", [n]) | {"n": n}


@probe("causal_mask")
def causal_mask_cases(rng: np.random.Generator) -> list[Case]:
    n, small = int(rng.integers(4, 13)), int(rng.integers(1, 4))
    big = int(rng.integers(13, 31))
    n_bool = int(rng.integers(3, 13))
    return [
        Case(
            "causal_mask",
            "n between 4 and 12",
            1.0,
            [call(n)],
            Judgement("numpy_judges.causal_masks", {"masks": [_mask(n)]}),
        ),
        Case(
            "causal_mask",
            "n between 1 and 3 and n between 13 and 30",
            0.5,
            [call(small), call(big)],
            Judgement("numpy_judges.causal_masks", {"masks": [_mask(small), _mask(big)]}),
        ),
        Case(
            "causal_mask",
            "a boolean array",
            0.5,
            [call(n_bool)],
            Judgement("numpy_judges.boolean_mask", {"mask": _mask(n_bool)}),
        ),
    ]


@probe("scaled_dot_product_attention")
def sdpa_cases(rng: np.random.Generator) -> list[Case]:
    f = "scaled_dot_product_attention"
    r = rng.standard_normal
    Q, K, V = r((3, 4)), r((5, 4)), r((5, 2))
    Qc, Kc, Vc = r((5, 4)), r((5, 4)), r((5, 3))
    Qb, Kb, Vb = r((2, 3, 4)), r((2, 6, 4)), r((2, 6, 5))
    mask_b = random_mask(rng, (3, 6))
    Ql, Kl, Vl = r((3, 4, 3)) * 40, r((3, 4, 3)) * 40, r((3, 4, 2))
    Qu, Ku, Vu = r((4, 3)), r((4, 3)), r((4, 2))
    return [
        value_case(f, "no mask, 3 queries, 5 keys, d_v != d_k", 1.0, [Q, K, V]),
        value_case(f, "a causal mask", 0.5, [Qc, Kc, Vc], {"mask": causal_mask_of(5)}),
        value_case(
            f,
            "a random (3, 6) mask broadcast over a batch of 2",
            0.5,
            [Qb, Kb, Vb],
            {"mask": mask_b},
            batched=True,
        ),
        value_case(f, "large scores, batch of 3", 0.5, [Ql, Kl, Vl], large=True, batched=True),
        unmodified_case(f, 0.5, [Qu, Ku, Vu], {"mask": random_mask(rng, (4, 4))}),
    ]


@probe("self_attention")
def self_attention_cases(rng: np.random.Generator) -> list[Case]:
    f = "self_attention"
    n, d, d_k, d_v = 5, 6, 4, 3

    def weights():
        return [rng.standard_normal((d, d_k)), rng.standard_normal((d, d_k))] + [
            rng.standard_normal((d, d_v))
        ]

    X, W = rng.standard_normal((n, d)), weights()
    Xl, Wl = rng.standard_normal((n, d)), weights()
    Xc, Wc = rng.standard_normal((n, d)), weights()
    Xb, Wb = rng.standard_normal((2, n, d)), weights()
    Xp, Wp = rng.standard_normal((n, d)), weights()
    perm = rng.permutation(n)
    while np.all(perm == np.arange(n)):
        perm = rng.permutation(n)
    Xf, Wf = rng.standard_normal((n, d)), weights()
    t = int(rng.integers(1, n - 1))
    Xf2 = Xf.copy()
    Xf2[t + 1 :] = rng.standard_normal((n - t - 1, d)) * 3
    mask = causal_mask_of(n)
    Xu, Wu = rng.standard_normal((n, d)), weights()

    permuted = {
        "function": f,
        "call": call_data(f, [Xp, *Wp], variants=False),
        "permuted_where": label(f, [Xp[perm], *Wp]),
        "perm": perm,
    }
    prefix = {
        "function": f,
        "call": call_data(f, [Xf, *Wf], {"mask": mask}, variants=False),
        "changed_expected": call_data(f, [Xf2, *Wf], {"mask": mask}, variants=False)["expected"],
        "t": t,
        "mask": mask,
    }

    return [
        value_case(
            f,
            "no mask, d = 6, d_k = 4, d_v = 3; and large scores",
            1.0,
            calls=[([X, *W], {}), ([loud(Xl, *Wl[:2]), *Wl], {})],
            large=True,
        ),
        value_case(f, "a causal mask", 0.5, [Xc, *Wc], {"mask": mask}),
        value_case(
            f, "a batch of 2 with a causal mask", 0.5, [Xb, *Wb], {"mask": mask}, batched=True
        ),
        Case(
            f,
            "permuting the tokens permutes the outputs",
            0.25,
            [call(Xp, *Wp), call(Xp[perm], *Wp)],
            Judgement("numpy_judges.permutation_equivariant", permuted),
        ),
        Case(
            f,
            "with a causal mask, later tokens don't change earlier outputs",
            0.25,
            [call(Xf, *Wf, mask=mask), call(Xf2, *Wf, mask=mask)],
            Judgement("numpy_judges.causal_prefix", prefix),
        ),
        unmodified_case(f, 0.5, [Xu, *Wu], {"mask": random_mask(rng, (n, n))}),
    ]
