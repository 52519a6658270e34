"""The README's quick start: explain a scikit-learn model (needs ferroshap and scikit-learn)."""

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

import ferroshap as fs

data = load_diabetes()
model = RandomForestRegressor(n_estimators=50, random_state=0).fit(data.data, data.target)
background, X = data.data[:100], data.data[100:105]
ex = fs.Explainer(model, background, budget=512, seed=0, feature_names=data.feature_names)(X)
print(ex)
for name, value in zip(ex.feature_names, ex.values[0], strict=True):
    print(f"{name:>4} {value:+8.2f}")
assert np.allclose(ex.base_values + ex.values.sum(axis=1), model.predict(X))  # efficiency
