"""Wrong and right answers to notebook 07, written the way students write them.

WRONG: (key, graded name, the answer, expected id or None, key phrase of the message or None);
a phrase is required for entries without an id. RIGHT: (graded name, an answer written another
way: complex-number RoPE, nn.RMSNorm, minbpe-style BPE, F.scaled_dot_product_attention, a
generate that recomputes instead of caching...), which must keep full marks.
test_modern_lm_catalogue.py measures them.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from autograder.course.n07_modern_lm import reference as ref
from autograder.course.n07_modern_lm.reference import apply_rope, rms_norm

# ================================================================ BPETokenizer


class _BPE(ref.BPETokenizer):
    """The reference with one step replaced: `pick(counts)` chooses the pair to merge,
    `count(ids)` counts the pairs, `stop` the least count merged."""

    stop = 2

    @staticmethod
    def count(ids):
        counts = {}
        for pair in zip(ids, ids[1:], strict=False):
            counts[pair] = counts.get(pair, 0) + 1
        return counts

    @staticmethod
    def pick(counts):
        return max(counts, key=counts.get)

    def __init__(self, text, vocab_size):
        ids = list(text.encode("utf-8"))
        self.merges = []
        while 256 + len(self.merges) < vocab_size:
            counts = self.count(ids)
            if not counts:
                break
            pair = self.pick(counts)
            if counts[pair] < self.stop:
                break
            ids = ref._merge(ids, pair, 256 + len(self.merges))
            self.merges.append(pair)
        self.vocab_size = 256 + len(self.merges)
        self.rank = {pair: i for i, pair in enumerate(self.merges)}
        self.vocab = [bytes([i]) for i in range(256)]
        for a, b in self.merges:
            self.vocab.append(self.vocab[a] + self.vocab[b])


class BPETieSmallestPair(_BPE):
    """sorted by (-count, pair): ties go to the smallest pair of ids."""

    @staticmethod
    def pick(counts):
        return min(counts, key=lambda p: (-counts[p], p))


class BPETieLastSeen(_BPE):
    """A hand-written maximum with >=: ties go to the pair seen last."""

    @staticmethod
    def pick(counts):
        best = None
        for pair, n in counts.items():
            if best is None or n >= counts[best]:
                best = pair
        return best


class BPECountsLikeStrCount(_BPE):
    """Counting like str.count: a run 'aaa' holds (a, a) once."""

    @staticmethod
    def count(ids):
        counts, i = {}, 0
        while i + 1 < len(ids):
            pair = (ids[i], ids[i + 1])
            counts[pair] = counts.get(pair, 0) + 1
            i += 2 if ids[i] == ids[i + 1] else 1
        return counts


class BPEMergesSingletons(_BPE):
    stop = 1


class BPEEncodeNewestFirst(ref.BPETokenizer):
    def encode(self, s):
        ids = list(s.encode("utf-8"))
        for i in reversed(range(len(self.merges))):  # the latest merge first
            ids = ref._merge(ids, self.merges[i], 256 + i)
        return ids


class BPEEncodeLeftToRight(ref.BPETokenizer):
    """One scan merging any known pair where it stands, repeated until nothing changes."""

    def encode(self, s):
        ids = list(s.encode("utf-8"))
        changed = True
        while changed:
            changed, out, i = False, [], 0
            while i < len(ids):
                if i + 1 < len(ids) and (ids[i], ids[i + 1]) in self.rank:
                    out.append(256 + self.rank[(ids[i], ids[i + 1])])
                    i, changed = i + 2, True
                else:
                    out.append(ids[i])
                    i += 1
            ids = out
        return ids


class BPEDecodeStrict(ref.BPETokenizer):
    def decode(self, ids):
        if any(not 0 <= i < self.vocab_size for i in ids):
            raise ValueError(f"unknown ids {ids}")
        return b"".join(self.vocab[i] for i in ids).decode("utf-8")


class BPEDecodeIndexError(ref.BPETokenizer):
    def decode(self, ids):
        return b"".join(self.vocab[i] for i in ids).decode("utf-8", errors="replace")


class BPEDecodeEachId(ref.BPETokenizer):
    """Decodes id by id: a character whose bytes sit in two ids becomes two U+FFFD."""

    def decode(self, ids):
        if any(not 0 <= i < self.vocab_size for i in ids):
            raise ValueError(f"unknown ids {ids}")
        return "".join(self.vocab[i].decode("utf-8", errors="replace") for i in ids)


class BPEDecodeNegativeIds(ref.BPETokenizer):
    """Checks only the upper end: decode([-1]) wraps to the last token."""

    def decode(self, ids):
        if any(i >= self.vocab_size for i in ids):
            raise ValueError(f"unknown ids {ids}")
        return b"".join(self.vocab[i] for i in ids).decode("utf-8", errors="replace")


class BPEMinbpeStyle:
    """minbpe's own layout: merges kept as a dict {pair: new id}, encode by the lowest id among
    the pairs present (written independently of the reference), merges exposed as a list."""

    def __init__(self, text, vocab_size):
        ids = list(text.encode("utf-8"))
        self.merge_ids = {}
        self.vocab = {i: bytes([i]) for i in range(256)}
        for new in range(256, vocab_size):
            stats = {}
            for a, b in zip(ids, ids[1:], strict=False):
                stats[(a, b)] = stats.get((a, b), 0) + 1
            if not stats or max(stats.values()) < 2:
                break
            pair = max(stats, key=stats.get)
            out, i = [], 0
            while i < len(ids):
                if ids[i : i + 2] == list(pair):
                    out.append(new)
                    i += 2
                else:
                    out.append(ids[i])
                    i += 1
            ids = out
            self.merge_ids[pair] = new
            self.vocab[new] = self.vocab[pair[0]] + self.vocab[pair[1]]
        self.merges = list(self.merge_ids)
        self.vocab_size = len(self.vocab)

    def encode(self, text):
        ids = list(text.encode("utf-8"))
        for pair, new in self.merge_ids.items():  # in the order learned: one pass suffices
            out, i = [], 0
            while i < len(ids):
                if tuple(ids[i : i + 2]) == pair:
                    out.append(new)
                    i += 2
                else:
                    out.append(ids[i])
                    i += 1
            ids = out
        return ids

    def decode(self, ids):
        for i in ids:
            if i not in self.vocab:
                raise ValueError(f"id {i} is not in the vocabulary")
        return b"".join(self.vocab[i] for i in ids).decode("utf-8", errors="replace")


# ================================================================ rms_norm


def rms_layer_norm(x, weight, eps=1e-6):
    x = x - x.mean(-1, keepdim=True)
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rms_eps_outside(x, weight, eps=1e-6):
    return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * weight


def rms_no_gain(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rms_l2_norm(x, weight, eps=1e-6):
    return x / torch.sqrt((x * x).sum(-1, keepdim=True) + eps) * weight


def rms_fixed_eps(x, weight, eps=1e-6):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight


def rms_torch_functional(x, weight, eps=1e-6):
    return F.rms_norm(x, (x.shape[-1],), weight, eps)


def rms_via_module(x, weight, eps=1e-6):
    layer = nn.RMSNorm(x.shape[-1], eps=eps, elementwise_affine=False)
    return layer(x) * weight


def rms_rsqrt(x, weight, eps=1e-6):
    return x * torch.rsqrt((x**2).mean(dim=-1, keepdim=True) + eps) * weight


# ================================================================ apply_rope


def _angles(positions, d, base, dtype):
    freqs = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    return torch.outer(positions.to(torch.float64), freqs).to(dtype)


def rope_rotate_half(x, positions, base=10000.0):
    """GPT-NeoX / Hugging Face layout: pair i is (x[i], x[i + d/2])."""
    d = x.shape[-1]
    if d % 2:
        raise ValueError("odd d_head")
    ang = _angles(positions, d, base, x.dtype)
    cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
    rotated = torch.cat([-x[..., d // 2 :], x[..., : d // 2]], -1)
    return x * cos + rotated * sin


def rope_pairs_concatenated(x, positions, base=10000.0):
    """Pairs (2i, 2i + 1) rotated right, but put back as all the evens, then all the odds."""
    d = x.shape[-1]
    if d % 2:
        raise ValueError("odd d_head")
    ang = _angles(positions, d, base, x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.cat([even * ang.cos() - odd * ang.sin(), even * ang.sin() + odd * ang.cos()], -1)


def rope_frequency_i_over_d(x, positions, base=10000.0):
    d = x.shape[-1]
    if d % 2:
        raise ValueError("odd d_head")
    freqs = base ** (-torch.arange(d // 2, dtype=x.dtype) / d)  # i, not 2i
    ang = positions.to(x.dtype)[:, None] * freqs
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack(
        [x0 * ang.cos() - x1 * ang.sin(), x0 * ang.sin() + x1 * ang.cos()], -1
    ).flatten(-2)


def rope_ignores_positions(x, positions, base=10000.0):
    return apply_rope(x, torch.arange(x.shape[-2]), base)


def rope_reversed(x, positions, base=10000.0):
    return apply_rope(x, -positions, base)


def rope_no_odd_check(x, positions, base=10000.0):
    d = x.shape[-1]
    ang = _angles(positions, d, base, x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack(
        [x0 * ang.cos() - x1 * ang.sin(), x0 * ang.sin() + x1 * ang.cos()], -1
    ).flatten(-2)


def rope_complex(x, positions, base=10000.0):
    """The RoFormer paper's complex form: (x[2i] + i x[2i+1]) * e^{i m theta_i}."""
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"d_head={d} is odd")
    ang = _angles(positions, d, base, torch.float64)
    z = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(ang), ang)).flatten(-2).to(x.dtype)


def rope_rotation_matrices(x, positions, base=10000.0):
    """One 2x2 rotation matrix per (position, pair), applied with einsum."""
    d = x.shape[-1]
    if d % 2:
        raise ValueError("d_head must be even")
    ang = _angles(positions, d, base, x.dtype)
    c, s = ang.cos(), ang.sin()
    R = torch.stack([torch.stack([c, -s], -1), torch.stack([s, c], -1)], -2)  # (T, d/2, 2, 2)
    pairs = x.unflatten(-1, (d // 2, 2))
    return torch.einsum("tpij,...tpj->...tpi", R, pairs).flatten(-2)


# ================================================================ SwiGLU


class SwiGLUGateSwapped(ref.SwiGLU):
    def forward(self, x):
        return self.w2(self.w1(x) * F.silu(self.w3(x)))


class SwiGLUGelu(ref.SwiGLU):
    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)) * self.w3(x))


class SwiGLUBiased(ref.SwiGLU):
    def __init__(self, d_model, d_ff):
        nn.Module.__init__(self)
        self.w1, self.w3 = nn.Linear(d_model, d_ff), nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)


class SwiGLUSigmoidWritten(ref.SwiGLU):
    def forward(self, x):
        a = self.w1(x)
        return self.w2(a * torch.sigmoid(a) * self.w3(x))


# ================================================================ CausalSelfAttention


class _Attention(ref.CausalSelfAttention):
    """The reference's forward with hooks a mistake overrides."""

    def positions(self, T_past, T):
        return torch.arange(T_past, T_past + T)

    def mask(self, T, T_past):
        return torch.ones(T, T_past + T, dtype=torch.bool).tril(diagonal=T_past)

    def rope(self, t, positions):
        return apply_rope(t, positions)

    def forward(self, x, cache=None):
        B, T, d = x.shape
        H = self.n_heads
        q, k, v = (w(x).view(B, T, H, d // H).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        T_past = 0 if cache is None else cache[0].shape[2]
        pos = self.positions(T_past, T)
        q, k = self.rope(q, pos), self.rope(k, pos)
        new = (k, v)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // H)
        mask = self.mask(T, T_past)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, d)
        return self.wo(y), self.returned(new, (k, v))

    def returned(self, new, full):
        return full


class AttnPositionsRestart(_Attention):
    def positions(self, T_past, T):
        return torch.arange(T)


class AttnCacheNotAppended(_Attention):
    def returned(self, new, full):
        return new


class AttnMaskNotOffset(_Attention):
    def mask(self, T, T_past):
        return torch.ones(T, T_past + T, dtype=torch.bool).tril()


class AttnMaskOnlyWithoutCache(_Attention):
    def mask(self, T, T_past):
        return torch.ones(T, T, dtype=torch.bool).tril() if T_past == 0 else None


class AttnRotateHalf(_Attention):
    def rope(self, t, positions):
        return rope_rotate_half(t, positions)


class AttnSDPA(ref.CausalSelfAttention):
    """torch's fused attention, with a boolean mask for the cached positions."""

    def forward(self, x, cache=None):
        B, T, d = x.shape
        H = self.n_heads
        q = self.wq(x).unflatten(-1, (H, -1)).transpose(1, 2)
        k = self.wk(x).unflatten(-1, (H, -1)).transpose(1, 2)
        v = self.wv(x).unflatten(-1, (H, -1)).transpose(1, 2)
        start = 0 if cache is None else cache[0].size(2)
        pos = torch.arange(start, start + T)
        q, k = rope_complex(q, pos), rope_complex(k, pos)
        if cache is not None:
            k, v = torch.cat((cache[0], k), dim=2), torch.cat((cache[1], v), dim=2)
        allowed = torch.arange(k.size(2))[None, :] <= pos[:, None]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        return self.wo(y.transpose(1, 2).flatten(2)), (k, v)


# ================================================================ TinyLlama


class LlamaUntied(ref.TinyLlama):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lm_head = nn.Linear(
            self.tok_emb.embedding_dim, self.tok_emb.num_embeddings, bias=False
        )


class LlamaNoFinalNorm(ref.TinyLlama):
    def forward(self, idx, cache=None):
        T_past = 0 if cache is None else cache[0][0].shape[2]
        if T_past + idx.shape[1] > self.block_size:
            raise ValueError("longer than block_size")
        x, new = self.tok_emb(idx), []
        for i, block in enumerate(self.blocks):
            x, c = block(x, None if cache is None else cache[i])
            new.append(c)
        return self.lm_head(x), new


class LlamaFourTimesWidth(ref.TinyLlama):
    def __init__(self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None):
        super().__init__(vocab_size, block_size, d_model, n_heads, n_layers, d_ff or 4 * d_model)


class LlamaNoLengthCheck(ref.TinyLlama):
    def forward(self, idx, cache=None):
        x, new = self.tok_emb(idx), []
        for i, block in enumerate(self.blocks):
            x, c = block(x, None if cache is None else cache[i])
            new.append(c)
        return self.lm_head(self.norm(x)), new


class _PostNormBlock(ref.LlamaBlock):
    def forward(self, x, cache=None):
        a, cache = self.attn(x, cache)
        h = self.norm1(x + a)
        return self.norm2(h + self.ffn(h)), cache


class LlamaPostNorm(ref.TinyLlama):
    def __init__(self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None):
        super().__init__(vocab_size, block_size, d_model, n_heads, n_layers, d_ff)
        d_ff = self.blocks[0].ffn.w1.out_features
        self.blocks = nn.ModuleList(_PostNormBlock(d_model, n_heads, d_ff) for _ in range(n_layers))


class _TorchNormBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, eps=1e-6):
        super().__init__()
        self.norm1 = nn.RMSNorm(d_model, eps=eps)
        self.attn = AttnSDPA(d_model, n_heads)
        self.norm2 = nn.RMSNorm(d_model, eps=eps)
        self.ffn = ref.SwiGLU(d_model, d_ff)

    def forward(self, x, cache=None):
        out, cache = self.attn(self.norm1(x), cache)
        x = x + out
        return x + self.ffn(self.norm2(x)), cache


class LlamaTorchNorms(nn.Module):
    """nn.RMSNorm everywhere, torch's fused attention, d_ff by integer arithmetic."""

    eps = 1e-6

    def __init__(self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None):
        super().__init__()
        self.block_size = block_size
        d_ff = d_ff or -(-8 * d_model // (3 * 64)) * 64
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(
            _TorchNormBlock(d_model, n_heads, d_ff, self.eps) for _ in range(n_layers)
        )
        self.norm = nn.RMSNorm(d_model, eps=self.eps)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.tok_emb.weight

    def forward(self, idx, cache=None):
        past = 0 if not cache else cache[0][0].shape[-2]
        if past + idx.shape[1] > self.block_size:
            raise ValueError("too long for block_size")
        x, caches = self.tok_emb(idx), []
        for block, c in zip(self.blocks, cache or [None] * len(self.blocks), strict=True):
            x, c = block(x, c)
            caches.append(c)
        return self.lm_head(self.norm(x)), caches


class LlamaDefaultEps(LlamaTorchNorms):
    """nn.RMSNorm(d_model) with its default eps (float32's machine epsilon, not 1e-6)."""

    eps = None


class LlamaCacheNotUpdated(ref.TinyLlama):
    """Returns the cache it was given (the blocks' new caches dropped)."""

    def forward(self, idx, cache=None):
        logits, new_cache = super().forward(idx, cache)
        return logits, cache if cache is not None else new_cache


# ================================================================ generate_cached


def _checked(model, idx, n):
    if idx.shape[1] + n > model.block_size:
        raise ValueError("too long")


@torch.no_grad()
def gen_no_cache_after_prompt(
    model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    """Feeds each new token alone, without the cache: it lands at position 0."""
    _checked(model, idx, max_new_tokens)
    logits, _ = model(idx)
    for _ in range(max_new_tokens):
        nxt = ref.sample_next_token(logits[:, -1], temperature, top_k, top_p, generator)
        idx = torch.cat([idx, nxt], 1)
        logits, _ = model(nxt)
    return idx


@torch.no_grad()
def gen_prompt_cache_kept(
    model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    """Passes the prompt's cache at every step (the returned one is dropped)."""
    _checked(model, idx, max_new_tokens)
    logits, cache = model(idx)
    for _ in range(max_new_tokens):
        nxt = ref.sample_next_token(logits[:, -1], temperature, top_k, top_p, generator)
        idx = torch.cat([idx, nxt], 1)
        logits, _ = model(nxt, cache)
    return idx


@torch.no_grad()
def gen_samples_before_loop(
    model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    """Samples the first token right after the prompt, before the loop: max_new_tokens=0
    still adds one."""
    _checked(model, idx, max_new_tokens)
    logits, cache = model(idx)
    idx = torch.cat(
        [idx, ref.sample_next_token(logits[:, -1], temperature, top_k, top_p, generator)], 1
    )
    for _ in range(1, max_new_tokens):
        logits, cache = model(idx[:, -1:], cache)
        nxt = ref.sample_next_token(logits[:, -1], temperature, top_k, top_p, generator)
        idx = torch.cat([idx, nxt], 1)
    return idx


@torch.no_grad()
def gen_whole_sequence_with_cache(
    model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    """Feeds the whole sequence with the cache at every step."""
    _checked(model, idx, max_new_tokens)
    logits, cache = model(idx)
    for step in range(max_new_tokens):
        if step:
            logits, cache = model(idx, cache)
        nxt = ref.sample_next_token(logits[:, -1], temperature, top_k, top_p, generator)
        idx = torch.cat([idx, nxt], 1)
    return idx


def _sampler(mistake):
    def sample(logits, temperature, top_k, top_p, generator):
        logits = logits * temperature if mistake == "multiplied" else logits / temperature
        if top_k is not None and mistake != "no-top-k":
            kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, [-1]]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        probs = logits.softmax(-1)
        if top_p is not None and mistake != "no-top-p":
            sorted_p, order = torch.sort(probs, dim=-1, descending=True, stable=True)
            cum = sorted_p.cumsum(-1)
            keep_sorted = cum <= top_p if mistake == "boundary" else cum - sorted_p < top_p
            keep_sorted[:, 0] = True
            keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
            probs = probs * keep
            probs = probs / probs.sum(-1, keepdim=True)
        return torch.multinomial(probs, 1, generator=generator)

    @torch.no_grad()
    def generate_cached(
        model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
    ):
        _checked(model, idx, max_new_tokens)
        logits, cache = model(idx)
        for step in range(max_new_tokens):
            if step:
                logits, cache = model(idx[:, -1:], cache)
            idx = torch.cat([idx, sample(logits[:, -1], temperature, top_k, top_p, generator)], 1)
        return idx

    generate_cached.__name__ = f"gen_{mistake}"
    return generate_cached


@torch.no_grad()
def gen_recompute(
    model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    """No cache at all: the whole sequence every step (what the cache must agree with), with
    top-p written by masking logits before a second softmax."""
    if idx.size(1) + max_new_tokens > model.block_size:
        raise ValueError("the sequence would not fit in block_size")
    for _ in range(max_new_tokens):
        logits = model(idx)[0][:, -1] / temperature
        if top_k:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float("inf")
        if top_p is not None and top_p < 1:
            p = F.softmax(logits, -1)
            sp, si = torch.sort(p, descending=True, stable=True)
            drop = (sp.cumsum(-1) - sp) >= top_p
            logits = logits.masked_fill(torch.zeros_like(drop).scatter(1, si, drop), -float("inf"))
        idx = torch.cat([idx, torch.multinomial(F.softmax(logits, -1), 1, generator=generator)], 1)
    return idx


WRONG = [
    ("bpe-tie-smallest", "BPETokenizer", BPETieSmallestPair, "bpe-tie-order", None),
    ("bpe-tie-last", "BPETokenizer", BPETieLastSeen, "bpe-tie-order", None),
    ("bpe-str-count", "BPETokenizer", BPECountsLikeStrCount, "bpe-overlapping-count", None),
    ("bpe-singletons", "BPETokenizer", BPEMergesSingletons, "bpe-merges-singletons", None),
    ("bpe-encode-newest", "BPETokenizer", BPEEncodeNewestFirst, "bpe-encode-order", None),
    ("bpe-encode-scan", "BPETokenizer", BPEEncodeLeftToRight, "bpe-encode-order", None),
    ("bpe-decode-strict", "BPETokenizer", BPEDecodeStrict, "bpe-decode-strict", None),
    ("bpe-decode-indexerror", "BPETokenizer", BPEDecodeIndexError, None, "ValueError"),
    ("bpe-decode-each-id", "BPETokenizer", BPEDecodeEachId, "bpe-decode-per-token", None),
    ("bpe-decode-negative", "BPETokenizer", BPEDecodeNegativeIds, "bpe-negative-id-accepted", None),
    ("rms-layer-norm", "rms_norm", rms_layer_norm, "rmsnorm-mean-subtracted", None),
    ("rms-eps-outside", "rms_norm", rms_eps_outside, "rmsnorm-eps-outside-sqrt", None),
    ("rms-no-gain", "rms_norm", rms_no_gain, "rmsnorm-no-gain", None),
    ("rms-l2", "rms_norm", rms_l2_norm, "rmsnorm-no-mean", None),
    ("rms-fixed-eps", "rms_norm", rms_fixed_eps, "rmsnorm-eps-ignored", None),
    (
        "rope-pairs-concatenated",
        "apply_rope",
        rope_pairs_concatenated,
        "rope-pairs-concatenated",
        None,
    ),
    ("rope-rotate-half", "apply_rope", rope_rotate_half, "rope-half-split", None),
    ("rope-i-over-d", "apply_rope", rope_frequency_i_over_d, "rope-wrong-frequency", None),
    ("rope-no-positions", "apply_rope", rope_ignores_positions, "rope-wrong-position", None),
    ("rope-reversed", "apply_rope", rope_reversed, "rope-rotation-reversed", None),
    ("rope-no-odd-check", "apply_rope", rope_no_odd_check, "rope-odd-not-refused", None),
    ("swiglu-gate-swapped", "SwiGLU", SwiGLUGateSwapped, "swiglu-gate-swapped", None),
    ("swiglu-gelu", "SwiGLU", SwiGLUGelu, "swiglu-other-activation", None),
    ("swiglu-biased", "SwiGLU", SwiGLUBiased, "llama-bias", None),
    (
        "attn-positions-restart",
        "CausalSelfAttention",
        AttnPositionsRestart,
        "cache-positions-restart",
        None,
    ),
    ("attn-not-appended", "CausalSelfAttention", AttnCacheNotAppended, "cache-not-appended", None),
    (
        "attn-mask-not-offset",
        "CausalSelfAttention",
        AttnMaskNotOffset,
        "cache-mask-not-offset",
        None,
    ),
    (
        "attn-no-mask-with-cache",
        "CausalSelfAttention",
        AttnMaskOnlyWithoutCache,
        "no-causal-mask",
        None,
    ),
    ("attn-rotate-half", "CausalSelfAttention", AttnRotateHalf, "rope-half-split", None),
    ("llama-untied", "TinyLlama", LlamaUntied, "head-not-tied", None),
    ("llama-no-final-norm", "TinyLlama", LlamaNoFinalNorm, "llama-no-final-norm", None),
    ("llama-4x-width", "TinyLlama", LlamaFourTimesWidth, "llama-d-ff-default", None),
    ("llama-no-length-check", "TinyLlama", LlamaNoLengthCheck, "block-size-not-checked", None),
    ("llama-post-norm", "TinyLlama", LlamaPostNorm, "norm-order-swapped", None),
    ("llama-default-eps", "TinyLlama", LlamaDefaultEps, "llama-norm-eps-default", None),
    (
        "llama-cache-not-updated",
        "TinyLlama",
        LlamaCacheNotUpdated,
        "llama-cache-returned-unchanged",
        None,
    ),
    ("gen-no-cache", "generate_cached", gen_no_cache_after_prompt, "cache-positions-restart", None),
    ("gen-prompt-cache", "generate_cached", gen_prompt_cache_kept, "cache-not-updated", None),
    ("gen-multiplied", "generate_cached", _sampler("multiplied"), "temperature-multiplied", None),
    ("gen-boundary", "generate_cached", _sampler("boundary"), "top-p-excludes-boundary", None),
    ("gen-no-top-p", "generate_cached", _sampler("no-top-p"), "top-p-ignored", None),
    ("gen-no-top-k", "generate_cached", _sampler("no-top-k"), "top-k-ignored", None),
    (
        "gen-samples-before-loop",
        "generate_cached",
        gen_samples_before_loop,
        "zero-new-tokens-sampled",
        None,
    ),
    (
        "gen-whole-sequence-cached",
        "generate_cached",
        gen_whole_sequence_with_cache,
        "cache-fed-whole-sequence",
        None,
    ),
]

RIGHT = [
    ("BPETokenizer", BPEMinbpeStyle),
    ("rms_norm", rms_torch_functional),
    ("rms_norm", rms_via_module),
    ("rms_norm", rms_rsqrt),
    ("apply_rope", rope_complex),
    ("apply_rope", rope_rotation_matrices),
    ("SwiGLU", SwiGLUSigmoidWritten),
    ("CausalSelfAttention", AttnSDPA),
    ("TinyLlama", LlamaTorchNorms),
    ("generate_cached", gen_recompute),
    ("generate_cached", _sampler("right")),
]

__all__ = ["WRONG", "RIGHT", "rms_norm"]

# issue 40's mistakes in notebook 07 and RegexBPETokenizer's (tests/catalogues/issue40_mutants.py)
from issue40_mutants import NOTEBOOK_07_RIGHT, NOTEBOOK_07_WRONG  # noqa: E402

WRONG += NOTEBOOK_07_WRONG
RIGHT += NOTEBOOK_07_RIGHT

# issue 40's second round: the families caught before without a name (tests/catalogues/names07_mutants.py)
from names07_mutants import WRONG as NAMES07_WRONG  # noqa: E402

WRONG += NAMES07_WRONG
