"""No cost that grows with what the program has made (issue 37, item 3).

A fixed workload — calls, method calls, ``isinstance`` against many classes,
a class, a closure and a generator made per call — runs overdubbed before
and after the same run has made and kept 10^5 objects, 10^4 classes and
10^4 functions.  Its cost is counted, not timed: the Python-level calls the
run makes into cassette's own modules and the builtins those call
(``sys.setprofile`` events), which is where a search over what cassette has
seen, or a table that only grows, would show.  After the history (and one
run to catch up with it: routing the new classes once is work per class,
not per operation), the workload costs what it did, within 20% (on 3.12:
354 events before and after with the Cython core, 36,287 with the
pure-Python runtime).  The Cython core's own C loops are not events; the
pure-Python runtime, which makes the same decisions in Python, shows them.
Both runtimes run these tests.
"""

import gc
import os
import sys

import cassette

PACKAGE = os.path.dirname(os.path.abspath(cassette.__file__))


class Counting(cassette.Context):
    def prehook(self, f, /, *args, **kwargs):
        self.metadata[0] += 1


class Shape:
    def __init__(self, size):
        self.size = size

    def area(self):
        return self.size * self.size


class Square(Shape):
    pass


KINDS = [Shape, Square, int, float, str, list, dict, tuple]
VALUES = [Shape(2), Square(3), 1, 2.5, "s", [1], {"a": 1}, (1,)] * 16


def workload():
    total = 0
    for value in VALUES:
        for kind in KINDS:
            if isinstance(value, kind):
                total += 1
        if isinstance(value, Shape):
            total += value.area()

    class Local(Shape):
        def area(self):
            return super().area() + 1

    def closure(k):
        return lambda x: x + k

    total += sum(closure(k)(k) for k in range(20))
    total += Local(4).area()
    return total


def history(made):
    """Make and keep 10^5 objects, 10^4 classes and 10^4 functions."""
    for i in range(10_000):
        cls = type(f"Made{i}", (Shape,), {"i": i})
        made.append(cls)
        made.append(lambda x, i=i: x + i)
        made.extend(cls(i) for _ in range(10))
    return len(made)


def cassette_events(run):
    """How many calls ``run()`` makes into cassette's modules, and into
    builtins from them (profile events)."""
    count = [0]
    package = PACKAGE

    def profile(frame, event, arg):
        if event in ("call", "c_call"):
            file = frame.f_code.co_filename
            if file.startswith(package):
                count[0] += 1

    # No collection inside the count: what the collector's callbacks do
    # depends on when one happens, not on the workload.
    enabled = gc.isenabled()
    gc.disable()
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
        if enabled:
            gc.enable()
    return count[0]


def test_the_cost_of_a_workload_does_not_grow_with_history():
    ctx = Counting(metadata=[0])
    expected = workload()

    def program():
        measured = {}
        for _ in range(3):                          # warm: caches filled
            assert workload() == expected
        measured["before"] = cassette_events(workload)
        made = []
        assert history(made) == 10_000 * 12
        assert workload() == expected               # catches up with the new classes
        measured["after"] = cassette_events(workload)
        measured["made"] = len(made)
        return measured

    measured = cassette.overdub(ctx, program)
    assert measured["made"] == 120_000
    assert measured["before"] > 0
    assert measured["after"] <= 1.2 * measured["before"], measured
