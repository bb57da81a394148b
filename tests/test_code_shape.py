"""benchmarks/code_shape.py counts long files, long functions and import arrows between rooms, on a
package made here whose figures are known by construction."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "code_shape.py"


def load_script():
    spec = importlib.util.spec_from_file_location("code_shape", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_counts_on_a_package_of_known_shape(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "alpha").mkdir(parents=True)
    (pkg / "beta").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "alpha" / "__init__.py").write_text("from pkg.beta import tools\nimport pkg.top\n")
    (pkg / "alpha" / "inner.py").write_text("from pkg.beta.tools import x\nfrom . import other\n")
    (pkg / "alpha" / "other.py").write_text("")
    body = "\n".join(f"    v{i} = {i}" for i in range(81))  # 81 body lines + def = 82
    (pkg / "beta" / "__init__.py").write_text("")
    (pkg / "beta" / "tools.py").write_text(f"def long():\n{body}\n\nx = 1\n" + "\n" * 330)
    (pkg / "top.py").write_text("def short():\n    return 1\n")
    files, functions, arrows = load_script().shape(pkg)
    assert [name for _, name in files] == ["pkg/beta/tools.py"]
    assert [(n, name) for n, name in functions] == [(82, "pkg.beta.tools.long")]
    assert arrows == [("alpha", "beta"), ("alpha", "top")]  # the two alpha modules count once
