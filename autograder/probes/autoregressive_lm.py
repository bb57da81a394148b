"""Hidden tests of notebook 06 (an auto-regressive language model, PyTorch).

Data preparation (make_examples, CharTokenizer, get_batch) is judged by properties that any
correct implementation has (real windows of the data, y shifted within the same window), not by
the reference's random draws. GPT is judged on its contract (shapes, ValueError, block_size),
causality under a perturbation of future tokens, gradients, and a short training run in the
harness. generate runs against a fixed bigram model (harness/toy.py) so that its sampling
distribution is known exactly and can be tested statistically.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from autograder.judging import compare
from autograder.judging.compare import describe_encoded, fmt
from autograder.misconceptions import torch_variants as tv
from autograder.probes.base import Case, Fail
from autograder.probes.torch_tools import (
    assert_differentiable,
    close_or_diagnose,
    np_,
    tensor,
    torch_probe,
)

# ---------------------------------------------------------------- make_examples


def _make_examples_variants(tokens, c):
    n = len(tokens)
    right = [(list(tokens[max(0, t - c) : t]), tokens[t]) for t in range(1, n)]
    return right, [
        (
            "targets-not-shifted",
            [(list(tokens[max(0, t - c + 1) : t + 1]), tokens[t]) for t in range(1, n)],
            "each label sits inside its own context: the label is the token AFTER the context",
        ),
        (
            "targets-not-shifted",
            [(list(tokens[max(0, t - c) : t]), tokens[t - 1]) for t in range(1, n)],
            "each label is the last token of its context: the label is the token AFTER it",
        ),
        (
            None,
            [(list(tokens[:t][:c]), tokens[t]) for t in range(1, n)],
            "each context keeps the FIRST context_size tokens of the prefix; keep the latest ones",
        ),
        (
            None,
            [(list(tokens[max(0, t - c) : t]), tokens[t]) for t in range(0, n)],
            "there is an extra example with an empty context; start with the first token as "
            "the context of the second",
        ),
        (
            None,
            [(list(tokens[max(0, t - c) : t]), tokens[t]) for t in range(1, n - 1)],
            "the last example (whose label is the last token) is missing",
        ),
        (
            None,
            [(list(tokens[max(0, t - c - 1) : t]), tokens[t]) for t in range(1, n)],
            "the contexts hold context_size + 1 tokens",
        ),
        (
            None,
            [(list(tokens[max(0, t - c + 1) : t]), tokens[t]) for t in range(1, n)],
            "the contexts hold only context_size - 1 tokens",
        ),
    ]


def _plain(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    return v


def _as_examples(value, what):
    if not isinstance(value, list | tuple):
        raise Fail(
            f"{what} should return a list of (context, label) pairs; it returned {value!r:.80}."
        )
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise Fail(f"item {i} of {what} is {item!r:.60}, not a pair (context, label).")
        feature, label = item
        if isinstance(feature, np.ndarray):
            feature = feature.tolist()
        if not isinstance(feature, list | tuple):
            raise Fail(
                f"the context of item {i} of {what} is {feature!r:.60}, not a list of tokens."
            )
        out.append(([_plain(t) for t in feature], _plain(label)))
    return out


def _make_examples_case(name, points, tokens, c):
    right, variants = _make_examples_variants(tokens, c)
    what = f"make_examples(tokens, context_size={c}) with {len(tokens)} tokens"

    def judge(rs):
        (r,) = rs
        got = _as_examples(r.value(what), what)
        after = r.decode(r.raw.get("args_after", [None])[0])
        if after != list(tokens):
            raise Fail(f"{what} changed the token list it was given: build new lists instead.")
        if got == right:
            return
        for id_, variant, why in variants:
            if got == variant:
                raise Fail(f"{what}: {why}.", [id_] if id_ else [])
        if len(got) != len(right):
            raise Fail(
                f"{what} returned {len(got)} examples; expected {len(right)}, one for every "
                "token after the first."
            )
        i = next(i for i, (g, e) in enumerate(zip(got, right, strict=True)) if g != e)
        g, e = got[i], right[i]
        part = "context" if g[0] != e[0] else "label"
        raise Fail(
            f"{what}: example {i} (label position {i + 1}) has the wrong {part}: got {g!r:.80}, "
            f"expected {e!r:.80}. The context is the latest (at most {c}) tokens before the "
            "label."
        )

    return Case("make_examples", name, points, [{"op": "call", "args": [list(tokens), c]}], judge)


@torch_probe("make_examples")
def make_examples_cases(rng):
    words = "the cat sat on the mat and the dog ate the hat".split()
    start = int(rng.integers(0, 3))
    sentence = words[start : start + int(rng.integers(7, 10))]
    ints = [int(t) for t in rng.integers(0, 20, size=int(rng.integers(10, 15)))]
    c = int(rng.integers(3, 5))
    return [
        _make_examples_case("words, context_size=3", 1.0, sentence, 3),
        _make_examples_case(f"token ids, context_size={c}", 1.0, ints, c),
        _make_examples_case("context_size longer than the list", 0.5, ints[:5], 8),
        _make_examples_case("context_size=1: bigram pairs", 0.5, ints[:6], 1),
    ]


# ---------------------------------------------------------------- CharTokenizer


def _step(r, i, what):
    if r.error:
        raise Fail(compare.error_message(r, "CharTokenizer(text)"))
    step = r.raw["steps"][i]
    _not_implemented(step, what)
    if step.get("missing"):
        raise Fail(f"{step['missing']} does not exist: SPEC's CharTokenizer has encode and decode.")
    if step.get("error"):
        err = step["error"]
        raise Fail(f"{what} raised {err['type']}: {err['message']}")
    return r.decode(step["value"])


def _not_implemented(step, what):
    if (step.get("error") or {}).get("type") == "NotImplementedError":
        raise Fail(f"CharTokenizer is not implemented yet ({what} raises NotImplementedError).")


def _ids(value, what):
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, list | tuple) or not all(
        isinstance(_plain(v), int) and not isinstance(_plain(v), bool) for v in value
    ):
        raise Fail(f"{what} should return a list of ints; it returned {value!r:.80}.")
    return [int(_plain(v)) for v in value]


def _random_text(rng, alphabet, n):
    chars = list(alphabet)
    return "".join(rng.choice(chars, size=n))


@torch_probe("CharTokenizer")
def tokenizer_cases(rng):
    alpha1 = "".join(sorted(set(rng.choice(list("abcdefghijklmnop"), size=9)))) + " .\n"
    alpha2 = "".join(rng.choice(list("QRSTUVWXYZ!?"), size=5, replace=False)) + "xyz"
    text1, text2 = _random_text(rng, alpha1, 80), _random_text(rng, alpha2, 40)
    chars1, chars2 = sorted(set(text1)), sorted(set(text2))
    sample = _random_text(rng, "".join(chars1), 12)
    unknown = next(ch for ch in "#@%&Z" if ch not in text1)
    cases = []

    def obj(text, steps):
        return {"op": "object", "init_args": [text], "steps": steps}

    def judge_vocab(rs):
        for r, chars in zip(rs, (chars1, chars2), strict=True):
            v = _plain(_step(r, 0, "vocab_size"))
            if v != len(chars):
                raise Fail(
                    f"vocab_size is {v!r:.40} for a text with {len(chars)} distinct characters."
                )

    cases.append(
        Case(
            "CharTokenizer",
            "vocab_size counts the distinct characters",
            0.5,
            [obj(text1, [{"attr": "vocab_size"}]), obj(text2, [{"attr": "vocab_size"}])],
            judge_vocab,
        )
    )

    def judge_ids(rs):
        for r, chars, label in zip(rs, (chars1, chars2), ("a text", "a second text"), strict=True):
            what = f"encode(sorted distinct characters) for {label}"
            got = _ids(_step(r, 0, what), what)
            if got != list(range(len(chars))):
                if sorted(got) == list(range(len(chars))):
                    raise Fail(
                        f"{what} gave {got}: the ids are a permutation of 0..{len(chars) - 1} but "
                        "not in sorted order. SPEC's ids are the positions in sorted(set(text))."
                    )
                raise Fail(
                    f"{what} gave {got!r:.80}; expected 0, 1, ..., {len(chars) - 1}. SPEC's ids "
                    "are the positions in sorted(set(text)) (is state shared between tokenizers?)."
                )
        got = _ids(_step(rs[0], 1, "encode(s)"), "encode(s)")
        want = [chars1.index(ch) for ch in sample]
        if got != want:
            raise Fail(f"encode({sample!r}) gave {got!r:.80}: expected one id per character.")

    cases.append(
        Case(
            "CharTokenizer",
            "ids are the positions of the sorted distinct characters",
            1.0,
            [
                obj(
                    text1,
                    [
                        {"method": "encode", "args": ["".join(chars1)]},
                        {"method": "encode", "args": [sample]},
                    ],
                ),
                obj(text2, [{"method": "encode", "args": ["".join(chars2)]}]),
            ],
            judge_ids,
        )
    )

    ids = [chars1.index(ch) for ch in sample]

    def judge_decode(rs):
        got = _step(rs[0], 0, "decode(ids)")
        if not isinstance(got, str):
            raise Fail(
                f"decode(ids) returned {describe_encoded(rs[0].raw['steps'][0]['value'])}, not a str: join the characters with ''.join(...)."
            )
        if got != sample:
            raise Fail(f"decode(encode(s)) gave {got!r} for s = {sample!r}.")
        full = _step(rs[0], 1, "decode(list(range(vocab_size)))")
        if full != "".join(chars1):
            raise Fail(
                f"decode(list(range(vocab_size))) gave {full!r}: it should list the vocabulary in "
                "sorted order."
            )

    cases.append(
        Case(
            "CharTokenizer",
            "decode inverts encode",
            1.0,
            [
                obj(
                    text1,
                    [
                        {"method": "decode", "args": [ids]},
                        {"method": "decode", "args": [list(range(len(chars1)))]},
                    ],
                )
            ],
            judge_decode,
        )
    )

    bad = sample[:2] + unknown + sample[2:4]

    def judge_unknown(rs):
        r = rs[0]
        if r.error:
            raise Fail(compare.error_message(r, "CharTokenizer(text)"))
        step = r.raw["steps"][0]
        _not_implemented(step, "encode")
        if step.get("missing"):
            raise Fail(f"{step['missing']} does not exist.")
        if not step.get("error"):
            raise Fail(
                f"encode({bad!r}) returned {describe_encoded(step.get('value'))} although {unknown!r} "
                "is not in the vocabulary: raise an error that names the character."
            )
        message = step["error"]["message"]
        if unknown not in message:
            raise Fail(
                f"encode({bad!r}) raised {step['error']['type']}: {message[:80]!r}, which does not "
                f"name the unknown character {unknown!r}: say which character is missing.",
                fraction=0.5,
            )

    cases.append(
        Case(
            "CharTokenizer",
            "an unknown character raises an error naming it",
            1.0,
            [obj(text1, [{"method": "encode", "args": [bad]}])],
            judge_unknown,
        )
    )
    return cases


# ---------------------------------------------------------------- get_batch


def _batch(r, what, B, T):
    x, y = compare.returned(r, what, framework="torch", count=2, names=["x", "y"])
    for name, t in (("x", x), ("y", y)):
        compare.assert_shape(t, (B, T), f"{name} of {what}")
        if t.dtype.kind not in "iu":
            raise Fail(
                f"{name} of {what} holds {t.dtype} values: token ids must stay integers "
                "(torch.long) so nn.Embedding can look them up."
            )
    return x.astype(np.int64), y.astype(np.int64)


def _window_check(data, x, y, what):
    """Every row of x is a window of data and y the same window shifted by one."""
    data = np.asarray(data)
    N, T = len(data), x.shape[1]
    windows = {tuple(data[s : s + T]): s for s in range(N - T + 1)}
    for b in range(len(x)):
        starts = [s for s in range(N - T + 1) if np.array_equal(data[s : s + T], x[b])]
        if not starts:
            raise Fail(
                f"row {b} of x is not {T} consecutive tokens of data: take data[s : s + block_size]."
            )
        if np.array_equal(y[b], x[b]):
            raise Fail(
                f"{what}: row {b} of y equals row {b} of x. " + tv.explain(["targets-not-shifted"]),
                ["targets-not-shifted"],
            )
        if not any(s + T < N and np.array_equal(data[s + 1 : s + T + 1], y[b]) for s in starts):
            if tuple(y[b]) in windows:
                raise Fail(
                    f"{what}: row {b} of y is a window of data, but not x's window shifted by one: "
                    "y must use the same start s as x, plus one."
                )
            raise Fail(
                f"{what}: row {b} of y is not x's window shifted by one: y = data[s + 1 : s + 1 + block_size]."
            )


@torch_probe("get_batch")
def get_batch_cases(rng):
    cases = []
    N, B, T = 60, 16, 8
    data = torch.from_numpy(rng.permutation(N)).long()
    seed = int(rng.integers(2**31))
    what = f"get_batch(data of {N} distinct tokens, batch_size={B}, block_size={T}, generator)"

    def judge_windows(rs):
        x, y = _batch(rs[0], what, B, T)
        _window_check(data.numpy(), x, y, what)
        after = rs[0].decode(rs[0].raw["args_after"][0])
        compare.assert_unchanged(data.numpy(), np.asarray(after), "data")

    cases.append(
        Case(
            "get_batch",
            "x holds windows of data and y the same windows shifted by one",
            1.5,
            [{"op": "call", "args": [data, B, T], "kwargs": {"generator": {"$generator": seed}}}],
            judge_windows,
        )
    )

    rep = torch.from_numpy(rng.integers(0, 5, size=40)).long()
    what2 = "get_batch(data of 40 tokens with repeats, batch_size=12, block_size=6)"

    def judge_repeats(rs):
        x, y = _batch(rs[0], what2, 12, 6)
        _window_check(rep.numpy(), x, y, what2)

    cases.append(
        Case(
            "get_batch",
            "windows of a corpus with repeated tokens (no generator)",
            0.5,
            [{"op": "call", "args": [rep, 12, 6]}],
            judge_repeats,
        )
    )

    tight = torch.from_numpy(rng.permutation(50)[: T + 1]).long()
    what3 = (
        f"get_batch(data of exactly block_size + 1 = {T + 1} tokens, batch_size=3, block_size={T})"
    )

    def judge_tight(rs):
        if rs[0].error:
            raise Fail(
                compare.error_message(rs[0], what3)
                + f". With {T + 1} tokens there is exactly one window, starting at 0: the "
                "starts run from 0 to len(data) - block_size - 1 inclusive."
            )
        x, y = _batch(rs[0], what3, 3, T)
        d = tight.numpy()
        if not (np.all(x == d[:T]) and np.all(y == d[1:])):
            _window_check(d, x, y, what3)
            raise Fail(f"{what3}: the only window is x = data[:{T}], y = data[1:].")

    cases.append(
        Case(
            "get_batch",
            "data with exactly one window (block_size + 1 tokens)",
            0.5,
            [
                {
                    "op": "call",
                    "args": [tight, 3, T],
                    "kwargs": {"generator": {"$generator": seed + 1}},
                }
            ],
            judge_tight,
        )
    )

    big = torch.from_numpy(rng.permutation(300)).long()
    what4 = "get_batch(data, 8, 4, generator=g) twice with the same seed"

    def judge_repro(rs):
        (x1, y1), (x2, y2) = (_batch(r, what4, 8, 4) for r in rs)
        _window_check(big.numpy(), x1, y1, what4)
        if len({tuple(row) for row in x1}) < 2:
            raise Fail(
                f"{what4}: all 8 rows are the same window; draw a random start for each row."
            )
        if not (np.array_equal(x1, x2) and np.array_equal(y1, y2)):
            raise Fail(
                f"{what4} gave different batches: draw the random starts with the `generator` "
                "argument (torch.randint(..., generator=generator)) so batches are reproducible."
            )

    req = {"op": "call", "args": [big, 8, 4], "kwargs": {"generator": {"$generator": seed + 2}}}
    cases.append(
        Case(
            "get_batch",
            "random windows, reproducible with the same generator",
            0.5,
            [req, dict(req)],
            judge_repro,
        )
    )
    return cases


# ---------------------------------------------------------------- GPT

GPT_INIT = {"vocab_size": 11, "block_size": 8, "d_model": 32, "n_heads": 4, "n_layers": 2}


def _gpt_logits(r, what, shape):
    if r.error:
        raise Fail(compare.error_message(r, what))
    got = compare.returned(r, what, framework="torch")
    compare.assert_shape(got, shape, what)
    if got.dtype.kind != "f":
        raise Fail(f"{what} holds {got.dtype} values; logits are floats.")
    if not np.all(np.isfinite(got)):
        raise Fail(
            f"{what}: {int((~np.isfinite(got)).sum())} of {got.size} logits are NaN or inf. A row "
            "of attention scores that is entirely masked gives NaN: is the causal mask inverted?",
            ["mask-inverted"],
        )
    return got.astype(np.float64)


@torch_probe("GPT")
def gpt_cases(rng):
    V, T = GPT_INIT["vocab_size"], GPT_INIT["block_size"]
    cases = []
    idx = torch.from_numpy(rng.integers(0, V, size=(3, T))).long()
    short = torch.from_numpy(rng.integers(0, V, size=(2, 5))).long()

    def judge_shapes(rs):
        _gpt_logits(rs[0], f"GPT(...)(idx of shape (3, {T}))", (3, T, V))
        _gpt_logits(rs[1], "GPT(...)(idx of shape (2, 5)), shorter than block_size", (2, 5, V))

    cases.append(
        Case(
            "GPT",
            "logits of shape (B, T, vocab_size), also for T < block_size",
            1.0,
            [
                {"op": "module", "init": GPT_INIT, "args": [idx]},
                {"op": "module", "init": GPT_INIT, "args": [short]},
            ],
            judge_shapes,
        )
    )

    # causality: rows 1.. copy row 0 up to position t and differ after it
    cuts = [1, 3, 5]
    base = rng.integers(0, V, size=T)
    rows = [base]
    for t in cuts:
        row = base.copy()
        row[t + 1 :] = (base[t + 1 :] + rng.integers(1, V, size=T - t - 1)) % V
        rows.append(row)
    causal_idx = torch.from_numpy(np.stack(rows)).long()

    def judge_causal(rs):
        logits = _gpt_logits(rs[0], "GPT(...)(idx)", (len(rows), T, V))
        scale = max(float(np.abs(logits[0]).max()), 1e-6)
        for j, t in enumerate(cuts, start=1):
            past = float(np.abs(logits[j, : t + 1] - logits[0, : t + 1]).max())
            if past > max(1e-5, 1e-4 * scale):
                seen = int(np.argmax(np.abs(logits[j, : t + 1] - logits[0, : t + 1]).max(-1)))
                raise Fail(
                    f"changing only the tokens after position {t} changed the logits at position "
                    f"{seen} by up to {fmt(past)}: position {seen} sees the future. "
                    + tv.explain(["no-causal-mask"]),
                    ["no-causal-mask"],
                )
        future = float(np.abs(logits[1, 2:] - logits[0, 2:]).max())
        if future == 0.0:
            raise Fail(
                "the logits do not change at all when the later tokens change: does the model "
                "use the token ids (tok_emb(idx))?"
            )

    cases.append(
        Case(
            "GPT",
            "causal: the logits at position t ignore the tokens after t",
            2.0,
            [{"op": "module", "init": GPT_INIT, "args": [causal_idx]}],
            judge_causal,
        )
    )

    too_long = torch.from_numpy(rng.integers(0, V, size=(1, T + 1))).long()

    def judge_too_long(rs):
        r = rs[0]
        if r.error:
            if r.error["type"] == "ValueError":
                return
            raise Fail(
                f"a sequence of {T + 1} tokens (block_size {T}) raised {r.error['type']}; SPEC asks "
                "for a ValueError with a clear message, checked at the start of forward.",
                fraction=0.5,
            )
        raise Fail(
            f"a sequence of {T + 1} tokens went through a GPT with block_size {T} without an "
            "error: raise ValueError when T > block_size."
        )

    cases.append(
        Case(
            "GPT",
            "a sequence longer than block_size raises ValueError",
            0.5,
            [{"op": "module", "init": GPT_INIT, "args": [too_long]}],
            judge_too_long,
        )
    )

    def judge_attr(rs):
        for r, want in zip(rs, (T, 6), strict=True):
            if r.error:
                raise Fail(compare.error_message(r, "building GPT(...)"))
            step = r.raw["steps"][0]
            forward = r.raw["steps"][1] if len(r.raw["steps"]) > 1 else {}
            if (forward.get("error") or {}).get("type") == "NotImplementedError":
                raise Fail("GPT is not implemented yet (forward raises NotImplementedError).")
            if step.get("error"):
                raise Fail(
                    "GPT has no attribute block_size: store it in __init__ (self.block_size = block_size)."
                )
            got = _plain(r.decode(step["value"]))
            if got != want:
                raise Fail(f"GPT(..., block_size={want}).block_size is {got!r:.40}.")

    cases.append(
        Case(
            "GPT",
            "block_size attribute; SPEC's defaults and d_ff build",
            0.5,
            [
                {
                    "op": "object",
                    "init": {"vocab_size": V, "block_size": T},
                    "steps": [
                        {"attr": "block_size"},
                        {"method": "forward", "args": [torch.zeros(1, 2, dtype=torch.long)]},
                    ],
                },
                {
                    "op": "object",
                    "init": {**GPT_INIT, "block_size": 6, "d_ff": 48, "dropout": 0.1},
                    "steps": [{"attr": "block_size"}],
                },
            ],
            judge_attr,
        )
    )

    grad_idx = torch.from_numpy(rng.integers(0, V, size=(2, T))).long()
    cot = tensor(rng, 2, T, V)

    def judge_grads(rs):
        r = rs[0]
        _gpt_logits(r, "GPT(...)(idx)", (2, T, V))
        if "backward_error" in r.raw:
            err = r.raw["backward_error"]
            raise Fail(f"backpropagating through your GPT raised {err['type']}: {err['message']}.")
        without = r.raw.get("params_without_grad") or []
        if without:
            raise Fail(
                f"{len(without)} parameter(s) of your GPT get no gradient (e.g. {without[0]}): "
                "is every layer used in forward, through torch operations?"
            )

    cases.append(
        Case(
            "GPT",
            "gradients reach every parameter",
            0.5,
            [{"op": "module", "init": GPT_INIT, "args": [grad_idx], "backward": cot}],
            judge_grads,
        )
    )

    loss_idx = torch.from_numpy(rng.integers(0, V, size=(8, T))).long()
    targets = torch.from_numpy(rng.integers(0, V, size=(8, T))).long()

    def judge_initial(rs):
        logits = _gpt_logits(rs[0], "GPT(...)(idx)", (8, T, V))
        loss = float(F.cross_entropy(torch.from_numpy(logits).reshape(-1, V), targets.reshape(-1)))
        if abs(loss - math.log(V)) > 1.5:
            raise Fail(
                f"the untrained model's loss on random targets is {fmt(loss)}; with {V} tokens a "
                f"model that knows nothing yet should be near ln({V}) = {fmt(math.log(V))}. Very "
                "confident initial logits usually mean large initial weights (GPT-2 draws them "
                "with std 0.02) or a missing final layer norm."
            )

    cases.append(
        Case(
            "GPT",
            "the untrained loss is near ln(vocab_size)",
            0.5,
            [{"op": "module", "init": GPT_INIT, "args": [loss_idx]}],
            judge_initial,
        )
    )
    cases.append(_train_case(rng))
    return cases


TRAIN = {"V": 8, "period": 24, "block": 16, "steps": 200, "batch": 16, "lr": 3e-3, "threshold": 0.5}


def _train_case(rng):
    V, p = TRAIN["V"], TRAIN["period"]
    pattern = rng.integers(0, V, size=p)
    data = np.tile(pattern, 2400 // p)
    config = {
        "init": {
            "vocab_size": V,
            "block_size": TRAIN["block"],
            "d_model": 32,
            "n_heads": 4,
            "n_layers": 2,
        },
        "data": data.astype(np.int64),
        "steps": TRAIN["steps"],
        "batch_size": TRAIN["batch"],
        "block_size": TRAIN["block"],
        "lr": TRAIN["lr"],
        "seed": int(rng.integers(2**31)),
    }
    threshold = TRAIN["threshold"]

    def judge(rs):
        r = rs[0]
        result = r.value("training your GPT")
        if not isinstance(result, dict) or "loss_after" not in result:
            raise Fail("the training run gave no losses back.")
        before, after = float(result["loss_before"]), float(result["loss_after"])
        if not math.isfinite(after):
            raise Fail(
                f"the loss became {after} during training: look for NaN from a fully masked row."
            )
        if after > threshold:
            raise Fail(
                f"after {TRAIN['steps']} AdamW steps on a text that repeats every {p} tokens, the "
                f"loss went from {fmt(before)} to {fmt(after)}; a working GPT gets below "
                f"{fmt(threshold)}. Check the position embeddings, the residual connections, and "
                "that every block is used."
            )

    return Case(
        "GPT",
        "a short training run learns a repeating text",
        2.0,
        [{"op": "train", "config": config}],
        judge,
        seconds=120.0,
    )


# ---------------------------------------------------------------- lm_loss


def _loss_case(name, points, logits, targets, grad_check=False):
    expected = float(F.cross_entropy(logits.detach().double().flatten(0, 1), targets.flatten()))
    variants = tv.lm_loss_variants(logits, targets)
    B, T, V = logits.shape
    what = f"lm_loss(logits of shape ({B}, {T}, {V}), targets)"

    def judge(rs):
        r = rs[0]
        got = compare.returned(r, what, framework="torch")
        if got.size != 1:
            raise Fail(
                f"{what} has shape {tuple(got.shape)}: the loss is one number (shape ()), the mean over all {B * T} positions."
            )
        got = got.reshape(())
        close_or_diagnose(
            got, np.float64(expected), [(i, np.float64(v)) for i, v in variants], what
        )
        if grad_check:
            assert_differentiable(r, what)
            after = [r.decode(a) for a in r.raw.get("args_after", [])]
            compare.assert_unchanged(np_(logits).astype(np.float32), np.asarray(after[0]), "logits")
            compare.assert_unchanged(targets.numpy(), np.asarray(after[1]), "targets")

    return Case("lm_loss", name, points, [{"op": "call", "args": [logits, targets]}], judge)


@torch_probe("lm_loss")
def lm_loss_cases(rng):
    V = 7
    return [
        _loss_case(
            "mean cross-entropy over every position",
            1.5,
            tensor(rng, 3, 5, V, scale=2.0),
            torch.from_numpy(rng.integers(0, V, size=(3, 5))).long(),
        ),
        _loss_case(
            "a batch of one sequence, 3 tokens",
            0.5,
            tensor(rng, 1, 4, 3, scale=2.0),
            torch.from_numpy(rng.integers(0, 3, size=(1, 4))).long(),
        ),
        _loss_case(
            "differentiable, and leaves its inputs unchanged",
            1.0,
            tensor(rng, 2, 6, V, scale=2.0, grad=True),
            torch.from_numpy(rng.integers(0, V, size=(2, 6))).long(),
            grad_check=True,
        ),
    ]


# ---------------------------------------------------------------- generate


def _toy(table, block_size):
    return {"$toy_lm": {"table": np.asarray(table, dtype=np.float32), "block_size": block_size}}


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
                "of context, more than its block_size. " + tv.explain(["generate-no-crop"]),
                ["generate-no-crop"],
            )
        raise Fail(compare.error_message(r, what))
    got = compare.returned(r, what, framework="torch")
    compare.assert_shape(got, shape, what)
    if got.dtype.kind not in "iu":
        raise Fail(f"{what} holds {got.dtype} values; token ids are integers (torch.long).")
    if got.min() < 0 or got.max() >= V:
        raise Fail(f"{what} holds ids outside 0..{V - 1}.")
    if prefix is not None and not np.array_equal(got[:, : prefix.shape[1]], prefix):
        raise Fail(
            f"{what}: the first {prefix.shape[1]} columns should be the prompt idx, unchanged."
        )
    return got.astype(np.int64)


def _table(rng, V):
    return rng.normal(0.0, 1.5, size=(V, V))


@torch_probe("generate")
def generate_cases(rng):
    V = 6
    cases = []
    table = _table(rng, V)
    seed = int(rng.integers(2**31))

    idx = torch.from_numpy(rng.integers(0, V, size=(3, 2))).long()
    what = "generate(model, idx of shape (3, 2), max_new_tokens=4, generator=g)"

    def judge_shape(rs):
        _generated(rs[0], what, (3, 6), V, idx.numpy())
        after = rs[0].decode(rs[0].raw["args_after"][1])
        compare.assert_unchanged(idx.numpy(), np.asarray(after), "idx")

    cases.append(
        Case(
            "generate",
            "shape (B, T0 + max_new_tokens), the prompt kept, valid ids",
            1.0,
            [
                {
                    "op": "call",
                    "args": [_toy(table, 8), idx, 4],
                    "kwargs": {"generator": {"$generator": seed}},
                }
            ],
            judge_shape,
        )
    )

    greedy_idx = torch.from_numpy(rng.integers(0, V, size=(2, 2))).long()
    chain = [list(row) for row in greedy_idx.numpy()]
    for row in chain:
        for _ in range(8):
            row.append(int(np.argmax(table[row[-1]])))
    want = np.array(chain)
    what2 = "generate(model with block_size 3, idx (2, 2), max_new_tokens=8, top_k=1)"

    def judge_greedy(rs):
        got = _generated(rs[0], what2, (2, 10), V, greedy_idx.numpy())
        if not np.array_equal(got, want):
            b, t = np.argwhere(got != want)[0]
            prev = int(got[b, t - 1])
            raise Fail(
                f"{what2}: token {t} of row {b} is {int(got[b, t])}, but the model's most likely "
                f"token after {prev} is {int(np.argmax(table[prev]))}. With top_k=1 generation "
                "is greedy; the model's prediction for the next token sits in logits[:, -1, :] "
                "of the cropped context idx[:, -block_size:]."
            )

    cases.append(
        Case(
            "generate",
            "top_k=1 is greedy, with the context cropped to block_size",
            1.5,
            [
                {
                    "op": "call",
                    "args": [_toy(table, 3), greedy_idx, 8],
                    "kwargs": {"top_k": 1, "generator": {"$generator": seed}},
                }
            ],
            judge_greedy,
        )
    )

    long_idx = torch.from_numpy(rng.integers(0, V, size=(2, 6))).long()
    what3 = "generate(model with block_size 4, idx (2, 6), max_new_tokens=5)"

    def judge_crop(rs):
        _generated(rs[0], what3, (2, 11), V, long_idx.numpy())

    cases.append(
        Case(
            "generate",
            "a prompt longer than block_size is cropped",
            1.0,
            [
                {
                    "op": "call",
                    "args": [_toy(table, 4), long_idx, 5],
                    "kwargs": {"generator": {"$generator": seed + 1}},
                }
            ],
            judge_crop,
        )
    )

    B = 300
    topk_idx = torch.from_numpy(rng.integers(0, V, size=(B, 1))).long()
    top2 = np.argsort(table, axis=1)[:, -2:]
    what4 = f"generate(model, idx ({B}, 1), max_new_tokens=3, top_k=2)"

    def judge_topk(rs):
        got = _generated(rs[0], what4, (B, 4), V, topk_idx.numpy())
        prev, nxt = got[:, :-1].ravel(), got[:, 1:].ravel()
        outside = np.array([n not in top2[p] for p, n in zip(prev, nxt, strict=True)])
        if outside.any():
            raise Fail(
                f"{what4}: {int(outside.sum())} of {outside.size} sampled tokens are not among the "
                "2 most likely ones: set every logit below the k-th largest to -inf before the "
                "softmax."
            )
        if len(set(nxt.tolist())) < 2 or all(
            np.all(nxt[prev == p] == top2[p, 1]) for p in set(prev.tolist())
        ):
            raise Fail(
                f"{what4}: every token is the most likely one; top_k=2 should sample between the top 2."
            )

    cases.append(
        Case(
            "generate",
            "top_k=2 never samples outside the two most likely tokens",
            1.0,
            [
                {
                    "op": "call",
                    "args": [_toy(table, 8), topk_idx, 3],
                    "kwargs": {"top_k": 2, "generator": {"$generator": seed + 2}},
                }
            ],
            judge_topk,
        )
    )

    for temperature, top_k, pts in (
        (1.0, None, 1.0),
        (0.5, None, 1.0),
        (2.0, None, 1.0),
        (1.0, 3, 0.5),
    ):
        cases.append(_distribution_case(rng, V, temperature, top_k, pts, seed + 3))
    return cases


def _distribution_case(rng, V, temperature, top_k, points, seed):
    """Sample one token B times from a fixed row of logits; Pearson's test against the truth."""
    B = 4000
    start = int(rng.integers(0, V))
    table = _table(rng, V)
    table[start] = rng.permutation(np.linspace(-1.5, 1.5, V))
    row = table[start]
    p = tv.sampling_distribution(row, temperature, top_k)
    p_mul = tv.temperature_multiplied_distribution(row, temperature, top_k)
    idx = torch.full((B, 1), start, dtype=torch.long)
    kwargs = {"generator": {"$generator": seed}}
    label = []
    if temperature != 1.0:
        kwargs["temperature"] = temperature
        label.append(f"temperature={temperature:g}")
    if top_k is not None:
        kwargs["top_k"] = top_k
        label.append(f"top_k={top_k}")
    what = f"generate(model, idx ({B}, 1), max_new_tokens=1{''.join(', ' + s for s in label)})"
    name = {
        (1.0, None): "samples from softmax(logits)",
        (0.5, None): "temperature=0.5 sharpens the distribution",
        (2.0, None): "temperature=2 flattens the distribution",
    }.get((temperature, top_k), f"top_k={top_k} samples from the softmax of the {top_k} largest")

    def judge(rs):
        got = _generated(rs[0], what, (B, 2), V)
        counts = np.bincount(got[:, 1], minlength=V)
        stat, dof = tv.chi_square(counts, p)
        if stat <= tv.chi_square_limit(dof):
            return
        freq = counts / B
        top = int(np.argmax(p))
        seen = f"token {top}, the most likely, came {fmt(100 * freq[top])}% of the time; expected about {fmt(100 * p[top])}%"
        if freq.max() == 1.0:
            raise Fail(
                f"{what}: all {B} samples are token {int(np.argmax(freq))}: generate should sample from the distribution (torch.multinomial), not take the argmax."
            )
        if temperature != 1.0:
            stat_mul, dof_mul = tv.chi_square(counts, p_mul)
            if stat_mul <= tv.chi_square_limit(dof_mul) or stat_mul < stat / 10:
                raise Fail(
                    f"{what}: {seen}. " + tv.explain(["temperature-multiplied"]),
                    ["temperature-multiplied"],
                )
        raise Fail(
            f"{what}: the {B} samples do not follow softmax(logits / temperature)"
            + (" restricted to the top k" if top_k else "")
            + f" (Pearson's statistic {fmt(stat)}, far above {fmt(tv.chi_square_limit(dof))}): {seen}."
        )

    return Case(
        "generate",
        name,
        points,
        [{"op": "call", "args": [_toy(table, 8), idx, 1], "kwargs": kwargs}],
        judge,
    )
