"""reference §3.3–§3.4 on real libraries: plain vs overdubbed, and escapes.

The CPython oracle (``tests/cpython_oracle.py``) holds overdubbing to the
language's own tests.  This module holds it to programs written the way
users of popular libraries write them: each workload below is a small,
module-level, zero-argument function calling numpy, scipy, pandas, sympy,
attrs, networkx, pyparsing or a pure-Python part of the standard library,
and returning a value comparable with ``==``.  Apart from turning the result
into plain Python data, none of the code that runs is ours.

For every workload and context the workload runs plainly (once per session,
the *oracle*) and overdubbed; the results must be equal — exactly, floats
included: overdubbing must not change a single bit of what a program
computes.  The contexts are those of the CPython oracle plus one:

``nothing``         defines nothing (:class:`cpython_oracle.Nothing`);
``counting``        a catch-all prehook touching every operation
                    (:func:`cpython_oracle.touching`): every site rewritten,
                    every operation through the hook protocol;
``recursion-only``  intercepts calls only (``intercept = Intercept.CALLS``),
                    with, like the benchmarks' recursion-only variant, an
                    ``execute`` override for a function nothing calls:
                    recursion into every callee, no handler ever runs.

With the Cython core, no frame of an overdubbed workload may escape (reference
§3.3), counted with :func:`cassette.count_escapes`; the pure-Python runtime
has no routing, so there escapes are only reported, not held to zero.

Run it as a script for a table (``--escapes`` to count escapes too)::

    PYTHONPATH=. python tests/test_real_libraries.py [--escapes] [-v] [workload ...]
"""

import collections
import dataclasses
import decimal
import difflib
import email
import email.policy
import enum
import fractions
import functools
import importlib
import json
import os
import re
import sys
import textwrap
import time

import pytest

import cassette
from cassette.entry import IMPLEMENTATION

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpython_oracle as oracle  # noqa: E402


def _optional(name):
    """The module ``name``, or None when it is not installed (its workloads
    are then skipped)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


np = _optional("numpy")
scipy_optimize = _optional("scipy.optimize")
scipy_integrate = _optional("scipy.integrate")
pd = _optional("pandas")
sympy = _optional("sympy")
attrs = _optional("attrs")
nx = _optional("networkx")
pp = _optional("pyparsing")


# --------------------------------------------------------------------------
# Workloads: numpy


def numpy_polyfit():
    x = np.linspace(0.0, 2.0, 25)
    y = 3.0 * x**2 - 2.0 * x + 1.0 + 0.01 * np.sin(7.0 * x)
    coeffs = np.polyfit(x, y, 2)
    fitted = np.polyval(coeffs, [0.25, 0.5, 1.5])
    return tuple(coeffs.tolist()), tuple(fitted.tolist())


def numpy_statistics():
    grid = np.linspace(-1.0, 1.0, 41)
    data = np.cos(3.0 * grid) * np.exp(grid)
    quantiles = np.percentile(data, [10, 25, 50, 75, 90])
    table = np.outer(grid[:5], np.arange(1, 4))
    hist, edges = np.histogram(data, bins=5)
    return (tuple(quantiles.tolist()), table.tolist(), float(np.median(data)),
            tuple(hist.tolist()), tuple(edges.tolist()), float(np.std(data)))


def numpy_linalg():
    a = np.array([[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 5.0], [1.0, 1.0, 1.0]])
    u, s, vt = np.linalg.svd(a, full_matrices=False)
    square = a[:3]
    solution = np.linalg.solve(square, np.array([1.0, 2.0, 3.0]))
    eigenvalues = np.linalg.eigvalsh(square)
    return (tuple(s.tolist()), u.shape, vt.shape, tuple(solution.tolist()),
            tuple(eigenvalues.tolist()), float(np.linalg.det(square)),
            float(np.linalg.norm(a)))


# --------------------------------------------------------------------------
# Workloads: scipy


def scipy_minimize():
    result = scipy_optimize.minimize(scipy_optimize.rosen, [1.3, 0.7, 0.8, 1.9, 1.2],
                                     method="Nelder-Mead", options={"xatol": 1e-8})
    return tuple(result.x.tolist()), float(result.fun), int(result.nit), bool(result.success)


def scipy_quad():
    gauss, gauss_error = scipy_integrate.quad(lambda t: np.exp(-t * t), -np.inf, np.inf)
    bessel, _ = scipy_integrate.quad(lambda t, n: np.cos(n * t - np.sin(t)), 0, np.pi, args=(2,))
    return gauss, gauss_error, bessel


def scipy_brentq():
    root = scipy_optimize.brentq(lambda x: x**3 - 2.0 * x - 5.0, 2.0, 3.0)
    newton = scipy_optimize.newton(lambda x: np.cos(x) - x, 0.5)
    return root, float(newton)


# --------------------------------------------------------------------------
# Workloads: pandas


def pandas_groupby():
    df = pd.DataFrame({
        "city": ["Oslo", "Lima", "Oslo", "Pune", "Lima", "Oslo", "Pune", "Lima"],
        "year": [2020, 2020, 2021, 2021, 2021, 2022, 2022, 2022],
        "sales": [10.5, 3.25, 12.0, 7.5, 4.0, 9.75, 8.0, 5.5],
        "units": [3, 1, 4, 2, 1, 3, 2, 2],
    })
    summary = df.groupby("city").agg(total=("sales", "sum"), mean_units=("units", "mean"),
                                     years=("year", "nunique"))
    df["share"] = df["sales"] / df.groupby("city")["sales"].transform("sum")
    pivot = df.pivot_table(index="city", columns="year", values="units", aggfunc="sum",
                           fill_value=0)
    return (summary.reset_index().to_dict("records"), df["share"].tolist(),
            pivot.to_dict())


def pandas_merge():
    orders = pd.DataFrame({"order": [1, 2, 3, 4, 5], "customer": ["a", "b", "a", "c", "d"],
                           "amount": [20.0, 35.5, 12.25, 8.0, 99.0]})
    customers = pd.DataFrame({"customer": ["a", "b", "c"], "name": ["Ann", "Bob", "Cy"]})
    merged = orders.merge(customers, on="customer", how="left")
    merged["name"] = merged["name"].fillna("?")
    spend = merged.sort_values("amount", ascending=False).groupby("name")["amount"].sum()
    return merged.to_dict("list"), spend.to_dict(), merged.describe().to_dict()


# --------------------------------------------------------------------------
# Workloads: sympy (its cache is cleared first: every run computes; the
# integrand is x*exp(x), not x**2*cos(x): that one runs 1.1 million
# operations, ~50 s under count_escapes with a catch-all prehook)


def sympy_integrate():
    sympy.core.cache.clear_cache()
    x = sympy.Symbol("x")
    antiderivative = sympy.integrate(x * sympy.exp(x), x)
    return repr(antiderivative), repr(sympy.diff(antiderivative, x))


def sympy_solve():
    sympy.core.cache.clear_cache()
    x, y = sympy.symbols("x y")
    roots = sympy.solve(sympy.sympify("x**2 - 5*x + 6"), x)
    system = sympy.solve([x + y - 10, x - y - 2], [x, y])
    third = sympy.S(1) / 3 + sympy.Rational(1, 6)
    return repr(sorted(roots, key=repr)), repr(sorted(system.items(), key=repr)), repr(third)


def sympy_simplify():
    sympy.core.cache.clear_cache()
    x, y = sympy.symbols("x y")
    expanded = sympy.expand((x + 2 * y) ** 3)
    factored = sympy.factor(x**3 - x**2 - x + 1)
    simplified = sympy.simplify((x**2 - 1) / (x - 1))
    limit = sympy.limit(sympy.sin(x) / x, x, 0)
    return repr(expanded), repr(factored), repr(simplified), repr(limit)


# --------------------------------------------------------------------------
# Workloads: attrs (the class is made inside the workload)


def attrs_define():
    def positive(instance, attribute, value):
        if value <= 0:
            raise ValueError(f"{attribute.name} must be positive")

    @attrs.define
    class Item:
        name: str
        price: float = attrs.field(validator=positive)
        tags: list = attrs.Factory(list)
        quantity: int = attrs.field(default=1, converter=int)

    @attrs.frozen(order=True)
    class Point:
        x: int
        y: int = 0

    pen = Item("pen", 1.5, quantity="3")
    pen.tags.append("office")
    book = attrs.evolve(pen, name="book", price=12.0)
    try:
        Item("free", 0)
    except ValueError as error:
        rejected = str(error)
    points = sorted({Point(2, 1), Point(1, 5), Point(1)})
    return (attrs.asdict(pen), attrs.asdict(book), repr(book), pen == book, rejected,
            [attrs.astuple(p) for p in points], [f.name for f in attrs.fields(Item)])


# --------------------------------------------------------------------------
# Workloads: networkx


def networkx_pagerank():
    graph = nx.DiGraph()
    graph.add_edges_from([("a", "b"), ("b", "c"), ("c", "a"), ("a", "d"), ("d", "c"),
                          ("e", "a"), ("e", "d"), ("c", "e")])
    ranks = nx.pagerank(graph, alpha=0.85, tol=1e-12)
    return sorted(ranks.items()), sorted(nx.in_degree_centrality(graph).items())


def networkx_paths():
    graph = nx.Graph()
    graph.add_weighted_edges_from([(1, 2, 7), (1, 3, 9), (1, 6, 14), (2, 3, 10), (2, 4, 15),
                                   (3, 4, 11), (3, 6, 2), (4, 5, 6), (5, 6, 9)])
    path = nx.shortest_path(graph, 1, 5, weight="weight")
    length = nx.shortest_path_length(graph, 1, 5, weight="weight")
    hops = dict(nx.all_pairs_shortest_path_length(graph))
    tree = nx.minimum_spanning_tree(graph)
    return (path, length, sorted((k, sorted(v.items())) for k, v in hops.items()),
            sorted(tuple(sorted(edge)) for edge in tree.edges()),
            sorted(nx.connected_components(graph.subgraph([1, 2, 4, 5])), key=min))


def networkx_maxflow():
    graph = nx.DiGraph()
    for u, v, capacity in [("s", "a", 10), ("s", "b", 5), ("a", "b", 15), ("a", "t", 10),
                           ("b", "t", 10), ("b", "c", 4), ("c", "t", 3)]:
        graph.add_edge(u, v, capacity=capacity)
    value, flows = nx.maximum_flow(graph, "s", "t")
    cut_value, (reachable, rest) = nx.minimum_cut(graph, "s", "t")
    return (value, sorted((u, sorted(f.items())) for u, f in flows.items()),
            cut_value, sorted(reachable), sorted(rest))


# --------------------------------------------------------------------------
# Workloads: pyparsing


def pyparsing_arithmetic():
    integer = pp.pyparsing_common.number
    variable = pp.Word(pp.alphas, exact=1)
    operand = integer | variable
    expression = pp.infix_notation(operand, [
        (pp.one_of("- +"), 1, pp.OpAssoc.RIGHT),
        (pp.Literal("^"), 2, pp.OpAssoc.RIGHT),
        (pp.one_of("* /"), 2, pp.OpAssoc.LEFT),
        (pp.one_of("+ -"), 2, pp.OpAssoc.LEFT),
    ])
    texts = ["9 + 2 * 3", "(a + b) * -c ^ 2", "1 - 2 - 3 / x", "2 ^ 3 ^ 2 + 4.5 * (y - 1)"]
    parsed = [expression.parse_string(text, parse_all=True).as_list() for text in texts]
    key_value = pp.Dict(pp.ZeroOrMore(pp.Group(
        pp.Word(pp.alphas) + pp.Suppress("=") + pp.Word(pp.nums).set_parse_action(
            lambda tokens: int(tokens[0])))))
    settings = key_value.parse_string("width = 80 height = 24 depth = 3")
    return repr(parsed), sorted(settings.as_dict().items())


# --------------------------------------------------------------------------
# Workloads: the standard library's pure-Python modules


def fractions_decimal():
    harmonic = sum(fractions.Fraction(1, n) for n in range(1, 30))
    approx = fractions.Fraction(3.141592653589793).limit_denominator(1000)
    with decimal.localcontext() as ctx:
        ctx.prec = 40
        root = decimal.Decimal(2).sqrt()
        money = sum(decimal.Decimal("19.99") * n for n in range(1, 6)).quantize(
            decimal.Decimal("0.01"), rounding=decimal.ROUND_HALF_EVEN)
    return harmonic, approx, str(root), str(money), harmonic > approx


def json_round_trip():
    data = {"name": "cassette", "version": [1, 2, 3], "ratio": 0.1 + 0.2,
            "nested": {"ok": True, "none": None, "text": "caf\u00e9 \u2603"},
            "items": [{"id": i, "square": i * i} for i in range(5)]}
    text = json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False)
    compact = json.dumps(data, separators=(",", ":"), sort_keys=True)
    back = json.loads(text, parse_float=decimal.Decimal)
    decoder = json.JSONDecoder(object_pairs_hook=collections.OrderedDict)
    return text, compact, repr(back), list(decoder.decode(compact).items())


def dataclasses_inside():
    @dataclasses.dataclass(order=True, frozen=True)
    class Version:
        major: int
        minor: int = 0
        patch: int = 0

        def bump(self):
            return dataclasses.replace(self, patch=self.patch + 1)

    @dataclasses.dataclass
    class Package:
        name: str
        version: Version
        deps: list = dataclasses.field(default_factory=list)

        def __post_init__(self):
            self.name = self.name.lower()

    versions = sorted([Version(1, 2), Version(0, 9, 1), Version(1, 2).bump(), Version(1)])
    package = Package("Cassette", versions[-1], ["bytecode"])
    return ([dataclasses.astuple(v) for v in versions], dataclasses.asdict(package), repr(package),
            [f.name for f in dataclasses.fields(Package)], hash(Version(1, 2)) == hash(Version(1, 2)))


def difflib_diff():
    before = textwrap.dedent("""\
        def mean(xs):
            total = 0
            for x in xs:
                total += x
            return total / len(xs)
        """).splitlines(keepends=True)
    after = textwrap.dedent("""\
        def mean(values):
            if not values:
                raise ValueError("empty")
            return sum(values) / len(values)
        """).splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, "".join(before), "".join(after))
    diff = list(difflib.unified_diff(before, after, "a/stats.py", "b/stats.py"))
    close = difflib.get_close_matches("appel", ["ape", "apple", "peach", "puppy"])
    return matcher.ratio(), matcher.get_opcodes(), diff, close, list(difflib.ndiff(["a\n"], ["b\n"]))


_MESSAGE = textwrap.dedent("""\
    From: Ada <ada@example.org>
    To: bob@example.com, Cy <cy@example.net>
    Subject: =?utf-8?q?R=C3=A9sum=C3=A9?= of the meeting
    Date: Mon, 01 Jan 2024 10:00:00 +0000
    MIME-Version: 1.0
    Content-Type: multipart/mixed; boundary="XYZ"

    --XYZ
    Content-Type: text/plain; charset="utf-8"
    Content-Transfer-Encoding: quoted-printable

    Caf=C3=A9 at ten.
    --XYZ
    Content-Type: application/json; name="data.json"
    Content-Disposition: attachment; filename="data.json"
    Content-Transfer-Encoding: base64

    eyJrIjogMX0=
    --XYZ--
    """)


def email_parsing():
    message = email.message_from_string(_MESSAGE, policy=email.policy.default)
    body = message.get_body(preferencelist=("plain",))
    attachments = [(part.get_filename(), part.get_content_type(), part.get_content())
                   for part in message.iter_attachments()]
    return (str(message["subject"]), [a.addr_spec for a in message["to"].addresses],
            message["date"].datetime.isoformat(), body.get_content(), attachments,
            message.is_multipart())


_LOG = """\
2024-03-01 12:00:01 INFO  [web] GET /index.html 200 0.012s
2024-03-01 12:00:02 WARN  [db] slow query: SELECT * FROM users (1.532s)
2024-03-01 12:00:05 INFO  [web] POST /login 302 0.101s
2024-03-01 12:01:10 ERROR [web] GET /admin 500 0.002s
2024-03-01 12:01:11 INFO  [web] GET /index.html 200 0.009s
"""


def regex_text():
    line = re.compile(r"^(?P<date>\S+) (?P<time>\S+) (?P<level>[A-Z]+)\s+\[(?P<src>\w+)\] (?P<msg>.*)$",
                      re.MULTILINE)
    records = [m.groupdict() for m in line.finditer(_LOG)]
    requests = re.findall(r"(GET|POST) (\S+) (\d{3}) ([\d.]+)s", _LOG)
    durations = collections.Counter(level for level in re.findall(r" ([A-Z]{4,5}) ", _LOG))
    redacted = re.sub(r"/(\w+)", lambda m: "/" + m.group(1)[0] + "*" * (len(m.group(1)) - 1), _LOG)
    words = re.split(r"\W+", "The quick, brown fox -- jumps over: the lazy dog!")
    return records, requests, sorted(durations.items()), redacted, words


@functools.lru_cache(maxsize=None)
def _partitions(n, largest):
    """The number of partitions of ``n`` into parts of at most ``largest``."""
    if n == 0:
        return 1
    if n < 0 or largest == 0:
        return 0
    return _partitions(n - largest, largest) + _partitions(n, largest - 1)


@functools.lru_cache(maxsize=32)
def _collatz_length(n):
    return 1 if n == 1 else 1 + _collatz_length(n // 2 if n % 2 == 0 else 3 * n + 1)


def lru_cache_outside():
    _partitions.cache_clear()
    _collatz_length.cache_clear()
    counts = [_partitions(n, n) for n in (5, 20, 60)]
    lengths = [_collatz_length(n) for n in (27, 97, 871)]
    return counts, lengths, tuple(_partitions.cache_info()), tuple(_collatz_length.cache_info())


def enum_classes():
    class Color(enum.Enum):
        RED = 1
        GREEN = 2
        BLUE = 3

        @property
        def warm(self):
            return self is Color.RED

    class Perm(enum.IntFlag):
        R = 4
        W = 2
        X = 1

    class Planet(enum.Enum):
        MERCURY = (3.303e+23, 2.4397e6)
        EARTH = (5.976e+24, 6.37814e6)

        def __init__(self, mass, radius):
            self.mass = mass
            self.radius = radius

        @property
        def gravity(self):
            return 6.673e-11 * self.mass / (self.radius * self.radius)

    class Level(enum.StrEnum):
        LOW = enum.auto()
        HIGH = enum.auto()

    mode = Perm.R | Perm.W
    return ([(c.name, c.value, c.warm) for c in Color], Color(2).name, Color["BLUE"].value,
            repr(mode), Perm.W in mode, int(mode), list(mode), str(Perm(7)),
            [(p.name, p.gravity) for p in Planet], [str(level) for level in Level],
            Level("high") is Level.HIGH)


# --------------------------------------------------------------------------
# The table of workloads: name -> (the module it needs or None, workload)

WORKLOADS = {
    "numpy_polyfit": ("numpy", numpy_polyfit),
    "numpy_statistics": ("numpy", numpy_statistics),
    "numpy_linalg": ("numpy", numpy_linalg),
    "scipy_minimize": ("scipy", scipy_minimize),
    "scipy_quad": ("scipy", scipy_quad),
    "scipy_brentq": ("scipy", scipy_brentq),
    "pandas_groupby": ("pandas", pandas_groupby),
    "pandas_merge": ("pandas", pandas_merge),
    "sympy_integrate": ("sympy", sympy_integrate),
    "sympy_solve": ("sympy", sympy_solve),
    "sympy_simplify": ("sympy", sympy_simplify),
    "attrs_define": ("attrs", attrs_define),
    "networkx_pagerank": ("networkx scipy", networkx_pagerank),     # its scipy form
    "networkx_paths": ("networkx", networkx_paths),
    "networkx_maxflow": ("networkx", networkx_maxflow),
    "pyparsing_arithmetic": ("pyparsing", pyparsing_arithmetic),
    "fractions_decimal": (None, fractions_decimal),
    "json_round_trip": (None, json_round_trip),
    "dataclasses_inside": (None, dataclasses_inside),
    "difflib_diff": (None, difflib_diff),
    "email_parsing": (None, email_parsing),
    "regex_text": (None, regex_text),
    "lru_cache_outside": (None, lru_cache_outside),
    "enum_classes": (None, enum_classes),
}


# --------------------------------------------------------------------------
# Contexts


def _never_called(*args, **kwargs):
    """The callee of :class:`RecursionOnly`'s only handler: nothing calls it."""
    raise AssertionError("test_real_libraries: _never_called was called")


class RecursionOnly(cassette.Context):
    """Calls only: recursion into every callee, no handler ever runs."""

    intercept = cassette.Intercept.CALLS


@cassette.execute.register(RecursionOnly, _never_called)
def _never_execute(ctx, f, *args, **kwargs):
    raise AssertionError("test_real_libraries: RecursionOnly's execute handler ran")


CONTEXTS = {
    "nothing": oracle.Nothing,
    "counting": oracle.touching,
    "recursion-only": RecursionOnly,
}


# --------------------------------------------------------------------------
# Running


def missing_library(library):
    """The first of the libraries ``library`` names (space-separated) that
    is not installed, or None."""
    return next((name for name in (library or "").split() if _optional(name) is None), None)


def workload(name):
    """The workload ``name``; skips the test when a library it needs is missing."""
    library, function = WORKLOADS[name]
    for needed in (library or "").split():
        pytest.importorskip(needed)
    return function


def run_plain(function):
    return function()


def run_overdubbed(ctx, function, count_escapes=False):
    """``(result, escapes)``: ``function`` overdubbed by ``ctx``; escapes is
    a :class:`cassette.Escapes` when counted, else None."""
    limit = sys.getrecursionlimit()
    try:
        if not count_escapes:
            return cassette.overdub(ctx, function), None
        with cassette.count_escapes() as escapes:
            result = cassette.overdub(ctx, function)
        return result, escapes
    finally:
        if sys.getrecursionlimit() != limit:
            sys.setrecursionlimit(limit)


@functools.lru_cache(maxsize=None)
def plain_result(name):
    """The oracle: the workload run plainly, once per session."""
    return run_plain(WORKLOADS[name][1])


def _difference(plain, dubbed):
    return f"plain:\n  {plain!r}\noverdubbed:\n  {dubbed!r}"


@pytest.mark.parametrize("name", WORKLOADS)
def test_workload_is_deterministic(name):
    """The oracle is only an oracle if a second plain run agrees with it."""
    function = workload(name)
    assert run_plain(function) == plain_result(name)


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("name", WORKLOADS)
def test_overdubbed_result_equals_plain_and_nothing_escapes(name, context):
    """Equal results, and with the Cython core zero escapes.  Escapes are
    counted in both runtimes (the counter is a ``sys.setprofile``
    function: the runs are also runs beside a profiler); the pure-Python
    runtime has no routing, so its count is not held to zero."""
    function = workload(name)
    expected = plain_result(name)
    ctx = CONTEXTS[context]()
    result, escapes = run_overdubbed(ctx, function, count_escapes=True)
    assert result == expected, _difference(expected, result)
    if context == "counting":
        assert ctx.metadata.count > 0, "the catch-all prehook saw no operation"
    if IMPLEMENTATION == "cython":
        assert escapes.total == 0, escapes.report()


# --------------------------------------------------------------------------
# The command line: a table


def main(argv):
    count = "--escapes" in argv
    verbose = "-v" in argv
    names = [a for a in argv if not a.startswith("-")] or list(WORKLOADS)
    print(f"Python {sys.version.split()[0]}, cassette runtime: {IMPLEMENTATION}")
    failures = 0
    for name in names:
        library, function = WORKLOADS[name]
        if missing_library(library) is not None:
            print(f"{name:22} skipped: {missing_library(library)} is not installed")
            continue
        started = time.perf_counter()
        expected = run_plain(function)
        row = [f"{name:22} plain {time.perf_counter() - started:6.2f}s"]
        reports = []
        for label, make in CONTEXTS.items():
            started = time.perf_counter()
            try:
                result, escapes = run_overdubbed(make(), function, count)
                verdict = "ok" if result == expected else "DIFFERENT"
            except Exception as error:          # noqa: BLE001 - reported
                escapes = None
                verdict = f"{type(error).__name__}: {str(error)[:60]}"
            failures += verdict != "ok"
            extra = f" escapes={escapes.total}" if escapes is not None else ""
            row.append(f"{label} {verdict} {time.perf_counter() - started:6.2f}s{extra}")
            if verbose and escapes is not None and escapes.total:
                reports.append(f"  {label}: " + escapes.report(10).replace("\n", "\n  "))
        print(" | ".join(row), *reports, sep="\n", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
