"""The forward-mode AD example (``examples/ad.py``): the exact values of
issue 5's acceptance list, nested derivatives, and derivatives checked
against their closed forms and against central finite differences."""

import math
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))

pytest.importorskip("numpy")    # examples/ad.py differentiates numpy arrays too
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


# -- derivatives through the program's data (reference §6 propagation) -------------------

class Particle:
    def __init__(self, position, mass):
        self.position = position
        self.mass = mass

    def energy(self):
        return 0.5 * self.mass * self.position ** 2


def through_an_object(x):
    p = Particle(x, 3.0)
    p.position = p.position * 2.0
    return p.energy()                     # 0.5 * 3 * (2x)^2 = 6 x^2


def through_containers(x):
    values = [x, 2.0]
    values.append(x * x)
    values[1] = values[0] * values[2]      # x^3
    table = {"a": values[1]}
    table["b"] = sum(v for v in values)   # x + x^3 + x^2
    first, *rest = values
    return table["a"] + table["b"] + first * rest[0] + sum([v * v for v in rest])


COEFFICIENTS = [1.0, 0.0, 0.0]
LAST_INPUT = None


def store_in_globals(x):
    global LAST_INPUT
    LAST_INPUT = x
    COEFFICIENTS[2] = x * x


def through_module_globals(x):
    store_in_globals(x)
    return COEFFICIENTS[0] + COEFFICIENTS[2] * LAST_INPUT   # 1 + x^3


class Polynomial:
    """A callable object: its coefficients are data, its __call__ the body."""

    def __init__(self, *coefficients):
        self.coefficients = list(coefficients)

    def __call__(self, x):
        return sum(c * x ** k for k, c in enumerate(self.coefficients))


@pytest.mark.parametrize("f, df", [
    (through_an_object, lambda x: 12 * x),
    (through_containers, lambda x: 3 * x ** 2 + (1 + 3 * x ** 2 + 2 * x) + 4 * x ** 3
     + (6 * x ** 5 + 4 * x ** 3)),
    (through_module_globals, lambda x: 3 * x ** 2),
    (Polynomial(1.0, -2.0, 0.5, 4.0), lambda x: -2.0 + x + 12.0 * x ** 2),
])
def test_derivatives_through_objects_containers_globals_and_callable_objects(f, df):
    for x in (0.5, 1.0, 2.0):
        plain = f(x)
        assert D(f, x) == pytest.approx(df(x), rel=1e-12)
        assert f(x) == plain        # the program's data was left with primal values


def test_module_globals_keep_primal_values():
    D(through_module_globals, 3.0)
    assert (COEFFICIENTS, LAST_INPUT) == ([1.0, 0.0, 9.0], 3.0)
    assert type(COEFFICIENTS[2]) is float and type(LAST_INPUT) is float


def rosenbrock(xs):
    return sum(100.0 * (xs[i + 1] - xs[i] ** 2) ** 2 + (1.0 - xs[i]) ** 2
               for i in range(len(xs) - 1))


def rosenbrock_gradient(xs):
    n = len(xs)
    grad = [0.0] * n
    for i in range(n - 1):
        grad[i] += -400.0 * xs[i] * (xs[i + 1] - xs[i] ** 2) - 2.0 * (1.0 - xs[i])
        grad[i + 1] += 200.0 * (xs[i + 1] - xs[i] ** 2)
    return grad


def test_directional_derivatives_of_a_function_of_a_list():
    xs = [0.3, -1.2, 0.8, 1.5, 0.1]
    direction = [1.0, -0.5, 0.25, 2.0, -1.0]
    expected = sum(g * d for g, d in zip(rosenbrock_gradient(xs), direction))
    assert ad.directional_derivative(rosenbrock, xs, direction) == pytest.approx(
        expected, rel=1e-12)
    # Each basis direction gives one partial derivative.
    for i, g in enumerate(rosenbrock_gradient(xs)):
        basis = [1.0 if j == i else 0.0 for j in range(len(xs))]
        assert ad.directional_derivative(rosenbrock, xs, basis) == pytest.approx(g, rel=1e-12)


def test_jacobian_vector_products_of_a_function_returning_a_list():
    def f(xs):
        out = []
        for i, x in enumerate(xs):
            out.append(x * xs[-1 - i])
        return out

    xs = [1.0, 2.0, 3.0]
    v = [0.5, -1.0, 2.0]
    # d(x_i * x_{n-1-i}) = v_i x_{n-1-i} + x_i v_{n-1-i}
    expected = [v[i] * xs[-1 - i] + xs[i] * v[-1 - i] for i in range(3)]
    assert ad.directional_derivative(f, xs, v) == pytest.approx(expected, rel=1e-12)


# -- numpy ------------------------------------------------------------------------

np = pytest.importorskip("numpy")


def logistic_problem(seed=0, n=60, d=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (rng.random(n) > 0.5).astype(float)
    w = rng.normal(size=d) * 0.5
    return X, y, w


def logistic_loss(w, X, y):
    z = X @ w
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def test_the_gradient_of_a_logistic_regression_loss_matches_central_differences():
    X, y, w = logistic_problem()
    h = 1e-6
    for i in range(len(w)):
        e = np.eye(len(w))[i]
        by_ad = ad.directional_derivative(lambda v: logistic_loss(v, X, y), w, e)
        central = (logistic_loss(w + h * e, X, y) - logistic_loss(w - h * e, X, y)) / (2 * h)
        assert abs(by_ad - central) < 1e-6
        exact = (X.T @ (1.0 / (1.0 + np.exp(-(X @ w))) - y) / len(y))[i]
        assert by_ad == pytest.approx(exact, rel=1e-10, abs=1e-12)


def test_array_tangents_through_linear_operations_and_ufuncs():
    A = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.0]])
    x = np.array([0.3, -0.7])
    v = np.array([1.0, 2.0])

    def f(x):
        u = np.tanh(A @ x)
        return (u.T * np.sin(A[:, 0])).sum() + np.sqrt(np.sum(x * x)) + x[1]

    # Closed form: d/dx of each term, along v.
    u = np.tanh(A @ x)
    du = (1 - u ** 2) * (A @ v)
    expected = (du * np.sin(A[:, 0])).sum() + (x @ v) / np.sqrt(x @ x) + v[1]
    assert ad.directional_derivative(f, x, v) == pytest.approx(expected, rel=1e-12)


def test_a_jacobian_vector_product_of_an_array_function():
    x = np.array([0.5, 1.5, -2.0])
    v = np.array([1.0, 0.0, -1.0])
    jvp = ad.directional_derivative(lambda a: np.exp(a) * a[::-1], x, v)
    expected = np.exp(x) * v * x[::-1] + np.exp(x) * v[::-1]
    assert np.allclose(jvp, expected, rtol=1e-12)
