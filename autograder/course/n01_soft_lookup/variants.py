"""Known-wrong answers to notebook 01 (a dictionary as a soft lookup): what each mistake returns.

VARIANTS[function] lists (misconception id, wrong implementation) pairs, written the way a
student would write them; numpy_shared/variants.py runs them on a case's inputs when the case is
built (variant_outputs). Instructor side only: never shipped to students.
"""

import numpy as np

from autograder.course.n01_soft_lookup import reference as ref
from autograder.course.numpy_shared.variants import Variant, softmax_unstable


def _similarity_variants() -> list[Variant]:
    return [
        (
            "cosine-instead-of-dot",
            lambda q, K: K @ q / (np.linalg.norm(K, axis=-1) * np.linalg.norm(q)),
        ),
        ("similarity-scaled", lambda q, K: K @ q / np.sqrt(q.shape[-1])),
        ("products-not-summed", lambda q, K: K * q),
    ]


def _percentages_variants() -> list[Variant]:
    return [
        ("normalised-without-exp", lambda s: s / s.sum()),
        ("normalised-without-exp", lambda s: np.abs(s) / np.abs(s).sum()),
        ("percent-not-fraction", lambda s: 100 * ref.percentages(s)),
        ("softmax-unstable", lambda s: softmax_unstable(s)),
        ("log-softmax", lambda s: np.log(ref.percentages(s))),
    ]


def _soft_lookup_variants() -> list[Variant]:
    def from_weights(weights_fn):
        return lambda q, K, V: (lambda w: (w, w @ V))(weights_fn(q, K))

    out = []
    for id_, f in _percentages_variants():
        if id_ != "log-softmax":  # log weights make no merged value worth comparing
            out.append((id_, from_weights(lambda q, K, f=f: f(K @ q))))
    for id_, f in _similarity_variants():
        out.append((id_, from_weights(lambda q, K, f=f: ref.percentages(f(q, K)))))
    return out


VARIANTS: dict[str, list[Variant]] = {
    "similarity": _similarity_variants(),
    "percentages": _percentages_variants(),
    "soft_lookup": _soft_lookup_variants(),
}
