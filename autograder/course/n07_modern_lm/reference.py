"""Notebook 07: from GPT-2 to today's small language models.

The pieces that separate notebook 06's GPT from current open models (LLaMA-style): byte-level
BPE tokens, RMSNorm, rotary positions (RoPE), the SwiGLU feed-forward, attention that keeps a
cache of keys and values, a model built from them with tied embeddings, and generation that
feeds one new token a step through the cache.
"""

# These are the notebook's own definitions (tests/architecture/test_single_source.py), written as a student
# writes them, without annotations: mypy cannot infer their empty containers' types.
# mypy: disable-error-code="var-annotated"

import math

import regex  # type: ignore[import-untyped]  # no stubs in the course's pins (types-regex)
import torch
import torch.nn.functional as F
from torch import nn


def _pair_counts(ids):
    """{(a, b): count} over adjacent positions, in the order each pair first occurs."""
    counts = {}
    for pair in zip(ids, ids[1:], strict=False):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def _merge(ids, pair, new_id):
    """ids with every occurrence of pair, read left to right without overlap, replaced by new_id."""
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


class BPETokenizer:
    """Byte-level byte-pair encoding: ids 0-255 are bytes, each later id merges a pair of ids."""

    def __init__(self, text, vocab_size):
        ids = list(text.encode("utf-8"))
        self.merges = []  # (a, b) in the order learned; merge i makes id 256 + i
        while 256 + len(self.merges) < vocab_size:
            counts = _pair_counts(ids)
            if not counts:
                break
            pair = max(counts, key=counts.get)  # the first of the most frequent: earliest
            if counts[pair] < 2:
                break
            ids = _merge(ids, pair, 256 + len(self.merges))
            self.merges.append(pair)
        self.vocab_size = 256 + len(self.merges)
        self.rank = {pair: i for i, pair in enumerate(self.merges)}
        self.vocab = [bytes([i]) for i in range(256)]  # id -> the bytes it stands for
        for a, b in self.merges:
            self.vocab.append(self.vocab[a] + self.vocab[b])

    def encode(self, s):
        ids = list(s.encode("utf-8"))
        while len(ids) >= 2:
            # the earliest-learned merge present in ids, applied everywhere
            pair = min(_pair_counts(ids), key=lambda p: self.rank.get(p, math.inf))
            if pair not in self.rank:
                break
            ids = _merge(ids, pair, 256 + self.rank[pair])
        return ids

    def decode(self, ids):
        unknown = [i for i in ids if not 0 <= i < self.vocab_size]
        if unknown:
            raise ValueError(f"ids not in the vocabulary: {unknown}")
        return b"".join(self.vocab[i] for i in ids).decode("utf-8", errors="replace")


# GPT-2's pre-tokenization (its encoder.py): contractions, an optional space and a run of
# letters, of digits or of other symbols, then runs of whitespace. \p{L} and \p{N} are Unicode
# letter and number classes, which need the regex module (Python's re has neither).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


class RegexBPETokenizer(BPETokenizer):
    """BPE as GPT-2 does it: merges never cross the chunks of its pattern; special tokens whole."""

    def __init__(self, text, vocab_size, special_tokens=None):
        # every chunk is a list of byte ids; pairs are counted and merged inside chunks only
        chunks = [list(chunk.encode("utf-8")) for chunk in regex.findall(GPT2_PATTERN, text)]
        self.merges = []
        while 256 + len(self.merges) < vocab_size:
            counts = {}  # over every chunk in text order: ties go to the earliest occurrence
            for ids in chunks:
                for pair, n in _pair_counts(ids).items():
                    counts[pair] = counts.get(pair, 0) + n
            if not counts:
                break
            pair = max(counts, key=counts.get)  # type: ignore[arg-type]  # dict.get's overloads
            if counts[pair] < 2:
                break
            chunks = [_merge(ids, pair, 256 + len(self.merges)) for ids in chunks]
            self.merges.append(pair)
        self.vocab_size = 256 + len(self.merges)
        self.rank = {pair: i for i, pair in enumerate(self.merges)}
        self.vocab = [bytes([i]) for i in range(256)]
        for a, b in self.merges:
            self.vocab.append(self.vocab[a] + self.vocab[b])
        self.special_tokens = dict(special_tokens or {})  # string -> id
        self.special_of = {i: s for s, i in self.special_tokens.items()}  # id -> string

    def encode(self, s):
        ids = []
        # the special tokens first (longest first, so one that contains another wins)
        specials = sorted(self.special_tokens, key=len, reverse=True)
        pieces = (
            regex.split("(" + "|".join(map(regex.escape, specials)) + ")", s) if specials else [s]
        )
        for piece in pieces:
            if piece in self.special_tokens:
                ids.append(self.special_tokens[piece])
            else:
                for chunk in regex.findall(GPT2_PATTERN, piece):
                    ids.extend(super().encode(chunk))
        return ids

    def decode(self, ids):
        unknown = [i for i in ids if not (0 <= i < self.vocab_size or i in self.special_of)]
        if unknown:
            raise ValueError(f"ids not in the vocabulary: {unknown}")
        out, run = [], []  # bytes decode together, so a character split across ids survives
        for i in ids:
            if i in self.special_of:
                out.append(super().decode(run))
                out.append(self.special_of[i])
                run = []
            else:
                run.append(i)
        out.append(super().decode(run))
        return "".join(out)


def rms_norm(x, weight, eps=1e-6):
    """x scaled to unit root mean square over the last axis (no centring), times the gain."""
    return x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def apply_rope(x, positions, base=10000.0):
    """Rotate each pair (x[..., 2i], x[..., 2i+1]) of x (..., T, d_head) by position * base**(-2i/d_head)."""
    d_head = x.shape[-1]
    if d_head % 2:
        raise ValueError(f"d_head must be even to form pairs, got {d_head}")
    freqs = base ** (-torch.arange(0, d_head, 2, dtype=x.dtype, device=x.device) / d_head)
    angles = positions.to(x.dtype)[:, None] * freqs  # (T, d_head / 2)
    cos, sin = angles.cos(), angles.sin()
    x_even, x_odd = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack([x_even * cos - x_odd * sin, x_even * sin + x_odd * cos], dim=-1)
    return rotated.flatten(-2)  # the pairs back in place: (..., T, d_head)


class SwiGLU(nn.Module):
    """The gated feed-forward of LLaMA: w2(silu(w1 x) * w3 x), no biases."""

    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)  # the gate
        self.w3 = nn.Linear(d_model, d_ff, bias=False)  # the value it gates
        self.w2 = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with RoPE and a cache of the keys and values so far."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not a multiple of n_heads {n_heads}")
        self.n_heads = n_heads
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, d_model, bias=False)
        self.wv = nn.Linear(d_model, d_model, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        """x (B, T, d), cache None or (k, v) (B, H, T_past, d_head) -> (y (B, T, d), new cache)."""
        B, T, d = x.shape
        H = self.n_heads

        def heads(t):  # (B, T, d) -> (B, H, T, d_head)
            return t.view(B, T, H, d // H).transpose(1, 2)

        q, k, v = heads(self.wq(x)), heads(self.wk(x)), heads(self.wv(x))
        T_past = 0 if cache is None else cache[0].shape[2]
        positions = torch.arange(T_past, T_past + T, device=x.device)  # where the new tokens are
        q, k = apply_rope(q, positions), apply_rope(k, positions)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)  # (B, H, T_past + T, d_head)
            v = torch.cat([cache[1], v], dim=2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // H)  # (B, H, T, T_past + T)
        # new token t sits at position T_past + t: it sees every key up to that position
        mask = torch.ones(T, T_past + T, dtype=torch.bool, device=x.device).tril(diagonal=T_past)
        weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (weights @ v).transpose(1, 2).reshape(B, T, d)  # heads merged back
        return self.wo(y), (k, v)


class RMSNorm(nn.Module):
    """rms_norm with a learned gain, as a module."""

    def __init__(self, d_model, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


class LlamaBlock(nn.Module):
    """Pre-norm block: h = x + attn(norm1(x)); out = h + ffn(norm2(h))."""

    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.norm1 = RMSNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads)
        self.norm2 = RMSNorm(d_model)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x, cache=None):
        attended, cache = self.attn(self.norm1(x), cache)
        h = x + attended
        return h + self.ffn(self.norm2(h)), cache


class TinyLlama(nn.Module):
    """Token embeddings (positions come from RoPE), RMSNorm/SwiGLU blocks, a tied output layer."""

    def __init__(self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None):
        super().__init__()
        self.block_size = block_size
        if d_ff is None:  # about 8/3 * d_model, rounded up to a multiple of 64
            d_ff = 64 * math.ceil(8 * d_model / (3 * 64))
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(LlamaBlock(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.norm = RMSNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.apply(self._init_weights)
        self.lm_head.weight = self.tok_emb.weight  # tied: one matrix reads and writes tokens

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, cache=None):
        """idx (B, T), cache None or one (k, v) per block -> (logits (B, T, V), new cache)."""
        T = idx.shape[1]
        T_past = 0 if cache is None else cache[0][0].shape[2]
        if T_past + T > self.block_size:
            raise ValueError(
                f"{T_past} cached + {T} new positions exceed block_size {self.block_size}"
            )
        x = self.tok_emb(idx)  # (B, T, d)
        new_cache = []
        for i, block in enumerate(self.blocks):
            x, block_cache = block(x, None if cache is None else cache[i])
            new_cache.append(block_cache)
        return self.lm_head(self.norm(x)), new_cache


def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
    """One token per row of logits (B, V), sampled as notebook 06's generate does -> (B, 1)."""
    logits = logits / temperature
    if top_k is not None:
        kth_largest = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, [-1]]
        logits = logits.masked_fill(logits < kth_largest, float("-inf"))
    if top_p is not None and top_p < 1.0:
        # Most probable first; a stable sort keeps tied tokens in order of id.
        probs, order = logits.softmax(dim=-1).sort(dim=-1, descending=True, stable=True)
        mass_before = probs.cumsum(dim=-1) - probs  # what the more probable tokens hold
        drop = mass_before >= top_p  # the set already held top_p without this token
        drop[:, 0] = False  # the most probable token always stays
        logits = logits.masked_fill(drop.scatter(1, order, drop), float("-inf"))
    probs = logits.softmax(dim=-1)
    return torch.multinomial(probs, 1, generator=generator)


@torch.no_grad()
def generate_cached(
    model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    """Extend idx (B, T0) by max_new_tokens tokens, feeding only the newest token each step."""
    if idx.shape[1] + max_new_tokens > model.block_size:
        raise ValueError(
            f"{idx.shape[1]} + {max_new_tokens} tokens exceed block_size {model.block_size}"
        )
    logits, cache = model(idx)  # the whole prompt once
    for step in range(max_new_tokens):
        if step > 0:
            logits, cache = model(idx[:, -1:], cache)  # only the newest token
        next_token = sample_next_token(logits[:, -1, :], temperature, top_k, top_p, generator)
        idx = torch.cat([idx, next_token], dim=1)
    return idx
