"""RegexBPETokenizer (notebook 07): the reference against hand-worked cases and an independent
implementation (course/n07_modern_lm/variants_regex_bpe.py, right mode), and its hidden tests under
the visible seed and two hidden ones."""

import numpy as np
import pytest
import regex

from autograder.checks import VISIBLE_SEED, run_in_process
from autograder.course.n07_modern_lm import variants_regex_bpe as rv
from autograder.course.n07_modern_lm.reference import GPT2_PATTERN, BPETokenizer, RegexBPETokenizer
from autograder.course.probes import derive_seed

pytestmark = pytest.mark.usefixtures("one_thread")


def test_gpt2_pattern_chunks_as_gpt2_does():
    """GPT-2's encoder.py splits this so (worked by hand from its pattern): contractions apart,
    one space kept in front of a word, the last space of a run left to the word after it."""
    got = regex.findall(GPT2_PATTERN, "Hello've world123 how's  it\n\n  going?!")
    assert got == [
        "Hello",
        "'ve",
        " world",
        "123",
        " how",
        "'s",
        " ",
        " it",
        "\n\n ",
        " going",
        "?!",
    ]


def test_merges_stay_inside_chunks():
    """'ab ab ab' by hand. Without chunks: ab (3 times), then (ab, ' ') twice, first occurring
    before (' ', ab). With chunks 'ab', ' ab', ' ab' no pair holds a space after a letter:
    ab, then (' ', ab)."""
    assert BPETokenizer("ab ab ab", 300).merges == [(97, 98), (256, 32)]
    tok = RegexBPETokenizer("ab ab ab", 300)
    assert tok.merges == [(97, 98), (32, 256)]
    assert tok.vocab_size == 258


def test_ties_go_to_the_first_occurrence_in_the_chunked_text():
    """'ab cd ab cd': (a, b), (' ', c) and (c, d) each occur twice; (a, b) first. Then
    (' ', c) before (c, d); then (' c', d)."""
    tok = RegexBPETokenizer("ab cd ab cd", 300)
    assert tok.merges == [(97, 98), (32, 99), (257, 100)]


def test_special_tokens_whole_and_back():
    tok = RegexBPETokenizer("ab ab ab", 300, special_tokens={"<|endoftext|>": 300, "<|x|>": 310})
    ids = tok.encode("ab<|endoftext|> ab<|x|>")
    assert ids == [256, 300, 257, 310]
    assert tok.decode(ids) == "ab<|endoftext|> ab<|x|>"
    assert tok.decode([300]) == "<|endoftext|>"
    assert tok.encode("<|endoftext") == [60, 124, 101, 110, 100, 111, 102, 116, 101, 120, 116]
    with pytest.raises(ValueError, match="301"):
        tok.decode([256, 301])


def test_a_character_split_by_a_special_token_is_replaced():
    tok = RegexBPETokenizer("é é", 260, special_tokens={"<|s|>": 400})
    first, second = list("é".encode())
    assert tok.decode([first, 400, second]) == "\ufffd<|s|>\ufffd"


@pytest.mark.parametrize("seed", range(6))
def test_the_reference_agrees_with_an_independent_implementation(seed):
    rng = np.random.default_rng(seed)
    words = ["".join(rng.choice(list("abcé'1 !"), size=int(rng.integers(1, 6)))) for _ in range(8)]
    text = " ".join(rng.choice(words, size=40))
    vocab_size = 256 + int(rng.integers(5, 30))
    specials = {"<|endoftext|>": 1000}
    tok = RegexBPETokenizer(text, vocab_size, specials)
    assert [list(p) for p in tok.merges] == rv.train(text, vocab_size)
    sample = " ".join(rng.choice(words, size=10)) + "<|endoftext|>" + words[0]
    assert tok.encode(sample) == rv.encode(rv.train(text, vocab_size), specials, sample)


@pytest.mark.parametrize(
    "seed",
    [
        VISIBLE_SEED,
        derive_seed("ci-secret-one", "student-17", "07"),
        derive_seed("ci-secret-two", "student-42", "07"),
    ],
)
def test_the_reference_passes_its_hidden_tests(seed):
    results = run_in_process("RegexBPETokenizer", RegexBPETokenizer, seed=seed)
    assert results and all(r.status == "passed" for r in results), [
        (r.name, r.output) for r in results
    ]
