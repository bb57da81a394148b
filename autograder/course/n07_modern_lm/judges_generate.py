"""The judges of notebook 07's generate_cached (registered as "modern_lm.<name>", like
judges.py's): tokens of the right shape and range, greedy decoding against the toy model, tokens
fed out of order, and the sampled distribution. Plain data only.
"""

import re

import numpy as np

from autograder.course.torch_shared.checks import explain
from autograder.course.torch_shared.checks_sampling import sample_fit
from autograder.judging import compare, judge
from autograder.judging.base import Fail
from autograder.judging.compare import fmt

# ================================================================ generate_cached


def _fed(r):
    """How many positions the toy model was asked to hold when it refused, or None."""
    err = r.error or {}
    message = err.get("message", "") if err.get("type") == "ValueError" else ""
    fed = re.search(r"not (\d+)$", message) if message.startswith("the toy model holds") else None
    return int(fed.group(1)) if fed else None


def _fed_again(what, total, fed, fills_block=None):
    """Fail naming cache-fed-whole-sequence: the model was fed far more positions than the
    `total` the request holds, so tokens already in the cache went through it again."""
    fits = (
        f"{total} positions fill block_size = {fills_block} exactly, but"
        if fills_block is not None
        else f"the request holds {total} positions, but"
    )
    raise Fail(
        f"{what}: {fits} the model was fed {fed} positions in all, through its cache: the "
        "tokens already in the cache were fed again. " + explain(["cache-fed-whole-sequence"]),
        ["cache-fed-whole-sequence"],
    )


def _generated(r, what, shape, V, prompt):
    if _out_of_order(r):
        _say_out_of_order(r, what)
    fed = _fed(r)
    if fed is not None and fed > shape[1] + 1:
        _fed_again(what, shape[1], fed)
    got = compare.returned(r, what, framework="torch")
    compare.assert_shape(got, shape, what)
    if got.dtype.kind not in "iu":
        raise Fail(f"{what} holds {got.dtype} values; token ids are integers (torch.long).")
    if got.min() < 0 or got.max() >= V:
        raise Fail(f"{what} holds ids outside 0..{V - 1}.")
    prompt = np.asarray(prompt)  # (B, T0), or one row every row of idx repeats
    if not np.all(got[:, : prompt.shape[1]] == prompt):
        raise Fail(
            f"{what}: the first {prompt.shape[1]} columns should be the prompt idx, unchanged."
        )
    return got.astype(np.int64)


@judge
def cached_tokens(
    responses, *, what, shape, vocab_size, prompt, fills_block=None, also=(), also_shape=None
):
    """Shape (B, T0 + max_new_tokens), valid ids, the prompt kept and idx itself unchanged.
    With `fills_block` (block_size), T0 + max_new_tokens == block_size: a request that fits
    exactly must not be refused, nor feed the model a position past block_size. `also`
    describes further calls on the same prompt, each to give `also_shape`."""
    r = responses[0]
    if fills_block is not None and r.error and r.error.get("type") == "ValueError":
        message = r.error.get("message", "")
        fed = _fed(r)
        if fed is not None and fed > fills_block + 1:  # the model's own refusal, far past
            _fed_again(what, shape[1], fed, fills_block)
        id_ = "cache-feeds-last-token" if fed else "generate-full-block-refused"
        raise Fail(
            f"{what}: {shape[1]} positions fill block_size = {fills_block} exactly, which "
            f"fits, but it raised ValueError: {compare.plain_error_text(message)}. "
            + explain([id_]),
            [id_],
        )
    _generated(r, what, tuple(shape), vocab_size, prompt)
    after = r.decode(r.raw["args_after"][1])
    compare.assert_unchanged(np.asarray(prompt), np.asarray(after), "idx")
    for more, response in zip(also, responses[1:], strict=True):
        _no_token_for_zero(response, more, tuple(also_shape))
        _generated(response, more, tuple(also_shape), vocab_size, prompt)


def _no_token_for_zero(r, what, shape):
    """A request for 0 new tokens that came back one token longer: a token sampled before
    the loop (zero-new-tokens-sampled)."""
    if r.error or r.missing or r.lost:
        return
    value = r.decode(r.raw.get("value"))
    got: tuple[int, ...] = value.shape if isinstance(value, np.ndarray) else ()
    if len(got) == 2 and got[0] == shape[0] and got[1] == shape[1] + 1:
        raise Fail(
            f"{what} returned shape {tuple(got)}, one token more than idx {shape}. "
            + explain(["zero-new-tokens-sampled"]),
            ["zero-new-tokens-sampled"],
        )


@judge
def cached_greedy(responses, *, what, shape, vocab_size, prompt, want, variants):
    """top_k=1 under the toy model whose logits depend on the position: `want` the right
    chain, variants the chains of tokens fed at the wrong positions."""
    got = _generated(responses[0], what, tuple(shape), vocab_size, prompt)
    if np.array_equal(got, want):
        return
    ids = [i for i, chain in variants if np.array_equal(got, chain)][:1]
    b, t = np.argwhere(got != np.asarray(want))[0]
    raise Fail(
        f"{what}: token {t} of row {b} is not the model's most likely next token at that "
        "position (with top_k=1 generation is greedy). "
        + (
            explain(ids)
            if ids
            else "Feed the prompt once, then each new token with the cache "
            "the previous call returned, and sample from the last position's logits."
        ),
        ids,
    )


def _out_of_order(r):
    """True if an answer raised the TypeError of a sampling argument in another's place
    (a generator compared with a number, a float given as top_k, ...)."""
    err = (r.error or {}) if not (r.missing or r.lost) else {}
    message = err.get("message", "")
    return err.get("type") == "TypeError" and any(
        clue in message for clue in ("Generator", "generator", "float", "NoneType", "'<'", "'>'")
    )


def _say_out_of_order(r, what):
    raise Fail(
        f"{what} raised TypeError ({compare.plain_error_text(r.error['message'])}): "
        "temperature, top_k, top_p and generator reach the sampler in another order than it "
        "takes them. Pass them by name (top_k=top_k, top_p=top_p, generator=generator)."
    )


@judge
def cached_distribution(
    responses, *, what, samples, vocab_size, prompt, p, variants, argmax_named=False
):
    """One token sampled `samples` times; Pearson's test against p; variants (id, p) name
    the sampling mistake whose distribution fits instead (one match or none). A second
    request, where there is one, gives top_p alone: a TypeError there says the arguments
    reached the sampler in another order, which no sampling mistake explains. With
    `argmax_named`, every sample the most likely token names generate-argmax."""
    r = responses[0]
    if len(responses) > 1 and _out_of_order(responses[1]):
        _say_out_of_order(responses[1], what)
    got = _generated(r, what, (samples, len(prompt[0]) + 1), vocab_size, prompt)
    counts = np.bincount(got[:, -1], minlength=vocab_size)
    if sample_fit(counts, p)[1]:
        return
    top = int(np.argmax(p))
    seen = (
        f"token {top}, the most likely, came {fmt(100 * counts[top] / samples)}% of the time; "
        f"expected about {fmt(100 * p[top])}%"
    )
    ids = {id_ for id_, q in variants if sample_fit(counts, q)[1]}
    if len(ids) == 1:
        raise Fail(f"{what}: {seen}. " + explain(sorted(ids)), sorted(ids))
    # the most likely token every time, where every position's distribution keeps several
    # (no top_p: a wrong position's top_p set can be one token)
    if argmax_named and counts[top] == samples:
        raise Fail(
            f"{what}: all {samples} samples are token {top}, the most likely one. "
            + explain(["generate-argmax"]),
            ["generate-argmax"],
        )
    if counts.max() == samples:
        raise Fail(
            f"{what}: all {samples} samples are one token: sample (torch.multinomial), do not take the argmax."
        )
    raise Fail(
        f"{what}: the {samples} samples do not follow the distribution notebook 06's sampling "
        f"gives (temperature, then top-k, then top-p), by far more than chance explains: {seen}."
    )
