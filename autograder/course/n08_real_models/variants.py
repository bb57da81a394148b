"""Known-wrong answers to notebook 08, computed in the trusted parent: what each mistake returns.

Each variant is the reference with one step done wrong, named by its misconception id (the ids
and their hints are in autograder/misconceptions/__init__.py). cases.py stores their outputs next
to the right ones; the judges name the id whose output a student's answer matches.
"""

import math

import numpy as np
import torch

from autograder.course.n08_real_models import reference as ref
from autograder.probes.torch_tools import load, np_
from autograder.reference.modern_lm import apply_rope

# ---------------------------------------------------------------- attention


class _WrongGQA(ref.GroupedQueryAttention):
    """The reference attention with one mistake (`mistake`, set on the instance)."""

    mistake = None

    def forward(self, x, cache=None):
        B, T, d = x.shape
        H, H_kv = self.n_heads, self.n_kv_heads
        d_head = d // H
        m = self.mistake
        base = 10000.0 if m == "rope-base-ignored" else self.rope_base

        def heads(t, n):
            if m in ("heads-split-without-transpose", "heads-without-transpose"):
                return t.reshape(B, n, T, d_head)
            return t.view(B, T, n, d_head).transpose(1, 2)

        q, k, v = heads(self.wq(x), H), heads(self.wk(x), H_kv), heads(self.wv(x), H_kv)
        T_past = 0 if cache is None else cache[0].shape[2]
        start = 0 if m == "cache-positions-restart" else T_past
        positions = torch.arange(start, start + T)
        q = apply_rope(q, positions, base)
        k = k if m == "rope-queries-only" else apply_rope(k, positions, base)
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        group = H // H_kv
        if m == "kv-head-interleaved":  # query head h reads kv head h % H_kv
            k_all, v_all = k.repeat(1, group, 1, 1), v.repeat(1, group, 1, 1)
        else:
            k_all, v_all = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = q @ k_all.transpose(-2, -1)
        if m == "attention-scale-d-model":
            scores = scores / math.sqrt(d)
        elif m != "missing-scale":
            scores = scores / math.sqrt(d_head)
        if m != "no-causal-mask":
            offset = 0 if m == "cache-mask-not-offset" else T_past
            mask = torch.ones(T, T_past + T, dtype=torch.bool).tril(diagonal=offset)
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = scores.softmax(dim=-2 if m == "softmax-over-queries" else -1)
        y = weights @ v_all
        if m in ("heads-merged-without-transpose", "heads-without-transpose"):
            y = y.reshape(B, T, d)
        else:
            y = y.transpose(1, 2).reshape(B, T, d)
        return (y if m == "missing-output-projection" else self.wo(y)), (k, v)


def _with_mistake(model, mistake):
    """Every GroupedQueryAttention of `model` (or `model` itself) made to do `mistake`."""
    for module in model.modules():
        if isinstance(module, ref.GroupedQueryAttention):
            module.__class__ = _WrongGQA
            module.mistake = mistake
    return model


ATTENTION_MISTAKES = (
    "kv-head-interleaved",
    "rope-base-ignored",
    # the mistakes of 07's CausalSelfAttention, named by 07's ids
    "cache-positions-restart",
    "cache-mask-not-offset",
    "no-causal-mask",
    "missing-scale",
    "attention-scale-d-model",
    "heads-split-without-transpose",
    "heads-merged-without-transpose",
    "heads-without-transpose",
    "rope-queries-only",
    "softmax-over-queries",
    "missing-output-projection",
)
ATTENTION_IDS = {
    "heads-split-without-transpose": "heads-reshape-without-transpose",
    "heads-merged-without-transpose": "heads-reshape-without-transpose",
    "heads-without-transpose": "heads-reshape-without-transpose",
}


def _differs(got, right):
    return any(
        g.shape != r.shape or not np.allclose(g, r, 1e-6, 1e-8)
        for g, r in zip(got, right, strict=True)
    )


def attention_variants(init, state, x, cache=None):
    """[(id, (y, k, v))] of GroupedQueryAttention(**init) with `state` on x (and a cache),
    those that change nothing on these inputs left out."""
    module = load(ref.GroupedQueryAttention(**init), state)
    with torch.no_grad():
        y, (k, v) = module(x, cache)
    right = (np_(y), np_(k), np_(v))
    out = []
    for mistake in ATTENTION_MISTAKES:
        module = _with_mistake(load(ref.GroupedQueryAttention(**init), state), mistake)
        with torch.no_grad():
            y, (k, v) = module(x, cache)
        got = (np_(y), np_(k), np_(v))
        if _differs(got, right):
            out.append((ATTENTION_IDS.get(mistake, mistake), got))
    return out


# ---------------------------------------------------------------- Llama


def reference_llama(init, state):
    """The reference Llama(**init) with `state` loaded (tok_emb's matrix as the head when tied)."""
    model = ref.Llama(**init)
    full = dict(state)
    if init.get("tie_embeddings", True):
        full["lm_head.weight"] = state["tok_emb.weight"]
    return load(model, full)


class _WrongBlock(ref.Block):
    """The reference block with one mistake (`mistake`, set on the instance): a residual left
    out (around the attention, or around the feed-forward), post-norm instead of pre-norm, or
    norm1 and norm2 used the other way round."""

    mistake = None

    def forward(self, x, cache=None):
        m = self.mistake
        if m == "post-norm":
            attended, cache = self.attn(x, cache)
            h = self.norm1(x + attended)
            return self.norm2(h + self.ffn(h)), cache
        first, second = (
            (self.norm2, self.norm1) if m == "norms-swapped" else (self.norm1, self.norm2)
        )
        attended, cache = self.attn(first(x), cache)
        h = attended if m == "attention-residual-missing" else x + attended
        out = self.ffn(second(h))
        return (out if m == "ffn-residual-missing" else h + out), cache


BLOCK_MISTAKES = {  # the block's mistake -> its id (both residuals: one id, one hint)
    "attention-residual-missing": "missing-residual",
    "ffn-residual-missing": "missing-residual",
    "post-norm": "norm-order-swapped",
    "norms-swapped": "llama-norms-swapped",
}


def llama_variants(init, state, idx, cache=None):
    """[(id, logits)] of the typical mistakes in Llama(**init) on idx (and a cache)."""
    out = []
    for mistake in ("kv-head-interleaved", "rope-base-ignored", "norm-eps-ignored"):
        model = reference_llama(init, state)
        if mistake == "norm-eps-ignored":
            for module in model.modules():
                if hasattr(module, "eps"):
                    module.eps = 1e-6
        else:
            _with_mistake(model, mistake)
        out.append((mistake, model))
    for mistake, mistake_id in BLOCK_MISTAKES.items():
        model = reference_llama(init, state)
        for block in model.blocks:
            block.__class__ = _WrongBlock
            block.mistake = mistake
        out.append((mistake_id, model))
    model = reference_llama(init, state)
    model.norm.eps = 1e-6  # the final norm built as RMSNorm(d_model): its own default eps
    out.append(("final-norm-eps-ignored", model))
    model = reference_llama(init, state)
    model.norm = torch.nn.Identity()
    out.append(("llama-no-final-norm", model))
    if not init.get("tie_embeddings", True):
        model = reference_llama(init, state)
        model.lm_head.weight = model.tok_emb.weight
        out.append(("head-tied-when-untied", model))
    logits = []
    for mistake, model in out:
        with torch.no_grad():
            logits.append((mistake, np_(model(idx, cache)[0])))
    return logits


# ---------------------------------------------------------------- load_hf_llama


def _permute_meta(weight, n_heads):
    """Interleaved -> half-split (Meta's conversion script's direction): the inverse permutation."""
    rows, d_in = weight.shape
    d_head = rows // n_heads
    return weight.view(n_heads, d_head // 2, 2, d_in).transpose(1, 2).reshape(rows, d_in)


LOAD_MISTAKES = (
    "rope-layout-not-permuted",
    "rope-only-queries-permuted",
    "rope-permutation-inverted",
    "gate-up-swapped",
    "rope-keys-permuted-with-query-heads",
)


def _wrong_load(model, state_dict, mistake, n_heads, n_kv_heads):
    """The reference's copy with one mistake, into a model built from the same config."""
    hf = dict(state_dict)
    for key in list(hf):
        heads = n_heads if ".q_proj." in key else n_kv_heads if ".k_proj." in key else None
        if heads is None:
            continue
        if mistake == "rope-layout-not-permuted" or (
            mistake == "rope-only-queries-permuted" and ".k_proj." in key
        ):
            # the loader permutes everything it is given: pre-undo it, so it ends up unpermuted
            hf[key] = _permute_meta(hf[key], heads)
        elif mistake == "rope-permutation-inverted":  # undo the loader's, then Meta's direction
            hf[key] = _permute_meta(_permute_meta(hf[key], heads), heads)
        elif mistake == "rope-keys-permuted-with-query-heads" and ".k_proj." in key:
            # k_proj's rows reordered as n_heads heads; the loader's own reordering undone first
            hf[key] = _permute_meta(ref.half_split_to_interleaved(hf[key], n_heads), heads)
    if mistake == "gate-up-swapped":
        for key in list(hf):
            if ".mlp.gate_proj." in key:
                up = key.replace("gate_proj", "up_proj")
                hf[key], hf[up] = hf[up], hf[key]
    return ref.load_hf_llama(model, hf)


def load_variants(init, state_dict, idx):
    """[(id, logits)] after loading `state_dict` the wrong way into Llama(**init), on idx."""
    n_heads = init["n_heads"]
    n_kv_heads = init.get("n_kv_heads") or n_heads
    out = []
    for mistake in LOAD_MISTAKES:
        if mistake == "rope-keys-permuted-with-query-heads" and n_kv_heads == n_heads:
            continue  # the same heads: the same reordering
        model = _wrong_load(ref.Llama(**init).eval(), state_dict, mistake, n_heads, n_kv_heads)
        with torch.no_grad():
            out.append((mistake, np_(model(idx)[0])))
    return out


# ---------------------------------------------------------------- kv_cache_bytes


def kv_bytes_variants(n_layers, n_kv_heads, d_head, seq_len, batch=1, bytes_per_value=2):
    """[(id, int)]: the bytes each counting mistake gives."""
    right = ref.kv_cache_bytes(n_layers, n_kv_heads, d_head, seq_len, batch, bytes_per_value)
    return [
        ("kv-bytes-missing-factor-2", right // 2),
        ("kv-bytes-ignores-batch", right // batch),
        ("kv-bytes-in-bits", right * 8),
        ("kv-bytes-per-value-ignored", right // bytes_per_value * 2),
    ]
