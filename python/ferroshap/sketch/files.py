"""Saved sketches: the ``.npz`` format :meth:`FourierSketch.save` writes and
:meth:`FourierSketch.load` reads, every entry checked so that a malformed file is refused with
an error naming it (never a bare ``zipfile`` / numpy error, never an allocation its bytes do
not justify)."""

from __future__ import annotations

import json
import math
import os
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ferroshap import _core
from ferroshap._core import InvalidArgumentError, InvalidTypeError
from ferroshap.sketch.codec import SequenceCodec

__all__ = ["FORMAT_VERSION", "MAGIC", "read", "write"]

MAGIC = "ferroshap-fourier-sketch"
"""The ``magic`` entry of every saved sketch."""

FORMAT_VERSION = 1
"""The version of the saved-sketch format this ferroshap writes and reads."""


def write(
    path: str | Path,
    *,
    letters: Sequence[str],
    keys: np.ndarray,
    real: np.ndarray,
    imag: np.ndarray,
    mean: float,
    info: dict[str, Any],
) -> None:
    """Write a sketch's entries to ``path``: magic, format version, alphabet, length, q, keys
    ``uint8 [K, length]``, real and imaginary coefficients, the mean and JSON metadata."""
    with open(path, "wb") as handle:
        np.savez(
            handle,
            magic=np.array(MAGIC),
            format_version=np.array(FORMAT_VERSION, dtype=np.int64),
            alphabet=np.array(list(letters)),
            length=np.array(keys.shape[1], dtype=np.int64),
            q=np.array(len(letters), dtype=np.int64),
            keys=keys,
            real=real,
            imag=imag,
            mean=np.array(mean, dtype=np.float64),
            metadata=np.array(json.dumps(info)),
        )


def read(path: str | Path) -> tuple[_core.Spectrum, list[str], dict[str, Any]]:
    """The spectrum, letters and metadata of the sketch saved at ``path``; see
    :meth:`ferroshap.FourierSketch.load` for what is checked and raised."""

    if not isinstance(path, (str, os.PathLike)):
        raise InvalidTypeError(
            f"path must be a string or a path, got {type(path).__name__}", argument="path"
        )
    where = os.fspath(path)
    with open(path, "rb") as handle:
        try:
            fields = _read_npz(handle, where)
        except InvalidArgumentError:
            raise
        except Exception as err:  # zipfile and numpy raise a zoo of kinds on bad bytes
            raise _refuse(
                where,
                f"is not a saved FourierSketch (not a readable .npz file: "
                f"{type(err).__name__}: {err})",
            ) from err
    return _from_fields(fields, where)


def _from_fields(
    fields: dict[str, np.ndarray], where: str
) -> tuple[_core.Spectrum, list[str], dict[str, Any]]:
    def field(name: str) -> np.ndarray:
        if name not in fields:
            raise _refuse(where, f"is not a saved FourierSketch (no {name!r} entry)")
        kinds, ndim, expected = _FIELDS[name]
        value = fields[name]
        if value.dtype.kind not in kinds or value.ndim != ndim:
            raise _refuse(
                where,
                f"is corrupt: {name!r} has dtype {value.dtype} and shape {value.shape}; "
                f"expected {expected}",
            )
        return value

    def corrupt(what: str) -> InvalidArgumentError:
        return _refuse(where, f"is corrupt: {what}")

    magic = fields.get("magic")
    if magic is None or magic.dtype.kind != "U" or magic.shape != () or str(magic) != MAGIC:
        raise _refuse(where, f"is not a saved FourierSketch (no {MAGIC!r} magic string)")
    version = int(field("format_version"))
    if version != FORMAT_VERSION:
        raise _refuse(
            where,
            f"has sketch format version {version}; this ferroshap reads version {FORMAT_VERSION}",
        )
    letters = field("alphabet")
    length, q = int(field("length")), int(field("q"))
    keys, real, imag = field("keys"), field("real"), field("imag")
    mean = float(field("mean").astype(np.float64))
    metadata = field("metadata")
    if not 1 <= length <= _MAX_LENGTH:
        raise corrupt(f"length = {length} must be in 1..={_MAX_LENGTH}")
    if not 2 <= q <= 256 or len(letters) != q:
        raise corrupt(f"q = {q} must be the number of letters (2 to 256), got {len(letters)}")
    try:
        codec = SequenceCodec([str(a) for a in letters], length)
    except (InvalidArgumentError, InvalidTypeError) as err:
        raise corrupt(f"bad alphabet ({err})") from err
    if keys.dtype != np.uint8 or keys.shape != (len(real), length):
        raise corrupt(
            f"keys must be uint8 [{len(real)}, {length}] (one row of length {length} per "
            f"coefficient), got {keys.dtype} {keys.shape}"
        )
    if imag.shape != real.shape:
        raise corrupt(f"{len(imag)} imaginary parts for {len(real)} real parts")
    try:
        info = json.loads(str(metadata))
    except (ValueError, RecursionError) as err:
        raise corrupt(f"bad metadata ({type(err).__name__}: {err})") from err
    if not isinstance(info, dict):
        raise corrupt(f"metadata must be a JSON object, got {type(info).__name__}")
    for name in ("budget", "n_queries"):
        count = info.get(name, 0)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise corrupt(f"metadata {name!r} must be a non-negative integer, got {count!r}")
    real, imag = real.astype(np.float64), imag.astype(np.float64)
    try:
        spectrum = _core.Spectrum(length, q, np.ascontiguousarray(keys), real, imag, mean)
    except InvalidArgumentError as err:
        raise corrupt(str(err)) from err
    return spectrum, codec.letters, info


# Each entry of a saved sketch: dtype kinds accepted, dimensions, and the expectation in words.
_FIELDS: dict[str, tuple[str, int, str]] = {
    "magic": ("U", 0, "a string"),
    "format_version": ("iu", 0, "an integer scalar"),
    "alphabet": ("U", 1, "a 1-D array of one-letter strings"),
    "length": ("iu", 0, "an integer scalar"),
    "q": ("iu", 0, "an integer scalar"),
    "keys": ("u", 2, "a 2-D uint8 array"),
    "real": ("f", 1, "a 1-D float array"),
    "imag": ("f", 1, "a 1-D float array"),
    "mean": ("f", 0, "a float scalar"),
    "metadata": ("U", 0, "a JSON string"),
}

# The core numbers positions with 32 bits.
_MAX_LENGTH = 2**32 - 1

# Deflate expands data at most about 1032-fold; a member claiming more is corrupt.
_MAX_INFLATION = 1100


def _refuse(where: str, what: str) -> InvalidArgumentError:
    """The error for the sketch file ``where``: ``what`` says what is wrong with it."""
    return InvalidArgumentError(f"path: {where} {what}", argument="path")


def _read_npz(handle: BinaryIO, where: str) -> dict[str, np.ndarray]:
    """The entries of a saved sketch that :data:`_FIELDS` names, read from the open ``.npz``
    file ``handle`` (with no pickles). Before any array is allocated, its header's size is
    checked against the bytes its zip member holds, and each member's declared size against
    the file's, so a corrupt file cannot request more memory than its contents justify."""
    file_bytes = os.fstat(handle.fileno()).st_size
    fields: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(handle) as archive:
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")
            if name not in _FIELDS:
                continue
            stored = info.compress_type == zipfile.ZIP_STORED
            unpacked = info.compress_size * (1 if stored else _MAX_INFLATION)
            if info.compress_size > file_bytes or info.file_size > unpacked:
                raise _refuse(
                    where,
                    f"is corrupt: entry {name!r} claims {info.file_size} bytes "
                    f"({info.compress_size} packed) in a file of {file_bytes} bytes",
                )
            with archive.open(info) as member:
                version = np.lib.format.read_magic(member)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(member)
                else:
                    shape, _, dtype = np.lib.format.read_array_header_2_0(member)
            count = math.prod(shape)
            if count * max(dtype.itemsize, 1) > info.file_size:
                raise _refuse(
                    where,
                    f"is corrupt: entry {name!r} claims shape {shape} of {dtype} in "
                    f"{info.file_size} bytes",
                )
            with archive.open(info) as member:
                fields[name] = np.lib.format.read_array(member, allow_pickle=False)
    return fields
