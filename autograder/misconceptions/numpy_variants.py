"""Known-wrong NumPy implementations (notebooks 01-04) and the diagnosis that uses them.

VARIANTS[function] lists (misconception id, wrong implementation) pairs, written the way a
student would write them. The judges run them in the trusted parent on the very inputs the
student's function got; a student output that matches a variant (and not the reference) names
that misconception:

    ids = diagnose("attention_scores", got, args=(Q, K))
    ids = diagnose("scaled_dot_product_attention", got_A, args=(Q, K, V), kwargs={"mask": m}, output=1)

Some mistakes are better recognised by a property signature than by one variant:
`weights_signature` (rows, columns and masked entries of an attention matrix),
`scale_signature` (scores off by a constant factor) and `error_signature` (what an exception
says). `explain(ids)` turns ids into the hint text of the catalogue.
"""

import numpy as np

from autograder import reference as ref
from autograder.judging.compare import fmt, is_close
from autograder.misconceptions import CATALOGUE

MATCH = {"rtol": 1e-5, "atol": 1e-7}  # a variant "matches" a little more loosely than a pass


# ---------------------------------------------------------------- building blocks


def _softmax_unstable(x, axis=-1):
    e = np.exp(np.asarray(x, dtype=float))
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_axis(x, axis):
    return ref.softmax(x, axis=axis)


def _swap(K):
    return np.swapaxes(K, -1, -2)


def _sdpa(Q, K, V, mask=None, scale=None, softmax_axis=-1, mask_mode="before", transpose=False):
    """Scaled dot-product attention with one knob per mistake."""
    d_k = Q.shape[-1]
    scale = np.sqrt(d_k) if scale is None else scale
    S = (K @ _swap(Q) if transpose else Q @ _swap(K)) / scale
    if mask is not None and mask_mode == "inverted":
        S = np.where(mask, -np.inf, S)
    elif mask is not None and mask_mode == "before":
        S = np.where(mask, S, -np.inf)
    elif mask is not None and mask_mode == "zero":
        S = np.where(mask, S, 0.0)
    A = ref.softmax(S, axis=softmax_axis)
    if mask is not None and mask_mode == "after":
        A = A * mask
    return A @ V, A


# ---------------------------------------------------------------- notebook 01


def _similarity_variants():
    return [
        (
            "cosine-instead-of-dot",
            lambda q, K: K @ q / (np.linalg.norm(K, axis=-1) * np.linalg.norm(q)),
        ),
        ("similarity-scaled", lambda q, K: K @ q / np.sqrt(q.shape[-1])),
    ]


def _percentages_variants():
    return [
        ("normalised-without-exp", lambda s: s / s.sum()),
        ("normalised-without-exp", lambda s: np.abs(s) / np.abs(s).sum()),
        ("percent-not-fraction", lambda s: 100 * ref.percentages(s)),
        ("softmax-unstable", lambda s: _softmax_unstable(s)),
    ]


def _soft_lookup_variants():
    def from_weights(weights_fn):
        return lambda q, K, V: (lambda w: (w, w @ V))(weights_fn(q, K))

    out = []
    for id_, f in _percentages_variants():
        out.append((id_, from_weights(lambda q, K, f=f: f(K @ q))))
    for id_, f in _similarity_variants():
        out.append((id_, from_weights(lambda q, K, f=f: ref.percentages(f(q, K)))))
    return out


# ---------------------------------------------------------------- notebook 02


def _softmax_variants():
    def no_keepdims_sum(x, axis=-1):
        x = np.asarray(x, dtype=float)
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / e.sum(axis=axis)

    def no_keepdims_max(x, axis=-1):
        x = np.asarray(x, dtype=float)
        e = np.exp(x - np.max(x, axis=axis))
        return e / e.sum(axis=axis, keepdims=True)

    def whole_array(x, axis=-1):
        x = np.asarray(x, dtype=float)
        e = np.exp(x - x.max())
        return e / e.sum()

    return [
        ("softmax-unstable", _softmax_unstable),
        ("softmax-wrong-axis", lambda x, axis=-1: _softmax_axis(x, 0)),
        ("softmax-wrong-axis", lambda x, axis=-1: _softmax_axis(x, -1)),
        ("softmax-wrong-axis", whole_array),
        ("softmax-missing-keepdims", no_keepdims_sum),
        ("softmax-missing-keepdims", no_keepdims_max),
        ("normalised-without-exp", lambda x, axis=-1: x / np.sum(x, axis=axis, keepdims=True)),
    ]


def _scaled_scores_variants():
    return [
        ("missing-scale", lambda q, K: K @ q),
        ("wrong-scale", lambda q, K: K @ q / q.shape[-1]),
        ("wrong-scale", lambda q, K: K @ q / np.sqrt(K.shape[0])),
        ("wrong-scale", lambda q, K: K @ q * np.sqrt(q.shape[-1])),
    ]


def _attend_variants():
    def with_scores(scores_fn, softmax=ref.softmax):
        def attend(q, K, V):
            w = softmax(scores_fn(q, K))
            return w, w @ V

        return attend

    out = [(id_, with_scores(f)) for id_, f in _scaled_scores_variants()]

    def scaled_by_d_v(q, K, V):
        w = ref.softmax(K @ q / np.sqrt(V.shape[-1]))
        return w, w @ V

    out.append(("wrong-scale", scaled_by_d_v))
    out.append(("softmax-unstable", with_scores(ref.scaled_scores, _softmax_unstable)))
    return out


def _token_variants():
    def recipe(visible_of, scale_of=None, softmax=ref.softmax):
        def attention_for_token(X, i, W_q, W_k, W_v, causal=True):
            visible = visible_of(X, i, causal)
            q = X[i] @ W_q
            keys, values = visible @ W_k, visible @ W_v
            scale = np.sqrt(W_q.shape[-1]) if scale_of is None else scale_of(X, i, W_q, W_v)
            w = softmax(keys @ q / scale)
            return w @ values

        return attention_for_token

    correct = lambda X, i, causal: X[: i + 1] if causal else X  # noqa: E731
    return [
        ("missing-scale", recipe(correct, lambda X, i, Wq, Wv: 1.0)),
        ("wrong-scale", recipe(correct, lambda X, i, Wq, Wv: Wq.shape[-1])),
        ("wrong-scale", recipe(correct, lambda X, i, Wq, Wv: np.sqrt(X.shape[-1]))),
        ("wrong-scale", recipe(correct, lambda X, i, Wq, Wv: np.sqrt(Wv.shape[-1]))),
        ("wrong-scale", recipe(correct, lambda X, i, Wq, Wv: np.sqrt(i + 1))),
        ("mask-off-by-one", recipe(lambda X, i, c: X[:i] if c else X)),
        ("mask-off-by-one", recipe(lambda X, i, c: X[: i + 2] if c else X)),
        ("no-causal-mask", recipe(lambda X, i, c: X)),
        ("causal-flag-ignored", recipe(lambda X, i, c: X[: i + 1])),
        ("mask-inverted", recipe(lambda X, i, c: X[i:] if c else X)),
        ("mask-inverted", recipe(lambda X, i, c: X[i + 1 :] if c else X)),
        ("softmax-unstable", recipe(correct, softmax=_softmax_unstable)),
    ]


# ---------------------------------------------------------------- notebook 03


def _attention_scores_variants():
    return [
        ("missing-scale", lambda Q, K: Q @ _swap(K)),
        ("wrong-scale", lambda Q, K: Q @ _swap(K) / Q.shape[-1]),
        ("wrong-scale", lambda Q, K: Q @ _swap(K) / np.sqrt(K.shape[-2])),
        ("wrong-scale", lambda Q, K: Q @ _swap(K) / np.sqrt(Q.shape[-2])),
        ("transposed-scores", lambda Q, K: K @ _swap(Q) / np.sqrt(Q.shape[-1])),
        ("transposed-scores", lambda Q, K: K @ _swap(Q)),
    ]


def _causal_mask_variants():
    return [
        ("mask-inverted", lambda n: np.triu(np.ones((n, n), dtype=bool), k=1)),
        ("mask-inverted", lambda n: np.triu(np.ones((n, n), dtype=bool))),
        ("mask-off-by-one", lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1)),
        ("mask-off-by-one", lambda n: np.tril(np.ones((n, n), dtype=bool), k=1)),
    ]


def _sdpa_variants():
    d = lambda Q: Q.shape[-1]  # noqa: E731
    return [
        ("missing-scale", lambda Q, K, V, mask=None: _sdpa(Q, K, V, mask, scale=1.0)),
        ("wrong-scale", lambda Q, K, V, mask=None: _sdpa(Q, K, V, mask, scale=d(Q))),
        (
            "wrong-scale",
            lambda Q, K, V, mask=None: _sdpa(Q, K, V, mask, scale=np.sqrt(V.shape[-1])),
        ),
        (
            "wrong-scale",
            lambda Q, K, V, mask=None: _sdpa(Q, K, V, mask, scale=np.sqrt(K.shape[-2])),
        ),
        ("transposed-scores", lambda Q, K, V, mask=None: _sdpa(Q, K, V, mask, transpose=True)),
        ("softmax-over-queries", lambda Q, K, V, mask=None: _sdpa(Q, K, V, mask, softmax_axis=-2)),
        ("softmax-wrong-axis", lambda Q, K, V, mask=None: _sdpa(Q, K, V, mask, softmax_axis=0)),
        ("mask-inverted", lambda Q, K, V, mask=None: _sdpa(Q, K, V, mask, mask_mode="inverted")),
        ("mask-after-softmax", lambda Q, K, V, mask=None: _sdpa(Q, K, V, mask, mask_mode="after")),
        ("mask-fills-zero", lambda Q, K, V, mask=None: _sdpa(Q, K, V, mask, mask_mode="zero")),
        ("mask-ignored", lambda Q, K, V, mask=None: _sdpa(Q, K, V, None)),
    ]


def _self_attention_variants():
    out = []
    for id_, f in _sdpa_variants():
        out.append(
            (id_, lambda X, W_q, W_k, W_v, mask=None, f=f: f(X @ W_q, X @ W_k, X @ W_v, mask))
        )
    out.append(
        (
            "wrong-scale",
            lambda X, W_q, W_k, W_v, mask=None: _sdpa(
                X @ W_q, X @ W_k, X @ W_v, mask, scale=np.sqrt(X.shape[-1])
            ),
        )
    )
    return out


# ---------------------------------------------------------------- notebook 04


def _split_variants():
    def without_transpose(X, n_heads):
        *lead, n, w = X.shape
        return X.reshape(*lead, n_heads, n, w // n_heads)

    def strided(X, n_heads):
        *lead, n, w = X.shape
        return np.moveaxis(X.reshape(*lead, n, w // n_heads, n_heads), -1, -3)

    return [
        ("heads-reshape-without-transpose", without_transpose),
        ("heads-strided-columns", strided),
    ]


def _merge_variants():
    def without_transpose(X):
        *lead, H, n, d_k = X.shape
        return X.reshape(*lead, n, H * d_k)

    def strided(X):
        *lead, H, n, d_k = X.shape
        return np.moveaxis(X, -3, -1).reshape(*lead, n, H * d_k)

    return [
        ("heads-reshape-without-transpose", without_transpose),
        ("heads-strided-columns", strided),
    ]


def _mha(X, W_q, W_k, W_v, W_o, mask=None, merge=ref.merge_heads, project=True, **sdpa):
    Xh = X[..., None, :, :]
    Z, A = _sdpa(Xh @ W_q, Xh @ W_k, Xh @ W_v, mask, **sdpa)
    concat = merge(Z)
    return (concat @ W_o if project else concat), A


def _mha_variants():
    H_of = lambda W_q: W_q.shape[0]  # noqa: E731

    def averaged(X, W_q, W_k, W_v, W_o, mask=None):
        Y, A = _mha(X, W_q, W_k, W_v, W_o, mask)
        return Y / H_of(W_q), A

    def averaged_A(X, W_q, W_k, W_v, W_o, mask=None):
        Y, A = _mha(X, W_q, W_k, W_v, W_o, mask)
        return Y, A.mean(axis=-3)

    def averaged_Z(X, W_q, W_k, W_v, W_o, mask=None):
        Xh = X[..., None, :, :]
        Z, A = _sdpa(Xh @ W_q, Xh @ W_k, Xh @ W_v, mask)
        d_k = Z.shape[-1]
        return Z.mean(axis=-3) @ W_o[:d_k], A

    merge_flat, merge_strided = (f for _, f in _merge_variants())
    d = lambda X: X.shape[-1]  # noqa: E731
    return [
        ("missing-output-projection", lambda *a, mask=None: _mha(*a, mask=mask, project=False)),
        ("heads-averaged", averaged),
        ("heads-averaged", averaged_A),
        ("heads-averaged", averaged_Z),
        (
            "heads-reshape-without-transpose",
            lambda *a, mask=None: _mha(*a, mask=mask, merge=merge_flat),
        ),
        ("heads-strided-columns", lambda *a, mask=None: _mha(*a, mask=mask, merge=merge_strided)),
        ("missing-scale", lambda *a, mask=None: _mha(*a, mask=mask, scale=1.0)),
        ("wrong-scale", lambda *a, mask=None: _mha(*a, mask=mask, scale=np.sqrt(d(a[0])))),
        ("wrong-scale", lambda *a, mask=None: _mha(*a, mask=mask, scale=a[1].shape[-1])),
        (
            "wrong-scale",
            lambda *a, mask=None: _mha(*a, mask=mask, scale=np.sqrt(a[4].shape[0])),
        ),
        ("transposed-scores", lambda *a, mask=None: _mha(*a, mask=mask, transpose=True)),
        ("softmax-over-queries", lambda *a, mask=None: _mha(*a, mask=mask, softmax_axis=-2)),
        ("mask-after-softmax", lambda *a, mask=None: _mha(*a, mask=mask, mask_mode="after")),
        ("mask-inverted", lambda *a, mask=None: _mha(*a, mask=mask, mask_mode="inverted")),
        ("mask-fills-zero", lambda *a, mask=None: _mha(*a, mask=mask, mask_mode="zero")),
        ("mask-ignored", lambda *a, mask=None: _mha(*a, mask=None)),
    ]


VARIANTS = {
    "similarity": _similarity_variants(),
    "percentages": _percentages_variants(),
    "soft_lookup": _soft_lookup_variants(),
    "softmax": _softmax_variants(),
    "scaled_scores": _scaled_scores_variants(),
    "attend": _attend_variants(),
    "attention_for_token": _token_variants(),
    "attention_scores": _attention_scores_variants(),
    "causal_mask": _causal_mask_variants(),
    "scaled_dot_product_attention": _sdpa_variants(),
    "self_attention": _self_attention_variants(),
    "split_heads": _split_variants(),
    "merge_heads": _merge_variants(),
    "multi_head_attention": _mha_variants(),
}


# ---------------------------------------------------------------- diagnosis


def _run(fn, args, kwargs, output):
    """fn's output (or one item of it) on copies of the inputs, or None if it fails."""
    args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    try:
        with np.errstate(all="ignore"):
            out = fn(*args, **(kwargs or {}))
            return out if output is None else out[output]
    except Exception:  # noqa: BLE001 - a variant that does not apply to these inputs
        return None


def diagnose(function, got, args, kwargs=None, output=None):
    """Misconception ids whose variant reproduces `got` on these inputs (and the reference doesn't).

    `output` picks one item of a tuple result (0: weights/Z/Y, 1: output/A). Ids are in the
    order of VARIANTS[function], without repeats.
    """
    expected = _run(getattr(ref, function), args, kwargs, output)
    if expected is not None and is_close(got, expected, **MATCH):
        return []
    ids = []
    for id_, fn in VARIANTS.get(function, []):
        if id_ in ids:
            continue
        variant = _run(fn, args, kwargs, output)
        if variant is not None and is_close(got, variant, **MATCH):
            ids.append(id_)
    for specific, general in _SUBSUMES:
        if specific in ids and general in ids:
            ids.remove(general)
    return ids


# When both match, the first names the mistake more precisely (2-D attention: axis 0 = queries).
_SUBSUMES = [("softmax-over-queries", "softmax-wrong-axis")]


def scale_signature(got, expected, d_k):
    """(ids, sentence) when got equals expected times a constant other than 1, else ([], '').

    For scores: the ratio tells missing-scale (sqrt(d_k) too large) from wrong-scale.
    """
    try:
        got = np.asarray(got, dtype=float)
        expected = np.asarray(expected, dtype=float)
    except (TypeError, ValueError):
        return [], ""
    if got.shape != expected.shape or not np.all(np.isfinite(got)):
        return [], ""
    denom = float(np.sum(expected * expected))
    if denom == 0:
        return [], ""
    ratio = float(np.sum(got * expected)) / denom
    if abs(ratio - 1) < 1e-6 or not is_close(got, ratio * expected, **MATCH):
        return [], ""
    root = np.sqrt(d_k)
    if abs(ratio - root) < 1e-6 * root:
        return ["missing-scale"], (
            f"your scores are {fmt(ratio)}x too large for d_k = {d_k}: did you divide by sqrt(d_k)?"
        )
    if abs(ratio - 1 / root) < 1e-6:
        return ["wrong-scale"], (
            f"your scores are {fmt(1 / ratio)}x too small for d_k = {d_k}: "
            "did you divide by d_k instead of sqrt(d_k)?"
        )
    if abs(ratio - d_k) < 1e-6 * d_k:
        return ["wrong-scale"], (
            f"your scores are {fmt(ratio)}x too large for d_k = {d_k}: "
            "did you multiply by sqrt(d_k) instead of dividing?"
        )
    size = "too large" if ratio > 1 else "too small"
    return ["wrong-scale"], (
        f"your scores are {fmt(max(ratio, 1 / ratio) if ratio > 0 else ratio)}x {size} "
        f"(d_k = {d_k}): check what you divide by."
    )


def weights_signature(A, mask=None, large=False, over_queries_id="softmax-over-queries"):
    """Ids and a sentence read off an attention matrix A (..., n_q, n_k) by its properties."""
    A = np.asarray(A, dtype=float)
    if A.ndim < 1:
        return [], ""
    with np.errstate(all="ignore"):
        if not np.all(np.isfinite(A)):
            if large:
                return ["softmax-unstable"], (
                    "on scores this large exp overflows: subtract each row's maximum before exp."
                )
            return [], ""
        rows = A.sum(axis=-1)
        rows_ok = bool(np.all(np.abs(rows - 1) <= 1e-6))
        if A.ndim >= 2 and A.shape[-2] > 1 and not rows_ok:
            cols = A.sum(axis=-2)
            if np.all(np.abs(cols - 1) <= 1e-6):
                return [over_queries_id], (
                    "your columns sum to 1, not your rows: the softmax runs over the key axis (-1)."
                )
        if mask is not None:
            m = np.broadcast_to(np.asarray(mask, dtype=bool), A.shape)
            leak = np.abs(A[~m]) > 1e-9
            zero_where_masked = not leak.any()
            # softmax weights are all > 0, so masking them afterwards leaves every visible one > 0
            # (an all-zero answer is not this mistake)
            softmax_then_zeroed = bool(np.all(A[m] > 0))
            if (
                zero_where_masked
                and softmax_then_zeroed
                and not rows_ok
                and np.all(rows <= 1 + 1e-9)
            ):
                i = np.unravel_index(int(np.argmax(np.abs(rows - 1))), rows.shape)
                return ["mask-after-softmax"], (
                    f"the masked weights are 0 but row {list(map(int, i))} sums to "
                    f"{fmt(rows[i], 4)}: is the mask applied after the softmax?"
                )
            if leak.any() and rows_ok:
                visible_zero = np.all(np.abs(A[m]) <= 1e-12)
                if visible_zero:
                    return ["mask-inverted"], (
                        "your weights are non-zero exactly where the mask is False: True means "
                        "'may attend'."
                    )
                return [], (
                    f"{int(leak.sum())} weights are non-zero where the mask is False: blocked "
                    "keys must get weight exactly 0."
                )
    return [], ""


def error_signature(error, function=""):
    """Ids and a sentence for an exception the student's function raised on a case."""
    message = (error or {}).get("message", "")
    if "broadcast" in message and function == "softmax":
        return ["softmax-missing-keepdims"], (
            "the max or sum along the axis lost that axis: pass keepdims=True so it lines up."
        )
    return [], ""


def explain(ids):
    """' It looks like <mistake>: <hint>' for each id, joined; '' for none."""
    parts = []
    for id_ in list(ids)[:2]:  # two hints at most: more would bury the first
        m = CATALOGUE.get(id_)
        if m is not None:
            parts.append(f"It looks like {m.mistake}: {m.hint}")
    return (" " + " ".join(parts)) if parts else ""
