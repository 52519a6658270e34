"""SHAP zero: sketch a sequence model once, then explain any sequence with no model call.

:class:`FourierSketch` follows plan → query → estimate: the compiled core plans the query
sequences of a sparse q-ary Fourier sketch, Python evaluates the model on them in large
batches, and the core decodes the values into a sparse spectrum. Shapley values and
interactions of any sequence then follow in closed form (``docs/sketch.md``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ferroshap import _core, validation
from ferroshap._core import InvalidArgumentError, InvalidTypeError
from ferroshap.query.backend import (
    DEFAULT_MAX_BYTES,
    check_finite,
    check_n_jobs,
    check_outputs,
    limited,
)
from ferroshap.query.chunks import fingerprint, iter_chunks, phi_frame
from ferroshap.query.games import resolve_model
from ferroshap.query.loop import QueryOptions, query, single_output, units_per_call
from ferroshap.results.explanation import Explanation
from ferroshap.scores import r_squared
from ferroshap.sketch import files
from ferroshap.sketch.codec import SequenceCodec, SequenceInteractions
from ferroshap.sketch.files import FORMAT_VERSION, MAGIC
from ferroshap.validation import (
    BUDGET_LIMIT,
    ORDER_LIMIT,
    ROWS_LIMIT,
    Seed,
    check_choice,
    check_int,
    check_seed,
    draw_seed,
    one_spelling,
)

__all__ = ["FORMAT_VERSION", "MAGIC", "FourierSketch", "SequenceInteractions"]

_INPUTS = ("str", "codes")


class FourierSketch:
    """SHAP zero: a sparse q-ary Fourier surrogate of a sequence model, and closed-form
    Shapley values and interactions from it.

    Build one with :meth:`fit` (or :meth:`load`). The explained game of a sequence ``x`` is
    ``v_x(S) = E_z f̂(x_S, z_notS)`` with ``z`` uniformly random letters (SHAP zero's game), or,
    with a ``background``, the mean over background sequences (KernelSHAP's game).

    Examples
    --------
    >>> import ferroshap as fs
    >>> model = lambda seqs: [s.count("G") + 2.0 * (s[0] == s[3]) for s in seqs]
    >>> sk = fs.FourierSketch.fit(model, n_players=6, alphabet="ACGT", budget=3000, seed=0)
    >>> round(float(sk.predict(["GATGCA"])[0]), 6)
    4.0
    >>> sk.shapley_values(["GATGCA"]).values.shape
    (1, 6)
    """

    def __init__(self, spectrum: _core.Spectrum, alphabet: Sequence[str], info: dict[str, Any]):
        self._spectrum = spectrum
        self._codec = SequenceCodec(list(alphabet), spectrum.length)
        self.info = dict(info)

    # ---- building -----------------------------------------------------------------------

    @classmethod
    def fit(
        cls,
        model: Any,
        n_players: int | None = None,
        alphabet: str | Sequence[str] | None = None,
        *,
        length: int | None = None,
        budget: int,
        seed: Seed = 0,
        batch_size: int | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        progress: bool = False,
        model_output: str = "auto",
        output_index: int | None = None,
        input: str = "str",
        offsets: int = 1,
        max_memory: int | None = None,
        n_jobs: int | None = None,
    ) -> FourierSketch:
        """Sketch ``model`` on sequences of ``n_players`` letters from ``alphabet``.

        Parameters
        ----------
        model
            A callable (or an object with ``predict``) on a batch of sequences returning one
            float per sequence (``[k]`` or ``[k, 1]``).
        n_players, length
            Sequence length ``n`` (the players are the positions): either name, not both.
        alphabet
            The letters, e.g. ``"ACGT"``; code ``i`` is ``alphabet[i]``. ``q = len(alphabet)``.
        budget
            Distinct model queries, held-out ones included (a tenth, at most 2000, tunes the
            noise threshold). Too small a budget raises an error naming the minimum.
        seed
            An int or a ``numpy.random.Generator``; the same seed gives the same sketch.
        input
            ``"str"``: the model receives ``list[str]``; ``"codes"``: ``uint8 [k, n_players]``
            (a ``torch.nn.Module`` receives them as an ``int64`` tensor on its device).
        offsets
            Random delay offsets; more than 1 makes detection more robust to noisy models at
            ``length + 1`` queries per bin and offset.
        batch_size
            Sequences per model call; by default as many as ``max_bytes`` of input allows.
        max_bytes
            Cap on the bytes of one batch of model input.
        progress
            Show a tqdm progress bar over the queries.
        model_output, output_index
            How the model is called, as for :class:`ferroshap.Explainer`.
        max_memory
            Cap in bytes on the estimated peak memory (default: half of the available memory);
            above it an ``InvalidArgumentError`` naming the estimate is raised before planning.
        n_jobs
            Threads for planning and decoding: ``None`` or ``-1`` (default: every CPU this
            process may use), or at most this many. The sketch does not depend on it.

        Returns
        -------
        FourierSketch
        """
        predict = resolve_model(model, model_output, output_index)
        n_players = one_spelling(n_players, "n_players", length, "length")
        if n_players is None or alphabet is None:
            missing = "n_players (the sequence length)" if n_players is None else "alphabet"
            raise InvalidTypeError(
                f"FourierSketch.fit() needs {missing}", argument=missing.split()[0]
            )
        length = check_int(n_players, "n_players", 1)
        codec = SequenceCodec(alphabet, length)
        budget = check_int(budget, "budget", 1, BUDGET_LIMIT)
        check_choice(input, "input", _INPUTS)
        offsets = check_int(offsets, "offsets", 1, budget + 1)  # each offset costs queries
        n_jobs = check_n_jobs(n_jobs)
        options = QueryOptions.checked(batch_size, max_bytes, progress)
        per_call = units_per_call(
            options, unit_bytes=length * (4 if input == "str" else 1), unit_rows=1
        )
        chunk = min(budget, per_call)
        # a chunk's strings (code points, then str objects) or its codes as int64 for torch,
        # as much again for what the model allocates on them, and its outputs
        sequence_bytes = 5 * length + 64 if input == "str" else 8 * length
        query_bytes = {
            "model input chunk": validation.MODEL_FACTOR * chunk * sequence_bytes,
            "model output chunk": 3 * chunk * validation.FLOAT,
        }
        estimate = validation.sketch_estimate(length, budget, query_bytes)
        validation.check_memory(
            "FourierSketch.fit", estimate, max_memory, length=length, budget=budget
        )
        seed_value = draw_seed(check_seed(seed))
        started = time.perf_counter()
        with limited(n_jobs):
            plan = _core.sketch_plan(codec.q, length, budget, seed_value, offsets)
        queries = plan.queries()
        planned = time.perf_counter()

        def chunk_values(start: int, stop: int) -> np.ndarray:
            batch = queries[start:stop]
            inputs: Any = batch
            if input == "str":
                inputs = codec.decode(batch)
            elif predict.backend is not None:  # a torch module: int64 codes on its device
                inputs = predict.backend.asarray(batch.astype(np.int64))
            with predict.inference():
                outputs = predict.function(inputs)
            values = check_outputs(outputs, len(batch), "model").reshape(len(batch), -1)
            return single_output(values, "model", "sequence", "output_index")[:, None]

        values = query(
            len(queries), per_call, chunk_values, progress=options.progress, desc="sketch queries"
        )[:, 0]
        queried = time.perf_counter()
        with limited(n_jobs):
            spectrum, threshold, holdout_nmse = plan.decode(values)
        decoded = time.perf_counter()
        info = {
            "budget": budget,
            "seed": seed_value,
            "input": input,
            "b": plan.b,
            "groups": plan.groups,
            "offsets": plan.offsets,
            "n_queries": plan.n_queries,
            "n_holdout": plan.n_holdout,
            "threshold": threshold,
            "holdout_nmse": holdout_nmse,
            "sketch_seconds": (planned - started) + (decoded - queried),
            "model_seconds": queried - planned,
        }
        return cls(spectrum, codec.letters, info)

    # ---- the surrogate ------------------------------------------------------------------

    @property
    def alphabet(self) -> str:
        """The letters, code order."""
        return "".join(self._codec.letters)

    @property
    def length(self) -> int:
        """Sequence length ``n``."""
        return self._spectrum.length

    @property
    def n_players(self) -> int:
        """Number of players: the sequence length ``n``."""
        return self._spectrum.length

    @property
    def q(self) -> int:
        """Alphabet size."""
        return self._spectrum.q

    @property
    def mean(self) -> float:
        """``F[0]``: the surrogate's mean over uniform random sequences (the base value)."""
        return self._spectrum.mean

    @property
    def keys(self) -> np.ndarray:
        """The non-zero Fourier keys ``uint8 [K, length]``."""
        return self._spectrum.keys()

    @property
    def coefficients(self) -> np.ndarray:
        """The Fourier coefficients ``complex128 [K]`` of :attr:`keys`."""
        return self._spectrum.real() + 1j * self._spectrum.imag()

    @property
    def n_queries(self) -> int:
        """Distinct model queries the sketch used (0 when unknown, e.g. a hand-made file)."""
        return int(self.info.get("n_queries", 0))

    def __repr__(self) -> str:
        return (
            f"FourierSketch(length={self.length}, alphabet={self.alphabet!r}, "
            f"coefficients={self._spectrum.n_coefficients}, n_queries={self.n_queries})"
        )

    def encode(self, sequences: Any) -> np.ndarray:
        """The ``uint8 [rows, length]`` codes of ``sequences`` (strings, codes or a Series)."""
        return self._codec.encode(sequences, "sequences")

    def predict(self, sequences: Any) -> np.ndarray:
        """The sparse surrogate ``f̂`` on ``sequences``; ``float64 [rows]``."""
        return self._spectrum.predict(self.encode(sequences))

    def r2(self, sequences: Any, y: Any) -> float:
        """``1 - Σ(y - f̂)² / Σ(y - mean y)²`` of the surrogate on ``sequences``."""
        predicted = self.predict(sequences)
        truth = np.asarray(y, dtype=np.float64).reshape(-1)
        if truth.shape != predicted.shape:
            raise InvalidArgumentError(
                f"y must have one value per sequence ({len(predicted)}), got shape {truth.shape}",
                argument="y",
            )
        check_finite(truth, "y")
        if float(((truth - truth.mean()) ** 2).sum()) == 0:
            raise InvalidArgumentError("y is constant; R² is undefined", argument="y")
        return r_squared(truth, predicted)

    # ---- explanations -------------------------------------------------------------------

    def _background(self, background: Any) -> np.ndarray | None:
        return None if background is None else self._codec.encode(background, "background")

    def shapley_values(self, sequences: Any, background: Any = None) -> Explanation:
        """Shapley values of each position, with no model call.

        Parameters
        ----------
        sequences
            ``list[str]``, an integer code array ``[rows, length]`` or a polars Series.
        background
            ``None`` for SHAP zero's uniform background (absent positions are uniformly
            random letters); or background sequences, giving KernelSHAP's game
            ``v_x(S) = mean_b f̂(x_S, b_notS)``.

        Returns
        -------
        Explanation
            ``values (rows, length)`` summing to ``f̂(x) - base_values``; ``data`` holds the
            codes, ``feature_names`` the positions ``"0" .. "n-1"``; ``n_evaluations`` is 0.
        """
        codes = self.encode(sequences)
        bg = self._background(background)
        values = self._spectrum.shapley_values(codes, bg)
        base = self._spectrum.base_value(bg)
        return Explanation(
            values=values,
            base_values=np.full(len(codes), base),
            data=codes,
            feature_names=[str(i) for i in range(self.length)],
            n_evaluations=0,
            method="fourier-sketch",
            budget=int(self.info.get("budget", 0)),
            estimator="fourier-sketch",
            diagnostics={"estimated": True},
        )

    def interactions(
        self, sequences: Any, max_order: int | None = None, index: str = "k-SII"
    ) -> SequenceInteractions:
        """Interactions of positions under the uniform background, for many sequences at once.

        Parameters
        ----------
        sequences
            As for :meth:`shapley_values`.
        max_order
            Largest interaction order; ``None`` gives every order, i.e. the Möbius coefficients
            of each sequence's game (SHAP zero's interactions).
        index
            One of ``"k-SII"``, ``"STII"``, ``"FSII"`` (efficient: each row sums to
            ``f̂(x) - mean``) or ``"Moebius"`` (coefficients of order ≤ ``max_order`` only).
            Every index equals Möbius when ``max_order`` is at least the largest key degree.

        Returns
        -------
        SequenceInteractions
            Shared ``keys`` and a ``values`` array ``(rows, len(keys))``.
        """
        if max_order is not None:
            max_order = check_int(max_order, "max_order", 1, ORDER_LIMIT)
        check_choice(index, "index", _core.INTERACTION_INDICES)
        codes = self.encode(sequences)
        keys, values = self._spectrum.interactions(codes, max_order, index)
        return SequenceInteractions(
            keys=keys,
            values=values,
            base_values=np.full(len(codes), self.mean),
            data=codes,
            index="Moebius" if max_order is None else index,
            max_order=max_order,
            budget=int(self.info.get("budget", 0)),
        )

    def explain_dataset(
        self,
        data: Any,
        column: str = "sequence",
        *,
        keys: Sequence[str] | None = None,
        output: str | Path | None = None,
        chunk_size: int = 65_536,
        background: Any = None,
    ) -> Any:
        """Shapley values of every sequence of a dataset, streamed in chunks.

        Parameters
        ----------
        data
            A polars DataFrame or LazyFrame, a pandas DataFrame, or the path of a Parquet file
            (read batch by batch, so the dataset never sits in memory at once).
        column
            The column of sequences (strings).
        keys
            Columns copied to the output first; default ``[column]``.
        output
            If given, a Parquet path the result is written to chunk by chunk (returned as a
            ``Path``); otherwise the result is returned as a polars DataFrame.
        chunk_size
            Rows per chunk.
        background
            As for :meth:`shapley_values`.

        Returns
        -------
        polars.DataFrame or pathlib.Path
            Columns: the key columns, ``phi_0 .. phi_{n-1}``, ``base_value``.
        """
        import polars as pl

        chunk_size = check_int(chunk_size, "chunk_size", 1, ROWS_LIMIT)
        if not isinstance(column, str):
            raise InvalidTypeError(
                f"column must be a string, got {type(column).__name__}", argument="column"
            )
        key_columns = [column] if keys is None else [str(k) for k in keys]
        needed = list(dict.fromkeys([*key_columns, column]))
        bg = self._background(background)
        base = self._spectrum.base_value(bg)
        names = [f"phi_{i}" for i in range(self.length)]
        frames: list[Any] = []
        writer: Any = None
        offset = 0
        try:
            for frame in iter_chunks(data, needed, chunk_size):
                codes = self._codec.encode(frame[column], column, offset)
                phi = self._spectrum.shapley_values(codes, bg)
                result = phi_frame(frame.select(key_columns), names, phi, base)
                offset += len(codes)
                if output is None:
                    frames.append(result)
                    continue
                table = result.to_arrow()
                if writer is None:
                    import pyarrow.parquet as pq

                    writer = pq.ParquetWriter(str(output), table.schema)
                writer.write_table(table)
        finally:
            if writer is not None:
                writer.close()
        if output is not None:
            return Path(output)
        if not frames:
            schema = {name: pl.Float64 for name in [*names, "base_value"]}
            return pl.DataFrame(schema=schema)
        return pl.concat(frames)

    def dataset_values(
        self, columns: list[str]
    ) -> tuple[list[str], Callable[[Any], tuple[np.ndarray, np.ndarray]]]:
        """Output names and ``frame -> (phi, base_values)`` for the dataset writers:
        ``columns`` is the one sequence column."""
        if len(columns) != 1:
            raise InvalidArgumentError(
                f"columns: a FourierSketch explains one sequence column, got {columns}",
                argument="columns",
            )

        def values(frame: Any) -> tuple[np.ndarray, np.ndarray]:
            explanation = self.shapley_values(frame[columns[0]])
            return explanation.values, explanation.base_values

        return [f"phi_{i}" for i in range(self.length)], values

    def dataset_settings(self) -> dict[str, Any]:
        """What the values of :meth:`dataset_values` depend on besides the rows, recorded by
        :func:`ferroshap.datasets.parquet.explain_parquet` to check a resumed run: the alphabet, the
        length and a fingerprint of the coefficients."""
        return {
            "engine": "FourierSketch",
            "alphabet": list(self._codec.letters),
            "length": self.length,
            "coefficients": fingerprint(
                self.keys, self._spectrum.real(), self._spectrum.imag(), self.mean
            ),
        }

    # ---- persistence --------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        """Write the sketch to ``path`` (an ``.npz`` file, exactly that name; see
        :meth:`load`): magic, format version, alphabet, length, q, keys, real and imaginary
        coefficients, the mean and JSON metadata."""
        files.write(
            path,
            letters=self._codec.letters,
            keys=self.keys,
            real=self._spectrum.real(),
            imag=self._spectrum.imag(),
            mean=self.mean,
            info=self.info,
        )

    @classmethod
    def load(cls, path: str | Path) -> FourierSketch:
        """Read a sketch written by :meth:`save`.

        Every entry is checked before it is used: its dtype, shape and values, and that the
        entries agree with each other (``q`` letters, keys ``uint8 [K, length]`` with digits
        below ``q``, ``K`` real and ``K`` imaginary coefficients, all finite, distinct non-zero
        keys, a JSON object as metadata). Coefficients and the mean of any floating dtype are
        read as ``float64`` (``float16``/``float32`` exactly; a value too large for ``float64``
        is refused as non-finite). Entries other than those :meth:`save` writes are ignored.

        Raises
        ------
        InvalidArgumentError
            (argument ``path``) for any file whose contents are not a valid saved sketch: not a
            readable ``.npz``, wrong magic, unknown format version, a missing entry, an entry of
            the wrong dtype or shape, inconsistent sizes or invalid values. The message names
            the file and what is wrong.
        InvalidTypeError
            If ``path`` is not a string or path.
        OSError
            If the file cannot be opened (``FileNotFoundError``, ``PermissionError``, ...).
        """
        return cls(*files.read(path))
