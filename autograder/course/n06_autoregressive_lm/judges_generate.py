"""The judges of notebook 06's generate (registered as "lm_judges.<name>", like judges.py's):
tokens of the right shape and range, greedy decoding, top_k, the sampled distribution against
the toy model's (a chi-square test), top_p's parts, the mode, reproducibility. Plain data only.
"""

import numpy as np

from autograder.course.torch_shared.checks import explain
from autograder.course.torch_shared.checks_sampling import sample_fit
from autograder.judging import compare, judge
from autograder.judging.base import Fail
from autograder.judging.compare import fmt


def _generated(r, what, shape, V, prefix=None):
    if r.error:
        err = r.error
        if (
            err["type"] == "ValueError"
            and "block_size" in err["message"]
            and "context of" in err["message"]
        ):
            raise Fail(
                f"{what}: the model was given {err['message'].split(' >')[0].replace('context of ', '')} "
                "of context, more than its block_size. " + explain(["generate-no-crop"]),
                ["generate-no-crop"],
            )
        raise Fail(compare.error_message(r, what))
    got = compare.returned(r, what, framework="torch")
    compare.assert_shape(got, shape, what)
    if got.dtype.kind not in "iu":
        raise Fail(f"{what} holds {got.dtype} values; token ids are integers (torch.long).")
    if got.min() < 0 or got.max() >= V:
        raise Fail(f"{what} holds ids outside 0..{V - 1}.")
    if prefix is not None:
        prefix = np.asarray(prefix)
        if not np.array_equal(got[:, : prefix.shape[1]], prefix):
            raise Fail(
                f"{what}: the first {prefix.shape[1]} columns should be the prompt idx, unchanged."
            )
    return got.astype(np.int64)


@judge
def generated_tokens(responses, *, what, shape, vocab_size, prompt, check_unchanged=False):
    """Shape, valid ids, the prompt kept (and, with check_unchanged, the prompt tensor intact)."""
    _generated(responses[0], what, tuple(shape), vocab_size, prompt)
    if check_unchanged:
        after = responses[0].decode(responses[0].raw["args_after"][1])
        compare.assert_unchanged(np.asarray(prompt), np.asarray(after), "idx")


@judge
def generate_greedy(
    responses, *, what, shape, vocab_size, prompt, want, most_likely, oldest=None, first=None
):
    """top_k=1: `want` is the greedy chain under the toy model, most_likely[t] its argmax
    after token t; `oldest` the chain of a context cut to its first block_size tokens; `first`
    the chain of a generate that predicts from the context's first position."""
    got = _generated(responses[0], what, tuple(shape), vocab_size, prompt)
    want = np.asarray(want)
    is_oldest = oldest is not None and np.array_equal(got, oldest)
    is_first = first is not None and np.array_equal(got, first)
    if is_first and not is_oldest and not np.array_equal(got, want):
        raise Fail(
            f"{what}: each new token is the model's most likely token after the FIRST token "
            "of the context, not after the last. " + explain(["generate-first-position"]),
            ["generate-first-position"],
        )
    if is_oldest and not is_first and not np.array_equal(got, want):
        raise Fail(
            f"{what}: after the first few tokens every row repeats one token, the model's "
            "prediction after the token at position block_size - 1: the context keeps the "
            "first tokens. " + explain(["generate-crop-oldest"]),
            ["generate-crop-oldest"],
        )
    if not np.array_equal(got, want):
        b, t = np.argwhere(got != want)[0]
        prev = int(got[b, t - 1])
        raise Fail(
            f"{what}: token {t} of row {b} is {int(got[b, t])}, but the model's most likely "
            f"token after {prev} is {int(most_likely[prev])}. With top_k=1 generation "
            "is greedy; the model's prediction for the next token sits in logits[:, -1, :] "
            "of the cropped context idx[:, -block_size:]."
        )


@judge
def generate_top_k(responses, *, what, shape, vocab_size, prompt, top):
    """top[t] lists the k most likely tokens after t (the last the most likely)."""
    got = _generated(responses[0], what, tuple(shape), vocab_size, prompt)
    top = np.asarray(top)
    prev, nxt = got[:, :-1].ravel(), got[:, 1:].ravel()
    outside = np.array([n not in top[p] for p, n in zip(prev, nxt, strict=True)])
    if outside.any():
        raise Fail(
            f"{what}: {int(outside.sum())} of {outside.size} sampled tokens are not among the "
            "2 most likely ones: set every logit below the k-th largest to -inf before the "
            "softmax."
        )
    if len(set(nxt.tolist())) < 2 or all(
        np.all(nxt[prev == p] == top[p, -1]) for p in set(prev.tolist())
    ):
        raise Fail(
            f"{what}: every token is the most likely one; top_k=2 should sample between the top 2."
        )


@judge
def generate_distribution(
    responses,
    *,
    what,
    samples,
    vocab_size,
    p,
    p_multiplied,
    temperature,
    top_k,
    p_plain=None,
    top_p=None,
    named=(),
):
    """One token sampled `samples` times; Pearson's test against p, the distribution the toy
    model's row gives (and p_multiplied, what the temperature-multiplied mistake gives; p_plain
    what ignoring the temperature, or with top_p ignoring top_p, gives; `named`: [id, the
    distribution of that mistake], e.g. top_p's)."""
    B, V = samples, vocab_size
    got = _generated(responses[0], what, (B, 2), V)
    p, p_mul = np.asarray(p), np.asarray(p_multiplied)
    counts = np.bincount(got[:, 1], minlength=V)
    stat, fits_p = sample_fit(counts, p)
    if fits_p:
        return
    freq = counts / B
    top = int(np.argmax(p))
    seen = f"token {top}, the most likely, came {fmt(100 * freq[top])}% of the time; expected about {fmt(100 * p[top])}%"

    def fits(q, loosely=True):
        stat_q, fits_q = sample_fit(counts, q)
        return fits_q or (loosely and stat_q < stat / 10)

    # a known mistake first (one match or none): its own words, before any generic reading
    ids = {id_ for id_, q in named if fits(q, loosely=False)}
    if len(ids) == 1:
        (id_,) = ids
        if id_ == "top-p-ties-unstable":
            raise Fail(
                f"{what}: of several tokens with the same probability at the edge of the set, "
                "one of HIGHER id than the first was kept. " + explain([id_]),
                [id_],
            )
        raise Fail(f"{what}: {seen}. " + explain([id_]), [id_])
    if freq.max() == 1.0 and p.max() < 1.0:
        said = f"{what}: all {B} samples are token {int(np.argmax(freq))}"
        if int(np.argmax(freq)) == top and not _one_token_mistake(named):
            raise Fail(f"{said}. " + explain(["generate-argmax"]), ["generate-argmax"])
        raise Fail(f"{said}, where the distribution keeps several tokens.")
    if top_p is not None:
        outside = int(counts[p == 0].sum())
        if p_plain is not None and fits(p_plain, loosely=False) and top_p < 1.0:
            raise Fail(
                f"{what}: the samples follow the whole distribution, {outside} of them outside "
                "the top_p set. " + explain(["top-p-ignored"]),
                ["top-p-ignored"],
            )
    even = np.full(V, 1.0 / V)
    if sample_fit(counts, even)[1] and not sample_fit(counts, p_mul)[1]:
        raise Fail(
            f"{what}: {seen}. The samples spread evenly over all {V} tokens, as if every "
            f"token were equally likely, as a softmax over the batch's {B} identical rows "
            "makes them. " + explain(["generate-softmax-wrong-axis"]),
            ["generate-softmax-wrong-axis"],
        )
    if temperature != 1.0:
        if fits(p_mul):
            raise Fail(
                f"{what}: {seen}. " + explain(["temperature-multiplied"]),
                ["temperature-multiplied"],
            )
        if p_plain is not None and top_p is None:
            if sample_fit(counts, p_plain)[1]:
                raise Fail(
                    f"{what}: {seen}. The samples follow softmax(logits), as if the "
                    "temperature were 1: divide the logits by temperature before the softmax."
                )
    raise Fail(
        f"{what}: the {B} samples do not follow softmax(logits / temperature)"
        + (" restricted to the top k" if top_k else "")
        + (" restricted to the top_p set" if top_p is not None and top_p < 1.0 else "")
        + f", by far more than chance explains: {seen}."
    )


def _one_token_mistake(named):
    """True if a known mistake of the case samples one token only (then a single token is no
    sign of an argmax)."""
    return any(np.asarray(q).max() > 0.999 for _, q in named)


@judge
def generate_distribution_parts(responses, *, what, samples, vocab_size, parts):
    """One token sampled `samples` times in each call (one per part), each part with its own
    right distribution p and known mistakes `named` [id, distribution] (a mistake absent from a
    part samples as p there). A mistake is named only if it explains every part and no other
    does."""
    everyone = {id_ for part in parts for id_, _ in part["named"]}
    consistent, failing = set(everyone), []
    for r, part in zip(responses, parts, strict=True):
        got = _generated(r, what, (samples, 2), vocab_size)
        counts = np.bincount(got[:, 1], minlength=vocab_size)
        fits_p = sample_fit(counts, np.asarray(part["p"]))[1]
        shown = {id_ for id_, _ in part["named"]}
        fitting = {id_ for id_, q in part["named"] if sample_fit(counts, np.asarray(q))[1]}
        consistent &= fitting | ((everyone - shown) if fits_p else set())
        if not fits_p:
            failing.append((part, counts))
    if not failing:
        return
    one_each = all(counts.max() == counts.sum() for _, counts in failing)
    if one_each and not any(_one_token_mistake(part["named"]) for part in parts):
        raise Fail(
            f"{what}: every call gave one token only, where the distribution keeps several. "
            + explain(["generate-argmax"]),
            ["generate-argmax"],
        )
    part, counts = failing[0]
    p, n = np.asarray(part["p"]), counts.sum()
    top = int(np.argmax(p))
    seen = (
        f"after token {part['start']}, token {top}, the most likely, came "
        f"{fmt(100 * counts[top] / max(n, 1))}% of the time; expected about {fmt(100 * p[top])}%"
    )
    if len(consistent) == 1:
        raise Fail(f"{what}: {seen}. " + explain(sorted(consistent)), sorted(consistent))
    raise Fail(
        f"{what}: the samples do not follow softmax(logits) cut to the top k, then to the top_p "
        f"set of what is left, by far more than chance explains: {seen}."
    )


@judge
def generate_mode(responses, *, what, shape, vocab_size, modes=(False,)):
    """generate on a model in each mode of `modes` (False: eval, True: train): the tokens are
    valid and the model is in the same mode afterwards."""
    for r, training in zip(responses, modes, strict=False):
        mode = "train" if training else "eval"
        _generated(r, what.format(mode), tuple(shape), vocab_size)
        after = r.raw.get("training_after") or []
        if after and after[0] is not training:
            id_ = "generate-leaves-eval-mode" if training else "generate-leaves-train-mode"
            other = "eval" if training else "train"
            raise Fail(
                f"{what.format(mode)}: the model came in {mode} mode and was left in {other} "
                "mode. " + explain([id_]),
                [id_],
            )


def _tokens(r, what, shape, vocab_size):
    if r.error:
        raise Fail(compare.error_message(r, what))
    got = compare.returned(r, what, framework="torch")
    compare.assert_shape(got, shape, what)
    if got.dtype.kind not in "iu":
        raise Fail(f"{what} holds {got.dtype} values; token ids are integers (torch.long).")
    if got.min() < 0 or got.max() >= vocab_size:
        raise Fail(f"{what} holds ids outside 0..{vocab_size - 1}.")
    return got.astype(np.int64)


@judge
def generate_reproducible(responses, *, what, shape, vocab_size, greedy=None):
    """Three calls: two with generators seeded alike, one seeded differently. `greedy`: the
    tokens an argmax gives, which no generator changes either (said as such, not as a
    generator left unused)."""
    first, again, other = (_tokens(r, what, tuple(shape), vocab_size) for r in responses)
    if greedy is not None and all(np.array_equal(t, greedy) for t in (first, again, other)):
        raise Fail(
            f"{what}: every call gave the most likely token at each step, whatever the seed. "
            + explain(["generate-argmax"]),
            ["generate-argmax"],
        )
    if not np.array_equal(first, again):
        differ = int((first != again).sum())
        raise Fail(
            f"{what}: two calls with generators seeded alike gave different tokens ({differ} "
            f"of {first.size} differ). " + explain(["generator-not-used"]),
            ["generator-not-used"],
        )
    if np.array_equal(first, other):
        raise Fail(
            f"{what}: generators seeded differently gave exactly the same {first.size} tokens "
            "(is a seed set inside generate?). " + explain(["generator-not-used"]),
            ["generator-not-used"],
        )
