"""What a notebook's kernel costs before any of the student's code: ipykernel against a bare
IPython shell, both forked from one pre-loaded process, as the sandbox's zygote forks kernels.

    python benchmarks/kernel_overhead.py [--cells 300] [--runs 5]

Two costs, each measured for both, side by side in this one process tree:

- start: a child forked from this process (the zygote's PRELOAD and ipykernel's modules
  imported, the garbage collector's objects frozen, as zygote.py does) until it is ready for a
  first cell. ipykernel: `IPKernelApp.initialize()` (its sockets, threads, shell and history);
  bare: an IPython `InteractiveShell` with its history off. The child's own CPU, read in the child.
- a cell: `x = 1`, run `--cells` times. ipykernel: nbclient's `execute_cell` against a kernel
  it started, the kernel's CPU (psutil) and nbclient's (this process) per cell; bare: the source
  sent down a pipe to the forked shell, `run_cell`, and a one-line reply, both sides' CPU.

The bare shell is what the sandbox runs now ("a lighter kernel" in docs/maintainers.md,
"Performance"); ipykernel is what it ran before, and what AUTOGRADER_WARM_KERNELS=0 still runs.
The LAST line is one JSON object with the medians over `--runs` and the ratios (ipykernel /
bare), the machine and its cores.
"""

import argparse
import gc
import importlib
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import IPython.core.interactiveshell  # noqa: F401

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from autograder.sandbox.inside.zygote import PRELOAD  # noqa: E402

# what an ipykernel's IPKernelApp.initialize imports: imported here too, so that both kinds of
# kernel start from one process that holds their imports (the zygote's PRELOAD holds only the
# bare shell's since the sandbox stopped starting ipykernel)
IPYKERNEL_MODULES = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "ipykernel.eventloops",
    "ipykernel.debugger",
    "IPython.core.debugger",
    "psutil",
    "tornado.platform.asyncio",
    "cProfile",
)

for _module in PRELOAD + IPYKERNEL_MODULES:  # pre-loaded, as the zygote does
    importlib.import_module(_module)

SOURCE = "x = 1"


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _forked_start(start_in_child) -> float:
    """CPU-seconds a forked child spends in `start_in_child()`, read in the child."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            before = _child_cpu()
            start_in_child()
            os.write(write_end, repr(_child_cpu() - before).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        text = pipe.read().decode()
    os.waitpid(pid, 0)
    return float(text)


def _ipykernel_start() -> None:
    folder = tempfile.mkdtemp(prefix="kernel-overhead-")
    os.environ["HOME"] = folder  # its history database, in a folder of its own
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    app.initialize(["-f", str(Path(folder) / "kernel.json"), "--IPKernelApp.log_level=50"])


def _bare_start() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.history_manager.enabled = False


def ipykernel_cells(cells: int) -> tuple[float, float]:
    """(kernel ms, nbclient ms) of CPU per cell."""
    import nbformat
    import psutil
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SOURCE) for _ in range(cells + 1)]
    client = NotebookClient(nb, kernel_name="python3", timeout=60)
    with client.setup_kernel():
        kernel = psutil.Process(client.km.provisioner.process.pid)
        client.execute_cell(nb.cells[0], 0)
        kernel_before, ours_before = sum(kernel.cpu_times()[:2]), time.process_time()
        for index in range(1, cells + 1):
            client.execute_cell(nb.cells[index], index)
        kernel_after, ours_after = sum(kernel.cpu_times()[:2]), time.process_time()
    return (kernel_after - kernel_before) / cells * 1e3, (ours_after - ours_before) / cells * 1e3


def bare_cells(cells: int) -> tuple[float, float]:
    """(shell ms, driver ms) of CPU per cell."""
    down_read, down_write = os.pipe()
    up_read, up_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(down_write)
        os.close(up_read)
        try:
            import io

            sys.stdout = sys.stderr = io.StringIO()
            _bare_start()
            from IPython.core.interactiveshell import InteractiveShell

            shell = InteractiveShell.instance()
            before = _child_cpu()
            with os.fdopen(down_read, "r") as requests:
                for line in requests:
                    result = shell.run_cell(json.loads(line), store_history=True)
                    error = result.error_in_exec or result.error_before_exec
                    reply = {"error": type(error).__name__ if error else None}
                    os.write(up_write, (json.dumps(reply) + "\n").encode())
            os.write(up_write, (json.dumps({"cpu": _child_cpu() - before}) + "\n").encode())
        finally:
            os._exit(0)
    os.close(down_read)
    os.close(up_write)
    with os.fdopen(up_read, "r") as replies, os.fdopen(down_write, "w", buffering=1) as requests:
        ours_before = time.process_time()
        for _ in range(cells):
            requests.write(json.dumps(SOURCE) + "\n")
            assert json.loads(replies.readline())["error"] is None
        ours = time.process_time() - ours_before
        requests.close()
        shell = json.loads(replies.readline())["cpu"]
    os.waitpid(pid, 0)
    return shell / cells * 1e3, ours / cells * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", type=int, default=300)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    gc.freeze()
    load_before = os.getloadavg()
    runs: dict[str, list[float]] = {}
    for _ in range(args.runs):  # the two take turns, so a busy moment weighs on both
        runs.setdefault("ipykernel_start_ms", []).append(_forked_start(_ipykernel_start) * 1e3)
        runs.setdefault("bare_start_ms", []).append(_forked_start(_bare_start) * 1e3)
        kernel, nbclient = ipykernel_cells(args.cells)
        runs.setdefault("ipykernel_cell_ms", []).append(kernel + nbclient)
        shell, driver = bare_cells(args.cells)
        runs.setdefault("bare_cell_ms", []).append(shell + driver)
    medians = {name: round(statistics.median(values), 3) for name, values in runs.items()}
    result = {
        **medians,
        "start_ratio": round(medians["ipykernel_start_ms"] / medians["bare_start_ms"], 2),
        "cell_ratio": round(medians["ipykernel_cell_ms"] / medians["bare_cell_ms"], 2),
        "runs": {name: [round(v, 3) for v in values] for name, values in runs.items()},
        "cells": args.cells,
        "nproc": os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(
        f"start: ipykernel {medians['ipykernel_start_ms']:.1f} ms, bare shell "
        f"{medians['bare_start_ms']:.1f} ms of CPU ({result['start_ratio']}x); a cell: ipykernel "
        f"{medians['ipykernel_cell_ms']:.2f} ms, bare shell {medians['bare_cell_ms']:.2f} ms "
        f"({result['cell_ratio']}x); medians of {args.runs} runs"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
