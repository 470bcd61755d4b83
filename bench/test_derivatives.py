"""Derivatives side by side: what forward-mode AD through cassette's tagging
costs, against the plain function, a hand-written dual-number class (the
practical floor for operator overloading), ``uncertainties``' linear error
propagation and HIPS ``autograd`` (issue 5).

Two workloads, each a derivative along one direction:

``rosenbrock``  the Rosenbrock function of 1,000 floats (``workloads``), its
                directional derivative along a fixed direction;
``nbody``       one step of a small gravitational system (five bodies, ten
                pairs, nested lists updated in place), the derivative of the
                final energy with respect to a scale of the initial speeds.

Variants: ``plain`` (the function on floats), ``dual`` (the same code on
:class:`Dual` numbers), ``cassette-ad`` (``examples/ad.py``: the unmodified
function overdubbed with tangents as metadata), ``uncertainties`` and
``autograd``.  Every variant's derivative must equal the dual class's (to
1e-9 relative); nothing asserts on timings.
"""

import math
import os
import sys

import pytest

import workloads

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))

import ad  # noqa: E402


class Dual:
    """A dual number ``value + tangent·ε``: the hand-written baseline."""

    __slots__ = ("value", "tangent")

    def __init__(self, value, tangent=0.0):
        self.value = value
        self.tangent = tangent

    def __add__(self, other):
        if isinstance(other, Dual):
            return Dual(self.value + other.value, self.tangent + other.tangent)
        return Dual(self.value + other, self.tangent)

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, Dual):
            return Dual(self.value - other.value, self.tangent - other.tangent)
        return Dual(self.value - other, self.tangent)

    def __rsub__(self, other):
        return Dual(other - self.value, -self.tangent)

    def __mul__(self, other):
        if isinstance(other, Dual):
            return Dual(self.value * other.value,
                        self.tangent * other.value + self.value * other.tangent)
        return Dual(self.value * other, self.tangent * other)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, Dual):
            return Dual(self.value / other.value,
                        (self.tangent * other.value - self.value * other.tangent)
                        / (other.value * other.value))
        return Dual(self.value / other, self.tangent / other)

    def __rtruediv__(self, other):
        return Dual(other / self.value, -other * self.tangent / (self.value * self.value))

    def __neg__(self):
        return Dual(-self.value, -self.tangent)

    def __pow__(self, n):
        return Dual(self.value ** n, n * self.value ** (n - 1) * self.tangent)


def dual_sqrt(x):
    if isinstance(x, Dual):
        root = math.sqrt(x.value)
        return Dual(root, x.tangent / (2 * root))
    return math.sqrt(x)


# -- workloads ------------------------------------------------------------------

ROSENBROCK = workloads.rosenbrock
POINT = workloads.ROSENBROCK_POINT
DIRECTION = [((i * 13) % 7) / 3.0 - 1.0 for i in range(len(POINT))]


def nbody(scale, sqrt=math.sqrt):
    """The energy after one step of five bodies whose initial speeds are
    multiplied by ``scale``."""
    bodies = [[[float(i), 0.5 * i, -0.25 * i], [0.1 * scale * (i + 1), -0.05 * scale * i,
                                                0.02 * scale], 1.0 + 0.1 * i]
              for i in range(5)]
    pairs = [(bodies[i], bodies[j]) for i in range(5) for j in range(i + 1, 5)]
    dt = 0.01
    for (p1, v1, m1), (p2, v2, m2) in pairs:
        dx, dy, dz = p1[0] - p2[0], p1[1] - p2[1], p1[2] - p2[2]
        d2 = dx * dx + dy * dy + dz * dz + 0.01
        mag = dt / (d2 * sqrt(d2))
        b1, b2 = m1 * mag, m2 * mag
        v1[0] -= dx * b2
        v1[1] -= dy * b2
        v1[2] -= dz * b2
        v2[0] += dx * b1
        v2[1] += dy * b1
        v2[2] += dz * b1
    for position, velocity, _mass in bodies:
        position[0] += dt * velocity[0]
        position[1] += dt * velocity[1]
        position[2] += dt * velocity[2]
    energy = 0.0
    for _p, (vx, vy, vz), mass in bodies:
        energy += 0.5 * mass * (vx * vx + vy * vy + vz * vz)
    for (p1, _v1, m1), (p2, _v2, m2) in pairs:
        dx, dy, dz = p1[0] - p2[0], p1[1] - p2[1], p1[2] - p2[2]
        energy -= m1 * m2 / sqrt(dx * dx + dy * dy + dz * dz + 0.01)
    return energy


def _uncertain_rosenbrock():
    from uncertainties import ufloat
    t = ufloat(0.0, 1.0)
    out = ROSENBROCK([x + d * t for x, d in zip(POINT, DIRECTION)])
    return out.derivatives[t]


def _uncertain_nbody():
    from uncertainties import ufloat, umath
    s = ufloat(1.0, 1.0)
    return nbody(s, umath.sqrt).derivatives[s]


def _autograd_rosenbrock():
    import autograd
    return autograd.grad(lambda t: ROSENBROCK([x + d * t for x, d in zip(POINT, DIRECTION)]))(0.0)


def _autograd_nbody():
    import autograd
    import autograd.numpy as anp
    return autograd.grad(lambda s: nbody(s, anp.sqrt))(1.0)


VARIANTS = {
    "rosenbrock": {
        "plain": lambda: ROSENBROCK(POINT),
        "dual": lambda: ROSENBROCK([Dual(x, d) for x, d in zip(POINT, DIRECTION)]).tangent,
        "cassette-ad": lambda: ad.directional_derivative(ROSENBROCK, POINT, DIRECTION),
        "uncertainties": _uncertain_rosenbrock,
        "autograd": _autograd_rosenbrock,
    },
    "nbody": {
        "plain": lambda: nbody(1.0),
        "dual": lambda: nbody(Dual(1.0, 1.0), dual_sqrt).tangent,
        "cassette-ad": lambda: ad.derivative(nbody, 1.0),
        "uncertainties": _uncertain_nbody,
        "autograd": _autograd_nbody,
    },
}

PEERS = {"uncertainties": "uncertainties", "autograd": "autograd"}


@pytest.mark.parametrize("variant", ["plain", "dual", "cassette-ad", "uncertainties", "autograd"])
@pytest.mark.parametrize("workload", ["rosenbrock", "nbody"])
def test_derivative(benchmark, workload, variant):
    if variant in PEERS:
        pytest.importorskip(PEERS[variant])       # a peer not installed: not measured
    run = VARIANTS[workload][variant]
    expected = VARIANTS[workload]["dual" if variant != "plain" else "plain"]()
    assert run() == pytest.approx(expected, rel=1e-9)
    benchmark.group = f"derivative-{workload}"
    result = benchmark(run)
    assert result == pytest.approx(expected, rel=1e-9)
