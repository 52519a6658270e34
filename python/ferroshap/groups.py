"""Feature groups: several features (columns) that play as one player.

``groups=`` on the engines makes each group one player: a one-hot block, correlated features, an
image patch, the tokens of a word. A coalition of players is expanded to the features of its
groups (:meth:`Groups.expand`) before the game or model sees it, so the game is the same game
with coarser players and its Shapley values are the group-level values. Features left out of
every group each stay a player of their own, after the groups.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ferroshap._core import InvalidArgumentError, InvalidTypeError

__all__ = ["Groups", "GroupsArgument", "read_groups"]

GroupsArgument = Mapping[str, Sequence[Any]] | Sequence[Sequence[Any]]
"""What ``groups=`` takes: a dict name → columns, or a list of column lists."""


@dataclass(frozen=True)
class Groups:
    """A partition of ``n_features`` features into players.

    Attributes
    ----------
    names
        One name per player: the group names, then the names of the features in no group.
    members
        The feature indices of each player.
    n_features
        Number of features the game or model takes.

    Examples
    --------
    >>> g = read_groups({"ab": ["a", "b"]}, ["a", "b", "c"], 3)
    >>> g.names, g.expand(np.array([[True, False]]))
    (['ab', 'c'], array([[ True,  True, False]]))
    """

    names: list[str]
    members: list[list[int]]
    n_features: int

    @property
    def n_players(self) -> int:
        """Number of players (groups plus ungrouped features)."""
        return len(self.members)

    @property
    def player_of_feature(self) -> np.ndarray:
        """``int[n_features]``: the player each feature belongs to."""
        owner = np.empty(self.n_features, dtype=np.int64)
        for player, features in enumerate(self.members):
            owner[features] = player
        return owner

    def expand(self, masks: np.ndarray) -> np.ndarray:
        """Feature masks ``bool[m, n_features]`` of player coalitions ``bool[m, n_players]``."""
        return np.ascontiguousarray(np.asarray(masks, dtype=bool)[:, self.player_of_feature])

    def game(self, game: Callable[[np.ndarray], Any]) -> Callable[[np.ndarray], Any]:
        """The game on these players: each coalition expanded to its groups' features."""
        return lambda masks: game(self.expand(masks))

    def columns(self, feature_names: Sequence[str]) -> dict[str, list[str]]:
        """Each player's name and the names of its features."""
        return {
            name: [feature_names[j] for j in features]
            for name, features in zip(self.names, self.members, strict=True)
        }


def read_groups(groups: Any, feature_names: Sequence[str] | None, n_features: int) -> Groups:
    """Validate ``groups``: a dict name → columns, or a list of column lists (named
    ``g0, g1, ...``). Columns are names of ``feature_names`` or integer positions. A column in
    two groups, an unknown column or an empty group raises :class:`InvalidArgumentError`."""
    if isinstance(groups, Mapping):
        names = [str(name) for name in groups]
        lists = list(groups.values())
    elif isinstance(groups, Sequence) and not isinstance(groups, str):
        names = [f"g{i}" for i in range(len(groups))]
        lists = list(groups)
    else:
        raise InvalidTypeError(
            "groups must be a dict name -> columns or a list of column lists, got "
            f"{type(groups).__name__}",
            argument="groups",
        )
    position = {name: j for j, name in enumerate(feature_names or [])}
    owner: dict[int, str] = {}
    members = []
    for name, columns in zip(names, lists, strict=True):
        if isinstance(columns, str | bytes) or not isinstance(columns, Sequence) or not columns:
            raise InvalidArgumentError(
                f"groups[{name!r}] must be a non-empty list of columns, got {columns!r}",
                argument="groups",
            )
        indices = [_column_index(column, position, n_features, name) for column in columns]
        for column, j in zip(columns, indices, strict=True):
            if j in owner:
                raise InvalidArgumentError(
                    f"groups: column {column!r} is in two groups, {owner[j]!r} and {name!r}",
                    argument="groups",
                )
            owner[j] = name
        members.append(indices)
    rest = [j for j in range(n_features) if j not in owner]
    label = list(feature_names) if feature_names is not None else None
    names += [label[j] if label is not None else f"x{j}" for j in rest]
    members += [[j] for j in rest]
    if len(set(names)) != len(names):
        raise InvalidArgumentError(
            f"groups: player names must be distinct, got {names}", argument="groups"
        )
    return Groups(names, members, n_features)


def _column_index(column: Any, position: dict[str, int], n_features: int, group: str) -> int:
    """The feature index of ``column`` (a name or an integer position)."""
    if isinstance(column, numbers.Integral) and not isinstance(column, bool):
        if not 0 <= int(column) < n_features:
            raise InvalidArgumentError(
                f"groups[{group!r}]: column {column} is out of range for {n_features} features",
                argument="groups",
            )
        return int(column)
    if str(column) not in position:
        known = list(position) if position else f"positions 0..{n_features - 1}"
        raise InvalidArgumentError(
            f"groups[{group!r}]: unknown column {column!r}; the columns are {known}",
            argument="groups",
        )
    return position[str(column)]
