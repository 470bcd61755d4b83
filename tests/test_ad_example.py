"""The forward-mode AD example (``examples/ad.py``): the exact values of
issue 5's acceptance list, nested derivatives, and derivatives checked
against their closed forms and against central finite differences."""

import math
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))

import ad  # noqa: E402
from ad import derivative as D  # noqa: E402


def test_first_derivatives_are_exact():
    assert D(math.sin, 1) == math.cos(1)
    assert D(lambda x: math.sin(x) * math.cos(x), 1) == math.cos(1) ** 2 - math.sin(1) ** 2
    for x in (-3.0, 0.0, 0.5, 7):
        assert D(lambda x: (x + 2) * (3 + x), x) == 2 * x + 5


def test_nested_derivatives_never_confuse_perturbations():
    assert D(lambda x: D(math.sin, x), 1) == -math.sin(1)
    assert D(lambda x: x * D(lambda y: x * y, 1), 2) == 4
    assert D(lambda x: x * D(lambda y: x * y, 2), 1) == 2
    assert D(lambda x: x * D(lambda y: 5 * x * y, 3), 2) == 20


def cubic(x):
    return 2 * x ** 3 - 4 * x + 1


def damped(t):
    return math.exp(-t / 3) * math.cos(2 * t) + math.sqrt(1 + t * t)


def through_a_helper(x):
    total = 0.0
    for k in range(1, 4):
        total += cubic(x / k) - abs(x - k)
    return total


@pytest.mark.parametrize("f, df", [
    (cubic, lambda x: 6 * x ** 2 - 4),
    (lambda x: math.log(x) / x, lambda x: (1 - math.log(x)) / x ** 2),
    (lambda x: math.tan(x) + math.atan(x), lambda x: 1 / math.cos(x) ** 2 + 1 / (1 + x * x)),
    (lambda x: 2.0 ** x, lambda x: 2.0 ** x * math.log(2.0)),
    (lambda x: float(x) * -x, lambda x: -2 * x),
])
def test_derivatives_match_their_closed_forms(f, df):
    for x in (0.3, 1.0, 2.5):
        assert D(f, x) == pytest.approx(df(x), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("f", [damped, through_a_helper, lambda x: math.tanh(x) ** 2])
def test_derivatives_match_central_differences(f):
    h = 1e-6
    for x in (0.4, 1.7, 3.2):
        numeric = (f(x + h) - f(x - h)) / (2 * h)
        assert D(f, x) == pytest.approx(numeric, rel=1e-6, abs=1e-7)


def test_the_function_itself_is_unchanged_and_constants_have_no_derivative():
    assert D(lambda x: 42.0, 1.0) == 0.0
    assert D(lambda x: len([x, x]), 3.0) == 0.0
    assert cubic(2.0) == 2 * 8 - 8 + 1          # plain calls are untouched
    assert ad.tangent(3.0, ad.enabletagging(ad.ForwardAD(), cubic)) is ad.NO_TANGENT
