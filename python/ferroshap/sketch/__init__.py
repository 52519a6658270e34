"""The sketch engine: ``FourierSketch`` (SHAP zero) and its sequence codec."""
