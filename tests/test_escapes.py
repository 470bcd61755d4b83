"""SPEC §3.3: zero escapes on real programs that lean on protocols, and on
the benchmark workloads.

Each program runs plainly and overdubbed by a context that defines nothing
(the cheapest rewrite: no operator site is rewritten, so everything the
interpreter calls implicitly must be routed), inside
:func:`cassette.count_escapes`.  With the Cython core the count is zero;
under the pure-Python runtime (no routing) these programs do escape, and
the count says where — the test checks the result and that the counter
names the protocol code that escaped.
"""

import collections
import dataclasses
import enum
import fractions
import heapq
import json
import json.encoder
import os
import statistics
import sys

import pytest

import cassette
from cassette.entry import IMPLEMENTATION

PURE = IMPLEMENTATION == "python"


class Nothing(cassette.Context):
    pass


def json_pure_encoder():
    """The pure-Python json encoder (the C accelerator bypassed)."""
    encoder = json.encoder.JSONEncoder(sort_keys=True)
    data = {"b": [1, 2.5, None, True], "a": {"x": "y\u00e9", "n": [{"k": i} for i in range(3)]}}
    chunks = json.encoder._make_iterencode(
        {}, encoder.default, json.encoder.py_encode_basestring, " ",
        float.__repr__, encoder.key_separator, encoder.item_separator,
        encoder.sort_keys, encoder.skipkeys, True)(data, 0)
    return "".join(chunks)


class Money:
    def __init__(self, cents):
        self.cents = cents


def encode_money(obj):
    if isinstance(obj, Money):
        return {"cents": obj.cents}
    raise TypeError(type(obj).__name__)


def json_c_encoder_with_default():
    """json.dumps with its C encoder, calling back ``default`` for objects
    it cannot encode itself, and json.loads calling ``object_hook``."""
    text = json.dumps({"price": Money(250), "items": [Money(1), 2]}, default=encode_money)
    return text, json.loads(text, object_hook=lambda d: sorted(d.items()))


def fractions_program():
    total = fractions.Fraction(0)
    for n in range(1, 30):
        total += fractions.Fraction(1, n) * fractions.Fraction(n, n + 1)
    return total, total < 1, float(total), str(total), hash(total), round(total, 3)


def statistics_program():
    data = [fractions.Fraction(n, 7) for n in range(1, 20)]
    floats = [n / 3 for n in range(50)]
    return (statistics.mean(data), statistics.median(data), statistics.fmean(floats),
            statistics.stdev(floats), statistics.mode([1, 2, 2, 3]))


@dataclasses.dataclass(order=True, frozen=True)
class Card:
    rank: int
    suit: str = "spades"


def dataclasses_program():
    cards = [Card(r, s) for r, s in [(3, "a"), (1, "b"), (2, "c"), (1, "a")]]
    return (sorted(cards), Card(1, "a") == Card(1, "a"), len({Card(2), Card(2)}),
            repr(Card(5)), dataclasses.astuple(Card(4)), dataclasses.replace(Card(1), rank=9))


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Perm(enum.Flag):
    R = 4
    W = 2
    X = 1


def enum_program():
    return (Color(1), Color["GREEN"], [c.name for c in Color], Perm.R | Perm.W,
            Perm.R in (Perm.R | Perm.X), str(Perm.W), Color.RED.value, len(Color))


def ordered_dict_program():
    d = collections.OrderedDict()
    for k in "hello world":
        d[k] = d.get(k, 0) + 1
    d.move_to_end("h")
    d.popitem(last=False)
    return list(d.items()), d == collections.OrderedDict(d), repr(d)[:30]


class Task:
    def __init__(self, priority, name):
        self.priority = priority
        self.name = name

    def __lt__(self, other):
        return (self.priority, self.name) < (other.priority, other.name)


def heapq_program():
    heap = []
    for i, name in enumerate("qwertyuiop"):
        heapq.heappush(heap, Task((i * 7) % 5, name))
    heapq.heapify(heap)
    return [heapq.heappop(heap).name for _ in range(len(heap))], [
        t.name for t in heapq.nsmallest(3, [Task(3, "c"), Task(1, "a"), Task(2, "b")])]


PROGRAMS = [json_pure_encoder, json_c_encoder_with_default, fractions_program, statistics_program, dataclasses_program,
            enum_program, ordered_dict_program, heapq_program]

#: Programs in which the interpreter calls Python code from C (special
#: methods, sort keys …): they escape without routing.  (The json encoder's
#: pure-Python path and OrderedDict, a C class, make no such call.)
CALLS_PYTHON_FROM_C = {json_c_encoder_with_default, fractions_program, statistics_program, dataclasses_program,
                       enum_program, heapq_program}


def _overdubbed(program):
    with cassette.count_escapes() as escapes:
        out = cassette.overdub(Nothing(), program)
    return out, escapes


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.__name__ for p in PROGRAMS])
def test_real_programs_do_not_escape(program):
    expected = program()
    out, escapes = _overdubbed(program)
    assert out == expected
    if PURE:
        # Without routing, protocol code the interpreter calls from C
        # escapes, and is counted.
        assert (escapes.total > 0) == (program in CALLS_PYTHON_FROM_C), escapes.report()
    else:
        assert escapes.total == 0, escapes.report()


sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "bench"))


import workloads  # noqa: E402  (bench/workloads.py; pyperformance is a test dependency)


@pytest.mark.parametrize("name", ["fib", "rosenbrock", "richards", "nbody", "spectral_norm",
                                  "float", "chaos", "deltablue"])
def test_bench_workloads_do_not_escape(name):
    work = workloads.BUILDERS[name]()
    expected = work.observe(work.func(*work.args))
    with cassette.count_escapes() as escapes:
        out = cassette.overdub(Nothing(), work.func, *work.args)
    assert work.observe(out) == expected
    if not PURE:
        assert escapes.total == 0, escapes.report()
