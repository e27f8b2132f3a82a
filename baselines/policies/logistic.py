"""A small multinomial logistic regression in numpy, for the shortcut probes fitted on the train
split: the cheap classifiers a user would fit first, so the benchmark needs no learning library.

Full-batch gradient descent on the mean cross-entropy plus an L2 penalty, from zero weights, a
fixed number of steps and a step size from a bound on the loss's curvature: the same data give
the same weights on every run, in any process.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Logistic:
    """A fitted model: one weight column per class, the last row the intercept."""

    classes: tuple[str, ...]
    weights: np.ndarray  # (features + 1, classes)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Each row of `x` (rows of features) as probabilities over `classes`."""
        return _softmax(_with_intercept(x) @ self.weights)

    def predict(self, x: np.ndarray) -> list[str]:
        """The most probable class of each row of `x` (ties: the first of `classes`)."""
        return [self.classes[i] for i in np.argmax(self.probabilities(x), axis=1)]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Logistic)
            and self.classes == other.classes
            and np.array_equal(self.weights, other.weights)
        )

    def __hash__(self) -> int:
        return hash((self.classes, self.weights.tobytes()))


def fit_logistic(x: np.ndarray, labels: list[str], l2: float = 1e-3, steps: int = 2000) -> Logistic:
    """The model of `labels` (one per row of `x`) over the classes they hold, sorted. The step
    size is 1/L, L = ½·mean ‖xᵢ‖² + l2 bounding the curvature of the mean softmax loss, so
    every step lowers the loss. Rows are read by their non-zero entries: a bag of words has a
    few in hundreds of columns."""
    if x.ndim != 2 or x.shape[0] != len(labels) or not labels:
        raise ValueError(f"x: expected one row per label, got shape {x.shape} for {len(labels)} labels")
    classes = tuple(sorted(set(labels)))
    coded = np.column_stack([x.astype(float), [classes.index(label) for label in labels]])
    distinct, count = np.unique(coded, axis=0, return_counts=True)  # repeated rows weigh their count
    n, width = len(distinct), x.shape[1] + 1
    share = count[:, None] / len(labels)
    target = np.zeros((n, len(classes)))
    target[np.arange(n), distinct[:, -1].astype(int)] = 1.0
    design = _with_intercept(distinct[:, :-1])
    row, column = np.nonzero(design)
    value = design[row, column]
    step = 1.0 / (0.5 * float(np.sum(share[row, 0] * value**2)) + l2)
    weights = np.zeros((width, len(classes)))
    shrunk = np.ones((width, 1))
    shrunk[-1] = 0.0  # the intercept is not shrunk
    for _ in range(steps):
        scores = np.column_stack(
            [np.bincount(row, weights=value * weights[column, k], minlength=n) for k in range(len(classes))]
        )
        error = share * (_softmax(scores) - target)
        gradient = np.column_stack(
            [np.bincount(column, weights=value * error[row, k], minlength=width) for k in range(len(classes))]
        )
        weights -= step * (gradient + l2 * shrunk * weights)
    return Logistic(classes, weights)


def _with_intercept(x: np.ndarray) -> np.ndarray:
    return np.hstack([x, np.ones((x.shape[0], 1))])


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return np.asarray(e / e.sum(axis=1, keepdims=True))
