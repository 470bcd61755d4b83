"""The workloads of the benchmark suite.

Two are written here (``fib`` and ``rosenbrock``); the other fifteen are
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
import io
import json
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


def raytrace_workload(size=10):
    bm = pyperformance_benchmark("raytrace")
    # bench_raytrace(loops, width, height, filename) builds the scene, renders
    # it and returns the elapsed time; the picture it writes to `filename` is
    # what is observed, as for chaos.
    fd, path = tempfile.mkstemp(prefix="cassette-bench-raytrace-", suffix=".ppm")
    os.close(fd)
    atexit.register(_remove, path)

    def observe(_elapsed):
        with open(path, "rb") as image:
            return image.read()

    return Workload("raytrace", bm.bench_raytrace, (1, size, size, path),
                    observe=observe)


def nqueens_workload(queen_count=6):
    bm = pyperformance_benchmark("nqueens")

    # bench_n_queens(queen_count) is list(n_queens(queen_count)), discarded;
    # here the solutions are returned.
    def nqueens(queen_count):
        return list(bm.n_queens(queen_count))

    return Workload("nqueens", nqueens, (queen_count,))


def fannkuch_workload(n=7):
    bm = pyperformance_benchmark("fannkuch")
    # fannkuch(n) returns the maximum number of flips.
    return Workload("fannkuch", bm.fannkuch, (n,))


def go_workload(games=4):
    bm = pyperformance_benchmark("go")

    # versus_cpu() seeds `random` itself and plays the module global GAMES
    # random games; the module's move and timestamp counters are global and
    # grow with every run: every call sets GAMES and starts them from zero,
    # as at import.  The chosen move and the number of moves played are
    # observed.
    def go(games):
        bm.GAMES = games
        bm.TIMESTAMP = 0
        bm.MOVES = 0
        return bm.versus_cpu(), bm.MOVES

    return Workload("go", go, (games,))


def hexiom_workload(level=25):
    bm = pyperformance_benchmark("hexiom")
    # main(loops, level) times solve_file and checks its output against the
    # level's solution; here solve_file runs once, with main's strategy and
    # order, and the solution it writes is returned.
    board = bm.LEVELS[level][0].strip()

    def hexiom(board):
        output = io.StringIO()
        bm.solve_file(board, bm.Done.FIRST_STRATEGY, bm.DESCENDING, output)
        return output.getvalue()

    return Workload("hexiom", hexiom, (board,))


def json_dumps_workload(divisor=10):
    bm = pyperformance_benchmark("json_dumps")
    # main() builds [(obj, range(count)) for each case] and bench_json_dumps
    # dumps each obj count times, discarding the strings; here every case's
    # count is divided by `divisor` (at least one dump per case) and the
    # dumped strings are returned.
    data = []
    for case in bm.CASES:
        obj, count = getattr(bm, case)
        data.append((obj, range(max(1, count // divisor))))

    def json_dumps(data):
        dumped = []
        for obj, count_it in data:
            for _ in count_it:
                dumped.append(json.dumps(obj))
        return dumped

    return Workload("json_dumps", json_dumps, (data,))


def unpack_sequence_workload(loops=100):
    bm = pyperformance_benchmark("unpack_sequence")
    # bench_all(loops) runs 400 tuple unpackings and then 400 list
    # unpackings per loop and returns only the elapsed time: there is no
    # result to compare, so what is observed is that it returned one.
    return Workload("unpack_sequence", bm.bench_all, (loops,),
                    observe=lambda elapsed: isinstance(elapsed, float) and elapsed > 0)


def generators_workload(n=10000):
    bm = pyperformance_benchmark("generators")
    # bench_generators builds tree(range(100000)) once, outside its timed
    # loop, and iterates it (recursive generators: yield from); here the tree
    # is built once, of n values, and each call iterates it and returns what
    # it yielded.
    tree = bm.tree(range(n))

    def generators(tree):
        values = []
        for value in tree:
            values.append(value)
        return values

    return Workload("generators", generators, (tree,))


def coroutines_workload(n=20):
    bm = pyperformance_benchmark("coroutines")

    # bench_coroutines drives the recursive coroutine fibonacci(25) with
    # send(None) until StopIteration; here fibonacci(n), and its value (the
    # StopIteration's) is returned.
    def coroutines(n):
        coro = bm.fibonacci(n)
        try:
            while True:
                coro.send(None)
        except StopIteration as stop:
            return stop.value

    return Workload("coroutines", coroutines, (n,))


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
    "raytrace": raytrace_workload,
    "nqueens": nqueens_workload,
    "fannkuch": fannkuch_workload,
    "go": go_workload,
    "hexiom": hexiom_workload,
    "json_dumps": json_dumps_workload,
    "unpack_sequence": unpack_sequence_workload,
    "generators": generators_workload,
    "coroutines": coroutines_workload,
}
"""Every workload's builder, by name, in the order the suite runs them."""

WORKLOAD_NAMES = tuple(BUILDERS)


def all_workloads():
    return [build() for build in BUILDERS.values()]
