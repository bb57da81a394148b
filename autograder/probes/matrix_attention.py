"""Hidden tests of notebook 03 (attention in matrix form): 10 points.

    attention_scores              2.0  n_q != n_k, d_k = 8 (1.0); leading batch dimensions
                                       (0.5); inputs unmodified (0.5)
    causal_mask                   2.0  n = 5 (1.0); n = 1 and n = 8 (0.5); boolean dtype (0.5)
    scaled_dot_product_attention  3.0  no mask, n_q != n_k, d_v != d_k (1.0); causal mask (0.5);
                                       a random mask broadcast over batch dimensions (0.5);
                                       large scores with batch dimensions, no mask (0.5);
                                       inputs unmodified (0.5)
    self_attention                3.0  no mask, d != d_k != d_v (1.0); causal mask (0.5); batch
                                       dimensions (0.5); permutation equivariance (0.25);
                                       causality: later tokens don't change earlier outputs
                                       (0.25); inputs unmodified (0.5)

A correct answer with an additive -1e9 mask, or one that zeroes the masked weights and then
renormalises the rows, passes: both are equal to masking with -inf within the tolerance. (The
second is unstable when a masked score exceeds every visible one by ~745, where its visible
weights underflow to 0/0; that is why the large-score case has no mask.)
"""

import numpy as np

from autograder.judging import compare
from autograder.misconceptions import numpy_variants as nv
from autograder.probes.base import Case, Fail, probe
from autograder.probes.numpy_common import (
    call,
    causal_mask_of,
    got_of,
    random_mask,
    same_outputs,
    unmodified_case,
    value_case,
    well_formed,
)


@probe("attention_scores")
def attention_scores_cases(rng):
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


def _mask_values(response, n):
    """The student's causal_mask(n) as booleans (0/1 numbers accepted here; dtype is its own case)."""
    got = got_of(response, "causal_mask", [n])
    expected = causal_mask_of(n)
    compare.assert_shape(got, expected.shape, f"causal_mask({n})")
    if got.dtype != bool:
        with np.errstate(all="ignore"):
            if got.dtype.kind not in "biuf" or not np.all((got == 0) | (got == 1)):
                raise Fail(
                    f"causal_mask({n}) holds values other than True/False (or 0/1): a mask says "
                    "only 'may attend' (True) or 'may not' (False)."
                )
        got = got != 0
    try:
        compare.assert_close(got, expected, f"causal_mask({n})")
    except Fail as failure:
        ids = nv.diagnose("causal_mask", got, [n])
        hint = ""
        if not got[np.arange(n), np.arange(n)].all() and got[np.tril_indices(n, -1)].all():
            hint = " The diagonal is False: may a token attend to itself?"
        elif got[np.triu_indices(n, 1)].any() and not got[np.tril_indices(n, -1)].any():
            hint = " True above the diagonal lets a query see later keys (the future)."
        raise Fail(failure.message + hint + nv.explain(ids), ids) from None
    return got


@probe("causal_mask")
def causal_mask_cases(rng):
    n_big = int(rng.integers(7, 10))

    def judge_five(responses):
        _mask_values(responses[0], 5)

    def judge_sizes(responses):
        _mask_values(responses[0], 1)
        _mask_values(responses[1], n_big)

    def judge_dtype(responses):
        got = got_of(responses[0], "causal_mask", [4])
        if got.dtype != bool:
            raise Fail(
                f"causal_mask(4) has dtype {got.dtype}; a mask is boolean (dtype=bool), so that "
                "np.where(mask, ...) and ~mask mean what they say."
                + nv.explain(["mask-not-boolean"]),
                ["mask-not-boolean"],
            )
        _mask_values(responses[0], 4)

    return [
        Case("causal_mask", "n = 5", 1.0, [call(5)], judge_five),
        Case("causal_mask", f"n = 1 and n = {n_big}", 0.5, [call(1), call(n_big)], judge_sizes),
        Case("causal_mask", "a boolean array", 0.5, [call(4)], judge_dtype),
    ]


@probe("scaled_dot_product_attention")
def sdpa_cases(rng):
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
def self_attention_cases(rng):
    f = "self_attention"
    n, d, d_k, d_v = 5, 6, 4, 3

    def weights():
        return [rng.standard_normal((d, d_k)), rng.standard_normal((d, d_k))] + [
            rng.standard_normal((d, d_v))
        ]

    X, W = rng.standard_normal((n, d)), weights()
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

    def judge_perm(responses):
        Z, A = got_of(responses[0], f, [Xp, *Wp])
        Zp, Ap = got_of(responses[1], f, [Xp[perm], *Wp])
        for k, out in enumerate((Z, A)):
            well_formed(out, f, [Xp, *Wp], output=k)
        same_outputs(Zp, Z[perm], "permuting the tokens should permute the rows of Z the same way")
        same_outputs(
            Ap,
            A[perm][:, perm],
            "permuting the tokens should permute the rows and columns of A the same way",
        )

    def judge_future(responses):
        Z, A = got_of(responses[0], f, [Xf, *Wf], {"mask": mask})
        Z2, A2 = got_of(responses[1], f, [Xf2, *Wf], {"mask": mask})
        for k, out in enumerate((Z, A, Z2, A2)):
            well_formed(out, f, [Xf, *Wf], {"mask": mask}, output=k % 2)
        try:
            same_outputs(
                Z2[: t + 1],
                Z[: t + 1],
                f"with a causal mask, changing tokens {t + 1}.. changed the outputs of tokens 0..{t}",
            )
        except Fail as failure:
            ids, sentence = nv.weights_signature(A, mask=mask)
            raise Fail(f"{failure.message} {sentence}".rstrip() + nv.explain(ids), ids) from None

    return [
        value_case(f, "no mask, d = 6, d_k = 4, d_v = 3", 1.0, [X, *W]),
        value_case(f, "a causal mask", 0.5, [Xc, *Wc], {"mask": mask}),
        value_case(
            f, "a batch of 2 with a causal mask", 0.5, [Xb, *Wb], {"mask": mask}, batched=True
        ),
        Case(
            f,
            "permuting the tokens permutes the outputs",
            0.25,
            [call(Xp, *Wp), call(Xp[perm], *Wp)],
            judge_perm,
        ),
        Case(
            f,
            "with a causal mask, later tokens don't change earlier outputs",
            0.25,
            [call(Xf, *Wf, mask=mask), call(Xf2, *Wf, mask=mask)],
            judge_future,
        ),
        unmodified_case(f, 0.5, [Xu, *Wu], {"mask": random_mask(rng, (n, n))}),
    ]
