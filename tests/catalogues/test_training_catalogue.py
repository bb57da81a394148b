"""Notebook 06's training pieces and top_p: every catalogued mistake is caught and named for
what it is, by the visible check and by the grader under other seeds alike, and every right
answer written another way (torch's schedulers, nanoGPT's optimizer groups, clipping by hand,
a nucleus found in a Python loop) gets full marks. The catalogue: tests/catalogues/training_mutants.py.
"""

import pytest
import training_mutants as tm

from autograder.checks import VISIBLE_SEED, run_in_process
from autograder.course.misconceptions import CATALOGUE
from autograder.course.n06_autoregressive_lm import reference as R
from autograder.course.probes import derive_seed
from autograder.results import NOT_IMPLEMENTED

pytestmark = pytest.mark.usefixtures("one_thread")

SEEDS = [
    VISIBLE_SEED,
    derive_seed("ci-secret-one", "student-17", "06"),
    derive_seed("ci-secret-two", "student-42", "06"),
]
NAMESPACE = {"lm_loss": R.lm_loss}


def _run(name, obj, seed):
    return run_in_process(name, obj, seed=seed, namespace=NAMESPACE)


def _show(results):
    return "\n".join(
        f"{r.status} {r.name}: {r.output[:300]} {r.misconceptions}"
        for r in results
        if r.status == "failed"
    )


@pytest.mark.slow  # the whole catalogue under every seed
@pytest.mark.parametrize("entry", tm.MUTANTS, ids=[e[0] for e in tm.MUTANTS])
def test_each_mistake_is_caught_and_named_under_every_seed(entry):
    key, name, obj, expected, phrase = entry
    assert expected is None or expected in CATALOGUE
    assert expected is not None or phrase
    for seed in SEEDS:
        results = _run(name, obj, seed)
        failed = [r for r in results if r.status == "failed"]
        assert failed, f"{key} passes every test under seed {seed}"
        ids = {m for r in results for m in r.misconceptions}
        want = set() if expected is None else {expected}
        assert ids == want, f"{key} under {seed}: ids {ids}, expected {want}\n{_show(results)}"
        if phrase:
            assert any(phrase in r.output for r in failed), (
                f"{key}: {phrase!r} not said\n{_show(results)}"
            )


# the two right answers that cost most (a generate in a Python loop, torch's schedulers stepped
# through a whole run) are swept with the slow tests; the others stay in the fast subset
COSTLY = {"gen-loop", "lr-torch-schedulers"}


@pytest.mark.parametrize(
    "entry",
    [pytest.param(e, marks=pytest.mark.slow) if e[0] in COSTLY else e for e in tm.RIGHT],
    ids=[e[0] for e in tm.RIGHT],
)
def test_right_answers_written_another_way_get_full_marks(entry):
    key, name, obj = entry
    for seed in SEEDS:
        results = _run(name, obj, seed)
        assert all(r.status != "failed" for r in results), f"{key} under {seed}:\n{_show(results)}"


@pytest.mark.parametrize("name", ["lr_at", "configure_optimizer", "train_step", "generate"])
def test_the_reference_passes(name):
    for seed in SEEDS:
        results = _run(name, getattr(R, name), seed)
        assert results and all(r.status == "passed" for r in results), _show(results)


def test_lr_at_against_torchs_schedulers():
    """The reference's schedule is torch's LinearLR warm-up then CosineAnnealingLR, step by
    step (an oracle nobody here wrote), over settings with and without a warm-up."""
    import torch
    from torch import nn

    for warmup, total, max_lr, min_lr in [
        (10, 100, 3e-3, 3e-4),
        (1, 50, 1e-2, 0.0),
        (0, 20, 1.0, 0.1),
    ]:
        opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=max_lr)
        cosine = torch.optim.lr_scheduler.CosineAnnealingLR(
            opt, T_max=max(1, total - 1 - warmup), eta_min=min_lr
        )
        if warmup:
            start = torch.optim.lr_scheduler.LinearLR(
                opt, start_factor=1 / warmup, total_iters=max(warmup - 1, 1)
            )
            schedule = torch.optim.lr_scheduler.SequentialLR(opt, [start, cosine], [warmup])
        else:
            schedule = cosine
        for step in range(total):
            assert R.lr_at(step, max_lr, warmup, total, min_lr) == pytest.approx(
                opt.param_groups[0]["lr"], rel=1e-9, abs=1e-15
            ), (warmup, total, step)
            opt.step()
            schedule.step()
        assert R.lr_at(total + 7, max_lr, warmup, total, min_lr) == min_lr


def test_train_step_against_clip_grad_norm_and_a_hand_written_step():
    """One train_step equals zeroing, cross-entropy, backward, torch's clip_grad_norm_ and
    AdamW's step done by hand on a copy; the loss returned is the one before the step."""
    import copy

    import torch

    torch.manual_seed(3)
    model = R.GPT(9, 6, d_model=16, n_heads=2, n_layers=1)
    twin = copy.deepcopy(model)
    x, y = torch.randint(9, (3, 6)), torch.randint(9, (3, 6))
    opt, twin_opt = R.configure_optimizer(model, 1e-2, 0.1), R.configure_optimizer(twin, 1e-2, 0.1)
    for p in model.parameters():
        p.grad = torch.ones_like(p)  # left over: must not count
    model.eval()
    loss = R.train_step(model, opt, x, y, clip=0.05)
    twin.train()
    logits = twin(x)
    want = torch.nn.functional.cross_entropy(logits.reshape(-1, 9), y.reshape(-1))
    want.backward()
    norm = torch.nn.utils.clip_grad_norm_(twin.parameters(), 0.05)
    twin_opt.step()
    assert norm > 0.05  # the clip was active
    assert loss == pytest.approx(want.item(), rel=1e-6)
    assert model.training
    for a, b in zip(model.parameters(), twin.parameters(), strict=True):
        torch.testing.assert_close(a, b)


def test_configure_optimizer_groups_of_a_tied_gpt():
    model = R.GPT(9, 6, d_model=16, n_heads=2, n_layers=1)
    model.head.weight = model.tok_emb.weight
    opt = R.configure_optimizer(model, 1e-3, 0.2)
    ids = [id(p) for g in opt.param_groups for p in g["params"]]
    assert len(ids) == len(set(ids)) == len(list(model.parameters()))
    decay, other = opt.param_groups
    assert decay["weight_decay"] == 0.2 and other["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() < 2 for p in other["params"])
    assert opt.defaults["betas"] == (0.9, 0.95) and isinstance(opt, __import__("torch").optim.AdamW)


def test_top_p_by_hand():
    """A fixed row of probabilities: the nucleus counted by hand, ties by id, top_p=1.0 and
    a top_p below the largest probability."""
    import numpy as np
    import torch
    from torch import nn

    class Fixed(nn.Module):
        block_size = 4

        def __init__(self, probs):
            super().__init__()
            self.logits = torch.log(torch.tensor(probs))

        def forward(self, idx):
            return self.logits.expand(idx.shape[0], idx.shape[1], -1)

    def support(probs, **kw):
        g = torch.Generator().manual_seed(0)
        out = R.generate(Fixed(probs), torch.zeros(3000, 1, dtype=torch.long), 1, generator=g, **kw)
        return sorted(set(out[:, -1].tolist()))

    p = [0.1, 0.3, 0.3, 0.2, 0.1]
    assert support(p, top_p=0.5) == [1, 2]  # 0.3 < 0.5: both tied 0.3s, the second crosses
    assert support(p, top_p=0.25) == [1]  # ties: the lower id
    assert support(p, top_p=0.65) == [1, 2, 3]
    assert support(p, top_p=0.01) == [1]  # at least one token
    assert support(p, top_p=1.0) == [0, 1, 2, 3, 4]
    assert support(p, top_p=0.75, top_k=2) == [1, 2]
    assert np.isclose(sum(p), 1.0)


@pytest.mark.parametrize("name", ["lr_at", "configure_optimizer", "train_step"])
def test_an_unfinished_exercise_scores_zero_and_says_so(name):
    def unfinished(*args, **kwargs):
        raise NotImplementedError

    results = _run(name, unfinished, VISIBLE_SEED)
    assert results and all(r.score == 0 for r in results)
    assert all(r.reason == NOT_IMPLEMENTED for r in results), _show(results)
