"""Soak: many overdubs in a row leak nothing.

Each call overdubs ``program``, which makes a class, a closure and a
generator and uses them, under three contexts: one that defines nothing
(a new instance per call, as ``overdub(Noop(), f)`` is written), one that
counts every operation with a prehook (one instance for the whole soak), and
a tagging one that carries derivatives like examples/ad.py (a new
``enabletagging`` context per call, as ``ad.derivative`` makes one).  Every
call's result is compared with the plain run's.

How many calls: ``CASSETTE_SOAK_CALLS`` per context (default
``DEFAULT_CALLS``, 2 * 10**4).  ``tools/dev.py test`` sets it to 10**5 in
the runs it names in ``SOAK_FULL_RUNS`` (3.14's Cython run): 10**5 calls of
the three contexts take minutes, too long for each of the test command's
eleven runs (the debug-interpreter run, which also checks the total
reference count, makes the default count).

What is measured, after a warm-up of a fifth of the calls (the rewrite
caches, the kept runtimes, the dispatch and tagging caches fill there), ten
times, evenly spaced over the rest of the calls, each time after
``gc.collect()``; the medians of the first five and of the last five
measures are compared (they are, on average, half the measured calls apart):

* memory: ``sys.getallocatedblocks()`` — every live object and every other
  block of CPython's small-object allocator, counted exactly.  Unlike the
  process's RSS it does not depend on the allocator keeping freed arenas,
  on fragmentation or on other threads, and unlike ``tracemalloc`` it costs
  nothing (the whole soak runs on it).  What it does not count, allocations
  over 512 bytes, belongs to objects it does count: a cache that grows
  grows by entries.  Bound: growth under 1% of the blocks allocated
  (about 2 * 10**5 in a test process) per 10**4 calls; a leak of one
  object every five calls crosses it.
* on an interpreter built with Py_DEBUG (``sys.gettotalrefcount``), the
  total of all reference counts does not grow: the second half's least
  measure exceeds the first half's by at most ``REFCOUNT_TOLERANCE``
  (2500) plus one reference per 1000 calls between them.  Why 2500: at a
  measure, up to about twenty of the classes the program made recently
  (each with its functions, cells and dict, some 30 references) may still
  be alive, dropped by cassette's caches only at a collection of the older
  generations, so single measures move by a few hundred references either
  way; and the total steps once by some 1,500 references, up or down,
  somewhere in the measured calls, flat within each half around it (seen
  on 3.14d: +1610 and -1362 between the halves' least measures): the
  sawtooth of a bounded table pruned only when it fills, whose period is
  longer than the measured calls (a runtime's table of survivors — weak
  references to callees that outlived a collection — is pruned of dead
  entries at 1024, about 2,000 references; not yet confirmed as the
  one).  A
  leak raises the floor for good and keeps raising it: one reference
  leaked every 15 calls (every 3 at the default count) exceeds the bound.
  The debug interpreter also checks, as the calls run, that no reference
  count goes negative, and its assertions.

Cost, in CPU seconds per 10**4 calls of the three contexts together
(noop + counting + tagging): 3.12 Cython core 4.9 (1.4 + 1.3 + 2.2), 3.12
pure-Python runtime 14.5 (3.5 + 3.6 + 7.5), 3.14d Cython core 15 (4.0 +
5.0 + 6.1).  So the default count costs 10 to 30 s a run, and 10**5 calls
about 50 s (3.13, Cython) and 150 s (3.14d).
"""

import functools
import gc
import operator
import os
import statistics
import sys
import time

import pytest

import cassette
from cassette import NoMetaData, OverdubInstead, enabletagging, metadata, tag, untag

DEFAULT_CALLS = 20_000
CALLS = int(os.environ.get("CASSETTE_SOAK_CALLS", DEFAULT_CALLS))
WARMUP_FRACTION = 5           # the first CALLS // 5 calls fill the caches
SAMPLES = 10                  # measures taken after the warm-up, evenly spaced
GROWTH_WINDOW = 10_000        # growth is bounded per this many calls
GROWTH_BOUND = 0.01           # ... to this fraction of the allocated blocks
REFCOUNT_TOLERANCE = 2500     # + 1 per REFCOUNT_CALLS_PER_REFERENCE calls
REFCOUNT_CALLS_PER_REFERENCE = 1000


def program(x):
    """Makes a class, a closure and a generator, and uses them: a number
    (5x + 3 for x a number)."""

    class Point:
        def __init__(self, value):
            self.value = value

        def scaled(self, factor):
            return Point(self.value * factor)

    def shifted(offset):
        return x + offset

    def shifts(n):
        for i in range(n):
            yield shifted(i)

    total = Point(x).scaled(2.0).value
    for value in shifts(3):
        total = total + value
    return total


class Noop(cassette.Context):
    pass


class Counting(cassette.Context):
    def prehook(self, f, /, *args, **kwargs):
        self.metadata[0] += 1


class Dual(cassette.Context):
    """Forward-mode derivatives of + and * (examples/ad.py's scheme):
    numbers carry their tangent as float metadata."""

    @classmethod
    def metadatatype(cls, T):
        return float if issubclass(T, (int, float)) and T is not bool else None


def _register(operation, rule):
    def propagate(ctx, f, a, b):
        da, db = metadata(a, ctx), metadata(b, ctx)
        if da is NoMetaData and db is NoMetaData:
            return OverdubInstead
        x, y = untag(a, ctx), untag(b, ctx)
        da = 0.0 if da is NoMetaData else da
        db = 0.0 if db is NoMetaData else db
        return tag(f(x, y), ctx, rule(x, y, da, db))

    for argtypes in ((cassette.Tagged, object), (object, cassette.Tagged)):
        cassette.execute.register(Dual, operation, *argtypes)(propagate)


_register(operator.add, lambda x, y, dx, dy: dx + dy)
_register(operator.mul, lambda x, y, dx, dy: dx * y + x * dy)


def noop_call(x):
    return cassette.overdub(Noop(), program, x)


COUNTING = Counting(metadata=[0])


def counting_call(x):
    before = COUNTING.metadata[0]
    out = cassette.overdub(COUNTING, program, x)
    return out, COUNTING.metadata[0] - before


@functools.cache
def counted_per_call():
    """The operations one call of program makes, counted once (the soak
    checks that every call counts as many)."""
    return counting_call(1.0)[1]


def counting_expected(x):
    return program(x), counted_per_call()


def dual_call(x):
    ctx = enabletagging(Dual(), program)
    out = cassette.overdub(ctx, program, tag(x, ctx, 1.0))
    return untag(out, ctx), metadata(out, ctx)


def dual_expected(x):
    return program(x), 5.0         # d/dx (5x + 3)


CONTEXTS = {
    "noop": (noop_call, program),
    "counting": (counting_call, counting_expected),
    "tagging": (dual_call, dual_expected),
}


def measure():
    # The first collection's callbacks drop cassette's entries for what it
    # found unreachable (lifetimes); the second frees what they held.
    gc.collect()
    gc.collect()
    refcount = sys.gettotalrefcount() if hasattr(sys, "gettotalrefcount") else None
    return sys.getallocatedblocks(), refcount


def soak(call, expected_of, calls):
    """Make ``calls`` calls, checking each one's result; return the
    measures (blocks, refcount) taken after each tenth of the calls that
    follow the warm-up, and how many calls that is."""
    warmup = calls // WARMUP_FRACTION
    step = max(1, (calls - warmup) // SAMPLES)
    marks = {warmup + step * k for k in range(1, SAMPLES + 1)}
    samples = []
    for i in range(1, warmup + step * SAMPLES + 1):
        x = float(i % 97)
        out = call(x)
        if out != expected_of(x):
            pytest.fail("call %d of %d: %r overdubbed, %r plainly" % (i, calls, out, expected_of(x)))
        if i in marks:
            samples.append(measure())
    return samples, step * SAMPLES


def halves(values):
    """The medians of the first and the second half of ``values``."""
    half = len(values) // 2
    return statistics.median(values[:half]), statistics.median(values[half:])


def check_bounded(samples, measured):
    """Fail unless the measures (blocks, refcount) ``soak`` returned, over
    ``measured`` calls, show memory bounded and references flat."""
    blocks = [b for b, _ in samples]
    refcounts = [r for _, r in samples]
    # The halves' medians are measured, on average, half the calls apart.
    first, second = halves(blocks)
    growth_per_window = (second - first) * GROWTH_WINDOW / (measured / 2)
    assert growth_per_window < GROWTH_BOUND * first, (
        "allocated blocks grow by %d per %d calls" % (growth_per_window, GROWTH_WINDOW), blocks)
    if refcounts[0] is not None:
        half = len(refcounts) // 2
        first, second = min(refcounts[:half]), min(refcounts[half:])
        tolerance = REFCOUNT_TOLERANCE + (measured // 2) // REFCOUNT_CALLS_PER_REFERENCE
        assert second - first <= tolerance, (
            "sys.gettotalrefcount() moved by %d (tolerance %d)" % (second - first, tolerance),
            refcounts)


@pytest.mark.parametrize("name", list(CONTEXTS))
def test_many_overdubs_leak_nothing(name):
    assert counted_per_call() > 10
    call, expected_of = CONTEXTS[name]
    started, cpu_started = time.perf_counter(), time.process_time()
    samples, measured = soak(call, expected_of, CALLS)
    print("\n%s: %d calls in %.1f s (%.1f s CPU); after each tenth of the last %d: blocks %s%s"
          % (name, CALLS, time.perf_counter() - started, time.process_time() - cpu_started,
             measured, [b for b, _ in samples],
             "" if samples[0][1] is None else ", totalrefcount %s" % [r for _, r in samples]))
    check_bounded(samples, measured)


def test_the_soak_sees_a_leak_five_times_its_bound():
    # Every 4 calls a tuple of objects is kept: its blocks (the tuple and its
    # items) grow the halves' medians, 3200 calls apart, by five times the
    # bound on blocks, whatever the process already holds (the suite's
    # imports: over a million blocks in a full run), and its references by
    # at least three times the references' tolerance.
    size = max(4, 5 * sys.getallocatedblocks() * 4 // int(GROWTH_BOUND ** -1 * GROWTH_WINDOW) + 1)
    calls, kept = [0], []

    def leaky(x):
        calls[0] += 1
        if calls[0] % 4 == 0:
            kept.append(tuple(object() for _ in range(size - 1)))
        return program(x)

    samples, measured = soak(leaky, program, 8000)
    assert len(kept) == 2000
    with pytest.raises(AssertionError, match="allocated blocks grow by"):
        check_bounded(samples, measured)
    if samples[0][1] is not None:
        with pytest.raises(AssertionError, match=r"gettotalrefcount\(\) moved"):
            check_bounded([(samples[0][0], r) for _, r in samples], measured)
