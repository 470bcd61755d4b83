"""Classes instantiated at call sites through their ``__init__`` as a
*constructor* (``rewrite.constructor_template``): the object is made and
the constructor called as its method, in the caller's evaluation loop.
Nothing of that may show: each case runs hot (many calls in one run, one
context for several runs), plainly and overdubbed, and the results —
values, errors and their messages, frames, tracebacks — are compared.
The cases that cannot use a constructor (a first argument rebound or held
in a cell, a generator ``__init__``, a class changed while hot) must fall
back unseen too."""

import sys
import threading
import traceback

import pytest

import cassette


class Plain(cassette.Context):
    pass


def outcome(f, *args):
    try:
        return "value", f(*args)
    except Exception as exc:        # noqa: BLE001 - compared, not handled
        return "raised", type(exc), str(exc)


def hot(run, *args, runs=3):
    """``run(*args)``'s outcome plainly, and overdubbed ``runs`` times with
    one context (the first runs warm the sites up): all must be equal."""
    plain = outcome(run, *args)
    ctx = Plain()
    overdubbed = [outcome(lambda *a: cassette.overdub(ctx, run, *a), *args)
                  for _ in range(runs)]
    return plain, overdubbed


def assert_hot_equal(run, *args):
    plain, overdubbed = hot(run, *args)
    assert overdubbed == [plain] * len(overdubbed)
    return plain


class Point:
    def __init__(self, x, y=0, *rest, scale=1, **extra):
        self.x = x * scale
        self.y = y
        self.rest = rest
        self.extra = extra


def test_arguments_defaults_keywords_and_star_arguments():
    def run():
        made = [Point(i) for i in range(20)]
        made += [Point(1, 2, 3, 4, scale=5, tag="t") for _ in range(20)]
        made.append(Point(*[7, 8], **{"scale": 2}))
        return [(p.x, p.y, p.rest, p.extra) for p in made]
    assert assert_hot_equal(run)[0] == "value"


def test_argument_errors_keep_their_messages():
    def run(args, kwargs):
        out = []
        for _ in range(10):
            try:
                Point(*args, **kwargs)
            except TypeError as exc:
                out.append(str(exc))
        return out
    for args, kwargs in [((), {}), ((1,), {"x": 2}), ((1, 2), {"x": 3}),
                         ((), {"scale": 3})]:
        plain = assert_hot_equal(run, args, kwargs)
        assert plain[1] and "Point.__init__()" in plain[1][0]


class Returns:
    def __init__(self, value):
        if value == "early":
            return
        if value is not None:
            return value
        self.done = True


def test_returns_of_none_and_of_anything_else():
    def run(value):
        return [type(Returns(value)).__name__ for _ in range(10)]
    assert assert_hot_equal(run, None) == ("value", ["Returns"] * 10)
    assert assert_hot_equal(run, "early") == ("value", ["Returns"] * 10)
    assert assert_hot_equal(run, 3) == (
        "raised", TypeError, "__init__() should return None, not 'int'")


class Rebinds:
    def __init__(self, other):
        if other is not None:
            self = other        # noqa: PLW0642 - the case under test
        self.seen = True


class Captured:
    def __init__(self):
        self.read = lambda: self


class GeneratorInit:
    def __init__(self):
        yield


def test_inits_that_cannot_be_constructors_fall_back():
    def run():
        spare = Rebinds(None)
        made = [Rebinds(spare) for _ in range(10)]
        captured = [Captured() for _ in range(10)]
        return (all(type(m) is Rebinds and not hasattr(m, "seen") for m in made),
                spare.seen, all(c.read() is c for c in captured))
    assert assert_hot_equal(run) == ("value", (True, True, True))

    def generator():
        return [GeneratorInit() for _ in range(3)]
    assert assert_hot_equal(generator) == (
        "raised", TypeError, "__init__() should return None, not 'generator'")


@pytest.mark.skipif(cassette.entry.IMPLEMENTATION == "python",
                    reason="the pure-Python runtime calls __init__ through frames of its own, "
                           "which sys._getframe sees (docs/overdub.md, the pure-Python runtime)")
def test_frames_inside_init_see_the_caller():
    class Probe:
        def __init__(self):
            frame = sys._getframe(1)
            self.caller = frame.f_code.co_name
            self.line = frame.f_lineno - frame.f_code.co_firstlineno

    def maker():
        return [(p.caller, p.line) for p in [Probe() for _ in range(10)]]
    plain = assert_hot_equal(maker)
    assert plain[1][0][0] in ("maker", "<listcomp>")


class Fails:
    def __init__(self, n):
        if n == 9:
            raise ValueError(f"bad {n}")
        self.n = n


def test_a_failing_init_has_the_plain_traceback():
    def run():
        try:
            for n in range(10):
                Fails(n)
        except ValueError as exc:
            return str(exc), [entry.name for entry in traceback.extract_tb(exc.__traceback__)]
    assert assert_hot_equal(run) == ("value", ("bad 9", ["run", "__init__"]))


def test_a_class_changed_while_hot():
    class Changing:
        def __init__(self, x):
            self.x = x

    def run(n):
        return [Changing(i).x for i in range(n)]

    def doubled(self, x):
        self.x = 2 * x

    def tripled(self, x, k=3):
        self.x = k * x

    ctx = Plain()
    assert cassette.overdub(ctx, run, 5) == run(5) == [0, 1, 2, 3, 4]
    Changing.__init__ = doubled                         # the class changes
    assert cassette.overdub(ctx, run, 5) == run(5) == [0, 2, 4, 6, 8]
    doubled.__code__ = tripled.__code__                 # the function's code
    doubled.__defaults__ = (3,)
    assert cassette.overdub(ctx, run, 3) == run(3) == [0, 3, 6]
    doubled.__defaults__ = (10,)                        # its defaults
    assert cassette.overdub(ctx, run, 3) == run(3) == [0, 10, 20]

    def late_new(cls, x):
        obj = object.__new__(cls)
        obj.by_new = True
        return obj
    Changing.__new__ = late_new                         # a __new__ of its own
    assert cassette.overdub(ctx, lambda: Changing(1).by_new) is True


def test_a_subclass_of_a_builtin_and_a_metaclass_keep_their_own_paths():
    class Listing(list):
        def __init__(self, n):
            super().__init__(range(n))

    class Meta(type):
        def __call__(cls, *args):
            return ("by the metaclass", args)

    class Made(metaclass=Meta):
        def __init__(self, x):
            raise AssertionError("not called")

    def run():
        return [list(Listing(3)) for _ in range(5)], [Made(i) for i in range(3)]
    assert assert_hot_equal(run)[0] == "value"


def test_hooks_registered_while_hot_see_new_and_init():
    class Counting(cassette.Context):
        pass

    class Thing:
        def __init__(self, v):
            self.v = v

    def run():
        return sum(Thing(i).v for i in range(10))

    ctx = Counting(metadata=[])
    assert cassette.overdub(ctx, run) == run() == 45

    @cassette.prehook.register(Counting, Thing.__init__)
    def seen(ctx, f, obj, v):
        ctx.metadata.append(v)
    try:
        assert cassette.overdub(ctx, run) == 45
        assert ctx.metadata == list(range(10))
    finally:
        cassette.prehook.unregister(seen)
    ctx.metadata.clear()
    assert cassette.overdub(ctx, run) == 45
    assert ctx.metadata == []


def test_a_posthook_on_the_class_sees_the_object():
    class Seeing(cassette.Context):
        def posthook(self, output, f, *args, **kwargs):
            if f is Thing:
                self.metadata.append(output.v)

    class Thing:
        def __init__(self, v):
            self.v = v

    def run():
        return [Thing(i).v for i in range(5)]
    ctx = Seeing(metadata=[])
    assert cassette.overdub(ctx, run) == run()
    assert ctx.metadata == list(range(5))


def test_threads_make_objects_at_the_same_sites():
    class Cell:
        def __init__(self, v):
            self.v = v

    def run(start):
        return sum(Cell(i).v for i in range(start, start + 2000))

    ctx = Plain()
    results = {}

    def worker(k):
        results[k] = cassette.overdub(ctx, run, k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {k: run(k) for k in range(4)}


@pytest.mark.parametrize("depth", [50, 200])
def test_recursive_construction(depth):
    class Node:
        def __init__(self, n):
            self.child = Node(n - 1) if n else None

    def run(n):
        node, count = Node(n), 0
        while node is not None:
            node, count = node.child, count + 1
        return count
    assert assert_hot_equal(run, depth) == ("value", depth + 1)
