"""The two install routes (pip with pyproject, conda with environment.yml) install the same set."""

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def _pyproject_requirements():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return set(project["dependencies"]) | set(project["optional-dependencies"]["dev"])


def _environment_requirements():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_sections = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_sections) == 1, "environment.yml needs exactly one pip section"
    return env, {r for r in pip_sections[0] if not r.startswith("-")}  # not -e ., options


def test_environment_yml_pins_the_same_packages_as_pyproject():
    _, conda_pip = _environment_requirements()
    pip_route = _pyproject_requirements()
    assert conda_pip == pip_route, (
        f"only in environment.yml: {sorted(conda_pip - pip_route)}; "
        f"only in pyproject.toml: {sorted(pip_route - conda_pip)}"
    )


def test_python_311_to_313_are_supported_and_conda_keeps_311():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11,<3.14"


def test_environment_yml_uses_python_311_and_installs_the_course():
    env, _ = _environment_requirements()
    assert "python=3.11" in env["dependencies"]
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip_section


def test_every_requirement_is_pinned_exactly():
    for requirement in _pyproject_requirements():
        assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][0-9A-Za-z.+]*", requirement), requirement


def test_torch_is_the_cpu_release_on_these_machines():
    assert "torch==2.13.0" in _pyproject_requirements()


def test_every_route_that_installs_torch_says_where_its_cpu_build_comes_from():
    """PyPI's Linux torch is the CUDA build: each README that installs torch gives PyTorch's CPU
    index with the exact command, and conda's pip section reads that index too."""
    command = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"
    readme = (REPO / "README.md").read_text()
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    assert command in setup and setup.index(command) < setup.index('pip install -e ".[dev]"')
    env, _ = _environment_requirements()
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in pip_section
    from autograder.handout import README

    assert command.replace("2.13.0", "{torch}") in README  # the handout's, with the course's pin


def test_ci_runs_exactly_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    match = re.search(r"<!-- test-command -->\s*```(?:bash|sh)?\n(.+?)\n```", readme, re.S)
    assert match, "README.md must show the test command after a <!-- test-command --> marker"
    command = match.group(1).strip()
    assert command in (REPO / ".ci" / "run").read_text()


def test_every_package_of_the_course_is_listed_in_pyproject():
    listed = set(
        tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    on_disk = {
        ".".join(init.parent.relative_to(REPO).parts)
        for init in (REPO / "autograder").rglob("__init__.py")
    } | {"coursedata"}
    assert on_disk == listed, (
        f"unlisted: {sorted(on_disk - listed)}; gone: {sorted(listed - on_disk)}"
    )


def test_the_readme_opens_every_notebook_of_the_handout_in_colab():
    from autograder.curriculum import handed_out
    from autograder.handout import colab_link, handout_repository

    readme = (REPO / "README.md").read_text()
    links = re.findall(r"\]\((https://colab\.research\.google\.com/\S+)\)", readme)
    assert links == [colab_link(handout_repository(), nb.filename) for nb in handed_out()]
