"""Contexts that only watch — a prehook and a posthook for any callee and
arguments, no ``execute`` or ``fallback`` (``dispatch.Plan.watching``) — are
a tracer's or a profiler's shape, and the core runs their operations
without selecting anything, with the hooks' arguments laid out in C
(``Protocol.run_vector``).  Every rule of the protocol must hold there as on
the generic path: these tests compare the two, by running the same program
under a watching context and under one whose hooks are chosen by argument
types (``Vararg(object)``: the same hooks, always chosen, through the
generic path), and check the counts by hand."""

import os
import subprocess
import sys
import textwrap
import threading

import pytest

import cassette
from cassette import ANY, Vararg, entry


class Box:
    def __init__(self, value):
        self.value = value

    def __add__(self, other):
        return Box(self.value + other.value)


def program(n):
    total = 0
    xs = [1, 2, 3]
    for i in range(n):
        total += i * 2
        if i not in xs:
            total -= 1
        xs[0] = i
        total = total + len(xs) + abs(-i)
    return total, (Box(1) + Box(2)).value


def _name(f):
    return getattr(f, "__name__", repr(f))


class Watching(cassette.Context):
    """Logs every operation before and after (metadata: a list)."""

    def prehook(self, f, *args, **kwargs):
        self.metadata.append(("pre", _name(f), args, tuple(sorted(kwargs.items()))))

    def posthook(self, output, f, /, *args, **kwargs):
        self.metadata.append(("post", _name(f), output, args))


class Selected(cassette.Context):
    """The same hooks, registered for any positional arguments: chosen by
    argument types, on the generic path."""


@cassette.prehook.register(Selected, ANY, Vararg(object))
def _selected_prehook(ctx, f, *args, **kwargs):
    ctx.metadata.append(("pre", _name(f), args, tuple(sorted(kwargs.items()))))


@cassette.posthook.register(Selected, ANY, Vararg(object))
def _selected_posthook(ctx, output, f, *args, **kwargs):
    ctx.metadata.append(("post", _name(f), output, args))


def test_the_plans_are_what_the_tests_compare():
    from cassette import dispatch
    assert dispatch.plan(Watching, abs).watching
    assert not dispatch.plan(Selected, abs).watching


def logged(ctx_type, f, *args, **kwargs):
    """``f(*args, **kwargs)`` overdubbed and its log (see ``comparable``)."""
    ctx = ctx_type(metadata=[])
    return cassette.overdub(ctx, f, *args, **kwargs), comparable(ctx.metadata)


def test_a_watching_context_sees_what_the_generic_path_sees():
    out, log = logged(Watching, program, 40)
    assert out == program(40)
    assert (out, log) == logged(Selected, program, 40)
    pre = [entry for entry in log if entry[0] == "pre"]
    post = [entry for entry in log if entry[0] == "post"]
    # Counted by hand from program's body.
    names = [entry[1] for entry in pre]
    assert names.count("mul") == 40
    assert names.count("abs") == 40 and names.count("len") == 40
    assert names.count("setitem") == 40
    # The loop's last `next` ends it by raising: no posthook runs for it.
    assert len(pre) == len(post) + 1 and \
        [e[1] for e in pre].count("next") == [e[1] for e in post].count("next") + 1
    # `i not in xs` is `contains` negated: the hooks see contains' result.
    xs, expected = [1, 2, 3], []
    for i in range(40):
        expected.append(i in xs)
        xs[0] = i
    assert [entry[2] for entry in post if entry[1] == "contains"] == expected
    assert ("post", "abs", 7, (-7,)) in post


def test_hooks_see_operands_in_source_order_for_stores_and_swaps():
    def f(xs, d):
        xs[1] = "v"
        d["k"] = 3
        return 2 * len(xs), "k" in d
    out, log = logged(Watching, f, [0, 1], {})
    assert out == f([0, 1], {})
    # (The log holds the list itself, as it is after the run.)
    assert ("pre", "setitem", ([0, "v"], 1, "v"), ()) in log
    assert ("post", "setitem", None, ({"k": 3}, "k", 3)) in log
    assert (out, log) == logged(Selected, f, [0, 1], {})


_PLAIN = (int, float, str, bool, type(None), list, dict, range)


def comparable(log):
    """``log`` with every object that is not plain data by its type's name:
    an iterator, a ``Box`` or a lambda made during one run is another object
    in the next."""
    def plain(value):
        if isinstance(value, tuple):
            return tuple(plain(v) for v in value)
        if isinstance(value, _PLAIN):
            return value
        if callable(value) and hasattr(value, "__name__"):
            return value.__name__
        return type(value).__name__
    return [plain(entry) for entry in log]


def test_keyword_arguments_take_the_generic_path_with_the_same_result():
    def f(n):
        return sorted(range(n), key=lambda v: -v, reverse=False)[0] + int("10", base=2)
    out, log = logged(Watching, f, 5)
    assert out == f(5) == 6
    assert ("pre", "sorted", (range(5),), (("key", "<lambda>"), ("reverse", False))) in log
    assert ("post", "int", 2, ("10",)) in log
    called_by_sorted = [e for e in log if e[:2] == ("pre", "<lambda>")]
    if entry.IMPLEMENTATION == "cython":
        assert called_by_sorted == [("pre", "<lambda>", (v,), ()) for v in range(5)]
    else:       # no routing: the sort key escapes (module doc of escapes)
        assert called_by_sorted == []
    assert (out, log) == logged(Selected, f, 5)


def test_a_prehook_that_raises_stops_the_operation_and_leaves_nothing_behind():
    class Boom(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            if f is abs:
                raise KeyError("from the hook")

    ran = []

    def g(x):
        ran.append(1)
        return abs(x) + 1

    with pytest.raises(KeyError, match="from the hook"):
        cassette.overdub(Boom(), g, -3)
    assert ran == [1]
    # The next run, with a context whose hooks do not raise, is unaffected.
    out, log = logged(Watching, g, -3)
    assert out == 4 and ("post", "abs", 3, (-3,)) in log


def test_a_posthook_that_raises_after_the_operation_ran():
    seen = []

    class LatePost(cassette.Context):
        def posthook(self, output, f, /, *args, **kwargs):
            seen.append(_name(f))
            if f is abs:
                raise ValueError("after abs")

    def g(x):
        return abs(x) * 2

    with pytest.raises(ValueError, match="after abs"):
        cassette.overdub(LatePost(), g, -3)
    assert "abs" in seen and "mul" not in seen


def test_a_hook_registered_or_removed_while_a_site_is_hot():
    class Hot(cassette.Context):
        pass

    def loop(n):
        total = 0
        for i in range(n):
            total += abs(-i)
        return total

    ctx = Hot(metadata=[])
    assert cassette.overdub(ctx, loop, 50) == loop(50)      # the sites are hot, unhooked
    pre = cassette.prehook.register(Hot)(lambda ctx, f, *a, **k: ctx.metadata.append(_name(f)))
    try:
        assert cassette.overdub(ctx, loop, 50) == loop(50)
        assert ctx.metadata.count("abs") == 50
        post = cassette.posthook.register(Hot)(
            lambda ctx, out, f, *a, **k: ctx.metadata.append(("out", out)))
        del ctx.metadata[:]
        assert cassette.overdub(ctx, loop, 3) == loop(3)
        assert [m for m in ctx.metadata if isinstance(m, tuple)].count(("out", 2)) >= 1
        cassette.posthook.unregister(post)
    finally:
        cassette.prehook.unregister(pre)
    del ctx.metadata[:]
    assert cassette.overdub(ctx, loop, 50) == loop(50)
    assert ctx.metadata == []


def test_a_registration_inside_an_operation_that_reaches_its_own_site_again():
    """``a + b`` runs a Python ``__add__`` that registers a handler (the plan
    of every site changes) and then adds again: the same ``add`` site of
    the runtime replaces its protocol while the outer operation is still
    running it.  The core used to free that protocol under the running
    operation and read it afterwards (a crash, seen with
    ``PYTHONMALLOC=debug``); it must hold it.  Run in a fresh interpreter
    with the debug allocator, so that a use after free shows."""
    script = textwrap.dedent("""
        import cassette

        class Watching(cassette.Context):
            def prehook(self, f, *args, **kwargs):
                self.metadata.append(("pre", getattr(f, "__name__", "?")))

            def posthook(self, output, f, *args, **kwargs):
                self.metadata.append(("post", getattr(f, "__name__", "?"), output))

        class Other(cassette.Context):
            pass

        registered = []

        class Registering:
            def __add__(self, other):
                if not registered:
                    registered.append(cassette.prehook.register(Other, len)(
                        lambda ctx, f, *a, **k: None))
                one = len(registered)
                return one + 2

        def program():
            return Registering() + Registering()

        ctx = Watching(metadata=[])
        results = []
        for _ in range(3):
            results.append(cassette.overdub(ctx, program))
            for handler in registered:
                cassette.prehook.unregister(handler)
            registered.clear()
        print(results, ctx.metadata.count(("post", "add", 3)))
    """)
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", script],
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONMALLOC": "debug"})
    assert done.returncode == 0, done.stderr[-2000:]
    # Each run: the inner 1 + 2 (under the Cython core, which routes
    # __add__; the pure-Python runtime runs it unhooked) and the outer add.
    inner_adds = 0 if entry.IMPLEMENTATION == "python" else 1
    assert done.stdout.split() == ["[3,", "3,", "3]", str(3 * (1 + inner_adds))]


def test_a_weak_reference_callback_that_drops_its_own_reference():
    """The interpreter calls a weak reference's callback with a reference it
    does not own; importlib's ``_WeakValueDictionary`` (its module locks:
    every ``import``) has callbacks that delete the dictionary entry holding
    that weak reference, its last owner.  A Python function holds its
    arguments in its frame; the core's watching path, which hands the
    same arguments to the prehook, the body and then the posthook, used to
    hand the posthook a freed object (a crash on 3.11 and 3.12).  Run in a
    fresh interpreter, with an ``import`` of a module not yet imported as
    well."""
    script = textwrap.dedent("""
        import sys, _weakref
        import cassette

        class Watching(cassette.Context):
            def prehook(self, f, *args, **kwargs):
                self.metadata.append("pre")

            def posthook(self, output, f, *args, **kwargs):
                self.metadata.append("post")

        class Item(list):
            __slots__ = ("__weakref__",)

        entries = {}

        class KeyedRef(_weakref.ref):
            __slots__ = ("key",)

            def __new__(cls, ob, key):
                self = super().__new__(cls, ob, cls.remove)
                self.key = key
                return self

            def __init__(self, ob, key):
                super().__init__(ob, self.remove)

            @staticmethod
            def remove(wr):
                del entries[wr.key]       # the last reference to wr

        def program():
            item = Item()
            entries[1] = KeyedRef(item, 1)
            del item                      # the callback runs here
            import colorsys               # module locks: importlib's own
            return len(entries), colorsys.rgb_to_hsv(1.0, 0.0, 0.0)

        assert "colorsys" not in sys.modules
        ctx = Watching(metadata=[])
        print(cassette.overdub(ctx, program), "post" in ctx.metadata)
    """)
    # Both allocators: the debug one fills freed memory, so a freed object
    # taken again shows with the default one (its count drops to 0 twice).
    for allocator in ("malloc", "debug"):
        done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", script],
                              capture_output=True, text=True,
                              env={**os.environ, "PYTHONMALLOC": allocator,
                                   "CASSETTE_NO_DISK_CACHE": "1"})
        assert done.returncode == 0, (allocator, done.stderr[-2000:])
        assert done.stdout.split() == ["(0,", "(0.0,", "1.0,", "1.0))", "True"]


def test_a_hook_that_reenters_overdub_and_nested_contexts():
    inner_logs = []

    class Outer(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            if f is abs:
                inner = Watching(metadata=[])
                cassette.overdub(inner, lambda v: v * 3, args[0])
                inner_logs.append(inner.metadata)
            self.metadata.append(_name(f))

    def g(n):
        return sum(abs(-i) for i in range(n))

    ctx = Outer(metadata=[])
    assert cassette.overdub(ctx, g, 4) == g(4)
    assert ctx.metadata.count("abs") == 4
    assert [log[0][:3] for log in inner_logs] == [("pre", "mul", (-i, 3)) for i in range(4)]

    # A watching context inside another: the outer one sees the inner's hooks.
    outer = Watching(metadata=[])
    out = cassette.overdub(outer, lambda: logged(Watching, program, 5))
    assert out == logged(Watching, program, 5)
    assert any(entry[1] == "_selected_prehook" or entry[1] == "prehook" for entry in outer.metadata)


def test_threads_each_see_their_own_operations():
    results = {}

    def worker(k):
        results[k] = logged(Watching, program, 10 + k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        assert results[k] == logged(Selected, program, 10 + k)


def test_a_function_with_a_watched_call_and_its_body_recursion():
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    out, log = logged(Watching, fib, 10)
    assert out == 55
    calls = [entry for entry in log if entry[0] == "pre" and entry[1] == "fib"]
    assert len(calls) == 176            # fib(10) makes 177 calls, the first not from inside
    assert (out, log) == logged(Selected, fib, 10)
