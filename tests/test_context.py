"""Contexts (reference §2), singletons, passes and error classes."""

import copy
import pickle

import pytest

from cassette import dispatch
from cassette._singletons import ANY, NoMetaData, NoMetaMeta, OverdubInstead, Singleton
from cassette.context import Context, ContextMeta, context, similarcontext
from cassette.errors import CassetteError, PassError, TaggingError
from cassette.operations import Intercept
from cassette.passes import NoPass, Pass

# module-level classes and passes, so that pickle can find them by reference
Counter = context("Counter")



def registered(handler):
    """The function as registered: handlers are called through a copy whose
    leading parameters are positional-only (see callables.with_positional_parameters)."""
    return getattr(handler, "__wrapped__", handler)

class Tracer(Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata.append(f)


class WithSlots(Context):
    __slots__ = ("extra", "__hidden")

    def set_hidden(self, v):
        self.__hidden = v

    def get_hidden(self):
        return self.__hidden


class WithDict(Context):
    pass


@Pass
def instrument(ctx_type, func, code):
    """Adds nothing."""
    return code


def plain_transform(ctx_type, func, code):
    return ("transformed", code)


def roundtrip(obj):
    return pickle.loads(pickle.dumps(obj))


# --------------------------------------------------------------------------
# singletons

@pytest.mark.parametrize("value,name", [
    (OverdubInstead, "OverdubInstead"), (NoMetaData, "NoMetaData"),
    (NoMetaMeta, "NoMetaMeta"), (ANY, "ANY"),
])
def test_singletons(value, name):
    assert repr(value) == f"cassette.{name}"
    assert value.name == name
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(value, proto)) is value
    assert copy.copy(value) is value
    assert copy.deepcopy([value])[0] is value
    assert Singleton(name) is value
    assert bool(value) is True
    with pytest.raises(AttributeError, match="immutable"):
        value.x = 1


def test_singletons_are_distinct():
    values = [OverdubInstead, NoMetaData, NoMetaMeta, ANY]
    assert len({id(v) for v in values}) == 4
    with pytest.raises(TypeError, match="identifier"):
        Singleton("not a name")


# --------------------------------------------------------------------------
# errors

def test_error_hierarchy():
    assert issubclass(CassetteError, Exception)
    assert issubclass(PassError, CassetteError)
    assert issubclass(TaggingError, CassetteError)
    assert not issubclass(PassError, TaggingError)
    with pytest.raises(CassetteError, match="x"):
        raise TaggingError("x")


# --------------------------------------------------------------------------
# passes

def test_pass_decorator_keeps_name_and_transform():
    assert isinstance(instrument, Pass)
    assert instrument.__name__ == "instrument"
    assert instrument.__qualname__ == "instrument"
    assert instrument.__module__ == __name__
    assert instrument.__doc__ == "Adds nothing."
    assert instrument.transform.__name__ == "instrument"
    assert instrument(Context, None, "code") == "code"
    assert repr(instrument) == "<cassette.Pass instrument>"


def test_pass_pickles_by_reference():
    assert roundtrip(instrument) is instrument
    p = Pass(plain_transform)
    q = roundtrip(p)
    assert isinstance(q, Pass) and q is not p
    assert q.transform is plain_transform
    assert q(Context, None, 1) == ("transformed", 1)


def test_pass_of_local_function_does_not_pickle():
    def local(ctx_type, func, code):
        return code
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(Pass(local))


def test_nopass_singleton():
    assert isinstance(NoPass, Pass)
    assert repr(NoPass) == "cassette.NoPass"
    assert NoPass.__name__ == "NoPass"
    assert NoPass(Context, None, "code") == "code"
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(NoPass, proto)) is NoPass
    assert copy.copy(NoPass) is NoPass and copy.deepcopy(NoPass) is NoPass


def test_pass_validation():
    with pytest.raises(TypeError, match="callable transform"):
        Pass(42)
    assert Pass(instrument).transform is instrument.transform


# --------------------------------------------------------------------------
# construction and fields

def test_fields_and_defaults():
    ctx = Counter()
    assert ctx.metadata is None
    assert ctx.pass_ is NoPass
    assert ctx.tag is None
    assert ctx.bindingscache is None
    assert ctx._runtime is None
    m = [0]
    ctx = Counter(metadata=m, pass_=instrument)
    assert ctx.metadata is m
    assert ctx.pass_ is instrument
    assert isinstance(ctx, Context)
    assert type(Counter) is ContextMeta
    assert Context._cassette_context_class is True
    assert Counter.intercept is Intercept.ALL
    assert Counter.metadatatype(float) is None


def test_constructor_rejects_positional_arguments():
    with pytest.raises(TypeError, match=r"Counter\(\) takes keyword arguments only .* got 1 positional argument$"):
        Counter([0])
    with pytest.raises(TypeError, match="got 2 positional arguments"):
        Counter(1, 2)


def test_constructor_rejects_non_pass():
    with pytest.raises(TypeError, match=r"pass_ must be a cassette.Pass .*got <function plain_transform"):
        Counter(pass_=plain_transform)
    with pytest.raises(TypeError, match="unexpected keyword argument 'pass'"):
        Counter(**{"pass": NoPass})


def test_subclass_init_without_super_still_has_fields():
    class Lazy(Context):
        def __init__(self, n):
            self.n = n

    ctx = Lazy(3)
    assert ctx.n == 3 and ctx.metadata is None and ctx.pass_ is NoPass
    assert ctx._runtime is None


def test_repr():
    assert repr(Counter()) == "Counter()"
    assert repr(Counter(metadata=[0])) == "Counter(metadata=[0])"
    assert repr(Counter(metadata=1, pass_=instrument)) == \
        "Counter(metadata=1, pass_=<cassette.Pass instrument>)"
    ctx = Counter(metadata=[])
    ctx.metadata.append(ctx)
    assert repr(ctx) == "Counter(metadata=[...])"
    assert repr(similarcontext(Counter(), tag="T", bindingscache={})) == \
        "Counter(tag='T', bindingscache=<dict>)"


def test_contexts_compare_by_identity():
    a, b = Counter(metadata=1), Counter(metadata=1)
    assert a != b and a == a
    assert len({a, b}) == 2


# --------------------------------------------------------------------------
# context() factory

def test_context_factory_module_and_qualname():
    assert Counter.__module__ == __name__
    assert Counter.__qualname__ == "Counter"
    assert Counter.__name__ == "Counter"
    assert issubclass(Counter, Context) and Counter.__bases__ == (Context,)
    A, B = context("Same"), context("Same")
    assert A is not B and A.__qualname__ == B.__qualname__ == "Same"


def test_context_factory_classes_pickle():
    assert roundtrip(Counter) is Counter
    ctx = roundtrip(Counter(metadata={"n": 1}))
    assert type(ctx) is Counter and ctx.metadata == {"n": 1}


def test_context_factory_validation():
    with pytest.raises(TypeError, match="class name"):
        context(1)
    with pytest.raises(ValueError, match="identifier"):
        context("not valid")


# --------------------------------------------------------------------------
# pickling and copying

def test_context_pickle_round_trip_drops_runtime():
    ctx = Tracer(metadata=[1, "two"], pass_=instrument)
    ctx._runtime = object()                # unpicklable on purpose
    for proto in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(ctx, proto))
        assert type(back) is Tracer
        assert back.metadata == [1, "two"]
        assert back.pass_ is instrument
        assert back.tag is None and back.bindingscache is None
        assert back._runtime is None
    assert ctx._runtime is not None        # the original keeps its cache


def test_context_pickle_preserves_shared_metadata_identity():
    m = [0]
    a, b = pickle.loads(pickle.dumps([Counter(metadata=m), Counter(metadata=m)]))
    assert a.metadata is b.metadata == [0]


def test_context_with_unpicklable_metadata_does_not_pickle():
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(Counter(metadata=lambda: 0))


def test_subclass_extra_state_pickles():
    s = WithSlots(metadata=1)
    s.extra = "e"
    s.set_hidden("h")
    back = roundtrip(s)
    assert back.extra == "e" and back.get_hidden() == "h" and back.metadata == 1
    d = WithDict()
    d.anything = [1]
    assert roundtrip(d).anything == [1]
    unset = roundtrip(WithSlots())
    assert not hasattr(unset, "extra")


def test_copy_and_deepcopy():
    m = [[0]]
    ctx = Counter(metadata=m)
    ctx._runtime = "cache"
    c = copy.copy(ctx)
    assert type(c) is Counter and c is not ctx and c.metadata is m and c._runtime is None
    d = copy.deepcopy(ctx)
    assert d.metadata == m and d.metadata is not m and d._runtime is None


# --------------------------------------------------------------------------
# similarcontext

def test_similarcontext_replaces_given_fields_only():
    m = [0]
    ctx = Tracer(metadata=m, pass_=instrument)
    ctx._runtime = "cache"
    s = similarcontext(ctx)
    assert type(s) is Tracer and s is not ctx
    assert s.metadata is m and s.pass_ is instrument and s.tag is None
    assert s._runtime is None
    s = similarcontext(ctx, metadata=[1])
    assert s.metadata == [1] and s.pass_ is instrument
    s = similarcontext(ctx, pass_=NoPass)
    assert s.pass_ is NoPass and s.metadata is m
    s = similarcontext(ctx, tag="T", bindingscache={"k": 1})
    assert s.tag == "T" and s.bindingscache == {"k": 1} and s.metadata is m
    s2 = similarcontext(s, metadata=None)
    assert s2.metadata is None and s2.tag == "T" and s2.bindingscache is s.bindingscache
    # the original is untouched
    assert ctx.metadata is m and ctx.tag is None and ctx._runtime == "cache"


def test_similarcontext_carries_subclass_state():
    s = WithSlots()
    s.extra = 5
    s.set_hidden(6)
    t = similarcontext(s, metadata=1)
    assert t.extra == 5 and t.get_hidden() == 6 and t.metadata == 1


def test_similarcontext_validation():
    with pytest.raises(TypeError, match="expected a cassette.Context instance, got 3"):
        similarcontext(3)
    with pytest.raises(TypeError, match="pass_ must be a cassette.Pass"):
        similarcontext(Counter(), pass_=plain_transform)
    with pytest.raises(TypeError):
        similarcontext(Counter(), {"metadata": 1})


# --------------------------------------------------------------------------
# hook methods and the metaclass

def test_default_hook_methods():
    ctx = Counter()
    assert ctx.prehook(len, [1]) is None
    assert ctx.posthook(1, len, [1]) is None
    assert ctx.execute(len, [1]) is OverdubInstead
    assert ctx.fallback(len, [1, 2]) == 2
    assert ctx.fallback(int, "7", base=8) == 7


def test_defaults_are_not_registered_as_handlers():
    Fresh = context("Fresh")
    assert dispatch.has_any_handler(Fresh) is False
    assert dispatch.plan(Fresh, len) is dispatch.Plan.empty


def test_super_from_an_override_runs_the_default():
    class Ex(Context):
        def execute(self, f, *args, **kwargs):
            if f is abs:
                return "abs!"
            return super().execute(f, *args, **kwargs)

        def fallback(self, f, *args, **kwargs):
            return ("fb", super().fallback(f, *args, **kwargs))

    ctx = Ex()
    assert dispatch.execute(ctx, abs, -1) == "abs!"
    assert dispatch.execute(ctx, len, [1]) is OverdubInstead
    assert dispatch.fallback(ctx, len, [1]) == ("fb", 1)


def test_class_body_hook_is_dispatched():
    ctx = Tracer(metadata=[])
    dispatch.prehook(ctx, len, [1])
    assert ctx.metadata == [len]
    assert registered(dispatch.plan(Tracer, len).prehook.unconditional) is Tracer.__dict__["prehook"]


def test_setattr_and_delattr_of_hooks_update_dispatch():
    C = context("C")
    assert dispatch.plan(C, len) is dispatch.Plan.empty
    gen = dispatch.generation()
    C.posthook = lambda self, out, f, *args: ("post", out)
    assert dispatch.generation() > gen
    assert dispatch.posthook(C(), 1, len, "x") == ("post", 1)
    assert dispatch.plan(C, len).posthook is not None
    # putting the default back counts as removing the hook
    C.posthook = Context.posthook
    assert dispatch.plan(C, len) is dispatch.Plan.empty
    C.posthook = lambda self, out, f, *args: "again"
    gen = dispatch.generation()
    del C.posthook
    assert dispatch.generation() > gen
    assert dispatch.posthook(C(), 1, len, "x") is None
    assert dispatch.plan(C, len) is dispatch.Plan.empty


def test_non_callable_hook_attribute_is_rejected():
    with pytest.raises(TypeError, match=r"Bad.prehook must be a method"):
        class Bad(Context):
            prehook = 3
    C = context("C")
    with pytest.raises(TypeError, match="must be a method"):
        C.execute = "nope"
    assert "execute" not in C.__dict__


def test_staticmethod_classmethod_and_callable_object_hooks():
    class Call:
        def __call__(self, f, *args):
            return ("obj", args)

    class S(Context):
        @staticmethod
        def execute(f, *args):
            return ("static", args)

        @classmethod
        def fallback(cls, f, *args):
            return (cls.__name__, args)

        prehook = Call()

    s = S()
    assert dispatch.execute(s, len, 1) == ("static", (1,))
    assert s.execute(len, 1) == ("static", (1,))
    assert dispatch.fallback(s, len, 2) == ("S", (2,))
    assert dispatch.prehook(s, len, 3) == ("obj", (3,))


def test_intercept_knob():
    class Narrow(Context):
        intercept = Intercept.CALLS | Intercept.ARITHMETIC

    assert Narrow.intercept == Intercept.CALLS | Intercept.ARITHMETIC
    gen = dispatch.generation()
    Narrow.intercept = Intercept.CALLS
    assert dispatch.generation() > gen
    gen = dispatch.generation()
    del Narrow.intercept
    assert dispatch.generation() > gen
    assert Narrow.intercept is Intercept.ALL
    with pytest.raises(TypeError, match="intercept must be a cassette.operations.Intercept"):
        Narrow.intercept = "calls"
    with pytest.raises(TypeError, match="Bad.intercept must be"):
        class Bad(Context):
            intercept = 1


def test_unrelated_class_attributes_do_not_bump_generation():
    C = context("C")
    gen = dispatch.generation()
    C.something = 1
    del C.something
    assert dispatch.generation() == gen
