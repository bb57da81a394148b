"""The student handout: what a course distributes, with no model answer in it.

    build_handout(out_dir, stage=None)      # python -m autograder handout --out DIR [--stage K]

writes

    out_dir/README.md           set-up and work for students
    out_dir/requirements.txt    the course's pins for what students need, plus ./checker
    out_dir/notebooks/          the released student notebooks (01..K for a weekly stage)
    out_dir/checker-wheel/      the checker built as a wheel: what the Colab cell installs,
                                checked against the SHA-256 written into the cell
    out_dir/checker/            an installable package: `autograder` (the visible checks only)
                                and `coursedata` (the small data and the loaders), and
                                the venv's Jupyter configuration (encrypted kernel connections)

The checker's `autograder` holds the modules that run and judge a visible check (checks,
curriculum, results, harness/, judging/), the misconception catalogue, and the visible seed's
cases as plain data (judging.store, in autograder/visible/): inputs, expected outputs and the
outputs of the known-wrong variants, computed here. It holds no probe, no variant and no model
answer (of autograder/course/, only the judges ship), so `check("softmax", softmax)` judges the same cases the same way as the
full package without being able to compute an answer. tests/handout/test_handout.py checks that no
answer is in the bundle, and runs it installed in a venv without the course.
"""

import ast
import hashlib
import json
import shutil
import tomllib
from collections.abc import Collection
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode

from autograder import __version__
from autograder.checks import VISIBLE_SEED
from autograder.curriculum import NOTEBOOKS, Notebook, handed_out
from autograder.release import REPO, SOLUTIONS, release_notebook, render

PACKAGE = REPO / "autograder"
WHEELS = "checker-wheel"  # the handout's folder holding the checker's wheel, for the Colab cell
COURSEDATA = REPO / "data"

# What the checker's `autograder` holds, relative to autograder/: nothing else is copied.
SHIPPED = (
    "checks.py",
    "curriculum.py",
    "results.py",
    "escaping.py",  # safe_files prints through it
    "safe_files.py",  # how answers are read: never through a link, never past a size cap
    "harness/*.py",
    "judging/*.py",
    "course/misconceptions.py",  # the catalogue's text; the variants*.py modules stay here
    # a notebook in its own folder ships its judges only: reference, cases, variants stay here
    "course/__init__.py",
    "course/*/__init__.py",
    "course/*/judges*.py",
    "course/numpy_shared/signatures.py",  # how the NumPy judges read a mistake from plain data
    "course/torch_shared/checks*.py",  # what the PyTorch judges share (no model answer)
)
SHIPPED_DATA = ("*.py", "*.json")  # of coursedata (data/)

# The distributions a student needs (the course's pins are read from pyproject.toml): the
# grader's own (nbgrader, nbclient, nbconvert, jinja2) are the instructor's business. The
# handout's requirements.txt pins them exactly, as the course does.
STUDENT_PACKAGES = (
    "numpy",
    "torch",
    "matplotlib",
    "jupyterlab",
    "ipykernel",
    "nbformat",
    "tqdm",
    "transformers",  # notebook 08's oracle: Hugging Face's own LlamaForCausalLM
    "regex",  # notebook 07's RegexBPETokenizer: GPT-2's pattern needs \p{L} and \p{N}
)

# What the checker itself requires: ranges, so that installing it where these packages already
# are (Colab, a lab image with its own PyTorch) replaces none that fits. The lower bounds are the
# oldest versions the checks and the notebooks were run with (Debian 13's own packages, Python
# 3.13: benchmarks/newer_python.sh); the course's pins must fall inside (tests/handout/test_handout.py).
# JupyterLab and ipykernel are the `lab` extra: Colab and JupyterHub bring their own front end
# and kernel (the checker imports neither), and upgrading the kernel a runtime is running in can
# break it.
CHECKER_REQUIREMENTS = {
    "numpy": ">=2.2,<3",
    "torch": ">=2.6,<3",
    "matplotlib": ">=3.8",
    "nbformat": ">=5.9",
    "tqdm": ">=4.64",
    # notebook 08's oracle (the checks never import it): only the course's own version has been
    # run with notebook 08 so far, hence no older lower bound
    "transformers": ">=5.25,<6",
    "regex": ">=2026.11.15",  # the only version run with so far (notebook 07)
}
CHECKER_EXTRAS = {"lab": {"jupyterlab": ">=4.0", "ipykernel": ">=6.20"}}

INIT = '''"""The visible checks of the attention course: `from autograder.checks import check`.

This is the student handout's checker. It judges your answers from stored data (the checks'
inputs, the expected outputs, the outputs of typical mistakes) and holds no model answer.
"""

__version__ = "{version}"
'''

PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "attention-course-checker"
version = "{version}"
description = "The visible checks and data of the attention course's notebooks (no answers)."
requires-python = "{requires_python}"
license = {{ text = "MIT" }}
# Ranges, not pins: an installed PyTorch (Colab's, a lab image's) that fits is kept. The
# handout's requirements.txt holds the course's exact versions.
dependencies = [
{dependencies}
]

[project.optional-dependencies]
{extras}

[tool.setuptools]
packages = [
{packages}
]
package-dir = {{ "autograder" = "autograder", "coursedata" = "coursedata" }}

[tool.setuptools.package-data]
autograder = ["visible/**/*"]
coursedata = ["*.json"]

[tool.setuptools.data-files]
# Read by `jupyter lab` from the venv's etc/jupyter (see jupyter_server_config.py there).
"etc/jupyter" = ["jupyter/jupyter_server_config.py"]
"""

# Installed into the student's venv (sys.prefix/etc/jupyter), where `jupyter lab` reads it.
JUPYTER_SERVER_CONFIG = """\
# The attention course's checker: encrypt the connections between JupyterLab and its kernels
# (CurveZMQ keys the kernel manager makes for each kernel) where this pyzmq supports it. Without
# it every kernel start warns "Kernel is running over TCP without encryption".
import zmq

if zmq.has("curve"):
    c.KernelManager.transport_encryption = "auto"  # noqa: F821 (`c` is Jupyter's config object)
"""

GITIGNORE = """\
.venv/
__pycache__/
.ipynb_checkpoints/
checker/build/
*.egg-info/
"""

README = """\
# Attention, from a dictionary lookup to a language model{stage_title}

{count} Jupyter notebooks that take you from a Python `dict` to {destination}. Each one teaches
with prose, worked numbers and plots, and has exercises: write the function, then run the cell
below it, which checks your function on a few inputs and tells you what is wrong, never what the
answer is.

| notebook | graded exercises | on Colab |
| --- | --- | --- |
{table}

## Set up (once)

On Python 3.11, 3.12 or 3.13, in this folder. On Linux, pip's default PyTorch brings gigabytes
of CUDA libraries that a laptop does not use, so install PyTorch's CPU build first, then the
course's pinned packages and its checker:

```bash
python -m venv .venv && . .venv/bin/activate
pip install torch=={torch} --index-url https://download.pytorch.org/whl/cpu
pip install -r requirements.txt
```

On macOS and Windows (whose PyTorch wheels are CPU builds already) the second line can be left
out; on Windows activate with `.venv\\Scripts\\activate`. Where PyTorch is already installed
(a lab machine's image), install only the checker: it keeps an installed PyTorch {torch_range}.

```bash
pip install "./checker[lab]"
```

Then:

```bash
jupyter lab notebooks/
```

On Google Colab, open a notebook from the table above: its first cell installs the checks beside
Colab's own PyTorch. From notebook 03 on, a notebook uses your earlier ones: upload them next to
it (the Files pane).

## Working through the notebooks

- Do them in order, and keep them together in `notebooks/`: from notebook 03 on, a notebook uses
  the functions **you** wrote in the earlier ones (it reads them from those notebooks), so a
  mistake there shows up again later, and an unfinished one makes the later cells wait.
- A cell that needs an unfinished exercise says so and does nothing; run the notebook top to
  bottom at any time.
- `check(...)` cells print `✓` when every check passes, `…` while an exercise is still a stub,
  and `✗` with what was seen and a hint otherwise. Your grader runs the same kind of tests on
  other inputs.
- Notebook 06 can train on tiny Shakespeare (1 MB): `coursedata.load_tinyshakespeare()` downloads
  it once into `~/.cache/attention-course/`, or reads the file named by `TINYSHAKESPEARE_PATH`.

## Handing in

As your course says; in every case hand in the notebooks under the names they have here
(`01_soft_lookup.ipynb`, ...), with your answers saved:

- GitHub Classroom: commit and push (`git add notebooks && git commit -m "..." && git push`);
  what is pushed by the deadline is what is graded.
- nbgrader on a JupyterHub: in the Assignments tab, *Validate* (it runs the checks), then
  *Submit*.
- Gradescope: upload the notebooks, or one zip of them.

`checker/` holds the checks (the package `autograder`) and the course's data and loaders (the
package `coursedata`). It contains no solutions. `checker-wheel/` is the same, built for the
notebooks' Colab cell, which installs it only if it is the one this handout was released with.
"""


# The first cell of every handout notebook. On Colab (its kernel has imported google.colab, and
# it sets COLAB_RELEASE_TAG) it installs the checker this handout was built with: the wheel in
# the handout's repository (WHEELS), downloaded and installed only when its SHA-256 is the one
# written into the cell at build time, so neither a later push to the repository nor whoever
# holds its address can change what runs. It keeps every package Colab already has at the
# version it has (a pip constraint per package) when that version is inside the checker's range,
# so Colab's PyTorch is never replaced; a version outside it (Ubuntu 24.04's own tqdm says 0.0.0)
# is left to pip, since a constraint could never be met. When pip replaced a package the session
# has already imported (numpy, after a re-run), the cell stops and says to restart the runtime:
# the module in memory and the files on disk no longer match. Anywhere else it does nothing.
COLAB_CELL = """\
# Google Colab only: install this course's checks and data beside Colab's own PyTorch and NumPy
# (what Colab already has is kept whenever the checks can use it). Anywhere else this cell does
# nothing.
import os
import sys

if "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ:
    import hashlib
    import importlib
    import subprocess
    import tempfile
    import urllib.request
    from importlib.metadata import (
        PackageNotFoundError,
        distributions,
        packages_distributions,
        version,
    )

    def installed_now():  # every distribution's version, as imports find them (first wins)
        found = {{}}
        for dist in distributions():
            found.setdefault((dist.metadata["Name"] or "").lower(), dist.version)
        return found

    try:
        from packaging.specifiers import SpecifierSet
    except ImportError:  # pip carries its own copy
        from pip._vendor.packaging.specifiers import SpecifierSet

    needed = {packages}
    keep, outside, before = [], [], installed_now()
    for package, wanted in needed.items():
        try:
            installed = version(package)
        except PackageNotFoundError:
            continue
        try:
            fits = SpecifierSet(wanted).contains(installed, prereleases=True)
        except ValueError:  # not a version pip can compare
            fits = False
        if fits:
            keep.append(f"{{package}}=={{installed}}")
        else:
            outside.append(f"{{package}} {{installed}}")
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as constraints:
        constraints.write("\\n".join(keep) + "\\n")
    print("keeping what Colab has:", ", ".join(keep))
    if outside:
        print("outside what the checks need, so pip installs another:", ", ".join(outside))
    wheel = os.path.join(tempfile.mkdtemp(), {wheel_name!r})
    with urllib.request.urlopen({wheel_url!r}, timeout=120) as answer:
        data = answer.read()
    if hashlib.sha256(data).hexdigest() != {wheel_sha256!r}:
        raise RuntimeError(
            "The course's checks downloaded from {wheel_url} are not the ones this notebook "
            "was released with, so they were not installed: ask your course for its notebooks."
        )
    with open(wheel, "wb") as file:
        file.write(data)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "-c", constraints.name, wheel],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError("could not install the course's checks:\\n" + done.stderr[-2000:])
    importlib.invalidate_caches()
    after, modules = installed_now(), {{}}
    for module, names in packages_distributions().items():
        for name in names:
            modules.setdefault(name.lower(), set()).add(module)
    loaded = {{name.split(".")[0] for name in sys.modules}}
    replaced = [  # what pip changed on disk under a module this session has imported
        f"{{name}} {{was}} -> {{after.get(name, 'removed')}}"
        for name, was in sorted(before.items())
        if after.get(name) != was and modules.get(name, {{name.replace("-", "_")}}) & loaded
    ]
    if replaced:
        raise RuntimeError(
            "The course's checks are on disk, but pip replaced a package this session had "
            "already loaded (" + ", ".join(replaced) + "). Restart the runtime now (Runtime > "
            "Restart session), then run this notebook again from the top: this cell will "
            "find everything in place."
        )
    print("the course's checks are installed")
{earlier}"""

COLAB_EARLIER = """\
    for earlier in {files}:
        if not os.path.exists(earlier):
            print(f"This notebook uses your own {{earlier}}: upload it next to this notebook "
                  "(the Files pane, on the left), then run the notebook again.")
"""


def colab_cell(
    nb: Notebook, repository: str, wheel: Path | str, solutions: Path = SOLUTIONS
) -> NotebookNode:
    """The Colab cell of a handout notebook (nbformat cell): see COLAB_CELL. `wheel`: the
    checker's wheel, in the handout folder published at `repository`."""
    source = nbformat.read(Path(solutions) / nb.filename, as_version=4)
    text = "\n".join(cell.source for cell in source.cells if cell.cell_type == "code")
    earlier = [other.filename for other in NOTEBOOKS if other is not nb and other.filename in text]
    cell = nbformat.v4.new_code_cell(
        COLAB_CELL.format(
            packages="{\n"
            + "".join(
                f"        {json.dumps(k)}: {json.dumps(v)},\n"
                for k, v in CHECKER_REQUIREMENTS.items()
            )
            + "    }",
            wheel_name=Path(wheel).name,
            wheel_url=published_file(repository, f"{WHEELS}/{Path(wheel).name}"),
            wheel_sha256=hashlib.sha256(Path(wheel).read_bytes()).hexdigest(),
            earlier=COLAB_EARLIER.format(files=json.dumps(earlier)) if earlier else "",
        )
    )
    cell.id = "colab-setup"
    return cell


def handout_repository(pyproject: Path = REPO / "pyproject.toml") -> str:
    """Where the handout is published (pyproject.toml's [project.urls] Handout)."""
    return tomllib.loads(Path(pyproject).read_text())["project"]["urls"]["Handout"]


PLACEHOLDER = "YOUR-ORG"  # pyproject.toml's Handout until a course sets it


class PlaceholderRepository(ValueError):
    """The handout would point students' installs at an address nobody owns yet."""


def published_file(repository: str, path: str) -> str:
    """The address of `path` in the handout published at `repository` (a GitHub repository,
    or a file:// folder); PlaceholderRepository for the placeholder or any other address."""
    if PLACEHOLDER.lower() in repository.lower():
        raise PlaceholderRepository(
            f"the handout's repository is still the placeholder {repository}: every notebook's "
            "Colab cell would install from an account anyone can register. Set [project.urls] "
            "Handout in pyproject.toml to where the handout will be published (or pass "
            "--repository URL), then build again"
        )
    github = "https://github.com/"
    if repository.startswith(github):
        name = repository.removeprefix(github).removesuffix(".git").strip("/")
        return f"{github}{name}/raw/HEAD/{path}"
    if repository.startswith("file:///"):
        return f"{repository.rstrip('/')}/{path}"
    raise PlaceholderRepository(
        f"the handout's repository {repository} is neither a https://github.com/ repository "
        "nor a file:/// folder: the Colab cell could not fetch the checks from it"
    )


def build_wheel(checker: Path, into: Path) -> Path:
    """The checker's wheel (pip wheel, offline, no dependencies), built into `into`."""
    import subprocess
    import sys

    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--wheel-dir", str(into), str(checker)],
        check=True,
        capture_output=True,
        timeout=600,
    )  # fmt: skip
    (wheel,) = into.glob("*.whl")
    shutil.rmtree(checker / "build", ignore_errors=True)
    for info in checker.glob("*.egg-info"):
        shutil.rmtree(info)
    return wheel


def colab_link(repository: str, filename: str) -> str | None:
    """The "Open in Colab" address of a handout notebook, or None for a non-GitHub repository."""
    prefix = "https://github.com/"
    if not repository.startswith(prefix):
        return None
    path = repository.removeprefix(prefix).removesuffix(".git").strip("/")
    return f"https://colab.research.google.com/github/{path}/blob/main/notebooks/{filename}"


def student_requirements(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """['numpy==2.4.6', 'torch==2.13.0', ...]: the course's own pins for STUDENT_PACKAGES."""
    pins = tomllib.loads(Path(pyproject).read_text())["project"]["dependencies"]
    by_name = {pin.split("==")[0].strip().lower(): pin.strip() for pin in pins}
    missing = [name for name in STUDENT_PACKAGES if name not in by_name]
    if missing:
        raise ValueError(f"pyproject.toml pins no {', '.join(missing)}")
    return [by_name[name] for name in STUDENT_PACKAGES]


def requires_python(pyproject: Path = REPO / "pyproject.toml") -> str:
    """The course's supported Pythons (">=3.11,<3.14"): the checker supports the same."""
    return tomllib.loads(Path(pyproject).read_text())["project"]["requires-python"]


def checker_requirements() -> tuple[list[str], dict[str, list[str]]]:
    """(['numpy>=2.2,<3', ...], {'lab': ['jupyterlab>=4.0']}): what the checker's pyproject says."""
    return (
        [f"{name}{spec}" for name, spec in CHECKER_REQUIREMENTS.items()],
        {
            extra: [f"{name}{spec}" for name, spec in specs.items()]
            for extra, specs in CHECKER_EXTRAS.items()
        },
    )


def _described(spec: str) -> str:
    """'2.6 or later, before 3' for '>=2.6,<3'."""
    lower, upper = spec.split(",")
    return f"{lower.removeprefix('>=')} or later, before {upper.removeprefix('<')}"


def _pin(name: str):
    """The course's version of a package ('2.13.0' for torch)."""
    return next(p.split("==")[1] for p in student_requirements() if p.split("==")[0] == name)


def notebooks_of(stage: int | None = None) -> tuple[Notebook, ...]:
    """The notebooks of a stage: 01..stage, or all of them."""
    if stage is None:
        return NOTEBOOKS
    if not 1 <= stage <= len(NOTEBOOKS):
        raise ValueError(f"--stage must be between 1 and {len(NOTEBOOKS)}, not {stage}")
    return NOTEBOOKS[:stage]


def _copy(
    patterns: tuple[str, ...],
    source: Path,
    target,
):
    copied = []
    for pattern in patterns:
        files = sorted(source.glob(pattern))
        if not files:
            raise FileNotFoundError(f"nothing matches {source / pattern}")
        for path in files:
            destination = target / path.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination)
            copied.append(destination)
    return copied


class _ImportTimeImports(ast.NodeVisitor):
    """The modules a file imports when it is imported: function bodies run later, if ever."""

    def __init__(self, module: str) -> None:
        self.package = module.rsplit(".", 1)[0]
        self.found: list[str] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        pass

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Try(self, node: ast.Try) -> None:
        """`try: import x / except ImportError:` is an optional import: x may be absent."""
        caught = {
            name.id
            for handler in node.handlers
            if handler.type is not None
            for name in ast.walk(handler.type)
            if isinstance(name, ast.Name)
        }
        if not caught & {"ImportError", "ModuleNotFoundError"}:
            self.generic_visit(node)
            return
        for part in (*node.handlers, *node.orelse, *node.finalbody):
            self.visit(part)

    def visit_Import(self, node: ast.Import) -> None:
        self.found += [alias.name for alias in node.names]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0:
            assert node.module is not None  # `from x import y`: only a relative one has none
            self.found.append(node.module)
            return
        base = self.package.split(".")
        base = base[: len(base) - (node.level - 1)]
        self.found.append(".".join(base + ([node.module] if node.module else [])))


def check_self_contained(package_root: Path, package: str = "autograder") -> None:
    """Raise if a shipped module imports, at import time, a course module that is not shipped."""
    problems = []
    for path in sorted((package_root / package).rglob("*.py")):
        parts = path.relative_to(package_root).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if parts[-1] == "__init__":
            module += ".__init__"  # relative imports start from the package itself
        visitor = _ImportTimeImports(module)
        visitor.visit(ast.parse(path.read_text(), filename=str(path)))
        for name in visitor.found:
            if name.split(".")[0] != package:
                continue
            target = package_root.joinpath(*name.split("."))
            if not (target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()):
                problems.append(f"{path.relative_to(package_root)} imports {name}")
    if problems:
        raise RuntimeError("the checker would not import: " + "; ".join(problems))


def _write_checker(
    checker: Path,
    notebooks: tuple[Notebook, ...] | tuple[Notebook, ...],
) -> None:
    from autograder.course.probes import build_cases  # instructor side: the cases' data
    from autograder.judging.store import save_cases

    package = checker / "autograder"
    _copy(SHIPPED, PACKAGE, package)
    (package / "__init__.py").write_text(INIT.format(version=__version__))
    for sub in ("harness", "judging", "course"):
        if not (package / sub / "__init__.py").is_file():
            raise FileNotFoundError(f"autograder/{sub}/__init__.py is missing")
    _copy(SHIPPED_DATA, COURSEDATA, checker / "coursedata")
    check_self_contained(checker)
    (checker / "jupyter").mkdir()
    (checker / "jupyter" / "jupyter_server_config.py").write_text(JUPYTER_SERVER_CONFIG)

    cases = [case for nb in notebooks for case in build_cases(nb.stem, VISIBLE_SEED)]
    save_cases(cases, package / "visible")

    packages = ["autograder", "autograder.harness", "autograder.judging"]
    packages += ["coursedata"]
    packages += sorted(
        ".".join(path.relative_to(checker).parent.parts)
        for path in (package / "course").rglob("__init__.py")
    )
    dependencies, extras = checker_requirements()
    (checker / "pyproject.toml").write_text(
        PYPROJECT.format(
            version=__version__,
            requires_python=requires_python(),
            dependencies="\n".join(f'    "{spec}",' for spec in dependencies),
            extras="\n".join(
                f"{extra} = [{', '.join(repr(s).replace(chr(39), chr(34)) for s in specs)}]"
                for extra, specs in extras.items()
            ),
            packages="\n".join(f'    "{name}",' for name in packages),
        )
    )


def _colab_badge(repository, nb) -> str:
    link = colab_link(repository, nb.filename)
    return f"[Open in Colab]({link})" if link else "-"


def _write_readme(
    out: Path,
    notebooks: tuple[Notebook, ...] | tuple[Notebook, ...],
    stage,
    repository,
) -> None:
    table = "\n".join(
        (
            f"| `{nb.filename}` | {', '.join(f'`{name}`' for name in nb.graded)} | "
            if nb.graded
            else f"| `{nb.filename}` | optional, not graded | "
        )
        + f"{_colab_badge(repository, nb)} |"
        for nb in handed_out(notebooks)
    )
    partial = stage is not None and stage < len(NOTEBOOKS)
    (out / "README.md").write_text(
        README.format(
            stage_title=f" (notebooks 01-{stage:02d})" if partial else "",
            count={
                1: "One",
                2: "Two",
                3: "Three",
                4: "Four",
                5: "Five",
                6: "Six",
                7: "Seven",
                8: "Eight",
            }[len(notebooks)],
            destination=notebooks[-1].title.lower() if partial else "a small modern language model",
            table=table,
            torch=_pin("torch"),
            torch_range=_described(CHECKER_REQUIREMENTS["torch"]),
        )
    )


def build_handout(
    out: Path | str,
    stage: int | None = None,
    solutions: Path = SOLUTIONS,
    repository: str | None = None,
) -> list[Path]:
    """Write the handout into `out` (which must be empty or absent). Returns its files.
    repository: where the handout will be published (default: pyproject.toml's Handout URL),
    for the notebooks' Colab cell and the README's Colab links."""
    repository = repository or handout_repository()
    published_file(repository, WHEELS)  # refuses a placeholder before anything is written
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty: choose a new folder for the handout")
    notebooks = notebooks_of(stage)
    _write_checker(out / "checker", notebooks)
    wheel = build_wheel(out / "checker", out / WHEELS)
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    for nb in handed_out(notebooks):  # with the optional notebooks, which nothing grades
        solution = nbformat.read(Path(solutions) / nb.filename, as_version=4)
        released = release_notebook(solution)
        released.cells.insert(0, colab_cell(nb, repository, wheel, solutions))
        (out / "notebooks" / nb.filename).write_text(render(released))
    (out / "requirements.txt").write_text(
        "# The course's pinned packages, then the checks and data of its notebooks.\n"
        + "".join(f"{pin}\n" for pin in student_requirements())
        + "./checker\n"
    )
    (out / ".gitignore").write_text(GITIGNORE)
    _write_readme(out, notebooks, stage, repository)
    return sorted(p for p in out.rglob("*") if p.is_file())


def describe(files: Collection[Path], out: Path | str) -> str:
    """A short summary of a built handout: its parts and their sizes."""
    out = Path(out)
    parts: dict[str, tuple[int, int]] = {}
    for path in files:
        rel = path.relative_to(out)
        key = rel.parts[0] if len(rel.parts) > 1 else rel.name
        if rel.parts[:2] == ("checker", "autograder") and len(rel.parts) > 3:
            key = "/".join(rel.parts[:3])
        count, size = parts.get(key, (0, 0))
        parts[key] = (count + 1, size + path.stat().st_size)
    lines = [f"handout written to {out}:"]
    for key, (count, size) in sorted(parts.items()):
        lines.append(f"  {key:32} {count:5d} file(s) {size / 1e6:8.2f} MB")
    total = sum(size for _, size in parts.values())
    lines.append(f"  {'total':32} {len(files):5d} file(s) {total / 1e6:8.2f} MB")
    return "\n".join(lines)
