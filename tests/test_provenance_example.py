"""The provenance example (``examples/provenance.py``): the inputs each
output element depends on — a Jacobian's sparsity pattern — for functions of
lists and numpy arrays, checked against the true pattern found by perturbing
one input at a time and seeing which outputs change."""

import math
import os
import sys

import pytest

np = pytest.importorskip("numpy")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))

from provenance import dependencies  # noqa: E402


def outputs(value):
    if isinstance(value, np.ndarray):
        return list(value.ravel())
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def true_pattern(f, xs):
    """Output i depends on input j when changing x_j changes y_i."""
    copy = (lambda v: v.copy()) if isinstance(xs, np.ndarray) else list
    base = outputs(f(copy(xs)))
    found = [set() for _ in base]
    for j in range(len(xs)):
        moved = copy(xs)
        moved[j] = moved[j] + 0.3711 + 0.05 * j
        for i, (before, after) in enumerate(zip(base, outputs(f(moved)))):
            if before != after:
                found[i].add(j)
    return [frozenset(s) for s in found]


class Accumulator:
    def __init__(self):
        self.total = 0.0
        self.history = []

    def add(self, value):
        self.total = self.total + value
        self.history.append(self.total)


def stencil(x):
    return [x[i - 1] - 2 * x[i] + x[i + 1] for i in range(1, len(x) - 1)]


def running_totals(x):
    acc = Accumulator()
    for value in x:
        acc.add(value)
    return acc.history


def pairs(x):
    table = {}
    for i in range(0, len(x) - 1, 2):
        table[i] = x[i] * x[i + 1]
    first, *rest = x
    return [table[k] for k in sorted(table)] + [first * math.sin(rest[-1])]


LIST_FUNCTIONS = [stencil, running_totals, pairs, lambda x: [sum(v * v for v in x)],
                  lambda x: [x[0] + x[3], x[2] * 2.0, 5.0]]


@pytest.mark.parametrize("f", LIST_FUNCTIONS)
def test_the_pattern_of_a_function_of_a_list_is_the_true_one(f):
    xs = [1.5, -0.5, 2.0, 0.25, 3.0, 1.25]
    assert dependencies(f, xs) == true_pattern(f, xs)


TRIDIAGONAL = np.diag([2.0] * 6) + np.diag([-1.0] * 5, 1) + np.diag([-1.0] * 5, -1)

ARRAY_FUNCTIONS = [
    lambda a: a[1:] - a[:-1],
    lambda a: np.sin(a) * a[::-1],
    lambda a: TRIDIAGONAL @ a,
    lambda a: np.cumsum(a),
    lambda a: np.exp(a[:3]) + 2.0 * a[3:],
    lambda a: np.array([np.sum(a * a), a[2] - a[5]]),
]


@pytest.mark.parametrize("f", ARRAY_FUNCTIONS)
def test_the_pattern_of_a_function_of_an_array_is_the_true_one(f):
    xs = np.array([1.5, -0.5, 2.0, 0.25, 3.0, 1.25])
    assert dependencies(f, xs) == true_pattern(f, xs)


def test_a_number_depends_on_the_inputs_it_reads():
    assert dependencies(lambda x: x[1] * x[4], [1.0, 2.0, 3.0, 4.0, 5.0]) == frozenset({1, 4})
