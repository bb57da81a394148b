"""Answers to notebooks 05-06, right and wrong, and the builders that make a student's module
from them (make_mha, make_gpt, ...). A data module, not a test file: tests/course/torch_shared/test_probes_torch.py
grades them; test_checks_gaps, test_diagnosis_torch, test_judging_torch and the catalogue tests
reuse them."""

import math

import torch
import torch.nn.functional as F
from torch import nn
from training_mutants import with_top_p

from autograder.course import model_answers as R

NAMES_05 = [
    "layer_norm",
    "sinusoidal_positional_encoding",
    "MultiHeadAttention",
    "FeedForward",
    "TransformerBlock",
]


NAMES_06 = ["make_examples", "CharTokenizer", "get_batch", "GPT", "lm_loss", "generate"]


def show(results):
    return "\n".join(
        f"{r.name}: {r.score}/{r.max_score} {r.misconceptions} {r.output}" for r in results
    )


def _stub_function(*args, **kwargs):
    raise NotImplementedError()


class _StubClass(nn.Module):
    def __init__(self, *args, **kwargs):
        raise NotImplementedError()


def ln_unbiased_var(x, weight, bias, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True)  # torch's default: unbiased
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def ln_eps_outside(x, weight, bias, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    std = x.var(-1, keepdim=True, unbiased=False).sqrt()
    return (x - mean) / (std + eps) * weight + bias


def ln_torch(x, weight, bias, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], weight, bias, eps)


def ln_in_place(x, weight, bias, eps=1e-5):
    x = x.detach()  # also breaks the graph
    x -= x.mean(-1, keepdim=True)
    return x / torch.sqrt((x**2).mean(-1, keepdim=True) + eps) * weight + bias


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


class MHAMisnamed(nn.Module):
    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        self.n_heads = n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, d_model, bias=bias)
        self.W_v = nn.Linear(d_model, d_model, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)


class MHADetached(make_mha("view")):
    def forward(self, x, mask=None, context=None):
        y, attn = super().forward(x.detach(), mask, context)
        return y, attn


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


def examples_label_inside(tokens, context_size):
    return [
        (tokens[max(0, t - context_size + 1) : t + 1], tokens[t]) for t in range(1, len(tokens))
    ]


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


def batch_not_shifted(data, batch_size, block_size, generator=None):
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[s : s + block_size] for s in starts])
    return x, x.clone()


def batch_unfold(data, batch_size, block_size, generator=None):
    windows = data.unfold(0, block_size + 1, 1)  # (N - T, T + 1)
    rows = windows[torch.randint(len(windows), (batch_size,), generator=generator)]
    return rows[:, :-1], rows[:, 1:]


def batch_global_rng(data, batch_size, block_size, generator=None):
    return R.get_batch(data, batch_size, block_size)


def loss_sum(logits, targets):
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)), targets.reshape(-1), reduction="sum"
    )


def loss_double_softmax(logits, targets):
    probs = torch.softmax(logits, dim=-1)
    return F.cross_entropy(probs.view(-1, probs.shape[-1]), targets.view(-1))


def loss_nll(logits, targets):
    B, T, V = logits.shape
    return F.nll_loss(F.log_softmax(logits, -1).transpose(1, 2), targets)  # (B, V, T) layout


def loss_numpy(logits, targets):
    import numpy as np

    lg = logits.detach().numpy()
    lp = lg - np.log(np.exp(lg).sum(-1, keepdims=True))
    return torch.tensor(-np.take_along_axis(lp, targets.numpy()[..., None], -1).mean())


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
    seeded samples cannot be reproduced (tests/course/torch_shared/test_checks_gaps.py)."""
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


class GPTIndexError(make_gpt()):
    def forward(self, idx):
        x = self.drop(
            self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        )  # IndexError when T > block_size
        mask = torch.ones(idx.shape[1], idx.shape[1], dtype=torch.bool).tril()
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.ln(x))


class GPTUnusedLayer(make_gpt()):
    """A layer built in __init__ and never used: it would never train."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.extra = nn.Linear(4, 4)
