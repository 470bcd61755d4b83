"""reference §3.3: what has a body — overdub recurses into functions, lambdas,
closures, methods, classes, callable instances, partials, and the generators
and coroutines they create, wherever those are later driven."""

import asyncio
import functools
import operator

import pytest

import cassette
from overdub_support import Recorder, callees, only, record


def marker(tag):
    """A recognisable primitive call: hooks see ``(abs, (tag,))``."""
    return abs(tag)


def saw(trace, tag):
    return (abs, (tag,), {}) in trace


# -- functions -----------------------------------------------------------------

def plain_function(x):
    return marker(-1) + x


def test_python_function_body_is_overdubbed():
    out, trace = record(lambda: plain_function(1))
    assert out == 2
    assert callees(trace) == [plain_function, marker, abs, operator.add]


def test_lambda_closure_and_nested_function():
    def outer(k):
        def nested(y):
            return marker(-2) * y + k     # closure over k

        square = lambda z: marker(-3) + z * z  # noqa: E731
        return nested(2) + square(3)

    out, trace = record(outer, 10)
    assert out == outer(10) == 2 * 2 + 10 + 3 + 9
    assert saw(trace, -2) and saw(trace, -3)
    assert len(only(trace, marker)) == 2


def test_recursion_into_deep_chain_of_calls():
    def a(x):
        return b(x) + 1

    def b(x):
        return c(x) * 2

    def c(x):
        return marker(x)

    out, trace = record(a, -4)
    assert out == 9
    assert callees(trace)[:5] == [b, c, marker, abs, operator.mul]


def test_function_with_defaults_kwonly_and_varargs():
    def f(a, b=2, *rest, c, d=4, **extra):
        marker(-5)
        return (a, b, rest, c, d, extra)

    def prog():
        return f(1, c=3), f(1, 5, 6, 7, c=8, d=9, e=10)

    out, trace = record(prog)
    assert out == prog()
    assert only(trace, f) == [
        (f, (1,), {"c": 3}),
        (f, (1, 5, 6, 7), {"c": 8, "d": 9, "e": 10}),
    ]
    assert len(only(trace, marker)) == 2


def test_function_whose_defaults_change_between_calls():
    def f(x=1):
        return x

    def prog():
        return f()

    ctx = Recorder(metadata=[])
    assert cassette.overdub(ctx, prog) == 1
    f.__defaults__ = (2,)
    assert cassette.overdub(ctx, prog) == 2
    f.__code__ = (lambda x=0: x * 100).__code__
    assert cassette.overdub(ctx, prog) == 200


# -- methods -------------------------------------------------------------------------

class Thing:
    scale = 3

    def __init__(self, v):
        self.v = v

    def method(self, x):
        return marker(-6) + self.v * x

    @classmethod
    def cm(cls, x):
        return marker(-7) + cls.scale * x

    @staticmethod
    def sm(x):
        return marker(-8) + x

    @property
    def prop(self):
        return marker(-9) + self.v


def test_bound_class_and_static_methods_are_recursed_into():
    t = Thing(2)

    def prog(obj):
        return obj.method(5), Thing.cm(2), obj.cm(1), Thing.sm(4), obj.sm(6)

    out, trace = record(prog, t)
    assert out == prog(t) == (6 + 10, 7 + 6, 7 + 3, 8 + 4, 8 + 6)
    for tag in (-6, -7, -8):
        assert saw(trace, tag)
    assert len(only(trace, marker)) == 5


def test_bound_method_passed_as_a_value_is_recursed_into():
    t = Thing(3)

    def apply(f, x):
        return f(x)

    out, trace = record(apply, t.method, 2)
    assert out == apply(t.method, 2) == 6 + 6
    assert only(trace, Thing.method) == [(Thing.method, (t, 2), {})]
    assert saw(trace, -6)


def test_overdub_of_a_bound_method_directly():
    t = Thing(4)
    out, trace = record(t.method, 2)
    assert out == t.method(2) == 6 + 8
    assert saw(trace, -6)
    assert (getattr, (t, "v"), {}) in trace


def test_property_getter_runs_overdubbed():
    t = Thing(5)
    out, trace = record(lambda o: o.prop, t)
    assert out == t.prop == 9 + 5
    assert trace[0] == (getattr, (t, "prop"), {})


# -- classes ---------------------------------------------------------------------------

def test_class_with_python_init_is_recursed_into():
    out, trace = record(lambda: Thing(7))
    assert out.v == 7
    assert callees(trace) == [Thing, object.__new__, Thing.__init__, setattr]


def test_class_with_python_new():
    class Cached:
        instances = {}

        def __new__(cls, key):
            marker(-10)
            if key not in cls.instances:
                cls.instances[key] = super().__new__(cls)
            return cls.instances[key]

    a, trace = record(lambda: Cached("a"))
    b, _ = record(lambda: Cached("a"))
    assert a is b
    assert saw(trace, -10)
    assert trace[:2] == [(Cached, ("a",), {}), (Cached.__new__, (Cached, "a"), {})]


def test_metaclass_call_is_recursed_into():
    class Meta(type):
        def __call__(cls, *args, **kwargs):
            marker(-11)
            obj = super().__call__(*args, **kwargs)
            obj.tagged = True
            return obj

    class WithMeta(metaclass=Meta):
        def __init__(self, x):
            marker(-12)
            self.x = x

    out, trace = record(lambda: WithMeta(3))
    assert (out.x, out.tagged) == (3, True)
    assert trace[0] == (WithMeta, (3,), {})
    assert saw(trace, -11) and saw(trace, -12)
    assert (setattr, (out, "tagged", True), {}) in trace


def test_subclass_of_builtin_with_python_init():
    class Tagged(list):
        def __init__(self, items, label):
            super().__init__(items)
            self.label = label
            marker(-13)

    out, trace = record(lambda: Tagged([1, 2], "L"))
    assert out == [1, 2] and out.label == "L"
    assert saw(trace, -13)


def test_exception_class_with_python_init():
    class MyError(Exception):
        def __init__(self, code):
            super().__init__(f"code {code}")
            self.code = code
            marker(-14)

    def prog():
        try:
            raise MyError(5)
        except MyError as e:
            return e.code, str(e)

    out, trace = record(prog)
    assert out == (5, "code 5")
    assert saw(trace, -14)


# -- callable objects ------------------------------------------------------------------

class Adder:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return marker(-15) + self.k + x


def test_instance_with_python_call_is_recursed_into():
    add = Adder(10)

    out, trace = record(lambda: add(5))
    assert out == add(5) == 15 + 10 + 5
    assert trace[0] == (add, (5,), {})
    assert saw(trace, -15)


def test_functools_partial_is_recursed_into():
    def f(a, b, *, c):
        return marker(-16) + a * 100 + b * 10 + c

    p = functools.partial(f, 1, c=3)

    out, trace = record(lambda: p(2))
    assert out == p(2) == 16 + 100 + 20 + 3
    assert trace[0] == (p, (2,), {})
    assert trace[1] == (f, (1, 2), {"c": 3})
    assert saw(trace, -16)


def test_partial_of_a_callable_instance_and_of_a_method():
    t = Thing(2)
    p1 = functools.partial(Adder(1), 1)
    p2 = functools.partial(t.method, 3)

    out, trace = record(lambda: (p1(), p2()))
    assert out == (p1(), p2()) == (15 + 1 + 1, 6 + 2 * 3)
    assert saw(trace, -15) and saw(trace, -6)


# -- generators and coroutines -------------------------------------------------------

def gen(n):
    for i in range(n):
        marker(-20 - i)
        yield i * 10


def make_gen(n):
    return gen(n)


def test_generator_consumed_inside_the_overdub():
    out, trace = record(lambda: list(make_gen(3)))
    assert out == [0, 10, 20]
    assert saw(trace, -20) and saw(trace, -22)


def test_generator_created_under_overdub_runs_overdubbed_when_driven_outside():
    ctx = Recorder(metadata=[])
    g = cassette.overdub(ctx, make_gen, 3)
    assert ctx.metadata == [(gen, (3,), {})]       # nothing of the body ran yet

    ctx.metadata.clear()
    assert next(g) == 0                            # plain next(), outside overdub
    assert (abs, (-20,), {}) in ctx.metadata

    ctx.metadata.clear()
    assert [x for x in g] == [10, 20]              # a plain for loop
    assert (abs, (-21,), {}) in ctx.metadata and (abs, (-22,), {}) in ctx.metadata


def echo():
    received = []
    try:
        while True:
            value = yield len(received)
            marker(-30)
            received.append(value)
    except GeneratorExit:
        marker(-31)
        raise
    except KeyError as e:
        marker(-32)
        yield ("caught", e.args[0], received)


def test_generator_send_throw_and_close_outside_overdub():
    ctx = Recorder(metadata=[])
    g = cassette.overdub(ctx, echo)
    assert next(g) == 0
    assert g.send("a") == 1
    assert g.send("b") == 2
    assert (abs, (-30,), {}) in ctx.metadata
    appends = only(ctx.metadata, list.append)
    assert [args[1] for _, args, _ in appends] == ["a", "b"]

    assert g.throw(KeyError("k")) == ("caught", "k", ["a", "b"])
    assert (abs, (-32,), {}) in ctx.metadata

    g2 = cassette.overdub(ctx, echo)
    next(g2)
    ctx.metadata.clear()
    g2.close()
    assert (abs, (-31,), {}) in ctx.metadata


def test_yield_from_delegates_overdubbed():
    def inner():
        marker(-40)
        yield 1
        return "inner done"

    def outer():
        result = yield from inner()
        marker(-41)
        yield result

    ctx = Recorder(metadata=[])
    g = cassette.overdub(ctx, outer)
    assert list(g) == [1, "inner done"]
    assert (abs, (-40,), {}) in ctx.metadata and (abs, (-41,), {}) in ctx.metadata


def test_generator_expression_runs_overdubbed():
    def prog(xs):
        return sum(marker(x) for x in xs)

    out, trace = record(prog, [-1, -2])
    assert out == 3
    assert saw(trace, -1) and saw(trace, -2)


async def async_leaf(x):
    await asyncio.sleep(0)
    return marker(x)


async def async_main(n):
    total = 0
    for i in range(n):
        total = total + await async_leaf(-50 - i)
    return total


def test_coroutine_created_under_overdub_runs_overdubbed_under_asyncio_run_outside():
    ctx = Recorder(metadata=[])
    coro = cassette.overdub(ctx, async_main, 3)
    assert ctx.metadata == [] or callees(ctx.metadata) == []  # not started yet
    assert asyncio.run(coro) == 50 + 51 + 52
    assert saw(ctx.metadata, -50) and saw(ctx.metadata, -52)
    assert len(only(ctx.metadata, async_leaf)) == 3


def test_coroutine_driven_by_send_outside_overdub():
    async def simple():
        marker(-60)
        return "value"

    ctx = Recorder(metadata=[])
    coro = cassette.overdub(ctx, simple)
    try:
        coro.send(None)
    except StopIteration as stop:
        assert stop.value == "value"
    else:  # pragma: no cover
        raise AssertionError("coroutine did not finish")
    assert saw(ctx.metadata, -60)


def test_asyncio_run_inside_overdub():
    def prog():
        return asyncio.run(async_main(2))

    ctx = Recorder(metadata=[])
    assert cassette.overdub(ctx, prog) == 101
    assert saw(ctx.metadata, -50) and saw(ctx.metadata, -51)


async def agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        marker(-70 - i)
        yield i


async def consume(n):
    return [x async for x in agen(n)]


def test_async_generator_created_under_overdub_runs_overdubbed_outside():
    ctx = Recorder(metadata=[])
    ag = cassette.overdub(ctx, agen, 2)

    async def drive():
        return [x async for x in ag]

    assert asyncio.run(drive()) == [0, 1]
    assert saw(ctx.metadata, -70) and saw(ctx.metadata, -71)


def test_async_comprehension_and_async_with_inside_overdub():
    class ACM:
        async def __aenter__(self):
            marker(-80)
            return self

        async def __aexit__(self, *exc):
            marker(-81)
            return False

    async def main():
        async with ACM():
            values = await consume(2)
        return values

    ctx = Recorder(metadata=[])
    assert asyncio.run(cassette.overdub(ctx, main)) == [0, 1]
    for tag in (-70, -71, -80, -81):
        assert saw(ctx.metadata, tag), tag


# -- with blocks are recursion points even for a context without handlers -----------

def _escapes(ctx, fn, *args):
    """``(result, escapes)`` of ``overdub(ctx, fn, *args)``, counting frames
    of the program that ran un-rewritten."""
    with cassette.count_escapes() as escapes:
        out = cassette.overdub(ctx, fn, *args)
    return out, dict(escapes.frames)


class Managed:
    def __init__(self):
        self.log = []

    def __enter__(self):
        self.log.append(len(self.log))
        return self

    def __exit__(self, et, ev, tb):
        self.log.append(marker(-90))
        return False


def with_program(m):
    with m:
        marker(-91)
    return m.log


def test_with_block_methods_run_overdubbed_in_a_context_without_handlers():
    class Nothing(cassette.Context):
        pass

    out, escapes = _escapes(Nothing(), with_program, Managed())
    assert out == [0, 90]
    assert escapes == {}


def test_handler_registered_inside_a_with_block_applies_in_exit():
    class Late(cassette.Context):
        pass

    def arm():
        @cassette.execute.register(Late, marker)
        def _(ctx, f, x):
            return "replaced"
        return _

    def prog(m):
        with m:
            handler = arm()
        return m.log, handler

    log, handler = cassette.overdub(Late(), prog, Managed())
    try:
        assert log == [0, "replaced"]
    finally:
        cassette.execute.unregister(handler)


# -- calling an instance: exactly what type(obj).__call__'s descriptor gives ---

def _called_with(*args):
    marker(-20)
    return args


class _Binder:
    """A descriptor of a Python class: binds ``_called_with`` to a label."""

    def __get__(self, obj, owner=None):
        marker(-21)
        return functools.partial(_called_with, "bound", type(obj).__name__)


CALL_DESCRIPTORS = {
    "function": lambda: (lambda self, *args: _called_with(type(self).__name__, *args)),
    # sympy's S is an instance whose class sets __call__ = staticmethod(sympify)
    "staticmethod": lambda: staticmethod(_called_with),
    "classmethod": lambda: classmethod(_called_with),
    "python descriptor": _Binder,
    "partial": lambda: functools.partial(_called_with, "partial"),
    "builtin": lambda: staticmethod(max),
    "builtin, not a descriptor": lambda: max,
}


@pytest.mark.parametrize("kind", sorted(CALL_DESCRIPTORS))
def test_calling_an_instance_follows_its_call_descriptor(kind):
    Callable = type("Callable", (), {"__call__": CALL_DESCRIPTORS[kind]()})
    obj = Callable()
    expected = obj(1, 2)
    out, trace = record(lambda: obj(1, 2))
    assert out == expected
    assert trace[0] == (obj, (1, 2), {})
    runs_python = kind not in ("builtin", "builtin, not a descriptor")
    assert saw(trace, -20) is runs_python
    assert saw(trace, -21) is (kind == "python descriptor")
    assert cassette.canoverdub(Recorder(), obj, 1, 2) is runs_python


@pytest.mark.parametrize("kind", ["function", "staticmethod", "classmethod", "python descriptor"])
def test_calling_a_class_follows_its_metaclass_call_descriptor(kind):
    Meta = type("Meta", (type,), {"__call__": CALL_DESCRIPTORS[kind]()})
    Made = Meta("Made", (), {})
    expected = Made(1, 2)
    out, trace = record(lambda: Made(1, 2))
    assert out == expected
    assert trace[0] == (Made, (1, 2), {})
    assert saw(trace, -20)
