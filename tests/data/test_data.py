"""Tests of coursedata (the data/ folder): fruit embeddings, corpora, notebook imports."""

import dataclasses
import hashlib
import importlib.resources
import itertools
import math
import shutil
import subprocess
import sys
import urllib.error
from collections import Counter
from pathlib import Path

import coursedata
import nbformat
import numpy as np
import pytest
import torch
from coursedata import (
    MarkovSource,
    default_corpus,
    dict_en2fr,
    import_definitions,
    load_fruit,
    load_tinyshakespeare,
    tiny_shakespeare_path,
)
from coursedata import shakespeare as shakespeare_module

REPO = Path(__file__).resolve().parents[2]
SHARED_TEXT = REPO.parent / "shared" / "data" / "tinyshakespeare" / "input.txt"
GITHUB_URL = (
    "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
)


# --- the package itself -----------------------------------------------------------------------


def test_import_pulls_in_only_stdlib_and_numpy():
    # A sandboxed student notebook has no torch guarantee and must never see the grader.
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import coursedata\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "print(sorted(new - set(sys.stdlib_module_names) - {'numpy', 'coursedata'}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/"
    )
    assert out.stdout.strip() == "[]", out.stdout


def test_public_api_is_exported():
    for name in [
        "load_fruit",
        "dict_en2fr",
        "load_tinyshakespeare",
        "MarkovSource",
        "default_corpus",
        "import_definitions",
        "tiny_shakespeare_path",
    ]:
        assert name in coursedata.__all__
        assert callable(getattr(coursedata, name))


# --- fruit ------------------------------------------------------------------------------------


def test_fruit_soft_lookup_is_exactly_the_lectures_percentages():
    fruit = load_fruit()
    scores = torch.tensor(fruit.keys @ fruit.query, dtype=torch.float64)
    weights = torch.softmax(scores, dim=0).numpy()
    np.testing.assert_allclose(weights, [0.1, 0.1, 0.8], rtol=0, atol=1e-12)
    # the merge reads 0.1 pomme + 0.1 banane + 0.8 citron
    output = weights @ fruit.values
    np.testing.assert_allclose(output, [0.1, 0.1, 0.8], rtol=0, atol=1e-12)
    # a naive softmax (no max subtraction), as a student may first write it, lands there too
    e = np.exp(fruit.keys @ fruit.query)
    np.testing.assert_allclose(e / e.sum(), [0.1, 0.1, 0.8], rtol=0, atol=1e-12)


def test_fruit_scores_differ_by_ln8_and_sharpen_into_the_hard_lookup():
    fruit = load_fruit()
    scores = fruit.keys @ fruit.query
    assert scores[0] == scores[1]
    assert scores[2] - scores[0] == pytest.approx(math.log(8), abs=1e-14)
    hard = torch.softmax(torch.tensor(100 * scores), dim=0).numpy()
    assert fruit.value_words[int(np.argmax(hard @ fruit.values))] == "citron"
    flat = torch.softmax(torch.tensor(1e-9 * scores), dim=0).numpy()
    np.testing.assert_allclose(flat @ fruit.values, fruit.values.mean(axis=0), atol=1e-8)


def test_fruit_layout_matches_the_lecture():
    fruit = load_fruit()
    lecture = {"apple": "pomme", "banana": "banane", "lemon": "citron"}
    assert fruit.translations == lecture
    assert dict_en2fr() == lecture
    assert fruit.words == ["apple", "banana", "lemon"]
    assert fruit.value_words == ["pomme", "banane", "citron"]
    # row i of values is the translation of key i
    assert [fruit.translations[w] for w in fruit.words] == fruit.value_words
    assert fruit.query_word == "orange" and "orange" not in fruit.translations
    d = len(fruit.features)
    assert 3 <= d <= 5 and len(set(fruit.features)) == d
    assert fruit.keys.shape == (3, d) and fruit.query.shape == (d,)
    assert fruit.values.shape[0] == 3
    for array in (fruit.keys, fruit.query, fruit.values):
        assert array.dtype == np.float64
    with pytest.raises(KeyError):
        dict_en2fr()["orange"]


def test_fruit_returns_fresh_copies():
    fruit = load_fruit()
    fruit.keys[:] = 0
    fruit.translations["orange"] = "orange"
    dict_en2fr()["kiwi"] = "kiwi"
    again = load_fruit()
    assert again.keys.any()
    assert "orange" not in again.translations and "kiwi" not in dict_en2fr()
    with pytest.raises(dataclasses.FrozenInstanceError):
        again.query_word = "lemon"


def test_fruit_json_is_package_data():
    resource = importlib.resources.files("coursedata").joinpath("fruit.json")
    assert "citrus" in resource.read_text(encoding="utf-8")


# --- tiny Shakespeare -------------------------------------------------------------------------


@pytest.fixture
def shared_bytes():
    # CI always checks out shared/ beside the repository: a missing file is a failure, not a skip.
    assert SHARED_TEXT.is_file(), f"the shared copy of tiny Shakespeare is missing: {SHARED_TEXT}"
    return SHARED_TEXT.read_bytes()


@pytest.fixture
def no_local_copy(monkeypatch, tmp_path):
    """No env var and no shared copy, so only the cache and the download remain."""
    monkeypatch.delenv("TINYSHAKESPEARE_PATH", raising=False)
    monkeypatch.setattr(shakespeare_module, "SHARED_PATH", tmp_path / "no" / "input.txt")


def _forbid_network(monkeypatch):
    def urlopen(*args, **kwargs):
        raise AssertionError("the loader went to the network")

    monkeypatch.setattr(shakespeare_module.urllib.request, "urlopen", urlopen)


def test_shakespeare_constants_match_the_shared_copy(shared_bytes):
    assert len(shared_bytes) == shakespeare_module.N_BYTES == 1_115_394
    assert hashlib.sha256(shared_bytes).hexdigest() == shakespeare_module.SHA256
    assert shakespeare_module.URL == GITHUB_URL


def test_shakespeare_default_finds_the_shared_copy(shared_bytes, monkeypatch, tmp_path):
    monkeypatch.delenv("TINYSHAKESPEARE_PATH", raising=False)
    _forbid_network(monkeypatch)
    text = load_tinyshakespeare(cache_dir=tmp_path, download=False)
    assert text.encode("utf-8") == shared_bytes
    assert text.startswith("First Citizen:")
    assert not any(tmp_path.iterdir())  # found locally, so nothing was cached


def test_shakespeare_path_tells_where_the_local_copy_is(
    shared_bytes, no_local_copy, monkeypatch, tmp_path
):
    # the grader's sandbox asks this to know which file to expose read-only
    assert tiny_shakespeare_path(cache_dir=tmp_path) is None
    (tmp_path / "tinyshakespeare.txt").write_bytes(shared_bytes)
    assert tiny_shakespeare_path(cache_dir=tmp_path) == tmp_path / "tinyshakespeare.txt"
    monkeypatch.setattr(shakespeare_module, "SHARED_PATH", SHARED_TEXT)
    assert tiny_shakespeare_path(cache_dir=tmp_path) == SHARED_TEXT
    monkeypatch.setenv("TINYSHAKESPEARE_PATH", str(tmp_path / "elsewhere.txt"))
    assert tiny_shakespeare_path(cache_dir=tmp_path) == tmp_path / "elsewhere.txt"


def test_shakespeare_explicit_path_and_env_var(shared_bytes, monkeypatch, tmp_path):
    _forbid_network(monkeypatch)
    copy = tmp_path / "copy.txt"
    copy.write_bytes(shared_bytes)
    assert load_tinyshakespeare(path=copy).encode() == shared_bytes
    assert load_tinyshakespeare(path=str(copy)).encode() == shared_bytes

    monkeypatch.setenv("TINYSHAKESPEARE_PATH", str(copy))
    assert load_tinyshakespeare().encode() == shared_bytes

    # path= wins over the env var, and the env var over the shared copy
    bad = tmp_path / "bad.txt"
    bad.write_bytes(shared_bytes[:-1])
    assert load_tinyshakespeare(path=copy).encode() == shared_bytes
    monkeypatch.setenv("TINYSHAKESPEARE_PATH", str(bad))
    with pytest.raises(ValueError, match="not tiny Shakespeare"):
        load_tinyshakespeare()

    monkeypatch.setenv("TINYSHAKESPEARE_PATH", str(tmp_path / "absent.txt"))
    with pytest.raises(FileNotFoundError, match="TINYSHAKESPEARE_PATH"):
        load_tinyshakespeare()
    with pytest.raises(FileNotFoundError, match="absent2.txt"):
        load_tinyshakespeare(path=tmp_path / "absent2.txt")


@pytest.mark.parametrize("damage", ["truncated", "one byte changed", "one byte added"])
def test_shakespeare_rejects_a_wrong_file(shared_bytes, tmp_path, damage):
    data = {
        "truncated": shared_bytes[:-10],
        # same size: only the checksum can tell
        "one byte changed": shared_bytes[:1000] + b"#" + shared_bytes[1001:],
        "one byte added": shared_bytes + b"\n",
    }[damage]
    wrong = tmp_path / "input.txt"
    wrong.write_bytes(data)
    with pytest.raises(ValueError, match=shakespeare_module.SHA256):
        load_tinyshakespeare(path=wrong)


def test_shakespeare_uses_the_cache(shared_bytes, no_local_copy, monkeypatch, tmp_path):
    _forbid_network(monkeypatch)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "tinyshakespeare.txt").write_bytes(shared_bytes)
    assert load_tinyshakespeare(cache_dir=cache).encode() == shared_bytes
    # the default cache follows XDG_CACHE_HOME
    xdg = tmp_path / "xdg"
    (xdg / "attention-course").mkdir(parents=True)
    shutil.copy(cache / "tinyshakespeare.txt", xdg / "attention-course" / "tinyshakespeare.txt")
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    assert load_tinyshakespeare().encode() == shared_bytes
    # a corrupted cache is reported, not trusted
    (cache / "tinyshakespeare.txt").write_bytes(shared_bytes[:100])
    with pytest.raises(ValueError, match="not tiny Shakespeare"):
        load_tinyshakespeare(cache_dir=cache)


def test_shakespeare_downloads_into_the_cache(shared_bytes, no_local_copy, monkeypatch, tmp_path):
    monkeypatch.setattr(shakespeare_module, "URL", SHARED_TEXT.as_uri())
    cache = tmp_path / "cache" / "nested"
    text = load_tinyshakespeare(cache_dir=cache)
    assert text.encode() == shared_bytes
    assert (cache / "tinyshakespeare.txt").read_bytes() == shared_bytes
    assert sorted(p.name for p in cache.iterdir()) == ["tinyshakespeare.txt"]  # no .part left
    # a second call is served from the cache
    _forbid_network(monkeypatch)
    assert load_tinyshakespeare(cache_dir=cache) == text


def test_shakespeare_rejects_a_wrong_download(shared_bytes, no_local_copy, monkeypatch, tmp_path):
    impostor = tmp_path / "impostor.txt"
    impostor.write_bytes(shared_bytes[: len(shared_bytes) // 2])
    monkeypatch.setattr(shakespeare_module, "URL", impostor.as_uri())
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="not tiny Shakespeare"):
        load_tinyshakespeare(cache_dir=cache)
    assert not (cache / "tinyshakespeare.txt").exists()


def test_shakespeare_offline_says_what_to_do(no_local_copy, monkeypatch, tmp_path):
    def offline(url, timeout=None):
        assert url == GITHUB_URL and timeout is not None
        raise urllib.error.URLError("Temporary failure in name resolution")

    monkeypatch.setattr(shakespeare_module.urllib.request, "urlopen", offline)
    cache = tmp_path / "cache"
    with pytest.raises(FileNotFoundError) as info:
        load_tinyshakespeare(cache_dir=cache)
    message = str(info.value)
    for hint in [GITHUB_URL, str(cache / "tinyshakespeare.txt"), "path=", "TINYSHAKESPEARE_PATH"]:
        assert hint in message
    assert "name resolution" in message


def test_shakespeare_download_false_stays_offline(no_local_copy, monkeypatch, tmp_path):
    _forbid_network(monkeypatch)
    with pytest.raises(FileNotFoundError, match="download=False"):
        load_tinyshakespeare(cache_dir=tmp_path, download=False)


# --- the synthetic Markov corpus --------------------------------------------------------------


@pytest.fixture(scope="module")
def source():
    return MarkovSource()


@pytest.fixture(scope="module")
def long_sample(source):
    return source.sample(400_000, seed=123)


def _true_nll(source, text):
    """-ln P(x_t | previous order chars) for every t >= order, looked up by context string."""
    k = source.order
    table = {
        "".join(c): source.probs("".join(c)) for c in itertools.product(source.alphabet, repeat=k)
    }
    col = {c: i for i, c in enumerate(source.alphabet)}
    return np.array([-math.log(table[text[t - k : t]][col[text[t]]]) for t in range(k, len(text))])


def _ngram_cross_entropy(train, test, m):
    """Cross-entropy on test of the count model P(x_t | previous m chars) fitted on train."""
    joint = Counter(train[t - m : t + 1] for t in range(m, len(train)))
    context = Counter(train[t - m : t] for t in range(m, len(train)))
    nll = [
        -math.log(joint[test[t - m : t + 1]] / context[test[t - m : t]])
        for t in range(m, len(test))
    ]
    return float(np.mean(nll))


def test_markov_defaults_suit_a_small_transformer(source):
    assert (source.alphabet, source.order) == ("abcd", 3)
    assert 64 <= source.n_states <= 256
    rate, bigram, unigram = source.entropy_rate(), source.bigram_entropy(), source.unigram_entropy()
    assert rate < bigram - 0.2  # a bigram model is clearly beaten by one that looks back further
    assert bigram <= unigram <= math.log(len(source.alphabet))
    assert rate > 0.3  # still text worth modelling, not a deterministic loop


def test_markov_chain_is_ergodic_and_normalised(source):
    P = source.transition
    assert P.shape == (source.n_states, len(source.alphabet))
    np.testing.assert_allclose(P.sum(axis=1), 1, rtol=0, atol=1e-12)
    assert P.min() >= source.smoothing / len(source.alphabet) - 1e-15


def test_stationary_distribution_is_a_fixed_point(source):
    # rebuild the context-to-context chain from strings, independently of the index arithmetic
    contexts = ["".join(c) for c in itertools.product(source.alphabet, repeat=source.order)]
    position = {c: i for i, c in enumerate(contexts)}
    M = np.zeros((len(contexts), len(contexts)))
    for c in contexts:
        for y, p in zip(source.alphabet, source.probs(c), strict=True):
            M[position[c], position[c[1:] + y]] += p
    pi = np.array([source.stationary[source.context_index(c)] for c in contexts])
    assert pi.min() > 0
    assert pi.sum() == pytest.approx(1, abs=1e-12)
    np.testing.assert_allclose(pi @ M, pi, rtol=0, atol=1e-12)


def test_stationary_distribution_matches_long_run_frequencies(source, long_sample):
    k = source.order
    counts = Counter(long_sample[t - k : t] for t in range(k, len(long_sample) + 1))
    total = sum(counts.values())
    for context, count in counts.items():
        assert count / total == pytest.approx(
            source.stationary[source.context_index(context)], abs=0.01
        )


def test_samples_start_from_the_stationary_distribution(source):
    # so that every window of a sample, the first included, is typical of the chain
    n = 4000
    starts = Counter(source.sample(source.order, seed=seed) for seed in range(n))
    for context, count in starts.items():
        assert count / n == pytest.approx(
            source.stationary[source.context_index(context)], abs=0.03
        )


def test_entropy_rate_is_the_long_run_loss_of_the_true_model(source, long_sample):
    nll = _true_nll(source, long_sample)
    # law of large numbers; the chain mixes in a few steps, so 10 standard errors is ample
    tolerance = 10 * nll.std() / math.sqrt(len(nll))
    assert abs(nll.mean() - source.entropy_rate()) < tolerance
    assert source.cross_entropy(long_sample) == pytest.approx(nll.mean(), abs=1e-9)


@pytest.mark.slow  # fits n-gram models on generated text
def test_fitted_ngrams_reach_their_conditional_entropies(source, long_sample):
    held_out = source.sample(200_000, seed=7)
    rate = source.entropy_rate()
    for m, exact in [(0, source.unigram_entropy()), (1, source.bigram_entropy()), (2, None)]:
        fitted = _ngram_cross_entropy(long_sample, held_out, m)
        expected = source.conditional_entropy(m) if exact is None else exact
        assert fitted == pytest.approx(expected, abs=0.01)
    assert _ngram_cross_entropy(long_sample, held_out, 1) > rate + 0.2


def test_conditional_entropy_falls_to_the_rate_and_stays(source):
    h = [source.conditional_entropy(m) for m in range(6)]
    assert h[0] == source.unigram_entropy() and h[1] == source.bigram_entropy()
    assert all(a > b for a, b in zip(h[:3], h[1:4], strict=True))
    assert h[3] == h[4] == h[5] == source.entropy_rate()
    with pytest.raises(ValueError):
        source.conditional_entropy(-1)


def test_best_loss_counts_the_short_contexts_at_the_start_of_a_window(source):
    # position t of a window predicts from t + 1 characters
    assert source.best_loss(1) == pytest.approx(source.bigram_entropy())
    expected = (
        source.bigram_entropy() + source.conditional_entropy(2) + 30 * source.entropy_rate()
    ) / 32
    assert source.best_loss(32) == pytest.approx(expected, rel=1e-12)
    assert source.entropy_rate() < source.best_loss(256) < source.entropy_rate() + 0.01


def test_sample_is_reproducible_and_in_the_alphabet(source):
    a = source.sample(5_000, seed=1)
    assert len(a) == 5_000 and set(a) <= set(source.alphabet)
    assert a == source.sample(5_000, seed=1)
    assert a != source.sample(5_000, seed=2)
    assert source.sample(5_000) != source.sample(5_000)  # seed=None draws fresh randomness
    assert source.sample(2, seed=1) == a[:2] and source.sample(0) == ""


def test_seed_changes_the_source_and_arguments_are_checked():
    assert not np.allclose(MarkovSource(seed=0).transition, MarkovSource(seed=1).transition)
    small = MarkovSource(alphabet="xyz", order=2, seed=3)
    assert small.n_states == 9 and set(small.sample(100, seed=0)) <= set("xyz")
    with pytest.raises(ValueError):
        MarkovSource(alphabet="aab")
    with pytest.raises(ValueError):
        MarkovSource(order=0)
    with pytest.raises(ValueError, match="context"):
        small.probs("x")
    with pytest.raises(ValueError, match="alphabet"):
        small.probs("xq")
    with pytest.raises(ValueError, match="alphabet"):
        small.cross_entropy("xyzxyzq")


def test_default_corpus():
    text, source = default_corpus(n_tokens=10_000, seed=5)
    assert len(text) == 10_000
    assert repr(source) == repr(MarkovSource())
    np.testing.assert_array_equal(source.transition, MarkovSource().transition)
    assert text == default_corpus(n_tokens=10_000, seed=5)[0]
    assert text != default_corpus(n_tokens=10_000, seed=6)[0]


# --- importing definitions from another notebook ----------------------------------------------


def _write_notebook(path, cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(src[3:])
        if src.startswith("md:")
        else nbformat.v4.new_code_cell(src)
        for src in cells
    ]
    nbformat.write(nb, path)
    return path


@pytest.fixture
def notebook05(tmp_path):
    sentinel = tmp_path / "side_effect.txt"
    return _write_notebook(
        tmp_path / "05_transformer_block.ipynb",
        [
            "md:# Notebook 05",
            "%matplotlib inline\nimport numpy as np\nfrom math import sqrt",
            "!pip install nothing\nD_MODEL = 8\nSCALE: float = 2.0\nTABLE = {'a': (1, -2)}",
            "def helper(x):\n    return np.asarray(x) * SCALE\n\nhelper([1, 2])",
            "class Block:\n    def __init__(self, d=D_MODEL):\n        self.d = d\n"
            "    def forward(self, x):\n        return helper(x) / sqrt(self.d)",
            # the things a notebook also does and an import must never repeat
            f"open({str(sentinel)!r}, 'w').write('trained')\nmodel = Block()",
            "for _ in range(3):\n    raise RuntimeError('training ran')",
            "assert False, 'a check ran'",
            "def unfinished(:\n    pass",  # a student's half-written cell
            "%%writefile also_not_python.py\ndef written():\n    pass",
            "%%time\ndef timed():\n    return 'timed'",
            "def helper(x):\n    return np.asarray(x) * SCALE * 10  # redefined later, as run",
        ],
    )


def test_import_definitions_runs_only_definitions(notebook05, tmp_path):
    namespace = {}
    found = import_definitions(notebook05, ["Block", "helper"], namespace)
    assert set(found) == {"Block", "helper"} and namespace == found
    block = namespace["Block"]()
    assert block.d == 8
    # later definitions win, as when the notebook runs top to bottom
    np.testing.assert_allclose(block.forward([1.0]), [20 / math.sqrt(8)])
    assert not (tmp_path / "side_effect.txt").exists()
    assert not (tmp_path / "also_not_python.py").exists()


def test_import_definitions_all_names(notebook05):
    found = import_definitions(str(notebook05))
    assert list(found) == ["D_MODEL", "SCALE", "TABLE", "helper", "Block", "timed"]
    assert found["TABLE"] == {"a": (1, -2)} and found["timed"]() == "timed"
    for skipped in ["np", "sqrt", "model", "unfinished", "written"]:
        assert skipped not in found


def test_import_definitions_does_not_see_the_callers_variables(notebook05):
    namespace = {"SCALE": 1000.0, "np": None}
    import_definitions(notebook05, "helper", namespace)
    np.testing.assert_allclose(namespace["helper"]([1.0]), [20.0])
    assert namespace["SCALE"] == 1000.0 and namespace["np"] is None


def test_import_definitions_missing_name_says_what_to_do(notebook05):
    with pytest.raises(ImportError) as info:
        import_definitions(notebook05, ["Block", "TransformerBlock"])
    message = str(info.value)
    assert "TransformerBlock" in message and "05_transformer_block.ipynb" in message
    assert "notebook 05" in message and "paste" in message
    assert "Block," in message  # it lists what the notebook does define


def test_import_definitions_missing_notebook(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        import_definitions(tmp_path / "05_transformer_block.ipynb", ["TransformerBlock"])
    message = str(info.value)
    assert "05_transformer_block.ipynb" in message and "TransformerBlock" in message
    assert "paste" in message


def test_import_definitions_without_nbformat(notebook05, monkeypatch):
    monkeypatch.setitem(sys.modules, "nbformat", None)  # `import nbformat` now fails
    found = import_definitions(notebook05, ["Block"])
    assert found["Block"]().forward([8.0]) == pytest.approx(160 / math.sqrt(8))


def test_import_definitions_skips_a_failing_import_with_a_warning(tmp_path):
    path = _write_notebook(
        tmp_path / "nb.ipynb",
        ["import math\nimport not_a_real_module_xyz", "def f():\n    return math.pi"],
    )
    with pytest.warns(UserWarning, match="not_a_real_module_xyz"):
        found = import_definitions(path)
    assert found["f"]() == math.pi


def test_import_definitions_reports_a_broken_definition(tmp_path):
    path = _write_notebook(
        tmp_path / "nb.ipynb", ["x = 1", "@undefined_decorator\ndef f():\n    pass"]
    )
    with pytest.raises(NameError) as info:
        import_definitions(path)
    assert any("nb.ipynb, cell 2" in note for note in info.value.__notes__)
