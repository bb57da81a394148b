"""Step 6 of the class run (grading/classrun.py), once the sandbox is open and the self-test
passed: the students graded in a pool of workers, each by grading/student.py, with the progress
bar and its line of the notebooks over their budget (grading/progress.py). A student the grader
fails on is named as soon as it is known; at a signal, the queue is dropped and the students
being graded end with their sandboxes (grading/stopping.py).

    done, unfinished = grade_pool(todo, kept, config, run, progress, sandbox, workers, stop)
"""

import sys
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from autograder.config import Config
from autograder.grading.progress import OverBudget
from autograder.grading.run_state import RunState
from autograder.grading.stopping import Interrupted, Stopping
from autograder.grading.student import Kept, StudentResult, grade_student, internal_error_result
from autograder.safe_files import printable
from autograder.sandbox import Sandbox, SandboxStopped
from autograder.submissions import Submission

PROGRESS_SECONDS = 2.0  # how often the progress line looks at the running notebooks


def grade_pool(
    todo: list[Submission],
    kept: dict[str, Kept],
    config: Config,
    run: RunState,
    progress: bool,
    sandbox: Sandbox,
    workers: int,
    stop: Stopping,
) -> tuple[list[StudentResult], list[str]]:
    """The students of `todo` graded in `sandbox` by `workers` threads, the progress bar and
    line on stderr: (StudentResults, the students not finished because the run was stopped)."""
    from tqdm import tqdm

    watch = OverBudget(sandbox.running, sandbox.limits)  # the sandbox's: the measured budgets
    futures: dict[Future[StudentResult], str] = {}  # future -> student
    collected: dict[Future[StudentResult], StudentResult | None] = {}
    bar, shown = None, ""
    try:
        bar = tqdm(total=len(todo), desc="grading", unit="student", disable=not progress)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            try:
                for s in todo:
                    args = (
                        s.student,
                        s.folder,
                        config,
                        sandbox,
                        s.messages,
                        kept[s.student],
                    )
                    job = pool.submit(watch.grading, s.student, grade_student, *args, run=run)
                    futures[job] = s.student
                waiting = set(futures)
                while waiting:
                    finished, waiting = wait(
                        waiting, timeout=PROGRESS_SECONDS, return_when=FIRST_COMPLETED
                    )
                    for future in finished:
                        collected[future] = _collected(future, futures[future], config, run)
                        bar.update(1)
                        failure = failed_now(collected[future]) if progress else ""
                        if failure:
                            bar.write(failure, file=sys.stderr)
                    text = watch.text() if progress else ""
                    if text != shown:  # one line: the bar's end
                        shown = text
                        bar.set_postfix_str(shown)
            except Interrupted:
                # the queue dropped; the pool's exit waits for the students being graded,
                # whose sandboxes the signal killed (they end with SandboxStopped)
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    except Interrupted:
        pass
    finally:
        with stop.deferred():
            if bar is not None:
                bar.close()
    with stop.deferred():
        for future in futures:  # finished while the run was stopping: kept too
            if future not in collected and future.done() and not future.cancelled():
                collected[future] = None if future.exception() else future.result()
        done = [result for result in collected.values() if result is not None]
        graded = {result.student for result in done}
        return done, [s.student for s in todo if s.student not in graded]


def failed_now(result: StudentResult | None) -> str:
    """The line naming a student the grader could not grade, said as soon as it is known (above
    the progress bar), or "": their id through escaping.terminal, and the first line of why."""
    if result is None or not result.error:
        return ""
    why = next((line for line in result.error.splitlines() if line.strip()), "")
    if not why.startswith("NOT GRADED"):
        why = f"internal error: {result.error.strip().splitlines()[-1]}"
    return f"NOT GRADED {printable(result.student)}: {printable(why.removeprefix('NOT GRADED: '))[:300]}"


def _collected(
    future: "Future[StudentResult]", student: str, config: Config, run: RunState
) -> StudentResult | None:
    """A worker's StudentResult; its internal error's (written, graded again next run); None
    for a student whose sandbox was stopped (the run is stopping: nothing of it is written)."""
    try:
        return future.result()
    except SandboxStopped:
        return None
    except Exception as exc:  # noqa: BLE001 - report it, grade the others
        return internal_error_result(student, exc, config.out, run.memory_ceiling)
