"""Derivatives side by side: what forward-mode AD through cassette's tagging
costs, against the plain function, a hand-written dual-number class (the
practical floor for operator overloading), ``uncertainties``' linear error
propagation, HIPS ``autograd`` and ``jax`` (issues 5 and 36).

Scalar workloads, each a derivative along one direction:

``rosenbrock``     the Rosenbrock function of 1,000 floats (``workloads``);
``rosenbrock-10``  the same of 10 floats (the size optimizers differentiate
                   thousands of times);
``nbody``          one step of five bodies (ten pairs, nested lists updated in
                   place), the derivative of the final energy with respect to
                   a scale of the initial speeds;
``branchy``        a sum of ``math`` functions chosen by branches on the value.

Vectorized workloads (numpy), each a Jacobian-vector product:

``mlp``       the squared loss of a two-layer tanh network on 64 samples,
              along a direction in its 144 weights;
``logistic``  logistic regression's loss on 64 samples of 8 features;
``heat``      20 explicit heat-equation steps on 100 points, written as
              users write them (``new = u.copy(); new[1:-1] = …``);
``stencil``   20 steps of a ``np.roll`` stencil on 100 points.

Variants: ``plain`` (the function, for scale), ``dual`` (the same code on
:class:`Dual` numbers: scalar workloads), ``cassette-ad``
(``examples/ad.py``: the unmodified function overdubbed, tangents as
metadata), ``uncertainties`` (scalar), ``autograd`` (``make_jvp``, forward
mode; reverse mode ``grad`` on the scalar workloads it was measured on
before), ``jax`` (``jax.jvp``, eager) and ``jax-jit`` (a jitted ``jax.jvp``,
compiled before timing; ``jax-jit-compile`` times tracing and compiling a
fresh one).  The peers run the code written with their numpy
(``autograd.numpy``, ``jax.numpy``) — and ``heat`` in the functional form
they need (``concatenate`` instead of a slice store), since neither can
store into an array; a branch on a traced value cannot be jitted.  Every
variant's derivative must equal ``cassette-ad``'s (to 1e-9 relative);
nothing asserts on timings.
"""

import math
import os
import sys

import numpy
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


def branchy(x, m=math):
    """A sum of ``m``'s functions (``math``'s, or a peer's), each term chosen
    by a branch on the value."""
    total = 0.0
    for k in range(1, 30):
        y = x * k / 10
        if y < 1:
            total += m.sin(y) * m.exp(-y)
        elif y < 2:
            total += m.log(y) + m.sqrt(y)
        else:
            total += m.atan(y) / y
    return total


class DualMath:
    """``math``'s functions of :class:`Dual` numbers, for ``branchy``."""

    @staticmethod
    def sin(x):
        return Dual(math.sin(x.value), math.cos(x.value) * x.tangent)

    @staticmethod
    def exp(x):
        e = math.exp(x.value)
        return Dual(e, e * x.tangent)

    @staticmethod
    def log(x):
        return Dual(math.log(x.value), x.tangent / x.value)

    @staticmethod
    def sqrt(x):
        return dual_sqrt(x)

    @staticmethod
    def atan(x):
        return Dual(math.atan(x.value), x.tangent / (1 + x.value * x.value))


def _dual_lt(self, other):
    return self.value < (other.value if isinstance(other, Dual) else other)


Dual.__lt__ = _dual_lt


# -- vectorized workloads: written against a numpy module ``np`` ----------------

_rng = numpy.random.default_rng(36)
SAMPLES = _rng.normal(size=(64, 8))
TARGETS = _rng.normal(size=64)
LABELS = (_rng.uniform(size=64) > 0.5).astype(float)
WEIGHTS = _rng.normal(size=8 * 16 + 16) / 4
WEIGHTS_DIRECTION = _rng.normal(size=WEIGHTS.size)
COEFFICIENTS = _rng.normal(size=8) / 4
COEFFICIENTS_DIRECTION = _rng.normal(size=8)
FIELD = numpy.sin(numpy.linspace(0, 3, 100)) + 1.5
FIELD_DIRECTION = numpy.cos(numpy.linspace(0, 7, 100))


def mlp(w, np=numpy):
    hidden = np.tanh(SAMPLES @ w[:128].reshape(8, 16))
    return np.mean((hidden @ w[128:] - TARGETS) ** 2)


def logistic(w, np=numpy):
    p = 1 / (1 + np.exp(-(SAMPLES @ w)))
    return -np.mean(LABELS * np.log(p) + (1 - LABELS) * np.log(1 - p))


def heat(u, np=numpy, k=0.1):
    for _ in range(20):
        new = u.copy()
        new[1:-1] = u[1:-1] + k * (u[2:] - 2 * u[1:-1] + u[:-2])
        u = new
    return u


def heat_functional(u, np=numpy, k=0.1):
    """``heat`` for tools that cannot store into an array."""
    for _ in range(20):
        u = np.concatenate([u[:1], u[1:-1] + k * (u[2:] - 2 * u[1:-1] + u[:-2]), u[-1:]])
    return u


def stencil(u, np=numpy, k=0.2):
    for _ in range(20):
        u = u + k * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
    return u


# -- the peers ---------------------------------------------------------------------

def _uncertain_rosenbrock(point=POINT, direction=DIRECTION):
    from uncertainties import ufloat
    t = ufloat(0.0, 1.0)
    out = ROSENBROCK([x + d * t for x, d in zip(point, direction)])
    return out.derivatives[t]


def _uncertain_nbody():
    from uncertainties import ufloat, umath
    s = ufloat(1.0, 1.0)
    return nbody(s, umath.sqrt).derivatives[s]


def _uncertain_branchy():
    from uncertainties import ufloat, umath
    s = ufloat(1.3, 1.0)
    return branchy(s, umath).derivatives[s]


def _autograd_rosenbrock(point=POINT, direction=DIRECTION):
    import autograd
    return autograd.grad(lambda t: ROSENBROCK([x + d * t for x, d in zip(point, direction)]))(0.0)


def _autograd_nbody():
    import autograd
    import autograd.numpy as anp
    return autograd.grad(lambda s: nbody(s, anp.sqrt))(1.0)


def _autograd_branchy():
    import autograd
    import autograd.numpy as anp
    return autograd.grad(lambda s: branchy(s, anp))(1.3)


def _autograd_jvp(f, point, direction):
    import autograd
    import autograd.numpy as anp
    return numpy.asarray(autograd.make_jvp(lambda p: f(p, anp))(point)(direction)[1])


def _jax():
    import jax
    jax.config.update("jax_enable_x64", True)    # the others' float64, not float32
    return jax


def _jax_jvp(f, point, direction):
    jax = _jax()
    return numpy.asarray(jax.jvp(lambda p: f(p, jax.numpy), (point,), (direction,))[1])


_jitted = {}


def _jax_jit(f, point, direction):
    jax = _jax()
    jvp = _jitted.get(f)
    if jvp is None:
        jvp = _jitted[f] = jax.jit(lambda p, d: jax.jvp(lambda q: f(q, jax.numpy), (p,), (d,))[1])
        jvp(point, direction).block_until_ready()        # compiled before timing
    return numpy.asarray(jvp(point, direction))


def _jax_jit_compile(f, point, direction):
    jax = _jax()
    jvp = jax.jit(lambda p, d: jax.jvp(lambda q: f(q, jax.numpy), (p,), (d,))[1])
    return numpy.asarray(jvp(point, direction))


SHORT_POINT, SHORT_DIRECTION = POINT[:10], DIRECTION[:10]
PROBLEMS = {            # vectorized workload -> (function, the peers' form, point, direction)
    "mlp": (mlp, mlp, WEIGHTS, WEIGHTS_DIRECTION),
    "logistic": (logistic, logistic, COEFFICIENTS, COEFFICIENTS_DIRECTION),
    "heat": (heat, heat_functional, FIELD, FIELD_DIRECTION),
    "stencil": (stencil, stencil, FIELD, FIELD_DIRECTION),
}

VARIANTS = {
    "rosenbrock": {
        "plain": lambda: ROSENBROCK(POINT),
        "dual": lambda: ROSENBROCK([Dual(x, d) for x, d in zip(POINT, DIRECTION)]).tangent,
        "cassette-ad": lambda: ad.directional_derivative(ROSENBROCK, POINT, DIRECTION),
        "uncertainties": _uncertain_rosenbrock,
        "autograd": _autograd_rosenbrock,
    },
    "rosenbrock-10": {
        "plain": lambda: ROSENBROCK(SHORT_POINT),
        "dual": lambda: ROSENBROCK([Dual(x, d) for x, d in zip(SHORT_POINT,
                                                                SHORT_DIRECTION)]).tangent,
        "cassette-ad": lambda: ad.directional_derivative(ROSENBROCK, SHORT_POINT,
                                                         SHORT_DIRECTION),
        "uncertainties": lambda: _uncertain_rosenbrock(SHORT_POINT, SHORT_DIRECTION),
        "autograd": lambda: _autograd_rosenbrock(SHORT_POINT, SHORT_DIRECTION),
    },
    "nbody": {
        "plain": lambda: nbody(1.0),
        "dual": lambda: nbody(Dual(1.0, 1.0), dual_sqrt).tangent,
        "cassette-ad": lambda: ad.derivative(nbody, 1.0),
        "uncertainties": _uncertain_nbody,
        "autograd": _autograd_nbody,
    },
    "branchy": {
        "plain": lambda: branchy(1.3),
        "dual": lambda: branchy(Dual(1.3, 1.0), DualMath).tangent,
        "cassette-ad": lambda: ad.derivative(branchy, 1.3),
        "uncertainties": _uncertain_branchy,
        "autograd": _autograd_branchy,
        "jax": lambda: float(_jax().jvp(lambda s: branchy(s, _jax().numpy), (1.3,), (1.0,))[1]),
    },
}
for _name, (_f, _peer_form, _point, _direction) in PROBLEMS.items():
    VARIANTS[_name] = {
        "plain": (lambda f, p: lambda: f(p))(_f, _point),
        "cassette-ad": (lambda f, p, d: lambda: ad.directional_derivative(f, p, d))(
            _f, _point, _direction),
        "autograd": (lambda f, p, d: lambda: _autograd_jvp(f, p, d))(_peer_form, _point,
                                                                       _direction),
        "jax": (lambda f, p, d: lambda: _jax_jvp(f, p, d))(_peer_form, _point, _direction),
        "jax-jit": (lambda f, p, d: lambda: _jax_jit(f, p, d))(_peer_form, _point, _direction),
        "jax-jit-compile": (lambda f, p, d: lambda: _jax_jit_compile(f, p, d))(
            _peer_form, _point, _direction),
    }

PEERS = {"uncertainties": "uncertainties", "autograd": "autograd", "jax": "jax",
         "jax-jit": "jax", "jax-jit-compile": "jax"}
CASES = [(workload, variant) for workload, variants in VARIANTS.items() for variant in variants]


@pytest.mark.parametrize("workload, variant", CASES)
def test_derivative(benchmark, workload, variant):
    if variant in PEERS:
        pytest.importorskip(PEERS[variant])       # a peer not installed: not measured
    run = VARIANTS[workload][variant]
    expected = VARIANTS[workload]["cassette-ad" if variant != "plain" else "plain"]()
    numpy.testing.assert_allclose(run(), expected, rtol=1e-9, atol=1e-12)
    benchmark.group = f"derivative-{workload}"
    result = benchmark(run)
    numpy.testing.assert_allclose(result, expected, rtol=1e-9, atol=1e-12)
