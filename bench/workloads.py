"""The workloads of the benchmark suite.

Two are written here (``fib`` and ``rosenbrock``); the other six are
pyperformance's own benchmarks, imported from the *installed* ``pyperformance``
package (``pyperformance/data-files/benchmarks/bm_*/run_benchmark.py``) with
importlib — their code is not copied into this repository.  Each pyperformance
module is driven through its own workload functions with a small fixed size, so
that one plain call takes a few milliseconds and the instrumented variants stay
in the 10–100 ms range (more for the heaviest pure-Python variants).

A :class:`Workload` is a callable with fixed arguments, plus ``observe``: a
function applied to the callable's return value, *outside* any
instrumentation, that turns it into a value the variants must reproduce exactly
(the plain call's observed value is the reference; the harness also compares
what the call printed).  Workloads that keep
global state are driven so that every call starts from the same state and so
returns the same value.
"""

import argparse
import atexit
import importlib.util
import os
import sys
import tempfile


class Workload:
    __slots__ = ("name", "func", "args", "observe")

    def __init__(self, name, func, args=(), observe=None):
        self.name = name
        self.func = func
        self.args = tuple(args)
        self.observe = observe if observe is not None else (lambda value: value)

    def __repr__(self):
        return f"<workload {self.name}>"


# --------------------------------------------------------------------------
# Written here


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def rosenbrock(xs):
    """The Rosenbrock function of a point given as a list of floats."""
    total = 0.0
    for i in range(len(xs) - 1):
        x = xs[i]
        total += 100.0 * (xs[i + 1] - x * x) ** 2 + (1.0 - x) ** 2
    return total


ROSENBROCK_POINT = [((i * 37) % 101) / 50.0 - 1.0 for i in range(1000)]


# --------------------------------------------------------------------------
# pyperformance


def pyperformance_benchmark(name):
    """Import ``bm_<name>/run_benchmark.py`` from the installed pyperformance
    package as the module ``cassette_bench_bm_<name>``."""
    import pyperformance

    path = os.path.join(pyperformance.DATA_DIR, "benchmarks", "bm_" + name,
                        "run_benchmark.py")
    module_name = "cassette_bench_bm_" + name
    if module_name in sys.modules:
        return sys.modules[module_name]
    if not os.path.exists(path):
        raise ImportError(f"pyperformance {pyperformance.__version__} has no "
                          f"benchmark {name!r} (looked for {path})")
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def richards_workload(iterations=1):
    bm = pyperformance_benchmark("richards")
    # Richards.run() itself checks its result against the known counts and
    # returns False on a mismatch; the counts are observed as well.
    return Workload(
        "richards", bm.Richards().run, (iterations,),
        observe=lambda ok: (ok, bm.taskWorkArea.holdCount, bm.taskWorkArea.qpktCount),
    )


def nbody_workload(steps=400):
    bm = pyperformance_benchmark("nbody")
    # The module's bodies are global and mutated by every run: keep a pristine
    # copy taken at import, and give every call fresh bodies built from it.
    initial = [(list(r), list(v), m) for r, v, m in bm.SYSTEM]
    reference = list(bm.BODIES).index(bm.DEFAULT_REFERENCE)

    def nbody(steps):
        bodies = [(list(r), list(v), m) for r, v, m in initial]
        pairs = bm.combinations(bodies)
        bm.offset_momentum(bodies[reference], bodies)
        before = bm.report_energy(bodies, pairs)
        bm.advance(0.01, steps, bodies, pairs)
        after = bm.report_energy(bodies, pairs)
        return before, after, bodies

    return Workload("nbody", nbody, (steps,))


def spectral_norm_workload(n=40, rounds=2):
    bm = pyperformance_benchmark("spectral_norm")

    def spectral_norm(n, rounds):
        u = [1] * n
        for _ in range(rounds):
            v = bm.eval_AtA_times_u(u)
            u = bm.eval_AtA_times_u(v)
        return u, v

    return Workload("spectral_norm", spectral_norm, (n, rounds))


def float_workload(points=2000):
    bm = pyperformance_benchmark("float")
    return Workload("float", bm.benchmark, (points,),
                    observe=lambda p: (p.x, p.y, p.z))


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass


class _CapturingRunner:
    """Stands in for the ``pyperf.Runner`` that bm_chaos's ``main`` expects,
    to capture the bound method and arguments it would benchmark."""

    def __init__(self):
        self.metadata = {}
        self.captured = None

    def bench_func(self, name, func, *args):
        self.captured = (func, args)


def chaos_workload(iterations=400, size=32):
    bm = pyperformance_benchmark("chaos")
    # The splines are built inside bm_chaos.main(runner, args): run it with a
    # capturing runner to get the Chaosgame and the arguments it benchmarks.
    fd, path = tempfile.mkstemp(prefix="cassette-bench-chaos-", suffix=".ppm")
    os.close(fd)
    atexit.register(_remove, path)
    runner = _CapturingRunner()
    bm.main(runner, argparse.Namespace(
        thickness=bm.DEFAULT_THICKNESS, width=size, height=size,
        iterations=iterations, filename=path, rng_seed=bm.DEFAULT_RNG_SEED))
    func, args = runner.captured

    def observe(_none):
        # create_image_chaos returns None and writes the image to `path`.
        with open(path, "rb") as image:
            return image.read()

    return Workload("chaos", func, args, observe=observe)


def deltablue_workload(n=100):
    bm = pyperformance_benchmark("deltablue")
    # delta_blue() returns None and reports failed checks by printing (the
    # harness captures and compares printed output for every workload); the
    # final planner's mark counter is observed as well.
    return Workload("deltablue", bm.delta_blue, (n,),
                    observe=lambda _none: bm.planner.current_mark)


def fib_workload(n=20):
    return Workload("fib", fib, (n,))


def rosenbrock_workload():
    return Workload("rosenbrock", rosenbrock, (ROSENBROCK_POINT,))


BUILDERS = {
    "fib": fib_workload,
    "rosenbrock": rosenbrock_workload,
    "richards": richards_workload,
    "nbody": nbody_workload,
    "spectral_norm": spectral_norm_workload,
    "float": float_workload,
    "chaos": chaos_workload,
    "deltablue": deltablue_workload,
}
"""Every workload's builder, by name, in the order the suite runs them."""

WORKLOAD_NAMES = tuple(BUILDERS)


def all_workloads():
    return [build() for build in BUILDERS.values()]
