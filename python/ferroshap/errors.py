"""Exception classes raised by ferroshap.

Every error a user can trigger is a :class:`FerroshapError` and also a built-in ``ValueError`` or
``TypeError``, so ``except ValueError`` keeps working. Messages name the offending argument, what
was expected and what was received, and :attr:`FerroshapError.argument` holds the argument's name
when it is known. The compiled core raises :class:`InvalidArgumentError` too, always with
``argument`` set.
"""

__all__ = ["DeviceMemoryError", "FerroshapError", "InvalidArgumentError", "InvalidTypeError"]


class FerroshapError(Exception):
    """Base class of every error raised by ferroshap.

    Attributes
    ----------
    argument : str or None
        Name of the offending argument as the caller spells it (``"budget"``, ``"seed"``, ...),
        ``None`` when the error is not about one argument or its name is unknown.

    Examples
    --------
    >>> import ferroshap as fs
    >>> try:
    ...     fs.shapley_values(lambda m: m.sum(1), 3, budget=1)
    ... except fs.FerroshapError as err:
    ...     print(type(err).__name__, err.argument)
    InvalidArgumentError budget
    """

    def __init__(self, *args: object, argument: str | None = None) -> None:
        super().__init__(*args)
        self.argument = argument


class InvalidArgumentError(FerroshapError, ValueError):
    """An argument has the right type but an invalid value (wrong shape, NaN, out of range).

    Examples
    --------
    >>> import ferroshap as fs
    >>> try:
    ...     fs.shapley_values(lambda m: m.sum(1), 3, method="nope")
    ... except ValueError as err:
    ...     print("method" in str(err))
    True
    """


class InvalidTypeError(FerroshapError, TypeError):
    """An argument has an unsupported type (for example a model that cannot be called).

    Examples
    --------
    >>> import ferroshap as fs
    >>> try:
    ...     fs.Explainer(42, [[0.0]])
    ... except TypeError as err:
    ...     print("model" in str(err))
    True
    """


class DeviceMemoryError(FerroshapError, MemoryError):
    """The model ran out of (device) memory even on the smallest chunk of inputs.

    Chunks are halved and retried on out-of-memory errors first; this is raised only when a
    chunk of one coalition still fails, and names the number of model rows that was tried.
    """
