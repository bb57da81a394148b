"""A class of notebook 03 built for the similarity report (tests/report/test_similarity.py and
benchmarks/similarity_cost.py): who copied from whom is known, so what the report lists can be
scored. A data module, not a test file.

    folders = write_class(tmp_path)        # {student: folder holding 03_matrix_attention.ipynb}
    COPIED                                 # {(student a, student b, graded name)}: the copies

Every student starts from the released notebook (notebooks/03) and fills in the exercise cells:
- six students write the common answer, each in their own names and layout (the reference's
  recipe: the one most of a class writes, independently);
- five write a right answer another way: tests/catalogues/numpy_mutants.py's hidden alternatives
  (CORRECT), each once, under the graded name;
- four pairs copy: an unusual answer and its copy disguised by renaming, reordering independent
  statements, comments, a new docstring, a print, a loop rewritten as a comprehension; one pair
  shares a wrong answer; one pair's code holds markup and a right-to-left override;
- two hand the notebook in as released (stubs only).
"""

import inspect
import json
import re
from pathlib import Path

import nbformat
import numpy_mutants as M

REPO = Path(__file__).resolve().parents[2]
RELEASED = REPO / "notebooks" / "03_matrix_attention.ipynb"
STEM = "03_matrix_attention"

SDPA, SELF, MASK = "scaled_dot_product_attention", "self_attention", "causal_mask"

# -- the common answer, written independently -----------------------------------------------------
COMMON_SDPA = [
    """def scaled_dot_product_attention(Q, K, V, mask=None):
    scores = attention_scores(Q, K)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    A = softmax(scores, axis=-1)
    return A @ V, A""",
    """def scaled_dot_product_attention(Q, K, V, mask=None):
    # scores first, then hide the future
    s = attention_scores(Q, K)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    weights = softmax(s, axis=-1)
    return weights @ V, weights""",
    """def scaled_dot_product_attention(Q, K, V, mask=None):
    \"\"\"My attention.\"\"\"
    S = attention_scores(Q, K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)

    attn = softmax(S, axis=-1)
    return attn @ V, attn""",
    """def scaled_dot_product_attention(Q, K, V, mask=None):
    logits = attention_scores(Q, K)
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)  # blocked
    probs = softmax(logits, axis=-1)
    out = probs @ V
    return out, probs""",
    """def scaled_dot_product_attention(Q, K, V, mask=None):
    sc = attention_scores(Q, K)
    if mask is not None:
        sc = np.where(mask, sc, -np.inf)
    a = softmax(sc, axis=-1)
    return a @ V, a""",
    """def scaled_dot_product_attention(Q, K, V, mask=None):
    x = attention_scores(Q, K)
    if not (mask is None):
        x = np.where(mask, x, -np.inf)
    p = softmax(x, axis=-1)
    return p @ V, p""",
]
COMMON_SELF = [
    "def self_attention(X, W_q, W_k, W_v, mask=None):\n"
    "    return scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v, mask)",
    "def self_attention(X, W_q, W_k, W_v, mask=None):\n"
    "    Q = X @ W_q\n    K = X @ W_k\n    V = X @ W_v\n"
    "    return scaled_dot_product_attention(Q, K, V, mask)",
    "def self_attention(X, W_q, W_k, W_v, mask=None):\n"
    "    q, k, v = X @ W_q, X @ W_k, X @ W_v\n"
    "    return scaled_dot_product_attention(q, k, v, mask=mask)",
    "def self_attention(X, W_q, W_k, W_v, mask=None):\n"
    "    # project, then attend\n"
    "    return scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v, mask)",
    "def self_attention(X, W_q, W_k, W_v, mask=None):\n"
    "    queries = X @ W_q\n    keys = X @ W_k\n    values = X @ W_v\n"
    "    return scaled_dot_product_attention(queries, keys, values, mask)",
    "def self_attention(X, W_q, W_k, W_v, mask=None):\n"
    "    return scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v, mask=mask)",
]
COMMON_MASK = [
    "def causal_mask(n):\n    return np.tril(np.ones((n, n), dtype=bool))",
    "def causal_mask(n):\n    return np.tril(np.ones((n, n))).astype(bool)",
    "def causal_mask(n):\n    # lower triangle\n    return np.tril(np.ones((n, n), dtype=bool))",
    "def causal_mask(n):\n    m = np.ones((n, n), dtype=bool)\n    return np.tril(m)",
    "def causal_mask(n):\n    return np.tril(np.ones((n, n), dtype=bool))",
    "def causal_mask(n):\n    return np.tril(np.ones((n, n), dtype=bool), k=0)",
]


def _renamed(function, name):
    """The source of a tests/catalogues/numpy_mutants.py function under the graded name."""
    source = inspect.getsource(function)
    old = function.__name__
    return re.sub(rf"\b{old}\b", name, source).replace("stable_softmax", "softmax")


# the hidden alternatives: right answers written another way, each by one student
ALTERNATIVES = {
    "alt_additive": {SDPA: _renamed(M._sdpa_additive, SDPA)},
    "alt_renormalised": {SDPA: _renamed(M._sdpa_renormalised, SDPA)},
    "alt_torch": {SDPA: "import math\nimport torch\n\n\n" + _renamed(M._sdpa_torch, SDPA)},
    "alt_loop": {SELF: "import math\n\n\n" + _renamed(M._self_attention_loop, SELF)},
    "alt_causal": {MASK: _renamed(M._causal_loop, MASK)},
}

# -- the copies ------------------------------------------------------------------------------------
ORIGINAL_SDPA = '''def _blocked(scores, mask, fill=-1e30):
    """Blocked keys get a score that underflows to weight 0."""
    return np.where(mask, scores, fill)


def scaled_dot_product_attention(Q, K, V, mask=None):
    d = Q.shape[-1]
    S = np.einsum("...qd,...kd->...qk", Q, K) * d ** -0.5
    if mask is not None:
        S = _blocked(S, mask)
    S = S - S.max(axis=-1, keepdims=True)
    E = np.exp(S)
    A = E / E.sum(axis=-1, keepdims=True)
    Z = np.einsum("...qk,...kv->...qv", A, V)
    return Z, A'''

COPIED_SDPA = '''def scaled_dot_product_attention(queries, keys, values, mask=None):
    """Attention, all queries at once (my own version)."""
    size = queries.shape[-1]
    # raw scores, scaled
    logits = np.einsum("...qd,...kd->...qk", queries, keys) * size ** -0.5
    if mask is not None:
        logits = hide(logits, mask)  # future keys hidden
    logits = logits - logits.max(axis=-1, keepdims=True)
    ex = np.exp(logits)
    print("debug", ex.shape)
    weights = ex / ex.sum(axis=-1, keepdims=True)
    out = np.einsum("...qk,...kv->...qv", weights, values)
    return out, weights


def hide(s, m, value=-1e30):
    return np.where(m, s, value)'''

ORIGINAL_SELF = """def self_attention(X, W_q, W_k, W_v, mask=None):
    Q = np.einsum("...nd,dk->...nk", X, W_q)
    K = np.einsum("...nd,dk->...nk", X, W_k)
    V = np.einsum("...nd,dv->...nv", X, W_v)
    n = X.shape[-2]
    full = np.ones((n, n), dtype=bool) if mask is None else np.broadcast_to(mask, (n, n))
    Z, A = scaled_dot_product_attention(Q, K, V, full)
    return Z, A"""

COPIED_SELF = """def self_attention(inputs, wq, wk, wv, mask=None):
    # the values first, then keys, then queries: same thing
    n_tokens = inputs.shape[-2]
    vals = np.einsum("...nd,dv->...nv", inputs, wv)
    keys = np.einsum("...nd,dk->...nk", inputs, wk)
    qs = np.einsum("...nd,dk->...nk", inputs, wq)
    allowed = (
        np.ones((n_tokens, n_tokens), dtype=bool)
        if mask is None
        else np.broadcast_to(mask, (n_tokens, n_tokens))
    )
    out, weights = scaled_dot_product_attention(qs, keys, vals, allowed)
    return out, weights"""

ORIGINAL_MASK = """def causal_mask(n):
    if n < 1:
        raise ValueError("n must be positive")
    rows = []
    for i in range(n):
        if i >= 0:
            rows.append(np.arange(n) <= i)
    mask = np.array(rows, dtype=bool)
    assert mask.shape == (n, n)
    return mask.reshape(n, n)"""

COPIED_MASK = '''def causal_mask(size):
    """Which keys each query sees."""
    if size < 1:
        raise ValueError("size should be > 0")
    lines = [np.arange(size) <= r for r in range(size) if r >= 0]  # one row per query
    mask = np.array(lines, dtype=bool)
    assert mask.shape == (size, size)
    return mask.reshape(size, size)'''

# the same wrong answer: the mask applied after the softmax, without renormalising
WRONG_SDPA = """def scaled_dot_product_attention(Q, K, V, mask=None):
    n_k = K.shape[-2]
    S = Q @ K.swapaxes(-1, -2) / np.sqrt(Q.shape[-1])
    A = softmax(S, axis=-1)
    if mask is not None:
        A = A * np.broadcast_to(mask, A.shape[:-2] + (A.shape[-2], n_k))
    return A @ V, A"""

WRONG_SDPA_COPY = """def scaled_dot_product_attention(q, k, v, mask=None):
    # my attention
    A = softmax(q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1]), axis=-1)
    nk = k.shape[-2]
    if mask is not None:
        A = A * np.broadcast_to(mask, A.shape[:-2] + (A.shape[-2], nk))
    return A @ v, A"""

HOSTILE = (
    "</script><script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
)
BIDI = "\u202e"
HOSTILE_MASK = f"""def causal_mask(n):
    note = {HOSTILE!r}  # {BIDI} reversed? {HOSTILE}
    grid = np.indices((n, n))
    keep = grid[0] - grid[1] >= 0
    assert note and keep.shape == (n, n)
    return keep.astype(bool) & np.ones((n, n), dtype=bool)"""

HOSTILE_MASK_COPY = f"""def causal_mask(size):
    tag = {HOSTILE!r}
    g = np.indices((size, size))  # {BIDI}evil
    ok = g[0] - g[1] >= 0
    assert tag and ok.shape == (size, size)
    return ok.astype(bool) & np.ones((size, size), dtype=bool)"""

COPIES = {
    ("copy_a1", "copy_a2"): {SDPA: (ORIGINAL_SDPA, COPIED_SDPA)},
    ("copy_b1", "copy_b2"): {SELF: (ORIGINAL_SELF, COPIED_SELF)},
    ("copy_c1", "copy_c2"): {MASK: (ORIGINAL_MASK, COPIED_MASK)},
    ("wrong_1", "wrong_2"): {SDPA: (WRONG_SDPA, WRONG_SDPA_COPY)},
    ("hostile_1", "hostile_2"): {MASK: (HOSTILE_MASK, HOSTILE_MASK_COPY)},
}
COPIED = {(a, b, name) for (a, b), answers in COPIES.items() for name in answers}
STUBS = ("stub_1", "stub_2")


def students():
    """{student: {graded name: code}}; a name not given is left as the released stub."""
    out = {}
    for i in range(len(COMMON_SDPA)):
        out[f"common_{i + 1}"] = {
            SDPA: COMMON_SDPA[i],
            SELF: COMMON_SELF[i],
            MASK: COMMON_MASK[i],
        }
    out.update(ALTERNATIVES)
    for (a, b), answers in COPIES.items():
        out[a] = {name: pair[0] for name, pair in answers.items()}
        out[b] = {name: pair[1] for name, pair in answers.items()}
    for stub in STUBS:
        out[stub] = {}
    return out


def notebook(answers):
    """The released notebook 03 with `answers` in place of the stubs (a JSON string)."""
    nb = nbformat.read(RELEASED, as_version=4)
    for cell in nb.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "code" and grade_id in answers:
            cell.source = answers[grade_id]
    return nbformat.writes(nb)


def write_class(root, who=None):
    """Each student's folder under `root` with their notebook 03: {student: folder}."""
    folders = {}
    for student, answers in (who or students()).items():
        folder = Path(root) / student
        folder.mkdir(parents=True)
        (folder / f"{STEM}.ipynb").write_text(notebook(answers), encoding="utf-8")
        folders[student] = folder
    return folders


def wrong_results(student, failed=("scaled_dot_product_attention: masked keys get weight 0",),
                  misconception="mask-after-softmax", output="row 0 sums to 0.42"):  # fmt: skip
    """A results.json of a student whose scaled_dot_product_attention fails `failed` with the
    misconception and message given."""
    tests = [
        {"name": name, "function": SDPA, "notebook": STEM, "score": 0.0, "max_score": 1.0,
         "status": "failed", "reason": "failed", "misconceptions": [misconception],
         "output": output}
        for name in failed
    ]  # fmt: skip
    return json.loads(json.dumps({"student": student, "score": 0.0, "max_score": 1.0,
                                  "tests": tests, "notebooks": {}}))  # fmt: skip
