"""The hidden tests of notebooks 05-06 against a catalogue of student answers.

Mutants are realistic wrong answers: each must lose marks and be named with the right SPEC
misconception id. Alternatives are correct answers written another way: each must get full
marks. The reference gets full marks; a NotImplementedError stub gets 0, "not implemented".
Everything runs through autograder.checks.run_in_process, the visible checks' own path.
"""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch_probe_mutants import (
    NAMES_05,
    NAMES_06,
    BlockSequential,
    GPTIndexError,
    GPTTorchLayers,
    GPTUnusedLayer,
    MHADetached,
    MHAMisnamed,
    TokenizerDict,
    TokenizerIndex,
    TokenizerSilent,
    TokenizerUnsorted,
    _pe,
    _stub_function,
    _StubClass,
    batch_global_rng,
    batch_not_shifted,
    batch_unfold,
    examples_first_tokens,
    examples_label_inside,
    examples_loop,
    generate_argmax,
    ln_eps_outside,
    ln_in_place,
    ln_torch,
    ln_unbiased_var,
    loss_double_softmax,
    loss_nll,
    loss_numpy,
    loss_sum,
    make_block,
    make_ff,
    make_generate,
    make_gpt,
    make_mha,
    pe_loop,
    pe_vector,
    show,
)

from autograder.checks import run_in_process
from autograder.course import model_answers as R
from autograder.results import NOT_IMPLEMENTED

pytestmark = pytest.mark.usefixtures("one_thread")


def run(name, obj, **namespace):
    return run_in_process(name, obj, namespace=namespace)


def assert_full(results):
    failed = [r for r in results if r.status == "failed"]
    assert not failed, show(failed)


def assert_named(results, misconception):
    got = sum(r.score for r in results)
    total = sum(r.max_score for r in results)
    assert got < total, "the mutant kept full marks"
    named = {m for r in results for m in r.misconceptions}
    assert misconception in named, f"{misconception} not named:\n{show(results)}"
    for r in results:  # messages stay kind and short: no arrays dumped
        assert len(r.output) < 700, r.output


def assert_loses(results):
    assert sum(r.score for r in results) < sum(r.max_score for r in results), show(results)


# ================================================================ the reference and stubs


@pytest.mark.parametrize("name", NAMES_05 + NAMES_06)
def test_reference_gets_full_marks(name):
    assert_full(run(name, getattr(R, name)))


class _StubMethods(nn.Module):
    """A released class whose __init__ works but whose methods are left to write."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *args, **kwargs):
        raise NotImplementedError()

    def encode(self, s):
        raise NotImplementedError()

    def decode(self, ids):
        raise NotImplementedError()

    @property
    def vocab_size(self):
        raise NotImplementedError()


CLASSES = {"MultiHeadAttention", "FeedForward", "TransformerBlock", "CharTokenizer", "GPT"}


@pytest.mark.parametrize("name", NAMES_05 + NAMES_06)
def test_stub_scores_zero_not_implemented(name):
    stubs = [_StubClass, _StubMethods] if name in CLASSES else [_stub_function]
    for stub in stubs:
        results = run(name, stub)
        assert sum(r.score for r in results) == 0, show(results)
        for r in results:
            assert r.reason == NOT_IMPLEMENTED, show([r])


# ================================================================ layer_norm


def ln_unbiased_manual(x, weight, bias, eps=1e-5):
    d = x.shape[-1]
    centred = x - x.sum(-1, keepdim=True) / d
    var = (centred**2).sum(-1, keepdim=True) / (d - 1)
    return centred / (var + eps) ** 0.5 * weight + bias


def ln_axis_first(x, weight, bias, eps=1e-5):
    mean = x.mean(0, keepdim=True)
    var = x.var(0, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def ln_axis_all(x, weight, bias, eps=1e-5):
    return (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + eps) * weight + bias


def ln_eps_outside_std(x, weight, bias, eps=1e-5):
    return (
        weight * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True, correction=0) + eps)
        + bias
    )


def ln_rsqrt(x, weight, bias, eps=1e-5):
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
    return torch.addcmul(bias, (x - mean) * torch.rsqrt(var + eps), weight)


@pytest.mark.parametrize(
    ("fn", "misconception"),
    [
        (ln_unbiased_var, "layernorm-unbiased-variance"),
        (ln_unbiased_manual, "layernorm-unbiased-variance"),
        (ln_axis_first, "layernorm-wrong-axis"),
        (ln_axis_all, "layernorm-wrong-axis"),
        (ln_eps_outside, "layernorm-eps-outside-sqrt"),
        (ln_eps_outside_std, "layernorm-eps-outside-sqrt"),
    ],
)
def test_layer_norm_mutants(fn, misconception):
    assert_named(run("layer_norm", fn), misconception)


def test_layer_norm_in_place_and_detached_loses_marks():
    results = run("layer_norm", ln_in_place)
    assert_loses(results)
    assert any("modified in place" in r.output or "autograd" in r.output for r in results)


@pytest.mark.parametrize("fn", [ln_torch, ln_rsqrt])
def test_layer_norm_alternatives(fn):
    assert_full(run("layer_norm", fn))


# ================================================================ positional encoding


@pytest.mark.parametrize(
    ("fn", "misconception"),
    [
        (_pe(pe_loop, swap=True), "pe-sin-cos-swapped"),
        (_pe(pe_vector, swap=True), "pe-sin-cos-swapped"),
        (_pe(pe_loop, exponent="column"), "pe-wrong-exponent"),
        (_pe(pe_vector, exponent="i"), "pe-wrong-exponent"),
        (_pe(pe_loop, split=True), "pe-not-interleaved"),
        (_pe(pe_vector, split=True), "pe-not-interleaved"),
    ],
)
def test_positional_encoding_mutants(fn, misconception):
    assert_named(run("sinusoidal_positional_encoding", fn), misconception)


@pytest.mark.parametrize("fn", [_pe(pe_loop), _pe(pe_vector)])
def test_positional_encoding_alternatives(fn):
    assert_full(run("sinusoidal_positional_encoding", fn))


# ================================================================ MultiHeadAttention


class MHASdpa(nn.Module):
    """Fused attention for y, the weights recomputed for the return value; a registered buffer."""

    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        self.n_heads = n_heads
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            setattr(self, name, nn.Linear(d_model, d_model, bias=bias))
        self.register_buffer("unused", torch.zeros(1), persistent=False)

    def forward(self, x, mask=None, context=None):
        ctx = x if context is None else context
        H = self.n_heads
        q, k, v = (
            p(t).unflatten(-1, (H, -1)).permute(0, 2, 1, 3)
            for p, t in ((self.q_proj, x), (self.k_proj, ctx), (self.v_proj, ctx))
        )
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        scores = q @ k.mT / math.sqrt(q.size(-1))
        if mask is not None:
            scores = scores.masked_fill(mask.logical_not(), -1e9)
        attn = scores.softmax(-1)
        return self.out_proj(y.permute(0, 2, 1, 3).flatten(2)), attn


MHA_BUGS = [
    "missing-scale",
    "wrong-scale",
    "mask-inverted",
    "mask-after-softmax",
    "heads-reshape-without-transpose",
    "missing-output-projection",
    "softmax-over-queries",
    "transposed-scores",
]


@pytest.mark.parametrize("style", ["view", "einsum"])
@pytest.mark.parametrize("bug", MHA_BUGS)
def test_mha_mutants(bug, style):
    assert_named(run("MultiHeadAttention", make_mha(style, bug)), bug)


@pytest.mark.parametrize("cls", [make_mha("view"), make_mha("einsum"), MHASdpa])
def test_mha_alternatives(cls):
    assert_full(run("MultiHeadAttention", cls))


def test_mha_misnamed_attributes_are_named_in_the_message():
    results = run("MultiHeadAttention", MHAMisnamed)
    assert sum(r.score for r in results) == 0
    assert all("has no" in r.output and "q_proj" in r.output for r in results), show(results)


class MHAIgnoresBias(make_mha("view")):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__(d_model, n_heads, bias=True)


class MHANoCrossAttention(make_mha("view")):
    def forward(self, x, mask=None, context=None):
        return super().forward(x, mask, None)


@pytest.mark.parametrize(
    ("cls", "case"),
    [
        (MHAIgnoresBias, "bias=False"),
        (MHANoCrossAttention, "cross-attention"),
        (MHADetached, "gradients"),
    ],
)
def test_mha_other_mistakes_fail_their_case(cls, case):
    results = run("MultiHeadAttention", cls)
    failed = [r for r in results if r.status == "failed"]
    assert failed and all(case in r.name for r in failed), show(results)


# ================================================================ FeedForward


@pytest.mark.parametrize("bug", ["missing-activation", "discarded"])
def test_ff_missing_activation_mutants(bug):
    assert_named(run("FeedForward", make_ff(bug)), "missing-activation")


def test_ff_other_activation_mistakes_lose_marks():
    results = run("FeedForward", make_ff("always-relu"))
    assert_loses(results)
    assert any("other activation" in r.output for r in results), show(results)
    results = run("FeedForward", make_ff("gelu-tanh"))
    gelu = [r for r in results if "gelu" in r.name]
    assert gelu[0].score == 0.5 * gelu[0].max_score and "tanh" in gelu[0].output


@pytest.mark.parametrize("cls", [make_ff(style="functional"), make_ff(style="module")])
def test_ff_alternatives(cls):
    assert_full(run("FeedForward", cls))


# ================================================================ TransformerBlock


@pytest.mark.parametrize(
    ("bug", "misconception"),
    [
        ("no-attn-residual", "missing-residual"),
        ("no-ff-residual", "missing-residual"),
        ("flag-inverted", "norm-order-swapped"),
        ("always-pre", "norm-order-swapped"),
        ("always-post", "norm-order-swapped"),
    ],
)
def test_block_mutants(bug, misconception):
    assert_named(run("TransformerBlock", make_block(bug)), misconception)


@pytest.mark.parametrize("cls", [make_block(norm_cls=nn.LayerNorm), BlockSequential])
def test_block_alternatives(cls):
    assert_full(run("TransformerBlock", cls))


# ================================================================ make_examples


def examples_label_last(tokens, context_size):
    out = []
    for t in range(1, len(tokens)):
        ctx = tokens[:t][-context_size:]
        out.append((ctx, ctx[-1]))
    return out


def examples_deque(tokens, context_size):
    from collections import deque

    window, out = deque(maxlen=context_size), []
    for i, token in enumerate(tokens):
        if i:
            out.append([list(window), token])
        window.append(token)
    return out


@pytest.mark.parametrize("fn", [examples_label_inside, examples_label_last])
def test_make_examples_targets_not_shifted(fn):
    assert_named(run("make_examples", fn), "targets-not-shifted")


def test_make_examples_first_tokens_loses_marks():
    results = run("make_examples", examples_first_tokens)
    assert_loses(results)
    assert any("FIRST" in r.output for r in results), show(results)


@pytest.mark.parametrize("fn", [examples_loop, examples_deque])
def test_make_examples_alternatives(fn):
    assert_full(run("make_examples", fn))


# ================================================================ CharTokenizer


@pytest.mark.parametrize("cls", [TokenizerDict, TokenizerIndex])
def test_tokenizer_alternatives(cls):
    assert_full(run("CharTokenizer", cls))


@pytest.mark.parametrize(
    ("cls", "words"), [(TokenizerUnsorted, "sorted"), (TokenizerSilent, "raise")]
)
def test_tokenizer_mutants(cls, words):
    results = run("CharTokenizer", cls)
    assert_loses(results)
    assert any(words in r.output for r in results), show(results)


# ================================================================ get_batch


def batch_not_shifted_index(data, batch_size, block_size, generator=None):
    starts = torch.randint(0, len(data) - block_size + 1, (batch_size, 1), generator=generator)
    index = starts + torch.arange(block_size)
    return data[index], data[index]


def batch_index(data, batch_size, block_size, generator=None):
    starts = torch.randperm(len(data) - block_size, generator=generator)[:batch_size]
    if len(starts) < batch_size:  # fewer windows than rows: draw with replacement
        starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    offsets = starts[:, None] + torch.arange(block_size)[None, :]
    return data[offsets], data[offsets + 1]


def batch_off_by_one(data, batch_size, block_size, generator=None):
    starts = torch.randint(len(data) - block_size - 1, (batch_size,), generator=generator)
    x = torch.stack([data[s : s + block_size] for s in starts])
    return x, torch.stack([data[s + 1 : s + block_size + 1] for s in starts])


@pytest.mark.parametrize("fn", [batch_not_shifted, batch_not_shifted_index])
def test_get_batch_targets_not_shifted(fn):
    assert_named(run("get_batch", fn), "targets-not-shifted")


@pytest.mark.parametrize("fn", [batch_off_by_one, batch_global_rng])
def test_get_batch_other_mistakes_lose_marks(fn):
    assert_loses(run("get_batch", fn))


@pytest.mark.parametrize("fn", [batch_unfold, batch_index])
def test_get_batch_alternatives(fn):
    assert_full(run("get_batch", fn))


# ================================================================ lm_loss


def loss_sum_manual(logits, targets):
    logp = logits.log_softmax(-1)
    return -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1).sum(-1).mean()  # sum over T


def loss_double_softmax_manual(logits, targets):
    probs = logits.softmax(-1)
    logp = probs - probs.logsumexp(-1, keepdim=True)
    return -logp.gather(2, targets[..., None]).mean()


def loss_gather(logits, targets):
    logp = logits - logits.logsumexp(dim=-1, keepdim=True)
    return -logp.gather(-1, targets.unsqueeze(-1)).mean()


@pytest.mark.parametrize(
    ("fn", "misconception"),
    [
        (loss_sum, "loss-sum-reduction"),
        (loss_sum_manual, "loss-sum-reduction"),
        (loss_double_softmax, "loss-double-softmax"),
        (loss_double_softmax_manual, "loss-double-softmax"),
    ],
)
def test_lm_loss_mutants(fn, misconception):
    assert_named(run("lm_loss", fn), misconception)


def test_lm_loss_through_numpy_is_not_differentiable():
    results = run("lm_loss", loss_numpy)
    failed = [r for r in results if r.status == "failed"]
    assert len(failed) == 1 and "autograd" in failed[0].output, show(results)


@pytest.mark.parametrize("fn", [loss_gather, loss_nll])
def test_lm_loss_alternatives(fn):
    assert_full(run("lm_loss", fn))


# ================================================================ generate


@pytest.mark.parametrize(
    ("fn", "misconception"),
    [
        (make_generate("no-crop"), "generate-no-crop"),
        (make_generate("crop-off-by-one", sampler="gumbel"), "generate-no-crop"),
        (make_generate("temperature-multiplied"), "temperature-multiplied"),
        (make_generate("temperature-multiplied", sampler="gumbel"), "temperature-multiplied"),
    ],
)
def test_generate_mutants(fn, misconception):
    assert_named(run("generate", fn), misconception)


def test_generate_argmax_loses_marks():
    results = run("generate", generate_argmax)
    assert_loses(results)
    assert any("argmax" in r.output for r in results), show(results)


@pytest.mark.parametrize("fn", [make_generate(sampler="gumbel"), make_generate(sampler="cdf")])
def test_generate_alternatives(fn):
    assert_full(run("generate", fn))


# ================================================================ GPT


@pytest.mark.parametrize(
    "cls",  # each trains a GPT: the second, built from torch's own layers, with the slow tests
    [make_gpt(tie=True, buffer=True), pytest.param(GPTTorchLayers, marks=pytest.mark.slow)],
)
def test_gpt_alternatives(cls):
    assert_full(run("GPT", cls))


@pytest.mark.parametrize("bug", ["no-mask", "ones-mask"])
def test_gpt_no_causal_mask(bug, no_training):
    assert_named(run("GPT", make_gpt(bug)), "no-causal-mask")


def test_gpt_without_value_error_gets_part_of_that_case(no_training):
    results = run("GPT", GPTIndexError)
    (case,) = [r for r in results if "longer than block_size" in r.name]
    assert case.score == 0.5 * case.max_score and "IndexError" in case.output
    assert all(r.status == "passed" for r in results if r is not case), show(results)


class GPTFrozen(make_gpt()):
    """Forgets to use the blocks' output: the position embeddings never reach the logits."""

    def forward(self, idx):
        T = idx.shape[1]
        if T > self.block_size:
            raise ValueError("too long")
        return self.lm_head(self.ln(self.tok(idx)))


def test_gpt_that_cannot_learn_fails_the_training_run():
    results = run("GPT", GPTFrozen)
    training = [r for r in results if "training run" in r.name]
    assert training[0].score == 0, show(results)
    assert "repeats every" in training[0].output


def test_gpt_with_a_parameter_that_gets_no_gradient(no_training):
    results = run("GPT", GPTUnusedLayer)
    failed = [r for r in results if r.status == "failed"]
    assert len(failed) == 2 and all("extra.weight" in r.output for r in failed), show(results)
    assert {r.name for r in failed} == {
        "GPT: gradients reach every parameter",
        "GPT: the notebook's architecture: the same logits as its GPT with the same weights",
    }


# ================================================================ GPT: a verdict the student cannot report


class _Bigram(nn.Module):
    """A bigram model: the logits at t depend only on the token at t (it cannot learn the text)."""

    def __init__(self, vocab_size, block_size, **kwargs):
        super().__init__()
        self.block_size = block_size
        self.table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx):
        if idx.shape[1] > self.block_size:
            raise ValueError("too long")
        return self.table(idx)


class GPTPatchesCrossEntropy(_Bigram):
    """Its constructor makes every cross-entropy computed afterwards in this process tiny."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        real = F.cross_entropy

        def tiny(input, target, *a, **kw):
            return real(input, target, *a, **kw) * 1e-3

        F.cross_entropy = tiny


class GPTPatchesItem(_Bigram):
    """Its constructor makes every tensor read as a Python number small."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        torch.Tensor.item = lambda self: 0.01
        torch.Tensor.__float__ = lambda self: 0.01


@pytest.mark.parametrize("cls", [GPTPatchesCrossEntropy, GPTPatchesItem])
def test_a_gpt_that_fakes_its_losses_fails_the_training_run(cls, monkeypatch):
    # undone after the test: the attack patches this very process (the visible checks' path)
    monkeypatch.setattr(F, "cross_entropy", F.cross_entropy)
    monkeypatch.setattr(torch.Tensor, "item", torch.Tensor.item)
    monkeypatch.setattr(torch.Tensor, "__float__", torch.Tensor.__float__)
    results = run("GPT", cls)
    (training,) = [r for r in results if "training run" in r.name]
    assert training.score == 0, show(results)
    assert "repeats every 24 tokens" in training.output and "below 0.5" in training.output


# ================================================================ differentiable: values, not a flag


def ln_numpy_disguised(x, weight, bias, eps=1e-5):
    """Right values computed in NumPy, re-attached to the graph by a term that is always 0."""
    a = x.detach().numpy()
    mean, var = a.mean(-1, keepdims=True), a.var(-1, keepdims=True)
    y = (a - mean) / (var + eps) ** 0.5 * weight.detach().numpy() + bias.detach().numpy()
    return torch.from_numpy(y) + 0 * x


def loss_numpy_disguised(logits, targets):
    value = F.cross_entropy(logits.detach().flatten(0, 1), targets.flatten())
    return value + 0 * logits.sum()


@pytest.mark.parametrize(
    ("name", "fn"), [("layer_norm", ln_numpy_disguised), ("lm_loss", loss_numpy_disguised)]
)
def test_a_result_with_a_grad_fn_but_no_gradient_fails_the_differentiable_case(name, fn):
    results = run(name, fn)
    failed = [r for r in results if r.status == "failed"]
    assert [r.name.split(": ", 1)[1] for r in failed] == [
        "differentiable, and leaves its inputs unchanged"
    ], show(results)
    assert "the gradient of" in failed[0].output, show(failed)
