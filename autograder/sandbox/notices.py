"""A warning printed once per grading process (not once per sandbox)."""

import threading
import warnings

_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_once(key: str, text: str) -> None:
    """Print `text` as a RuntimeWarning once per grading process (not once per sandbox)."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(text, RuntimeWarning, stacklevel=3)
