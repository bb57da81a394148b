"""Notebook 08: your model meets a real one.

Grouped-query attention (each key/value head shared by a group of consecutive query heads), a
LLaMA-architecture model generalising notebook 07's TinyLlama (n_kv_heads, an untied head, the
RoPE base, the norm's eps), the copy of a Hugging Face LlamaForCausalLM state dict into it (the
q/k rows permuted from Hugging Face's half-split RoPE layout to the interleaved one), and the
bytes a KV cache holds.
"""

import math

import torch
from torch import nn

from autograder.course.n07_modern_lm.reference import RMSNorm, SwiGLU, apply_rope


class GroupedQueryAttention(nn.Module):
    """Causal self-attention with RoPE and a cache, n_kv_heads key/value heads shared by groups
    of n_heads // n_kv_heads consecutive query heads."""

    def __init__(self, d_model, n_heads, n_kv_heads, rope_base=10000.0):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not a multiple of n_heads {n_heads}")
        if n_kv_heads < 1 or n_heads % n_kv_heads:
            raise ValueError(f"n_heads {n_heads} is not a multiple of n_kv_heads {n_kv_heads}")
        self.n_heads, self.n_kv_heads, self.rope_base = n_heads, n_kv_heads, rope_base
        d_head = d_model // n_heads
        self.wq = nn.Linear(d_model, d_model, bias=False)
        self.wk = nn.Linear(d_model, n_kv_heads * d_head, bias=False)
        self.wv = nn.Linear(d_model, n_kv_heads * d_head, bias=False)
        self.wo = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, cache=None):
        """x (B, T, d), cache None or (k, v) (B, n_kv_heads, T_past, d_head) -> (y, new cache)."""
        B, T, d = x.shape
        H, H_kv = self.n_heads, self.n_kv_heads
        d_head = d // H

        def heads(t, n):  # (B, T, n * d_head) -> (B, n, T, d_head)
            return t.view(B, T, n, d_head).transpose(1, 2)

        q, k, v = heads(self.wq(x), H), heads(self.wk(x), H_kv), heads(self.wv(x), H_kv)
        T_past = 0 if cache is None else cache[0].shape[2]
        positions = torch.arange(T_past, T_past + T, device=x.device)
        q = apply_rope(q, positions, self.rope_base)
        k = apply_rope(k, positions, self.rope_base)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)  # (B, H_kv, T_past + T, d_head)
            v = torch.cat([cache[1], v], dim=2)
        # query head h reads kv head h // group: each kv head repeated for its group of queries
        group = H // H_kv
        k_all, v_all = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        scores = q @ k_all.transpose(-2, -1) / math.sqrt(d_head)  # (B, H, T, T_past + T)
        mask = torch.ones(T, T_past + T, dtype=torch.bool, device=x.device).tril(diagonal=T_past)
        weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (weights @ v_all).transpose(1, 2).reshape(B, T, d)
        return self.wo(y), (k, v)  # the cache holds the n_kv_heads heads, before repetition


class Block(nn.Module):
    """07's pre-norm block with grouped-query attention: h = x + attn(norm1(x)); h + ffn(norm2(h))."""

    def __init__(self, d_model, n_heads, n_kv_heads, d_ff, rope_base, norm_eps):
        super().__init__()
        self.norm1 = RMSNorm(d_model, norm_eps)
        self.attn = GroupedQueryAttention(d_model, n_heads, n_kv_heads, rope_base)
        self.norm2 = RMSNorm(d_model, norm_eps)
        self.ffn = SwiGLU(d_model, d_ff)

    def forward(self, x, cache=None):
        attended, cache = self.attn(self.norm1(x), cache)
        h = x + attended
        return h + self.ffn(self.norm2(h)), cache


class Llama(nn.Module):
    """07's TinyLlama with grouped-query attention, an optionally untied head, the RoPE base and
    the norms' eps as arguments: the architecture of LLaMA 2/3, Mistral, Qwen 2, SmolLM."""

    def __init__(
        self,
        vocab_size,
        block_size,
        d_model,
        n_heads,
        n_layers,
        n_kv_heads=None,
        d_ff=None,
        tie_embeddings=True,
        rope_base=10000.0,
        norm_eps=1e-6,
    ):
        super().__init__()
        self.block_size = block_size
        if n_kv_heads is None:
            n_kv_heads = n_heads
        if d_ff is None:  # 07's rule: about 8/3 * d_model, rounded up to a multiple of 64
            d_ff = 64 * math.ceil(8 * d_model / (3 * 64))
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(
            Block(d_model, n_heads, n_kv_heads, d_ff, rope_base, norm_eps) for _ in range(n_layers)
        )
        self.norm = RMSNorm(d_model, norm_eps)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.apply(self._init_weights)
        if tie_embeddings:
            self.lm_head.weight = self.tok_emb.weight

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
        x = self.tok_emb(idx)
        new_cache = []
        for i, block in enumerate(self.blocks):
            x, block_cache = block(x, None if cache is None else cache[i])
            new_cache.append(block_cache)
        return self.lm_head(self.norm(x)), new_cache


def half_split_to_interleaved(weight, n_heads):
    """The rows of a q or k projection (n_heads * d_head, d_in) from Hugging Face's layout, where
    feature i of a head pairs with feature i + d_head/2, to the interleaved one (2i with 2i+1)."""
    rows, d_in = weight.shape
    d_head = rows // n_heads
    return weight.view(n_heads, 2, d_head // 2, d_in).transpose(1, 2).reshape(rows, d_in)


@torch.no_grad()
def load_hf_llama(model, state_dict):
    """Copy a Hugging Face LlamaForCausalLM state dict into `model` (a Llama), in place."""
    first = model.blocks[0].attn
    d_head = first.wq.weight.shape[0] // first.n_heads
    n_kv_heads = first.wk.weight.shape[0] // d_head
    ours = {
        "model.embed_tokens.weight": model.tok_emb.weight,
        "model.norm.weight": model.norm.weight,
    }
    rope_heads = {}  # Hugging Face name -> heads whose rows are permuted
    for i, block in enumerate(model.blocks):
        p = f"model.layers.{i}."
        ours[p + "input_layernorm.weight"] = block.norm1.weight
        ours[p + "post_attention_layernorm.weight"] = block.norm2.weight
        for hf, mine in (("q", block.attn.wq), ("k", block.attn.wk), ("v", block.attn.wv)):
            ours[f"{p}self_attn.{hf}_proj.weight"] = mine.weight
        ours[p + "self_attn.o_proj.weight"] = block.attn.wo.weight
        ours[p + "mlp.gate_proj.weight"] = block.ffn.w1.weight
        ours[p + "mlp.up_proj.weight"] = block.ffn.w3.weight
        ours[p + "mlp.down_proj.weight"] = block.ffn.w2.weight
        rope_heads[p + "self_attn.q_proj.weight"] = first.n_heads
        rope_heads[p + "self_attn.k_proj.weight"] = n_kv_heads
    tied = model.lm_head.weight is model.tok_emb.weight
    if not tied or "lm_head.weight" in state_dict:
        ours["lm_head.weight"] = model.lm_head.weight
    for key in ours:
        if key not in state_dict:
            raise ValueError(f"the state dict has no {key}")
    for key in state_dict:
        if key not in ours:
            raise ValueError(f"unexpected key in the state dict: {key}")
    for key, tensor in state_dict.items():
        if tuple(tensor.shape) != tuple(ours[key].shape):
            raise ValueError(
                f"{key} has shape {tuple(tensor.shape)}, the model expects {tuple(ours[key].shape)}"
            )
    if tied and "lm_head.weight" in state_dict:
        if not torch.equal(state_dict["lm_head.weight"], state_dict["model.embed_tokens.weight"]):
            raise ValueError(
                "lm_head.weight differs from model.embed_tokens.weight, but the head is tied"
            )
    for key, tensor in state_dict.items():
        if key in rope_heads:
            tensor = half_split_to_interleaved(tensor, rope_heads[key])
        ours[key].copy_(tensor)
    return model


def kv_cache_bytes(n_layers, n_kv_heads, d_head, seq_len, batch=1, bytes_per_value=2):
    """The bytes of the keys and the values (2 tensors) a cache holds for seq_len positions."""
    return 2 * n_layers * n_kv_heads * d_head * seq_len * batch * bytes_per_value
