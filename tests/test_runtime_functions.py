"""Functions a program makes while overdubbed — closures, lambdas, generator
expressions, nested ``def``, generator functions, partials of them — are
new objects of code seen before.  A runtime calls them through their code's
recipe (``engine.function_recipe``, ``engine.partial_recipe``) instead of
deciding about each one.  Every rule of the protocol must hold for them as
for any function: these tests make many functions of one code, so that the
recipes are made and used, and change what the recipes depend on while they
are in use."""

import functools
import gc
import threading
import types
import weakref

import pytest

import cassette
from cassette import entry


class Nothing(cassette.Context):
    pass


class Calls(cassette.Context):
    """Counts the calls of every callee by name (metadata: a dict)."""

    def prehook(self, f, *args, **kwargs):
        name = getattr(f, "__name__", None)
        self.metadata[name] = self.metadata.get(name, 0) + 1


class Watched(cassette.Context):
    """No handler in its class body: the tests register and unregister."""


def makers(n):
    """Makes each kind of function at run time, ``n`` times, and calls it."""
    total = 0
    for i in range(n):
        total += sum(x * i for x in range(3))                       # genexpr
        def plus(y, z=i):                                            # closure
            return y + z + i
        total += plus(1) + plus(1, z=2)
        total += sorted([3, 1, 2], key=lambda v: -v * (i + 1))[0]   # lambda, called by C
        def gen():                                                  # generator function
            yield i
            yield i + 1
        total += sum(gen())
        total += functools.partial(plus, 2)() + functools.partial(plus, z=3)(4)
        def plain_nested(a):                                        # no closure
            return a * 2
        total += plain_nested(i)
    return total


def expected_calls(n):
    """Hand-counted calls of the functions ``makers(n)`` makes."""
    return {"<genexpr>": n, "plus": 4 * n, "<lambda>": 3 * n, "gen": n,
            "plain_nested": n}


def test_functions_made_at_run_time_give_the_plain_results():
    for n in (1, 2, 3, 50):
        assert cassette.overdub(Nothing(), makers, n) == makers(n)


def test_every_function_made_at_run_time_runs_rewritten():
    ctx = Nothing()
    cassette.overdub(ctx, makers, 5)
    with cassette.count_escapes() as escapes:
        assert cassette.overdub(ctx, makers, 40) == makers(40)
    if entry.IMPLEMENTATION == "cython":
        assert escapes.total == 0, escapes.report()
    else:       # no routing: the sort key escapes (module doc of escapes)
        assert all(where.endswith("<lambda>") for where in escapes.frames), escapes.report()


def test_hooks_see_every_call_of_a_function_made_at_run_time():
    for n in (1, 3, 60):
        counts = {}
        assert cassette.overdub(Calls(metadata=counts), makers, n) == makers(n)
        for name, count in expected_calls(n).items():
            if name == "<lambda>" and entry.IMPLEMENTATION != "cython":
                continue        # called by sorted, un-routed in pure Python
            assert counts.get(name) == count, (name, counts)


def hot_loop(n, at, action):
    """Makes and calls a closure ``n`` times; ``action()`` runs before
    iteration ``at``."""
    total = 0
    for i in range(n):
        if i == at:
            action()
        def step(y):
            return y + i
        total += step(1)
    return total


def test_a_hook_registered_while_a_site_is_hot_sees_the_calls_after():
    seen = []

    def hook(ctx, f, *args, **kwargs):
        if getattr(f, "__name__", None) == "step":
            seen.append(args[0])

    def register():
        cassette.prehook.register(Watched)(hook)

    try:
        assert cassette.overdub(Watched(), hot_loop, 30, 20, register) == hot_loop(30, 20, int)
        assert len(seen) == 10 and seen == [1] * 10
    finally:
        cassette.prehook.unregister(hook)


def test_a_hook_removed_while_a_site_is_hot_sees_no_call_after():
    seen = []

    def hook(ctx, f, *args, **kwargs):
        if getattr(f, "__name__", None) == "step":
            seen.append(args[0])

    cassette.prehook.register(Watched)(hook)
    try:
        assert (cassette.overdub(Watched(), hot_loop, 30, 12, lambda: cassette.prehook.unregister(hook))
                == hot_loop(30, 12, int))
        assert len(seen) == 12
    finally:
        try:
            cassette.prehook.unregister(hook)
        except ValueError:
            pass


def test_a_handler_naming_one_function_made_at_run_time_sees_only_it():
    seen, registered = [], []

    def program(n, register):
        total = 0
        chosen = None
        for i in range(n):
            def step(y):
                return y + i
            if i == n // 2 and register:
                chosen = step

                @cassette.prehook.register(Watched, step)
                def only_this(ctx, f, *args):
                    seen.append((f, args))
                registered.append(only_this)
            total += step(1)
        if chosen is not None:
            total += chosen(5) + chosen(6)
        return total, chosen

    try:
        result, chosen = cassette.overdub(Watched(), program, 20, True)
        assert result == program(20, False)[0] + (5 + 19) + (6 + 19)   # `i` ends at 19
        assert seen == [(chosen, (1,)), (chosen, (5,)), (chosen, (6,))]
    finally:
        for handler in registered:
            cassette.prehook.unregister(handler)


def test_a_hook_that_raises_leaves_the_runtime_whole():
    class Raises(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            if getattr(f, "__name__", None) == "step" and args == (1,) and self.metadata:
                self.metadata.pop()
                raise LookupError("from the hook")

    ctx = Raises(metadata=[True])
    with pytest.raises(LookupError, match="from the hook"):
        cassette.overdub(ctx, hot_loop, 40, -1, int)
    # The same context, and a fresh one, run on as if nothing happened.
    assert cassette.overdub(ctx, hot_loop, 40, -1, int) == hot_loop(40, -1, int)
    assert cassette.overdub(Raises(metadata=[]), makers, 7) == makers(7)


def keywords(n):
    total = 0
    for i in range(n):
        def f(a, /, b=1, *args, c, d=i, **kwargs):
            return a + b + sum(args) + c + d + sum(kwargs.values())
        total += f(1, c=2) + f(1, 2, 3, 4, c=5, d=6, e=7) + f(*[1, 2], **{"c": 3, "x": 4})
        total += functools.partial(f, 10, c=1)(d=2) + functools.partial(f, c=0)(1, 2, 3)
    return total


def test_keyword_arguments_of_functions_made_at_run_time():
    assert cassette.overdub(Nothing(), keywords, 30) == keywords(30)
    counts = {}
    assert cassette.overdub(Calls(metadata=counts), keywords, 30) == keywords(30)
    assert counts["f"] == 5 * 30


class Outer(Calls):
    pass


def test_nested_contexts_both_see_functions_made_at_run_time():
    n = 25
    outer, inner = {}, {}

    def run_inner():
        return cassette.overdub(Calls(metadata=inner), makers, n)

    assert cassette.overdub(Outer(metadata=outer), run_inner) == makers(n)
    for name, count in expected_calls(n).items():
        if name == "<lambda>" and entry.IMPLEMENTATION != "cython":
            continue
        assert inner.get(name) == count, (name, inner)
        assert outer.get(name) == count, (name, outer)


def test_a_hook_that_reenters_overdub():
    inner_counts = []

    class Reenters(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            if getattr(f, "__name__", None) == "plus" and len(inner_counts) < 3:
                counts = {}
                assert cassette.overdub(Calls(metadata=counts), makers, 4) == makers(4)
                inner_counts.append(counts)

    assert cassette.overdub(Reenters(), makers, 30) == makers(30)
    assert len(inner_counts) == 3
    for counts in inner_counts:
        assert counts["plus"] == expected_calls(4)["plus"]


def test_threads_making_functions_of_the_same_code():
    results, errors = {}, []
    shared = Nothing()

    def work(k):
        try:
            counts = {}
            results[k] = (cassette.overdub(Calls(metadata=counts), makers, 40 + k),
                          cassette.overdub(shared, makers, 30 + k), counts)
        except BaseException as error:      # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for k, (counted, plain, counts) in results.items():
        assert counted == makers(40 + k) and plain == makers(30 + k)
        assert counts["plus"] == expected_calls(40 + k)["plus"]


def cells(n):
    count = 0

    def bump():
        nonlocal count
        count += 1
        return count

    out = [bump() for _ in range(n)]
    count = 100
    out.append(bump())
    late = [lambda: i for i in range(4)]
    early = [lambda i=i: i for i in range(4)]
    out += [f() for f in late] + [f() for f in early]
    makers_of = []
    for i in range(5):
        def make(j=i):
            def get():
                return j * i
            return get
        makers_of.append(make())
    i = 10                    # the cell every `get` reads changes
    out += [get() for get in makers_of]
    return out


def test_closures_whose_cells_change():
    assert cassette.overdub(Nothing(), cells, 20) == cells(20)
    assert cassette.overdub(Calls(metadata={}), cells, 20) == cells(20)


OTHER_GLOBALS = {"offset": 1000}
offset = 1


def reassigned(n):
    total = 0
    for i in range(n):
        def f(y, z=1):
            return y + z + offset
        def g(y, z=1):
            return y * z - offset
        total += f(1)
        f.__defaults__ = (i,)
        total += f(1)
        f.__code__ = g.__code__
        total += f(2)
        f.__kwdefaults__ = None
        f.__name__ = "renamed"
        total += f(3, 4)
        other = types.FunctionType(g.__code__, OTHER_GLOBALS)
        total += other(5, 6)        # same code, other globals
    return total


def test_functions_whose_code_defaults_or_globals_differ():
    assert cassette.overdub(Nothing(), reassigned, 30) == reassigned(30)
    assert cassette.overdub(Calls(metadata={}), reassigned, 30) == reassigned(30)


def partials(n):
    total = 0
    for i in range(n):
        plus = functools.partial(int, base=2)
        total += plus("101") + plus("11", base=3)
        inner = functools.partial(max, i)
        outer = functools.partial(inner, 3)
        total += outer(1) + outer(i, 2 * i)
        total += sum(map(functools.partial(pow, 2), range(4)))
    return total


def test_partials_of_builtins_nested_partials_and_partials_called_by_c():
    assert cassette.overdub(Nothing(), partials, 30) == partials(30)
    counts = {}
    assert cassette.overdub(Calls(metadata=counts), partials, 30) == partials(30)
    assert counts["int"] == 2 * 30 and counts["max"] == 2 * 30


def suspended(n):
    """Returns the last of ``n`` generator expressions, advanced once."""
    made = [(x * 2 for x in range(k + 2)) for k in range(n)]
    last = made[-1]
    next(last)
    return last


@pytest.mark.skipif(entry.IMPLEMENTATION != "cython", reason="adoption is the core's")
def test_a_suspended_generator_made_at_run_time_keeps_its_context():
    class Doubles(Calls):
        pass

    mine = Doubles(metadata={})
    generator = cassette.overdub(mine, suspended, 6)
    runtime = mine._runtime
    other = Doubles(metadata={})
    other_generator = cassette.overdub(other, suspended, 4)
    assert other._runtime is not runtime and mine._runtime is runtime
    assert list(generator) == [2 * x for x in range(1, 7)]
    del generator
    # Done, the first runtime is free again; the other one is not.
    third = Doubles(metadata={})
    assert cassette.overdub(third, makers, 3) == makers(3)
    assert third._runtime is runtime and other._runtime is not runtime
    assert list(other_generator) == [2 * x for x in range(1, 5)]
    # Each generator's every multiplication went to its own context.
    assert mine.metadata["mul"] == 7 and other.metadata["mul"] == 5


# -- the entry's decisions (engine._decisions) ------------------------------------

def _entered(x):
    return x + 1


def _entered_instead(x):
    return x * 10


def test_an_entry_of_the_same_function_again_sees_every_change():
    """``overdub(ctx, f)`` of one function again and again reuses its
    decision; a new code object, a new handler and a new context class each
    make a new one, and the decision keeps the function alive no longer."""
    ctx = Nothing()
    assert cassette.overdub(ctx, _entered, 1) == 2 == cassette.overdub(ctx, _entered, 1)
    saved = _entered.__code__
    try:
        _entered.__code__ = _entered_instead.__code__
        assert cassette.overdub(ctx, _entered, 1) == 10
    finally:
        _entered.__code__ = saved
    assert cassette.overdub(ctx, _entered, 1) == 2

    class Replacing(cassette.Context):
        pass

    assert cassette.overdub(Replacing(), _entered, 1) == 2
    cassette.execute.register(Replacing, _entered)(lambda ctx, f, x: -x)
    assert cassette.overdub(Replacing(), lambda x: _entered(x), 1) == -1
    assert cassette.overdub(Nothing(), _entered, 1) == 2

    def made():
        return 7

    assert cassette.overdub(ctx, made) == 7
    gone = weakref.ref(made)
    del made
    gc.collect()
    assert gone() is None
