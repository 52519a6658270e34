"""Results: one vocabulary for every engine (``Explanation``, ``Interactions``)."""
