"""Contexts nobody uses any more are collected, and what is still running
keeps working.

Rewritten code refers to its runtime from its constants, which the garbage
collector cannot see; a runtime that kept its rewritten bodies forever would
keep its context (and the context's metadata) alive forever.  Top-level
runtimes keep their caches while they are among the ``entry.RUNTIMES_KEPT``
most recently entered; nested runs release theirs when they end.
"""

import gc
import sys
import weakref

import pytest

import cassette
from cassette import entry


class Probe(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata.append(f)


class Payload(list):
    """Metadata that can be weakly referenced."""


def leaf(x):
    return x + 1


def program(x):
    return leaf(x) * 2


def test_contexts_beyond_the_recent_ones_are_collected():
    refs = []
    for i in range(3 * entry.RUNTIMES_KEPT):
        payload = Payload()
        ctx = Probe(metadata=payload)
        assert cassette.overdub(ctx, program, i) == program(i)
        assert len(payload) == 3
        refs.append(weakref.ref(payload))
        del ctx, payload
    gc.collect()
    alive = [r() is not None for r in refs]
    assert sum(alive) <= entry.RUNTIMES_KEPT
    assert not any(alive[: 2 * entry.RUNTIMES_KEPT])


def test_contexts_of_nested_runs_are_collected():
    refs = []

    def nested(x):
        payload = Payload()
        refs.append(weakref.ref(payload))
        return cassette.overdub(Probe(metadata=payload), program, x)

    outer = Probe(metadata=Payload())
    for i in range(10):
        assert cassette.overdub(outer, nested, i) == program(i)
    gc.collect()
    assert len(refs) == 10 and all(r() is None for r in refs)


def test_a_generator_outlives_its_context_and_its_released_runtime():
    def numbers(n):
        for i in range(n):
            yield leaf(i)

    payload = Payload()
    generator = cassette.overdub(Probe(metadata=payload), numbers, 4)
    assert next(generator) == 1
    for i in range(2 * entry.RUNTIMES_KEPT):
        # Push its runtime out: contexts of other classes (a context of
        # Probe would adopt one runtime again and again; see test_adoption).
        other = type(f"Other{i}", (Probe,), {})
        cassette.overdub(other(metadata=Payload()), program, i)
    gc.collect()
    assert list(generator) == [2, 3, 4]
    assert payload.count(leaf) == 4               # still seen by its context
    ref = weakref.ref(payload)
    del generator, payload
    gc.collect()
    assert ref() is None


# What the program makes at run time and drops dies as it does in a plain
# run, under contexts that keep their caches between runs: caches hold
# only functions and classes that live as long as their module
# (callables.lives_with_its_module), and a cached target never keeps its
# callee alive (callables.may_be_cached_weakly).  Each program returns
# what it computed and whether what it dropped was collected.

def function_made_by_exec_in_its_own_namespace():
    namespace = {}
    exec("def f(x):\n    return x + 1\n", namespace)
    f = namespace["f"]
    total = sum(f(i) for i in range(5)) + f(1) + f(2) + f(3)
    ref = weakref.ref(f)
    del f, namespace
    gc.collect()
    return total, ref() is None


def generator_resurrected_by_its_namespace():
    # CPython's test_generators.test_generator_resurrect: the namespace is
    # garbage only if nothing else holds the function in it.
    resurrected = []
    exec("def gen():\n"
         "    try:\n"
         "        yield\n"
         "    except:\n"
         "        resurrected.append(g)\n"
         "g = gen()\n"
         "next(g)\n", {"resurrected": resurrected})
    gc.collect()
    return len(resurrected)


def recursive_local_function():
    def outer():
        def walk(n):
            return 0 if n == 0 else 1 + walk(n - 1)
        return walk(5) + walk(3) + walk(2), weakref.ref(walk)
    total, ref = outer()
    gc.collect()
    return total, ref() is None


def namedtuple_made_in_a_call():
    import collections
    Point = collections.namedtuple("Point", "x y")
    total = sum(Point(i, 2 * i).y for i in range(4))
    ref = weakref.ref(Point)
    del Point
    gc.collect()
    return total, ref() is None


def dataclass_made_in_a_call():
    # CPython's test_dataclasses.test_original_class_is_gced, in short.
    import dataclasses

    @dataclasses.dataclass
    class Pair:
        x: int
        y: int = 2

        def total(self):
            return self.x + self.y
    total = sum(Pair(i).total() for i in range(4)) + (Pair(1) == Pair(1))
    ref = weakref.ref(Pair)
    del Pair
    gc.collect()
    return total, ref() is None


def local_classes_calling_super():
    class Base:
        def __init__(self, v):
            self.v = v

    class Child(Base):
        def __init__(self, v):
            super().__init__(v * 2)

        def get(self):
            return self.v
    total = sum(Child(i).get() for i in range(5))
    refs = weakref.ref(Child), weakref.ref(Base)
    del Child, Base
    gc.collect()
    return total, [ref() is None for ref in refs]


def classes_in_a_cycle_through_an_instance():
    # CPython's test_gc.test_newinstance, in short: the classes die with the
    # collection after their last name is deleted.
    class A:
        pass

    class B(list):
        pass

    class C(B, A):
        pass
    a = C()
    a.a = a
    del a
    gc.collect()
    refs = weakref.ref(B), weakref.ref(C)
    del B, C
    gc.collect()
    return [ref() is None for ref in refs]


def garbage_a_collection_finds():
    # CPython's test_gc.test_frame: a frame in a cycle with its own local is
    # the only garbage; the function it ran (the rewritten copy,
    # overdubbed) is not garbage while the program holds the function.
    import sys

    def f():
        frame = sys._getframe()    # noqa: F841
    gc.collect()
    f()
    return gc.collect()


class Nothing(cassette.Context):
    pass


class Counting(cassette.Context):
    """Hooks that run and hold nothing of the program's."""

    def prehook(self, f, *args, **kwargs):
        self.metadata[0] += 1


@pytest.mark.parametrize("program", [
    function_made_by_exec_in_its_own_namespace, generator_resurrected_by_its_namespace,
    recursive_local_function, namedtuple_made_in_a_call, dataclass_made_in_a_call,
    local_classes_calling_super, classes_in_a_cycle_through_an_instance],
    ids=lambda program: program.__name__)
@pytest.mark.parametrize("kind", ["nothing", "prehook", "tagging"])
def test_what_a_program_makes_and_drops_is_collected(program, kind):
    expected = program()
    # Overdubbed three times by one context: the runtime's caches are warm
    # (and recipes made) from the second run on.
    ctx = Counting(metadata=[0]) if kind == "prehook" else Nothing()
    for _ in range(3):
        run = cassette.enabletagging(ctx, program) if kind == "tagging" else ctx
        assert cassette.overdub(run, program) == expected


@pytest.mark.parametrize("kind", ["nothing", "prehook", "tagging"])
def test_a_collection_finds_the_garbage_it_finds_plainly(kind):
    if cassette.entry.IMPLEMENTATION == "python" and (sys.version_info < (3, 13)
                                                      or kind == "prehook"):
        pytest.skip("a frame outliving its call holds its caller's (on 3.11 and 3.12 "
                    "maybe, on 3.13+ when its caller has returned): under the pure-Python "
                    "runtime, one of its own frames, which sit between the program's — "
                    "under a hooking context, its hook wrapper's (docs/overdub.md, "
                    "The pure-Python runtime)")
    expected = garbage_a_collection_finds()
    ctx = Counting(metadata=[0]) if kind == "prehook" else Nothing()
    counts = []
    for _ in range(3):
        run = cassette.enabletagging(ctx, garbage_a_collection_finds) if kind == "tagging" else ctx
        counts.append(cassette.overdub(run, garbage_a_collection_finds))
    assert expected == 1
    assert counts == [expected] * 3


def test_what_lives_with_its_module_is_told_from_what_a_program_makes():
    # What runtimes keep for good and what they forget at each collection
    # (callables.lives_with_its_module); a module may name itself otherwise
    # (_pydecimal's globals say 'decimal', which sys.modules maps to the C
    # module): its functions and classes still live with it.
    import _pydecimal
    import collections
    from cassette import callables

    namespace = {}
    exec("def made():\n    return 1\n", namespace)

    def local():
        return 2

    class Local:
        pass
    kept = [_pydecimal.Decimal, _pydecimal.Decimal.__add__, _pydecimal.getcontext,
            collections.OrderedDict, collections.namedtuple, int, len, dict.fromkeys]
    dropped = [namespace["made"], local, Local, collections.namedtuple("Point", "x"),
               Local.__init_subclass__]
    assert [callables.lives_with_its_module(obj) for obj in kept] == [True] * len(kept)
    assert [callables.lives_with_its_module(obj) for obj in dropped] == [False] * len(dropped)
    assert callables.is_module_namespace(_pydecimal.Decimal.__add__.__globals__)
    assert callables.is_module_namespace(local.__globals__)
    assert not callables.is_module_namespace(namespace)
