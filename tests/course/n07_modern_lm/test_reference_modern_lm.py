"""Notebook 07's model answers against oracles nobody here wrote or that are worked by hand.

nn.RMSNorm for rms_norm; RoPE against a hand-computed rotation, the complex-number formulation
of the RoFormer paper and the property that q.k depends only on the distance; BPE against
minbpe's algorithm traced by hand on small strings; the KV cache against feeding whole;
generate_cached against recomputing the whole sequence with the same generator.
"""

import math

import pytest
import torch
from torch import nn

from autograder.course.n07_modern_lm.reference import (
    BPETokenizer,
    CausalSelfAttention,
    SwiGLU,
    TinyLlama,
    apply_rope,
    generate_cached,
    rms_norm,
    sample_next_token,
)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def close(actual, expected, rtol=1e-5, atol=1e-6):
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- BPE, traced by hand


def test_bpe_wikipedia_example_traced_by_hand():
    # "aaabdaaabac": (a,a) occurs 4 times (overlapping, as minbpe counts) -> 256, read left to
    # right without overlap: [256 a b d 256 a b a c]. Then (256,a) and (a,b) both occur twice;
    # (256,a) occurs first -> 257: [257 b d 257 b a c]. Then (257,b) twice -> 258:
    # [258 d 258 a c]; no pair occurs twice any more, so training stops early.
    a, b, c, d = map(ord, "abcd")
    tok = BPETokenizer("aaabdaaabac", vocab_size=300)
    assert tok.merges == [(a, a), (256, a), (257, b)]
    assert tok.vocab_size == 259
    assert tok.encode("aaabdaaabac") == [258, d, 258, a, c]
    assert tok.decode([258, d, 258, a, c]) == "aaabdaaabac"


def test_bpe_ties_go_to_the_earliest_first_occurrence():
    # "xyab xyab abxy": (x,y), (a,b) both 3 times; (x,y) occurs first
    tok = BPETokenizer("xyabxyababxy", vocab_size=257)
    assert tok.merges == [(ord("x"), ord("y"))]
    tok2 = BPETokenizer("abxyxyababxy", vocab_size=257)
    assert tok2.merges == [(ord("a"), ord("b"))]


def test_bpe_overlapping_pairs_are_counted_over_positions():
    # "aaab cc dd": (a,a) occurs twice over positions (minbpe), (c,c) and (d,d) once each
    tok = BPETokenizer("aaabccdd", vocab_size=257)
    assert tok.merges == [(97, 97)]
    assert tok.encode("aaa") == [256, 97]  # left to right, no overlap


def test_bpe_stops_at_vocab_size_and_when_no_pair_repeats():
    assert BPETokenizer("abababab", vocab_size=257).vocab_size == 257
    assert BPETokenizer("abcdef", vocab_size=400).merges == []
    assert BPETokenizer("", vocab_size=300).vocab_size == 256


def test_bpe_encode_applies_merges_in_the_order_learned():
    # (b,c) occurs 3 times and is learned first (256), then (a,b) twice (257): encoding "abc"
    # must apply (b,c) first -> [a, 256], never (a,b) first -> [257, c].
    tok = BPETokenizer("bcxbcybczabwab", vocab_size=258)
    assert tok.merges == [(98, 99), (97, 98)]
    assert tok.encode("abc") == [97, 256]


def test_bpe_round_trips_utf8_and_rejects_unknown_ids():
    text = "héllo wörld, héllo wörld — ünïcödé ✓"
    tok = BPETokenizer(text * 3, vocab_size=300)
    for s in (text, "wörld✓", "", "new text ∑"):
        assert tok.decode(tok.encode(s)) == s
    assert tok.decode([0xC3]) == "\ufffd"  # half a character: replaced, not an error
    with pytest.raises(ValueError, match=str(tok.vocab_size)):
        tok.decode([1, tok.vocab_size])
    with pytest.raises(ValueError, match="-1"):
        tok.decode([-1])


# ---------------------------------------------------------------- RMSNorm


def test_rms_norm_is_torch_rmsnorm():
    torch.manual_seed(0)
    x = torch.randn(3, 5, 16) * 3 + 1
    layer = nn.RMSNorm(16, eps=1e-6)
    with torch.no_grad():
        layer.weight.copy_(torch.randn(16))
    close(rms_norm(x, layer.weight), layer(x))
    layer.eps = 0.5  # eps inside the square root
    close(rms_norm(x, layer.weight, eps=0.5), layer(x))


# ---------------------------------------------------------------- RoPE


def test_rope_hand_computed_rotation():
    # d_head = 4: pair 0 turns by m * 1, pair 1 by m * 100**(-1/2)... with base 100: 100**(-2/4) = 0.1
    x = torch.tensor([[1.0, 0.0, 0.0, 2.0]])
    out = apply_rope(x, torch.tensor([3]), base=100.0)
    expected = torch.tensor([[math.cos(3), math.sin(3), -2 * math.sin(0.3), 2 * math.cos(0.3)]])
    close(out, expected)


def test_rope_is_the_complex_multiplication():
    torch.manual_seed(1)
    x = torch.randn(2, 3, 7, 8, dtype=torch.float64)
    positions = torch.tensor([0, 1, 2, 5, 9, 100, 4000])
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    z = torch.view_as_complex(x.reshape(2, 3, 7, 4, 2).contiguous())
    rotated = z * torch.polar(torch.ones(7, 4, dtype=torch.float64), positions[:, None] * theta)
    close(apply_rope(x, positions), torch.view_as_real(rotated).flatten(-2), rtol=1e-12, atol=1e-12)


def test_rope_dot_product_depends_only_on_the_distance():
    torch.manual_seed(2)
    q, k = torch.randn(16, dtype=torch.float64), torch.randn(16, dtype=torch.float64)

    def score(m, n):
        rotated = (
            apply_rope(q[None], torch.tensor([m]))[0] @ apply_rope(k[None], torch.tensor([n]))[0]
        )
        return float(rotated)

    for m, n in [(0, 3), (7, 10), (100, 103)]:
        assert score(m, n) == pytest.approx(score(0, 3), abs=1e-9)
    assert score(0, 4) != pytest.approx(score(0, 3), abs=1e-3)


def test_rope_odd_d_head_raises():
    with pytest.raises(ValueError):
        apply_rope(torch.randn(3, 5), torch.arange(3))


# ---------------------------------------------------------------- SwiGLU


def test_swiglu_by_hand():
    torch.manual_seed(3)
    ffn = SwiGLU(8, 12)
    x = torch.randn(2, 5, 8)
    a, b = x @ ffn.w1.weight.T, x @ ffn.w3.weight.T
    close(ffn(x), (a * torch.sigmoid(a) * b) @ ffn.w2.weight.T)
    assert all(m.bias is None for m in (ffn.w1, ffn.w2, ffn.w3))


# ---------------------------------------------------------------- attention and the cache


def test_attention_is_torch_sdpa_on_rotated_heads():
    torch.manual_seed(4)
    attn = CausalSelfAttention(16, 4)
    x = torch.randn(2, 6, 16)
    y, (k, v) = attn(x)
    pos = torch.arange(6)

    def heads(t):
        return t.view(2, 6, 4, 4).transpose(1, 2)

    q = apply_rope(heads(attn.wq(x)), pos)
    k_ref = apply_rope(heads(attn.wk(x)), pos)
    z = nn.functional.scaled_dot_product_attention(q, k_ref, heads(attn.wv(x)), is_causal=True)
    close(y, attn.wo(z.transpose(1, 2).reshape(2, 6, 16)))
    close(k, k_ref)
    assert v.shape == (2, 4, 6, 4)


def test_cache_in_pieces_is_the_same_as_whole():
    torch.manual_seed(5)
    attn = CausalSelfAttention(16, 2)
    x = torch.randn(3, 9, 16)
    whole, _ = attn(x)
    pieces, cache = [], None
    for a, b in [(0, 4), (4, 5), (5, 9)]:
        y, cache = attn(x[:, a:b], cache)
        pieces.append(y)
    close(torch.cat(pieces, 1), whole)
    assert cache[0].shape == cache[1].shape == (3, 2, 9, 8)


# ---------------------------------------------------------------- TinyLlama, generate_cached


def test_tiny_llama_ties_head_defaults_and_block_size():
    model = TinyLlama(50, 12, d_model=48, n_heads=4, n_layers=2)
    assert model.lm_head.weight is model.tok_emb.weight
    assert model.lm_head.bias is None
    assert model.blocks[0].ffn.w1.out_features == 128  # 8 * 48 / 3 = 128
    assert (
        TinyLlama(50, 12, d_model=32, n_layers=1).blocks[0].ffn.w1.out_features == 128
    )  # 85.3 -> 128
    assert TinyLlama(50, 12, d_model=24, n_layers=1).blocks[0].ffn.w1.out_features == 64
    assert not any(hasattr(model, n) for n in ("pos_emb",))
    logits, cache = model(torch.randint(50, (2, 12)))
    assert logits.shape == (2, 12, 50) and len(cache) == 2
    with pytest.raises(ValueError):
        model(torch.randint(50, (1, 13)))
    _, cache = model(torch.randint(50, (1, 8)))
    with pytest.raises(ValueError):
        model(torch.randint(50, (1, 5)), cache)


def test_tiny_llama_norms_are_rmsnorm_and_cache_matches_whole():
    torch.manual_seed(6)
    model = TinyLlama(30, 16, d_model=32, n_heads=2, n_layers=2)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    block = model.blocks[0]
    x = torch.randn(2, 5, 32)
    oracle = nn.RMSNorm(32, eps=1e-6)
    with torch.no_grad():
        oracle.weight.copy_(block.norm1.weight)
    close(block.norm1(x), oracle(x))
    idx = torch.randint(30, (2, 11))
    whole, _ = model(idx)
    first, cache = model(idx[:, :7])
    rest, cache = model(idx[:, 7:], cache)
    close(torch.cat([first, rest], 1), whole, rtol=1e-4, atol=1e-5)
    # causal: the last token changes no earlier logit
    idx2 = idx.clone()
    idx2[:, -1] = (idx2[:, -1] + 1) % 30
    close(model(idx2)[0][:, :-1], whole[:, :-1])


def _recompute(model, idx, steps, generator, **sampling):
    for _ in range(steps):
        logits, _ = model(idx)
        idx = torch.cat([idx, sample_next_token(logits[:, -1], generator=generator, **sampling)], 1)
    return idx


@pytest.mark.parametrize(
    "sampling",
    [
        {},
        {"temperature": 0.7},
        {"top_k": 3},
        {"top_p": 0.6},
        {"temperature": 1.5, "top_k": 5, "top_p": 0.9},
    ],
)
def test_generate_cached_is_recomputing(sampling):
    torch.manual_seed(7)
    model = TinyLlama(20, 16, d_model=32, n_heads=2, n_layers=2).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(20)  # sharper logits than the initial ~uniform ones
    idx = torch.randint(20, (4, 3))
    got = generate_cached(model, idx, 13, generator=torch.Generator().manual_seed(11), **sampling)
    want = _recompute(model, idx, 13, torch.Generator().manual_seed(11), **sampling)
    assert torch.equal(got, want)
    with pytest.raises(ValueError):
        generate_cached(model, idx, 14)


def test_top_p_keeps_the_smallest_prefix_and_boundary_ties_by_id():
    logits = torch.log(torch.tensor([[0.1, 0.4, 0.2, 0.2, 0.1]]))
    g = torch.Generator().manual_seed(0)
    drawn = set(
        sample_next_token(logits.expand(2000, 5), top_p=0.5, generator=g).flatten().tolist()
    )
    assert drawn == {1, 2}  # 0.4 < 0.5, then 0.2 (id 2 before id 3 at the tie): 0.6 >= 0.5
    drawn = set(
        sample_next_token(logits.expand(2000, 5), top_p=0.05, generator=g).flatten().tolist()
    )
    assert drawn == {1}
    counts = torch.bincount(
        sample_next_token(logits.expand(20000, 5), top_p=0.7, generator=g).flatten(), minlength=5
    )
    assert counts[[0, 4]].sum() == 0 and counts[3] > 0  # 0.4 + 0.2 < 0.7: id 3 joins
    assert abs(counts[1] / 20000 - 0.5) < 0.02  # renormalised: 0.4 / 0.8


class _LogitsOnly(nn.Module):
    """A TinyLlama as notebook 06's generate calls a model: logits only, no cache."""

    def __init__(self, model):
        super().__init__()
        self.model, self.block_size = model, model.block_size

    def forward(self, idx):
        return self.model(idx)[0]


@pytest.mark.parametrize(
    "sampling", [{}, {"temperature": 0.7, "top_k": 5, "top_p": 0.8}, {"top_p": 0.5}]
)
def test_generate_cached_gives_notebook_06s_generate_token_for_token(sampling):
    from autograder.course.n06_autoregressive_lm.reference import generate

    torch.manual_seed(8)
    model = TinyLlama(20, 16, d_model=32, n_heads=2, n_layers=2).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(20)
    idx = torch.randint(20, (8, 3))
    ours = generate_cached(model, idx, 13, generator=torch.Generator().manual_seed(3), **sampling)
    theirs = generate(
        _LogitsOnly(model), idx, 13, generator=torch.Generator().manual_seed(3), **sampling
    )
    assert torch.equal(ours, theirs)
