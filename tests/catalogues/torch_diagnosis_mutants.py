"""Wrong answers to notebooks 05-06, each with the diagnosis it should get (CATALOGUE). A data
module, not a test file: tests/catalogues/test_diagnosis_torch.py checks them; test_torch_catalogue.py and
test_torch_hidden_inputs.py reuse them."""

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch_probe_mutants import (
    R,
    batch_global_rng,
    batch_not_shifted,
    examples_first_tokens,
    examples_label_inside,
    loss_double_softmax,
    loss_sum,
    make_ff,
    make_generate,
    make_gpt,
    make_mha,
)
from training_mutants import with_top_p


def ln_no_eps(x, weight, bias, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    sigma = x.std(-1, keepdim=True, unbiased=False)
    return weight * (x - mu) / sigma + bias


def ln_eps_after_sqrt(x, weight, bias, eps=1e-5):
    mu = x.mean(dim=-1, keepdim=True)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)
    return (x - mu) / (var.sqrt() + eps) * weight + bias


def ln_torch_var(x, weight, bias, eps=1e-5):
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(
        x.var(-1, keepdim=True) + eps
    ) * weight + bias


def ln_batch_axis(x, weight, bias, eps=1e-5):
    mu = x.mean(0, keepdim=True)
    var = x.var(0, keepdim=True, unbiased=False)
    return (x - mu) / torch.sqrt(var + eps) * weight + bias


def ln_fixed_eps(x, weight, bias, eps=1e-5):
    return F.layer_norm(x, (x.shape[-1],), weight, bias, 1e-5)


def ln_in_place(x, weight, bias, eps=1e-5):
    """Right values, differentiable, but writes into the caller's x."""
    mu = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    y = (x - mu) / torch.sqrt(var + eps) * weight + bias
    with torch.no_grad():
        x.sub_(mu)
    return y


def pe_swapped(n_positions, d_model, base=10000.0):
    P = torch.zeros(n_positions, d_model)
    for k in range(n_positions):
        for i in range(0, d_model, 2):
            angle = k / base ** (i / d_model)
            P[k, i] = math.cos(angle)
            if i + 1 < d_model:
                P[k, i + 1] = math.sin(angle)
    return P


def pe_four_i(n_positions, d_model, base=10000.0):
    """The loop already steps by 2, and the exponent doubles it again: 4i/d."""
    P = torch.zeros(n_positions, d_model)
    for k in range(n_positions):
        for i in range(0, d_model, 2):
            angle = k / base ** (2 * i / d_model)
            P[k, i] = math.sin(angle)
            if i + 1 < d_model:
                P[k, i + 1] = math.cos(angle)
    return P


def pe_column_exponent(n_positions, d_model, base=10000.0):
    k = torch.arange(n_positions, dtype=torch.float64)[:, None]
    j = torch.arange(d_model, dtype=torch.float64)
    angle = k / base ** (j / d_model)
    P = torch.where(j.long() % 2 == 0, torch.sin(angle), torch.cos(angle))
    return P.float()


def pe_blocks(n_positions, d_model, base=10000.0):
    pos = torch.arange(n_positions, dtype=torch.float64).unsqueeze(1)
    freq = base ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.cat([torch.sin(pos * freq), torch.cos(pos * freq)[:, : d_model // 2]], 1).float()


def pe_default_base(n_positions, d_model, base=10000.0):
    return R.sinusoidal_positional_encoding(n_positions, d_model)


class MHAStudent(nn.Module):
    """A straightforward student MHA; subclasses change one line each."""

    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def split(self, t):
        B, n, _ = t.shape
        return t.view(B, n, self.n_heads, self.d_k).transpose(1, 2)

    def qkv(self, x, ctx):
        return (
            self.split(self.q_proj(x)),
            self.split(self.k_proj(ctx)),
            self.split(self.v_proj(ctx)),
        )

    def weights(self, q, k, mask):
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return torch.softmax(scores, dim=-1)

    def merge(self, z):
        B, H, n, dk = z.shape
        return z.transpose(1, 2).reshape(B, n, H * dk)

    def forward(self, x, mask=None, context=None):
        ctx = x if context is None else context
        q, k, v = self.qkv(x, ctx)
        attn = self.weights(q, k, mask)
        return self.out_proj(self.merge(attn @ v)), attn


class MHAQueryWithK(MHAStudent):
    def qkv(self, x, ctx):
        return (
            self.split(self.k_proj(x)),
            self.split(self.k_proj(ctx)),
            self.split(self.v_proj(ctx)),
        )


class MHAValueWithK(MHAStudent):
    def qkv(self, x, ctx):
        return (
            self.split(self.q_proj(x)),
            self.split(self.k_proj(ctx)),
            self.split(self.k_proj(ctx)),
        )


class MHAHeadsAveraged(MHAStudent):
    def forward(self, x, mask=None, context=None):
        ctx = x if context is None else context
        q, k, _ = self.qkv(x, ctx)
        attn = self.weights(q, k, mask)
        return self.out_proj(attn.mean(dim=1) @ self.v_proj(ctx)), attn


class MHANoOutProj(MHAStudent):
    def forward(self, x, mask=None, context=None):
        ctx = x if context is None else context
        q, k, v = self.qkv(x, ctx)
        attn = self.weights(q, k, mask)
        return self.merge(attn @ v), attn


class MHAMaskIgnored(MHAStudent):
    def weights(self, q, k, mask):
        return super().weights(q, k, None)


class MHAMaskInverted(MHAStudent):
    def weights(self, q, k, mask):
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask, -1e9)
        return scores.softmax(-1)


class MHAScaleDModel(MHAStudent):
    def weights(self, q, k, mask):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1] * self.n_heads)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return torch.softmax(scores, dim=-1)


class MHANoCross(MHAStudent):
    def forward(self, x, mask=None, context=None):
        return super().forward(x, mask)


class FFTanh(nn.Module):
    def __init__(self, d_model, d_ff, activation="relu"):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.act = nn.ReLU() if activation == "relu" else nn.GELU(approximate="tanh")

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class BlockStudent(nn.Module):
    """A student's block built from the reference's sub-modules (they pass their own checks);
    subclasses rewrite forward with one wiring mistake."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=True, dropout=0.0):
        super().__init__()
        self.norm_first = norm_first
        self.attn = R.MultiHeadAttention(d_model, n_heads)
        self.ff = R.FeedForward(d_model, d_ff)
        self.ln1, self.ln2 = R.LayerNorm(d_model), R.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def sa(self, x, mask):
        return self.dropout(self.attn(x, mask)[0])

    def forward(self, x, mask=None):
        if self.norm_first:
            h = x + self.sa(self.ln1(x), mask)
            return h + self.dropout(self.ff(self.ln2(h)))
        h = self.ln1(x + self.sa(x, mask))
        return self.ln2(h + self.dropout(self.ff(h)))


class BlockNormInsideResidual(BlockStudent):
    """Post-norm written as x + LN(sublayer(x))."""

    def forward(self, x, mask=None):
        if self.norm_first:
            h = x + self.sa(self.ln1(x), mask)
            return h + self.ff(self.ln2(h))
        h = x + self.ln1(self.sa(x, mask))
        return h + self.ln2(self.ff(h))


class BlockLn1Twice(BlockStudent):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.sa(self.ln1(x), mask)
            return x + self.ff(self.ln1(x))
        x = self.ln1(x + self.sa(x, mask))
        return self.ln1(x + self.ff(x))


class BlockMaskNotPassed(BlockStudent):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = x + self.attn(self.ln1(x))[0]
            return h + self.ff(self.ln2(h))
        h = self.ln1(x + self.attn(x)[0])
        return self.ln2(h + self.ff(h))


class BlockLnSwapped(BlockStudent):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = x + self.sa(self.ln2(x), mask)
            return h + self.ff(self.ln1(h))
        h = self.ln2(x + self.sa(x, mask))
        return self.ln1(h + self.ff(h))


class BlockParallel(BlockStudent):
    """Both sub-layers read x (GPT-J style): the feed-forward never sees attention's output."""

    def forward(self, x, mask=None):
        if self.norm_first:
            return x + self.sa(self.ln1(x), mask) + self.ff(self.ln2(x))
        h = self.ln1(x + self.sa(x, mask))
        return self.ln2(h + self.ff(x))


class BlockFFUnnormed(BlockStudent):
    """Pre-norm without ln2 before the feed-forward network."""

    def forward(self, x, mask=None):
        if self.norm_first:
            h = x + self.sa(self.ln1(x), mask)
            return h + self.ff(h)
        return super().forward(x, mask)


class BlockNoAttnResidual(BlockStudent):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.sa(self.ln1(x), mask)
            return h + self.ff(self.ln2(h))
        h = self.ln1(self.sa(x, mask))
        return self.ln2(h + self.ff(h))


class BlockFlagInverted(BlockStudent):
    def __init__(self, d_model, n_heads, d_ff, norm_first=True, dropout=0.0):
        super().__init__(d_model, n_heads, d_ff, not norm_first, dropout)


class BlockTuple(BlockStudent):
    """Forgets that self.attn returns a pair (y, attn)."""

    def forward(self, x, mask=None):
        h = x + self.attn(self.ln1(x), mask)
        return h + self.ff(self.ln2(h))


class BlockUnscaledAttention(BlockStudent):
    """A right block around the student's own attention, which forgets the 1/sqrt(d_k)."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=True, dropout=0.0):
        super().__init__(d_model, n_heads, d_ff, norm_first, dropout)
        self.attn = make_mha("einsum", "missing-scale")(d_model, n_heads)


class BlockLinearFF(BlockStudent):
    """A right block around the student's own feed-forward network, which has no activation."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=True, dropout=0.0):
        super().__init__(d_model, n_heads, d_ff, norm_first, dropout)
        self.ff = make_ff("missing-activation")(d_model, d_ff)


def examples_no_last(tokens, context_size):
    return [(tokens[max(0, t - context_size) : t], tokens[t]) for t in range(1, len(tokens) - 1)]


class TokenizerUnsorted:
    def __init__(self, text):
        self.chars = list(dict.fromkeys(text))
        self.vocab_size = len(self.chars)
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    def encode(self, s):
        if any(c not in self.stoi for c in s):
            raise ValueError(f"unknown character in {s!r}")
        return [self.stoi[c] for c in s]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


class TokenizerLength(TokenizerUnsorted):
    def __init__(self, text):
        self.chars = sorted(set(text))
        self.vocab_size = len(text)  # the text's length, not the number of distinct characters
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    def encode(self, s):
        for c in s:
            if c not in self.stoi:
                raise ValueError(f"character {c!r} is not in the vocabulary")
        return [self.stoi[c] for c in s]


class TokenizerSkips(TokenizerLength):
    def __init__(self, text):
        super().__init__(text)
        self.vocab_size = len(self.chars)

    def encode(self, s):
        return [self.stoi[c] for c in s if c in self.stoi]  # unknown characters dropped


def batch_last_window_missing(data, batch_size, block_size, generator=None):
    ix = torch.randint(len(data) - block_size - 1, (batch_size,), generator=generator)
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in ix])
    return x, y


def loss_shift_again(logits, targets):
    V = logits.size(-1)
    return F.cross_entropy(logits[:, :-1].reshape(-1, V), targets[:, 1:].reshape(-1))


def loss_probabilities(logits, targets):
    return F.nll_loss(logits.softmax(-1).flatten(0, 1), targets.flatten())


def loss_mean_over_batch(logits, targets):
    logp = F.log_softmax(logits, dim=-1)
    return -logp.gather(-1, targets[..., None]).sum() / logits.shape[0]


@with_top_p
def generate_ignores_top_k(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    for _ in range(max_new_tokens):
        logits = model(idx[:, -model.block_size :])[:, -1, :] / temperature
        probs = torch.softmax(logits, -1)
        idx = torch.cat([idx, torch.multinomial(probs, 1, generator=generator)], 1)
    return idx


@with_top_p
def generate_no_temperature(
    model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None
):
    for _ in range(max_new_tokens):
        logits = model(idx[:, -model.block_size :])[:, -1, :]
        if top_k is not None:
            kth = torch.topk(logits, top_k).values[:, [-1]]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        nxt = torch.multinomial(logits.softmax(-1), 1, generator=generator)
        idx = torch.cat([idx, nxt], 1)
    return idx


def loss_unflattened(logits, targets):
    return F.cross_entropy(logits, targets)


@with_top_p
def generate_greedy(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    for _ in range(max_new_tokens):
        logits = model(idx[:, -model.block_size :])[:, -1, :]
        idx = torch.cat([idx, logits.argmax(-1, keepdim=True)], dim=1)
    return idx


def gpt_with_mask(build):
    """The test catalogue's GPT (test_probes_torch.make_gpt) with its causal mask replaced."""

    class GPT(make_gpt()):
        def forward(self, idx):
            B, T = idx.shape
            if T > self.block_size:
                raise ValueError(f"T={T} > block_size={self.block_size}")
            x = self.drop(self.tok(idx) + self.pos(torch.arange(T)))
            mask = build(T)
            for block in self.blocks:
                x = block(x, mask)
            return self.lm_head(self.ln(x))

    return GPT


class GPTIndexError(make_gpt()):
    def forward(self, idx):
        x = self.drop(self.tok(idx) + self.pos(torch.arange(idx.shape[1])))
        mask = torch.tril(torch.ones(idx.shape[1], idx.shape[1], dtype=torch.bool))
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.ln(x))


class GPTSpareLayer(make_gpt()):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.proj = nn.Linear(8, 8)  # built, never used


class GPTNoBlockSize(make_gpt()):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.T = self.block_size
        del self.block_size

    def forward(self, idx):
        if idx.shape[1] > self.T:
            raise ValueError("too long")
        mask = torch.ones(idx.shape[1], idx.shape[1], dtype=torch.bool).tril()
        x = self.drop(self.tok(idx) + self.pos(torch.arange(idx.shape[1])))
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.ln(x))


class GPTFullMask(make_gpt()):
    """The causal mask built once for block_size and never cut to the sequence's length."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register_buffer("mask", torch.ones(self.block_size, self.block_size).tril().bool())

    def forward(self, idx):
        T = idx.shape[1]
        if T > self.block_size:
            raise ValueError(f"T={T} > block_size={self.block_size}")
        x = self.drop(self.tok(idx) + self.pos(torch.arange(T)))
        for block in self.blocks:
            x = block(x, self.mask)
        return self.lm_head(self.ln(x))


class GPTNoHead(make_gpt()):
    def forward(self, idx):
        T = idx.shape[1]
        if T > self.block_size:
            raise ValueError(f"T={T} > block_size={self.block_size}")
        x = self.drop(self.tok(idx) + self.pos(torch.arange(T)))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        for block in self.blocks:
            x = block(x, mask)
        return self.ln(x)


class GPTNoTokens(make_gpt()):
    """Positions only: the token embedding never reaches the blocks."""

    def forward(self, idx):
        T = idx.shape[1]
        if T > self.block_size:
            raise ValueError(f"T={T} > block_size={self.block_size}")
        x = self.pos(torch.arange(T)).expand(idx.shape[0], T, -1) + 0 * self.tok.weight.sum()
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.ln(x))


class GPTBlocksSkipped(make_gpt()):
    """The blocks' outputs are thrown away."""

    def forward(self, idx):
        T = idx.shape[1]
        if T > self.block_size:
            raise ValueError(f"T={T} > block_size={self.block_size}")
        x = self.drop(self.tok(idx) + self.pos(torch.arange(T)))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        for block in self.blocks:
            block(x, mask)
        return self.lm_head(self.ln(x))


def _ones(T):
    return torch.ones(T, T, dtype=torch.bool)


# (key, graded name, the wrong answer, expected id or None, key phrase of the message or None)
CATALOGUE = [
    # layer_norm
    ("ln-no-eps", "layer_norm", ln_no_eps, None, "without eps"),
    ("ln-eps-after-sqrt", "layer_norm", ln_eps_after_sqrt, "layernorm-eps-outside-sqrt", None),
    ("ln-torch-var", "layer_norm", ln_torch_var, "layernorm-unbiased-variance", None),
    ("ln-batch-axis", "layer_norm", ln_batch_axis, "layernorm-wrong-axis", None),
    ("ln-fixed-eps", "layer_norm", ln_fixed_eps, None, "use the eps argument"),
    ("ln-in-place", "layer_norm", ln_in_place, None, "modified in place"),
    # positional encoding
    ("pe-swapped", "sinusoidal_positional_encoding", pe_swapped, "pe-sin-cos-swapped", None),
    ("pe-4i", "sinusoidal_positional_encoding", pe_four_i, "pe-wrong-exponent", None),
    (
        "pe-column",
        "sinusoidal_positional_encoding",
        pe_column_exponent,
        "pe-wrong-exponent",
        None,
    ),
    ("pe-blocks", "sinusoidal_positional_encoding", pe_blocks, "pe-not-interleaved", None),
    ("pe-base", "sinusoidal_positional_encoding", pe_default_base, None, "use the base argument"),
    # MultiHeadAttention
    ("mha-q-with-k", "MultiHeadAttention", MHAQueryWithK, None, "queries are computed with k_proj"),
    ("mha-v-with-k", "MultiHeadAttention", MHAValueWithK, None, "values are computed with k_proj"),
    ("mha-averaged", "MultiHeadAttention", MHAHeadsAveraged, "heads-averaged", None),
    ("mha-no-out", "MultiHeadAttention", MHANoOutProj, "missing-output-projection", None),
    ("mha-mask-ignored", "MultiHeadAttention", MHAMaskIgnored, "mask-ignored", None),
    ("mha-mask-inverted", "MultiHeadAttention", MHAMaskInverted, "mask-inverted", None),
    ("mha-scale-d", "MultiHeadAttention", MHAScaleDModel, "wrong-scale", None),
    (
        "mha-no-scale",
        "MultiHeadAttention",
        make_mha("einsum", "missing-scale"),
        "missing-scale",
        None,
    ),
    (
        "mha-reshape",
        "MultiHeadAttention",
        make_mha("view", "heads-reshape-without-transpose"),
        "heads-reshape-without-transpose",
        None,
    ),
    (
        "mha-over-queries",
        "MultiHeadAttention",
        make_mha("einsum", "softmax-over-queries"),
        "softmax-over-queries",
        None,
    ),
    (
        "mha-mask-after",
        "MultiHeadAttention",
        make_mha("view", "mask-after-softmax"),
        "mask-after-softmax",
        None,
    ),
    (
        "mha-transposed",
        "MultiHeadAttention",
        make_mha("einsum", "transposed-scores"),
        "transposed-scores",
        None,
    ),
    ("mha-no-cross", "MultiHeadAttention", MHANoCross, None, "keys and values come from context"),
    # FeedForward
    ("ff-linear", "FeedForward", make_ff("missing-activation"), "missing-activation", None),
    ("ff-always-relu", "FeedForward", make_ff("always-relu"), None, "other activation"),
    ("ff-tanh", "FeedForward", FFTanh, None, "tanh approximation"),
    # TransformerBlock
    ("block-norm-inside", "TransformerBlock", BlockNormInsideResidual, None, "before the residual"),
    ("block-ln1-twice", "TransformerBlock", BlockLn1Twice, None, "ln2 is never used"),
    ("block-mask-not-passed", "TransformerBlock", BlockMaskNotPassed, None, "ignores the mask"),
    ("block-ln-swapped", "TransformerBlock", BlockLnSwapped, None, "wrong way round"),
    ("block-parallel", "TransformerBlock", BlockParallel, None, "Each half is right on its own"),
    ("block-ff-unnormed", "TransformerBlock", BlockFFUnnormed, None, "feed-forward half is wrong"),
    (
        "block-own-attention",
        "TransformerBlock",
        BlockUnscaledAttention,
        None,
        "the attention half is wrong: look at ln1, attn and the residual around them (if "
        "MultiHeadAttention fails its own checks, fix it first)",
    ),
    (
        "block-own-ff",
        "TransformerBlock",
        BlockLinearFF,
        None,
        "the feed-forward half is wrong: look at ln2, ff and the residual around them (if "
        "FeedForward fails its own checks, fix it first)",
    ),
    ("block-no-attn-res", "TransformerBlock", BlockNoAttnResidual, "missing-residual", None),
    ("block-flag", "TransformerBlock", BlockFlagInverted, "norm-order-swapped", None),
    ("block-tuple", "TransformerBlock", BlockTuple, None, "returns a pair"),
    # make_examples
    ("ex-label-inside", "make_examples", examples_label_inside, "targets-not-shifted", None),
    ("ex-first-tokens", "make_examples", examples_first_tokens, None, "FIRST"),
    ("ex-no-last", "make_examples", examples_no_last, None, "last example"),
    # CharTokenizer
    ("tok-unsorted", "CharTokenizer", TokenizerUnsorted, None, "sorted"),
    ("tok-length", "CharTokenizer", TokenizerLength, None, "distinct characters"),
    ("tok-skips", "CharTokenizer", TokenizerSkips, None, "not in the vocabulary"),
    # get_batch
    ("batch-not-shifted", "get_batch", batch_not_shifted, "targets-not-shifted", None),
    ("batch-global-rng", "get_batch", batch_global_rng, None, "reproducible"),
    ("batch-last-window", "get_batch", batch_last_window_missing, None, "exactly one window"),
    # lm_loss
    ("loss-sum", "lm_loss", loss_sum, "loss-sum-reduction", None),
    ("loss-over-batch", "lm_loss", loss_mean_over_batch, "loss-sum-reduction", None),
    ("loss-softmax", "lm_loss", loss_double_softmax, "loss-double-softmax", None),
    ("loss-shift", "lm_loss", loss_shift_again, None, "shifted once more"),
    ("loss-probs", "lm_loss", loss_probabilities, None, "log-probabilities"),
    ("loss-unflattened", "lm_loss", loss_unflattened, None, "flatten the logits to (B*T, V)"),
    # generate
    ("gen-no-crop", "generate", make_generate("no-crop"), "generate-no-crop", None),
    (
        "gen-temperature",
        "generate",
        make_generate("temperature-multiplied", sampler="gumbel"),
        "temperature-multiplied",
        None,
    ),
    ("gen-greedy", "generate", generate_greedy, "generate-argmax", "argmax"),
    (
        "gen-no-temperature",
        "generate",
        generate_no_temperature,
        None,
        "as if the temperature were 1",
    ),
    ("gen-top-k", "generate", generate_ignores_top_k, "top-k-ignored", "not among the"),
    # GPT
    ("gpt-no-mask", "GPT", make_gpt("no-mask"), "no-causal-mask", None),
    ("gpt-ones", "GPT", gpt_with_mask(_ones), "no-causal-mask", None),
    ("gpt-inverted", "GPT", gpt_with_mask(lambda T: ~_ones(T).tril()), "mask-inverted", None),
    ("gpt-upper", "GPT", gpt_with_mask(lambda T: _ones(T).triu()), "mask-inverted", None),
    ("gpt-no-diagonal", "GPT", gpt_with_mask(lambda T: _ones(T).tril(-1)), "mask-off-by-one", None),
    ("gpt-one-ahead", "GPT", gpt_with_mask(lambda T: _ones(T).tril(1)), "mask-off-by-one", None),
    ("gpt-index-error", "GPT", GPTIndexError, "gpt-no-length-check", "IndexError"),
    ("gpt-spare-layer", "GPT", GPTSpareLayer, None, "get no gradient"),
    ("gpt-no-block-size", "GPT", GPTNoBlockSize, None, "no attribute block_size"),
    ("gpt-full-mask", "GPT", GPTFullMask, "gpt-fixed-length", "sized for block_size"),
    ("gpt-no-head", "GPT", GPTNoHead, None, "vocab_size"),
    ("gpt-no-tokens", "GPT", GPTNoTokens, None, "tok_emb"),
    ("gpt-blocks-skipped", "GPT", GPTBlocksSkipped, None, "get no gradient (e.g. blocks.0"),
]
