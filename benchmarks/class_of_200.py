"""A class of 200 realistic students graded with the README's command: wall time, CPU of the
whole process tree, and what the parent does after the last student (issue 37).

    python benchmarks/class_of_200.py                     # 200 students, the machine as it is
    python benchmarks/class_of_200.py --burners 2         # beside two CPU-burning processes
    python benchmarks/class_of_200.py --students 10       # a small class, to try it
    python benchmarks/class_of_200.py --fresh-selftest    # as on a new machine: the self-test runs

The class is built in a temporary folder from examples/build_class.py's personas (its functions,
imported): each persona that makes a mistake comes after a correct student, and the cycle of
personas is repeated up to --students. Over it runs a fixed cycle of what a real class adds
(VARIANTS, shuffled once by --seed): a notebook or two missing, one notebook left as the
released stub, cells of the student's own, a name in Unicode (NFC, or NFD as macOS writes it),
a notebook saved as Colab's "Copy of NAME.ipynb" or as a browser's "NAME (1).ipynb". Every
notebook opens with a markdown cell naming its student, so no two students' notebooks have the
same bytes. Nothing is downloaded. The mix is printed before grading.

The class is graded by `python -m autograder grade CLASS --out OUT --secret S`, as the README
tells an instructor: default workers, budgets and memory. Its wall time is the whole command,
self-test included when it runs (the figure for "graded in under 10 minutes"). The self-test is
cached per environment, so on a machine that passed it before it does not run; --fresh-selftest
points the grader's cache at an empty folder so that it does, as on a first grading. Its own
seconds (the grader's "self-test passed: ... in S s") are printed apart, with the wall time less
them. CPU is user+sys of the whole process tree, sandboxes included (grade_vs_nbgrader.py's
CpuMeter: a cgroup of its own; rusage where none can be made). The tail is the time from the
last student's files (the newest results.json or feedback.html) to the end of the command: the
class report, class page and similarity report, written once every sandbox is done.

Prints the machine (cores, CPU model, load averages at the start and the end), the mix, the
figures, the correct students without full marks (there must be none) and any student not
graded, and ends with one JSON line.
"""

import argparse
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
SECRET = "class-of-200-benchmark"


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PEER = _load(REPO / "benchmarks" / "grade_vs_nbgrader.py", "grade_vs_nbgrader")  # CpuMeter
BURNERS = _load(REPO / "benchmarks" / "burners.py", "burners")
BUILD = _load(REPO / "examples" / "build_class.py", "build_class")  # the personas

# What a real class adds, one per student in this order (shuffled once by the seed). Eleven
# entries: an odd count, so both halves of the personas' cycle (correct, mistaken) meet each.
VARIANTS = (
    "as-is",
    "own-cells",
    "missing",
    "as-is",
    "copy-of",
    "stub",
    "nfc-name",
    "own-cells",
    "near-1",
    "as-is",
    "nfd-name",
)
NAME_NOTE_ID = "student-name-note"


def is_correct(persona):
    return not persona.mistakes and not persona.stubs and not persona.missing


def persona_cycle(personas=None):
    """Each persona that makes a mistake after a correct one: half the class is correct."""
    personas = personas or BUILD.CLASS
    correct = [p for p in personas if is_correct(p)]
    cycle = []
    for i, other in enumerate(p for p in personas if not is_correct(p)):
        cycle += [correct[i % len(correct)], other]
    return cycle


@dataclass
class Member:
    """One student of the built class: folder name, persona, variant, {file name: stem}."""

    name: str
    persona: str
    variant: str
    files: dict
    correct: bool  # a correct persona who handed in every notebook complete: full marks due


def _name(index, persona, variant):
    base = f"s{index + 1:03d}-{persona.name}"
    if variant == "nfc-name":
        return unicodedata.normalize("NFC", f"zoé-{base}")
    if variant == "nfd-name":
        return unicodedata.normalize("NFD", f"josé-{base}")
    return base


def _own_cells(nb, rng, name):
    """One or two cells of the student's own, after the opening cells: harmless scratch."""
    for k in range(rng.choice((1, 2))):
        at = rng.randrange(2, len(nb.cells))
        cell = nbformat.v4.new_code_cell(
            f"# {name}: trying things out\nmy_scratch_{k} = {rng.randrange(1000)}\n"
            f"print('my scratch value:', my_scratch_{k} * 2)"
        )
        cell.id = f"student-scratch-{k}"
        nb.cells.insert(at, cell)


def build(target, students=200, seed=200, solutions=None):
    """Write a class of `students` into `target` (created); [Member], in order."""
    solutions = Path(solutions or BUILD.SOLUTIONS)
    rng = random.Random(seed)
    variants = list(VARIANTS)
    rng.shuffle(variants)
    cycle = persona_cycle()
    stems = [nb for nb in BUILD.NOTEBOOKS if (solutions / nb.filename).exists()]
    read = {nb.stem: nbformat.read(solutions / nb.filename, as_version=4) for nb in stems}
    made = {}  # (persona, stem) -> that persona's notebook, built once
    released = {nb.stem: BUILD.release_notebook(read[nb.stem]) for nb in stems}
    members = []
    target = Path(target)
    for index in range(students):
        persona, variant = cycle[index % len(cycle)], variants[index % len(variants)]
        name = _name(index, persona, variant)
        handed = [nb for nb in stems if nb.stem not in persona.missing]
        if variant == "missing":
            dropped = rng.sample(handed, rng.choice((1, 2)))
            handed = [nb for nb in handed if nb not in dropped]
        stub = rng.choice(handed).stem if variant == "stub" else None
        renamed = rng.choice(handed).stem if variant in ("copy-of", "near-1") else None
        folder = target / name
        folder.mkdir(parents=True)
        files = {}
        for nb in handed:
            if nb.stem == stub:
                student_nb = deepcopy(released[nb.stem])
            else:
                key = (persona.name, nb.stem)
                if key not in made:
                    made[key] = BUILD.student_notebook(read[nb.stem], persona, nb.stem)
                student_nb = deepcopy(made[key])
            if variant == "own-cells":
                _own_cells(student_nb, rng, name)
            note = nbformat.v4.new_markdown_cell(f"Submitted by {name} (student {index + 1}).")
            note.id = NAME_NOTE_ID
            student_nb.cells.insert(0, note)
            filename = nb.filename
            if nb.stem == renamed:
                filename = (
                    f"Copy of {nb.filename}" if variant == "copy-of" else f"{nb.stem} (1).ipynb"
                )
            (folder / filename).write_text(BUILD.render(student_nb), encoding="utf-8")
            files[filename] = nb.stem
        complete = len(handed) == len(stems) and stub is None
        members.append(Member(name, persona.name, variant, files, is_correct(persona) and complete))
    return members


def mix(members):
    """The class in a few lines: personas, variants, the correct students owed full marks."""
    personas = Counter(m.persona for m in members)
    variants = Counter(m.variant for m in members)
    return {
        "personas": dict(sorted(personas.items())),
        "variants": dict(sorted(variants.items())),
        "correct_complete": sum(m.correct for m in members),
        "notebooks": sum(len(m.files) for m in members),
    }


def grade(class_dir, out, env):
    """The README's command on the class: (seconds, CpuMeter, the finished process)."""
    argv = [sys.executable, "-m", "autograder", "grade", str(class_dir), "--out", str(out)]
    argv += ["--secret", SECRET]
    started = time.perf_counter()
    with PEER.CpuMeter() as cpu:
        done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env)
        ended = time.time()
    return time.perf_counter() - started, cpu, done, ended


SELFTEST = re.compile(r"self-test passed: .* in ([0-9.]+) s")


def tail(out, ended):
    """(seconds from the last student's files to the end, {class file: seconds after them})."""
    student_files = [
        p.stat().st_mtime
        for pattern in ("*/results.json", "*/feedback.html")
        for p in Path(out).glob(pattern)
    ]
    if not student_files:
        return None, {}
    last = max(student_files)
    class_files = {
        p.name: round(p.stat().st_mtime - last, 2)
        for p in sorted(Path(out).iterdir())
        if p.is_file() and not p.name.startswith(".")
    }
    return ended - last, class_files


def scores(out, members):
    """({member name: (score, max)}, {member name: its sandbox's CPU-s as the grader counted
    them}) from OUT/<student>/results.json (names compared in NFC)."""
    by_key = {unicodedata.normalize("NFC", m.name): m.name for m in members}
    found, sandbox_cpu = {}, {}
    for results in Path(out).glob("*/results.json"):
        name = by_key.get(unicodedata.normalize("NFC", results.parent.name))
        if name is not None:
            payload = json.loads(results.read_text())
            found[name] = (payload["score"], payload["max_score"])
            if isinstance(payload.get("cpu_seconds"), int | float):
                sandbox_cpu[name] = payload["cpu_seconds"]
    return found, sandbox_cpu


def per_persona(members, sandbox_cpu):
    """{persona: mean sandbox CPU-s of its students}: where the students' own time goes."""
    spent = {}
    for m in members:
        if m.name in sandbox_cpu:
            spent.setdefault(m.persona, []).append(sandbox_cpu[m.name])
    return {p: round(sum(v) / len(v), 2) for p, v in sorted(spent.items())}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=200, help="class size (default 200)")
    parser.add_argument("--burners", type=int, default=0, help="CPU-burning neighbours")
    parser.add_argument("--seed", type=int, default=200, help="the mix's seed (default 200)")
    parser.add_argument(
        "--fresh-selftest",
        action="store_true",
        help="an empty cache for the grader, so that its self-test runs as on a first grading",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)

    machine = {"nproc": os.cpu_count(), "cpu": PEER.cpu_model(), "burners": args.burners}
    root = Path(tempfile.mkdtemp(prefix="class-of-200-"))
    env = dict(os.environ)
    if args.fresh_selftest:
        from data.shakespeare import ENV_VAR, tiny_shakespeare_path

        here = tiny_shakespeare_path()  # read where it is now, not downloaded into the new cache
        if here is not None:
            env.setdefault(ENV_VAR, str(here))
        env["XDG_CACHE_HOME"] = str(root / "cache")
    try:
        members = build(root / "class", args.students, args.seed)
        the_mix = mix(members)
        print(f"class: {args.students} students, seed {args.seed}: {json.dumps(the_mix)}")
        with BURNERS.burning(args.burners):
            machine["load_average_at_start"] = PEER.load_average()
            print(
                f"machine: {machine['nproc']} cores, {machine['cpu']}, {args.burners} CPU "
                f"burners, load average {machine['load_average_at_start']}",
                flush=True,
            )
            wall, cpu, done, ended = grade(root / "class", root / "out", env)
            machine["load_average_at_end"] = PEER.load_average()
        got, sandbox_cpu = scores(root / "out", members)
        tail_s, class_files = tail(root / "out", ended)
    finally:
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    found = SELFTEST.search(done.stderr + done.stdout)
    selftest_s = float(found.group(1)) if found else None
    correct = [m for m in members if m.correct]
    short = [m.name for m in correct if m.name not in got or got[m.name][0] != got[m.name][1]]
    not_graded = [m.name for m in members if m.name not in got]
    graded = len(got)
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "(no output)")
    if done.returncode not in (0, 1):
        print(done.stderr[-3000:], file=sys.stderr)
    print(
        f"graded {graded} of {len(members)} students: {wall:.1f} s wall, {cpu.seconds:.1f} CPU-s "
        f"({cpu.seconds / max(1, graded):.2f} CPU-s a student), measured by {cpu.method}"
    )
    in_sandboxes = sum(sandbox_cpu.values())
    print(
        f"the students' sandboxes: {in_sandboxes:.1f} CPU-s (the grader's count); the rest, "
        f"{cpu.seconds - in_sandboxes:.1f} CPU-s, is the parent, the self-test and the start-up; "
        f"a student's sandbox by persona: {per_persona(members, sandbox_cpu)}"
    )
    if selftest_s is not None:
        print(f"the self-test ran: {selftest_s:.1f} s of it; without it {wall - selftest_s:.1f} s")
    else:
        print("the self-test did not run (this environment passed it before; --fresh-selftest)")
    if tail_s is not None:
        print(f"tail after the last student's files: {tail_s:.1f} s (class files {class_files})")
    print(f"correct students with full marks: {len(correct) - len(short)} of {len(correct)}")
    if short:
        print(f"!!! CORRECT STUDENTS WITHOUT FULL MARKS: {', '.join(short)} !!!")
        for name in short:
            print(f"    {name}: {got.get(name, 'no results')}")
    if not_graded:
        print(f"!!! NOT GRADED: {', '.join(not_graded)} !!!")
    print(f"load average at the end {machine['load_average_at_end']}")
    print(
        json.dumps(
            {
                "students": len(members),
                "graded": graded,
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu.seconds, 2),
                "cpu_s_per_student": round(cpu.seconds / max(1, graded), 3),
                "selftest_s": selftest_s,
                "wall_s_without_selftest": round(wall - (selftest_s or 0.0), 2),
                "sandbox_cpu_s": round(in_sandboxes, 2),
                "sandbox_cpu_s_by_persona": per_persona(members, sandbox_cpu),
                "tail_s": None if tail_s is None else round(tail_s, 2),
                "class_files_after_last_student_s": class_files,
                "correct_complete": len(correct),
                "correct_full_marks": len(correct) - len(short),
                "correct_short": short,
                "not_graded": not_graded,
                "status": done.returncode,
                "seed": args.seed,
                "mix": the_mix,
                "method": cpu.method,
                **machine,
            },
            ensure_ascii=False,
        )
    )
    return 1 if short or not_graded else 0


if __name__ == "__main__":
    sys.exit(main())
