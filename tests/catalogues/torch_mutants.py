"""More wrong answers to notebooks 05-06 (issue 19), each with the diagnosis it should get, and
more right answers written another way. test_torch_catalogue.py measures them together with
test_diagnosis_torch.py's catalogue.

Entries: (key, graded name, the answer, expected id or None, key phrase of the message or
None). A phrase is required for entries without an id: the message must say what was seen.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch_gap_mutants import (
    BlockAfterSum,
    BlockAlwaysDrops,
    BlockDropsTheInput,
    BlockKeepProbability,
    BlockNoDropout,
    BlockNotRescaled,
    BlockSeededInside,
    TokenizerKeyError,
    loss_view,
    pe_float64,
)
from torch_probe_mutants import R, make_mha
from training_mutants import with_top_p

# ================================================================ 05: layer_norm


def ln_sqrt_of_std(x, weight, bias, eps=1e-5):
    """The lecture's misprint: (x - mu) / sqrt(sigma)."""
    mu = x.mean(-1, keepdim=True)
    sigma = x.std(-1, keepdim=True, correction=0)
    return (x - mu) / torch.sqrt(sigma + eps) * weight + bias


def ln_no_affine(x, weight, bias, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(((x - mu) ** 2).mean(-1, keepdim=True) + eps)


def ln_whole_tensor(x, weight, bias, eps=1e-5):
    return (x - x.mean()) / torch.sqrt(x.var(correction=0) + eps) * weight + bias


def ln_std_unbiased_outside(x, weight, bias, eps=1e-5):
    return (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + eps) * weight + bias


# ================================================================ 05: positional encoding


def pe_float32_exp(n_positions, d_model, base=10000.0):
    k = torch.arange(n_positions).float()[:, None]
    div = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(base) / d_model))
    P = torch.zeros(n_positions, d_model)
    P[:, 0::2] = torch.sin(k * div)
    P[:, 1::2] = torch.cos(k * div)[:, : d_model // 2]
    return P


def pe_float32_pow(n_positions, d_model, base=10000.0):
    k = torch.arange(n_positions, dtype=torch.float32)[:, None]
    angle = k / base ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    P = torch.zeros(n_positions, d_model)
    P[:, 0::2] = torch.sin(angle)
    P[:, 1::2] = torch.cos(angle)[:, : d_model // 2]
    return P


def pe_i_over_d(n_positions, d_model, base=10000.0):
    """The 2 dropped: k / base^(i/d)."""
    k = torch.arange(n_positions, dtype=torch.float64)[:, None]
    i = torch.arange((d_model + 1) // 2, dtype=torch.float64)
    angle = k / base ** (i / d_model)
    P = torch.zeros(n_positions, d_model, dtype=torch.float64)
    P[:, 0::2] = torch.sin(angle)
    P[:, 1::2] = torch.cos(angle)[:, : d_model // 2]
    return P.float()


# ================================================================ 05: MultiHeadAttention


class MHAOneSlip(make_mha("view")):
    """A view-style attention with one slip in the weights (subclasses say which)."""

    def weights(self, scores, mask):
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return scores.softmax(-1)

    def forward(self, x, mask=None, context=None):
        ctx = x if context is None else context
        B, n, d = x.shape
        H = self.h
        q, k, v = (
            p(t).view(B, -1, H, d // H).transpose(1, 2)
            for p, t in ((self.q_proj, x), (self.k_proj, ctx), (self.v_proj, ctx))
        )
        attn = self.weights(q @ k.transpose(-2, -1) / math.sqrt(d // H), mask)
        return self.out_proj((attn @ v).transpose(1, 2).reshape(B, n, d)), attn


class MHAMaskZero(MHAOneSlip):
    """Masked scores set to 0 instead of -inf."""

    def weights(self, scores, mask):
        return (scores if mask is None else scores.masked_fill(~mask, 0.0)).softmax(-1)


class MHASoftmaxHeads(MHAOneSlip):
    """The softmax over dim=1, the heads."""

    def weights(self, scores, mask):
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return scores.softmax(1)


class MHAScaleDk(make_mha("view", "wrong-scale")):
    pass


class MHAWeightsAveraged(make_mha("view")):
    """Returns the weights averaged over the heads (B, n, n_k)."""

    def forward(self, x, mask=None, context=None):
        y, attn = super().forward(x, mask, context)
        return y, attn.mean(1)


# ================================================================ 05: FeedForward


def make_ff_variant(kind):
    class FF(nn.Module):
        def __init__(self, d_model, d_ff, activation="relu"):
            super().__init__()
            self.fc1 = nn.Linear(d_model, d_ff)
            self.fc2 = nn.Linear(d_ff, d_model, bias=kind != "no-fc2-bias")
            self.act = F.relu if activation == "relu" else F.gelu
            if kind == "default-gelu" and activation == "relu":
                self.act = F.gelu
            self.kind = kind

        def forward(self, x):
            if self.kind == "act-after":
                return self.act(self.fc2(self.fc1(x)))
            return self.fc2(self.act(self.fc1(x)))

    if kind == "default-gelu":

        class Default(FF):
            def __init__(self, d_model, d_ff, activation="gelu"):
                super().__init__(d_model, d_ff, activation)

        return Default
    return FF


# ================================================================ 05: TransformerBlock


class BlockBase(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, norm_first=True, dropout=0.0):
        super().__init__()
        self.norm_first = norm_first
        self.attn = R.MultiHeadAttention(d_model, n_heads)
        self.ff = R.FeedForward(d_model, d_ff)
        self.ln1, self.ln2 = R.LayerNorm(d_model), R.LayerNorm(d_model)
        self.p = dropout


class BlockNoFFResidual(BlockBase):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = x + self.attn(self.ln1(x), mask)[0]
            return self.ff(self.ln2(h))
        h = self.ln1(x + self.attn(x, mask)[0])
        return self.ln2(self.ff(h))


class BlockAlwaysPost(BlockBase):
    def forward(self, x, mask=None):
        h = self.ln1(x + self.attn(x, mask)[0])
        return self.ln2(h + self.ff(h))


# ================================================================ 06: data


def examples_extra_empty(tokens, context_size):
    return [(list(tokens[max(0, t - context_size) : t]), tokens[t]) for t in range(len(tokens))]


def examples_one_more(tokens, context_size):
    return [
        (list(tokens[max(0, t - context_size - 1) : t]), tokens[t]) for t in range(1, len(tokens))
    ]


def examples_one_less(tokens, context_size):
    return [
        (list(tokens[max(0, t - context_size + 1) : t]), tokens[t]) for t in range(1, len(tokens))
    ]


class TokenizerCaseless:
    """Sorts the characters ignoring case."""

    def __init__(self, text):
        self.chars = sorted(set(text), key=str.lower)
        self.vocab_size = len(self.chars)
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    def encode(self, s):
        missing = [c for c in s if c not in self.stoi]
        if missing:
            raise ValueError(f"unknown character {missing[0]!r}")
        return [self.stoi[c] for c in s]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


class TokenizerReversed(TokenizerCaseless):
    def __init__(self, text):
        super().__init__(text)
        self.chars = sorted(set(text), reverse=True)
        self.stoi = {c: i for i, c in enumerate(self.chars)}


class TokenizerDecodeList(TokenizerCaseless):
    def __init__(self, text):
        super().__init__(text)
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    def decode(self, ids):
        return [self.chars[i] for i in ids]


class TokenizerAlwaysRaises(TokenizerDecodeList):
    """encode raises ValueError for everything: no points for the error tests."""

    def encode(self, s):
        raise ValueError(f"cannot encode {s!r}")


def batch_swapped(data, batch_size, block_size, generator=None):
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[s : s + block_size] for s in starts])
    y = torch.stack([data[s + 1 : s + 1 + block_size] for s in starts])
    return y, x


def batch_float(data, batch_size, block_size, generator=None):
    x, y = R.get_batch(data, batch_size, block_size, generator)
    return x.float(), y.float()


def batch_one_start(data, batch_size, block_size, generator=None):
    s = int(torch.randint(len(data) - block_size, (1,), generator=generator))
    x = data[s : s + block_size].repeat(batch_size, 1)
    return x, data[s + 1 : s + 1 + block_size].repeat(batch_size, 1)


# ================================================================ 06: lm_loss


def loss_detached(logits, targets):
    return F.cross_entropy(logits.detach().flatten(0, 1), targets.flatten())


def loss_sum_over_time(logits, targets):
    logp = logits.log_softmax(-1).gather(-1, targets[..., None])[..., 0]
    return -logp.sum(0).mean()


# ================================================================ 06: generate


def generate_with(context, position):
    """generate with the context cut by `context(idx, block_size)` and the prediction read at
    `position`: the right answer is (last block_size tokens, -1)."""

    @torch.no_grad()
    def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        for _ in range(max_new_tokens):
            logits = model(context(idx, model.block_size))[:, position, :] / temperature
            if top_k is not None:
                kth = torch.topk(logits, top_k).values[:, [-1]]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            nxt = torch.multinomial(logits.softmax(-1), 1, generator=generator)
            idx = torch.cat([idx, nxt], 1)
        return idx

    return with_top_p(generate)


gen_crop_oldest = generate_with(lambda idx, T: idx[:, :T], -1)  # the OLDEST tokens kept
gen_first_position = generate_with(lambda idx, T: idx[:, -T:], 0)  # position 0's logits


@with_top_p
@torch.no_grad()
def gen_global_rng(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    return R.generate(model, idx, max_new_tokens, temperature, top_k)


@with_top_p
@torch.no_grad()
def gen_power(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    """Right: softmax(z / T) written as p ** (1 / T), renormalised."""
    for _ in range(max_new_tokens):
        p = model(idx[:, -model.block_size :])[:, -1, :].softmax(-1)
        if top_k is not None:
            kth = torch.topk(p, top_k).values[:, [-1]]
            p = torch.where(p < kth, torch.zeros_like(p), p)
        p = p ** (1.0 / temperature)
        nxt = torch.multinomial(p / p.sum(-1, keepdim=True), 1, generator=generator)
        idx = torch.cat([idx, nxt], 1)
    return idx


# ================================================================ 06: GPT


class GPTBase(nn.Module):
    """The notebook's GPT, one knob per mistake (subclasses set them)."""

    norm_first, head_bias, emb_dropout, block_dropout, final_norm = True, False, True, True, True
    use_ln_f, scale, d_ff_default = True, False, 4
    block_cls = R.TransformerBlock
    norm_cls = R.LayerNorm

    def __init__(
        self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None, dropout=0.0
    ):
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(block_size, d_model)
        self.dropout = nn.Dropout(dropout if self.emb_dropout else 0.0)
        self.blocks = nn.ModuleList(
            self.block_cls(
                d_model,
                n_heads,
                d_ff or self.d_ff_default * d_model,
                norm_first=self.norm_first,
                dropout=dropout if self.block_dropout else 0.0,
            )
            for _ in range(n_layers)
        )
        if self.final_norm:
            self.ln_f = self.norm_cls(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=self.head_bias)
        for m in self.modules():
            if isinstance(m, nn.Linear | nn.Embedding):
                nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx):
        T = idx.shape[-1]
        if T > self.block_size:
            raise ValueError("too long")
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(T))
        if self.scale:
            x = x * math.sqrt(x.shape[-1])
        x = self.dropout(x)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        for block in self.blocks:
            x = block(x, mask)
        if self.final_norm and self.use_ln_f:
            x = self.ln_f(x)
        return self.head(x)


def gpt(**knobs):
    return type("GPT", (GPTBase,), knobs)


class TransformerBlock(R.TransformerBlock):
    """Notebook 05's block with its attention residual forgotten (as imported into 06)."""

    def forward(self, x, mask=None):
        if self.norm_first:
            x = self.dropout(self.attn(self.ln1(x), mask)[0])
            return x + self.dropout(self.ff(self.ln2(x)))
        return super().forward(x, mask)


class LayerNorm(R.LayerNorm):
    """Notebook 05's LayerNorm with the unbiased variance (as imported into 06)."""

    def forward(self, x):
        mu = x.mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(x.var(-1, keepdim=True) + self.eps) * self.weight + self.bias


class BlockForgetsThePair(R.TransformerBlock):
    """Notebook 05's block adding attention's (y, attn) pair to x: it raises inside GPT."""

    def forward(self, x, mask=None):
        h = x + self.attn(self.ln1(x), mask)
        return h + self.ff(self.ln2(h))


BlockForgetsThePair.__name__ = "TransformerBlock"


class BlockWithUnbiasedNorm(R.TransformerBlock):
    def __init__(self, d_model, *args, **kwargs):
        super().__init__(d_model, *args, **kwargs)
        self.ln1, self.ln2 = LayerNorm(d_model), LayerNorm(d_model)


BlockWithUnbiasedNorm.__name__ = "TransformerBlock"


# ---------------------------------------------------------------- right GPTs, other styles


class FusedBlock(nn.Module):
    """GPT-2's own layout: ln_1, attn (one fused c_attn, c_proj), ln_2, mlp (c_fc, c_proj)."""

    def __init__(self, d, n_heads, d_ff, dropout=0.0):
        super().__init__()
        self.h = n_heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, d_ff), nn.ReLU(), nn.Linear(d_ff, d))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask):
        B, T, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=-1)
        q, k, v = (t.view(B, T, self.h, -1).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.drop(self.c_proj(y.transpose(1, 2).reshape(B, T, d)))
        return x + self.drop(self.mlp(self.ln_2(x)))


class GPTFused(nn.Module):
    """Other names (wte, wpe, h, lm_head), the head made before the blocks, the positions as a
    bare (1, T, d) parameter, fused attention, blocks in an nn.Sequential."""

    def __init__(
        self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None, dropout=0.0
    ):
        super().__init__()
        self.block_size = block_size
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.wte = nn.Embedding(vocab_size, d_model)
        self.wpe = nn.Parameter(torch.randn(1, block_size, d_model) * 0.02)
        self.drop = nn.Dropout(dropout)
        self.h = nn.Sequential(
            *[FusedBlock(d_model, n_heads, d_ff or 4 * d_model, dropout) for _ in range(n_layers)]
        )
        self.ln = nn.LayerNorm(d_model)
        for m in self.modules():
            if isinstance(m, nn.Linear | nn.Embedding):
                nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx):
        T = idx.shape[1]
        if T > self.block_size:
            raise ValueError(f"{T} > block_size")
        x = self.drop(self.wte(idx) + self.wpe[:, :T])
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        for block in self.h:
            x = block(x, mask)
        return self.lm_head(self.ln(x))


class GPTHeadMatrix(GPTBase):
    """The head as a bare (d, V) matrix, tied to nothing, applied with @."""

    def __init__(self, vocab_size, block_size, d_model=128, **kwargs):
        super().__init__(vocab_size, block_size, d_model, **kwargs)
        del self.head
        self.W_out = nn.Parameter(torch.randn(d_model, vocab_size) * 0.02)

    def forward(self, idx):
        self.head = lambda x: x @ self.W_out
        return super().forward(idx)


class Head(nn.Module):
    def __init__(self, d, d_k):
        super().__init__()
        self.query, self.key, self.value = (nn.Linear(d, d_k) for _ in range(3))

    def forward(self, x, mask):
        q, k, v = self.query(x), self.key(x), self.value(x)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1])
        return scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v


class HeadsBlock(nn.Module):
    """Separate heads (a ModuleList of Head), their outputs concatenated then projected;
    nn.LayerNorm, the layers made in another order than notebook 05's."""

    def __init__(self, d, n_heads, d_ff, dropout=0.0):
        super().__init__()
        self.norm_a = nn.LayerNorm(d)
        self.heads = nn.ModuleList(Head(d, d // n_heads) for _ in range(n_heads))
        self.proj = nn.Linear(d, d)
        self.norm_b = nn.LayerNorm(d)
        self.up, self.down = nn.Linear(d, d_ff), nn.Linear(d_ff, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask):
        h = self.norm_a(x)
        x = x + self.drop(self.proj(torch.cat([head(h, mask) for head in self.heads], -1)))
        return x + self.drop(self.down(F.relu(self.up(self.norm_b(x)))))


class GPTHeads(GPTBase):
    def __init__(
        self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None, dropout=0.0
    ):
        super().__init__(vocab_size, block_size, d_model, n_heads, 0, d_ff, dropout)
        self.blocks = nn.ModuleList(
            HeadsBlock(d_model, n_heads, d_ff or 4 * d_model, dropout) for _ in range(n_layers)
        )


GPT_RIGHT = {
    "gpt-heads": GPTHeads,
    "gpt-fused": GPTFused,
    "gpt-head-matrix": GPTHeadMatrix,
    "gpt-knobs": gpt(),
}
GENERATE_RIGHT = {"gen-power": gen_power}


# ================================================================ the entries

MORE = [
    # layer_norm
    ("ln-sqrt-of-std", "layer_norm", ln_sqrt_of_std, None, "square root of the standard"),
    ("ln-no-affine", "layer_norm", ln_no_affine, None, "without the gain and the shift"),
    ("ln-whole-tensor", "layer_norm", ln_whole_tensor, "layernorm-wrong-axis", None),
    ("ln-std-outside", "layer_norm", ln_std_unbiased_outside, "layernorm-unbiased-variance", None),
    # positional encoding
    ("pe-f32-exp", "sinusoidal_positional_encoding", pe_float32_exp, "pe-float32-angles", None),
    ("pe-f32-pow", "sinusoidal_positional_encoding", pe_float32_pow, "pe-float32-angles", None),
    ("pe-float64", "sinusoidal_positional_encoding", pe_float64, None, "dtype float64"),
    ("pe-i-over-d", "sinusoidal_positional_encoding", pe_i_over_d, "pe-wrong-exponent", None),
    # MultiHeadAttention
    ("mha-mask-zero", "MultiHeadAttention", MHAMaskZero, "mask-fills-zero", None),
    ("mha-softmax-heads", "MultiHeadAttention", MHASoftmaxHeads, None, "heads axis"),
    ("mha-scale-dk", "MultiHeadAttention", MHAScaleDk, "wrong-scale", None),
    ("mha-weights-averaged", "MultiHeadAttention", MHAWeightsAveraged, None, "every head"),
    # FeedForward
    ("ff-act-after", "FeedForward", make_ff_variant("act-after"), None, "after fc2"),
    ("ff-default-gelu", "FeedForward", make_ff_variant("default-gelu"), None, "other activation"),
    ("ff-no-fc2-bias", "FeedForward", make_ff_variant("no-fc2-bias"), None, "fc2.bias"),
    # TransformerBlock
    ("block-no-ff-res", "TransformerBlock", BlockNoFFResidual, "missing-residual", None),
    ("block-always-post", "TransformerBlock", BlockAlwaysPost, "norm-order-swapped", None),
    ("block-drop-after-sum", "TransformerBlock", BlockAfterSum, None, "after the residual"),
    ("block-drop-none", "TransformerBlock", BlockNoDropout, None, "dropout is not applied"),
    ("block-drop-in-eval", "TransformerBlock", BlockAlwaysDrops, None, "training=self.training"),
    ("block-drop-no-rescale", "TransformerBlock", BlockNotRescaled, None, "1 / (1 - p)"),
    ("block-drop-keep-p", "TransformerBlock", BlockKeepProbability, None, "about 1 - p"),
    ("block-drop-input", "TransformerBlock", BlockDropsTheInput, None, "before it is added"),
    ("block-drop-seeded", "TransformerBlock", BlockSeededInside, None, "new random mask"),
    # make_examples
    ("ex-empty-first", "make_examples", examples_extra_empty, None, "empty context"),
    ("ex-one-more", "make_examples", examples_one_more, None, "context_size + 1"),
    ("ex-one-less", "make_examples", examples_one_less, None, "context_size - 1"),
    # CharTokenizer
    ("tok-caseless", "CharTokenizer", TokenizerCaseless, "tokenizer-case-insensitive", None),
    ("tok-key-error", "CharTokenizer", TokenizerKeyError, None, "KeyError"),
    ("tok-reversed", "CharTokenizer", TokenizerReversed, None, "not in sorted order"),
    ("tok-decode-list", "CharTokenizer", TokenizerDecodeList, None, "not a str"),
    ("tok-always-raises", "CharTokenizer", TokenizerAlwaysRaises, None, "known characters"),
    # get_batch
    ("batch-swapped", "get_batch", batch_swapped, None, "swapped"),
    ("batch-float", "get_batch", batch_float, None, "integers"),
    ("batch-one-start", "get_batch", batch_one_start, None, "same window"),
    # lm_loss
    ("loss-view", "lm_loss", loss_view, None, ".reshape"),
    ("loss-detached", "lm_loss", loss_detached, None, "autograd"),
    ("loss-sum-time", "lm_loss", loss_sum_over_time, "loss-sum-reduction", None),
    # generate
    ("gen-crop-oldest", "generate", gen_crop_oldest, "generate-crop-oldest", None),
    ("gen-first-position", "generate", gen_first_position, "generate-first-position", None),
    ("gen-global-rng", "generate", gen_global_rng, "generator-not-used", "generator"),
    # GPT
    ("gpt-post-norm", "GPT", gpt(norm_first=False), "norm-order-swapped", None),
    ("gpt-d-ff", "GPT", gpt(d_ff_default=1), "gpt-d-ff-default", None),
    ("gpt-head-bias", "GPT", gpt(head_bias=True), "gpt-head-bias", None),
    ("gpt-no-emb-drop", "GPT", gpt(emb_dropout=False), "embedding-dropout-missing", None),
    ("gpt-no-block-drop", "GPT", gpt(block_dropout=False), "block-dropout-not-passed", None),
    ("gpt-block-05", "GPT", gpt(block_cls=TransformerBlock), "missing-residual", "notebook 05"),
    (
        "gpt-ln-05",
        "GPT",
        gpt(block_cls=BlockWithUnbiasedNorm, norm_cls=LayerNorm),
        "layernorm-unbiased-variance",
        "notebook 05",
    ),
    (
        "gpt-block-raises",
        "GPT",
        gpt(block_cls=BlockForgetsThePair),
        None,
        "raised inside your TransformerBlock (notebook 05)",
    ),
    ("gpt-ln-f-unused", "GPT", gpt(use_ln_f=False), "gpt-final-norm-unused", "final layer norm"),
    (
        "gpt-no-ln-f",
        "GPT",
        gpt(final_norm=False, use_ln_f=False),
        "gpt-final-norm-unused",
        "no final layer norm",
    ),
    ("gpt-scaled", "GPT", gpt(scale=True), "gpt-embeddings-scaled", "sqrt(d_model)"),
]

RIGHT = [("GPT", cls) for cls in GPT_RIGHT.values()] + [
    ("generate", fn) for fn in GENERATE_RIGHT.values()
]
