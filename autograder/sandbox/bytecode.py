"""The sandbox's own Python files compiled once per grading run, where no sandbox can write.

    compile_tree(lib)   # after the grader wrote lib, before share_read_only(lib)

Every sandbox runs with PYTHONDONTWRITEBYTECODE and sees the grader's library (the harness, the
zygote, coursedata, the silent checks) read-only, so without compiled files each sandbox
compiled the zygote again, and each notebook's kernel the harness it answers the hidden tests
with. The grader compiles them once, right after writing them: the .pyc files sit in
__pycache__ folders of the same tree, which the sandbox sees read-only (bubblewrap's mount, or
the grader's ownership where student code runs as another uid), so a student can neither write
one nor replace one for the next student. They are checked-hash pycs (PEP 552): Python runs one
only when the hash of its source file matches the hash it records, so a compiled file that does
not belong to its source is never run in its place; it compiles the source as before.
"""

import compileall
import py_compile
from pathlib import Path


def compile_tree(root: Path) -> bool:
    """Compile every .py file under root into checked-hash pycs; True when all compiled (a file
    that does not compile is simply compiled, and fails, as before when it is imported)."""
    return bool(
        compileall.compile_dir(
            str(root),
            quiet=2,
            invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
        )
    )
