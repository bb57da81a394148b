"""The torch notebooks' cases (05-06) judged from stored data equal the cases the probes build.

Every case built with the visible seed is a Judgement of plain data (judging.store can save it),
and for the reference and a representative set of mutants and alternatives per graded name
(tests/course/torch_shared/test_probes_torch.py's catalogue), the results of the stored cases (load_cases + serve +
judge_cases, as the student handout runs them) equal the live cases' results field by field.
The judges import no model answer, probe or variant.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from torch_gap_mutants import (
    BlockAfterSum,
    BlockNotRescaled,
    FFThreeAxes,
    GPTDropsInEval,
    TokenizerKeyError,
    loss_view,
    pe_float64,
)
from torch_probe_mutants import (
    NAMES_05,
    NAMES_06,
    BlockSequential,
    GPTIndexError,
    GPTUnusedLayer,
    MHADetached,
    MHAMisnamed,
    R,
    TokenizerDict,
    TokenizerSilent,
    TokenizerUnsorted,
    _pe,
    _stub_function,
    _StubClass,
    batch_global_rng,
    batch_not_shifted,
    batch_unfold,
    examples_first_tokens,
    examples_label_inside,
    examples_loop,
    generate_argmax,
    generate_categorical,
    ln_eps_outside,
    ln_in_place,
    ln_torch,
    ln_unbiased_var,
    loss_double_softmax,
    loss_nll,
    loss_numpy,
    loss_sum,
    make_block,
    make_ff,
    make_generate,
    make_gpt,
    make_mha,
    pe_loop,
    pe_vector,
)

from autograder.checks import VISIBLE_SEED, run_in_process
from autograder.course.probes import build_cases, write_requests
from autograder.curriculum import NOTEBOOK_OF
from autograder.harness import serve
from autograder.judging import Judgement
from autograder.judging.answers import judge_cases
from autograder.judging.store import load_cases, request_dir, save_cases

NAMES = NAMES_05 + NAMES_06

# Per graded name, besides the reference and a stub: mutants of different misconceptions
# (True: loses marks) and alternatives (False: full marks), from the catalogue.
SUBJECTS = {
    "layer_norm": [
        (ln_unbiased_var, True),
        (ln_eps_outside, True),
        (ln_in_place, True),
        (ln_torch, False),
    ],
    "sinusoidal_positional_encoding": [
        (_pe(pe_loop, swap=True), True),
        (_pe(pe_vector, split=True), True),
        (_pe(pe_vector, exponent="i"), True),
        (_pe(pe_vector), False),
        (pe_float64, True),
    ],
    "MultiHeadAttention": [
        (make_mha("view", "missing-scale"), True),
        (make_mha("einsum", "mask-inverted"), True),
        (make_mha("view", "heads-reshape-without-transpose"), True),
        (MHAMisnamed, True),
        (MHADetached, True),
        (make_mha("einsum"), False),
    ],
    "FeedForward": [
        (make_ff("missing-activation"), True),
        (make_ff("gelu-tanh"), True),
        (make_ff(style="module"), False),
        (FFThreeAxes, True),
    ],
    "TransformerBlock": [
        (make_block("no-ff-residual"), True),
        (make_block("always-post"), True),
        (BlockSequential, False),
        (BlockAfterSum, True),
        (BlockNotRescaled, True),
    ],
    "make_examples": [
        (examples_label_inside, True),
        (examples_first_tokens, True),
        (examples_loop, False),
    ],
    "CharTokenizer": [
        (TokenizerUnsorted, True),
        (TokenizerSilent, True),
        (TokenizerKeyError, True),
        (TokenizerDict, False),
    ],
    "get_batch": [(batch_not_shifted, True), (batch_global_rng, True), (batch_unfold, False)],
    "GPT": [
        (make_gpt("no-mask"), True),
        (GPTIndexError, True),
        (GPTUnusedLayer, True),
        (GPTDropsInEval, True),
    ],
    "lm_loss": [
        (loss_sum, True),
        (loss_double_softmax, True),
        (loss_numpy, True),
        (loss_view, True),
        (loss_nll, False),
    ],
    "generate": [
        (make_generate("no-crop"), True),
        (make_generate("temperature-multiplied"), True),
        (generate_argmax, True),
        (generate_categorical, True),
    ],
}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _cases(name, training=True):
    cases = build_cases(NOTEBOOK_OF[name].stem, VISIBLE_SEED, functions={name})
    # GPT's training run (10-20 s) is judged for the reference only
    return cases if training else [c for c in cases if "training run" not in c.name]


@pytest.fixture(scope="module")
def stored():
    """Every torch graded name's visible cases, built once and saved: {name: (cases, folder)};
    for GPT also its cases without the training run ("GPT-untrained")."""
    with tempfile.TemporaryDirectory(prefix="stored-torch-") as tmp:
        out = {}
        for name, key, training in [(n, n, True) for n in NAMES] + [
            ("GPT", "GPT-untrained", False)
        ]:
            cases = _cases(name, training)
            save_cases(cases, Path(tmp, key))
            out[key] = (cases, Path(tmp, key))
        yield out


def _results(results):
    return [
        (r.name, r.score, r.max_score, r.output, r.notebook, r.function, r.misconceptions)
        for r in results
    ]


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", NAMES)
def test_every_visible_case_is_a_judgement_that_round_trips(name, stored, tmp_path):
    cases, folder = stored[name]
    loaded = load_cases(folder, name)
    assert [(c.function, c.name, c.points, c.seconds, len(c.requests)) for c in loaded] == [
        (c.function, c.name, c.points, c.seconds, len(c.requests)) for c in cases
    ]
    for case, back in zip(cases, loaded, strict=True):
        assert isinstance(case.judge, Judgement)
        assert case.judge.name.startswith(("block_judges.", "lm_judges.", "training_judges."))
        assert back.judge.name == case.judge.name
        assert set(back.judge.params) == set(case.judge.params)
    # the stored requests are, byte for byte, the ones the grader writes for the live cases
    write_requests(cases, tmp_path / "live")
    assert _files(request_dir(folder, name)) == _files(tmp_path / "live" / name)


@pytest.mark.parametrize(
    ("name", "subject"),
    [(n, s) for n in NAMES for s in ["reference", "stub"]]
    + [  # the mistakes and the alternatives: slow (`pytest -m "not slow"` keeps the two above)
        pytest.param(n, s, marks=pytest.mark.slow) for n in NAMES for s in range(len(SUBJECTS[n]))
    ],
)
def test_stored_cases_judge_exactly_as_live_ones(name, subject, stored, tmp_path):
    """One set of answers (to the stored requests, equal to the live ones as tested above),
    judged by the live cases and by the stored ones."""
    if subject == "reference":
        obj, loses = getattr(R, name), False
    elif subject == "stub":
        obj, loses = (_StubClass if name[0].isupper() else _stub_function), True
    else:
        obj, loses = SUBJECTS[name][subject]
    key = "GPT-untrained" if name == "GPT" and subject != "reference" else name
    cases, folder = stored[key]
    serve({name: obj}, request_dir(folder, name), tmp_path / name)
    live = _results(judge_cases(cases, tmp_path))
    from_store = _results(judge_cases(load_cases(folder, name), tmp_path))
    assert from_store == live
    lost = sum(r[1] for r in live) < sum(r[2] for r in live)
    assert lost == loses, live


# A student's machine: importing a model answer, a probe or a variant fails; the stored cases of
# one graded name judge a mutant, and the torch judges are found by their stored names.
STUDENT_SIDE = """
import importlib.abc, json, re, sys

FORBIDDEN = ("autograder.course.model_answers", "autograder.course.probes", "autograder.course.misconceptions.")
# a notebook folder's answers, cases and variants, and what builds the torch cases
COURSE = re.compile(r"autograder[.]course[.][a-z0-9_]+[.](reference|cases|variants|tools)")


class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.startswith(FORBIDDEN) or COURSE.match(name):
            raise ImportError(f"{name} is not in the handout")
        return None


sys.meta_path.insert(0, Block())

import torch
from autograder.harness import serve
from autograder.judging.answers import judge_cases
from autograder.judging.store import load_cases, request_dir


def layer_norm(x, weight, bias, eps=1e-5):  # torch.var's default: the unbiased variance
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(x.var(-1, keepdim=True) + eps) * weight + bias


folder, responses = sys.argv[1], sys.argv[2]
serve({"layer_norm": layer_norm}, request_dir(folder, "layer_norm"), responses + "/layer_norm")
results = judge_cases(load_cases(folder, "layer_norm"), responses)
assert not [m for m in sys.modules if m.startswith(FORBIDDEN) or COURSE.match(m)]
assert "autograder.course.n05_transformer_block.judges" in sys.modules
print(json.dumps([[r.name, r.score, r.output, r.misconceptions] for r in results]))
"""


@pytest.mark.slow  # a fresh interpreter
def test_stored_cases_are_judged_with_the_answers_probes_and_variants_out_of_reach(
    stored, tmp_path
):
    cases, folder = stored["layer_norm"]
    out = subprocess.run(
        [sys.executable, "-c", STUDENT_SIDE, str(folder), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    live = run_in_process("layer_norm", ln_unbiased_var)
    assert got == [[r.name, r.score, r.output, r.misconceptions] for r in live]
    assert any("layernorm-unbiased-variance" in ids for *_, ids in got)
