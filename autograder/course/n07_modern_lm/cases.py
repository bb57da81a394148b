"""Hidden tests of notebook 07 (from GPT-2 to a modern small language model, PyTorch).

BPETokenizer is asked for its merges, its vocab_size and its encodings of texts drawn here, so
that ties and runs ("aaa") occur. rms_norm and apply_rope are judged by values (and gradients),
against the reference and the known-wrong variants (variants*.py).
SwiGLU, CausalSelfAttention and TinyLlama are built in the harness with weights loaded under
the notebook's names; a cache is given to them as the reference's (k, v) for an earlier part of
the sequence, so "fed in pieces = fed whole" is tested with the sequence's own numbers.
generate_cached runs against a toy model whose logits depend on the absolute position
(harness/toy_cached.py), so tokens fed at the wrong positions show in the tokens.

Every model here is tiny (widths 8-24, two layers): 07's hidden tests cost well under a
CPU-second in the sandbox.

This file holds BPETokenizer's, rms_norm's and apply_rope's probes; cases_regex_bpe.py
RegexBPETokenizer's, cases_model.py SwiGLU's, CausalSelfAttention's and TinyLlama's,
cases_generate.py generate_cached's. The judges are judges*.py, registered as
"modern_lm.<name>".
"""

import numpy as np
import torch

from autograder.course.n07_modern_lm import cases_generate, cases_model, cases_regex_bpe  # noqa: F401 (their probes)
from autograder.course.n07_modern_lm import reference as ref
from autograder.course.n07_modern_lm.cases_generate import TRIES
from autograder.course.n07_modern_lm.variants import (
    NOT_DRAWN_FOR,
    encode_variants,
    merge_variants,
    rms_norm_variants,
    rope_variants,
)
from autograder.course.probes import Case
from autograder.course.torch_shared.tools import np_, reference_input_grads, tensor, torch_probe
from autograder.judging import Judgement

# ---------------------------------------------------------------- BPETokenizer

SYLLABLES = ("ab", "ba", "aa", "ca", "ac", "bc", "cb", "ée", "a", "b", "c", "aaa", "bb")
SAMPLE_TRIES = 100  # texts to encode tried per training text


def _bpe_text(rng, words):
    return " ".join(str(w) for w in rng.choice(words, size=int(rng.integers(14, 22))))


def _bpe_draw(rng):
    """A training text (and its vocab_size) on which every tie-order and counting mistake
    learns other merges, and a text to encode on which applying the merges in another order
    gives other ids; both hold a character outside ASCII (code points are not bytes there).
    Made of a few random words over a small alphabet, so runs and ties occur."""
    for _ in range(TRIES):
        words = ["".join(rng.choice(SYLLABLES, size=int(rng.integers(1, 4)))) for _ in range(5)]
        text = _bpe_text(rng, words)
        if text.isascii():  # a character of two bytes: code points and bytes then differ
            continue
        vocab_size = 256 + int(rng.integers(6, 11))
        tok = ref.BPETokenizer(text, vocab_size)
        right = [list(p) for p in tok.merges]
        variants = merge_variants(text, vocab_size)
        # (merging singletons changes nothing before training would stop: the next case)
        if any(v == right for i, v in variants if i not in NOT_DRAWN_FOR):
            continue
        chars = sorted(set(text))
        for k in range(SAMPLE_TRIES):
            if k % 2:
                sample = _bpe_text(rng, words)[: int(rng.integers(12, 30))]
            else:
                sample = "".join(rng.choice(chars, size=int(rng.integers(12, 30))))
            if sample.isascii():
                continue
            encoded = tok.encode(sample)
            encodings = encode_variants(right, sample)
            # every other order (newest first, one scan, training's most frequent pair first)
            # gives other ids on this text
            if all(v != encoded for i, v in encodings if i == "bpe-encode-order"):
                return text, vocab_size, right, variants, sample, encoded, encodings
    raise RuntimeError("no discriminating BPE text drawn")


def _obj(text, vocab_size, steps):
    return {"op": "object", "init_args": [text, vocab_size], "steps": steps}


@torch_probe("BPETokenizer")
def bpe_cases(rng):
    text, vocab_size, merges, variants, sample, encoded, enc_variants = _bpe_draw(rng)
    tok = ref.BPETokenizer(text, vocab_size)
    what = f"BPETokenizer(text of {len(text)} characters, vocab_size={vocab_size})"
    cases = [
        Case(
            "BPETokenizer",
            "merges: the most frequent pair each time, ties to the earliest",
            2.0,
            [_obj(text, vocab_size, [{"attr": "merges"}, {"attr": "vocab_size"}])],
            Judgement(
                "modern_lm.bpe_merges", {"what": what, "expected": merges, "variants": variants}
            ),
        )
    ]

    # training stops early when no pair occurs twice: a short text, a large vocab_size
    short = "".join(rng.choice(list("xyz"), size=3)) * 2 + "".join(rng.choice(list("uvw"), 4))
    early = [list(p) for p in ref.BPETokenizer(short, 400).merges]
    cases.append(
        Case(
            "BPETokenizer",
            "training stops when no pair occurs twice; vocab_size counts the merges",
            0.5,
            [_obj(short, 400, [{"attr": "merges"}, {"attr": "vocab_size"}])],
            Judgement(
                "modern_lm.bpe_merges",
                {
                    "what": f"BPETokenizer({short!r}, vocab_size=400)",
                    "expected": early,
                    "variants": merge_variants(short, 400),
                    "asked": 400,
                },
            ),
        )
    )

    cases.append(
        Case(
            "BPETokenizer",
            "encode applies the merges in the order learned",
            1.5,
            [_obj(text, vocab_size, [{"attr": "merges"}, {"method": "encode", "args": [sample]}])],
            Judgement(
                "modern_lm.bpe_encode",
                {
                    "what": f"encode({sample!r})",
                    "expected": encoded,
                    "variants": enc_variants,
                    "merges": merges,
                    "spelled": [list(tok.vocab[256 + i]) for i in range(len(merges))],
                    "text": sample,
                },
            ),
        )
    )

    multibyte = "é".encode()
    partial = [multibyte[0], *tok.encode(sample[:5])]
    cases.append(
        Case(
            "BPETokenizer",
            "decode inverts encode (UTF-8, broken characters replaced)",
            0.5,
            [
                _obj(
                    text,
                    vocab_size,
                    [
                        {"method": "decode", "args": [encoded]},
                        {"method": "decode", "args": [partial]},
                        {"method": "decode", "args": [list(multibyte)]},
                    ],
                )
            ],
            Judgement(
                "modern_lm.bpe_decode",
                {
                    "text": sample,
                    "partial": partial,
                    "partial_decoded": tok.decode(partial),
                    "split": list(multibyte),
                    "split_text": "é",
                    "apart": "".join(
                        tok.vocab[i].decode("utf-8", errors="replace") for i in encoded
                    ),
                },
            ),
        )
    )

    bad = tok.vocab_size + int(rng.integers(0, 5))
    ids = [*encoded[:3], bad]
    negative = [*encoded[:2], -int(rng.integers(1, 4))]
    decodes = [{"method": "decode", "args": [ids]}, {"method": "decode", "args": [negative]}]
    cases.append(
        Case(
            "BPETokenizer",
            "an id outside the vocabulary raises ValueError naming it",
            0.5,
            [_obj(text, vocab_size, decodes)],
            Judgement("modern_lm.bpe_unknown", {"ids": ids, "bad": bad, "negative": negative}),
        )
    )
    return cases


# ---------------------------------------------------------------- rms_norm


def _values_judge(what, expected, variants, inputs=None, input_grads=None):
    params = {"what": what, "expected": expected, "variants": variants}
    if inputs is not None:
        params.update(inputs=inputs, input_grads=input_grads)
    return Judgement("block_judges.layer_norm", params)


@torch_probe("rms_norm")
def rms_norm_cases(rng):
    d = 8
    w = tensor(rng, d, scale=0.5, shift=1.0)
    cases = []
    for name, pts, x, eps in (
        (
            # as many sequences and tokens as features: a mean taken without keepdim
            # broadcasts (wrongly) instead of failing, so its values name it
            "a batch of tokens (8, 8, 8): values",
            1.0,
            tensor(rng, d, d, d, scale=2.0, shift=0.7),
            None,
        ),
        (
            "tokens of tiny size: eps inside the square root",
            0.5,
            tensor(rng, 4, d, scale=1e-3),
            None,
        ),
        ("the eps argument (eps=0.1)", 0.25, tensor(rng, 3, d, scale=0.3), 0.1),
    ):
        kwargs = {} if eps is None else {"eps": eps}
        e = 1e-6 if eps is None else eps
        what = "rms_norm(x, weight" + (f", eps={eps}" if eps else "") + ")"
        cases.append(
            Case(
                "rms_norm",
                name,
                pts,
                [{"op": "call", "args": [x, w], "kwargs": kwargs}],
                _values_judge(what, np_(ref.rms_norm(x, w, e)), rms_norm_variants(x, w, e)),
            )
        )
    x = tensor(rng, 2, 4, d, scale=1.5, grad=True)
    cot = tensor(rng, 2, 4, d)
    judge = _values_judge(
        "rms_norm(x, weight)",
        np_(ref.rms_norm(x, w)),
        rms_norm_variants(x, w),
        [["x", np_(x).astype(np.float32)], ["weight", np_(w).astype(np.float32)]],
        reference_input_grads(ref.rms_norm, [x, w], cot),
    )
    cases.append(
        Case(
            "rms_norm",
            "differentiable, and leaves its inputs unchanged",
            0.25,
            [{"op": "call", "args": [x, w], "backward": cot}],
            judge,
        )
    )
    return cases


# ---------------------------------------------------------------- apply_rope


def _positions(rng, T, high=40):
    return torch.from_numpy(rng.choice(high, size=T, replace=False)).long()


@torch_probe("apply_rope")
def apply_rope_cases(rng):
    cases = []
    x, pos = tensor(rng, 2, 2, 5, 8), _positions(rng, 5)
    cases.append(
        Case(
            "apply_rope",
            "values on (B, H, T, d_head) = (2, 2, 5, 8), positions in any order",
            2.0,
            [{"op": "call", "args": [x, pos]}],
            _values_judge(
                f"apply_rope(x, positions={pos.tolist()})",
                np_(ref.apply_rope(x, pos)),
                rope_variants(x, pos),
            ),
        )
    )
    x, pos = tensor(rng, 4, 6), _positions(rng, 4, 12)
    cases.append(
        Case(
            "apply_rope",
            "the base argument (base=100)",
            0.5,
            [{"op": "call", "args": [x, pos], "kwargs": {"base": 100.0}}],
            _values_judge(
                f"apply_rope(x, positions={pos.tolist()}, base=100.0)",
                np_(ref.apply_rope(x, pos, 100.0)),
                rope_variants(x, pos, 100.0),
            ),
        )
    )
    odd = int(rng.choice([3, 5, 7]))
    cases.append(
        Case(
            "apply_rope",
            "an odd d_head raises ValueError",
            0.5,
            [{"op": "call", "args": [tensor(rng, 3, odd), torch.arange(3)]}],
            Judgement(
                "modern_lm.raises_value_error",
                {
                    "what": f"apply_rope(x of shape (3, {odd}), positions)",
                    "because": "features pair up two by two, so d_head must be even",
                    "named": ["rope-odd-not-refused"],
                },
            ),
        )
    )
    T, d = 6, 8
    q, k = tensor(rng, d), tensor(rng, d)
    pair = torch.stack([q.expand(T, d), k.expand(T, d)])  # (2, T, d): q and k at every position
    pos, shift = torch.arange(T), int(rng.integers(5, 50))
    cases.append(
        Case(
            "apply_rope",
            "q.k depends only on the distance between positions",
            0.5,
            [
                {"op": "call", "args": [pair, pos]},
                {"op": "call", "args": [pair, pos + shift]},
            ],
            Judgement(
                "modern_lm.rope_relative",
                {"what": "apply_rope(x (2, 6, 8), positions)", "shift": shift},
            ),
        )
    )
    x, pos = tensor(rng, 3, 4, 6, grad=True), _positions(rng, 4)
    cot = tensor(rng, 3, 4, 6)
    cases.append(
        Case(
            "apply_rope",
            "differentiable, and leaves its inputs unchanged",
            0.5,
            [{"op": "call", "args": [x, pos], "backward": cot}],
            _values_judge(
                "apply_rope(x, positions)",
                np_(ref.apply_rope(x, pos)),
                rope_variants(x, pos),
                [["x", np_(x).astype(np.float32)], ["positions", pos.numpy()]],
                reference_input_grads(ref.apply_rope, [x, pos], cot),
            ),
        )
    )
    return cases
