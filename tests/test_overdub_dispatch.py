"""reference §4 through overdub: contextual dispatch decides what runs for each
operation of an overdubbed program."""

import math
import operator

import pytest

import cassette


@pytest.fixture
def registrations():
    """Handlers registered by a test, unregistered afterwards."""
    made = []

    def register(hook, *spec):
        def decorator(func):
            hook.register(*spec)(func)
            made.append((hook, func))
            return func
        return decorator

    yield register
    for hook, func in made:
        try:
            hook.unregister(func)
        except ValueError:
            pass


def area(r):
    return math.pi * r * r


def shapes(rs):
    return [area(r) for r in rs]


def test_specific_callee_beats_any(registrations):
    class Ctx(cassette.Context):
        pass

    @registrations(cassette.execute, Ctx)
    def _(ctx, f, *args, **kwargs):
        ctx.metadata.append(("any", f))
        return cassette.OverdubInstead

    @registrations(cassette.execute, Ctx, area)
    def _(ctx, f, r):
        ctx.metadata.append(("area", r))
        return -r

    ctx = Ctx(metadata=[])
    assert cassette.overdub(ctx, shapes, [1, 2]) == [-1, -2]
    assert ("area", 1) in ctx.metadata and ("area", 2) in ctx.metadata
    assert ("any", area) not in ctx.metadata
    assert ("any", iter) in ctx.metadata


def test_derived_context_class_beats_base(registrations):
    class Base(cassette.Context):
        pass

    class Derived(Base):
        pass

    @registrations(cassette.execute, Base, area)
    def _(ctx, f, r):
        return "base"

    @registrations(cassette.execute, Derived, area)
    def _(ctx, f, r):
        return "derived"

    assert cassette.overdub(Base(), shapes, [1]) == ["base"]
    assert cassette.overdub(Derived(), shapes, [1]) == ["derived"]

    class Other(Base):
        pass

    assert cassette.overdub(Other(), shapes, [1]) == ["base"]


def test_argtypes_select_the_handler(registrations):
    class Ctx(cassette.Context):
        pass

    @registrations(cassette.execute, Ctx, operator.mul, int, int)
    def _(ctx, f, a, b):
        return ("ints", a, b)

    @registrations(cassette.execute, Ctx, operator.mul, float, cassette.ANY)
    def _(ctx, f, a, b):
        return ("float first", a, b)

    def prog(a, b):
        return a * b

    assert cassette.overdub(Ctx(), prog, 2, 3) == ("ints", 2, 3)
    assert cassette.overdub(Ctx(), prog, 2.0, "x") == ("float first", 2.0, "x")
    assert cassette.overdub(Ctx(), prog, "ab", 2) == "abab"        # no handler matches


def test_narrower_argtypes_win(registrations):
    class Ctx(cassette.Context):
        pass

    @registrations(cassette.execute, Ctx, operator.add, object, object)
    def _(ctx, f, a, b):
        return "objects"

    @registrations(cassette.execute, Ctx, operator.add, bool, int)
    def _(ctx, f, a, b):
        return "bool+int"

    @registrations(cassette.execute, Ctx, operator.add, int, int)
    def _(ctx, f, a, b):
        return "int+int"

    def prog(a, b):
        return a + b

    assert cassette.overdub(Ctx(), prog, True, 1) == "bool+int"
    assert cassette.overdub(Ctx(), prog, 1, 1) == "int+int"
    assert cassette.overdub(Ctx(), prog, "a", "b") == "objects"


def test_vararg_matches_any_number_of_arguments(registrations):
    class Ctx(cassette.Context):
        pass

    @registrations(cassette.prehook, Ctx, cassette.ANY, cassette.Vararg(float))
    def _(ctx, f, *args):
        ctx.metadata.append((f, args))

    def prog(x, y):
        return max(x, y, 0.5) + math.floor(x) + len(str(y))

    ctx = Ctx(metadata=[])
    assert cassette.overdub(ctx, prog, 1.5, 2.5) == prog(1.5, 2.5)
    # max(1.5, 2.5, 0.5), floor(1.5) and str(2.5) have only float arguments;
    # 2.5 + 1, len("2.5") and 3 + 3 do not.
    assert ctx.metadata == [
        (max, (1.5, 2.5, 0.5)), (math.floor, (1.5,)), (str, (2.5,)),
    ]


def test_vararg_zero_arguments_match(registrations):
    class Ctx(cassette.Context):
        pass

    @registrations(cassette.prehook, Ctx, cassette.ANY, cassette.Vararg(int))
    def _(ctx, f, *args):
        ctx.metadata.append((f, args))

    def nothing():
        return 0

    ctx = Ctx(metadata=[])
    cassette.overdub(ctx, lambda: nothing())
    assert ctx.metadata == [(nothing, ())]


def test_keywords_never_take_part_in_argtypes(registrations):
    class Ctx(cassette.Context):
        pass

    def f(a, *, k):
        return a + k

    @registrations(cassette.execute, Ctx, f, int)
    def _(ctx, fn, a, **kwargs):
        return ("matched", a, kwargs)

    assert cassette.overdub(Ctx(), lambda: f(1, k=2)) == ("matched", 1, {"k": 2})


class Greeter:
    def __init__(self, name):
        self.name = name

    def greet(self, greeting):
        return f"{greeting}, {self.name}"


def test_method_callee_registered_on_the_class_matches_bound_calls(registrations):
    class Ctx(cassette.Context):
        pass

    @registrations(cassette.execute, Ctx, Greeter.greet)
    def _(ctx, f, obj, greeting):
        return f"{greeting.upper()}!! {obj.name}"

    def prog(g):
        bound = g.greet
        return g.greet("hi"), bound("yo")

    g = Greeter("Ann")
    assert cassette.overdub(Ctx(), prog, g) == ("HI!! Ann", "YO!! Ann")
    assert prog(g) == ("hi, Ann", "yo, Ann")


def test_builtin_method_registered_as_descriptor_matches(registrations):
    class Ctx(cassette.Context):
        pass

    @registrations(cassette.execute, Ctx, list.append)
    def _(ctx, f, lst, x):
        lst.append(x)
        lst.append(x)
        return None

    def prog():
        out = []
        out.append(1)
        push = out.append
        push(2)
        return out

    assert cassette.overdub(Ctx(), prog) == [1, 1, 2, 2]


def test_canoverdub():
    class Ctx(cassette.Context):
        pass

    ctx = Ctx()

    class WithCall:
        def __call__(self):
            return 1

    assert cassette.canoverdub(ctx, area, 1)
    assert cassette.canoverdub(ctx, lambda: 1)
    assert cassette.canoverdub(ctx, Greeter("x").greet, "hi")
    assert cassette.canoverdub(ctx, Greeter, "x")
    assert cassette.canoverdub(ctx, WithCall())
    assert not cassette.canoverdub(ctx, math.sin, 1.0)
    assert not cassette.canoverdub(ctx, len, [])
    assert not cassette.canoverdub(ctx, [].append, 1)
    assert not cassette.canoverdub(ctx, object)


def test_fallback_override_for_primitives(registrations):
    class Ctx(cassette.Context):
        pass

    @registrations(cassette.fallback, Ctx, math.sqrt)
    def _(ctx, f, x):
        ctx.metadata.append(x)
        return "root"

    def prog(x):
        return math.sqrt(x), area(1.0)

    ctx = Ctx(metadata=[])
    assert cassette.overdub(ctx, prog, 4.0) == ("root", math.pi)
    assert ctx.metadata == [4.0]


def test_fallback_runs_only_for_primitives(registrations):
    class Ctx(cassette.Context):
        def fallback(self, f, *args, **kwargs):
            self.metadata.append(f)
            return f(*args, **kwargs)

    ctx = Ctx(metadata=[])
    assert cassette.overdub(ctx, shapes, [1.0]) == [math.pi]
    assert area not in ctx.metadata                # has a body: no fallback
    assert operator.mul in ctx.metadata and iter in ctx.metadata


def test_overdub_of_a_primitive_runs_its_fallback():
    class Ctx(cassette.Context):
        def fallback(self, f, *args, **kwargs):
            return ("fallback", f, args)

    assert cassette.overdub(Ctx(), len, [1]) == ("fallback", len, ([1],))


def test_overdub_instead_from_a_specific_handler_recurses(registrations):
    class Ctx(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            self.metadata.append(f)

    @registrations(cassette.execute, Ctx, area)
    def _(ctx, f, r):
        if r < 0:
            return 0.0
        return cassette.OverdubInstead

    ctx = Ctx(metadata=[])
    assert cassette.overdub(ctx, shapes, [-1, 1]) == [0.0, math.pi]
    # area(1) ran its body: getattr(math, "pi") and two multiplications
    assert ctx.metadata.count(operator.mul) == 2


def test_context_instance_state_is_per_instance(registrations):
    class Ctx(cassette.Context):
        def execute(self, f, *args, **kwargs):
            if f is area:
                return self.metadata
            return cassette.OverdubInstead

    assert cassette.overdub(Ctx(metadata="a"), shapes, [1]) == ["a"]
    assert cassette.overdub(Ctx(metadata="b"), shapes, [1]) == ["b"]


def test_posthook_registered_for_a_callee_sees_only_it(registrations):
    class Ctx(cassette.Context):
        pass

    @registrations(cassette.posthook, Ctx, area)
    def _(ctx, out, f, r):
        ctx.metadata.append((r, out))

    ctx = Ctx(metadata=[])
    cassette.overdub(ctx, shapes, [1.0, 2.0])
    assert ctx.metadata == [(1.0, math.pi), (2.0, math.pi * 4.0)]


def hypot3(x, y, z):
    return math.sqrt(x * x + y * y + z * z)


def pair(a, b):
    return ("plain", a, b)


def test_a_hot_call_site_chooses_by_every_calls_argument_types(registrations):
    """One call site, called in turn with arguments of many type
    combinations — more than a site remembers — each call gets the handler
    its own argument types select, by any of one to four arguments; a
    handler registered between runs takes effect at the same site."""

    class Ctx(cassette.Context):
        pass

    @registrations(cassette.execute, Ctx, math.sqrt, int)
    def _(ctx, f, x):
        return ("int", x)

    @registrations(cassette.execute, Ctx, pair, int, float)
    def _(ctx, f, a, b):
        return ("int-float", a, b)

    @registrations(cassette.execute, Ctx, pair, int, int)
    def _(ctx, f, a, b):
        return ("int-int", a, b)

    @registrations(cassette.execute, Ctx, pair, float, int)
    def _(ctx, f, a, b):
        return ("float-int", a, b)

    @registrations(cassette.execute, Ctx, hypot3, float, cassette.ANY, int)
    def _(ctx, f, x, y, z):
        return ("z-int", x, y, z)

    @registrations(cassette.execute, Ctx, hypot3, float, cassette.ANY, float)
    def _(ctx, f, x, y, z):
        return ("z-float", x, y, z)

    @registrations(cassette.execute, Ctx, max, cassette.Vararg(str))
    def _(ctx, f, *args):
        return ("strs", args)

    kinds = [1, 2.5, "s", True, None, 3 + 1j, b"b", (1,), [2], 7, 0.5, "t", False, 1.5, 9, "u",
             10, 11.0, 12, 13.0]

    def prog(values):
        out = []
        for i, a in enumerate(values):
            for b in values[:8]:
                z = 2 if i % 2 else 2.0
                out.append((math.sqrt(a) if type(a) is int else None,
                            hypot3(a, b, z) if type(a) is float else None,
                            pair(a, b),
                            max(str(a), str(b), "m", "n")))
        return out

    names = {(int, float): "int-float", (int, int): "int-int", (float, int): "float-int"}

    def chosen(a, b):          # bool is an int: it matches int
        return next((name for (ta, tb), name in names.items()
                     if isinstance(a, ta) and isinstance(b, tb)), "plain")

    def expected(values):
        out = []
        for i, a in enumerate(values):
            for b in values[:8]:
                z = 2 if i % 2 else 2.0
                out.append((("int", a) if type(a) is int else None,
                            ("z-int" if type(z) is int else "z-float", a, b, z)
                            if type(a) is float else None,
                            (chosen(a, b), a, b),
                            ("strs", (str(a), str(b), "m", "n"))))
        return out

    assert cassette.overdub(Ctx(), prog, kinds) == expected(kinds)

    @registrations(cassette.execute, Ctx, math.sqrt, float)
    def _(ctx, f, x):
        return ("float", x)

    def prog2(values):
        return [math.sqrt(v) for v in values]

    assert cassette.overdub(Ctx(), prog2, [4, 2.25, 9]) == [("int", 4), ("float", 2.25),
                                                               ("int", 9)]
