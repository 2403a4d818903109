"""Ridge-penalised logistic regression by Newton's method (IRLS), in plain numpy.

Theory of operation. The idle forecaster refits its model at every planning cycle on the windows
the history already settled, pooled over every job, so the fit must take milliseconds for a few
hundred thousand rows and must never fail. Features are standardised, the intercept is left
unpenalised, and a ridge term keeps the Hessian well conditioned even when the classes are
perfectly separable (a fleet of always-idle pods is), which an unpenalised GLM fit (statsmodels'
`GLM(Binomial)`) reports as an error instead. Deterministic: no random start, fixed iterations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class LogisticModel:
    mean: FloatArray
    scale: FloatArray
    coef: FloatArray  # one per feature, then the intercept

    def probability(self, features: FloatArray) -> FloatArray:
        """P(y = 1) for each row of `features` (rows x features)."""
        z = ((features - self.mean) / self.scale) @ self.coef[:-1] + self.coef[-1]
        out: FloatArray = 1.0 / (1.0 + np.exp(-np.clip(z, -40.0, 40.0)))
        return out


def fit_logistic(
    features: FloatArray,
    labels: FloatArray,
    weights: FloatArray | None = None,
    ridge: float = 1.0,
    iterations: int = 30,
) -> LogisticModel:
    """Maximise the weighted log-likelihood minus ridge/2 * |coef|^2 (intercept excluded)."""
    w = np.ones(labels.shape[0]) if weights is None else weights
    mean = np.average(features, axis=0, weights=w)
    scale = np.sqrt(np.average((features - mean) ** 2, axis=0, weights=w))
    scale = np.where(scale > 1e-9, scale, 1.0)
    x = np.hstack(((features - mean) / scale, np.ones((features.shape[0], 1))))
    k = x.shape[1]
    penalty = np.full(k, ridge)
    penalty[-1] = 0.0
    coef = np.zeros(k)
    prior = float(np.clip(np.average(labels, weights=w), 1e-6, 1 - 1e-6))
    coef[-1] = np.log(prior / (1 - prior))
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ coef, -40.0, 40.0)))
        gradient = x.T @ (w * (labels - p)) - penalty * coef
        hessian = (x * (w * p * (1 - p))[:, None]).T @ x + np.diag(penalty + 1e-9)
        delta = np.linalg.solve(hessian, gradient)
        coef = coef + delta
        if float(np.max(np.abs(delta))) < 1e-7:
            break
    return LogisticModel(mean=mean, scale=scale, coef=coef)
