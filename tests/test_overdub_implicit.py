"""reference §3.3 coverage: Python code the interpreter calls by itself — special
methods behind operators and builtins, properties and descriptors, class
creation hooks, callbacks of C functions — runs overdubbed.

Every case below is a small program whose implicitly called Python code
calls ``seen(tag)``.  Each runs under two contexts:

* ``Observer`` has a prehook for ``seen`` only: no operator site is
  rewritten, so the interpreter makes the implicit call itself, from C;
* ``Recorder`` has a catch-all prehook: operator sites are rewritten and
  the implicit operation (``operator.add`` …) is an operation too, seen
  before the body it leads to.

With the Cython core, in both, the program returns what it returns plainly,
the prehook sees ``seen(tag)`` (the operations inside the implicit body),
and :func:`cassette.count_escapes` counts no escape.  The pure-Python
runtime cannot intercept a call the interpreter makes from C (it has no
routing, see ``docs/overdub.md``): for the cases marked ``from_c`` it still
returns the plain result, and the escape counter names the escaping body —
the tests check exactly that, so a change in either direction is noticed.
"""

import asyncio
import collections
import functools
import heapq
import itertools
import operator
import sys

import pytest

import cassette
from cassette.entry import IMPLEMENTATION

PURE = IMPLEMENTATION == "python"


def seen(tag):
    return tag


class Observer(cassette.Context):
    pass


@cassette.prehook.register(Observer, seen)
def _observe(ctx, f, tag):
    ctx.metadata.append(("seen", tag))


class Recorder(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        if f is seen:
            self.metadata.append(("seen", args[0]))
        else:
            self.metadata.append(("op", f))


# -- the classes the programs use ---------------------------------------------

class Num:
    def __init__(self, v):
        self.v = v

    def __add__(self, other):
        seen("add")
        return Num(self.v + getattr(other, "v", other))

    def __radd__(self, other):
        seen("radd")
        return Num(other + self.v)

    def __lt__(self, other):
        seen("lt")
        return self.v < other.v

    def __eq__(self, other):
        seen("eq")
        return isinstance(other, Num) and self.v == other.v

    def __hash__(self):
        seen("hash")
        return hash(self.v)

    def __neg__(self):
        seen("neg")
        return Num(-self.v)

    def __len__(self):
        seen("len")
        return self.v

    def __bool__(self):
        seen("bool")
        return self.v != 0

    def __index__(self):
        seen("index")
        return self.v

    def __int__(self):
        seen("int")
        return self.v

    def __float__(self):
        seen("float")
        return float(self.v)

    def __str__(self):
        seen("str")
        return f"Num<{self.v}>"

    def __repr__(self):
        seen("repr")
        return f"Num({self.v})"

    def __format__(self, spec):
        seen("format")
        return format(self.v, spec)


class SubNum(Num):
    def __radd__(self, other):
        seen("sub-radd")
        return SubNum(getattr(other, "v", other) + self.v)


class Accumulator:
    def __init__(self):
        self.items = []

    def __iadd__(self, other):
        seen("iadd")
        self.items.append(other)
        return self


class Bag:
    def __init__(self, *items):
        self.items = list(items)

    def __contains__(self, item):
        seen("contains")
        return item in self.items

    def __getitem__(self, i):
        seen("getitem")
        return self.items[i]

    def __setitem__(self, i, value):
        seen("setitem")
        self.items[i] = value

    def __delitem__(self, i):
        seen("delitem")
        del self.items[i]

    def __iter__(self):
        seen("iter")
        return BagIterator(self.items)


class BagIterator:
    def __init__(self, items):
        self.items = list(items)

    def __iter__(self):
        return self

    def __next__(self):
        seen("next")
        if not self.items:
            raise StopIteration
        return self.items.pop(0)


class OldStyleSequence:
    """``in`` and ``for`` through ``__getitem__`` alone."""

    def __getitem__(self, i):
        seen("old-getitem")
        if i >= 3:
            raise IndexError(i)
        return i * 10


class Point:
    def __init__(self, x):
        self._x = x

    @property
    def x(self):
        seen("property-get")
        return self._x

    @x.setter
    def x(self, value):
        seen("property-set")
        self._x = value

    @x.deleter
    def x(self):
        seen("property-del")
        del self._x


class Dynamic:
    def __getattr__(self, name):
        seen("getattr")
        return name.upper()

    def __setattr__(self, name, value):
        seen("setattr")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        seen("delattr")
        object.__delattr__(self, name)


class Logged:
    def __getattribute__(self, name):
        seen("getattribute")
        return object.__getattribute__(self, name)


class Doubler:
    """A data descriptor of a Python class."""

    def __set_name__(self, owner, name):
        seen("set_name")
        self.name = "_" + name

    def __get__(self, obj, objtype=None):
        seen("descriptor-get")
        return getattr(obj, self.name) * 2

    def __set__(self, obj, value):
        seen("descriptor-set")
        setattr(obj, self.name, value)


class Box:
    def __enter__(self):
        seen("enter")
        return self

    def __exit__(self, *exc):
        seen("exit")
        return False


class AsyncBox:
    async def __aenter__(self):
        seen("aenter")
        return self

    async def __aexit__(self, *exc):
        seen("aexit")
        return False


class Plain:
    def describe(self):
        seen("super-method")
        return "base"


class Base:
    def __init_subclass__(cls, **kwargs):
        seen("init_subclass")
        super().__init_subclass__(**kwargs)


class Meta(type):
    def __new__(mcs, name, bases, namespace):
        seen("meta-new")
        return super().__new__(mcs, name, bases, namespace)

    def __call__(cls, *args):
        seen("meta-call")
        return super().__call__(*args)


def decorate(f):
    seen("decorator")
    return f


def key_of(n):
    seen("key")
    return -n


def double(n):
    seen("callback")
    return 2 * n


def is_odd(n):
    seen("callback")
    return n % 2 == 1


def plus(a, b):
    seen("callback")
    return a + b


@functools.lru_cache(maxsize=None)
def cached_square(n):
    seen("cached")
    return n * n


def produce(n):
    seen("generator")
    yield from range(n)


# -- the programs ----------------------------------------------------------------

def p_binary():
    return (Num(1) + Num(2)).v


def p_reflected():
    return (1 + Num(2)).v


def p_reflected_subclass_first():
    return type(Num(1) + SubNum(2)).__name__


def p_inplace():
    acc = Accumulator()
    acc += 1
    acc += 2
    return acc.items


def p_inplace_falls_back_to_binary():
    n = Num(1)
    n += 5
    return n.v


def p_compare():
    return Num(1) < Num(2), Num(3) == Num(3)


def p_unary():
    return (-Num(4)).v


def p_contains():
    return 2 in Bag(1, 2), 5 in OldStyleSequence() or 10 in OldStyleSequence()


def p_subscripts():
    bag = Bag(1, 2, 3)
    bag[0] = bag[1]
    del bag[2]
    return bag.items


def p_iteration():
    return [x for x in Bag(1, 2)], list(OldStyleSequence())


def p_property():
    p = Point(1)
    p.x = p.x + 1
    value = p.x
    del p.x
    return value


def p_getattr_setattr_delattr():
    d = Dynamic()
    d.name = "n"
    missing = d.missing
    del d.name
    return missing


def p_getattribute():
    obj = Logged()
    obj.v = 1
    return obj.v


def p_descriptor_and_set_name():
    class Holder:
        value = Doubler()

    h = Holder()
    h.value = 21
    return h.value


def p_with():
    with Box() as b:
        return type(b).__name__


def p_async_with():
    async def main():
        async with AsyncBox():
            return "inside"

    coroutine = main()
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value


def p_builtins():
    n = Num(3)
    return (len(n), bool(n), hash(n) == hash(3), [10, 20, 30, 40][n],
            int(n), float(n), str(n), repr(n), format(n, "03d"))


def p_fstring():
    n = Num(7)
    return f"{n!s} {n!r} {n:>4}"


def p_truth_test():
    return "yes" if Num(1) else "no"


def p_super():
    class Child(Plain):
        def describe(self):
            return "child+" + super().describe()

    return Child().describe()


def p_class_creation():
    class Made(Base, metaclass=Meta):
        pass

    return type(Made()).__name__


def p_decorator():
    @decorate
    def inner():
        return 1

    return inner()


def p_map_filter():
    return list(map(double, [1, 2, 3])), list(filter(is_odd, [1, 2, 3]))


def p_sorted_min_max():
    xs = [3, 1, 2]
    return sorted(xs, key=key_of), min(xs, key=key_of), max(xs, key=key_of)


def p_sorted_by_lt():
    return [n.v for n in sorted([Num(3), Num(1), Num(2)])]


def p_list_sort():
    xs = [3, 1, 2]
    xs.sort(key=key_of)
    return xs


def p_reduce():
    return functools.reduce(plus, [1, 2, 3, 4])


def p_itertools():
    return (list(itertools.accumulate([1, 2, 3], plus)),
            list(itertools.starmap(plus, [(1, 2), (3, 4)])),
            [k for k, _ in itertools.groupby([1, 1, 2], key=key_of)],
            list(itertools.filterfalse(is_odd, [1, 2, 3])),
            list(itertools.takewhile(is_odd, [1, 3, 4])),
            list(itertools.dropwhile(is_odd, [1, 2, 3])))


def p_consumers_of_generators():
    return (sum(produce(4)), any(produce(3)), all(produce(0)),
            ",".join(str(x) for x in produce(3)),
            dict((x, x) for x in produce(2)), set(produce(2)),
            list(produce(2)), tuple(produce(2)))


def p_lru_cache():
    cached_square.cache_clear()
    return cached_square(4), cached_square(4)


def p_exec_eval():
    namespace = {"seen": seen}
    exec("def f(x):\n    seen('exec')\n    return x + 1\nresult = f(1)", namespace)
    return namespace["result"], eval("seen('eval') or 5", {"seen": seen})


def p_heapq():
    heap = []
    for v in (3, 1, 2):
        heapq.heappush(heap, Num(v))
    return [heapq.heappop(heap).v for _ in range(3)]


def p_dict_keys():
    d = {Num(1): "one"}
    return d[Num(1)]


# (program, tags it must see, the implicit call is made from C)
CASES = [
    (p_binary, {"add"}, True),
    (p_reflected, {"radd"}, True),
    (p_reflected_subclass_first, {"sub-radd"}, True),
    (p_inplace, {"iadd"}, True),
    (p_inplace_falls_back_to_binary, {"add"}, True),
    (p_compare, {"lt", "eq"}, True),
    (p_unary, {"neg"}, True),
    (p_contains, {"contains", "old-getitem"}, True),
    (p_subscripts, {"getitem", "setitem", "delitem"}, True),
    (p_iteration, {"iter", "next", "old-getitem"}, True),
    (p_property, {"property-get", "property-set", "property-del"}, True),
    (p_getattr_setattr_delattr, {"getattr", "setattr", "delattr"}, True),
    (p_getattribute, {"getattribute"}, True),
    (p_descriptor_and_set_name, {"set_name", "descriptor-get", "descriptor-set"}, True),
    (p_with, {"enter", "exit"}, False),
    (p_async_with, {"aenter", "aexit"}, False),
    (p_builtins, {"len", "bool", "hash", "index", "int", "float", "str", "repr", "format"},
     True),
    (p_fstring, {"str", "repr", "format"}, True),
    (p_truth_test, {"bool"}, True),
    (p_super, {"super-method"}, False),
    (p_class_creation, {"init_subclass", "meta-new", "meta-call"}, True),
    (p_decorator, {"decorator"}, False),
    (p_map_filter, {"callback"}, True),
    (p_sorted_min_max, {"key"}, True),
    (p_sorted_by_lt, {"lt"}, True),
    (p_list_sort, {"key"}, True),
    (p_reduce, {"callback"}, True),
    (p_itertools, {"callback", "key"}, True),
    (p_consumers_of_generators, {"generator"}, False),
    (p_lru_cache, {"cached"}, True),
    (p_exec_eval, {"exec", "eval"}, False),
    (p_heapq, {"lt"}, True),
    (p_dict_keys, {"hash", "eq"}, True),
]


def _run(ctx_type, program):
    ctx = ctx_type(metadata=[])
    with cassette.count_escapes() as escapes:
        out = cassette.overdub(ctx, program)
    tags = {tag for kind, tag in ctx.metadata if kind == "seen"}
    return out, tags, escapes, ctx.metadata


@pytest.mark.parametrize("ctx_type", [Observer, Recorder], ids=["observer", "recorder"])
@pytest.mark.parametrize("program,tags,from_c", CASES, ids=[c[0].__name__[2:] for c in CASES])
def test_implicit_code_runs_overdubbed(ctx_type, program, tags, from_c):
    expected = program()
    out, observed, escapes, _trace = _run(ctx_type, program)
    assert out == expected
    if PURE and from_c:
        # Without routing, what the interpreter calls from C may escape;
        # whatever is not seen must then be counted.
        missing = tags - observed
        assert (escapes.total > 0) == bool(missing), (missing, escapes.report())
    else:
        assert tags <= observed, f"not seen: {tags - observed}"
        assert escapes.total == 0, escapes.report()


def _position(trace, entry):
    return next(i for i, e in enumerate(trace) if e == entry)


@pytest.mark.parametrize("program,operation,tag", [
    (p_binary, operator.add, "add"),
    (p_compare, operator.lt, "lt"),
    (p_subscripts, operator.getitem, "getitem"),
    (p_property, getattr, "property-get"),
    (p_contains, operator.contains, "contains"),
    (p_sorted_min_max, sorted, "key"),
    (p_heapq, heapq.heappush, "lt"),
])
def test_the_implicit_operation_comes_before_the_body_it_leads_to(program, operation, tag):
    out, observed, escapes, trace = _run(Recorder, program)
    assert out == program()
    if PURE:
        assert tag not in observed
        return
    assert _position(trace, ("op", operation)) < _position(trace, ("seen", tag))


def test_canoverdub_an_operation_follows_its_operands():
    ctx = Observer(metadata=[])
    assert cassette.canoverdub(ctx, operator.add, Num(1), Num(2))
    assert cassette.canoverdub(ctx, operator.add, 1, Num(2))          # __radd__
    assert not cassette.canoverdub(ctx, operator.add, 1, 2)
    assert cassette.canoverdub(ctx, getattr, Point(1), "x")            # a property
    assert not cassette.canoverdub(ctx, getattr, Point(1), "_x")
    assert cassette.canoverdub(ctx, operator.getitem, Bag(1), 0)
    assert not cassette.canoverdub(ctx, operator.getitem, [1], 0)


def test_a_fallback_does_not_replace_a_python_implementation():
    class Fallback(cassette.Context):
        pass

    replaced = []

    @cassette.fallback.register(Fallback, operator.add)
    def _(ctx, f, *args):
        replaced.append(args)
        return "replaced"

    def program(a, b):
        return (Num(a) + Num(b)).v, a + b

    try:
        with cassette.count_escapes() as escapes:
            out = cassette.overdub(Fallback(), program, 1, 2)
    finally:
        cassette.fallback.unregister(_)
    # Num + Num ran Num.__add__ (the fallback never saw Num operands); the
    # int additions, inside it and in the program, are primitives.  The
    # pure runtime runs Num.__add__ too, but cannot overdub it (an escape).
    if PURE:
        assert out == (3, "replaced") and replaced == [(1, 2)]
        assert escapes.total == 1
    else:
        assert out == ("replaced", "replaced") and replaced == [(1, 2), (1, 2)]
        assert escapes.total == 0


def test_routing_leaves_code_outside_overdub_alone():
    """A routed function called by the interpreter outside any overdub runs
    as always: no hook fires and nothing escapes."""
    ctx = Recorder(metadata=[])
    cassette.overdub(ctx, p_binary)          # Num is routed by now
    ctx.metadata.clear()
    with cassette.count_escapes() as escapes:
        assert (Num(1) + Num(2)).v == 3
        assert sorted([3, 1, 2], key=key_of) == [3, 2, 1]
    assert ctx.metadata == []
    assert escapes.total == 0


def test_hooks_run_plainly_even_when_routed():
    """A handler that is itself a routed function (a method of a class, its
    dunders) is the handler's code, not the program's: it is not overdubbed."""
    calls = []

    class Counting(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            calls.append(f)
            repr(Num(0))      # a routed __repr__ called by C code of the hook

    cassette.overdub(Counting(), p_binary)
    assert seen not in calls[:1]
    assert calls.count(seen) == (0 if PURE else 1)


def test_warm_sites_do_not_inline_python_protocol_code():
    """The interpreter specializes a hot site and may then run a Python
    ``__getitem__`` or property getter without calling it (3.11 inlines
    ``__getitem__``, 3.12+ also property getters): routed protocol code
    must never be inlined.  Counted by operations, not by the escape
    counter, whose profile function turns specialization off on 3.11."""
    def program():
        bag, point, total = Bag(*range(2000)), Point(3), 0
        for i in range(2000):
            total += bag[i] + point.x
        return total

    expected = program()
    ctx = Observer(metadata=[])
    assert cassette.overdub(ctx, program) == expected
    counts = collections.Counter(tag for _kind, tag in ctx.metadata)
    if PURE:
        assert counts == {}
    else:
        assert counts == {"getitem": 2000, "property-get": 2000}


class HoldsTheAttribute:
    def __init__(self):
        self.freshly_named_attribute = 1


def sum_of_attributes(make, count):
    total = 0
    for item in [make() for _ in range(count)]:
        total += item.freshly_named_attribute
    return total


def test_a_property_named_after_its_loads_were_rewritten_is_seen_on_every_load():
    """Where the interpreter's property specialization skips routing
    (3.14+), the core pins the loads of names some routed property has;
    code bound before a property took the name has those loads pinned
    when it does — also the code of a frame that is running — so every
    load reaches the getter, however warm the site."""
    ctx = Observer(metadata=[])
    assert cassette.overdub(ctx, sum_of_attributes, HoldsTheAttribute, 2000) == 2000

    class Late:
        @property
        def freshly_named_attribute(self):
            seen("late-get")
            return 2

    expected = sum_of_attributes(Late, 2000)
    assert expected == 4000
    ctx = Observer(metadata=[])
    assert cassette.overdub(ctx, sum_of_attributes, Late, 2000) == expected
    counts = collections.Counter(tag for _kind, tag in ctx.metadata)
    assert counts == ({} if PURE else {"late-get": 2000})


def test_a_module_body_sees_the_getters_of_the_classes_it_defines():
    """A module body is running when the classes it defines are made and
    routed: its loads of their properties' names are pinned then, however
    warm the site is already."""
    source = (
        "class Box:\n"
        "    @property\n"
        "    def body_level_property(self):\n"
        "        seen('body-get')\n"
        "        return 3\n"
        "box = Box()\n"
        "total = 0\n"
        "for _ in range(2000):\n"
        "    total += box.body_level_property\n")
    code = compile(source, "<module body>", "exec")
    plain = {"seen": seen}
    exec(code, plain)
    dubbed = {"seen": seen}
    ctx = Observer(metadata=[])
    cassette.overdub(ctx, exec, code, dubbed)
    assert dubbed["total"] == plain["total"] == 6000
    counts = collections.Counter(tag for _kind, tag in ctx.metadata)
    assert counts == ({} if PURE else {"body-get": 2000})


def test_routing_changes_no_object_the_program_can_observe():
    add, code = Num.__add__, Num.__add__.__code__
    getter = Point.__dict__["x"].fget

    def program():
        m = map(double, [1, 2])
        made = m.__reduce__()[1][0]
        return (made is double, list(m), Num.__add__ is add, Num.__add__.__code__ is code,
                Point.__dict__["x"].fget is getter, (Num(1) + Num(1)).v, Point(5).x)

    expected = program()
    assert expected == (True, [2, 4], True, True, True, 2, 5)
    assert cassette.overdub(Recorder(metadata=[]), program) == expected
    assert cassette.overdub(Observer(metadata=[]), program) == expected
    assert Num.__add__ is add and Num.__add__.__code__ is code


def test_plain_code_keeps_its_recursion_depth_after_routing():
    """Routing a class must not cost code that is not overdubbed its
    recursion depth: a plain method recursing with keyword arguments is
    still inlined by the interpreter (3.12 would otherwise spend C stack on
    every level and stop short of depth 900)."""
    class Tower:
        def down(self, n=0):
            return 0 if n == 0 else 1 + self.down(n=n - 1)

        def __repr__(self):
            return "Tower()"

    assert cassette.overdub(Observer(metadata=[]), lambda: (Tower().down(n=3), repr(Tower()))) \
        == (3, "Tower()")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 6000))
    try:
        assert Tower().down(n=4000) == 4000
    finally:
        sys.setrecursionlimit(limit)


REPLACED_HELPER = '''
import cassette
from cassette import engine, routing

class Nothing(cassette.Context):
    pass

def leaf(x):
    return x + 1

def program(x):
    return leaf(x) * 2

original = engine.target
calls = []

def replacement(runtime, f):
    calls.append(f)
    return original(runtime, f)

routing.route_argument(replacement)     # as any function a primitive is handed
engine.target = replacement
print(cassette.overdub(Nothing(), program, 3), leaf in calls)
'''


def test_a_routed_function_standing_in_for_cassettes_own_is_not_redirected(tmp_path):
    """Cassette's own work calls its helpers with the running frame as the
    barrier: a helper a program replaced with a routed function of its own
    runs as called.  Redirected to the runtime asking for it, it would
    resolve itself forever (a C stack overflow: this crashed)."""
    import subprocess
    script = tmp_path / "replaced_helper.py"
    script.write_text(REPLACED_HELPER)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(program_plain(3)), "True"]


def program_plain(x):
    return (x + 1) * 2


def _through_wrappers(depth):
    def double(x):
        seen("double")
        return 2 * x

    f = double
    for _ in range(depth):
        f = f.__call__          # each a method-wrapper of the one before
    return list(map(f, [1, 2, 3]))


@pytest.mark.parametrize("depth", [1, 3])
def test_a_function_behind_method_wrappers_runs_overdubbed(depth):
    """``map`` calling ``f.__call__.__call__…`` calls ``f``: the core routes
    what a chain of method-wrappers ends at."""
    assert _through_wrappers(depth) == [2, 4, 6]
    ctx = Observer(metadata=[])
    assert cassette.overdub(ctx, _through_wrappers, depth) == [2, 4, 6]
    assert ctx.metadata.count(("seen", "double")) == (0 if PURE else 3)


def _deepen(depth):
    f = lambda: None  # noqa: E731
    for _ in range(depth):
        f = f.__call__
    return type(f).__name__, f()


def test_a_chain_of_method_wrappers_deepened_in_a_loop():
    """test_descr's test_wrapper_segfault deepens ``f = f.__call__`` a million
    times; each step is an operation whose argument is the chain so far.
    Routing looks through a bounded part of it (it looked through all of
    it, recursively, and took minutes under a hook)."""
    expected = _deepen(30000)
    for ctx in (Observer(metadata=[]), Recorder(metadata=[])):
        assert cassette.overdub(ctx, _deepen, 30000) == expected


def _class_without_version_tags():
    """A class the interpreter keeps no version tag for: 3.12+ give a class
    none after 1000 changes (MAX_VERSIONS_PER_CLASS), 3.11 none to a class
    nobody read an attribute of."""
    klass = type("Changed", (), {f"method_{i}": (lambda self: None) for i in range(50)})
    if sys.version_info >= (3, 12):
        for i in range(1100):
            klass.counter = i
            klass.method_0              # a look-up: a new tag, each time
    return klass


def _instances_checked(objects, klass):
    return sum(isinstance(o, klass) for o in objects)


def _lengths(objects):
    return sum(len(o) for o in objects)


@pytest.mark.skipif(PURE, reason="the pure-Python runtime does not route")
def test_a_class_without_a_version_tag_is_routed_once_per_change(monkeypatch):
    """Routing notes the classes it routed by version tag.  A class without
    one was routed again at each primitive call handed one of its
    instances (pyparsing's ParserElement, changed by each of its tests:
    the suite ran 63 times slower than plainly on 3.14); a change of the
    class is still seen, and what it adds routed."""
    from cassette import routing
    klass = _class_without_version_tags()
    routed = []
    route_class = routing.route_class
    monkeypatch.setattr(routing, "route_class",
                        lambda cls: (routed.append(cls), route_class(cls))[1])
    objects = [klass() for _ in range(40)]
    assert cassette.overdub(Observer(metadata=[]), _instances_checked, objects, klass) == 40
    assert routed.count(klass) <= 2, len(routed)

    klass.__len__ = lambda self: seen(3)
    with cassette.count_escapes() as escapes:
        ctx = Observer(metadata=[])
        assert cassette.overdub(ctx, _lengths, objects) == 120
    assert escapes.total == 0, escapes.report()
    assert ctx.metadata == [("seen", 3)] * 40
    assert routed.count(klass) <= 4, len(routed)
