"""Cassette's caches are never what keeps a program's object alive, at any
moment of an overdubbed run (docs/overdub.md, "What is cached, and for how
long").

Each program below makes objects, drops them and observes, inside the run,
whether they are gone: after the last reference is dropped (objects outside
any reference cycle die at once), after a collection of the youngest
generation only (``gc.collect(0)``) and after a full one.  The automatic
collections are off while a program runs (``gc.disable``): what it makes is
then in the youngest generation until it collects, overdubbed as plainly,
however many objects cassette allocates meanwhile.  Every observation must
be the plain run's, on the first overdub and with warm caches, under a
context that defines nothing, a counting prehook, a handler chosen by
argument types and tagging.
"""

import gc
import itertools
import operator
import sys
import types
import weakref

import pytest

import cassette


class Builder:
    """attrs' ``_ClassBuilder`` in short: closures it makes refer to it,
    and it holds them; ``build`` makes a new class replacing the original."""

    def __init__(self, cls):
        self.cls, self.hooks = cls, []

    def add(self):
        def attach(c):
            return self.cls
        self.hooks.append(attach)
        return self

    def build(self):
        for hook in self.hooks:
            hook(None)
        return type(self.cls.__name__, self.cls.__bases__, {})


def subclasses_after_collections(make):
    """Call ``make()``, which returns a base class and drops the rest of
    what it made; how many subclasses the base has after a young collection
    and after a full one."""
    gc.collect()
    base = make()
    young = len(base.__subclasses__())
    gc.collect(0)
    after_young = len(base.__subclasses__())
    gc.collect()
    return young, after_young, len(base.__subclasses__())


def class_replaced_by_a_builder():
    # The issue's reproducer (attrs' slots=True): the original subclass,
    # held by the builder's closures, is garbage once the builder is.
    def make():
        class C:
            pass

        class C2(C):
            pass
        C2 = Builder(C2).add().build()      # noqa: F841
        return C
    return subclasses_after_collections(make)


def class_replaced_after_a_builder_ran_twice():
    # The same builder code run again: its code's recipe now makes targets.
    def make():
        class C:
            pass
        for _ in range(3):
            class C2(C):
                pass
            C2 = Builder(C2).add().add().build()
        return C
    return subclasses_after_collections(make)


def closure_over_a_class_in_a_list_the_class_holds():
    # The closure's cell holds the class, the class holds the list, the
    # list holds the closure: one cycle, garbage once the names are gone.
    def make():
        class Base:
            pass

        class C(Base):
            pass
        hooks = C.hooks = []

        def attach():
            return C
        hooks.append(attach)
        for hook in hooks * 3:
            hook()
        return Base
    return subclasses_after_collections(make)


def closure_with_a_default_reaching_it():
    # A default (not a cell) reaches the function back.
    def make():
        class Base:
            pass

        class C(Base):
            registry = []

        def attach(registry=C.registry):
            return registry
        C.registry.append(attach)
        attach()
        attach()
        return Base
    return subclasses_after_collections(make)


def function_made_by_exec_in_its_own_namespace():
    gc.collect()
    namespace = {}
    exec("def f(x):\n    return x + 1\n", namespace)
    f = namespace["f"]
    total = f(1) + f(2) + sum(f(i) for i in range(3))
    ref = weakref.ref(f)
    del f, namespace
    gc.collect(0)
    after_young = ref() is None
    gc.collect()
    return total, after_young, ref() is None


def slots_dataclass_replacing_its_class():
    # CPython 3.14's test_dataclasses.test_original_class_is_gced: the
    # class dataclass(slots=True) replaces is garbage (what a plain run
    # of this release finds).
    import dataclasses

    gc.collect()

    def make():
        @dataclasses.dataclass(slots=True)
        class SlotsTest:
            x: int

            def method(self) -> int:
                return self.x
        return SlotsTest
    made = make()
    assert made(3).method() == 3
    line = make.__code__.co_firstlineno + 1

    def candidates():
        return len([cls for cls in object.__subclasses__()
                    if cls.__name__ == "SlotsTest" and cls.__firstlineno__ == line])
    young = candidates()
    gc.collect(0)
    after_young = candidates()
    gc.collect()
    return young, after_young, candidates()


def local_function_dropped():
    # A local function outside any cycle dies when its last name goes.
    def make():
        def g(x):
            return x * 2
        return g
    g = make()
    total = g(1) + g(2)
    ref = weakref.ref(g)
    del g
    return total, ref() is None


def local_function_called_as_an_attribute():
    class Holder:
        pass
    holder = Holder()

    def g():
        return 5
    holder.g = g
    total = holder.g() + holder.g()
    ref = weakref.ref(g)
    del holder.g, g
    return total, ref() is None


def callable_instance_of_a_local_class():
    gc.collect()

    class Base:
        pass

    def make():
        class Call(Base):
            def __call__(self, x):
                return x + 1
        return Call()
    call = make()
    total = call(1) + call(2)
    del call
    young = len(Base.__subclasses__())
    gc.collect(0)
    return total, young, len(Base.__subclasses__())


def local_class_met_by_a_handler_chosen_by_types():
    # A handler chosen by argument types (Typed below): a selector's cache
    # by types must not keep the class.
    gc.collect()

    class Base:
        pass

    def make():
        class Number(Base):
            def __add__(self, other):
                return 3
        return Number() + 1 + 2
    total = make()
    young = len(Base.__subclasses__())
    gc.collect(0)
    return total, young, len(Base.__subclasses__())


class Finalized:
    """Notes its own finalization: pyparsing's ``Forward.__del__`` warns
    from there, and its suite checks the warning."""

    finalized = []

    def __init__(self, items):
        # On 3.11 a comprehension is a function of its own, a closure over
        # ``self`` (3.12 inlines it).
        self.items = [x for x in items if x is not self]

    def __del__(self):
        Finalized.finalized.append(id(self))


def object_a_comprehension_closed_over_dies_when_dropped():
    # No collection: it must die by its reference count, at once.
    made = Finalized([1, 2])
    ident = id(made)
    del made
    return ident in Finalized.finalized


def object_a_called_closure_held_dies_when_dropped():
    made = Finalized([3])

    def peek():
        return made.items
    peek()
    ident = id(made)
    del made, peek
    return ident in Finalized.finalized


MODULE_SOURCE = """
def function(x=1):
    return x + 1

class Class:
    def __init__(self, v):
        self.v = v

    def method(self):
        return self.v

    def __add__(self, other):
        return self.v + other
"""
_modules_made = itertools.count()


def module_from(source):
    """A new module, in ``sys.modules``, that has run ``source`` (its
    caller removes it from there)."""
    name = f"cassette_lifetimes_module_{next(_modules_made)}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(compile(source, name, "exec"), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def module_function_and_class_dropped():
    # A module drops what it defined (``del``, a reload, a notebook cell run
    # again): its function dies there and then, its class at a collection
    # (the class is in a cycle: its own __mro__), the young one too.
    module = module_from(MODULE_SOURCE)
    try:
        made = module.Class(3)
        total = (module.function() + module.function(2) + made.method() + (made + 1)
                 + (made + 2))
        function, cls = weakref.ref(module.function), weakref.ref(module.Class)
        del made, module.function, module.Class
        function_gone = function() is None
        gc.collect(0)
        after_young = cls() is None
        gc.collect()
        return total, function_gone, after_young, cls() is None
    finally:
        del sys.modules[module.__name__]


TEMPORARIES_SOURCE = """
def function(x):
    return x + 1

def drop():
    del globals()["function"]
    return 2

total = sum(x for x in (1, 2, 3)) + sum(x for x in (4, 5))
total += (lambda y: y * 2)(3)
total += function(drop())
"""


def temporary_functions_of_a_module():
    # A module's generator expressions and lambdas, which nothing holds but
    # the call being made, and a function its module drops between its
    # resolution and its call: each call runs, each function dies after.
    module = module_from(TEMPORARIES_SOURCE)
    try:
        return module.total, "function" in vars(module)
    finally:
        del sys.modules[module.__name__]


def local_subclass_of_a_builtin_whose_method_is_bound():
    # A builtin bound to an instance of the class (``items.append``): what
    # cassette learns of its descriptor must not keep the class.
    gc.collect()

    class Base(list):
        pass

    def make():
        class Items(Base):
            pass
        items = Items()
        append = items.append
        append(1)
        append(2)
        return len(items)
    total = make()
    young = len(Base.__subclasses__())
    gc.collect()
    return total, young, len(Base.__subclasses__())


PROGRAMS = [class_replaced_by_a_builder, class_replaced_after_a_builder_ran_twice,
            closure_over_a_class_in_a_list_the_class_holds, closure_with_a_default_reaching_it,
            function_made_by_exec_in_its_own_namespace, local_function_dropped,
            local_function_called_as_an_attribute, callable_instance_of_a_local_class,
            local_class_met_by_a_handler_chosen_by_types,
            object_a_comprehension_closed_over_dies_when_dropped,
            object_a_called_closure_held_dies_when_dropped,
            module_function_and_class_dropped, temporary_functions_of_a_module,
            local_subclass_of_a_builtin_whose_method_is_bound]
if sys.version_info >= (3, 13):        # (__firstlineno__ is 3.13's)
    PROGRAMS.append(slots_dataclass_replacing_its_class)


class Nothing(cassette.Context):
    pass


class Counting(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata[0] += 1


class Typed(cassette.Context):
    """A context whose handler is chosen by argument types."""


@cassette.execute.register(Typed, operator.add, int, int)
def _add_ints(ctx, f, a, b):
    return f(a, b)


def context_of(kind):
    return {"nothing": Nothing, "typed": Typed, "tagging": Nothing}.get(kind, Counting)(
        metadata=[0])


def without_automatic_collections(program, *args):
    enabled = gc.isenabled()
    gc.disable()
    try:
        return program(*args)
    finally:
        if enabled:
            gc.enable()


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda program: program.__name__)
@pytest.mark.parametrize("kind", ["nothing", "prehook", "typed", "tagging"])
def test_what_the_program_drops_is_gone_inside_the_run(program, kind):
    expected = without_automatic_collections(program)
    ctx = context_of(kind)
    observed = []
    for _ in range(3):      # the first run, then with the caches warm
        run = cassette.enabletagging(ctx, program) if kind == "tagging" else ctx
        observed.append(without_automatic_collections(cassette.overdub, run, program))
    assert observed == [expected] * 3


class Weighing(cassette.Context):
    """A tagging context whose values of every type carry a float."""

    @classmethod
    def metadatatype(cls, primal_type):
        return float


POINT_SOURCE = """
class Point:
    def __init__(self, v):
        self.v = v

    def get(self):
        return self.v
"""


def tag_classes_and_drop_them(ctx, with_metadata):
    # Values of a module's class and of a local class tagged (by the core's
    # fast path too: the same primal type again and again), then both
    # classes dropped: a collection frees them though the tag lives on.
    module = module_from(POINT_SOURCE)

    class Local:
        def __init__(self, v):
            self.v = v
    total = 0.0
    for i in range(3):
        for value in (module.Point(float(i)), Local(float(i))):
            tagged = (cassette.tag(value, ctx, 0.5) if with_metadata
                      else cassette.tag(value, ctx))
            total += cassette.untag(tagged, ctx).v + tagged.v
            if with_metadata:
                total += cassette.metadata(tagged, ctx)
    classes = weakref.ref(module.Point), weakref.ref(Local)
    del module.Point, sys.modules[module.__name__], value, tagged, Local
    gc.collect()
    return total, [cls() is None for cls in classes]


@pytest.mark.parametrize("with_metadata", [False, True], ids=["untyped", "metadata"])
@pytest.mark.parametrize("where", ["plain", "overdub"])
def test_classes_whose_values_were_tagged_die_when_dropped(where, with_metadata):
    # Each of the six values counts its v twice (untagged, and through the
    # tagged value), and its metadata once.
    expected = (sum(2 * 2.0 * i for i in range(3)) + (6 * 0.5 if with_metadata else 0),
                [True, True])
    observed = []
    for _ in range(3):
        ctx = cassette.enabletagging(Weighing(), tag_classes_and_drop_them)
        if where == "plain":
            observed.append(without_automatic_collections(
                tag_classes_and_drop_them, ctx, with_metadata))
        else:
            observed.append(without_automatic_collections(
                cassette.overdub, ctx, tag_classes_and_drop_them, ctx, with_metadata))
        assert cassette.hastagging(ctx)     # (the tag is alive throughout)
    assert observed == [expected] * 3


def test_the_issues_reproducer():
    # Issue 35, item 3, as filed: 1 subclass left plainly and overdubbed.
    def t():
        class C:
            pass

        class C2(C):
            pass
        C2 = Builder(C2).add().build()      # noqa: F841
        gc.collect()
        return len(C.__subclasses__())
    assert (t(), cassette.overdub(Nothing(), t)) == (1, 1)


def test_which_functions_may_be_cached_weakly():
    # callables.may_be_cached_weakly: nothing a cached copy holds can reach
    # the function back — its cells and defaults hold only inert values.
    from cassette import callables

    class Local:
        pass
    number, text, holder = 3, "x", Builder(Local)

    def over_inert(a=1, *, b="b"):
        return number, text, sys, len, Builder, callables.is_inert

    def over_an_object():
        return holder

    def over_a_local_class():
        return Local

    def with_a_default(registry=[]):
        return registry
    namespace = {}
    exec("def made():\n    return 1\n", namespace)
    weakly = [over_inert]
    not_weakly = [over_an_object, over_a_local_class, with_a_default, namespace["made"]]
    assert [callables.may_be_cached_weakly(f) for f in weakly] == [True]
    assert [callables.may_be_cached_weakly(f) for f in not_weakly] == [False] * 4
    assert not callables.lives_with_its_module([].append)
    assert callables.lives_with_its_module(sys.getrecursionlimit)


# networkx's graph-similarity tests make classes, closures and generators
# by the thousand, in deep recursion: run with collections very frequent,
# a collection (and the runtimes' forget_dynamic) starts inside the core's
# own work again and again.  On 3.11, where a collection can start at any
# allocation, this crashed the interpreter: a cache entry freed while a
# resolution still read it, and a weak reference freed while its
# function's weak references were being cleared.  From 3.12 on collections
# start only between bytecodes, so the core's work is never interrupted.
FREQUENT_COLLECTIONS = """
import gc, sys
import pytest
gc.set_threshold(20, 2, 2)
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-p", "cassette", "--cassette", "noop",
                      "-c", "pytest.ini", "--rootdir", ".", "--pyargs",
                      "networkx.algorithms.tests.test_similarity"]))
"""


@pytest.mark.skipif(sys.version_info >= (3, 12),
                    reason="from 3.12 CPython starts collections only at the eval loop's "
                           "checks between bytecodes, never inside the core's C code")
def test_collections_starting_inside_the_core_corrupt_nothing(tmp_path):
    pytest.importorskip("networkx")
    pytest.importorskip("scipy")
    import subprocess
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = subprocess.run([sys.executable, "-c", FREQUENT_COLLECTIONS], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert " passed" in summary and "failed" not in summary, summary
