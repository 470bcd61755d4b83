"""The interval-arithmetic example (``examples/intervals.py``): enclosures
contain every sampled value of polynomials, ``math`` functions and a small
physics routine; branches on comparisons are decided when every point takes
the same branch and raise a clear error otherwise."""

import math
import os
import random
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))

from intervals import Interval, Undecidable, enclose  # noqa: E402


def samples(box, count=200, seed=0):
    rng = random.Random(seed)
    return [box.lo, box.hi, box.midpoint] + [rng.uniform(box.lo, box.hi) for _ in range(count)]


def assert_encloses(f, *boxes, count=200):
    enclosure = enclose(f, *boxes)
    points = list(zip(*(samples(b, count, seed=i) for i, b in enumerate(boxes))))
    for point in points:
        value = f(*point)
        assert enclosure.lo <= value <= enclosure.hi, (point, value, enclosure)
    return enclosure


@pytest.mark.parametrize("f, box", [
    (lambda x: x * x - 2 * x + 1, Interval(-1.5, 2.5)),
    (lambda x: (x - 1) ** 2, Interval(0.0, 3.0)),
    (lambda x: 3 * x ** 3 - x ** 2 + 0.5 * x - 7, Interval(-2.0, 1.25)),
    (lambda x: 1 / (1 + x ** 2), Interval(-0.5, 4.0)),
    (lambda x: -x ** 4 + abs(x - 0.5), Interval(-1.0, 1.0)),
])
def test_polynomials_and_rational_functions_are_enclosed(f, box):
    assert_encloses(f, box)


@pytest.mark.parametrize("f, box", [
    (math.sin, Interval(1.0, 2.0)), (math.sin, Interval(-4.0, 0.5)),
    (math.cos, Interval(-0.3, 0.2)), (math.cos, Interval(2.0, 9.0)),
    (math.exp, Interval(-3.0, 2.0)), (math.log, Interval(0.1, 40.0)),
    (math.sqrt, Interval(0.0, 9.0)), (math.atan, Interval(-50.0, 2.0)),
    (lambda x: math.sin(x) * math.cos(x) + math.tanh(x) / (2 + math.sin(x)),
     Interval(-1.0, 3.0)),
])
def test_math_functions_are_enclosed(f, box):
    assert_encloses(f, box)


def test_enclosures_of_monotone_and_periodic_functions_are_tight():
    assert enclose(math.sin, Interval(1.0, 2.0)).hi == 1.0          # holds pi/2
    low = enclose(math.exp, Interval(0.0, 1.0))
    assert low.lo <= 1.0 <= low.lo + 1e-15 and math.e <= low.hi <= math.e + 1e-15
    assert enclose(lambda x: x + 1, 2.0) == Interval(math.nextafter(3.0, 0), math.nextafter(3.0, 9))


def projectile(speed, angle, drag):
    """Euler steps of a projectile with linear drag; the horizontal distance
    when it has flown for 1.5 s, and its height then."""
    state = [0.0, 0.0, speed * math.cos(angle), speed * math.sin(angle)]
    dt = 0.05
    for _ in range(30):
        x, y, vx, vy = state
        ax, ay = -drag * vx, -9.81 - drag * vy
        state = [x + vx * dt, y + vy * dt, vx + ax * dt, vy + ay * dt]
    return state[0] + 0.0 * state[1], state[1]


def test_a_small_physics_routine_is_enclosed():
    boxes = (Interval(19.5, 20.5), Interval(0.7, 0.75), Interval(0.05, 0.06))
    for component in (0, 1):
        enclosure = assert_encloses(lambda s, a, d: projectile(s, a, d)[component], *boxes,
                                    count=100)
        assert enclosure.hi - enclosure.lo < 10.0       # still informative


def test_branches_are_taken_when_every_point_agrees():
    def folded(x):
        return x - 1 if x > 1 else 1 - x

    assert enclose(folded, Interval(2.0, 3.0)).lo >= 1.0 - 1e-12
    assert enclose(folded, Interval(-3.0, -2.0)).lo >= 3.0 - 1e-12
    with pytest.raises(Undecidable, match=r"gt\(Interval\(0\.0, 3\.0\), Interval\(1\.0, 1\.0\)\)"):
        enclose(folded, Interval(0.0, 3.0))


def test_errors_name_the_problem():
    with pytest.raises(ZeroDivisionError, match="contains 0"):
        enclose(lambda x: 1 / x, Interval(-1.0, 1.0))
    with pytest.raises(ValueError, match="not positive"):
        enclose(math.log, Interval(-1.0, 1.0))
    with pytest.raises(ValueError, match="lo <= hi"):
        Interval(2.0, 1.0)


def test_sums_of_generators_and_lists_are_enclosed():
    assert_encloses(lambda x: math.sqrt(sum(c * c for c in [x, 4.0])), Interval(2.9, 3.1))
    assert_encloses(lambda x: sum([x, 2 * x, x * x]), Interval(-1.0, 2.0))


def test_a_primitive_without_a_rule_is_an_error_not_an_unsound_result():
    from intervals import NoIntervalRule
    with pytest.raises(NoIntervalRule, match="round"):
        enclose(lambda x: round(x) + 0.0, Interval(0.2, 0.9))
