"""Fingerprints of one definition's code that survive the usual disguises (the similarity report,
report/similarity.py, compares them across the class).

    tokens = normalised_tokens(tree, helpers={"my_helper"})   # [(token, line)] of a def/class
    prints = winnow(tokens)                                    # {hash: the lines it covers}
    every = kgram_hashes(tokens)                               # all k-grams (for subtraction)

What the tokens keep: the syntax tree's structure, the names the student did not choose (`np`,
`torch`, `len`, an attribute such as `.sum`, a keyword argument), numbers as written (an odd
constant is evidence). What they drop or rename: comments, whitespace and layout (the tree has
none), docstrings and other bare strings, `print(...)` statements and `pass`; every name the
student chose becomes a placeholder by its role (a parameter, a local variable, an attribute of
`self`, the function itself, one of the student's own helpers, a method); string literals become
one token. Two rewrites make equivalent forms one form: `x += y` reads as `x = x + y`, and a loop
that only appends to a list (`acc = []` then `for ...: acc.append(e)`, nested or guarded by an
`if`) reads as the list comprehension it is. Independent statements of a block are put in one
canonical order before their tokens are read: a statement that neither defines what another uses
or defines, nor uses what the other defines, may move past it, and the order kept is the
smallest (by the statements' tokens) that respects every dependency, so two blocks that differ
only by the order of independent statements give the same tokens. A bare call, a `return`, a
`raise` (anything that acts rather than binds) stays where it is.

Then MOSS's winnowing (Schleimer, Wilkerson and Aiken, SIGMOD 2003): hashes of every K
consecutive tokens, and the smallest hash of every WINDOW consecutive ones, so any run of at
least K + WINDOW - 1 tokens two definitions share gives them a fingerprint in common.

Why our own and not copydetect (PyPI, 0.5.0), which does this winnowing: it fingerprints
files through pygments' tokens, which see a name but not its role and a statement but not its
dependencies, so neither reordered statements nor a loop written as a comprehension could be
undone; it compares every pair of files (quadratic), hashes with Python's per-process `hash()`,
and needs matplotlib. Its winnowing is twenty lines; the normalisation, which is the work, needs
the syntax tree the grading parent already parses.
"""

import ast
import functools
import hashlib
import heapq
from collections.abc import Collection, Sequence

K = 12  # tokens per k-gram
WINDOW = 8  # k-grams per winnowing window: a shared run of K + WINDOW - 1 = 19 tokens is seen
MAX_TOKENS = 20_000  # of one definition (the solutions' longest, CausalSelfAttention, has 295)
MAX_BLOCK = 300  # statements of one block reordered (longer blocks keep their order)

PARAM, LOCAL, ATTR, SELF_FN, HELPER, METHOD, STRING = "$P", "$V", "$A", "$F", "$H", "$M", "$S"
_KEPT_METHODS = {"forward", "extra_repr"}


DEEP = 100  # expression nesting walked; a deeper subtree is one placeholder (honest code never nests so)


def prune_deep(root: ast.AST, limit: int = DEEP) -> ast.AST:
    """`root`, with every expression nested more than `limit` levels below it replaced in place
    by one placeholder name, found without recursion. The walkers below recurse: without this, a
    copy padded with one expression a few hundred levels deep would be skipped, not compared."""
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        for field, value in ast.iter_fields(node):
            items = value if isinstance(value, list) else [value]
            for i, item in enumerate(items):
                if not isinstance(item, ast.AST):
                    continue
                if depth + 1 < limit or not isinstance(item, ast.expr):
                    stack.append((item, depth + 1))
                    continue
                placeholder = ast.copy_location(ast.Name(id="_deep_", ctx=ast.Load()), item)
                if isinstance(value, list):
                    value[i] = placeholder
                else:
                    setattr(node, field, placeholder)
    return root


class TooLarge(Exception):
    """A definition past MAX_TOKENS: it gets no fingerprint."""


def _is_docstring(stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


def _is_print(stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Name)
        and stmt.value.func.id == "print"
    )


def _kept(body: list[ast.stmt]):
    return [s for s in body if not (_is_docstring(s) or _is_print(s) or isinstance(s, ast.Pass))]


def _append_target(stmt) -> tuple[str, ast.expr] | None:
    """(list name, element) when `stmt` is `name.append(element)`."""
    if (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Attribute)
        and stmt.value.func.attr == "append"
        and isinstance(stmt.value.func.value, ast.Name)
        and len(stmt.value.args) == 1
        and not stmt.value.keywords
    ):
        return stmt.value.func.value.id, stmt.value.args[0]
    return None


def _as_build(loop: ast.For):
    """(list name, [(target, iter, [conditions])], element) of a loop that only appends to one
    list (through nested loops and `if`s without `else`), or None."""
    if not isinstance(loop, ast.For) or loop.orelse:
        return None
    generators: list[tuple[ast.expr, ast.expr, list[ast.expr]]] = []
    node: ast.For | ast.If = loop
    conditions: list[ast.expr] = []
    while True:
        body = _kept(node.body)
        if isinstance(node, ast.For):
            generators.append((node.target, node.iter, conditions := []))
        else:
            conditions.append(node.test)
        if len(body) != 1:
            return None
        inner = body[0]
        if isinstance(inner, ast.For) and not inner.orelse:
            node = inner
        elif isinstance(inner, ast.If) and not inner.orelse:
            node = inner
        else:
            found = _append_target(inner)
            if found is None:
                return None
            return found[0], generators, found[1]


def _is_empty_list(value: ast.expr) -> bool:
    return (isinstance(value, ast.List) and not value.elts) or (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "list"
        and not value.args
        and not value.keywords
    )


def _chain(node: ast.expr):
    """(base Name or None, dotted name such as `self.w`, the subscripts' slices) of an
    attribute or subscript chain."""
    attrs, slices = [], []
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute):
            attrs.append(node.attr)
        else:
            attrs = []  # x[i].y = ... defines x
            slices.append(node.slice)
        node = node.value
    if not isinstance(node, ast.Name):
        return None, "", slices + [node]
    return node, ".".join([node.id, *reversed(attrs)]), slices


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_ACTS = (
    ast.Return, ast.Raise, ast.Break, ast.Continue, ast.Global, ast.Nonlocal,
    ast.Yield, ast.YieldFrom, ast.Await, ast.Import, ast.ImportFrom,
)  # fmt: skip


def _facts(root):
    """In one walk: ({id(statement): (defines, uses, acts)} of every statement under `root`,
    the parameters, the other names bound inside, every name read). A statement's `defines` and `uses` are the
    dotted names (`x`, `self.w`) it binds or changes and reads; it `acts` when it must keep its
    place (a bare call, or anything that leaves or reaches outside: return, raise, yield, ...)."""
    facts, params, local = {}, set(), set()

    def visit(node: ast.AST, defs, uses) -> bool:
        """Adds node's names to defs and uses; True when it holds something that acts."""
        acts = isinstance(node, _ACTS)
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                uses.add(node.id)
            else:
                defs.add(node.id)
                local.add(node.id)
            return False
        if isinstance(node, ast.arg):
            params.add(node.arg)
        elif isinstance(node, ast.alias):
            local.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            local.add(node.name)
        if isinstance(node, ast.Attribute | ast.Subscript):
            base, dotted, rest = _chain(node)
            if base is not None:
                (uses if isinstance(node.ctx, ast.Load) else defs).add(dotted)
                if not isinstance(node.ctx, ast.Load):
                    uses.add(dotted)  # x[0] = 1 changes x, which the rest of x still is
            for child in rest:
                acts |= visit(child, defs, uses)
            return acts
        if isinstance(node, _DEFINITIONS) and node is not root:
            defs.add(node.name)
            local.add(node.name)
        if isinstance(node, ast.stmt):
            mine_defs: set[str] = set()
            mine_uses: set[str] = set()
            for child in ast.iter_child_nodes(node):
                acts |= visit(child, mine_defs, mine_uses)
            facts[id(node)] = (mine_defs, mine_uses, acts or isinstance(node, ast.Expr))
            defs |= mine_defs
            uses |= mine_uses
            return acts
        for child in ast.iter_child_nodes(node):
            acts |= visit(child, defs, uses)
        return acts

    uses: set[str] = set()
    visit(root, set(), uses)
    return facts, params, local - params, uses


def _conflict(defs, keys) -> bool:
    return any(d == k or k.startswith(d + ".") or d.startswith(k + ".") for d in defs for k in keys)


class _Tokens:
    def __init__(self, params, local, helpers, own, facts) -> None:
        self.params, self.local, self.helpers, self.own = params, local, helpers, own
        self.facts = facts
        self.out: list[tuple[str, int]] = []
        self.line = 1

    def emit(self, token) -> None:
        self.out.append((token, self.line))
        if len(self.out) > MAX_TOKENS:
            raise TooLarge

    # -- statements ---------------------------------------------------------------------------
    def block(self, body) -> None:
        units = self._units(_kept(body))
        order: range | list[int] = range(len(units))
        if 1 < len(units) <= MAX_BLOCK:
            order = _canonical_order(units, self.facts)
        for i in order:
            self.out.extend(units[i][0])
            if len(self.out) > MAX_TOKENS:
                raise TooLarge

    def _units(self, body):
        """[(tokens, statements)] of a block, an `acc = []` and the loop that fills it read as
        one `acc = [e for ...]`."""
        units, i = [], 0
        while i < len(body):
            stmt = body[i]
            nxt = body[i + 1] if i + 1 < len(body) else None
            build = _as_build(nxt) if nxt is not None else None
            if (
                build is not None
                and isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == build[0]
                and _is_empty_list(stmt.value)
            ):
                tokens = self._sub(lambda s=stmt, b=build: self._build_assign(s, b))
                units.append((tokens, [stmt, nxt]))
                i += 2
                continue
            units.append((self._sub(lambda s=stmt: self.stmt(s)), [stmt]))
            i += 1
        return units

    def _sub(self, fill):
        saved, self.out = self.out, []
        try:
            fill()
            return self.out
        finally:
            self.out = saved + []  # the caller extends it with the unit's tokens

    def _build_assign(self, assign: ast.Assign, build) -> None:
        self.line = assign.lineno
        self.emit("Assign")
        self.expr(assign.targets[0])
        self._build(*build[1:])

    def _build(self, generators, element) -> None:
        self.emit("BUILD")
        for target, iterable, conditions in generators:
            self.emit("for")
            self.expr(target)
            self.emit("in")
            self.expr(iterable)
            for condition in conditions:
                self.emit("if")
                self.expr(condition)
        self.emit("ADD")
        self.expr(element)
        self.emit("END")

    def stmt(self, node: ast.stmt) -> None:
        self.line = getattr(node, "lineno", self.line)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self.emit("def")
            self.emit(self._def_name(node.name))
            self.expr(node.args)
            for decorator in node.decorator_list:
                self.expr(decorator)
            self.block(node.body)
            self.emit("END")
        elif isinstance(node, ast.ClassDef):
            self.emit("class")
            for base in node.bases:
                self.expr(base)
            self.block(node.body)
            self.emit("END")
        elif isinstance(node, ast.AugAssign):  # x += y reads as x = x + y
            self.emit("Assign")
            self.expr(node.target)
            self.emit("BinOp")
            self.expr(node.target)
            self.emit(type(node.op).__name__)
            self.expr(node.value)
        elif isinstance(node, ast.For) and _as_build(node) is not None:
            _, generators, element = _as_build(node)
            self.emit("Extend")
            self._build(generators, element)
        else:
            self.emit(type(node).__name__)
            for field, value in ast.iter_fields(node):
                if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                    self.emit(field)
                    self.block(value)
                    self.emit("END")
                elif isinstance(value, list):
                    for item in value:
                        if isinstance(item, ast.AST):
                            self.any(item)
                elif isinstance(value, ast.AST):
                    self.any(value)

    def any(self, node: ast.AST) -> None:
        if isinstance(node, ast.stmt):
            self.stmt(node)
        else:
            self.expr(node)

    def _def_name(self, name: str):
        if name == self.own:
            return SELF_FN
        if name.startswith("__") and name.endswith("__") or name in _KEPT_METHODS:
            return name
        return METHOD

    # -- expressions ---------------------------------------------------------------------------
    def expr(self, node: ast.AST) -> None:
        if isinstance(node, ast.expr_context):
            return
        self.line = getattr(node, "lineno", self.line)
        if isinstance(node, ast.Name):
            self.emit(self.name(node.id))
        elif isinstance(node, ast.arg):
            self.emit(PARAM)
        elif isinstance(node, ast.Constant):
            value = node.value
            self.emit(STRING if isinstance(value, str | bytes) else repr(value))
        elif isinstance(node, ast.Attribute):
            self.expr(node.value)
            owner = node.value
            chosen = isinstance(owner, ast.Name) and owner.id in self.params | {"self"}
            is_self = chosen and isinstance(owner, ast.Name) and owner.id == "self"
            self.emit("." + (ATTR if is_self else node.attr))
        elif isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            generators = [(g.target, g.iter, g.ifs) for g in node.generators]
            self._build(generators, node.elt)
        elif isinstance(node, ast.Lambda):
            self.emit("Lambda")
            self.expr(node.args)
            self.expr(node.body)
        elif isinstance(node, ast.keyword):
            self.emit(f"{node.arg}=")
            self.expr(node.value)
        else:
            self.emit(type(node).__name__)
            for child in ast.iter_child_nodes(node):
                self.any(child)

    def name(self, name: str):
        if name in self.params:
            return PARAM
        if name == self.own:
            return SELF_FN
        if name in self.local:
            return LOCAL
        if name in self.helpers:
            return HELPER
        return name


def _canonical_order(units, known) -> list[int]:
    """The smallest order of the units (by their tokens) in which every unit that must stay
    after another does (`known`: _facts of the statements)."""
    n = len(units)
    facts = []  # (defines, uses, acts) of each unit
    for _, statements in units:
        parts = [known[id(s)] for s in statements]
        facts.append(
            (
                set().union(*(p[0] for p in parts)),
                set().union(*(p[1] for p in parts)),
                any(p[2] for p in parts) and len(parts) == 1,
            )
        )
    after: list[list[int]] = [[] for _ in range(n)]
    waiting = [0] * n
    for j in range(n):
        dj, uj, aj = facts[j]
        for i in range(j):
            di, ui, ai = facts[i]
            if ai or aj or _conflict(di, dj | uj) or _conflict(dj, ui):
                after[i].append(j)
                waiting[j] += 1
    key = [tuple(t for t, _ in unit[0]) for unit in units]
    ready = [(key[i], i) for i in range(n) if not waiting[i]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for j in after[i]:
            waiting[j] -= 1
            if not waiting[j]:
                heapq.heappush(ready, (key[j], j))
    return order


def names_read(definition: ast.AST) -> tuple[frozenset[str], tuple]:
    """(the names a definition reads, what normalised_tokens needs of it): one walk for
    both."""
    found = _facts(definition)
    return frozenset(n for n in found[3] if "." not in n), found


def normalised_tokens(
    definition: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
    helpers: Collection[str] = frozenset(),
    facts: tuple | None = None,
) -> list[tuple[str, int]]:
    """[(token, line)] of a FunctionDef or ClassDef (lines as in its own source); TooLarge past
    MAX_TOKENS. `helpers`: names of the student's own top-level functions it may call; `facts`:
    names_read's second half, when it was already walked."""
    facts, params, local, _ = facts or _facts(definition)
    own = definition.name
    tokens = _Tokens(params, local - {own}, set(helpers) - {own}, own, facts)
    tokens.stmt(definition)
    return tokens.out


_MODULUS = (1 << 61) - 1  # a Mersenne prime: the rolling hash's modulus (Karp and Rabin)
_BASE = 1_000_003


@functools.lru_cache(maxsize=65536)
def _token_value(token) -> int:
    """A token's stable 60-bit value (the same in every run: Python's hash() of a string is
    not)."""
    digest = hashlib.blake2b(token.encode("utf-8", "backslashreplace"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % _MODULUS


def kgram_hashes(tokens: Sequence[tuple[str, int]], k: int = K) -> list[tuple[int, int]]:
    """[(hash, start)] of every k consecutive tokens (one for a definition shorter than k): a
    rolling polynomial hash of the tokens' values, modulo a 61-bit prime."""
    values = [_token_value(t) for t, _ in tokens]
    if not values:
        return []
    k = min(k, len(values))
    top = pow(_BASE, k - 1, _MODULUS)
    current = 0
    for v in values[:k]:
        current = (current * _BASE + v) % _MODULUS
    out = [(current, 0)]
    for i in range(k, len(values)):
        current = ((current - values[i - k] * top) * _BASE + values[i]) % _MODULUS
        out.append((current, i - k + 1))
    return out


def winnow(
    tokens: Sequence[tuple[str, int]],
    k: int = K,
    window: int = WINDOW,
    skip: Collection[int] = frozenset(),
) -> dict[int, frozenset[int]]:
    """{hash: the lines of its tokens} chosen by robust winnowing (the rightmost smallest hash
    of each window), leaving out the hashes in `skip` (what the released notebook gave)."""
    hashes = [h for h, _ in kgram_hashes(tokens, k)]
    lines = [line for _, line in tokens]
    chosen: dict[int, frozenset[int]] = {}
    last = -1
    for start in range(max(1, len(hashes) - window + 1)):
        span = hashes[start : start + window]
        smallest = min(span)
        position = start + len(span) - 1 - span[::-1].index(smallest)  # the rightmost
        if position == last:
            continue
        last = position
        if smallest in skip:
            continue
        chosen[smallest] = chosen.get(smallest, frozenset()) | set(lines[position : position + k])
    return chosen
