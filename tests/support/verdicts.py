"""What the catalogue tests read of a graded function's TestResults: whether it lost points, the
misconception ids it was named with, and the results in one line each for a failure's message."""


def lost(results):
    return sum(r.score for r in results) < sum(r.max_score for r in results)


def ids(results):
    return {m for r in results for m in r.misconceptions}


def show(results):
    return "\n".join(f"{r.status} {r.name}: {r.output} {r.misconceptions}" for r in results)
