"""glibc's adaptive heap thresholds, raised once per process before the first model query.

glibc's ``malloc`` serves a request above its *mmap threshold* (128 KiB at start) with fresh
pages from the kernel, and gives free memory at the top of its heap back to the kernel once it
exceeds its *trim threshold*. Both adapt: freeing an mmap-served block of ``s`` bytes (up to
32 MiB) raises the mmap threshold to ``s`` and the trim threshold to ``2 s``. A process that
has never freed a large block keeps the low start values, and a model that copies each batch it
is given (a scikit-learn pipeline turning a DataFrame into arrays) then writes its copies into
fresh pages on every call: thousands of page faults per call, 10-20 % of such a model's time,
which vanish once the thresholds have adapted.

:func:`warm_heap` lets them adapt once, before ferroshap first calls a model: it allocates and
frees one untouched block of :data:`WARMUP_BYTES` (no page of it is written). This is the state
any process reaches after it has once freed a 32 MiB array; glibc keeps adapting afterwards, and
nothing else about the allocator changes. Set ``FERROSHAP_HEAP_WARMUP=0`` to skip it. On other C
libraries it does nothing.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["WARMUP_BYTES", "warm_heap"]

WARMUP_BYTES = 32 * 2**20 - 2**16
"""Bytes of the block :func:`warm_heap` allocates and frees: just under glibc's 32 MiB cap on
the adaptive mmap threshold (64-bit), so that freeing it raises the threshold to its size."""

_warmed = False


def _is_glibc() -> bool:
    """Whether this process runs on glibc."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (AttributeError, ValueError, OSError):  # no confstr, or not a GNU system
        return False


def warm_heap() -> bool:
    """Raise glibc's adaptive mmap and trim thresholds once per process; returns whether this
    call did (``False`` when done before, turned off by ``FERROSHAP_HEAP_WARMUP=0``, or not on
    glibc).

    Examples
    --------
    >>> warm_heap() in (True, False)
    True
    >>> warm_heap()
    False
    """
    global _warmed
    if _warmed:
        return False
    _warmed = True
    if os.environ.get("FERROSHAP_HEAP_WARMUP", "1") == "0" or not _is_glibc():
        return False
    block = np.empty(WARMUP_BYTES, np.uint8)  # never written: no page is touched
    del block
    return True
