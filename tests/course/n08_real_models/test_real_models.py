"""Notebook 08's model answers against independent oracles.

load_hf_llama: Hugging Face transformers' own LlamaForCausalLM, randomly initialised (grouped-
query, multi-query and multi-head attention, tied and untied heads, another RoPE base and norm
eps), gives the same logits as the reference Llama it was loaded into. GroupedQueryAttention:
PyTorch's fused attention with enable_gqa=True, and notebook 07's CausalSelfAttention when every
query head has its own key/value head. The q/k row permutation and kv_cache_bytes: numbers worked
by hand.
"""

import pytest
import torch
import torch.nn.functional as F

from autograder.course.n07_modern_lm.reference import CausalSelfAttention, apply_rope
from autograder.course.n08_real_models import reference as ref

transformers = pytest.importorskip("transformers")  # a course dependency: present in CI


def hf_llama(n_kv_heads, tie, rope_base=10000.0, eps=1e-6, seed=0):
    """A random LlamaForCausalLM with weights drawn wide enough that every layout mistake shows."""
    config = transformers.LlamaConfig(
        vocab_size=97,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=n_kv_heads,
        max_position_embeddings=32,
        rms_norm_eps=eps,
        rope_theta=rope_base,
        tie_word_embeddings=tie,
    )
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.normal_(1.0, 0.1)
            else:
                p.normal_(0.0, 0.15)
    return model


@pytest.mark.parametrize(
    ("n_kv_heads", "tie", "rope_base", "eps"),
    [
        (2, False, 10000.0, 1e-5),  # grouped-query, untied (LLaMA 2 70B, LLaMA 3)
        (1, True, 500.0, 1e-6),  # multi-query, tied, another base
        (4, False, 10000.0, 1e-6),  # multi-head (LLaMA 2 7B)
    ],
)
def test_reference_load_hf_llama_gives_transformers_logits(n_kv_heads, tie, rope_base, eps):
    hf = hf_llama(n_kv_heads, tie, rope_base, eps)
    model = ref.Llama(
        97, 32, 64, 4, 2, n_kv_heads=n_kv_heads, d_ff=96, tie_embeddings=tie,
        rope_base=rope_base, norm_eps=eps,
    )  # fmt: skip
    assert ref.load_hf_llama(model, hf.state_dict()) is model
    idx = torch.randint(97, (2, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours, theirs = model.eval()(idx)[0], hf(idx).logits
    assert (ours - theirs).abs().max().item() < 1e-4
    assert theirs.abs().max().item() > 1.0  # not vacuous: the logits are far from zero


def test_a_tied_checkpoint_may_leave_out_lm_head():
    hf = hf_llama(2, True)
    state = {k: v for k, v in hf.state_dict().items() if k != "lm_head.weight"}
    model = ref.load_hf_llama(
        ref.Llama(97, 32, 64, 4, 2, n_kv_heads=2, d_ff=96, norm_eps=1e-6), state
    )
    idx = torch.randint(97, (1, 9), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert torch.allclose(model.eval()(idx)[0], hf(idx).logits, atol=1e-4, rtol=1e-4)


def test_without_the_permutation_the_logits_differ():
    """The oracle tells the layouts apart: copying q/k as they are gives other logits."""
    hf = hf_llama(2, False)
    state = hf.state_dict()
    model = ref.load_hf_llama(
        ref.Llama(97, 32, 64, 4, 2, n_kv_heads=2, d_ff=96, tie_embeddings=False), state
    )
    with torch.no_grad():
        for i, block in enumerate(model.blocks):
            block.attn.wq.weight.copy_(state[f"model.layers.{i}.self_attn.q_proj.weight"])
            block.attn.wk.weight.copy_(state[f"model.layers.{i}.self_attn.k_proj.weight"])
        idx = torch.randint(97, (1, 12), generator=torch.Generator().manual_seed(3))
        assert (model.eval()(idx)[0] - hf(idx).logits).abs().max().item() > 0.1


def test_the_permutation_by_hand():
    """Per head, Hugging Face's rows [a0, a1, b0, b1] become [a0, b0, a1, b1]."""
    rows = torch.tensor([[0.0], [1.0], [2.0], [3.0], [10.0], [11.0], [12.0], [13.0]])
    got = ref.half_split_to_interleaved(rows, n_heads=2)
    assert got.flatten().tolist() == [0.0, 2.0, 1.0, 3.0, 10.0, 12.0, 11.0, 13.0]


def _state(**shapes):
    return {k: torch.zeros(v) for k, v in shapes.items()}


def _valid_state(tie):
    model = ref.Llama(11, 8, 16, 2, 1, n_kv_heads=1, d_ff=32, tie_embeddings=tie)
    state = {
        "model.embed_tokens.weight": model.tok_emb.weight,
        "model.layers.0.input_layernorm.weight": model.blocks[0].norm1.weight,
        "model.layers.0.self_attn.q_proj.weight": model.blocks[0].attn.wq.weight,
        "model.layers.0.self_attn.k_proj.weight": model.blocks[0].attn.wk.weight,
        "model.layers.0.self_attn.v_proj.weight": model.blocks[0].attn.wv.weight,
        "model.layers.0.self_attn.o_proj.weight": model.blocks[0].attn.wo.weight,
        "model.layers.0.post_attention_layernorm.weight": model.blocks[0].norm2.weight,
        "model.layers.0.mlp.gate_proj.weight": model.blocks[0].ffn.w1.weight,
        "model.layers.0.mlp.up_proj.weight": model.blocks[0].ffn.w3.weight,
        "model.layers.0.mlp.down_proj.weight": model.blocks[0].ffn.w2.weight,
        "model.norm.weight": model.norm.weight,
    }
    if not tie:
        state["lm_head.weight"] = model.lm_head.weight
    return model, {k: v.detach().clone() for k, v in state.items()}


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ("drop", "model.layers.0.mlp.up_proj.weight"),
        ("drop", "lm_head.weight"),
        ("add", "model.layers.0.self_attn.rotary_emb.inv_freq"),
        ("reshape", "model.layers.0.self_attn.k_proj.weight"),
    ],
)
def test_load_hf_llama_names_the_key_it_refuses(change, key):
    model, state = _valid_state(tie=False)
    ref.load_hf_llama(model, state)  # the valid one loads
    if change == "drop":
        del state[key]
    elif change == "add":
        state[key] = torch.zeros(4)
    else:
        state[key] = torch.zeros(16, 16)
    with pytest.raises(ValueError, match=key.replace(".", r"\.")):
        ref.load_hf_llama(model, state)


def test_a_tied_head_refuses_an_lm_head_that_is_not_the_embedding():
    model, state = _valid_state(tie=True)
    ref.load_hf_llama(model, {**state, "lm_head.weight": state["model.embed_tokens.weight"]})
    with pytest.raises(ValueError, match="lm_head"):
        ref.load_hf_llama(model, {**state, "lm_head.weight": torch.ones(11, 16)})


# ---------------------------------------------------------------- GroupedQueryAttention


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
def test_gqa_equals_torch_fused_attention_with_enable_gqa(n_kv_heads):
    torch.manual_seed(0)
    attn = ref.GroupedQueryAttention(32, 4, n_kv_heads, rope_base=500.0)
    x = torch.randn(2, 7, 32)
    with torch.no_grad():
        y, (k, v) = attn(x)
        q = apply_rope(attn.wq(x).view(2, 7, 4, 8).transpose(1, 2), torch.arange(7), 500.0)
        k_own = apply_rope(
            attn.wk(x).view(2, 7, n_kv_heads, 8).transpose(1, 2), torch.arange(7), 500.0
        )
        z = F.scaled_dot_product_attention(q, k_own, attn.wv(x).view(2, 7, n_kv_heads, 8).transpose(1, 2), is_causal=True, enable_gqa=True)  # fmt: skip
        want = attn.wo(z.transpose(1, 2).reshape(2, 7, 32))
    assert k.shape == v.shape == (2, n_kv_heads, 7, 8)  # the cache before repetition
    assert torch.allclose(y, want, atol=1e-5)


def test_gqa_with_as_many_kv_heads_is_notebook_07s_attention():
    torch.manual_seed(1)
    gqa, mha = ref.GroupedQueryAttention(24, 3, 3), CausalSelfAttention(24, 3)
    mha.load_state_dict(gqa.state_dict())
    x = torch.randn(2, 6, 24)
    with torch.no_grad():
        (y1, (k1, v1)), (y2, (k2, v2)) = gqa(x), mha(x)
    assert torch.allclose(y1, y2) and torch.equal(k1, k2) and torch.equal(v1, v2)


def test_gqa_in_pieces_equals_whole_and_groups_are_consecutive():
    torch.manual_seed(2)
    attn = ref.GroupedQueryAttention(32, 4, 2)
    x = torch.randn(1, 9, 32)
    with torch.no_grad():
        whole, _ = attn(x)
        first, cache = attn(x[:, :5])
        rest, cache = attn(x[:, 5:], cache)
        assert torch.allclose(torch.cat([first, rest], 1), whole, atol=1e-6)
        assert cache[0].shape == (1, 2, 9, 8)
        # query heads 0 and 1 read kv head 0: zeroing kv head 1's values leaves heads 0-1 alone
        attn.wv.weight[8:] = 0
        out, _ = attn(x)
        heads_out = (out @ torch.linalg.pinv(attn.wo.weight).T).view(1, 9, 4, 8)
        assert heads_out[:, :, 2:].abs().max() < 1e-5 < heads_out[:, :, :2].abs().max()


@pytest.mark.parametrize(("d", "h", "kv"), [(32, 4, 3), (30, 4, 2), (32, 4, 0)])
def test_gqa_refuses_head_counts_that_do_not_divide(d, h, kv):
    with pytest.raises(ValueError):
        ref.GroupedQueryAttention(d, h, kv)


# ---------------------------------------------------------------- Llama and kv_cache_bytes


def test_llama_ties_or_not_and_takes_the_norm_eps_and_d_ff_rule():
    tied = ref.Llama(50, 8, 48, 4, 2, n_kv_heads=2)
    untied = ref.Llama(50, 8, 48, 4, 2, n_kv_heads=2, tie_embeddings=False, norm_eps=1e-5)
    assert tied.lm_head.weight is tied.tok_emb.weight
    assert untied.lm_head.weight is not untied.tok_emb.weight
    assert untied.norm.eps == untied.blocks[1].norm2.eps == 1e-5
    assert tied.blocks[0].ffn.w1.weight.shape == (128, 48)  # 8 * 48 / 3 = 128, a multiple of 64
    assert tied.blocks[0].attn.wk.weight.shape == (24, 48)  # 2 kv heads of width 12


def test_kv_cache_bytes_by_hand():
    # LLaMA 2 7B, 4,096 positions, bfloat16: 2 (k and v) * 32 * 32 * 128 * 4096 * 2 bytes = 2 GiB
    assert ref.kv_cache_bytes(32, 32, 128, 4096) == 2 * 2**30
    # LLaMA 2 70B: 80 layers, 8 kv heads: 1.25 GiB; a batch of 3 in float32
    assert ref.kv_cache_bytes(80, 8, 128, 4096) == 1_342_177_280
    assert ref.kv_cache_bytes(2, 1, 4, 5, batch=3, bytes_per_value=4) == 2 * 2 * 4 * 5 * 3 * 4


# ---------------------------------------------------------------- the folder's plumbing


def test_a_course_folders_judges_are_found_by_their_registered_names_only():
    from autograder.judging import resolve

    assert (
        resolve("n08_real_models.kv_bytes").__module__ == "autograder.course.n08_real_models.judges"
    )
    for name in ("n99_nowhere.kv_bytes", "reference.load_hf_llama", "n08_real_models.nothing"):
        with pytest.raises(KeyError):
            resolve(name)


def test_08s_answers_and_probes_are_found_through_its_folder():
    from autograder.course import model_answers as reference
    from autograder.course.probes import PROBES, build_cases
    from autograder.curriculum import BY_STEM

    nb = BY_STEM["08_real_models"]
    assert nb.reference_path == "autograder.course.n08_real_models.reference"
    assert BY_STEM["07_modern_lm"].reference_path == "autograder.course.n07_modern_lm.reference"
    assert reference.load_hf_llama is ref.load_hf_llama
    cases = build_cases("08_real_models", 1234, functions={"kv_cache_bytes"})
    assert {c.function for c in cases} == {"kv_cache_bytes"} and "load_hf_llama" in PROBES
