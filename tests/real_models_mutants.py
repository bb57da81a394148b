"""Wrong and right answers to notebook 08, written the way students write them.

WRONG: (key, graded name, the answer, expected id or None, key phrase of the message or None);
a phrase is required for entries without an id. RIGHT: (graded name, an answer written another
way: einsum, expand + reshape, PyTorch's fused attention with enable_gqa, nn.RMSNorm, its own
permutation by index, load_state_dict after its own checks, math.prod), which must keep full
marks; and expand + flatten, loops over heads and positions, an in-place residual after a clone,
the rows' pairs stacked head by head, a sum over layers. test_real_models_catalogue.py measures them; load_hf_llama's run with the reference Llama.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from autograder.course.n08_real_models import reference as ref
from autograder.reference.modern_lm import RMSNorm, SwiGLU, apply_rope

# ================================================================ GroupedQueryAttention


class _GQA(ref.GroupedQueryAttention):
    """The reference with hooks: `expand(k, group)` repeats the kv heads, `base` the RoPE base,
    `cache_repeated` stores the cache after the repetition; `split`/`merge` the heads,
    `start` the first position, `mask`, `scale`, `softmax_dim`, `rope_keys`, `project` the
    steps of 07's attention a student may get wrong here again."""

    cache_repeated = False
    softmax_dim = -1
    rope_keys = True

    @staticmethod
    def expand(t, group):
        return t.repeat_interleave(group, dim=1)

    def base(self):
        return self.rope_base

    @staticmethod
    def split(t, B, T, n, d_head):
        return t.view(B, T, n, d_head).transpose(1, 2)

    @staticmethod
    def merge(y, B, T, d):
        return y.transpose(1, 2).reshape(B, T, d)

    @staticmethod
    def start(T_past):
        return T_past

    @staticmethod
    def mask(scores, T, T_past, cache):
        keep = torch.ones(T, T_past + T, dtype=torch.bool).tril(diagonal=T_past)
        return scores.masked_fill(~keep, float("-inf"))

    @staticmethod
    def scale(d, d_head):
        return math.sqrt(d_head)

    def project(self, y):
        return self.wo(y)

    def forward(self, x, cache=None):
        B, T, d = x.shape
        H, H_kv = self.n_heads, self.n_kv_heads
        d_head, group = d // H, H // H_kv
        q = self.split(self.wq(x), B, T, H, d_head)
        k = self.split(self.wk(x), B, T, H_kv, d_head)
        v = self.split(self.wv(x), B, T, H_kv, d_head)
        T_past = 0 if cache is None else cache[0].shape[2]
        positions = torch.arange(self.start(T_past), self.start(T_past) + T)
        q = apply_rope(q, positions, self.base())
        if self.rope_keys:
            k = apply_rope(k, positions, self.base())
        if self.cache_repeated:
            k, v = self.expand(k, group), self.expand(v, group)
            if cache is not None:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            k_all, v_all = k, v
        else:
            if cache is not None:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            k_all, v_all = self.expand(k, group), self.expand(v, group)
        scores = q @ k_all.transpose(-2, -1) / self.scale(d, d_head)
        y = self.mask(scores, T, T_past, cache).softmax(self.softmax_dim) @ v_all
        return self.project(self.merge(y, B, T, d)), (k, v)


class GQARepeatNotInterleave(_GQA):
    """k.repeat(1, group, 1, 1): query head h reads kv head h % n_kv_heads."""

    @staticmethod
    def expand(t, group):
        return t.repeat(1, group, 1, 1)


class GQACacheAfterRepeat(_GQA):
    cache_repeated = True


class GQABaseIgnored(_GQA):
    def base(self):
        return 10000.0


class GQANoHeadCheck(_GQA):
    """No ValueError: the constructor accepts head counts that do not divide."""

    def __init__(self, d_model, n_heads, n_kv_heads, rope_base=10000.0):
        nn.Module.__init__(self)
        self.n_heads, self.n_kv_heads, self.rope_base = n_heads, n_kv_heads, rope_base
        d_head = d_model // n_heads
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, n_kv_heads * d_head, bias=False)
        self.wv = nn.Linear(d_model, n_kv_heads * d_head, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)


class GQAKVFullWidth(_GQA):
    """wk and wv left at d_model features (one key head per query head)."""

    def __init__(self, d_model, n_heads, n_kv_heads, rope_base=10000.0):
        super().__init__(d_model, n_heads, n_kv_heads, rope_base)
        self.wk = nn.Linear(d_model, d_model, bias=False)
        self.wv = nn.Linear(d_model, d_model, bias=False)


class GQAPositionsRestart(_GQA):
    @staticmethod
    def start(T_past):
        return 0


class GQAMaskNotOffset(_GQA):
    @staticmethod
    def mask(scores, T, T_past, cache):
        keep = torch.ones(T, T_past + T, dtype=torch.bool).tril()
        return scores.masked_fill(~keep, float("-inf"))


class GQAFusedIsCausal(ref.GroupedQueryAttention):
    """PyTorch's fused attention with is_causal=True: its mask is aligned top-left, so with a
    cache the new tokens do not see the cached positions after their own index."""

    def forward(self, x, cache=None):
        B, T, d = x.shape
        H, H_kv = self.n_heads, self.n_kv_heads
        d_head = d // H
        q = self.wq(x).view(B, T, H, d_head).transpose(1, 2)
        k = self.wk(x).view(B, T, H_kv, d_head).transpose(1, 2)
        v = self.wv(x).view(B, T, H_kv, d_head).transpose(1, 2)
        past = 0 if cache is None else cache[0].shape[2]
        pos = torch.arange(past, past + T)
        q, k = apply_rope(q, pos, self.rope_base), apply_rope(k, pos, self.rope_base)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.wo(y.transpose(1, 2).reshape(B, T, d)), (k, v)


class GQANoMaskWithCache(_GQA):
    @staticmethod
    def mask(scores, T, T_past, cache):
        return _GQA.mask(scores, T, T_past, cache) if cache is None else scores


class GQANoScale(_GQA):
    @staticmethod
    def scale(d, d_head):
        return 1.0


class GQAScaleDModel(_GQA):
    @staticmethod
    def scale(d, d_head):
        return math.sqrt(d)


class GQASplitNoTranspose(_GQA):
    @staticmethod
    def split(t, B, T, n, d_head):
        return t.view(B, n, T, d_head)


class GQAMergeNoTranspose(_GQA):
    @staticmethod
    def merge(y, B, T, d):
        return y.reshape(B, T, d)


class GQASoftmaxOverQueries(_GQA):
    softmax_dim = -2


class GQANoOutputProjection(_GQA):
    def project(self, y):
        return y


class GQARopeQueriesOnly(_GQA):
    rope_keys = False


class GQAEinsumExpand(ref.GroupedQueryAttention):
    """Right: heads grouped as (B, H_kv, group, T, d_head), scores by einsum, no copy of k/v."""

    def forward(self, x, cache=None):
        B, T, d = x.shape
        H, H_kv = self.n_heads, self.n_kv_heads
        d_head, group = d // H, H // H_kv
        q = self.wq(x).reshape(B, T, H, d_head).permute(0, 2, 1, 3)
        k = self.wk(x).reshape(B, T, H_kv, d_head).permute(0, 2, 1, 3)
        v = self.wv(x).reshape(B, T, H_kv, d_head).permute(0, 2, 1, 3)
        past = 0 if cache is None else cache[0].shape[-2]
        pos = torch.arange(past, past + T)
        q, k = apply_rope(q, pos, self.rope_base), apply_rope(k, pos, self.rope_base)
        if cache is not None:
            k, v = torch.cat((cache[0], k), -2), torch.cat((cache[1], v), -2)
        qg = q.reshape(B, H_kv, group, T, d_head)  # consecutive query heads share a kv head
        scores = torch.einsum("bkgtd,bksd->bkgts", qg, k) * d_head**-0.5
        allowed = torch.arange(past + T)[None, :] <= torch.arange(past, past + T)[:, None]
        w = torch.where(allowed, scores, float("-inf")).softmax(-1)
        y = torch.einsum("bkgts,bksd->bkgtd", w, v).reshape(B, H, T, d_head)
        return self.wo(y.permute(0, 2, 1, 3).reshape(B, T, d)), (k, v)


class GQAFused(ref.GroupedQueryAttention):
    """Right: PyTorch's fused attention does the grouping (enable_gqa=True), k and v expanded
    with expand + reshape for the mask's sake when a cache is given."""

    def forward(self, x, cache=None):
        B, T, d = x.shape
        H, H_kv = self.n_heads, self.n_kv_heads
        d_head = d // H
        q = self.wq(x).view(B, T, H, d_head).transpose(1, 2)
        k = self.wk(x).view(B, T, H_kv, d_head).transpose(1, 2)
        v = self.wv(x).view(B, T, H_kv, d_head).transpose(1, 2)
        past = 0 if cache is None else cache[0].shape[2]
        pos = torch.arange(past, past + T)
        q, k = apply_rope(q, pos, self.rope_base), apply_rope(k, pos, self.rope_base)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        mask = torch.ones(T, past + T, dtype=torch.bool).tril(diagonal=past)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return self.wo(y.transpose(1, 2).reshape(B, T, d)), (k, v)


class GQAExpandFlatten(_GQA):
    """Right: each kv head expanded (a view, no copy) to its group of query heads, then flattened
    to n_heads heads, instead of repeat_interleave."""

    @staticmethod
    def expand(t, group):
        return t[:, :, None].expand(-1, -1, group, -1, -1).flatten(1, 2)


class GQAHeadLoop(ref.GroupedQueryAttention):
    """Right: a loop over the query heads, head h reading key/value head h // group, and a loop
    over the new positions for the mask."""

    def forward(self, x, cache=None):
        B, T, d = x.shape
        H, H_kv = self.n_heads, self.n_kv_heads
        d_head = d // H
        q = self.wq(x).view(B, T, H, d_head).transpose(1, 2)
        k = self.wk(x).view(B, T, H_kv, d_head).transpose(1, 2)
        v = self.wv(x).view(B, T, H_kv, d_head).transpose(1, 2)
        past = 0 if cache is None else cache[0].shape[2]
        pos = torch.arange(past, past + T)
        q, k = apply_rope(q, pos, self.rope_base), apply_rope(k, pos, self.rope_base)
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        heads = []
        for h in range(H):
            kh, vh = k[:, h // (H // H_kv)], v[:, h // (H // H_kv)]
            rows = []
            for t in range(T):
                seen = past + t + 1  # every cached key and the new ones up to this one
                s = q[:, h, t : t + 1] @ kh[:, :seen].transpose(-2, -1) / math.sqrt(d_head)
                rows.append(s.softmax(-1) @ vh[:, :seen])
            heads.append(torch.cat(rows, dim=1))
        return self.wo(torch.cat(heads, dim=-1)), (k, v)


# ================================================================ Llama


def _ceil64(d_model):
    return 64 * math.ceil(8 * d_model / 192)


def _past(cache):
    return 0 if cache is None else cache[0][0].shape[2]


def _too_long(T_past, T, block_size):
    return T_past + T > block_size


def _pre_norm(block, x, cache):
    a, cache = block.attn(block.norm1(x), cache)
    h = x + a
    return h + block.ffn(block.norm2(h)), cache


def _llama(attention=ref.GroupedQueryAttention, tie=None, base=None, eps=None, norm=RMSNorm,
           d_ff_rule=_ceil64, kv_default=True, past=_past, too_long=_too_long, block=_pre_norm,
           final_eps=True, final_norm=True):  # fmt: skip
    """A Llama written by a student, with one choice replaced: `tie` forces the tying, `base`
    and `eps` the values passed on, `d_ff_rule` the default d_ff, `kv_default` whether None
    means n_heads, `past` how T_past is read from the cache, `too_long` the block_size test,
    `block(block, x, cache)` the block's forward, `final_eps` False builds the final norm with
    the norm's own default eps, `final_norm` False leaves it out of forward."""

    class Block(nn.Module):
        def __init__(self, d_model, n_heads, n_kv_heads, d_ff, rope_base, norm_eps):
            super().__init__()
            self.norm1 = norm(d_model, eps=norm_eps if eps is None else eps)
            self.attn = attention(d_model, n_heads, n_kv_heads, rope_base if base is None else base)
            self.norm2 = norm(d_model, eps=norm_eps if eps is None else eps)
            self.ffn = SwiGLU(d_model, d_ff)

        def forward(self, x, cache=None):
            return block(self, x, cache)

    class Llama(ref.Llama):
        def __init__(self, vocab_size, block_size, d_model, n_heads, n_layers, n_kv_heads=None,
                     d_ff=None, tie_embeddings=True, rope_base=10000.0, norm_eps=1e-6):  # fmt: skip
            nn.Module.__init__(self)
            self.block_size = block_size
            if kv_default:
                n_kv_heads = n_kv_heads or n_heads
            d_ff = d_ff or d_ff_rule(d_model)
            self.tok_emb = nn.Embedding(vocab_size, d_model)
            self.blocks = nn.ModuleList(
                Block(d_model, n_heads, n_kv_heads, d_ff, rope_base, norm_eps)
                for _ in range(n_layers)
            )
            if final_eps:
                self.norm = norm(d_model, eps=norm_eps if eps is None else eps)
            else:  # the norm's own default
                self.norm = norm(d_model)
            self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
            if (tie_embeddings if tie is None else tie) is True:
                self.lm_head.weight = self.tok_emb.weight

        def forward(self, idx, cache=None):
            T_past, T = past(cache), idx.shape[1]
            if too_long(T_past, T, self.block_size):
                raise ValueError(f"{T_past} + {T} positions: more than {self.block_size}")
            x, caches = self.tok_emb(idx), []
            for i, block in enumerate(self.blocks):
                x, c = block(x, None if cache is None else cache[i])
                caches.append(c)
            return self.lm_head(self.norm(x) if final_norm else x), caches

    return Llama


def _no_attention_residual(block, x, cache):
    h, cache = block.attn(block.norm1(x), cache)
    return h + block.ffn(block.norm2(h)), cache


def _no_ffn_residual(block, x, cache):
    a, cache = block.attn(block.norm1(x), cache)
    return block.ffn(block.norm2(x + a)), cache


def _post_norm(block, x, cache):
    a, cache = block.attn(x, cache)
    h = block.norm1(x + a)
    return block.norm2(h + block.ffn(h)), cache


def _norms_swapped(block, x, cache):
    a, cache = block.attn(block.norm2(x), cache)
    h = x + a
    return h + block.ffn(block.norm1(h)), cache


def _pre_norm_loop(block, x, cache):
    """Right, another way: the residual added in place, after a clone (no view of x changed)."""
    h = x.clone()
    a, cache = block.attn(block.norm1(h), cache)
    h += a
    out = h.clone()
    out += block.ffn(block.norm2(h))
    return out, cache


LlamaAlwaysTied = _llama(tie=True)
LlamaNeverTied = _llama(tie=False)
LlamaBaseNotPassed = _llama(base=10000.0)
LlamaEpsIgnored = _llama(eps=1e-6)
LlamaRepeatNotInterleave = _llama(attention=GQARepeatNotInterleave)
LlamaDffFloor = _llama(d_ff_rule=lambda d: int(8 * d / 3))  # 07's 8/3 not rounded up to 64
LlamaDffNearest = _llama(d_ff_rule=lambda d: 64 * round(8 * d / (3 * 64)))
LlamaDffGPT = _llama(d_ff_rule=lambda d: 4 * d)
LlamaKVNone = _llama(kv_default=False)  # n_kv_heads=None passed on to the attention
LlamaPastHeadAxis = _llama(past=lambda c: 0 if c is None else c[0][0].shape[1])
LlamaBlockNewOnly = _llama(too_long=lambda T_past, T, block_size: T > block_size)
LlamaBlockFullRefused = _llama(too_long=lambda T_past, T, block_size: T_past + T >= block_size)
LlamaTorchRMSNorm = _llama(norm=nn.RMSNorm)  # right: PyTorch's own RMSNorm module
LlamaNoAttentionResidual = _llama(block=_no_attention_residual)
LlamaNoFFNResidual = _llama(block=_no_ffn_residual)
LlamaPostNorm = _llama(block=_post_norm)
LlamaNormsSwapped = _llama(block=_norms_swapped)  # norm2 before attention, norm1 before the FFN
LlamaFinalNormDefaultEps = _llama(final_eps=False)  # self.norm = RMSNorm(d_model)
LlamaNoFinalNorm = _llama(final_norm=False)
LlamaInPlaceResidual = _llama(block=_pre_norm_loop)  # right
LlamaEinsum = _llama(attention=GQAEinsumExpand)  # right

# ================================================================ load_hf_llama

NAMES = {  # Hugging Face's name in a layer -> ours
    "input_layernorm": "norm1",
    "self_attn.q_proj": "attn.wq",
    "self_attn.k_proj": "attn.wk",
    "self_attn.v_proj": "attn.wv",
    "self_attn.o_proj": "attn.wo",
    "post_attention_layernorm": "norm2",
    "mlp.gate_proj": "ffn.w1",
    "mlp.up_proj": "ffn.w3",
    "mlp.down_proj": "ffn.w2",
}


def _by_index(w, n_heads):
    """Right, another way: row 2i + s of each head is Hugging Face's row i + s * d_head/2."""
    d_head = w.shape[0] // n_heads
    order = [
        h * d_head + i // 2 + (i % 2) * (d_head // 2) for h in range(n_heads) for i in range(d_head)
    ]
    return w[order]


def _loader(permute_q=_by_index, permute_k=_by_index, swap_gate=False, check=True, name_key=True,
            k_heads="kv", write_back=None):  # fmt: skip
    """A load_hf_llama written as a renaming, then load_state_dict; one step replaceable:
    `k_heads` "q" reorders k_proj as n_heads heads; `write_back` "dict" puts the reordered
    rows back into the caller's dict, "tensor" into the caller's tensor."""

    @torch.no_grad()
    def load_hf_llama(model, state_dict):
        attn = model.blocks[0].attn
        n_heads, n_kv = attn.n_heads, attn.n_kv_heads
        tied = model.lm_head.weight is model.tok_emb.weight
        mine = {"model.embed_tokens.weight": "tok_emb.weight", "model.norm.weight": "norm.weight"}
        for i in range(len(model.blocks)):
            for hf, ours in NAMES.items():
                if swap_gate and hf in ("mlp.gate_proj", "mlp.up_proj"):
                    ours = {"ffn.w1": "ffn.w3", "ffn.w3": "ffn.w1"}[ours]
                mine[f"model.layers.{i}.{hf}.weight"] = f"blocks.{i}.{ours}.weight"
        if not tied or "lm_head.weight" in state_dict:
            mine["lm_head.weight"] = "lm_head.weight"
        params = dict(model.named_parameters(remove_duplicate=False))
        if check:
            for key in sorted(set(mine) ^ set(state_dict)):
                raise ValueError(f"key mismatch: {key}" if name_key else "the keys do not match")
            for key, t in state_dict.items():
                if t.shape != params[mine[key]].shape:
                    raise ValueError(f"{key}: shape {tuple(t.shape)}" if name_key else "bad shape")
        for key, t in list(state_dict.items()):
            if key not in mine:
                continue
            if key.endswith("q_proj.weight"):
                t = permute_q(t, n_heads)
            elif key.endswith("k_proj.weight"):
                t = permute_k(t, n_heads if k_heads == "q" else n_kv)
            if write_back == "dict":
                state_dict[key] = t
            elif write_back == "tensor":
                state_dict[key].copy_(t.clone())
            params[mine[key]].copy_(t)
        return model

    return load_hf_llama


def _by_stacking(w, n_heads):
    """Right, another way: per head, its two halves stacked as pairs (a loop over heads)."""
    d_head = w.shape[0] // n_heads
    out = []
    for h in range(n_heads):
        rows = w[h * d_head : (h + 1) * d_head]
        first, second = rows[: d_head // 2], rows[d_head // 2 :]
        out.append(torch.stack([first, second], dim=1).reshape(d_head, -1))
    return torch.cat(out)


load_right_by_stacking = _loader(permute_q=_by_stacking, permute_k=_by_stacking)


def _none(w, n_heads):
    return w


load_right_by_index = _loader()
load_not_permuted = _loader(permute_q=_none, permute_k=_none)
load_only_queries = _loader(permute_k=_none)
load_gate_up_swapped = _loader(swap_gate=True)
load_unchecked = _loader(check=False)
load_error_unnamed = _loader(name_key=False)
load_k_query_heads = _loader(k_heads="q")
load_writes_back = _loader(write_back="dict")
load_permutes_in_place = _loader(write_back="tensor")


def _meta(w, n_heads):  # interleaved -> half-split: the direction of Meta's conversion script
    rows, d_in = w.shape
    return w.view(n_heads, rows // n_heads // 2, 2, d_in).transpose(1, 2).reshape(rows, d_in)


load_inverted = _loader(permute_q=_meta, permute_k=_meta)

# ================================================================ kv_cache_bytes


def kv_right_prod(n_layers, n_kv_heads, d_head, seq_len, batch=1, bytes_per_value=2):
    return math.prod((2, n_layers, n_kv_heads, d_head, seq_len, batch, bytes_per_value))


def kv_loop(n_layers, n_kv_heads, d_head, seq_len, batch=1, bytes_per_value=2):
    """Right: the bytes added up one layer at a time, keys then values."""
    total = 0
    for _ in range(n_layers):
        for _tensor in ("keys", "values"):
            total += batch * n_kv_heads * seq_len * d_head * bytes_per_value
    return total


def kv_keys_only(n_layers, n_kv_heads, d_head, seq_len, batch=1, bytes_per_value=2):
    return n_layers * n_kv_heads * d_head * seq_len * batch * bytes_per_value


def kv_no_batch(n_layers, n_kv_heads, d_head, seq_len, batch=1, bytes_per_value=2):
    return 2 * n_layers * n_kv_heads * d_head * seq_len * bytes_per_value


def kv_bits(n_layers, n_kv_heads, d_head, seq_len, batch=1, bytes_per_value=2):
    return 2 * n_layers * n_kv_heads * d_head * seq_len * batch * bytes_per_value * 8


def kv_fixed_two_bytes(n_layers, n_kv_heads, d_head, seq_len, batch=1, bytes_per_value=2):
    return 2 * n_layers * n_kv_heads * d_head * seq_len * batch * 2


def kv_numpy_prod(n_layers, n_kv_heads, d_head, seq_len, batch=1, bytes_per_value=2):
    """Right: numpy's product, a numpy.int64 of the exact value."""
    return np.prod([2, n_layers, n_kv_heads, d_head, seq_len, batch, bytes_per_value])


def kv_numpy_float(n_layers, n_kv_heads, d_head, seq_len, batch=1, bytes_per_value=2):
    return np.prod([2.0, n_layers, n_kv_heads, d_head, seq_len, batch, bytes_per_value])


def kv_float(n_layers, n_kv_heads, d_head, seq_len, batch=1, bytes_per_value=2):
    return 2.0 * n_layers * n_kv_heads * d_head * seq_len * batch * bytes_per_value


WRONG = [
    ("gqa-repeat", "GroupedQueryAttention", GQARepeatNotInterleave, "kv-head-interleaved", None),
    ("gqa-cache-after-repeat", "GroupedQueryAttention", GQACacheAfterRepeat, "cache-after-repeat", None),
    ("gqa-base-ignored", "GroupedQueryAttention", GQABaseIgnored, "rope-base-ignored", None),
    ("gqa-no-head-check", "GroupedQueryAttention", GQANoHeadCheck, "heads-not-checked", "returned normally, building a module"),
    ("gqa-kv-full-width", "GroupedQueryAttention", GQAKVFullWidth, "kv-projection-full-width", "shape (16, 16): wk and wv give one key and one value per key/value head, n_kv_heads * d_head = 8"),
    ("gqa-positions-restart", "GroupedQueryAttention", GQAPositionsRestart, "cache-positions-restart", None),
    ("gqa-mask-not-offset", "GroupedQueryAttention", GQAMaskNotOffset, "cache-mask-not-offset", None),
    ("gqa-fused-is-causal", "GroupedQueryAttention", GQAFusedIsCausal, "cache-mask-not-offset", None),
    ("gqa-no-mask-with-cache", "GroupedQueryAttention", GQANoMaskWithCache, "no-causal-mask", None),
    ("gqa-no-scale", "GroupedQueryAttention", GQANoScale, "missing-scale", None),
    ("gqa-scale-d-model", "GroupedQueryAttention", GQAScaleDModel, "attention-scale-d-model", None),
    ("gqa-split-no-transpose", "GroupedQueryAttention", GQASplitNoTranspose, "heads-reshape-without-transpose", None),
    ("gqa-merge-no-transpose", "GroupedQueryAttention", GQAMergeNoTranspose, "heads-reshape-without-transpose", None),
    ("gqa-softmax-over-queries", "GroupedQueryAttention", GQASoftmaxOverQueries, "softmax-over-queries", None),
    ("gqa-no-output-projection", "GroupedQueryAttention", GQANoOutputProjection, "missing-output-projection", None),
    ("gqa-rope-queries-only", "GroupedQueryAttention", GQARopeQueriesOnly, "rope-queries-only", None),
    ("llama-always-tied", "Llama", LlamaAlwaysTied, "head-tied-when-untied", None),
    ("llama-never-tied", "Llama", LlamaNeverTied, "head-not-tied", None),
    ("llama-base-not-passed", "Llama", LlamaBaseNotPassed, "rope-base-ignored", None),
    ("llama-eps-ignored", "Llama", LlamaEpsIgnored, "norm-eps-ignored", None),
    ("llama-repeat", "Llama", LlamaRepeatNotInterleave, "kv-head-interleaved", None),
    ("llama-d-ff-floor", "Llama", LlamaDffFloor, "llama-d-ff-default", None),
    ("llama-d-ff-nearest", "Llama", LlamaDffNearest, "llama-d-ff-default", None),
    ("llama-d-ff-gpt", "Llama", LlamaDffGPT, "llama-d-ff-default", None),
    ("llama-kv-none", "Llama", LlamaKVNone, "kv-heads-none-kept", "n_kv_heads left out (None)"),
    ("llama-past-head-axis", "Llama", LlamaPastHeadAxis, "block-size-cache-not-counted", "cached and new together"),
    ("llama-block-new-only", "Llama", LlamaBlockNewOnly, "block-size-cache-not-counted", "cached and new together"),
    ("llama-block-full-refused", "Llama", LlamaBlockFullRefused, "block-size-full-refused", "only more than block_size are refused"),
    ("llama-no-attention-residual", "Llama", LlamaNoAttentionResidual, "missing-residual", None),
    ("llama-no-ffn-residual", "Llama", LlamaNoFFNResidual, "missing-residual", None),
    ("llama-post-norm", "Llama", LlamaPostNorm, "norm-order-swapped", None),
    ("llama-norms-swapped", "Llama", LlamaNormsSwapped, "llama-norms-swapped", None),
    ("llama-final-norm-default-eps", "Llama", LlamaFinalNormDefaultEps, "final-norm-eps-ignored", None),
    ("llama-no-final-norm", "Llama", LlamaNoFinalNorm, "llama-no-final-norm", None),
    ("load-not-permuted", "load_hf_llama", load_not_permuted, "rope-layout-not-permuted", None),
    ("load-only-queries", "load_hf_llama", load_only_queries, "rope-only-queries-permuted", None),
    ("load-inverted", "load_hf_llama", load_inverted, "rope-permutation-inverted", None),
    ("load-gate-up-swapped", "load_hf_llama", load_gate_up_swapped, "gate-up-swapped", None),
    ("load-unchecked", "load_hf_llama", load_unchecked, "load-not-checked", "returned normally, without raising"),
    ("load-error-unnamed", "load_hf_llama", load_error_unnamed, "load-error-unnamed", "does not name"),
    ("load-k-query-heads", "load_hf_llama", load_k_query_heads, "rope-keys-permuted-with-query-heads", None),
    ("load-writes-back", "load_hf_llama", load_writes_back, "load-changes-state-dict", "changed the state dict it was given"),
    ("load-permutes-in-place", "load_hf_llama", load_permutes_in_place, "load-changes-state-dict", "changed the state dict it was given"),
    ("kv-keys-only", "kv_cache_bytes", kv_keys_only, "kv-bytes-missing-factor-2", None),
    ("kv-no-batch", "kv_cache_bytes", kv_no_batch, "kv-bytes-ignores-batch", None),
    ("kv-bits", "kv_cache_bytes", kv_bits, "kv-bytes-in-bits", None),
    ("kv-fixed-two-bytes", "kv_cache_bytes", kv_fixed_two_bytes, "kv-bytes-per-value-ignored", None),
    ("kv-float", "kv_cache_bytes", kv_float, "kv-bytes-float", "a float"),
    ("kv-numpy-float", "kv_cache_bytes", kv_numpy_float, "kv-bytes-float", "a float"),
]  # fmt: skip

RIGHT = [
    ("GroupedQueryAttention", GQAEinsumExpand),
    ("GroupedQueryAttention", GQAFused),
    ("GroupedQueryAttention", GQAExpandFlatten),
    ("GroupedQueryAttention", GQAHeadLoop),
    ("Llama", LlamaTorchRMSNorm),
    ("Llama", LlamaEinsum),
    ("Llama", LlamaInPlaceResidual),
    ("load_hf_llama", load_right_by_index),
    ("load_hf_llama", load_right_by_stacking),
    ("kv_cache_bytes", kv_right_prod),
    ("kv_cache_bytes", kv_numpy_prod),
    ("kv_cache_bytes", kv_loop),
]

# what each graded name needs beside itself in the notebook's namespace
NAMESPACE = {"load_hf_llama": {"Llama": ref.Llama}}
