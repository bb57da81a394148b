"""The grading parent's peak memory on a class of parser bombs (issue 18, item 2).

    python benchmarks/parent_memory.py                # the whole class in one run
    python benchmarks/parent_memory.py --each         # and each attacker alone, one run each
    python benchmarks/parent_memory.py --keep DIR     # build the class in DIR and keep it
    python benchmarks/parent_memory.py --repo /work/main --each   # the code of another checkout

The class (built by `build`, every file made here, nothing downloaded): an honest student
(solutions/01 as notebook 01) and attackers who control only bytes the parent reads before any
notebook runs - JSON that is small in bytes but huge in values, deep JSON, huge outputs, and
zips whose central directory, ratio or copies are the bomb. Each run is `python -m autograder
grade CLASS --workers 1 --quiet --force` in a child whose peak resident memory is its own
VmHWM (the grading parent only, not the sandboxes it starts). The LAST line
printed is one JSON object: {"class_peak_mb", "seconds", "exit", "each": {student: peak_mb}}.
"""

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NB1 = "01_soft_lookup.ipynb"
MB = 2**20

# VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec, so a parent started by a big
# process (a test worker) would report that process's peak instead of its own.
WRAPPER = (
    "import sys\n"
    "from autograder.__main__ import main\n"
    "code = main(sys.argv[1:])\n"
    "print('PEAK_RSS_KB', next(int(l.split()[1]) for l in open('/proc/self/status')"
    " if l.startswith('VmHWM:')), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def notebook_text(code="x = 1", metadata="{}", outputs="[]"):
    """A notebook's JSON with one code cell; `metadata` and `outputs` are JSON text put in as
    they are (the bombs are written as text: building them as Python objects would cost the
    generator what they cost the parent)."""
    return (
        '{"nbformat": 4, "nbformat_minor": 5, "metadata": ' + metadata + ', "cells": [{"id": "c1", '
        '"cell_type": "code", "execution_count": 1, "metadata": {}, "source": '
        + json.dumps(code)
        + ', "outputs": '
        + outputs
        + "}]}"
    )


def object_bomb(megabytes):
    """Notebook metadata holding ~megabytes/3 million empty objects: `{},{},{},...`."""
    count = megabytes * MB // 3
    return notebook_text(metadata='{"x": [' + ",".join(["{}"] * count) + "]}")


def deep_bomb(depth):
    return notebook_text(metadata='{"x": ' + "[" * depth + "]" * depth + "}")


def output_lines(megabytes):
    """Outputs as millions of one-character lines (a print in a loop, saved)."""
    count = megabytes * MB // 5
    stream = '{"output_type": "stream", "name": "stdout", "text": [' + ",".join(['"a"'] * count)
    return notebook_text(outputs="[" + stream + "]}]")


def output_blob(megabytes):
    """One output of one long string."""
    text = json.dumps("y" * (megabytes * MB))
    return notebook_text(
        outputs='[{"output_type": "stream", "name": "stdout", "text": ' + text + "}]"
    )


def zip_directory_bomb(path, members):
    """A zip whose central directory lists `members` entries, all pointing at one tiny local
    file: ~56 bytes an entry on disk, each a ZipInfo object in a parent that reads the
    directory whole. The end record says 1 entry (readers that trust it are fooled)."""
    name = b"a.txt"
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0) + name
    with open(path, "wb") as handle:
        handle.write(local)
        start = handle.tell()
        batch = []
        for i in range(members):
            member = f"m/{i:07d}.txt".encode()
            batch.append(
                struct.pack(
                    "<4s6H3L5H2L",
                    b"PK\x01\x02",
                    20,
                    20,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    len(member),
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                )
                + member
            )
            if len(batch) == 10_000:
                handle.write(b"".join(batch))
                batch = []
        handle.write(b"".join(batch))
        size = handle.tell() - start
        handle.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 1, 1, size, start, 0))


def zip_ratio_bomb(path, gigabytes):
    """notebook 01 as a member that inflates to `gigabytes` of spaces (JSON whitespace)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        info = zipfile.ZipInfo(NB1)
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as member:
            chunk = b" " * (16 * MB)
            for _ in range(int(gigabytes * 64)):
                member.write(chunk)


def zip_copies(path, copies, megabytes):
    """`copies` members named like notebook 01 in as many folders, each inflating to
    `megabytes` of a different valid notebook (so no two are alike)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(copies):
            text = notebook_text(code=f"x = {i}", outputs=output_blob_json(megabytes))
            archive.writestr(f"copy{i:03d}/{NB1}", text)


def output_blob_json(megabytes):
    return '[{"output_type": "stream", "name": "stdout", "text": "' + "z" * (megabytes * MB) + '"}]'


def build(root, small=False):
    """The adversarial class under root/class; returns its path. small: the test suite's
    cheaper instances of each class (same kinds, smaller: a few seconds to write)."""
    cls = Path(root) / "class"
    cls.mkdir(parents=True)

    def put(student, text):
        (cls / student).mkdir()
        (cls / student / NB1).write_text(text)

    honest = json.loads((REPO / "solutions" / NB1).read_text())
    put("honest", json.dumps(honest))
    put("objects_5mb", object_bomb(5))  # ~1.7 million empty objects
    put("deep_json", deep_bomb(200_000))
    put("output_lines_19mb", output_lines(19))  # ~4 million strings
    zip_directory_bomb(cls / "zip_members.zip", 1_000_000)  # a 57 MB directory
    zip_ratio_bomb(cls / "zip_ratio.zip", 0.25 if small else 2)
    zip_copies(cls / "zip_copies.zip", 40, 5)
    if not small:
        put("objects_19mb", object_bomb(19))  # ~6.6 million
        put("output_blob_19mb", output_blob(19))
    return cls


def peak_mb(stderr):
    for line in stderr.splitlines():
        if line.startswith("PEAK_RSS_KB"):
            return int(line.split()[1]) / 1024
    return None


def grade(cls, out, repo=REPO, extra=()):
    argv = [str(cls), "--out", str(out), "--workers", "1", "--quiet", "--force"]
    argv += ["--secret", "parent-memory", "--timeout", "120", *extra]
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-c", WRAPPER, "grade", *argv],
        capture_output=True,
        text=True,
        cwd=repo,  # `python -c` imports autograder from the working folder first
        env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
    )
    return run, time.monotonic() - started


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--each", action="store_true", help="also grade each student alone")
    parser.add_argument("--keep", help="build the class in this folder and keep it")
    parser.add_argument(
        "--repo",
        default=str(REPO),
        help="grade with the autograder of this checkout (before/after)",
    )
    args = parser.parse_args(argv)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="parent-memory-"))
    cls = build(root) if not (root / "class").exists() else root / "class"
    run, seconds = grade(cls, root / "out", args.repo)
    report = {
        "class_peak_mb": round(peak_mb(run.stderr) or -1),
        "seconds": round(seconds, 1),
        "exit": run.returncode,
        "stderr_tail": run.stderr[-1500:],
    }
    scores = {}
    for results in sorted((root / "out").glob("*/results.json")):
        payload = json.loads(results.read_text())
        scores[results.parent.name] = [payload["score"], payload["max_score"]]
    report["scores"] = scores
    if args.each:
        report["each"] = {}
        for entry in sorted(cls.iterdir()):
            alone = root / "alone" / entry.name
            alone.mkdir(parents=True)
            entry.rename(alone / entry.name)
            try:
                run, seconds = grade(alone, root / "out-alone" / entry.name, args.repo)
                report["each"][entry.name] = {
                    "peak_mb": round(peak_mb(run.stderr) or -1),
                    "seconds": round(seconds, 1),
                }
            finally:
                (alone / entry.name).rename(entry)
            print(entry.name, report["each"][entry.name], flush=True)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
