"""The code's shape in three figures, for a maintainer comparing two revisions of autograder/:

- files over 400 lines, and functions (or methods) over 80 lines;
- import arrows between top-level rooms: a room is a subpackage of autograder/ (grading,
  sandbox, course, ...) or a top-level module; an arrow is a pair (room A imports something in
  room B), counted once however many modules make it.

    python benchmarks/code_shape.py [PACKAGE_DIR]      # default: autograder/ of this checkout

Run it on two checkouts (git worktree add /tmp/old <commit>) to compare them.
"""

import ast
import sys
from pathlib import Path

FILE_LINES, FUNCTION_LINES = 400, 80


def modules(package):
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def room(module, top):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else top


def shape(package):
    found = modules(package)
    top = package.name
    long_files, long_functions, arrows = [], [], set()
    for module, path in found.items():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > FILE_LINES:
            long_files.append((text.count("\n"), str(path.relative_to(package.parent))))
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > FUNCTION_LINES:
                    long_functions.append((length, f"{module}.{node.name}"))
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level:
                names = []  # relative imports stay inside a room
            for name in names:
                if name.split(".")[0] != top:
                    continue
                while name and name not in found:
                    name = name.rpartition(".")[0]
                if name and name != top:
                    a, b = room(module, top), room(name, top)
                    if a != b:
                        arrows.add((a, b))
    return sorted(long_files, reverse=True), sorted(long_functions, reverse=True), sorted(arrows)


def main():
    package = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parents[1] / "autograder")
    files, functions, arrows = shape(package.resolve())
    rooms = {r for arrow in arrows for r in arrow}
    print(f"files over {FILE_LINES} lines: {len(files)}")
    for n, name in files:
        print(f"  {n:5d}  {name}")
    print(f"functions over {FUNCTION_LINES} lines: {len(functions)}")
    for n, name in functions:
        print(f"  {n:5d}  {name}")
    print(f"import arrows between top-level rooms: {len(arrows)} (among {len(rooms)} rooms)")


if __name__ == "__main__":
    main()
