"""Contextual dispatch (reference §4): registration, specificity, callee
canonicalisation, class-body hooks and the engine's cached fast path."""

import abc
import math
import operator

import pytest

from cassette import dispatch
from cassette._singletons import ANY, OverdubInstead
from cassette.context import Context
from cassette.dispatch import Vararg, execute, fallback, posthook, prehook



def registered(handler):
    """The function as registered: handlers are called through a copy whose
    leading parameters are positional-only (see callables.with_positional_parameters)."""
    return getattr(handler, "__wrapped__", handler)

@pytest.fixture
def Ctx():
    class Ctx(Context):
        pass
    return Ctx


@pytest.fixture
def Sub(Ctx):
    class Sub(Ctx):
        pass
    return Sub


def f(*args, **kwargs):
    return ("f", args, kwargs)


def g(*args, **kwargs):
    return ("g", args, kwargs)


def handler(tag):
    def h(ctx, fn, *args, **kwargs):
        return tag
    h.__name__ = h.__qualname__ = f"handler_{tag}"
    return h


class Proto:
    """A fake argtype-protocol object (stands in for cassette.Tagged[T])."""

    def __init__(self, accept, specificity, name="Proto"):
        self.accept = accept
        self.specificity = specificity
        self.name = name
        self.calls = 0

    def _cassette_matches(self, value, ctx):
        self.calls += 1
        return self.accept(value)

    def _cassette_specificity(self):
        return self.specificity

    def __repr__(self):
        return self.name


# --------------------------------------------------------------------------
# defaults and basic registration

def test_defaults_without_handlers(Ctx):
    ctx = Ctx()
    assert prehook(ctx, f, 1, k=2) is None
    assert posthook(ctx, "out", f, 1, k=2) is None
    assert execute(ctx, f, 1, k=2) is OverdubInstead
    assert fallback(ctx, f, 1, k=2) == ("f", (1,), {"k": 2})
    assert fallback(ctx, math.sqrt, 16.0) == 4.0


def test_default_fallback_untags_through_module_hook(Ctx, monkeypatch):
    seen = []

    def untag(ctx, args, kwargs):
        seen.append((ctx, args, kwargs))
        return tuple(a * 10 for a in args), {k: v * 10 for k, v in kwargs.items()}

    monkeypatch.setattr(dispatch, "_untag_arguments", untag)
    ctx = Ctx()
    assert fallback(ctx, f, 1, 2, k=3) == ("f", (10, 20), {"k": 30})
    assert seen == [(ctx, (1, 2), {"k": 3})]


def test_untag_placeholder_returns_arguments_unchanged(Ctx):
    args, kwargs = (1, 2), {"a": 3}
    out = dispatch._untag_arguments(Ctx(), args, kwargs)
    assert out[0] is args and out[1] is kwargs


def test_register_returns_function_unchanged_and_handlers_get_all_arguments(Ctx):
    calls = []

    def pre(ctx, fn, *args, **kwargs):
        calls.append(("pre", ctx, fn, args, kwargs))
        return "pre-result"

    def post(ctx, output, fn, *args, **kwargs):
        calls.append(("post", ctx, output, fn, args, kwargs))
        return "post-result"

    def exe(ctx, fn, *args, **kwargs):
        calls.append(("exe", ctx, fn, args, kwargs))
        return 42

    def fb(ctx, fn, *args, **kwargs):
        calls.append(("fb", ctx, fn, args, kwargs))
        return 7

    assert prehook.register(Ctx, f)(pre) is pre
    assert posthook.register(Ctx, f)(post) is post
    assert execute.register(Ctx, f)(exe) is exe
    assert fallback.register(Ctx)(fb) is fb
    ctx = Ctx()
    assert prehook(ctx, f, 1, k=2) == "pre-result"
    assert posthook(ctx, "out", f, 1, k=2) == "post-result"
    assert execute(ctx, f, 1, k=2) == 42
    assert fallback(ctx, g, 3) == 7
    assert calls == [
        ("pre", ctx, f, (1,), {"k": 2}),
        ("post", ctx, "out", f, (1,), {"k": 2}),
        ("exe", ctx, f, (1,), {"k": 2}),
        ("fb", ctx, g, (3,), {}),
    ]
    # other callees / other hooks keep their defaults
    assert execute(ctx, g, 1) is OverdubInstead
    assert prehook(ctx, g) is None


def test_register_accepts_callee_as_keyword(Ctx):
    execute.register(Ctx, callee=f)(handler("kw"))
    assert execute(Ctx(), f) == "kw"
    assert execute(Ctx(), g) is OverdubInstead


def test_handlers_do_not_leak_to_unrelated_context_classes(Ctx):
    class Other(Context):
        pass
    execute.register(Ctx, f)(handler("mine"))
    assert execute(Ctx(), f) == "mine"
    assert execute(Other(), f) is OverdubInstead


def test_handler_exceptions_propagate_unchanged(Ctx):
    err = KeyError("boom")

    @prehook.register(Ctx, f)
    def _(ctx, fn, *args):
        raise err

    with pytest.raises(KeyError) as info:
        prehook(Ctx(), f, 1)
    assert info.value is err


def test_generic_hook_repr_and_pickle():
    import pickle
    assert repr(execute) == "<cassette.execute generic hook>"
    assert pickle.loads(pickle.dumps(posthook)) is posthook
    assert dispatch.ANY is ANY


# --------------------------------------------------------------------------
# specificity

def test_specific_callee_beats_any_even_when_any_is_newer_more_derived_and_typed(Ctx, Sub):
    execute.register(Ctx, f)(handler("specific"))
    execute.register(Sub, ANY, int)(handler("any-derived-typed"))
    execute.register(Sub)(handler("any-derived"))
    assert execute(Sub(), f, 1) == "specific"
    assert execute(Sub(), g, 1) == "any-derived-typed"
    assert execute(Sub(), g, "x") == "any-derived"


def test_more_derived_context_class_beats_base(Ctx, Sub):
    execute.register(Sub, f)(handler("derived"))
    execute.register(Ctx, f)(handler("base"))         # newer, but less derived
    assert execute(Sub(), f) == "derived"
    assert execute(Ctx(), f) == "base"


def test_more_derived_context_beats_argtypes_on_base(Ctx, Sub):
    execute.register(Ctx, f, int)(handler("base-typed"))
    execute.register(Sub, f)(handler("derived-untyped"))
    assert execute(Sub(), f, 1) == "derived-untyped"
    assert execute(Ctx(), f, 1) == "base-typed"


def test_handler_with_argtypes_beats_one_without(Ctx):
    execute.register(Ctx, f, int)(handler("typed"))
    execute.register(Ctx, f)(handler("untyped"))      # newer
    assert execute(Ctx(), f, 1) == "typed"
    assert execute(Ctx(), f, "s") == "untyped"       # typed one does not match


def test_narrower_argtypes_beat_wider(Ctx):
    execute.register(Ctx, f, bool, int)(handler("bool-int"))
    execute.register(Ctx, f, int, int)(handler("int-int"))       # newer, wider
    execute.register(Ctx, f, object, object)(handler("obj-obj"))  # newest, widest
    ctx = Ctx()
    assert execute(ctx, f, True, 1) == "bool-int"
    assert execute(ctx, f, 5, 1) == "int-int"
    assert execute(ctx, f, "a", 1) == "obj-obj"


def test_narrower_beats_wider_regardless_of_registration_order(Ctx):
    execute.register(Ctx, f, object)(handler("obj"))
    execute.register(Ctx, f, float)(handler("float"))
    assert execute(Ctx(), f, 1.5) == "float"
    assert execute(Ctx(), f, 1) == "obj"


def test_ties_go_to_most_recent_registration(Ctx):
    execute.register(Ctx, f, int)(handler("first"))
    execute.register(Ctx, f, int)(handler("second"))
    assert execute(Ctx(), f, 1) == "second"
    execute.register(Ctx, f)(handler("u1"))
    execute.register(Ctx, f)(handler("u2"))
    assert execute(Ctx(), f, "x") == "u2"


def test_incomparable_argtypes_go_to_most_recent(Ctx):
    execute.register(Ctx, f, int, object)(handler("int-obj"))
    execute.register(Ctx, f, object, int)(handler("obj-int"))
    assert execute(Ctx(), f, 1, 1) == "obj-int"
    assert execute(Ctx(), f, 1, "x") == "int-obj"
    execute.register(Ctx, f, int, object)(handler("int-obj-2"))
    assert execute(Ctx(), f, 1, 1) == "int-obj-2"


def test_positional_count_must_match(Ctx):
    execute.register(Ctx, f, int)(handler("one-int"))
    ctx = Ctx()
    assert execute(ctx, f, 1) == "one-int"
    assert execute(ctx, f) is OverdubInstead
    assert execute(ctx, f, 1, 2) is OverdubInstead


def test_zero_argtypes_registration_matches_any_count(Ctx):
    execute.register(Ctx, f)(handler("any"))
    assert execute(Ctx(), f) == "any"
    assert execute(Ctx(), f, 1, 2, 3) == "any"


def test_keywords_never_take_part(Ctx):
    seen = []

    @execute.register(Ctx, f, int)
    def _(ctx, fn, x, **kwargs):
        seen.append(kwargs)
        return "int"

    assert execute(Ctx(), f, 1, key="not-an-int", other=None) == "int"
    assert seen == [{"key": "not-an-int", "other": None}]
    # keywords do not count as positional arguments either
    assert execute(Ctx(), f, x=1) is OverdubInstead


def test_vararg_matches_zero_or_more(Ctx):
    execute.register(Ctx, f, str, Vararg(float))(handler("str-floats"))
    ctx = Ctx()
    assert execute(ctx, f, "a") == "str-floats"
    assert execute(ctx, f, "a", 1.0) == "str-floats"
    assert execute(ctx, f, "a", 1.0, 2.0, 3.0) == "str-floats"
    assert execute(ctx, f, "a", 1.0, 2) is OverdubInstead      # 2 is not a float
    assert execute(ctx, f) is OverdubInstead                   # fewer than the fixed part
    assert execute(ctx, f, 1.0) is OverdubInstead


def test_vararg_only(Ctx):
    prehook.register(Ctx, ANY, Vararg(float))(handler("floats"))
    ctx = Ctx()
    assert prehook(ctx, f) == "floats"
    assert prehook(ctx, g, 1.0, 2.0) == "floats"
    assert prehook(ctx, g, 1.0, "x") is None


def test_fixed_arity_beats_vararg_with_same_types(Ctx):
    execute.register(Ctx, f, float, float)(handler("fixed"))
    execute.register(Ctx, f, float, Vararg(float))(handler("vararg"))   # newer
    assert execute(Ctx(), f, 1.0, 2.0) == "fixed"
    assert execute(Ctx(), f, 1.0) == "vararg"
    assert execute(Ctx(), f, 1.0, 2.0, 3.0) == "vararg"


def test_narrower_vararg_beats_wider_vararg(Ctx):
    execute.register(Ctx, f, Vararg(bool))(handler("bools"))
    execute.register(Ctx, f, Vararg(int))(handler("ints"))
    assert execute(Ctx(), f, True, False) == "bools"
    assert execute(Ctx(), f, True, 2) == "ints"
    # zero args: both match, positions are equal -> most recent
    assert execute(Ctx(), f) == "ints"


def test_vararg_must_be_last(Ctx):
    with pytest.raises(TypeError, match="Vararg.*last"):
        execute.register(Ctx, f, Vararg(int), int)
    with pytest.raises(TypeError, match="argtype"):
        Vararg(3)
    assert repr(Vararg(float)) == "cassette.Vararg(float)"
    assert Vararg(float) == Vararg(float) and Vararg(float) != Vararg(int)


def test_any_as_argtype_means_object(Ctx):
    execute.register(Ctx, f, ANY)(handler("any-arg"))
    execute.register(Ctx, f, int)(handler("int"))
    assert execute(Ctx(), f, "x") == "any-arg"
    assert execute(Ctx(), f, 3) == "int"


def test_protocol_argtypes(Ctx):
    wide = Proto(lambda v: isinstance(v, (int, float)), 1, "wide")
    narrow = Proto(lambda v: isinstance(v, float), 2, "narrow")
    execute.register(Ctx, f, narrow)(handler("narrow"))
    execute.register(Ctx, f, wide)(handler("wide"))       # newer, but less specific
    ctx = Ctx()
    assert execute(ctx, f, 1.5) == "narrow"
    assert execute(ctx, f, 1) == "wide"
    assert execute(ctx, f, "s") is OverdubInstead
    # protocol results are never cached per type: every call asks again
    before = narrow.calls
    for _ in range(3):
        execute(ctx, f, 2.5)
    assert narrow.calls == before + 3


def test_protocol_gets_the_running_context(Ctx):
    seen = []

    class P:
        def _cassette_matches(self, value, ctx):
            seen.append(ctx)
            return True

        def _cassette_specificity(self):
            return 0

    execute.register(Ctx, f, P())(handler("p"))
    ctx = Ctx()
    assert execute(ctx, f, 1) == "p"
    assert seen == [ctx]


def test_protocol_beats_object_but_not_comparable_to_classes(Ctx):
    p = Proto(lambda v: True, 1, "p")
    execute.register(Ctx, f, p)(handler("proto"))
    execute.register(Ctx, f, object)(handler("object"))   # newer, wider
    assert execute(Ctx(), f, 1) == "proto"
    execute.register(Ctx, f, int)(handler("int"))         # incomparable, newest
    assert execute(Ctx(), f, 1) == "int"
    execute.register(Ctx, f, p)(handler("proto2"))        # incomparable, newest
    assert execute(Ctx(), f, 1) == "proto2"


# --------------------------------------------------------------------------
# callee canonicalisation

class MyClass:
    def m(self, x):
        return x

    @classmethod
    def cm(cls, x):
        return x

    @staticmethod
    def sm(x):
        return x


def test_canonical_callee_rules():
    obj = MyClass()
    cc = dispatch.canonical_callee
    assert cc(obj.m) is MyClass.m
    assert cc(MyClass.cm) is MyClass.__dict__["cm"].__func__
    assert cc(MyClass.__dict__["cm"]) is MyClass.__dict__["cm"].__func__
    assert cc(MyClass.__dict__["sm"]) is MyClass.sm
    assert cc([].append) is list.append
    assert cc([].append) is list.__dict__["append"]
    assert cc((1).__add__) is int.__add__
    assert cc(dict.fromkeys) is dict.__dict__["fromkeys"]
    assert cc({}.fromkeys) is dict.__dict__["fromkeys"]
    assert cc(int.mro) is type.__dict__["mro"]
    assert cc(len) is len
    assert cc(math.sin) is math.sin
    assert cc(operator.add) is operator.add
    assert cc(f) is f
    assert cc(list) is list

    class MyList(list):
        pass
    assert cc(MyList().append) is list.append


def test_method_registered_on_class_matches_bound_method_calls(Ctx):
    execute.register(Ctx, MyClass.m)(handler("m"))
    obj = MyClass()
    assert execute(Ctx(), obj.m, obj, 1) == "m"
    assert execute(Ctx(), MyClass.m, obj, 1) == "m"


def test_builtin_method_registered_on_class_matches_bound_builtin(Ctx):
    execute.register(Ctx, list.append, list, int)(handler("append"))
    lst = []
    assert execute(Ctx(), lst.append, lst, 1) == "append"
    assert execute(Ctx(), list.append, lst, 1) == "append"
    assert execute(Ctx(), lst.append, lst, "x") is OverdubInstead
    assert execute(Ctx(), lst.pop, lst) is OverdubInstead


def test_registering_a_bound_method_registers_its_function(Ctx):
    a, b = MyClass(), MyClass()
    execute.register(Ctx, a.m)(handler("m"))
    assert execute(Ctx(), b.m, b, 1) == "m"
    assert execute.registrations()[-1][1] is MyClass.m


def test_builtin_classmethod_callee_matches_fresh_bound_objects(Ctx):
    execute.register(Ctx, dict.fromkeys)(handler("fromkeys"))
    assert dict.fromkeys is not dict.fromkeys
    assert execute(Ctx(), dict.fromkeys, "ab") == "fromkeys"


# --------------------------------------------------------------------------
# unregister

def test_unregister_removes_every_registration_of_the_function(Ctx):
    h = handler("h")
    execute.register(Ctx, f)(h)
    execute.register(Ctx, g, int)(h)
    execute.register(Ctx, g)(handler("other"))
    ctx = Ctx()
    assert execute(ctx, f) == "h"
    assert execute(ctx, g, 1) == "h"
    gen = dispatch.generation()
    execute.unregister(h)
    assert dispatch.generation() > gen
    assert execute(ctx, f) is OverdubInstead
    assert execute(ctx, g, 1) == "other"
    with pytest.raises(ValueError, match="not registered"):
        execute.unregister(h)


def test_unregister_is_per_hook(Ctx):
    h = handler("h")
    execute.register(Ctx, f)(h)
    with pytest.raises(ValueError):
        prehook.unregister(h)
    assert execute(Ctx(), f) == "h"
    execute.unregister(h)


# --------------------------------------------------------------------------
# class-body hooks

def test_class_body_hook_counts_as_register_any(Ctx):
    log = []

    class Tracer(Ctx):
        def prehook(self, fn, *args, **kwargs):
            log.append(("body", fn, args, kwargs))
            return "body"

    t = Tracer()
    assert prehook(t, f, 1, k=2) == "body"
    assert log == [("body", f, (1,), {"k": 2})]
    # a specific callee beats it
    prehook.register(Tracer, g)(handler("g-specific"))
    assert prehook(t, g) == "g-specific"
    # a later register(Tracer, ANY) is more recent, so it wins
    later = handler("later-any")
    prehook.register(Tracer)(later)
    assert prehook(t, f) == "later-any"
    prehook.unregister(later)
    assert prehook(t, f) == "body"
    p = dispatch.plan(Tracer, f)
    assert registered(p.prehook.unconditional) is Tracer.__dict__["prehook"]
    assert p.execute is None and p.posthook is None and p.fallback is None


def test_class_body_hooks_of_all_kinds(Ctx):
    class C(Ctx):
        def prehook(self, fn, *args):
            return ("pre", args)

        def posthook(self, output, fn, *args):
            return ("post", output, args)

        def execute(self, fn, *args):
            return ("exe", args)

        def fallback(self, fn, *args):
            return ("fb", args)

    c = C()
    assert prehook(c, f, 1) == ("pre", (1,))
    assert posthook(c, 9, f, 1) == ("post", 9, (1,))
    assert execute(c, f, 1) == ("exe", (1,))
    assert fallback(c, f, 1) == ("fb", (1,))


def test_class_body_hook_is_inherited_and_overridable(Ctx):
    class A(Ctx):
        def execute(self, fn, *args):
            return "A"

    class B(A):
        pass

    class C(A):
        def execute(self, fn, *args):
            return "C"

    assert execute(B(), f) == "A"
    assert execute(C(), f) == "C"
    # an ANY handler registered for the base later still loses to C's own hook
    execute.register(A)(handler("A-registered"))
    assert execute(C(), f) == "C"
    assert execute(B(), f) == "A-registered"


def test_replacing_and_deleting_class_body_hook(Ctx):
    class C(Ctx):
        def execute(self, fn, *args):
            return "v1"

    c = C()
    p1 = dispatch.plan(C, f)
    assert execute(c, f) == "v1"
    gen = dispatch.generation()

    def v2(self, fn, *args):
        return "v2"

    C.execute = v2
    assert dispatch.generation() > gen
    p2 = dispatch.plan(C, f)
    assert p2 is not p1
    assert registered(p2.execute.unconditional) is v2
    assert execute(c, f) == "v2"

    gen = dispatch.generation()
    del C.execute
    assert dispatch.generation() > gen
    assert dispatch.plan(C, f) is dispatch.Plan.empty
    assert execute(c, f) is OverdubInstead
    assert not dispatch.has_any_handler(C)


def test_replacing_class_body_hook_makes_it_most_recent(Ctx):
    class C(Ctx):
        def execute(self, fn, *args):
            return "body"

    execute.register(C)(handler("registered"))
    assert execute(C(), f) == "registered"
    C.execute = lambda self, fn, *args: "body-again"
    assert execute(C(), f) == "body-again"


def test_unregister_does_not_touch_class_body_hooks(Ctx):
    def body(self, fn, *args):
        return "body"

    class C(Ctx):
        execute = body

    with pytest.raises(ValueError):
        dispatch.execute.unregister(body)
    assert dispatch.execute(C(), f) == "body"


def test_define_class_hook_validation(Ctx):
    with pytest.raises(ValueError, match="not one of"):
        dispatch.define_class_hook(Ctx, "hook", lambda *a: None)
    with pytest.raises(TypeError, match="must be callable"):
        dispatch.define_class_hook(Ctx, "prehook", 3)
    with pytest.raises(TypeError, match="Context subclass"):
        dispatch.define_class_hook(int, "prehook", lambda *a: None)


def test_define_class_hook_directly(Ctx):
    def h(ctx, fn, *args):
        return "direct"
    gen = dispatch.generation()
    dispatch.define_class_hook(Ctx, "fallback", h)
    assert dispatch.generation() > gen
    assert fallback(Ctx(), f) == "direct"
    dispatch.define_class_hook(Ctx, "fallback", None)
    assert fallback(Ctx(), f) == ("f", (), {})


# --------------------------------------------------------------------------
# the fast path: generation, plan, selector

def test_generation_and_invalidate():
    g0 = dispatch.generation()
    assert isinstance(g0, int)
    dispatch.invalidate()
    assert dispatch.generation() == g0 + 1


def test_plan_is_cached_per_generation(Ctx):
    p1 = dispatch.plan(Ctx, f)
    assert p1 is dispatch.Plan.empty
    execute.register(Ctx, f)(handler("x"))
    p2 = dispatch.plan(Ctx, f)
    assert p2 is not p1
    assert dispatch.plan(Ctx, f) is p2
    assert p2.prehook is None and p2.posthook is None and p2.fallback is None
    assert p2.execute.unconditional.__name__ == "handler_x"
    # any registration (even unrelated) bumps the generation and drops caches
    class Other(Context):
        pass
    prehook.register(Other)(handler("o"))
    p3 = dispatch.plan(Ctx, f)
    assert p3 is not p2
    assert p3.execute.unconditional is p2.execute.unconditional
    assert dispatch.plan(Ctx, f) is p3


def test_plan_for_unhashable_callee(Ctx):
    class Unhashable:
        __hash__ = None

        def __eq__(self, other):
            return True

        def __call__(self):
            return "called"

    u = Unhashable()
    assert dispatch.plan(Ctx, u) is dispatch.Plan.empty
    execute.register(Ctx, u)(handler("u"))
    assert execute(Ctx(), u) == "u"
    # equality is irrelevant: another equal object is a different callee
    assert execute(Ctx(), Unhashable()) is OverdubInstead
    assert dispatch.plan(Ctx, u).execute.unconditional.__name__ == "handler_u"


def test_plan_any_handler_applies_to_every_callee(Ctx):
    prehook.register(Ctx)(handler("any"))
    p = dispatch.plan(Ctx, g)
    assert p.prehook.unconditional.__name__ == "handler_any"
    assert p.execute is None


def test_selector_unconditional_and_select(Ctx):
    execute.register(Ctx, f)(handler("untyped"))
    execute.register(Ctx, f, int)(handler("int"))
    sel = dispatch.plan(Ctx, f).execute
    assert sel.unconditional is None
    ctx = Ctx()
    assert sel.select(ctx, (1,)).__name__ == "handler_int"
    assert sel.select(ctx, ("s",)).__name__ == "handler_untyped"
    assert sel.select(ctx, ()).__name__ == "handler_untyped"
    # cached per tuple of argument types
    assert sel.select(ctx, (2,)) is sel.select(ctx, (1,))
    assert (int,) in sel._cache


def test_selector_select_returns_none_when_nothing_matches(Ctx):
    execute.register(Ctx, f, int)(handler("int"))
    sel = dispatch.plan(Ctx, f).execute
    assert sel.unconditional is None
    assert sel.select(Ctx(), ("s",)) is None
    assert sel.select(Ctx(), (1, 2)) is None


def test_selector_unconditional_when_best_candidate_is_untyped(Ctx, Sub):
    execute.register(Ctx, f, int)(handler("base-typed"))
    execute.register(Sub, f)(handler("derived"))
    sel = dispatch.plan(Sub, f).execute
    assert sel.unconditional.__name__ == "handler_derived"
    assert sel.select(Sub(), (1,)) is sel.unconditional


def test_select_cache_follows_abc_registration(Ctx):
    class Marker(abc.ABC):
        pass

    class Thing:
        pass

    execute.register(Ctx, f, Marker)(handler("marker"))
    sel = dispatch.plan(Ctx, f).execute
    assert sel.select(Ctx(), (Thing(),)) is None
    Marker.register(Thing)
    assert sel.select(Ctx(), (Thing(),)).__name__ == "handler_marker"


def test_value_dependent_instancecheck_is_not_cached(Ctx):
    class PositiveMeta(type):
        def __instancecheck__(cls, value):
            return isinstance(value, int) and value > 0

    class Positive(metaclass=PositiveMeta):
        pass

    execute.register(Ctx, f, Positive)(handler("pos"))
    ctx = Ctx()
    assert execute(ctx, f, 3) == "pos"
    assert execute(ctx, f, -3) is OverdubInstead
    assert execute(ctx, f, 4) == "pos"


def test_could_match_and_has_any_handler(Ctx, Sub):
    assert dispatch.has_any_handler(Sub) is False
    assert dispatch.could_match(Sub, [f, g]) is False
    posthook.register(Ctx, f)(handler("f"))
    assert dispatch.has_any_handler(Ctx) is True
    assert dispatch.has_any_handler(Sub) is True        # inherited from a base
    assert dispatch.could_match(Sub, [g, f]) is True
    assert dispatch.could_match(Sub, [g]) is False
    assert dispatch.could_match(Sub, []) is False
    execute.register(Ctx, MyClass.m)(handler("m"))
    assert dispatch.could_match(Ctx, [MyClass().m]) is True   # canonicalised
    fallback.register(Sub)(handler("any"))
    assert dispatch.could_match(Sub, [g]) is True
    assert dispatch.could_match(Ctx, [g]) is False


def test_could_match_with_operation_callees(Ctx):
    execute.register(Ctx, operator.add)(handler("add"))
    assert dispatch.could_match(Ctx, [operator.sub, operator.add]) is True
    assert dispatch.could_match(Ctx, [operator.sub, operator.mul]) is False


# --------------------------------------------------------------------------
# validation

def test_register_validation_messages(Ctx):
    with pytest.raises(TypeError, match="Context subclass, got <class 'int'>"):
        execute.register(int)
    with pytest.raises(TypeError, match="Context subclass"):
        execute.register("Ctx")
    with pytest.raises(TypeError, match=r"instance of .*Ctx; pass the class"):
        execute.register(Ctx())
    with pytest.raises(TypeError, match="callee must be callable or cassette.ANY, got 3"):
        execute.register(Ctx, 3)
    with pytest.raises(TypeError, match=r"argtype 1.*must be a class.*got 5"):
        execute.register(Ctx, f, int, 5)
    with pytest.raises(TypeError, match="must decorate a callable"):
        execute.register(Ctx, f)("not callable")
    # nothing was recorded by the failed attempts
    assert dispatch.has_any_handler(Ctx) is False


def test_register_accepts_any_class_flagged_as_context_class():
    class FakeContext:
        _cassette_context_class = True

    execute.register(FakeContext, f)(handler("fake"))
    assert execute(FakeContext(), f) == "fake"


def test_calling_a_hook_with_a_non_context(Ctx):
    with pytest.raises(TypeError, match="must be a cassette.Context instance, got 5"):
        execute(5, f)
    with pytest.raises(TypeError, match="must be a cassette.Context instance"):
        posthook(Ctx, None, f)       # the class, not an instance
