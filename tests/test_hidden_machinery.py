"""What cassette uses to run a program must never change what the program
does, whatever the program holds or changes (issue 35, items 1 and 2).

* Values: every marker cassette's machinery carries can be reached by the
  program (``gc.get_objects()``, a frame's ``f_code.co_consts``, a module's
  globals).  Holding one, yielding one from an iterator, returning one,
  storing one or putting one among a code object's constants must run as
  plainly: the loop's end marker (``EXHAUSTED``), the slots of rewritten
  code (``Slot``, ``NoOverdub``), ``OverdubInstead``, the "missing"
  sentinels of metadata propagation.
* Modules: what cassette needs from ``sys``, ``types``, ``gc``,
  ``functools`` … is bound when cassette is imported.  For every attribute
  of a standard module that cassette's sources name (found by scanning
  them), a program that deletes it, or replaces it with something that
  raises, gets from an overdubbed run what it gets from a plain one.

Every program runs plainly and overdubbed under a context that defines
nothing, one that counts every operation (a prehook) and one with tagging
enabled; both runtimes run this file (``tools/dev.py test``).
"""

import ast
import builtins
import gc
import pathlib
import re
import sys
import types

import pytest

import cassette
from cassette import markers, propagation
from cassette.rewrite import NoOverdub

EXHAUSTED = markers.EXHAUSTED


class Noop(cassette.Context):
    """Defines nothing."""


class Count(cassette.Context):
    """Counts every operation."""

    def prehook(self, f, /, *args, **kwargs):
        self.metadata[0] += 1


def noop(f):
    return Noop()


def count(f):
    return Count(metadata=[0])


def tagging(f):
    return cassette.enabletagging(Noop(), f)


CONTEXTS = [noop, count, tagging]


def outcome(f, *args):
    """What running ``f(*args)`` gives: ``("value", result)`` or
    ``("raised", type, message)``."""
    try:
        return ("value", f(*args))
    except Exception as error:        # the program's own outcome
        return ("raised", type(error), str(error))


def assert_runs_as_plainly(make_context, f, *args):
    plain = outcome(f, *args)
    overdubbed = outcome(lambda *a: cassette.overdub(make_context(f), f, *a), *args)
    assert overdubbed == plain


# -- the loop's end marker (item 1) ---------------------------------------------

def count_items(xs):
    n = 0
    for _ in xs:
        n += 1
    return n


def collect(xs):
    seen = []
    for x in xs:
        seen.append(x is EXHAUSTED)
    else:
        seen.append("else")
    return seen


def yielding(xs):
    yield from xs


def through_a_generator(xs):
    return [x is EXHAUSTED for x in yielding(xs)]


class Yields:
    """An iterator of its own whose ``__next__`` returns the marker."""

    def __init__(self, values):
        self.values = list(values)

    def __iter__(self):
        return self

    def __next__(self):
        if not self.values:
            raise StopIteration
        return self.values.pop(0)


def through_an_iterator_class(xs):
    return collect(Yields(xs))


def comprehensions(xs):
    return ([x is EXHAUSTED for x in xs], len({id(x) for x in xs}),
            sum(1 for _ in xs), {i: x is EXHAUSTED for i, x in enumerate(xs)})


def nested(xs):
    pairs = 0
    for a in xs:
        for b in xs:
            pairs += 1
    return pairs


def reaches_it_through_gc():
    # The issue's reproducer: the object as a program finds it.
    found = next(o for o in gc.get_objects() if type(o).__name__ == "_Exhausted")
    return count_items([1, found, 2, 3])


LOOP_PROGRAMS = [count_items, collect, through_a_generator, through_an_iterator_class,
                 comprehensions, nested]
MARKED_DATA = [[1, EXHAUSTED, 2, 3], [EXHAUSTED], [1, 2, EXHAUSTED], [EXHAUSTED, EXHAUSTED], []]


@pytest.mark.parametrize("make_context", CONTEXTS)
@pytest.mark.parametrize("program", LOOP_PROGRAMS, ids=lambda f: f.__name__)
def test_an_iterator_yielding_the_loop_end_marker_loops_on(make_context, program):
    for data in MARKED_DATA:
        assert_runs_as_plainly(make_context, program, data)


@pytest.mark.parametrize("make_context", CONTEXTS)
def test_the_issue_reproducer_counts_every_item(make_context):
    assert reaches_it_through_gc() == 4
    assert cassette.overdub(make_context(reaches_it_through_gc), reaches_it_through_gc) == 4


@pytest.mark.parametrize("make_context", CONTEXTS)
def test_threads_looping_under_one_context_each_get_their_own_answers(make_context):
    """The runtime notes a step that yielded the marker per thread and
    iterator: two threads overdubbing loops under one context at once each
    loop over all their items."""
    import threading

    def loops(xs):
        total = 0
        for _ in range(300):
            total += count_items(xs)
        return total

    ctx = make_context(loops)
    data = [[EXHAUSTED, 1, EXHAUSTED], [EXHAUSTED, 2]]
    out = [None, None]

    def run(index):
        out[index] = cassette.overdub(ctx, loops, data[index])

    threads = [threading.Thread(target=run, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert out == [loops(data[0]), loops(data[1])] == [900, 600]


# -- slots among a program's own constants ----------------------------------------

def _with_constant(f, placeholder, value):
    """``f`` with its constant ``placeholder`` replaced by ``value``."""
    consts = tuple(value if c == placeholder else c for c in f.__code__.co_consts)
    return types.FunctionType(f.__code__.replace(co_consts=consts), f.__globals__)


def _returns_placeholder():
    return "placeholder"          # RETURN_CONST on 3.12 and 3.13


def _loads_placeholder():
    value = "placeholder"         # LOAD_CONST
    return [value, value]


MARKER_CONSTANTS = [markers.Slot("add"), markers.RUNTIME, markers.Slot("for"),
                    NoOverdub(len), EXHAUSTED]


@pytest.mark.parametrize("make_context", CONTEXTS)
@pytest.mark.parametrize("constant", MARKER_CONSTANTS, ids=repr)
def test_a_marker_among_a_programs_own_constants_stays_itself(make_context, constant):
    for shape in (_returns_placeholder, _loads_placeholder):
        f = _with_constant(shape, "placeholder", constant)

        def program():
            return f()

        plain = program()
        overdubbed = cassette.overdub(make_context(program), program)
        assert type(overdubbed) is type(plain)
        if type(plain) is list:
            assert all(a is b for a, b in zip(overdubbed, plain)) and len(overdubbed) == 2
        else:
            assert overdubbed is plain is constant


# -- OverdubInstead as a value of the program -----------------------------------------

def _returns_overdub_instead(log):
    log.append("ran")
    return cassette.OverdubInstead


def overdub_instead_as_a_value():
    log = []
    results = [_returns_overdub_instead(log), _returns_overdub_instead(log)]
    table = {"key": cassette.OverdubInstead}
    results.append(table.get("key"))                      # a primitive returns it
    results.append(getattr(cassette, "OverdubInstead"))
    results.append([cassette.OverdubInstead][0])
    results.append(max([cassette.OverdubInstead], key=id))
    return [r is cassette.OverdubInstead for r in results], log


class ExecutesSomethingElse(cassette.Context):
    """Has an execute handler, for a callee the program does not call."""


@cassette.execute.register(ExecutesSomethingElse, pow)
def _execute_pow(ctx, f, *args):
    return 0


@pytest.mark.parametrize("make_context", CONTEXTS + [lambda f: ExecutesSomethingElse()])
def test_a_program_returning_overdub_instead_runs_once(make_context):
    """Only an ``execute`` handler's result is compared with
    ``OverdubInstead``: a function or primitive of the program that returns
    it returns a value like any other (its body runs once)."""
    assert_runs_as_plainly(make_context, overdub_instead_as_a_value)
    assert overdub_instead_as_a_value() == ([True] * 6, ["ran", "ran"])


# -- the "missing" sentinels of metadata propagation -------------------------------------

class Labels(cassette.Context):
    """Tags any value with a string."""

    @classmethod
    def metadatatype(cls, T):
        return str


def _stored_metadata(value):
    """What ``metameta`` reports for a dict holding ``value`` tagged, and for
    its copy, under a tagging context of its own."""
    def program():
        table = {"key": cassette.tag(value, ctx, "label")}
        return cassette.metameta(table, ctx), cassette.metameta(dict(table), ctx)
    ctx = cassette.enabletagging(Labels(), program)
    return cassette.overdub(ctx, program)


def _module_sentinels(module):
    return [value for name, value in vars(module).items()
            if name.startswith("_") and type(value) is object]


def test_a_stored_value_that_is_a_sentinel_of_propagation_keeps_its_metadata():
    """Propagation looked a container's values up with a module-level
    sentinel for "absent": a program's value that is that object was taken
    for absent and lost its metadata."""
    expected = _stored_metadata(object())
    assert repr(expected) == ("({'key': Meta('label', cassette.NoMetaMeta)}, "
                              "{'key': Meta('label', cassette.NoMetaMeta)})")
    sentinels = _module_sentinels(propagation)
    assert sentinels
    for sentinel in sentinels:
        assert repr(_stored_metadata(sentinel)) == repr(expected)


# -- any marker of cassette's, wherever the program puts it ----------------------------------

def cassette_markers():
    """The objects cassette's modules hold that stand for something (an
    instance of a class of cassette's, or a bare ``object()``): each is a
    value a program can reach."""
    found = {}
    for name, module in list(sys.modules.items()):
        if not (name == "cassette" or name.startswith("cassette.")) or module is None:
            continue
        for value in list(vars(module).values()):
            kind = type(value)
            if kind is object or (kind.__module__ or "").startswith("cassette") and not (
                    isinstance(value, (type, types.ModuleType, types.FunctionType))
                    or callable(value) or isinstance(value, (dict, list, set, tuple))):
                found.setdefault(id(value), value)
    return list(found.values())


class Plain:
    def __call__(self):
        return "Plain.__call__"

    def __enter__(self):
        return "Plain.__enter__"

    def __exit__(self, *exc):
        return False

    def __len__(self):
        return 1


def _uses_of(marker):
    """A program that puts ``marker`` in its classes and data."""
    class Shadowing(Plain):
        __call__ = __enter__ = __len__ = marker

    def program():
        out = []
        for action in (lambda: Shadowing()(), lambda: len(Shadowing()),
                       lambda: Shadowing().__enter__()):
            try:
                out.append(action())
            except TypeError as error:
                out.append(("TypeError", str(error)))
        try:
            with Shadowing() as entered:
                out.append(entered)
        except (TypeError, AttributeError) as error:
            out.append(type(error).__name__)
        out.append([x is marker for x in [marker, 1, marker]])
        out.append({"k": marker}.get("k") is marker)
        out.append(getattr(Plain(), "absent", marker) is marker)
        out.append(next(iter([marker])) is marker)
        return out
    return program


def test_the_scan_finds_cassettes_markers():
    found = cassette_markers()
    assert any(value is EXHAUSTED for value in found)
    assert any(value is markers.RUNTIME for value in found)
    assert any(value is cassette.OverdubInstead for value in found)


@pytest.mark.parametrize("make_context", CONTEXTS)
def test_a_marker_of_cassette_in_a_programs_classes_and_data_is_a_value(make_context):
    """A class may hold any object: one whose ``__call__`` or ``__enter__``
    is a marker of cassette's (``callables.NO_SELF`` was the "absent" of
    class lookups) is called as plainly, and a marker in a list, a dict or
    a default is a value like any other."""
    for marker in cassette_markers():
        assert_runs_as_plainly(make_context, _uses_of(marker))


# -- what cassette needs from the standard library (item 2) -------------------------------

PACKAGE = pathlib.Path(cassette.__file__).parent
STANDARD = frozenset(sys.stdlib_module_names) | {"builtins"}


def _python_sources():
    return sorted([*PACKAGE.glob("*.py"), *(PACKAGE / "versions").glob("*.py")])


def _core_sources():
    return sorted([PACKAGE / "_core.pyx", *(PACKAGE / "_core_src").glob("*.pxi")])


def standard_attributes_cassette_names():
    """Every ``(module, attribute)`` of a standard module that cassette's
    sources spell ``module.attribute`` (through ``import module [as
    name]``), and every builtin they name: scanned, so that a new use is
    covered without editing this test."""
    found = set()
    builtin_names = {name for name in vars(builtins) if not name.startswith("__")}
    for path in _python_sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    if top in STANDARD:
                        aliases[alias.asname or top] = alias.name if alias.asname else top
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases):
                found.add((aliases[node.value.id], node.attr))
            elif isinstance(node, ast.Name) and node.id in builtin_names:
                found.add(("builtins", node.id))
    spelled = re.compile(r"\b(sys|types|functools|operator|gc|weakref|itertools|threading|"
                         r"builtins|_builtins_module)\.([A-Za-z_]\w*)")
    for path in _core_sources():
        for module, attribute in spelled.findall(path.read_text(encoding="utf-8")):
            found.add(("builtins" if module == "_builtins_module" else module, attribute))
    return sorted((module, attribute) for module, attribute in found
                  if module in sys.modules and hasattr(sys.modules[module], attribute)
                  and not attribute.startswith("__"))


class Trap:
    """What replaces an attribute: any use of it raises."""

    def __init__(self, name):
        object.__setattr__(self, "_name", name)

    def _raise(self, *args, **kwargs):
        raise LookupError(f"the program replaced {object.__getattribute__(self, '_name')}")

    __call__ = __iter__ = __len__ = __bool__ = __hash__ = __getitem__ = _raise
    __instancecheck__ = __subclasscheck__ = __mro_entries__ = _raise

    def __getattr__(self, name):
        self._raise()


class Base:
    def value(self):
        return 1


class Derived(Base):
    def value(self):
        return super().value() + 1

    @property
    def twice(self):
        return self.value() * 2


class Manager:
    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return len(self.log)

    def __exit__(self, *exc):
        self.log.append("exit")
        return False


def squares(n):
    for i in range(n):
        yield i * i


def workload():
    """Calls, a closure, methods and super(), a property, a class made at
    run time, generators, a with-block, an exception, eval and exec,
    imports, loops and comprehensions."""
    out = []
    offset = 10

    def add(a, b=1):
        return a + b + offset

    out.append(add(1, b=2))
    out.append(sorted([3, 1, 2], key=lambda x: -x))
    made = type("Made", (Derived,), {"extra": lambda self: 7})
    instance = made()
    out.append((instance.value(), instance.twice, instance.extra()))
    out.append(list(squares(4)))
    out.append(sum(x for x in range(5)))
    log = []
    with Manager(log) as entered:
        out.append(entered)
    out.append(log)
    try:
        {}["missing"]
    except KeyError as error:
        out.append(repr(error))
    out.append(eval(compile("1 + 1", "<eval>", "eval"), {}, {}))
    namespace = {}
    exec("def tripled(x):\n    return [x * 3 for _ in range(2)]", namespace)
    out.append(namespace["tripled"](2))
    import json
    out.append(json.loads("[1, 2]"))
    out.append({k: v for k, v in zip("ab", (1, 2))})
    out.append([(i, j) for i in range(2) for j in "xy"])
    return out


def _patched_run(module_name, attribute, replace):
    """A program that deletes or replaces ``module.attribute``, runs the
    workload and puts the attribute back."""
    module = sys.modules[module_name]
    trap = Trap(f"{module_name}.{attribute}")
    # (Bound here: the program may be deleting the builtins themselves.)
    get, put, remove = getattr, setattr, delattr

    def program():
        saved = get(module, attribute)
        if replace:
            put(module, attribute, trap)
        else:
            remove(module, attribute)
        try:
            return workload()
        finally:
            put(module, attribute, saved)
    return program


def _outcome_of(run):
    try:
        return ("value", run())
    except BaseException as error:     # the program's own outcome, whatever it is
        return ("raised", type(error).__name__, str(error))


ATTRIBUTES = standard_attributes_cassette_names()


def test_the_scan_finds_what_cassette_uses():
    """The scan sees the uses this issue was about."""
    assert {("sys", "_getframe"), ("types", "FunctionType"), ("functools", "partial"),
            ("builtins", "len"), ("builtins", "isinstance")} <= set(ATTRIBUTES)


@pytest.mark.parametrize("module_name, attribute", ATTRIBUTES,
                         ids=[f"{m}.{a}" for m, a in ATTRIBUTES])
def test_a_program_patching_the_standard_library_sees_only_its_own_effects(module_name, attribute):
    module = sys.modules[module_name]
    saved = getattr(module, attribute)
    for replace in (False, True):
        program = _patched_run(module_name, attribute, replace)
        try:
            plain = _outcome_of(program)
        finally:
            setattr(module, attribute, saved)
        for make_context in CONTEXTS:
            ctx = make_context(program)
            try:
                overdubbed = _outcome_of(lambda: cassette.overdub(ctx, program))
            finally:
                # (Should the program's own restoring fail overdubbed.)
                setattr(module, attribute, saved)
            assert overdubbed == plain, (
                f"{'replacing' if replace else 'deleting'} {module_name}.{attribute} "
                f"under {make_context.__name__}")



# -- cassette's bodies: rewritten functions the program can reach -----------------
#
# Each function overdubbed runs as a copy whose code is rewritten for its
# runtime (its body), and that copy is a function like any other in
# gc.get_objects().  A program that finds one and calls it, or hands it to
# a primitive (networkx's test_memory_leak calls isinstance on every object
# the collector tracks), must see it run as the function it copies: never
# rewritten again (hooks would see cassette's slots as operations), never
# routed (its next call from C would rewrite it again, every round deeper:
# four such walks took 0.25, 19, 57 and 92 s with the core, 0.1 s plainly).

def _bumped(x):
    return x + 1


def calls_the_bodies_it_finds():
    _bumped(1)
    bodies = [o for o in gc.get_objects()
              if type(o) is types.FunctionType and o.__name__ == "_bumped" and o is not _bumped]
    return sorted({body(2) for body in bodies}) or [3]


class Seen(cassette.Context):
    """Notes every callee's type."""

    def prehook(self, f, /, *args, **kwargs):
        self.metadata.add(type(f).__module__)


@pytest.mark.parametrize("make_context", CONTEXTS)
def test_a_body_the_program_calls_runs_as_the_function_it_copies(make_context):
    assert_runs_as_plainly(make_context, calls_the_bodies_it_finds)
    seen = Seen(metadata=set())
    assert cassette.overdub(seen, calls_the_bodies_it_finds) == [3]
    assert not {module for module in seen.metadata if module.startswith("cassette")}


class Walked:
    pass


def _walk():
    return sum(1 for o in gc.get_objects() if isinstance(o, Walked))


@pytest.mark.parametrize("make_context", CONTEXTS)
def test_walking_every_object_costs_no_more_decisions_each_time(make_context, monkeypatch):
    from cassette import engine
    decisions = []
    decide = engine.decide
    monkeypatch.setattr(engine, "decide", lambda *a: decisions.append(a[1]) or decide(*a))
    kept = [Walked() for _ in range(3)]

    def program():
        counts = []
        for _ in range(4):
            decisions.clear()
            counts.append((_walk(), len(decisions)))
        return counts

    counts = cassette.overdub(make_context(program), program)
    assert [found for found, _ in counts] == [len(kept)] * 4
    # The first two walks decide the calls they meet (a function's second
    # call is decided again, for good); the later ones, nothing new.  (With
    # the bodies routed, the core made thousands of decisions each walk.)
    assert counts[1][1] <= counts[0][1] and [made for _, made in counts[2:]] == [0, 0], counts
