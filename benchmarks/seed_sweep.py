"""The model answers graded through every hidden test of every notebook under thousands of
(secret, student) seeds, in-process (autograder/seed_sweep.py): the points lost must be 0.

    python benchmarks/seed_sweep.py --seeds 2000 --training-seeds 2000 --jobs 2

GPT's short training run (the only costly case, ~0.7 CPU-s a seed) runs under the first
--training-seeds seeds; every other hidden test under all --seeds. The last line printed is one
JSON object: seeds, points lost, the lost cases (at most 20 shown), CPU and wall seconds, the
machine. This is a correctness sweep, not a speed race: it has no peer to run beside.
"""

import argparse
import itertools
import json
import multiprocessing
import os
import platform
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _chunk(task):
    kind, pairs, stems = task
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    import torch

    torch.set_num_threads(1)
    from autograder import seed_sweep

    started = time.process_time()
    if kind == "training":
        lost = [(s, t, "GPT", "training", p, m) for s, t, p, m in seed_sweep.training_cases(pairs)]
    else:
        lost = [
            (s, t, n, c, p, m[:300])
            for s, t, _, n, c, p, m in seed_sweep.sweep(pairs, stems=stems, training=False)
        ]
    return kind, len(pairs), lost, time.process_time() - started


def _cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--training-seeds", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=20, help="seeds per task")
    parser.add_argument("--secret", default="benchmark-sweep")
    parser.add_argument(
        "--minutes", type=float, default=0, help="stop after this long (0: run to the end)"
    )
    parser.add_argument(
        "--notebooks",
        nargs="+",
        metavar="STEM",
        help="sweep only these notebooks (e.g. 03_matrix_attention) over the same seeds; "
        "with --training-seeds 0 to leave out GPT's training run",
    )
    args = parser.parse_args(argv)

    from autograder import seed_sweep

    pairs = seed_sweep.seeds(args.seeds, secret=args.secret)
    training = seed_sweep.seeds(args.training_seeds, secret=args.secret + "-training")
    stems = set(args.notebooks) if args.notebooks else None
    known = {nb.stem for nb, _ in seed_sweep.swept_notebooks()}
    if stems and not stems <= known:
        parser.error(f"no hidden tests for {sorted(stems - known)}: choose from {sorted(known)}")
    sweeps = [("all", pairs[i : i + args.chunk], stems) for i in range(0, len(pairs), args.chunk)]
    trains = [
        ("training", training[i : i + args.chunk], None)
        for i in range(0, len(training), args.chunk)
    ]
    # interleaved, so that a run stopped by --minutes has swept both kinds
    tasks = [t for two in itertools.zip_longest(sweeps, trains) for t in two if t is not None]
    load_before = os.getloadavg()
    wall = time.perf_counter()
    lost, cpu = [], 0.0
    seeds_done = {"all": 0, "training": 0}
    complete = True
    pool = multiprocessing.get_context("spawn").Pool(args.jobs)
    try:
        for done, (kind, n, chunk_lost, chunk_cpu) in enumerate(
            pool.imap_unordered(_chunk, tasks), 1
        ):
            lost += chunk_lost
            cpu += chunk_cpu
            seeds_done[kind] += n
            print(f"{done}/{len(tasks)} tasks, {len(lost)} cases lost so far", flush=True)
            if args.minutes and time.perf_counter() - wall > 60 * args.minutes:
                complete = done == len(tasks)
                break
        pool.close() if complete else pool.terminate()
    except KeyboardInterrupt:  # stopped early: say how far it got
        complete = False
        pool.terminate()
    pool.join()
    result = {
        "complete": complete,
        "seeds": seeds_done["all"],
        "training_seeds": seeds_done["training"],
        "notebooks": sorted(stems or known),
        "points_lost": sum(p for *_, p, _ in lost),
        "cases_lost": len(lost),
        "lost": [list(x) for x in lost[:20]],
        "cpu_seconds": round(cpu, 1),
        "wall_seconds": round(time.perf_counter() - wall, 1),
        "jobs": args.jobs,
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(result))
    return 0 if not lost else 1


if __name__ == "__main__":
    sys.exit(main())
