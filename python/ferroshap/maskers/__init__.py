"""Maskers: turn a model and one input into a game on coalitions of its features or tokens.

:class:`Baseline` masks table rows, :class:`Tokens` token-id sequences, :class:`Text` the words
of a passage and :class:`Image` the patches of an image.
"""

from ferroshap.maskers.image import Image
from ferroshap.maskers.tabular import Baseline, Masker, Tokens, player_names
from ferroshap.maskers.text import Text

__all__ = ["Baseline", "Image", "Masker", "Text", "Tokens", "player_names"]
