"""Sentences of notebooks 06 and 07 that state a checkable fact, checked (issue 36's corrections).

Each test reads the sentence from the solution notebook (so it fails if the prose changes to
something false) and compares it with an oracle: the model answers, PyTorch itself, arithmetic
worked by hand, or, for the executed notebook, the numbers printed beside the sentence.
"""

import ast
import inspect
import json
import math
import re
import sys
from pathlib import Path

import pytest
import torch

from autograder.course.n07_modern_lm.reference import BPETokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "support"))
from fixtures import executed_solution, stdout  # noqa: E402

SOLUTIONS = Path(__file__).resolve().parents[3] / "solutions"
LM = ("06_autoregressive_lm", "07_modern_lm")


def notebook(stem):
    return json.loads((SOLUTIONS / f"{stem}.ipynb").read_text(encoding="utf-8"))


def markdown(stem):
    """Every markdown cell of a notebook, on one line with single spaces."""
    return [
        " ".join("".join(c["source"]).split())
        for c in notebook(stem)["cells"]
        if c["cell_type"] == "markdown"
    ]


def code_cell(stem, cell_id):
    (found,) = [c for c in notebook(stem)["cells"] if c.get("id") == cell_id]
    return "".join(found["source"])


def test_the_bpe_hand_example_ends_with_the_tokens_the_tokenizer_gives():
    text = next(t for t in markdown("07_modern_lm") if "By hand, on a small string" in t)
    merges, length, before, spelled = re.search(
        r"(\w+) merges, and the string is (\d+) tokens long instead of (\d+) \(([^)]+)\)", text
    ).groups()
    tok = BPETokenizer("aaabdaaabac", vocab_size=300)
    ids = tok.encode("aaabdaaabac")
    assert ids == [258, ord("d"), 258, ord("a"), ord("c")]  # minbpe's README, traced by hand
    assert {"three": 3}[merges] == len(tok.merges)
    assert int(length) == len(ids) and int(before) == len("aaabdaaabac")
    assert spelled.split() == [str(i) if i > 255 else chr(i) for i in ids]


@pytest.mark.parametrize("stem", LM)
def test_every_nats_to_bits_conversion_in_the_prose_is_right(stem):
    found = [
        (float(a), float(b))
        for t in markdown(stem)
        for a, b in re.findall(r"(\d+\.\d+) / ln 2 ≈ (\d+\.\d+)", t)
    ]
    if stem == "07_modern_lm":
        assert found, "section 8 converts notebook 06's loss to bits"
    for nats, bits in found:
        decimals = len(str(bits).split(".")[1])
        assert round(nats / math.log(2), decimals) == bits, (nats, bits)


@pytest.mark.parametrize("stem", LM)
def test_every_sort_the_prose_suggests_is_one_pytorch_accepts(stem):
    """A tip such as `sort(-1, descending=True, stable=True)` raises TypeError in PyTorch."""
    calls = [call for t in markdown(stem) for call in re.findall(r"`([^`]*\bsort\([^`]*\))`", t)]
    if stem == "06_autoregressive_lm":
        assert calls, "section 10 tells how to sort the probabilities"
    probs = torch.tensor([[0.2, 0.5, 0.2, 0.1]])
    for call in calls:
        values, order = eval(call, {"torch": torch, "probs": probs})  # noqa: S307 - our prose
        assert torch.equal(values, probs[:, [1, 0, 2, 3]])
        assert order.tolist() == [[1, 0, 2, 3]], "stable: equal probabilities keep id order"


def test_the_intro_of_07_counts_neither_tying_nor_the_cache_as_a_change_from_gpt2():
    intro = markdown("07_modern_lm")[0]
    changes = intro.split("they changed almost every piece around the attention:")[1]
    changes = changes.split("Two more pieces are not changes from GPT-2")[0]
    assert "weights" not in changes and "cache" not in changes, changes
    # the figure: LLaMA's output layer drawn as unchanged against GPT-2, which also tied
    tree = ast.parse(
        code_cell(
            "07_modern_lm",
            next(
                c["id"]
                for c in notebook("07_modern_lm")["cells"]
                if "def draw_stack" in "".join(c["source"])
            ),
        )
    )
    boxes = {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in ("gpt2", "llama")
    }
    (output_box,) = [b for b in boxes["llama"] if b[0].startswith("output layer")]
    assert output_box[1] is False and "tied" in output_box[0]


def test_notebook_07s_definitions_import_without_its_other_cells():
    """import_definitions runs imports, defs and NAME = literal lines only: a default argument
    that names a constant must find it among those."""
    from coursedata import import_definitions

    defined = import_definitions(str(SOLUTIONS / "07_modern_lm.ipynb"))
    assert defined["BATCH_SIZE"] == 16
    default = inspect.signature(defined["train_lm"]).parameters["batch_size"].default
    assert default == defined["BATCH_SIZE"]


def ablation_compare():
    source = code_cell("07_modern_lm", "ablation-lab-table")
    tree = ast.parse(source)
    tree.body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "compare"]
    namespace = {"np": __import__("numpy")}
    exec(compile(tree, "07_modern_lm", "exec"), namespace)  # noqa: S102 - our own solution
    return namespace["compare"]


@pytest.mark.parametrize(
    "base, other, says",
    [
        ([2.90, 2.92], [2.91, 2.95], "no clear difference at this budget"),  # ranges overlap
        ([2.90, 2.92], [2.92, 2.95], "no clear difference at this budget"),  # they touch
        # apart by 2e-5 but equal as the table prints them (2.912): the verdict reads the table
        ([2.900, 2.91204], [2.91206, 2.95], "no clear difference at this budget"),
        ([2.90, 2.91], [3.00, 3.10], "0.145 bits/char higher (worse)"),  # 3.05 - 2.905
        ([3.00, 3.10], [2.90, 2.91], "0.145 bits/char lower (better)"),
    ],
)
def test_the_ablation_reading_says_no_clear_difference_exactly_when_the_seeds_overlap(
    base, other, says
):
    assert says in ablation_compare()(base, other)


# -- the executed solution ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def run07():
    return executed_solution("07_modern_lm").cells


def cell_out(cells, cell_id):
    (found,) = [c for c in cells if c.get("id") == cell_id]
    return stdout(found)


@pytest.mark.slow  # executes notebook 07's solution whole
def test_the_bits_per_character_follow_from_the_tables_own_columns(run07):
    out = next(stdout(c) for c in run07 if "chars/token" in stdout(c))
    rows = re.findall(r"^(.{24})\s*[\d,]+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+\d+$", out, re.M)
    assert rows, out
    for name, chars_per_token, nats, bits in rows:
        c, n, b = float(chars_per_token), float(nats), float(bits)
        implied = n / (math.log(2) * c)
        # every printed number is rounded to its last digit: chars/token and nats/token to
        # 0.0005, bits/char to 0.0005; propagate the relative errors
        slack = implied * (0.0005 / c + 0.0005 / n) + 0.0005
        assert abs(implied - b) <= slack, (name, implied, b)


@pytest.mark.slow  # executes notebook 07's solution whole
def test_the_ablation_lines_follow_from_the_ablation_table(run07):
    out = cell_out(run07, "ablation-lab-table")
    table = {
        name.strip(): (float(lo), float(hi))
        for name, lo, hi in re.findall(
            r"^(.{32})\s*[\d,]+\s+[\d.]+\s+([\d.]+) – ([\d.]+)\s+\d+$", out, re.M
        )
    }
    assert len(table) == 5, out
    base = table.pop("TinyLlama (RoPE, SwiGLU, tied)")
    for name, (lo, hi) in table.items():
        (line,) = [ln for ln in out.splitlines() if ln.startswith(f"- {name}:")]
        overlap = max(lo, base[0]) <= min(hi, base[1])
        assert ("no clear difference" in line) == overlap, (line, base, (lo, hi))
