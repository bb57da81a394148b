"""Notebook 07's mistakes that were caught without a name before issue 40's second round, one
family of causes each, written here from the notebook's text (test_modern_lm_catalogue.py
runs them through the visible check and two hidden seeds, with modern_lm_mutants.py's).

WRONG: (key, graded name, the answer, expected id, None), as in modern_lm_mutants.py.
"""

import math

import regex  # type: ignore[import-untyped]
import torch
import torch.nn.functional as F
from torch import nn

from autograder.course.n07_modern_lm import reference as ref

# ================================================================ BPETokenizer


class BPEOneMergeTooMany(ref.BPETokenizer):
    """Counts the merges to make as vocab_size - 255 (one more than the ids allow)."""

    def __init__(self, text, vocab_size):
        super().__init__(text, vocab_size + 1)


class BPESizeAsAsked(ref.BPETokenizer):
    """Keeps the vocab_size it was asked for, even when training stops before it."""

    def __init__(self, text, vocab_size):
        super().__init__(text, vocab_size)
        self.vocab_size = vocab_size


class BPECodePoints(ref.BPETokenizer):
    """Starts from the characters' code points: 'é' is one id, 233, instead of two bytes."""

    def __init__(self, text, vocab_size):
        ids = [ord(c) for c in text]
        self.merges = []
        while 256 + len(self.merges) < vocab_size:
            counts = ref._pair_counts(ids)
            if not counts or max(counts.values()) < 2:
                break
            pair = max(counts, key=counts.get)
            ids = ref._merge(ids, pair, 256 + len(self.merges))
            self.merges.append(pair)
        self.vocab_size = 256 + len(self.merges)
        self.rank = {pair: i for i, pair in enumerate(self.merges)}
        self.vocab = [bytes([i]) for i in range(256)]
        for a, b in self.merges:
            self.vocab.append(self.vocab[a] + self.vocab[b])

    def encode(self, s):
        ids = [ord(c) for c in s]
        while len(ids) >= 2:
            pair = min(ref._pair_counts(ids), key=lambda p: self.rank.get(p, math.inf))
            if pair not in self.rank:
                break
            ids = ref._merge(ids, pair, 256 + self.rank[pair])
        return ids


# ================================================================ RegexBPETokenizer


class RegexEachChunkOnce(ref.RegexBPETokenizer):
    """Trains on the distinct chunks only, each once, as if counting a vocabulary of words."""

    def __init__(self, text, vocab_size, special_tokens=None):
        super().__init__("", 256, special_tokens)
        words = {}
        for chunk in regex.findall(ref.GPT2_PATTERN, text):
            words.setdefault(chunk, list(chunk.encode("utf-8")))
        seqs = list(words.values())
        while 256 + len(self.merges) < vocab_size:
            counts = {}
            for ids in seqs:
                for pair, n in ref._pair_counts(ids).items():
                    counts[pair] = counts.get(pair, 0) + n
            if not counts or max(counts.values()) < 2:
                break
            pair = max(counts, key=counts.get)
            seqs = [ref._merge(ids, pair, 256 + len(self.merges)) for ids in seqs]
            self.merges.append(pair)
        self.vocab_size = 256 + len(self.merges)
        self.rank = {pair: i for i, pair in enumerate(self.merges)}
        for a, b in self.merges:
            self.vocab.append(self.vocab[a] + self.vocab[b])


class RegexSpecialsFilteredOut(ref.RegexBPETokenizer):
    """Splits at the special tokens and then skips them, as if they were separators."""

    def encode(self, s):
        if not self.special_tokens:
            return super().encode(s)
        alternatives = "|".join(regex.escape(t) for t in self.special_tokens)
        ids = []
        for piece in regex.split(alternatives, s):
            for chunk in regex.findall(ref.GPT2_PATTERN, piece):
                ids.extend(ref.BPETokenizer.encode(self, chunk))
        return ids


# ================================================================ rms_norm


def rms_without_root(x, weight, eps=1e-6):
    return x * torch.reciprocal(x.square().mean(-1, keepdim=True) + eps) * weight


def rms_mean_abs(x, weight, eps=1e-6):
    scale = x.abs().sum(-1, keepdim=True) / x.shape[-1]
    return weight * x / (scale + eps)


def rms_gain_added(x, weight, eps=1e-6):
    return torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * x + weight


def rms_mean_dropped_axis(x, weight, eps=1e-6):
    return x * torch.rsqrt(torch.mean(x * x, dim=-1) + eps) * weight


# ================================================================ apply_rope


def rope_cos_sin_exchanged(x, positions, base=10000.0):
    d = x.shape[-1]
    if d % 2:
        raise ValueError("odd d_head")
    inv = 1.0 / base ** (torch.arange(0, d, 2, dtype=x.dtype) / d)
    theta = torch.outer(positions.to(x.dtype), inv)
    c, s = torch.sin(theta), torch.cos(theta)  # the two exchanged
    a, b = x[..., ::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., ::2] = a * c - b * s
    out[..., 1::2] = a * s + b * c
    return out


# ================================================================ SwiGLU


class SwiGLUActivationOutside(ref.SwiGLU):
    def __init__(self, d_model, d_ff):
        super().__init__(d_model, d_ff)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.w2(self.act(self.w1(x) * self.w3(x)))


class SwiGLUSummed(ref.SwiGLU):
    def forward(self, x):
        return self.w2(torch.add(F.silu(self.w1(x)), self.w3(x)))


# ================================================================ CausalSelfAttention


class _Attention(ref.CausalSelfAttention):
    """The reference's attention written out, with the keys' rotation and the softmax's axis
    as parameters."""

    softmax_dim = -1
    rotate_after_cache = False
    cache_unrotated = False

    def forward(self, x, cache=None):
        B, T, d = x.shape
        H, dh = self.n_heads, d // self.n_heads
        q, k, v = (
            w(x).reshape(B, T, H, dh).permute(0, 2, 1, 3) for w in (self.wq, self.wk, self.wv)
        )
        T_past = 0 if cache is None else cache[0].shape[2]
        q = ref.apply_rope(q, torch.arange(T_past, T_past + T))
        if not self.rotate_after_cache:
            k = ref.apply_rope(k, torch.arange(T_past, T_past + T))
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        kept = k
        if self.rotate_after_cache:
            k = ref.apply_rope(k, torch.arange(k.shape[2]))
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(dh)
        allowed = torch.arange(T_past + T)[None, :] <= torch.arange(T_past, T_past + T)[:, None]
        weights = scores.masked_fill(~allowed, -math.inf).softmax(self.softmax_dim)
        y = torch.einsum("bhqk,bhkd->bhqd", weights, v).permute(0, 2, 1, 3).reshape(B, T, d)
        return self.wo(y), (kept if self.cache_unrotated else k, v)


class AttnSoftmaxOverQueries(_Attention):
    softmax_dim = 2


class AttnRotatesJoinedKeys(_Attention):
    """Keeps the keys unrotated in the cache and rotates all of them at every call."""

    rotate_after_cache = True
    cache_unrotated = True


# ================================================================ TinyLlama


class LlamaOneCacheForAll(ref.TinyLlama):
    def forward(self, idx, cache=None):
        T_past = 0 if cache is None else cache[0][0].shape[2]
        if T_past + idx.shape[1] > self.block_size:
            raise ValueError("too long")
        x, caches = self.tok_emb(idx), []
        for block in self.blocks:
            x, c = block(x, cache and cache[0])
            caches.append(c)
        return self.lm_head(self.norm(x)), caches


class _BlockFfnOnInput(ref.LlamaBlock):
    def forward(self, x, cache=None):
        a, cache = self.attn(self.norm1(x), cache)
        return x + a + self.ffn(self.norm2(x)), cache


class LlamaFfnOnBlockInput(ref.TinyLlama):
    def __init__(self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None):
        super().__init__(vocab_size, block_size, d_model, n_heads, n_layers, d_ff)
        for block in self.blocks:
            block.__class__ = _BlockFfnOnInput


class LlamaLearnedPositions(ref.TinyLlama):
    """GPT's habit kept: a learned (block_size, d_model) table added to the embeddings."""

    def __init__(self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None):
        super().__init__(vocab_size, block_size, d_model, n_heads, n_layers, d_ff)
        self.wpe = nn.Parameter(0.02 * torch.randn(block_size, d_model))

    def forward(self, idx, cache=None):
        T_past = 0 if cache is None else cache[0][0].shape[2]
        T = idx.shape[1]
        if T_past + T > self.block_size:
            raise ValueError("too long")
        x, caches = self.tok_emb(idx) + self.wpe[T_past : T_past + T], []
        for i, block in enumerate(self.blocks):
            x, c = block(x, None if cache is None else cache[i])
            caches.append(c)
        return self.lm_head(self.norm(x)), caches


class LlamaCountsNewOnly(ref.TinyLlama):
    """Compares only the new positions with block_size."""

    def forward(self, idx, cache=None):
        if idx.shape[1] > self.block_size:
            raise ValueError("too long")
        x, caches = self.tok_emb(idx), []
        for i, block in enumerate(self.blocks):
            x, c = block(x, None if cache is None else cache[i])
            caches.append(c)
        return self.lm_head(self.norm(x)), caches


# ================================================================ generate_cached


def _fits(model, idx, n):
    if idx.shape[1] + n > model.block_size:
        raise ValueError("does not fit")


@torch.no_grad()
def gen_first_logits(
    model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    """Samples from logits[:, 0]: right for the single tokens, wrong after the prompt."""
    _fits(model, idx, max_new_tokens)
    logits, cache = model(idx)
    for step in range(max_new_tokens):
        if step:
            logits, cache = model(idx[:, -1:], cache)
        nxt = ref.sample_next_token(logits[:, 0], temperature, top_k, top_p, generator)
        idx = torch.cat([idx, nxt], 1)
    return idx


@torch.no_grad()
def gen_prompt_tail_twice(
    model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    """Feeds the prompt but its last token, then every step the newest token: the prompt's
    last token is fed twice when the prompt is fed whole first."""
    _fits(model, idx, max_new_tokens)
    _, cache = model(idx)
    for _ in range(max_new_tokens):
        logits, cache = model(idx[:, -1:], cache)
        nxt = ref.sample_next_token(logits[:, -1], temperature, top_k, top_p, generator)
        idx = torch.cat([idx, nxt], 1)
    return idx


@torch.no_grad()
def gen_most_likely(
    model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    _fits(model, idx, max_new_tokens)
    logits, cache = model(idx)
    for step in range(max_new_tokens):
        if step:
            logits, cache = model(idx[:, -1:], cache)
        z = logits[:, -1] / temperature
        idx = torch.cat([idx, z.max(-1, keepdim=True).indices], 1)
    return idx


@torch.no_grad()
def gen_no_length_check(
    model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    """No check of its own: the last token sampled is never fed, so one token too many fits."""
    logits, cache = model(idx)
    for step in range(max_new_tokens):
        if step:
            logits, cache = model(idx[:, -1:], cache)
        nxt = ref.sample_next_token(logits[:, -1], temperature, top_k, top_p, generator)
        idx = torch.cat([idx, nxt], 1)
    return idx


WRONG = [
    ("bpe-one-merge-too-many", "BPETokenizer", BPEOneMergeTooMany, "bpe-merge-count-off-by-one", None),
    ("bpe-size-as-asked", "BPETokenizer", BPESizeAsAsked, "bpe-vocab-size-as-asked", None),
    ("bpe-code-points", "BPETokenizer", BPECodePoints, "bpe-characters-not-bytes", None),
    ("regex-each-chunk-once", "RegexBPETokenizer", RegexEachChunkOnce, "regex-bpe-chunks-counted-once", None),
    ("regex-specials-filtered", "RegexBPETokenizer", RegexSpecialsFilteredOut, "regex-bpe-specials-dropped", None),
    ("rms-without-root", "rms_norm", rms_without_root, "rmsnorm-no-sqrt", None),
    ("rms-mean-abs", "rms_norm", rms_mean_abs, "rmsnorm-abs-mean", None),
    ("rms-gain-added", "rms_norm", rms_gain_added, "rmsnorm-gain-added", None),
    ("rms-mean-dropped-axis", "rms_norm", rms_mean_dropped_axis, "rmsnorm-keepdim-missing", None),
    ("rope-cos-sin", "apply_rope", rope_cos_sin_exchanged, "rope-cos-sin-swapped", None),
    ("swiglu-silu-outside", "SwiGLU", SwiGLUActivationOutside, "swiglu-silu-after-product", None),
    ("swiglu-summed", "SwiGLU", SwiGLUSummed, "swiglu-sum-not-product", None),
    ("attn-softmax-queries", "CausalSelfAttention", AttnSoftmaxOverQueries, "softmax-over-queries", None),
    ("attn-rotates-joined-keys", "CausalSelfAttention", AttnRotatesJoinedKeys, "rope-after-cache", None),
    ("llama-one-cache", "TinyLlama", LlamaOneCacheForAll, "llama-cache-first-block", None),
    ("llama-ffn-on-input", "TinyLlama", LlamaFfnOnBlockInput, "llama-ffn-reads-block-input", None),
    ("llama-learned-positions", "TinyLlama", LlamaLearnedPositions, "llama-position-embedding", None),
    ("llama-counts-new-only", "TinyLlama", LlamaCountsNewOnly, "llama-block-size-cache-not-counted", None),
    ("gen-first-logits", "generate_cached", gen_first_logits, "sampled-from-first-position", None),
    ("gen-prompt-tail-twice", "generate_cached", gen_prompt_tail_twice, "cache-last-token-fed-again", None),
    ("gen-most-likely", "generate_cached", gen_most_likely, "generate-argmax", None),
    ("gen-no-length-check", "generate_cached", gen_no_length_check, "block-size-not-checked", None),
]  # fmt: skip
