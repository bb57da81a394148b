"""Every "going further" question of notebooks 05-07 has an answer in solutions/answers/, and every
question graded by hand carries a rubric that the release strips from the handout.

The answers are instructor and self-learner material: they live beside the solutions, one
Markdown file per notebook with one `### N.` section per numbered question, and never reach
notebooks/ (the release writes the six notebooks and nothing else).
"""

import re

import nbformat
import pytest
from fixtures import manual_cells  # the written answers: graded Markdown cells

from autograder.curriculum import BY_STEM  # graded notebooks: 05b has no written question
from autograder.release import SOLUTIONS, STUDENT_NOTEBOOKS

ANSWERS = SOLUTIONS / "answers"
# the heading of each notebook's closing list of questions, as the notebook writes it
QUESTION_LISTS = {
    "05_transformer_block": "## Going further",
    "05b_encoder_decoder": "## Going further",
    "06_autoregressive_lm": "**Things to try.**",
    "07_modern_lm": "## Going further",
    "08_real_models": "## Going further",
}


def numbered_items(markdown, heading):
    """The numbers of the top-level list items ('1. ...') that follow `heading`, up to the next
    heading of any kind."""
    after = markdown.split(heading, 1)[1]
    numbers = []
    for line in after.splitlines():
        if line.startswith("#") or (line.startswith("**") and numbers):
            break
        match = re.match(r"(\d+)\. ", line)
        if match:
            numbers.append(int(match.group(1)))
    return numbers


def questions(stem):
    cells = nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4).cells
    heading = QUESTION_LISTS[stem]
    (source,) = [c.source for c in cells if c.cell_type == "markdown" and heading in c.source]
    return numbered_items(source, heading)


@pytest.mark.parametrize("stem", sorted(QUESTION_LISTS))
def test_every_going_further_question_has_an_answer(stem):
    asked = questions(stem)
    assert asked == list(range(1, len(asked) + 1)) and len(asked) >= 3, asked
    text = (ANSWERS / f"{stem}.md").read_text()
    answered = [int(n) for n in re.findall(r"^### (\d+)\. ", text, flags=re.MULTILINE)]
    assert answered == asked, f"{stem}: questions {asked}, answers {answered}"
    for section in re.split(r"^### \d+\. ", text, flags=re.MULTILINE)[1:]:
        assert len(section.split()) >= 40, f"{stem}: an answer of a few words: {section[:80]!r}"


def test_the_question_counter_stops_at_the_next_heading():
    markdown = "## Going further\n\n1. a\n2. b\n   3. not top level\n\n## Summary\n\n1. c\n"
    assert numbered_items(markdown, "## Going further") == [1, 2]


@pytest.mark.parametrize("stem", sorted(stem for stem in QUESTION_LISTS if stem in BY_STEM))
def test_one_question_in_words_with_a_rubric_that_the_handout_never_shows(stem):
    solution = nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)
    (answer,) = manual_cells(solution)
    assert answer.metadata["nbgrader"].get("solution")
    assert "**Rubric" in answer.source and answer.metadata["nbgrader"]["points"] > 0
    released = nbformat.read(STUDENT_NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    (blank,) = [c for c in released.cells if c.get("id") == answer.get("id")]
    assert "Rubric" not in blank.source and blank.source.strip() == "YOUR ANSWER HERE"
    handout = "".join(c.source for c in released.cells)
    assert "Rubric" not in handout
