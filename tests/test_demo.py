"""The demo the README's first command runs (``examples/demo.py``): it runs
to the end in a fresh interpreter, and what it prints is right — each value
checked against one computed here, independently of cassette."""

import ast
import math
import os
import re
import subprocess
import sys

import pytest

# The demo runs examples/ad.py and provenance.py, which work on numpy arrays too.
pytest.importorskip("numpy")

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")


@pytest.fixture(scope="module")
def printed():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [EXAMPLES, *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, os.path.join(EXAMPLES, "demo.py")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def value_after(text, prefix):
    """The Python literal printed after ``prefix`` on its line."""
    line = next(line for line in text.splitlines() if line.startswith(prefix))
    return ast.literal_eval(line[len(prefix):].split("   ")[0].strip())


def rosenbrock(xs):
    return sum((1.0 - xs[i]) ** 2 + 100.0 * (xs[i + 1] - xs[i] ** 2) ** 2
               for i in range(len(xs) - 1))


def test_the_trace_lists_the_operations_of_rosenbrock(printed):
    trace = printed.split("-\n", 1)[1].split("\n\n", 1)[0].splitlines()
    callees = [line.split(" ", 1)[0] for line in trace]
    # rosenbrock([1.0, 2.0, 0.5]): len, len(xs) - 1, range, iter, then per
    # iteration (two) a next and three subscripts (xs[i] twice, xs[i + 1]),
    # and a last next that ends the loop.
    assert callees[:4] == ["len", "operator.sub", "range", "iter"]
    assert callees.count("next") == 3
    assert callees.count("operator.getitem") == 6
    assert callees.count("operator.iadd") == 2
    assert trace[0] == "len ([1.0, 2.0, 0.5],)"
    result = rosenbrock([1.0, 2.0, 0.5])
    assert f"overdubbed result {result!r} == plain result {result!r}: True" in printed


def test_the_override_computes_cosine_inside_its_context_only(printed):
    assert value_after(printed, "overdub(SinToCos(), wave, 0.5) = ") == 2.0 * math.cos(0.5) + 1.0
    assert value_after(printed, "wave(0.5)                      = ") == 2.0 * math.sin(0.5) + 1.0
    assert value_after(printed, "math.sin outside the context is untouched: math.sin(0.5) = ") \
        == math.sin(0.5)


def test_the_float_operations_are_counted_by_hand(printed):
    # mixed(4): four float(k) * 0.5 and four total += …; norm([3.0, 4.0]):
    # two c * c and a math.sqrt (sum of a generator is not all-float); and
    # the final total + norm(…).
    assert "operations with only float arguments: 12" in printed
    counts = dict(re.findall(r"^  (\S+) +(\d+)$", printed, re.MULTILINE))
    assert counts == {"math.sqrt": "1", "operator.add": "1", "operator.iadd": "4",
                      "operator.mul": "6"}


def test_the_gradient_and_derivative_are_the_analytic_ones(printed):
    x0, x1, x2 = 1.2, 0.8, -0.5
    analytic = [-2 * (1 - x0) - 400 * x0 * (x1 - x0 ** 2),
                200 * (x1 - x0 ** 2) - 2 * (1 - x1) - 400 * x1 * (x2 - x1 ** 2),
                200 * (x2 - x1 ** 2)]
    gradient = value_after(printed, "gradient at [1.2, 0.8, -0.5]: ")
    assert gradient == pytest.approx(analytic, rel=1e-12)
    line = next(line for line in printed.splitlines() if line.startswith("d/dx"))
    assert float(line.split(" = ")[1].split(" ")[0]) == 2 * math.cos(0.5)


def test_the_interval_enclosures_contain_the_true_ranges(printed):
    numbers = [float(n) for n in re.findall(
        r"Interval\(([-0-9.e]+), ([-0-9.e]+)\)$",
        next(line for line in printed.splitlines() if line.startswith("wave(x) for x in")))[0]]
    low, high = numbers
    # wave(x) = 2 sin x + 1 rises on [0, 1]: its range is [1, 2 sin 1 + 1].
    assert low <= 1.0 <= low + 1e-12
    assert high >= 2 * math.sin(1.0) + 1.0 >= high - 1e-12
    line = next(line for line in printed.splitlines() if line.startswith("norm([x, 4])"))
    low, high = (float(n) for n in re.findall(r"Interval\(([-0-9.e]+), ([-0-9.e]+)\)", line)[0])
    assert low <= math.hypot(2.9, 4.0) <= low + 1e-12
    assert high >= math.hypot(3.1, 4.0) >= high - 1e-12


def test_the_provenance_of_each_term_is_its_two_inputs(printed):
    assert ("rosenbrock's terms: [frozenset({0, 1}), frozenset({1, 2}), frozenset({2, 3})]"
            in printed)
