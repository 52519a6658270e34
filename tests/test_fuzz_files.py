"""Fuzzing of the files ferroshap parses: saved FourierSketch ``.npz`` files and LightGBM model
text. Every mutated input must either load into a working object or raise
``InvalidArgumentError`` naming the input; nothing else (no ``EOFError``, ``BadZipFile``,
``TypeError``, panic, ``MemoryError``, hang).

Each fuzz loop is seeded and stops after a number of mutations or a time cap, whichever comes
first (a safety net: 5 000 always-run mutations take about 5-15 s); the ``slow`` versions run
35 000 more.
"""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import InvalidArgumentError, _core

# Longest a single load or parse may take before it counts as a hang.
MAX_CALL_SECONDS = 10.0


def fuzz(
    mutate: Callable[[np.random.Generator], Any],
    check: Callable[[Any], None],
    *,
    seed: int,
    count: int,
    seconds: float,
) -> int:
    """Runs ``check(mutate(rng))`` ``count`` times or until ``seconds`` pass; returns how many
    ran. A failure names the seed and iteration, so it can be replayed."""
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    done = 0
    while done < count and time.perf_counter() - start < seconds:
        case = mutate(rng)
        began = time.perf_counter()
        try:
            check(case)
        except AssertionError as err:
            raise AssertionError(f"seed {seed}, mutation {done}: {err}") from err
        took = time.perf_counter() - began
        assert took < MAX_CALL_SECONDS, f"seed {seed}, mutation {done} took {took:.1f} s"
        done += 1
    return done


# ---- FourierSketch files --------------------------------------------------------------------


@pytest.fixture(scope="module")
def sketch_fields(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    """The entries of a small saved sketch (length 6, q 4)."""
    model = lambda seqs: [s.count("G") + 2.0 * (s[0] == s[3]) for s in seqs]  # noqa: E731
    sketch = fs.FourierSketch.fit(model, n_players=6, alphabet="ACGT", budget=800, seed=0)
    path = tmp_path_factory.mktemp("sketch") / "sketch.npz"
    sketch.save(path)
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


def npy_bytes(value: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, value, allow_pickle=True)
    return buffer.getvalue()


def npz_bytes(members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(f"{name}.npy", data)
    return buffer.getvalue()


def check_sketch_file(path: Path, data: bytes) -> None:
    """Loading ``data`` (written to ``path``) gives a working sketch or a clear error."""
    path.write_bytes(data)
    try:
        sketch = fs.FourierSketch.load(path)
    except InvalidArgumentError as err:
        assert err.argument == "path", f"argument {err.argument!r}: {err}"
        assert str(path) in str(err), f"the error does not name the file: {err}"
        return
    except Exception as err:
        raise AssertionError(f"{type(err).__name__} escaped: {err}") from err
    if sketch.length > 100_000:  # a sketch with no coefficients and a huge length: a constant
        assert len(sketch.keys) == 0
        return
    letters = sketch.alphabet
    seqs = ["".join(letters[(i * j) % len(letters)] for j in range(sketch.length)) for i in (1, 2)]
    assert np.isfinite(sketch.predict(seqs)).all()
    assert np.isfinite(sketch.shapley_values(seqs).values).all()
    repr(sketch)


def byte_mutation(original: bytes) -> Callable[[np.random.Generator], bytes]:
    """Flips, overwrites, inserts, deletes or truncates bytes; half of the positions fall in
    the zip headers (local, central directory, end record), where the structure lives."""
    headers = [
        at
        for signature in (b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06")
        for at in range(len(original))
        if original.startswith(signature, at)
    ]

    def position(rng: np.random.Generator, size: int) -> int:
        if rng.random() < 0.5:
            return min(int(rng.choice(headers)) + int(rng.integers(0, 46)), size - 1)
        return int(rng.integers(0, size))

    def mutate(rng: np.random.Generator) -> bytes:
        data = bytearray(original)
        for _ in range(int(rng.integers(1, 4))):
            if not data:
                break
            at = position(rng, len(data))
            kind = int(rng.integers(0, 6))
            if kind == 0:
                data[at] ^= 1 << int(rng.integers(0, 8))
            elif kind == 1:
                data[at] = int(rng.integers(0, 256))
            elif kind == 2:
                data[at:at] = rng.bytes(int(rng.integers(1, 9)))
            elif kind == 3:
                del data[at : at + int(rng.integers(1, 9))]
            elif kind == 4:
                del data[at:]
            else:  # a 4-byte field (a size or an offset) set to an extreme
                data[at : at + 4] = b"\xff" * 4 if rng.random() < 0.5 else b"\0" * 4
        return bytes(data)

    return mutate


def field_mutation(
    fields: dict[str, np.ndarray],
) -> Callable[[np.random.Generator], bytes]:
    """Rewrites the npz with entries changed: dtype, shape, values, missing or extra entries,
    NaN, huge sizes, headers lying about the shape, compression."""
    names = list(fields)
    dtypes = [
        np.int8, np.int64, np.uint8, np.uint64, np.float16, np.float32, np.float64,
        np.longdouble, np.complex128, np.bool_, "U3", "S3", ">f8", ">i8",
    ]  # fmt: skip
    extremes = [-1, 0, 1, 2, 3, 255, 256, 2**31, 2**32, 2**40, 2**63 - 1]
    floats = [np.nan, np.inf, -np.inf, 1e308, -0.0, 5e-324]
    texts = ["", "[]", "1", "null", '"x"', '{"budget": -1}', '{"n_queries": 1.5}',
             '{"n_queries": NaN}', "[" * 5000 + "]" * 5000, '{"budget": true}',
             "{oops"]  # fmt: skip

    def change(rng: np.random.Generator, name: str, value: np.ndarray) -> np.ndarray | None:
        kind = int(rng.integers(0, 8))
        if kind == 0:
            return None  # drop the entry
        if kind == 1:
            try:
                return value.astype(dtypes[int(rng.integers(0, len(dtypes)))])
            except (ValueError, TypeError, OverflowError):
                return value
        if kind == 2:
            shapes = [(), (1,), (2, 3), (0,), (0, 2**40 if value.dtype == np.uint8 else 1)]
            flat = value.reshape(-1)
            shape = shapes[int(rng.integers(0, len(shapes)))]
            return np.resize(flat, shape) if flat.size else np.zeros(shape, value.dtype)
        if kind == 3 and value.dtype.kind in "iu":
            return np.full(value.shape, rng.choice(extremes)).astype(np.int64, casting="unsafe")
        if kind == 3 and value.dtype.kind == "f":
            out = value.copy().reshape(-1)
            if out.size:
                out[int(rng.integers(0, out.size))] = rng.choice(floats)
            return out.reshape(value.shape)
        if kind == 3 and value.dtype.kind == "U":
            return np.array(texts[int(rng.integers(0, len(texts)))])
        if kind == 4 and value.ndim:
            cut = int(rng.integers(0, value.shape[0] + 1))
            return value[:cut] if rng.random() < 0.5 else np.concatenate([value, value[:cut]])
        if kind == 5 and name == "keys":
            out = value.copy()
            out.flat[int(rng.integers(0, out.size))] = rng.choice([0, 3, 4, 255])
            if rng.random() < 0.3:
                out[-1] = out[0] if rng.random() < 0.5 else 0  # a duplicate or the zero key
            return out if rng.random() < 0.7 else np.asfortranarray(out.T)
        if kind == 5 and name == "alphabet":
            options = [["A", "A", "G", "T"], ["AC", "G", "T", "x"], ["", "C", "G", "T"],
                       ["A", "C"], list("ACGTN"), ["\U0010ffff", "b", "c", "d"]]  # fmt: skip
            return np.array(options[int(rng.integers(0, len(options)))])
        if kind == 6:
            return np.array(rng.choice(extremes)).astype(np.uint64)
        return value

    def mutate(rng: np.random.Generator) -> bytes:
        members = {name: npy_bytes(value) for name, value in fields.items()}
        for _ in range(int(rng.integers(1, 3))):
            name = names[int(rng.integers(0, len(names)))]
            changed = change(rng, name, fields[name])
            if changed is None:
                members.pop(name, None)
            else:
                members[name] = npy_bytes(changed)
        roll = rng.random()
        if roll < 0.1:  # an extra entry
            members["extra"] = npy_bytes(np.arange(5))
        elif roll < 0.2:  # a header that claims a huge shape over little data
            name = names[int(rng.integers(0, len(names)))]
            header = io.BytesIO()
            lie = {
                "descr": "<f8",
                "fortran_order": False,
                "shape": (int(2 ** int(rng.integers(30, 62))),),
            }
            np.lib.format.write_array_header_1_0(header, lie)
            members[name] = header.getvalue() + b"\0" * 64
        elif roll < 0.25:  # an object array: needs pickle, refused
            members["alphabet"] = npy_bytes(np.array(["A", 1, None, "T"], dtype=object))
        compression = zipfile.ZIP_DEFLATED if rng.random() < 0.2 else zipfile.ZIP_STORED
        return npz_bytes(members, compression)

    return mutate


def test_saved_sketch_round_trips_through_the_fuzz_helpers(
    sketch_fields: dict[str, np.ndarray], tmp_path: Path
) -> None:
    path = tmp_path / "s.npz"
    path.write_bytes(npz_bytes({k: npy_bytes(v) for k, v in sketch_fields.items()}))
    assert len(fs.FourierSketch.load(path).keys) == len(sketch_fields["keys"]) > 0


@pytest.mark.parametrize(
    ("count", "seconds"), [(1500, 20.0), pytest.param(10_000, 120.0, marks=pytest.mark.slow)]
)
def test_byte_fuzzed_sketch_files_load_or_fail_cleanly(
    sketch_fields: dict[str, np.ndarray], tmp_path: Path, count: int, seconds: float
) -> None:
    path = tmp_path / "fuzzed.npz"
    original = npz_bytes({k: npy_bytes(v) for k, v in sketch_fields.items()})
    done = fuzz(
        byte_mutation(original),
        lambda data: check_sketch_file(path, data),
        seed=count,
        count=count,
        seconds=seconds,
    )
    assert done >= count // 4, f"only {done} of {count} mutations ran before the time cap"


@pytest.mark.parametrize(
    ("count", "seconds"), [(1000, 20.0), pytest.param(5_000, 120.0, marks=pytest.mark.slow)]
)
def test_field_fuzzed_sketch_files_load_or_fail_cleanly(
    sketch_fields: dict[str, np.ndarray], tmp_path: Path, count: int, seconds: float
) -> None:
    path = tmp_path / "fuzzed.npz"
    done = fuzz(
        field_mutation(sketch_fields),
        lambda data: check_sketch_file(path, data),
        seed=count,
        count=count,
        seconds=seconds,
    )
    assert done >= count // 4, f"only {done} of {count} mutations ran before the time cap"


@pytest.mark.parametrize(
    ("data", "pattern"),
    [
        (b"", "not a readable .npz"),
        (b"PK\x05\x06" + b"\0" * 18, "no 'ferroshap-fourier-sketch' magic"),
    ],
)
def test_empty_and_hollow_files_name_the_file(tmp_path: Path, data: bytes, pattern: str) -> None:
    path = tmp_path / "odd.npz"
    path.write_bytes(data)
    with pytest.raises(InvalidArgumentError, match=pattern) as info:
        fs.FourierSketch.load(path)
    assert info.value.argument == "path" and str(path) in str(info.value)


def test_float32_coefficients_load_exactly(
    sketch_fields: dict[str, np.ndarray], tmp_path: Path
) -> None:
    fields = dict(sketch_fields)
    fields["real"] = fields["real"].astype(np.float32)
    fields["imag"] = fields["imag"].astype(np.float32)
    path = tmp_path / "f32.npz"
    np.savez(path, **fields)
    loaded = fs.FourierSketch.load(path)
    assert np.array_equal(loaded.coefficients.real, fields["real"].astype(np.float64))


Fields = dict[str, np.ndarray]


def replaced(name: str, value: Callable[[Fields], Any]) -> Callable[[Fields], None]:
    """An edit of the saved entries: ``name`` becomes ``value(fields)``."""

    def edit(fields: Fields) -> None:
        fields[name] = np.asarray(value(fields))

    return edit


@pytest.mark.parametrize(
    ("edit", "pattern"),
    [
        (replaced("keys", lambda f: np.zeros((len(f["keys"]), 7), np.uint8)), r"uint8 \[\d+, 6\]"),
        (replaced("keys", lambda f: f["keys"][:-1]), r"keys must be uint8 \[\d+, 6\]"),
        (replaced("imag", lambda f: f["imag"][:-1]), "imaginary parts for"),
        (replaced("keys", lambda f: np.where(f["keys"] == 0, 0, 4).astype(np.uint8)), "digit 4"),
        (replaced("real", lambda f: np.full_like(f["real"], np.nan)), "finite"),
        (replaced("q", lambda f: 5), "q = 5 must be the number of letters"),
        (replaced("length", lambda f: 2**40), "length = 1099511627776"),
        (replaced("keys", lambda f: f["keys"].astype(np.int64)), "'keys' has dtype int64"),
        (replaced("mean", lambda f: np.zeros(2)), r"'mean' has dtype float64 and shape \(2,\)"),
        (replaced("metadata", lambda f: '{"n_queries": "many"}'), "'n_queries' must be a non-neg"),
        (replaced("metadata", lambda f: "[1]"), "metadata must be a JSON object"),
        (replaced("alphabet", lambda f: ["A", "A", "G", "T"]), "bad alphabet"),
        (replaced("format_version", lambda f: 2), "format version 2"),
        (lambda f: f.pop("q"), "no 'q' entry"),
    ],
)
def test_semantically_wrong_sketch_files_are_refused(
    sketch_fields: Fields, tmp_path: Path, edit: Callable[[Fields], None], pattern: str
) -> None:
    fields = dict(sketch_fields)
    edit(fields)
    path = tmp_path / "wrong.npz"
    np.savez(path, **fields)
    with pytest.raises(InvalidArgumentError, match=pattern) as info:
        fs.FourierSketch.load(path)
    assert info.value.argument == "path" and str(path) in str(info.value)


# ---- LightGBM model text --------------------------------------------------------------------

N_FEATURES = 6


@pytest.fixture(scope="module")
def model_text() -> str:
    """A small deterministic LightGBM regression model on 0/1 features."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, size=(300, N_FEATURES)).astype(np.float64)
    y = x @ rng.normal(size=N_FEATURES) + x[:, 0] * x[:, 1] + 0.1 * rng.normal(size=300)
    params = {
        "objective": "regression", "num_leaves": 6, "min_data_in_leaf": 5, "verbose": -1,
        "n_jobs": 1, "deterministic": True, "seed": 0,
    }  # fmt: skip
    booster = lgb.train(params, lgb.Dataset(x, y), num_boost_round=4)
    return str(booster.model_to_string())


def check_model_text(text: str) -> None:
    """Parsing ``text`` gives a spectrum with finite values or an ``InvalidArgumentError``
    naming the model."""
    try:
        spectrum = _core.lightgbm_fourier(text, N_FEATURES)
    except InvalidArgumentError as err:
        assert err.argument == "model", f"argument {err.argument!r}: {err}"
        return
    except Exception as err:
        raise AssertionError(f"{type(err).__name__} escaped: {err}") from err
    masks = np.array([[False] * N_FEATURES, [True] * N_FEATURES, [True, False] * 3])
    assert np.isfinite(spectrum.evaluate(masks)).all()
    assert np.isfinite(spectrum.shapley_values()).all()


def text_mutation(original: str) -> Callable[[np.random.Generator], str]:
    """Changes numbers (to extremes, NaN, negatives), drops, duplicates or shortens lines,
    lengthens arrays and flips characters of a real model text."""
    lines = original.split("\n")
    # The header and the trees; the parameters and feature importances after them are not read.
    parsed = lines.index("end of trees") + 1
    specials = ["nan", "inf", "-inf", "-1", "0", "1", "-2147483648", "18446744073709551616",
                "99999999999999", "1e308", "-1e308", "3", "255", "256", "", "x", "1.5"]  # fmt: skip

    def mutate(rng: np.random.Generator) -> str:
        out = list(lines)
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(0, min(parsed, len(out))))
            key, sep, value = out[i].partition("=")
            tokens = value.split(" ")
            kind = int(rng.integers(0, 8))
            if kind == 0 and sep:  # one number changed
                tokens[int(rng.integers(0, len(tokens)))] = str(rng.choice(specials))
            elif kind == 1:
                del out[i]
            elif kind == 2:
                out.insert(i, out[i])
            elif kind == 3 and sep:  # an array one longer or shorter
                tokens = [*tokens, tokens[-1]] if rng.random() < 0.5 else tokens[:-1]
            elif kind == 4 and sep and len(tokens) > 1:  # two entries swapped
                a, b = rng.choice(len(tokens), size=2, replace=False)
                tokens[a], tokens[b] = tokens[b], tokens[a]
            elif kind == 5:  # one character changed
                text = out[i]
                if text:
                    at = int(rng.integers(0, len(text)))
                    text = text[:at] + chr(int(rng.integers(32, 127))) + text[at + 1 :]
                out[i] = text
                continue
            elif kind == 6 and sep:  # every entry of the line set to one value
                tokens = [str(rng.choice(specials))] * len(tokens)
            elif kind == 7:  # the text cut short
                out = out[:i]
                break
            if sep and 0 <= i < len(out):
                out[i] = key + sep + " ".join(tokens)
        return "\n".join(out)

    return mutate


def chain_text(depth: int, leaf_value: str = "1") -> str:
    """A tree whose node ``i`` splits on feature ``i`` with one leaf and node ``i + 1``."""
    leaves = depth + 1
    lefts = " ".join(str(-(i + 1)) for i in range(depth))
    rights = " ".join(str(i + 1) for i in range(depth - 1)) + f" {-(depth + 1)}"
    return (
        f"tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n"
        f"max_feature_idx={depth - 1}\nobjective=regression\n\nTree=0\nnum_leaves={leaves}\n"
        f"split_feature={' '.join(map(str, range(depth)))}\n"
        f"threshold={' '.join(['0.5'] * depth)}\ndecision_type={' '.join(['2'] * depth)}\n"
        f"left_child={lefts}\nright_child={rights}\n"
        f"leaf_value={' '.join([leaf_value] * leaves)}\nshrinkage=1\n\nend of trees\n"
    )


def test_model_text_fixture_parses(model_text: str) -> None:
    check_model_text(model_text)
    assert len(_core.lightgbm_fourier(model_text, N_FEATURES)) > 1


@pytest.mark.parametrize(
    ("count", "seconds"), [(2500, 20.0), pytest.param(20_000, 120.0, marks=pytest.mark.slow)]
)
def test_fuzzed_model_text_parses_or_fails_cleanly(
    model_text: str, count: int, seconds: float
) -> None:
    done = fuzz(
        text_mutation(model_text), check_model_text, seed=count, count=count, seconds=seconds
    )
    assert done >= count // 4, f"only {done} of {count} mutations ran before the time cap"


def test_shared_nodes_are_refused_not_expanded() -> None:
    """A "tree" whose nodes are reached from two parents has exponentially many paths."""
    depth = 60
    text = chain_text(depth, leaf_value="0")
    lefts = " ".join(str(min(i + 2, depth - 1)) if i < depth - 2 else "-1" for i in range(depth))
    text = text.replace(text.split("left_child=")[1].split("\n")[0], lefts)
    with pytest.raises(InvalidArgumentError, match="reached from"):
        _core.lightgbm_fourier(text, depth)


def test_leaf_values_whose_sum_overflows_are_refused() -> None:
    text = chain_text(2, leaf_value="1.7e308")
    text = text.replace("leaf_value=1.7e308 1.7e308 1.7e308", "leaf_value=1.7e308 -1.7e308 1")
    with pytest.raises(InvalidArgumentError, match="would overflow"):
        _core.lightgbm_fourier(text, 2)
