"""Instances of C types called while overdubbed — ``operator.itemgetter(k)``,
``functools.cmp_to_key(f)``, the ``Encoder`` ``json.dumps`` makes — are
primitives, and a runtime decides them by their class
(``callables.instances_are_primitives``) without asking ``engine.target``
for each new one.  What they wrap must still run overdubbed, handlers
named for one of them must still run, and a class that changes is decided
again."""

import functools
import json
import operator

import cassette
from cassette import entry


class Calls(cassette.Context):
    """Counts callees by name (metadata: a dict)."""

    def prehook(self, f, *args, **kwargs):
        name = getattr(f, "__name__", type(f).__name__)
        self.metadata[name] = self.metadata.get(name, 0) + 1


class Plain(cassette.Context):
    pass


def by_second(pairs):
    return [operator.itemgetter(1)(pair) for pair in pairs]


def test_fresh_c_callables_run_as_plainly():
    pairs = [(i, i * i) for i in range(50)]
    assert cassette.overdub(Plain(), by_second, pairs) == by_second(pairs)
    doc = {"a": [1, 2.5, None, "x"], "b": {"c": True}}
    dump = lambda: [json.dumps(doc, sort_keys=True) for _ in range(20)]  # noqa: E731
    assert cassette.overdub(Plain(), dump) == dump()


def test_what_a_c_callable_wraps_runs_overdubbed():
    def compare(a, b):
        return (a > b) - (a < b)

    def sort(xs):
        return sorted(xs, key=functools.cmp_to_key(compare))

    def default(obj):
        return sorted(obj)

    def dump(values):
        return json.dumps(values, default=default)

    ctx = Calls(metadata={})
    xs = [5, 3, 9, 1, 7]
    assert cassette.overdub(ctx, sort, xs) == sorted(xs)
    if entry.IMPLEMENTATION == "cython":
        assert ctx.metadata.get("compare", 0) >= len(xs) - 1
    ctx = Calls(metadata={})
    values = [{3, 1}, {2}]
    assert cassette.overdub(ctx, dump, values) == dump(values)
    if entry.IMPLEMENTATION == "cython":
        assert ctx.metadata.get("default") == 2


def test_a_handler_named_for_one_instance_runs():
    getter = operator.itemgetter(0)

    class Swapped(cassette.Context):
        pass

    @cassette.execute.register(Swapped, getter)
    def last_instead(ctx, f, seq):
        return seq[-1]

    try:
        def run(pairs):
            return [getter(p) for p in pairs] + [operator.itemgetter(0)(p) for p in pairs]
        pairs = [(1, 2), (3, 4)]
        assert cassette.overdub(Swapped(), run, pairs) == [2, 4, 1, 3]
    finally:
        cassette.execute.unregister(last_instead)


def test_a_class_that_changes_is_decided_again():
    class Call(functools.partial):      # a Python class with a C __call__
        pass

    def run(values):
        return [Call(max, 0)(v) for v in values]

    values = [-1, 3]
    ctx = Plain()
    assert cassette.overdub(ctx, run, values) == run(values) == [0, 3]

    def negated(self, value):
        return -value

    Call.__call__ = negated
    assert cassette.overdub(ctx, run, values) == run(values) == [1, -3]
    calls = Calls(metadata={})
    cassette.overdub(calls, run, values)
    assert calls.metadata.get("neg") == 2      # negated's body ran overdubbed


@functools.lru_cache(maxsize=None)
def _cached_square(n):
    return n * n


def squares(values):
    return [_cached_square(v) for v in values]


def test_a_module_level_cached_function_is_decided_once_and_stays_overdubbed():
    # functools' wrapper is an immutable C class hashed by identity, and the
    # module's global of its name: stable, so its target is kept.
    from cassette import callables
    assert callables.is_stable(_cached_square)
    values = [3, 1, 3, 2, 1, 3]
    _cached_square.cache_clear()
    ctx = Calls(metadata={})
    assert cassette.overdub(ctx, squares, values) == [9, 1, 9, 4, 1, 9]
    if entry.IMPLEMENTATION == "cython":
        # The wrapper's six calls, and the wrapped function's once per value
        # missing from the cache (the wrapper calls it: an operation too),
        # its body overdubbed.
        assert ctx.metadata.get("_cached_square") == len(values) + 3
        assert ctx.metadata.get("mul") == 3
    else:       # no routing: what the wrapper calls escapes
        assert ctx.metadata.get("_cached_square") == len(values)
    assert _cached_square.cache_info().hits == 3
    _cached_square.cache_clear()
    ctx = Calls(metadata={})
    assert cassette.overdub(ctx, squares, [5, 5]) == [25, 25]
    if entry.IMPLEMENTATION == "cython":
        assert ctx.metadata.get("mul") == 1


class _CountingAppends(cassette.Context):
    pass


@cassette.prehook.register(_CountingAppends, list.append)
def _count_append(ctx, f, *args, **kwargs):
    ctx.metadata.append(args[1])


def test_stored_bound_builtins():
    """``ap = xs.append`` then ``ap(x)`` in a loop, as programs keep bound
    builtins: unhooked, the bound builtin runs with its arguments routed;
    hooked through its class's descriptor, the hook sees ``list.append``
    with the list first, every time."""
    def program(n):
        xs, seen = [], {}
        ap, get = xs.append, seen.get
        for i in range(n):
            ap(i * i)
            seen[i % 3] = get(i % 3, 0) + 1
        ap(sorted)                  # a builtin function as an argument
        return xs[:-1], seen, xs[-1] is sorted

    assert cassette.overdub(Plain(), program, 50) == program(50)
    log = []
    assert cassette.overdub(_CountingAppends(metadata=log), program, 20) == program(20)
    assert log == [i * i for i in range(20)] + [sorted]


def _class_method_calls():
    import xxsubtype
    args, keywords = (1, 2, 3), {"abc": 123}
    return [xxsubtype.spamlist.classmeth(*args, **keywords),
            xxsubtype.spamlist().classmeth(*args, **keywords),
            xxsubtype.spamlist.classmeth(4)]


def _static_method_calls():
    import xxsubtype
    args, keywords = (1, 2, 3), {"abc": 123}
    return [xxsubtype.spamlist.staticmeth(*args, **keywords),
            xxsubtype.spamlist().staticmeth(*args, **keywords),
            xxsubtype.spamlist.staticmeth(4)]


def test_equal_builtins_called_differently_keep_their_own_targets():
    """A class method and a static method of one C class that share their C
    function (``xxsubtype.spamlist``'s ``classmeth`` and ``staticmeth``,
    which return the self they get, their arguments and keywords) compare
    equal as builtins, yet the interpreter passes the class to one and
    nothing to the other: whichever a runtime resolves first, each call
    gets what it gets plainly (CPython's test_descr found this) — keywords
    included: none when the call passed none, which such a function tells
    from an empty dictionary."""
    import xxsubtype
    assert xxsubtype.spamlist.classmeth == xxsubtype.spamlist.staticmeth
    for order in ((_class_method_calls, _static_method_calls),
                  (_static_method_calls, _class_method_calls)):
        for ctx in (Plain(), Calls(metadata={}), cassette.enabletagging(Plain(), order[0])):
            for program in order:
                assert cassette.overdub(ctx, program) == program()
    assert _static_method_calls()[0][0] is None
    assert _class_method_calls()[0][0] is xxsubtype.spamlist
