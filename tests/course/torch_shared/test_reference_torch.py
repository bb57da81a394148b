"""The PyTorch model answers (notebooks 05-06) against torch's own layers and hand-written oracles."""

import math
import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograder.course.model_answers import (
    GPT,
    CharTokenizer,
    FeedForward,
    LayerNorm,
    MultiHeadAttention,
    TransformerBlock,
    generate,
    get_batch,
    layer_norm,
    lm_loss,
    make_examples,
    sinusoidal_positional_encoding,
)

RTOL, ATOL = 1e-4, 1e-5  # SPEC: float32 tolerances


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny tensors: a second intra-op thread only adds contention on a busy machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def close(actual, expected, rtol=RTOL, atol=ATOL):
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol)


def causal(n):
    """True = may attend (ours); torch's nn layers want the negation."""
    return torch.ones(n, n, dtype=torch.bool).tril()


# ---------------------------------------------------------------- 05 layer norm, positions


@pytest.mark.parametrize("eps", [1e-5, 1e-2])
@pytest.mark.parametrize("shape", [(7,), (3, 7), (2, 3, 7)])
def test_layer_norm_matches_torch(shape, eps):
    g = torch.Generator().manual_seed(0)
    x = 3 * torch.randn(shape, generator=g) + 1
    w, b = torch.randn(7, generator=g), torch.randn(7, generator=g)
    x_before = x.clone()
    out = layer_norm(x, w, b, eps=eps)
    close(out, F.layer_norm(x, (7,), w, b, eps))
    ln = nn.LayerNorm(7, eps=eps)
    with torch.no_grad():
        ln.weight.copy_(w)
        ln.bias.copy_(b)
    close(out, ln(x))
    torch.testing.assert_close(x, x_before, rtol=0, atol=0)


def test_layer_norm_default_eps_and_module():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 5, 6, generator=g) * 0.01  # small variance: the eps placement matters
    ours, theirs = LayerNorm(6), nn.LayerNorm(6)
    with torch.no_grad():
        for p in (ours.weight, ours.bias):
            p.copy_(torch.randn(6, generator=g))
        theirs.load_state_dict(ours.state_dict())
    close(ours(x), theirs(x))
    close(layer_norm(x, ours.weight, ours.bias), F.layer_norm(x, (6,), ours.weight, ours.bias))
    close(ours(x), layer_norm(x, ours.weight, ours.bias))  # the module is the function
    wide = LayerNorm(6, eps=1e-2)
    wide.load_state_dict(ours.state_dict())
    close(wide(x), layer_norm(x, ours.weight, ours.bias, eps=1e-2))  # and keeps its eps


def test_gradcheck_layer_norm():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 3, 5, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.randn(5, dtype=torch.float64, generator=g, requires_grad=True)
    b = torch.randn(5, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(layer_norm, (x, w, b))


@pytest.mark.parametrize(
    ("n_positions", "d_model", "base"),
    [(6, 8, 10000.0), (5, 7, 100.0), (3, 1, 10.0), (50, 16, 10000.0)],
)
def test_positional_encoding_formula(n_positions, d_model, base):
    P = sinusoidal_positional_encoding(n_positions, d_model, base=base)
    assert isinstance(P, torch.Tensor) and P.shape == (n_positions, d_model)
    for k in range(n_positions):
        for j in range(d_model):
            angle = k / base ** (2 * (j // 2) / d_model)
            expected = math.sin(angle) if j % 2 == 0 else math.cos(angle)
            assert abs(P[k, j].item() - expected) < 1e-6, (k, j)


def test_positional_encoding_default_base_is_10000():
    close(sinusoidal_positional_encoding(4, 6), sinusoidal_positional_encoding(4, 6, base=10000.0))
    assert (
        abs(sinusoidal_positional_encoding(3, 6)[2, 2].item() - math.sin(2 / 10000 ** (2 / 6)))
        < 1e-6
    )


# ---------------------------------------------------------------- 05 attention module


def copy_into_torch_mha(ours, theirs):
    with torch.no_grad():
        theirs.in_proj_weight.copy_(
            torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight])
        )
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        if ours.q_proj.bias is not None:
            theirs.in_proj_bias.copy_(
                torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias])
            )
            theirs.out_proj.bias.copy_(ours.out_proj.bias)


def randomize_biases(module, g):
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=g))


def test_mha_module_has_the_spec_submodules():
    m = MultiHeadAttention(8, 2, bias=False)
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        lin = getattr(m, name)
        assert isinstance(lin, nn.Linear) and lin.weight.shape == (8, 8) and lin.bias is None
    assert MultiHeadAttention(8, 2).q_proj.bias.shape == (8,)


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_mha_module_matches_torch(bias, masked):
    torch.manual_seed(3)
    g = torch.Generator().manual_seed(3)
    d, H, B, n = 12, 3, 2, 5
    ours = MultiHeadAttention(d, H, bias=bias)
    randomize_biases(ours, g)
    theirs = nn.MultiheadAttention(d, H, bias=bias, batch_first=True)
    copy_into_torch_mha(ours, theirs)
    x = torch.randn(B, n, d, generator=g)
    mask = causal(n) if masked else None
    y, attn = ours(x, mask=mask)
    blocked = None if mask is None else ~mask  # nn.MultiheadAttention: True = blocked
    y_t, attn_t = theirs(x, x, x, attn_mask=blocked, need_weights=True, average_attn_weights=False)
    assert y.shape == (B, n, d) and attn.shape == (B, H, n, n)
    close(y, y_t)
    close(attn, attn_t)
    if masked:
        assert (attn[..., ~mask] == 0).all()


def test_mha_module_cross_attention_matches_torch():
    torch.manual_seed(4)
    g = torch.Generator().manual_seed(4)
    d, H, B, n, n_k = 8, 2, 3, 4, 7
    ours = MultiHeadAttention(d, H)
    randomize_biases(ours, g)
    theirs = nn.MultiheadAttention(d, H, batch_first=True)
    copy_into_torch_mha(ours, theirs)
    x, context = torch.randn(B, n, d, generator=g), torch.randn(B, n_k, d, generator=g)
    y, attn = ours(x, context=context)
    y_t, attn_t = theirs(x, context, context, average_attn_weights=False)
    assert y.shape == (B, n, d) and attn.shape == (B, H, n, n_k)
    close(y, y_t)
    close(attn, attn_t)
    # with a (n, n_k) mask as well, True = may attend
    mask = torch.rand(n, n_k, generator=g) < 0.5
    mask[:, 0] = True
    y, attn = ours(x, mask=mask, context=context)
    y_t, attn_t = theirs(x, context, context, attn_mask=~mask, average_attn_weights=False)
    close(y, y_t)
    close(attn, attn_t)


def test_mha_module_per_batch_per_head_mask():
    torch.manual_seed(5)
    g = torch.Generator().manual_seed(5)
    d, H, B, n = 8, 2, 3, 4
    ours = MultiHeadAttention(d, H)
    theirs = nn.MultiheadAttention(d, H, batch_first=True)
    copy_into_torch_mha(ours, theirs)
    x = torch.randn(B, n, d, generator=g)
    mask = torch.rand(B, H, n, n, generator=g) < 0.5
    mask[..., 0] = True
    y, attn = ours(x, mask=mask)
    # nn.MultiheadAttention takes a 3-d mask as (B*H, n, n), batch-major
    y_t, attn_t = theirs(x, x, x, attn_mask=~mask.flatten(0, 1), average_attn_weights=False)
    close(y, y_t)
    close(attn, attn_t)


def test_gradcheck_mha_module():
    torch.manual_seed(6)
    mha = MultiHeadAttention(4, 2).double()
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    context = torch.randn(2, 5, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: mha(x, mask=causal(3))[0], (x,))
    assert torch.autograd.gradcheck(lambda x, c: mha(x, context=c)[0], (x, context))


# ---------------------------------------------------------------- 05 feed-forward, block


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_feed_forward_matches_formula(activation):
    torch.manual_seed(7)
    ff = FeedForward(6, 10, activation=activation)
    assert ff.fc1.weight.shape == (10, 6) and ff.fc2.weight.shape == (6, 10)
    x = 2 * torch.randn(2, 4, 6)
    h = x @ ff.fc1.weight.T + ff.fc1.bias
    if activation == "relu":
        h = torch.clamp(h, min=0)
    else:  # exact GELU: x * Phi(x)
        h = 0.5 * h * (1 + torch.erf(h / math.sqrt(2)))
    close(ff(x), h @ ff.fc2.weight.T + ff.fc2.bias)


def test_feed_forward_default_is_relu():
    torch.manual_seed(8)
    ff = FeedForward(4, 8)
    x = torch.randn(3, 4)
    close(ff(x), ff.fc2(torch.relu(ff.fc1(x))))


def torch_layer_from(block, d_model, n_heads, d_ff, norm_first):
    layer = nn.TransformerEncoderLayer(
        d_model, n_heads, d_ff, dropout=0.0, activation="relu", batch_first=True,
        norm_first=norm_first,
    )  # fmt: skip
    copy_into_torch_mha(block.attn, layer.self_attn)
    with torch.no_grad():
        for src, dst in [
            (block.ff.fc1, layer.linear1),
            (block.ff.fc2, layer.linear2),
            (block.ln1, layer.norm1),
            (block.ln2, layer.norm2),
        ]:
            dst.weight.copy_(src.weight)
            dst.bias.copy_(src.bias)
    return layer


def random_block(d_model, n_heads, d_ff, norm_first, seed):
    torch.manual_seed(seed)
    block = TransformerBlock(d_model, n_heads, d_ff, norm_first=norm_first)
    g = torch.Generator().manual_seed(seed)
    randomize_biases(block, g)
    with torch.no_grad():  # layer-norm gains away from 1, so swapping ln1/ln2 would show
        block.ln1.weight.copy_(1 + 0.5 * torch.randn(d_model, generator=g))
        block.ln2.weight.copy_(1 + 0.5 * torch.randn(d_model, generator=g))
    return block


@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_block_matches_torch_encoder_layer(norm_first, masked, train):
    d, H, d_ff, B, n = 8, 2, 16, 3, 5
    block = random_block(d, H, d_ff, norm_first, seed=9)
    layer = torch_layer_from(block, d, H, d_ff, norm_first)
    block.train(train)
    layer.train(train)
    x = torch.randn(B, n, d, generator=torch.Generator().manual_seed(10))
    mask = causal(n) if masked else None
    out = block(x, mask=mask)
    assert out.shape == (B, n, d)
    with torch.no_grad():
        expected = layer(x, src_mask=None if mask is None else ~mask)  # torch: True = blocked
    close(out, expected)
    if masked:
        with torch.no_grad():
            close(
                out,
                layer(
                    x, src_mask=nn.Transformer.generate_square_subsequent_mask(n), is_causal=True
                ),
            )


def test_transformer_block_is_causal_with_mask():
    block = random_block(8, 2, 16, True, seed=11)
    x = torch.randn(2, 6, 8)
    x2 = x.clone()
    x2[:, 4:] += 3.0
    out, out2 = block(x, causal(6)), block(x2, causal(6))
    close(out2[:, :4], out[:, :4])
    assert not torch.allclose(out2[:, 4:], out[:, 4:])


@pytest.mark.parametrize("norm_first", [True, False])
def test_gradcheck_transformer_block(norm_first):
    block = random_block(4, 2, 6, norm_first, seed=12).double()
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: block(x, mask=causal(3)), (x,))


# ---------------------------------------------------------------- 06 examples, tokenizer, batches

SENTENCE = "To date, the cleverest thinker of all time was Issac".split()


def test_make_examples_on_the_lecture_sentence():
    pairs = make_examples(SENTENCE, context_size=len(SENTENCE))
    assert pairs[0] == (["To"], "date,")
    assert len(pairs) == len(SENTENCE) - 1
    assert pairs[-1] == (SENTENCE[:-1], "Issac")
    for t, (feature, label) in enumerate(pairs, start=1):
        assert feature == SENTENCE[:t] and label == SENTENCE[t]


@pytest.mark.parametrize("context_size", [1, 3, 5])
def test_make_examples_keeps_the_latest_context_size_tokens(context_size):
    pairs = make_examples(SENTENCE, context_size)
    assert pairs[0] == (["To"], "date,")
    issac = [feature for feature, label in pairs if label == "Issac"]
    assert issac == [SENTENCE[-1 - context_size : -1]]
    for t, (feature, label) in enumerate(pairs, start=1):
        assert feature == SENTENCE[max(0, t - context_size) : t] and label == SENTENCE[t]
    assert pairs[-2][1] == "was"
    if context_size == 3:
        assert issac[0] == ["all", "time", "was"]


def test_char_tokenizer_vocabulary_and_round_trip():
    text = "hello world, hello attention!"
    tok = CharTokenizer(text)
    chars = sorted(set(text))
    assert tok.vocab_size == len(chars) == 14
    assert tok.encode("hello") == [chars.index(c) for c in "hello"]
    assert tok.encode(" ") == [0]  # the space sorts first
    for s in ["", "hello", "attention, world!", text]:
        assert tok.decode(tok.encode(s)) == s
    assert tok.decode(list(range(tok.vocab_size))) == "".join(chars)


@pytest.mark.parametrize("unknown", ["z", "Q", "?"])
def test_char_tokenizer_unknown_character_is_named(unknown):
    tok = CharTokenizer("hello world")
    with pytest.raises((ValueError, LookupError), match=re.escape(unknown)):
        tok.encode(f"hello{unknown}")


def test_get_batch_windows():
    N, B, T = 50, 64, 8
    data = torch.randperm(N, generator=torch.Generator().manual_seed(13))  # distinct values
    x, y = get_batch(data, B, T, generator=torch.Generator().manual_seed(14))
    assert x.shape == (B, T) and y.shape == (B, T)
    assert x.dtype == torch.long and y.dtype == torch.long
    position = torch.argsort(data)  # position[v] = index of value v in data
    for b in range(B):
        start = position[x[b, 0]].item()
        assert 0 <= start and start + T + 1 <= N  # the whole window (and its target) inside data
        assert torch.equal(x[b], data[start : start + T])
        assert torch.equal(y[b], data[start + 1 : start + T + 1])
        assert torch.equal(y[b, :-1], x[b, 1:])


def test_get_batch_reaches_both_ends_of_data():
    data = torch.arange(10, 20)
    T = 8  # two valid windows: starts 0 and 1
    x, y = get_batch(data, 200, T, generator=torch.Generator().manual_seed(15))
    assert set(x[:, 0].tolist()) == {10, 11}
    assert y.max().item() == 19


def test_get_batch_is_reproducible_with_a_generator():
    data = torch.randint(0, 50, (200,), generator=torch.Generator().manual_seed(16))
    x1, y1 = get_batch(data, 16, 10, generator=torch.Generator().manual_seed(17))
    x2, y2 = get_batch(data, 16, 10, generator=torch.Generator().manual_seed(17))
    x3, _ = get_batch(data, 16, 10, generator=torch.Generator().manual_seed(18))
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert not torch.equal(x1, x3)


# ---------------------------------------------------------------- 06 GPT, loss, generation


def small_gpt(vocab_size=11, block_size=8, seed=19, **kw):
    torch.manual_seed(seed)
    kw = {"d_model": 16, "n_heads": 2, "n_layers": 2} | kw
    return GPT(vocab_size, block_size, **kw).eval()


def test_gpt_shapes_and_block_size():
    model = small_gpt()
    assert model.block_size == 8
    idx = torch.randint(0, 11, (3, 8))
    assert model(idx).shape == (3, 8, 11)
    assert model(idx[:, :2]).shape == (3, 2, 11)
    with pytest.raises(ValueError):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_gpt_is_causal():
    model = small_gpt()
    with torch.no_grad():  # the tiny init makes logit differences small: sharpen the weights
        for p in model.parameters():
            p.mul_(20)
    g = torch.Generator().manual_seed(20)
    idx = torch.randint(0, 11, (2, 8), generator=g)
    logits = model(idx)
    for t in range(1, 8):
        idx2 = idx.clone()
        idx2[:, t] = (idx[:, t] + 1) % 11
        logits2 = model(idx2)
        torch.testing.assert_close(logits2[:, :t], logits[:, :t], rtol=1e-5, atol=1e-6)
        assert (logits2[:, t] - logits[:, t]).abs().max() > 1e-3  # the changed token is seen


def test_gpt_initial_loss_is_log_vocab_size():
    V = 65
    model = small_gpt(vocab_size=V, block_size=16, d_model=32, n_heads=4, seed=21)
    idx = torch.randint(0, V, (16, 16), generator=torch.Generator().manual_seed(22))
    targets = torch.randint(0, V, (16, 16), generator=torch.Generator().manual_seed(23))
    with torch.no_grad():
        loss = lm_loss(model(idx), targets)
    assert abs(loss.item() - math.log(V)) < 0.1


def test_lm_loss_is_mean_cross_entropy():
    g = torch.Generator().manual_seed(24)
    B, T, V = 3, 5, 7
    logits, targets = (
        3 * torch.randn(B, T, V, generator=g),
        torch.randint(0, V, (B, T), generator=g),
    )
    loss = lm_loss(logits, targets)
    assert loss.ndim == 0
    close(loss, F.cross_entropy(logits.reshape(B * T, V), targets.reshape(B * T)))
    manual = sum(
        torch.logsumexp(logits[b, t], 0) - logits[b, t, targets[b, t]]
        for b in range(B)
        for t in range(T)
    ) / (B * T)
    close(loss, manual)


def test_gradcheck_lm_loss():
    g = torch.Generator().manual_seed(25)
    logits = torch.randn(2, 3, 5, dtype=torch.float64, generator=g, requires_grad=True)
    targets = torch.randint(0, 5, (2, 3), generator=g)
    assert torch.autograd.gradcheck(lambda z: lm_loss(z, targets), (logits,))


def test_gpt_trains_end_to_end():
    model = small_gpt().train()
    idx = torch.randint(0, 11, (2, 8))
    lm_loss(model(idx[:, :-1]), idx[:, 1:]).backward()
    assert all(p.grad is not None for p in model.parameters())


def test_generate_top_k_1_is_greedy():
    model = small_gpt(seed=26)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(20)
    prompt = torch.randint(0, 11, (3, 2), generator=torch.Generator().manual_seed(27))
    out = generate(model, prompt, 12, top_k=1, generator=torch.Generator().manual_seed(28))
    expected = prompt.clone()
    with torch.no_grad():
        for _ in range(12):
            logits = model(expected[:, -model.block_size :])[:, -1]
            expected = torch.cat([expected, logits.argmax(-1, keepdim=True)], dim=1)
    assert out.shape == (3, 14)
    assert torch.equal(out, expected)
    assert torch.equal(out[:, :2], prompt)


class Recorder(nn.Module):
    """Wraps a model and records every input it is shown."""

    def __init__(self, model):
        super().__init__()
        self.model, self.block_size, self.seen = model, model.block_size, []

    def forward(self, idx):
        self.seen.append(idx.clone())
        return self.model(idx)


def test_generate_crops_the_context_to_block_size():
    model = Recorder(small_gpt(block_size=8))
    prompt = torch.randint(0, 11, (2, 8))
    out = generate(model, prompt, 20, generator=torch.Generator().manual_seed(29))
    assert out.shape == (2, 28)
    assert torch.equal(out[:, :8], prompt)
    assert len(model.seen) == 20
    for step, idx in enumerate(model.seen):
        assert idx.shape[1] <= 8
        assert torch.equal(idx, out[:, : 8 + step][:, -8:])  # the latest block_size tokens


class FixedLogits(nn.Module):
    """A toy language model: the same next-token logits whatever the context."""

    block_size = 4

    def __init__(self, logits):
        super().__init__()
        self.logits = logits

    def forward(self, idx):
        return self.logits.expand(*idx.shape, -1)


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_generate_temperature_divides_the_logits(temperature):
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0, 0.5])
    n = 40_000
    out = generate(
        FixedLogits(logits), torch.zeros(n, 1, dtype=torch.long), 1,
        temperature=temperature, generator=torch.Generator().manual_seed(30),
    )  # fmt: skip
    assert out.shape == (n, 2)
    freq = torch.bincount(out[:, 1], minlength=5).double() / n
    p = torch.softmax(logits.double() / temperature, dim=0)
    sigma = torch.sqrt(p * (1 - p) / n)
    assert ((freq - p).abs() < 5 * sigma + 1e-4).all(), (freq, p)
    chi2 = (n * (freq - p) ** 2 / p).sum().item()
    assert chi2 < 20.5  # chi-square, 4 degrees of freedom: P(chi2 > 20.5) < 0.001


def test_generate_top_k_never_samples_outside_the_top_k():
    logits = torch.linspace(0, 0.9, 10)  # nearly flat: without top_k every token would appear
    logits = logits[torch.randperm(10, generator=torch.Generator().manual_seed(31))]
    top3 = set(torch.topk(logits, 3).indices.tolist())
    out = generate(
        FixedLogits(logits), torch.zeros(500, 1, dtype=torch.long), 6,
        top_k=3, generator=torch.Generator().manual_seed(32),
    )  # fmt: skip
    assert out.shape == (500, 7)
    assert set(out[:, 1:].flatten().tolist()) == top3


def test_generate_is_reproducible_with_a_generator():
    model = small_gpt(seed=33)
    prompt = torch.zeros(4, 1, dtype=torch.long)
    a = generate(model, prompt, 10, generator=torch.Generator().manual_seed(34))
    torch.manual_seed(35)  # the global RNG must not matter
    b = generate(model, prompt, 10, generator=torch.Generator().manual_seed(34))
    c = generate(model, prompt, 10, generator=torch.Generator().manual_seed(36))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)
