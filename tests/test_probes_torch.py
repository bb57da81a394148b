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
from training_mutants import with_top_p

from autograder import reference as R
from autograder.checks import run_in_process

NAMES_05 = [
    "layer_norm",
    "sinusoidal_positional_encoding",
    "MultiHeadAttention",
    "FeedForward",
    "TransformerBlock",
]
NAMES_06 = ["make_examples", "CharTokenizer", "get_batch", "GPT", "lm_loss", "generate"]


pytestmark = pytest.mark.usefixtures("one_thread")


def run(name, obj, **namespace):
    return run_in_process(name, obj, namespace=namespace)


def show(results):
    return "\n".join(
        f"{r.name}: {r.score}/{r.max_score} {r.misconceptions} {r.output}" for r in results
    )


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


def _stub_function(*args, **kwargs):
    raise NotImplementedError()


class _StubClass(nn.Module):
    def __init__(self, *args, **kwargs):
        raise NotImplementedError()


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
            assert "not implemented" in r.output, show([r])


# ================================================================ layer_norm


def ln_unbiased_var(x, weight, bias, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True)  # torch's default: unbiased
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


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


def ln_eps_outside(x, weight, bias, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    std = x.var(-1, keepdim=True, unbiased=False).sqrt()
    return (x - mean) / (std + eps) * weight + bias


def ln_eps_outside_std(x, weight, bias, eps=1e-5):
    return (
        weight * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True, correction=0) + eps)
        + bias
    )


def ln_torch(x, weight, bias, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], weight, bias, eps)


def ln_rsqrt(x, weight, bias, eps=1e-5):
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
    return torch.addcmul(bias, (x - mean) * torch.rsqrt(var + eps), weight)


def ln_in_place(x, weight, bias, eps=1e-5):
    x = x.detach()  # also breaks the graph
    x -= x.mean(-1, keepdim=True)
    return x / torch.sqrt((x**2).mean(-1, keepdim=True) + eps) * weight + bias


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


def pe_loop(n_positions, d_model, base=10000.0, swap=False, exponent="pair", split=False):
    P = torch.zeros(n_positions, d_model)
    for k in range(n_positions):
        for j in range(d_model):
            i2 = {"pair": j - j % 2, "column": j}[exponent]
            angle = k / base ** (i2 / d_model)
            even = (j % 2 == 0) != swap
            P[k, j] = math.sin(angle) if even else math.cos(angle)
    if split:
        half = (d_model + 1) // 2
        Q = torch.zeros_like(P)
        for k in range(n_positions):
            for i in range(half):
                Q[k, i] = math.sin(k / base ** (2 * i / d_model))
            for i in range(d_model - half):
                Q[k, half + i] = math.cos(k / base ** (2 * i / d_model))
        return Q
    return P


def pe_vector(n_positions, d_model, base=10000.0, swap=False, exponent="pair", split=False):
    pos = torch.arange(n_positions).unsqueeze(1).double()  # angles in float64, as asked
    if exponent == "pair":
        div = torch.exp(torch.arange(0, d_model, 2).double() * (-math.log(base) / d_model))
    else:  # i / d_model: the 2 dropped
        div = 1.0 / base ** (torch.arange((d_model + 1) // 2).double() / d_model)
    s, c = torch.sin(pos * div).float(), torch.cos(pos * div).float()
    if split:
        return torch.cat([s, c[:, : d_model // 2]], dim=1)
    if swap:
        s, c = c, s
    P = torch.zeros(n_positions, d_model)
    P[:, 0::2] = s
    P[:, 1::2] = c[:, : d_model // 2]
    return P


def _pe(fn, **kw):
    return lambda n_positions, d_model, base=10000.0: fn(n_positions, d_model, base, **kw)


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


def make_mha(style="view", bug=None):
    """A MultiHeadAttention class in one of two coding styles, right (bug=None) or with one bug."""

    class MHA(nn.Module):
        def __init__(self, d_model, n_heads, bias=True):
            super().__init__()
            self.h = n_heads
            self.q_proj = nn.Linear(d_model, d_model, bias=bias)
            self.k_proj = nn.Linear(d_model, d_model, bias=bias)
            self.v_proj = nn.Linear(d_model, d_model, bias=bias)
            self.out_proj = nn.Linear(d_model, d_model, bias=bias)

        def forward(self, x, mask=None, context=None):
            return (self.view_style if style == "view" else self.einsum_style)(x, mask, context)

        def view_style(self, x, mask, context):
            ctx = x if context is None else context
            B, n, d = x.shape
            H, dk = self.h, d // self.h

            def heads(t):
                if bug == "heads-reshape-without-transpose":
                    return t.reshape(B, H, -1, dk)
                return t.view(B, -1, H, dk).transpose(1, 2)

            q, k, v = heads(self.q_proj(x)), heads(self.k_proj(ctx)), heads(self.v_proj(ctx))
            if bug == "transposed-scores":
                scores = (k @ q.transpose(-2, -1)).transpose(-2, -1).transpose(-2, -1)
            else:
                scores = q @ k.transpose(-2, -1)
            scale = {"missing-scale": 1.0, "wrong-scale": dk}.get(bug, math.sqrt(dk))
            scores = scores / scale
            if mask is not None and bug != "mask-after-softmax":
                blocked = mask if bug == "mask-inverted" else ~mask
                scores = scores.masked_fill(blocked, float("-inf"))
            attn = F.softmax(scores, dim=-2 if bug == "softmax-over-queries" else -1)
            if mask is not None and bug == "mask-after-softmax":
                attn = attn.masked_fill(~mask, 0.0)
            z = attn @ v
            z = z.transpose(1, 2).contiguous().view(B, n, d)
            return (z if bug == "missing-output-projection" else self.out_proj(z)), attn

        def einsum_style(self, x, mask, context):
            ctx = x if context is None else context
            B, n, d = x.shape
            H, dk = self.h, d // self.h
            if bug == "heads-reshape-without-transpose":
                q = self.q_proj(x).reshape(B, H, n, dk).transpose(1, 2)
                k = self.k_proj(ctx).reshape(B, H, -1, dk).transpose(1, 2)
                v = self.v_proj(ctx).reshape(B, H, -1, dk).transpose(1, 2)
            else:
                q = self.q_proj(x).reshape(B, n, H, dk)
                k = self.k_proj(ctx).reshape(B, -1, H, dk)
                v = self.v_proj(ctx).reshape(B, -1, H, dk)
            if bug == "transposed-scores":
                scores = torch.einsum("bkhd,bqhd->bhkq", k, q)
            else:
                scores = torch.einsum("bqhd,bkhd->bhqk", q, k)
            scale = {"missing-scale": 1.0, "wrong-scale": math.sqrt(d)}.get(bug, dk**-0.5)
            scores = scores * scale if bug != "wrong-scale" else scores / scale
            if mask is not None and bug != "mask-after-softmax":
                keep = ~mask if bug == "mask-inverted" else mask
                scores = scores + torch.where(keep, 0.0, -1e9)
            attn = scores.softmax(2 if bug == "softmax-over-queries" else 3)
            if mask is not None and bug == "mask-after-softmax":
                attn = attn * mask
            z = torch.einsum("bhqk,bkhd->bqhd", attn, v).reshape(B, n, d)
            return (z if bug == "missing-output-projection" else self.out_proj(z)), attn

    return MHA


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


class MHAMisnamed(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        self.n_heads = n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)


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


class MHADetached(make_mha("view")):
    def forward(self, x, mask=None, context=None):
        y, attn = super().forward(x.detach(), mask, context)
        return y, attn


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


def make_ff(bug=None, style="functional"):
    class FF(nn.Module):
        def __init__(self, d_model, d_ff, activation="relu"):
            super().__init__()
            self.fc1 = nn.Linear(d_model, d_ff)
            self.fc2 = nn.Linear(d_ff, d_model)
            self.act = nn.ReLU() if activation == "relu" else nn.GELU()
            self.activation = activation

        def forward(self, x):
            h = self.fc1(x)
            if bug == "missing-activation":
                return self.fc2(h)
            if bug == "discarded":
                self.act(h)  # result thrown away
                return self.fc2(h)
            if bug == "always-relu":
                return self.fc2(F.relu(h))
            if bug == "gelu-tanh" and self.activation == "gelu":
                return self.fc2(F.gelu(h, approximate="tanh"))
            if style == "module":
                return self.fc2(self.act(h))
            return self.fc2(F.relu(h) if self.activation == "relu" else F.gelu(h))

    return FF


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


def make_block(bug=None, norm_cls=None):
    norm_cls = norm_cls or R.LayerNorm

    class Block(nn.Module):
        def __init__(self, d_model, n_heads, d_ff, norm_first=True, dropout=0.0):
            super().__init__()
            self.norm_first = norm_first if bug != "flag-inverted" else not norm_first
            self.attn = R.MultiHeadAttention(d_model, n_heads)
            self.ff = R.FeedForward(d_model, d_ff)
            self.ln1, self.ln2 = norm_cls(d_model), norm_cls(d_model)
            self.drop = nn.Dropout(dropout)

        def _sa(self, x, mask):
            return self.drop(self.attn(x, mask=mask)[0])

        def forward(self, x, mask=None):
            keep_a = 0.0 if bug == "no-attn-residual" else 1.0
            keep_f = 0.0 if bug == "no-ff-residual" else 1.0
            pre = {"always-pre": True, "always-post": False}.get(bug, self.norm_first)
            if pre:
                h = keep_a * x + self._sa(self.ln1(x), mask)
                return keep_f * h + self.drop(self.ff(self.ln2(h)))
            h = self.ln1(keep_a * x + self._sa(x, mask))
            return self.ln2(keep_f * h + self.drop(self.ff(h)))

    return Block


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


class BlockSequential(nn.Module):
    """nn.LayerNorm, sub-layers as methods, F.dropout instead of a dropout module."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=True, dropout=0.0):
        super().__init__()
        self.attn = make_mha("einsum")(d_model, n_heads)
        self.ff = make_ff(style="module")(d_model, d_ff)
        self.ln1 = nn.LayerNorm(d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.norm_first = norm_first
        self.p = dropout

    def _drop(self, t):
        return F.dropout(t, self.p, training=self.training)

    def forward(self, x, mask=None):
        if not self.norm_first:
            x = self.ln1(x + self._drop(self.attn(x, mask)[0]))
            return self.ln2(x + self._drop(self.ff(x)))
        x = x + self._drop(self.attn(self.ln1(x), mask)[0])
        return x + self._drop(self.ff(self.ln2(x)))


@pytest.mark.parametrize("cls", [make_block(norm_cls=nn.LayerNorm), BlockSequential])
def test_block_alternatives(cls):
    assert_full(run("TransformerBlock", cls))


# ================================================================ make_examples


def examples_label_inside(tokens, context_size):
    return [
        (tokens[max(0, t - context_size + 1) : t + 1], tokens[t]) for t in range(1, len(tokens))
    ]


def examples_label_last(tokens, context_size):
    out = []
    for t in range(1, len(tokens)):
        ctx = tokens[:t][-context_size:]
        out.append((ctx, ctx[-1]))
    return out


def examples_first_tokens(tokens, context_size):
    return [(tokens[:t][:context_size], tokens[t]) for t in range(1, len(tokens))]


def examples_loop(tokens, context_size):
    pairs = []
    context = []
    for token in tokens:
        if context:
            pairs.append((tuple(context), token))
        context = (context + [token])[-context_size:]
    return pairs


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


class TokenizerDict:
    def __init__(self, text):
        self.chars = sorted(set(text))
        self.itos = dict(enumerate(self.chars))
        self.stoi = {c: i for i, c in self.itos.items()}

    @property
    def vocab_size(self):
        return len(self.stoi)

    def encode(self, s):
        try:
            return [self.stoi[c] for c in s]
        except KeyError as exc:
            raise ValueError(f"unknown character {exc.args[0]!r}") from None

    def decode(self, ids):
        return "".join(self.itos[int(i)] for i in ids)


class TokenizerIndex:
    def __init__(self, text):
        self.vocab = self.chars = "".join(sorted(set(text)))  # a str of the characters
        self.vocab_size = len(self.vocab)

    def encode(self, s):
        ids = []
        for ch in s:
            if ch not in self.vocab:
                raise ValueError(f"{ch} is not in the vocabulary")
            ids.append(self.vocab.index(ch))
        return ids

    def decode(self, ids):
        return "".join(self.vocab[i] for i in ids)


class TokenizerUnsorted(TokenizerIndex):
    def __init__(self, text):
        self.vocab = "".join(dict.fromkeys(text))  # order of first appearance
        self.vocab_size = len(self.vocab)


class TokenizerSilent(TokenizerIndex):
    def encode(self, s):
        return [self.vocab.index(ch) for ch in s if ch in self.vocab]


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


def batch_not_shifted(data, batch_size, block_size, generator=None):
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[s : s + block_size] for s in starts])
    return x, x.clone()


def batch_not_shifted_index(data, batch_size, block_size, generator=None):
    starts = torch.randint(0, len(data) - block_size + 1, (batch_size, 1), generator=generator)
    index = starts + torch.arange(block_size)
    return data[index], data[index]


def batch_unfold(data, batch_size, block_size, generator=None):
    windows = data.unfold(0, block_size + 1, 1)  # (N - T, T + 1)
    rows = windows[torch.randint(len(windows), (batch_size,), generator=generator)]
    return rows[:, :-1], rows[:, 1:]


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


def batch_global_rng(data, batch_size, block_size, generator=None):
    return R.get_batch(data, batch_size, block_size)


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


def loss_sum(logits, targets):
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)), targets.reshape(-1), reduction="sum"
    )


def loss_sum_manual(logits, targets):
    logp = logits.log_softmax(-1)
    return -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1).sum(-1).mean()  # sum over T


def loss_double_softmax(logits, targets):
    probs = torch.softmax(logits, dim=-1)
    return F.cross_entropy(probs.view(-1, probs.shape[-1]), targets.view(-1))


def loss_double_softmax_manual(logits, targets):
    probs = logits.softmax(-1)
    logp = probs - probs.logsumexp(-1, keepdim=True)
    return -logp.gather(2, targets[..., None]).mean()


def loss_gather(logits, targets):
    logp = logits - logits.logsumexp(dim=-1, keepdim=True)
    return -logp.gather(-1, targets.unsqueeze(-1)).mean()


def loss_nll(logits, targets):
    B, T, V = logits.shape
    return F.nll_loss(F.log_softmax(logits, -1).transpose(1, 2), targets)  # (B, V, T) layout


def loss_numpy(logits, targets):
    import numpy as np

    lg = logits.detach().numpy()
    lp = lg - np.log(np.exp(lg).sum(-1, keepdims=True))
    return torch.tensor(-np.take_along_axis(lp, targets.numpy()[..., None], -1).mean())


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


def make_generate(bug=None, sampler="multinomial"):
    @torch.no_grad()
    def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        for _ in range(max_new_tokens):
            if bug == "no-crop":
                context = idx
            elif bug == "crop-off-by-one":
                context = idx[:, -(model.block_size + 1) :]
            else:
                context = idx[:, -model.block_size :]
            logits = model(context)[:, -1, :]
            logits = (
                logits * temperature if bug == "temperature-multiplied" else logits / temperature
            )
            if top_k is not None:
                values, _ = torch.topk(logits, top_k, dim=-1)
                logits[logits < values[:, -1:]] = -float("inf")
            probs = F.softmax(logits, dim=-1)
            if sampler == "multinomial":
                nxt = torch.multinomial(probs, num_samples=1, generator=generator)
            elif sampler == "gumbel":
                u = torch.rand(probs.shape, generator=generator).clamp_min(1e-12)
                nxt = (logits - torch.log(-torch.log(u))).argmax(-1, keepdim=True)
            else:  # inverse CDF
                u = torch.rand(probs.shape[0], 1, generator=generator)
                nxt = (probs.cumsum(-1) < u).sum(-1, keepdim=True).clamp_max(probs.shape[-1] - 1)
            idx = torch.cat((idx, nxt), dim=1)
        return idx

    return with_top_p(generate)


@with_top_p
def generate_categorical(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    """Samples with torch.distributions, ignoring the generator: the right distribution, but
    seeded samples cannot be reproduced (tests/test_checks_gaps.py)."""
    out = idx.clone().to(next(model.parameters()).device)
    for _ in range(max_new_tokens):
        logits = model(out[:, -model.block_size :])[:, -1] / temperature
        if top_k:
            kth = logits.sort(-1, descending=True).values[:, top_k - 1 : top_k]
            logits = torch.where(logits >= kth, logits, torch.full_like(logits, -1e30))
        nxt = torch.distributions.Categorical(logits=logits).sample()
        out = torch.cat([out, nxt[:, None]], 1)
    return out


@with_top_p
def generate_argmax(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    for _ in range(max_new_tokens):
        logits = model(idx[:, -model.block_size :])[:, -1]
        idx = torch.cat([idx, logits.argmax(-1, keepdim=True)], 1)
    return idx


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


def make_gpt(bug=None, tie=False, buffer=False):
    class GPT(nn.Module):
        def __init__(
            self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None, dropout=0.0
        ):
            super().__init__()
            self.block_size = block_size
            self.tok = nn.Embedding(vocab_size, d_model)
            self.pos = nn.Embedding(block_size, d_model)
            self.drop = nn.Dropout(dropout)
            self.blocks = nn.ModuleList(
                R.TransformerBlock(d_model, n_heads, d_ff or 4 * d_model, dropout=dropout)
                for _ in range(n_layers)
            )
            self.ln = nn.LayerNorm(d_model)
            self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
            if tie:
                self.lm_head.weight = self.tok.weight
            if buffer:
                self.register_buffer(
                    "causal", torch.tril(torch.ones(block_size, block_size)).bool()
                )
            for m in self.modules():
                if isinstance(m, nn.Linear | nn.Embedding):
                    nn.init.normal_(m.weight, std=0.02)

        def forward(self, idx):
            B, T = idx.shape
            if T > self.block_size:
                raise ValueError(f"T={T} > block_size={self.block_size}")
            x = self.drop(self.tok(idx) + self.pos(torch.arange(T)))
            if bug == "no-mask":
                mask = None
            elif bug == "ones-mask":
                mask = torch.ones(T, T, dtype=torch.bool)
            elif buffer:
                mask = self.causal[:T, :T]
            else:
                mask = torch.tril(torch.ones(T, T)).bool()
            for block in self.blocks:
                x = block(x, mask)
            return self.lm_head(self.ln(x))

    return GPT


class GPTTorchLayers(nn.Module):
    """nn.TransformerEncoder (nn.MultiheadAttention inside, a fused in_proj_weight), a position
    table as a bare parameter, a float causal mask, and the notebook's initialisation (weights of
    std 0.02) applied by a loop over the modules instead of self.apply."""

    def __init__(
        self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None, dropout=0.0
    ):
        super().__init__()
        self.block_size = block_size
        self.emb = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Parameter(torch.zeros(block_size, d_model))
        layer = nn.TransformerEncoderLayer(
            d_model, n_heads, d_ff or 4 * d_model, dropout, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.drop = nn.Dropout(dropout)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        for module in self.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, std=0.02)

    def forward(self, idx):
        T = idx.size(1)
        if T > self.block_size:
            raise ValueError("sequence longer than block_size")
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        h = self.encoder(self.drop(self.emb(idx) + self.pos[:T]), mask=mask, is_causal=True)
        return self.head(self.norm(h))


@pytest.mark.parametrize("cls", [make_gpt(tie=True, buffer=True), GPTTorchLayers])
def test_gpt_alternatives(cls):
    assert_full(run("GPT", cls))


@pytest.mark.parametrize("bug", ["no-mask", "ones-mask"])
def test_gpt_no_causal_mask(bug, no_training):
    assert_named(run("GPT", make_gpt(bug)), "no-causal-mask")


class GPTIndexError(make_gpt()):
    def forward(self, idx):
        x = self.drop(
            self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        )  # IndexError when T > block_size
        mask = torch.ones(idx.shape[1], idx.shape[1], dtype=torch.bool).tril()
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.ln(x))


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


class GPTUnusedLayer(make_gpt()):
    """A layer built in __init__ and never used: it would never train."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.extra = nn.Linear(4, 4)


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
