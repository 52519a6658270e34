"""The text masker: the players of a passage are its words, tokens or sentences.

A coalition keeps the units it holds and masks the others, which are either dropped (the text
closes up around them) or replaced by the tokenizer's mask token. The model is any callable on
``list[str]`` returning one score per text; masked texts are built and scored in chunks through
:mod:`ferroshap.query.loop`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ferroshap._core import InvalidArgumentError, InvalidTypeError
from ferroshap.query.backend import DEFAULT_MAX_BYTES, check_outputs
from ferroshap.query.games import as_model_function
from ferroshap.query.loop import QueryOptions, query, units_per_call
from ferroshap.validation import check_choice

__all__ = ["MODES", "UNITS", "Text", "TextUnits"]

UNITS = ("word", "token", "sentence")
"""What a player of :class:`Text` is."""

MODES = ("drop", "mask")
"""How :class:`Text` masks a unit: remove it, or put the mask token in its place."""

_WORD = re.compile(r"\S+")
_SENTENCE = re.compile(r"\S(?:.*?[.!?]+(?=\s|$)|.*\S|)", re.DOTALL)


@dataclass(frozen=True)
class TextUnits:
    """A passage cut into units: their character spans in ``text``.

    Attributes
    ----------
    text
        The passage.
    spans
        ``(start, end)`` of each unit, in order and not overlapping; what lies between two
        units (spaces, punctuation a tokenizer skipped) is kept as it is.

    Examples
    --------
    >>> units = TextUnits("a b c", [(0, 1), (2, 3), (4, 5)])
    >>> units.words, units.compose(np.array([True, False, True]), None)
    (['a', 'b', 'c'], 'a c')
    """

    text: str
    spans: list[tuple[int, int]]

    @property
    def words(self) -> list[str]:
        """The text of each unit."""
        return [self.text[start:end] for start, end in self.spans]

    def compose(self, keep: np.ndarray, mask_token: str | None) -> str:
        """The passage with the units where ``keep`` is false dropped (``mask_token`` None) or
        replaced by ``mask_token``.

        A dropped unit takes the gap after it along, so ``"a b c"`` without ``b`` reads
        ``"a c"`` and without ``c`` reads ``"a b"``; the text before the first unit and after
        the last one stays.
        """
        text, spans = self.text, self.spans
        pieces = [text[: spans[0][0]]]
        last_kept = -1
        for i, (start, end) in enumerate(spans):
            kept = bool(keep[i])
            if not kept and mask_token is None:
                continue
            if last_kept >= 0:  # the gap after the previous unit written
                pieces.append(text[spans[last_kept][1] : spans[last_kept + 1][0]])
            pieces.append(text[start:end] if kept else (mask_token or ""))
            last_kept = i
        pieces.append(text[spans[-1][1] :])
        return "".join(pieces)


class Text:
    """Players are the words (or tokens, or sentences) of a passage.

    ``v(S)`` is the model's score of the passage with the units outside ``S`` masked; the
    model is any callable on ``list[str]`` returning ``[k]`` scores, or ``[k, c]`` (every
    column explained by :class:`ferroshap.Explainer`; :class:`ferroshap.ProxySPEX` needs one,
    picked with ``output_index``). Use it as the ``masker`` of
    :class:`ferroshap.Explainer` or :class:`ferroshap.ProxySPEX`; results are labelled with the
    units. :meth:`game` gives the game itself, for :func:`ferroshap.shapley_values`.

    Parameters
    ----------
    tokenizer
        A Hugging Face tokenizer (or anything with ``mask_token`` and, for ``unit="token"``,
        fast-tokenizer offsets). Needed for ``unit="token"``; with ``mode="mask"`` it supplies
        the mask token unless ``mask_token`` is given.
    unit
        ``"word"`` (runs of non-space characters, punctuation attached), ``"token"`` (the
        tokenizer's tokens, without special tokens) or ``"sentence"`` (up to ``.``, ``!`` or
        ``?`` followed by a space or the end).
    mode
        ``"drop"``: a masked unit is removed; ``"mask"``: it is replaced by the mask token
        (one per unit). A tokenizer without a mask token falls back to ``"drop"`` with a
        ``UserWarning``.
    mask_token
        The replacement string for ``mode="mask"`` (default: ``tokenizer.mask_token``).
    batch_size, max_bytes, progress
        Texts per model call (default: as many as ``max_bytes`` of text allow), and a tqdm
        progress bar.

    Examples
    --------
    >>> import numpy as np, ferroshap as fs
    >>> masker = fs.maskers.Text()
    >>> game, n = masker.game(lambda texts: [t.count("good") for t in texts], "good, very good")
    >>> masker.player_names("good, very good"), game(np.array([[True, False, True]]))
    (['good,', 'very', 'good'], array([2.]))
    """

    def __init__(
        self,
        tokenizer: Any = None,
        *,
        unit: str = "word",
        mode: str = "drop",
        mask_token: str | None = None,
        batch_size: int | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        progress: bool = False,
    ) -> None:
        check_choice(unit, "unit", UNITS)
        check_choice(mode, "mode", MODES)
        if mask_token is not None and not isinstance(mask_token, str):
            raise InvalidTypeError(
                f"mask_token must be a string, got {type(mask_token).__name__}",
                argument="mask_token",
            )
        if unit == "token" and not callable(tokenizer):
            raise InvalidArgumentError(
                "tokenizer: unit='token' needs a Hugging Face fast tokenizer, got "
                f"{type(tokenizer).__name__}",
                argument="tokenizer",
            )
        self.tokenizer = tokenizer
        self.unit = unit
        self.mask_token = _mask_token(mode, mask_token, tokenizer)
        self.mode = "drop" if self.mask_token is None else "mask"
        self.options = QueryOptions.checked(batch_size, max_bytes, progress)

    def units(self, x: Any) -> TextUnits:
        """The units of the passage ``x`` (a non-empty string)."""
        if not isinstance(x, str):
            raise InvalidTypeError(
                f"x must be a string (the passage), got {type(x).__name__}", argument="x"
            )
        if self.unit == "token":
            spans = _token_spans(self.tokenizer, x)
        else:
            pattern = _WORD if self.unit == "word" else _SENTENCE
            spans = [match.span() for match in pattern.finditer(x)]
        if not spans:
            raise InvalidArgumentError(
                f"x has no {self.unit}s to explain (got {x[:40]!r}); pass a non-empty passage",
                argument="x",
            )
        return TextUnits(x, spans)

    def player_names(self, x: Any) -> list[str]:
        """The units of ``x``, which name the players."""
        return self.units(x).words

    def texts(self, x: Any, masks: np.ndarray) -> list[str]:
        """The masked passages of ``x``, one per row of ``masks: bool[k, n]``."""
        units = self.units(x)
        return [units.compose(keep, self.mask_token) for keep in np.asarray(masks, dtype=bool)]

    def game(self, model: Any, x: Any) -> tuple[Callable[[np.ndarray], np.ndarray], int]:
        """The game of ``model`` on the passage ``x`` and its number of players (units)."""
        function = as_model_function(model)
        units = self.units(x)
        n = len(units.spans)
        per_call = units_per_call(self.options, unit_bytes=4 * len(units.text), unit_rows=1)

        def game(masks: np.ndarray) -> np.ndarray:
            masks = np.asarray(masks, dtype=bool)
            if masks.ndim != 2 or masks.shape[1] != n:
                raise InvalidArgumentError(
                    f"masks must have shape [k, {n}] (one column per {self.unit}), got "
                    f"{masks.shape}",
                    argument="masks",
                )

            def chunk(start: int, stop: int) -> np.ndarray:
                texts = [units.compose(keep, self.mask_token) for keep in masks[start:stop]]
                with function.inference():
                    outputs = function.function(texts)
                return check_outputs(outputs, stop - start, "model").reshape(stop - start, -1)

            values = query(
                len(masks), per_call, chunk, progress=self.options.progress, desc="texts"
            )
            return values[:, 0] if values.shape[1] == 1 else values

        return game, n


def _mask_token(mode: str, mask_token: str | None, tokenizer: Any) -> str | None:
    """The replacement string of ``mode="mask"``, or ``None`` to drop masked units."""
    if mode == "drop":
        return None
    if mask_token is not None:
        return mask_token
    token = getattr(tokenizer, "mask_token", None)
    if isinstance(token, str) and token:
        return token
    warnings.warn(
        "mode='mask' needs a mask token, but "
        + ("no tokenizer was given" if tokenizer is None else "the tokenizer has none")
        + " and mask_token is unset: masked units are dropped instead (mode='drop')",
        UserWarning,
        stacklevel=3,
    )
    return None


def _token_spans(tokenizer: Any, text: str) -> list[tuple[int, int]]:
    """Character spans of the tokenizer's tokens of ``text`` (special tokens left out)."""
    try:
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    except (NotImplementedError, TypeError, ValueError) as err:
        raise InvalidArgumentError(
            "tokenizer: unit='token' needs a Hugging Face fast tokenizer, which reports each "
            f"token's character offsets ({type(err).__name__}: {err})",
            argument="tokenizer",
        ) from err
    spans = [(int(start), int(end)) for start, end in encoded["offset_mapping"] if end > start]
    merged: list[tuple[int, int]] = []
    for start, end in spans:  # byte-level tokenizers may report overlapping pieces
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
