"""What a verdict was graded under, beside what was graded: a regrade's second key.

    fp = fingerprint(config)       # "sha256:<hex>", the same for the same configuration

A student's results.json keeps the content digest of what was graded (`submission_digest`,
submissions.content_digest) and this fingerprint (`grading_fingerprint`) of how: the secret
(through a slow, salted hash, never the secret itself: results.json may be shown to a student,
and a weak secret must not be cheap to guess from it), the course's digest (the grader's own
code, which holds the hidden tests and the reference, and the course's `coursedata`), the
limits the instructor set (--timeout, --memory, every other Limits figure, the largest
notebook read) and the grader's version. A student is up to date only when both match
(grading/classrun.py): a leaked secret replaced, a hidden test fixed, a new course version or
new limits regrade everyone, and the run says how many were graded under another
configuration. The budgets the self-test measures at each run (Limits.measured) are not in it:
they move with the machine's load, and would regrade everyone at every run.
"""

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import autograder
from autograder.config import Config

SECRET_SALT = b"autograder: the secret, in a regrade fingerprint"
# PBKDF2-SHA256: once per run, and as much for each guess of the secret (312 ms on the
# project's 2-core machine under load: python -m timeit -s "from autograder.grading.fingerprint
# import secret_hash" "secret_hash('s')")
SECRET_ROUNDS = 200_000
_COURSE_SUFFIXES = (".py", ".json", ".npz", ".txt", ".toml")
# what decides a verdict, in the autograder package (a folder, or a module)
VERDICT_PARTS = (
    "course",  # one folder per notebook: its answers, cases, judges and variants
    "probes",
    "reference",
    "judging",
    "harness",
    "misconceptions",
    "curriculum.py",
)


def secret_hash(secret: str) -> str:
    """A slow, salted hash of the secret (hex): equal secrets, equal hashes; never the secret."""
    data = str(secret).encode("utf-8", "surrogateescape")
    return hashlib.pbkdf2_hmac("sha256", data, SECRET_SALT, SECRET_ROUNDS).hex()


def course_digest(roots: Iterable[Path | str | None] | None = None) -> str:
    """sha256 (hex) of the files that decide a verdict, by relative path and bytes: the
    grader's hidden tests, reference, judges, harness and curriculum, and the course's
    coursedata (the rest of the grader is its version's business)."""
    if roots is None:
        from autograder.grading.course_files import coursedata_dir

        package = Path(autograder.__file__).resolve().parent
        roots = [*(package / name for name in VERDICT_PARTS), coursedata_dir()]
    digest = hashlib.sha256()
    for root in roots:
        if root is None:
            continue
        root = Path(root)
        files = (
            [root]
            if root.is_file()
            else sorted(
                p
                for p in root.rglob("*")
                if p.suffix in _COURSE_SUFFIXES and p.is_file() and "__pycache__" not in p.parts
            )
        )
        for path in files:
            name = f"{root.name}/{path.relative_to(root).as_posix()}".encode()
            digest.update(len(name).to_bytes(8, "big") + name)
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def limits_of(config: Config) -> dict[str, Any]:
    """The limits the instructor set, as plain data (the self-test's measurements left out)."""
    limits = dataclasses.asdict(config.limits)
    limits.pop("measured", None)
    if not getattr(config.limits, "timeout_given", True):
        limits["timeout"] = "measured by the self-test"
    limits.pop("timeout_given", None)
    limits["max_notebook_bytes"] = config.max_notebook_bytes
    return limits


def fingerprint(config: Config, course: str | None = None) -> str:
    """The "sha256:<hex>" of the secret's hash, the course's digest, the limits and the version."""
    parts = {
        "secret": secret_hash(config.secret),
        "course": course if course is not None else course_digest(),
        "limits": limits_of(config),
        "version": autograder.__version__,
    }
    text = json.dumps(parts, sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
