"""The harness: runs hidden-test requests against a student's namespace, answers in plain data.

This package runs INSIDE the student's process (the sandboxed kernel, or the student's own
kernel for the visible checks). It trusts nothing there and decides nothing: it calls what it
is asked to call and writes back plain data (JSON and .npy files). Every verdict is made by the
trusted parent (autograder.course.probes). It imports only the standard library, numpy and (lazily)
torch, never `autograder`, because inside the sandbox autograder is not there.

Wire format (one directory per request, one per response):
    request.json   {"op": ..., "target": ..., ...}  values encoded by wire.encode
    arrays.npys    a request's arrays, one .npy record after another: {"$array": "#k"} is the
                   k-th (wire.PACKED)
    arrays/*.npy   a response's arrays, one file each: {"$array": "name"}
"""

from .serve import serve

__all__ = ["serve"]
