"""The sampling engine: ``Explainer``, ``shapley_values``, ``auto`` and the proxy adjustments."""
