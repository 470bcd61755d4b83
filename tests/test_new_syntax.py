"""Language features of the newer releases run overdubbed as they run
plainly, and hooks see the operations inside them.  The programs are
compiled from source text so that this file parses on every release; a
feature a release does not have is skipped there, with the release named."""

import sys

import pytest

import cassette
from cassette.entry import IMPLEMENTATION
from overdub_support import name_of

needs_314 = pytest.mark.skipif(sys.version_info < (3, 14),
                               reason="new in CPython 3.14")
needs_315 = pytest.mark.skipif(sys.version_info < (3, 15),
                               reason="new in CPython 3.15")


def _shown(value):
    # Hooks see objects before their __init__ has run: repr only values.
    return repr(value) if type(value) in (int, float, str, bool) else type(value).__name__


class Recorder(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata.append((name_of(f), tuple(_shown(a) for a in args)))


class Calls(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        self.metadata.append((f, args))


def compiled(source):
    namespace = {}
    exec(compile(source, "<new syntax>", "exec"), namespace)
    return namespace


def test_any_all_and_tuple_of_a_generator_are_calls_on_every_release():
    # 3.14 inlines these calls when the names are the builtins; overdubbed,
    # they are calls as on every other release.
    program = compiled(
        "def uses(xs):\n"
        "    return any(x > 1 for x in xs), all(x for x in xs), tuple(x * 2 for x in xs)\n"
    )["uses"]
    recorder = Recorder(metadata=[])
    assert cassette.overdub(recorder, program, [1, 2]) == program([1, 2]) == (True, True, (2, 4))
    names = [name for name, _ in recorder.metadata]
    assert (names.count("any"), names.count("all"), names.count("tuple")) == (1, 1, 1)
    assert ("operator.gt", ("2", "1")) in recorder.metadata
    assert ("operator.mul", ("2", "2")) in recorder.metadata


@needs_314
def test_template_strings_build_the_same_template_and_their_expressions_are_operations():
    render = compiled(
        "def render(a, b, width):\n"
        "    return t'{a + b!r:>{width}} and {a * b} {a!s} {b!a:^3}'\n"
    )["render"]
    plain = render(2, 3, 6)
    recorder = Recorder(metadata=[])
    dubbed = cassette.overdub(recorder, render, 2, 3, 6)

    def parts(template):
        return (type(template), template.strings,
                [(i.value, i.expression, i.conversion, i.format_spec)
                 for i in template.interpolations])

    assert parts(dubbed) == parts(plain)
    assert parts(plain)[2][0] == (5, "a + b", "r", ">6")
    assert ("operator.add", ("2", "3")) in recorder.metadata
    assert ("operator.mul", ("2", "3")) in recorder.metadata


@needs_314
def test_except_without_parentheses_catches_each_listed_class():
    classify = compiled(
        "def classify(error):\n"
        "    try:\n"
        "        raise error\n"
        "    except KeyError, IndexError:\n"
        "        return 'lookup'\n"
        "    except ValueError:\n"
        "        return 'value'\n"
    )["classify"]
    for error in (KeyError("k"), IndexError(1), ValueError(2)):
        assert cassette.overdub(Recorder(metadata=[]), classify, error) == classify(error)


#: A module whose annotations name a call: evaluating them (PEP 649 defers
#: that to the first read) calls ``scale``, which the hook sees.
_ANNOTATED = (
    "import annotationlib, dataclasses, inspect, typing\n"
    "evaluated = []\n"
    "def scale(n):\n"
    "    evaluated.append(n)\n"
    "    return n * 10\n"
    "def program():\n"
    "    def direct(a: scale(1)) -> scale(2): pass\n"
    "    def through_getattr(a: scale(3)): pass\n"
    "    def through_annotationlib(a: scale(4)): pass\n"
    "    def as_strings(a: scale(5) + undefined): pass\n"
    "    class Fields:\n"
    "        a: scale(6)\n"
    "    class Routed:\n"
    "        def __init__(self, a: scale(7)): pass\n"
    "    isinstance(Routed(1), Routed)\n"
    "    @dataclasses.dataclass\n"
    "    class Point:\n"
    "        x: int\n"
    "        y: 'list[Point]'\n"
    "    return (direct.__annotations__, getattr(through_getattr, '__annotations__'),\n"
    "            annotationlib.get_annotations(through_annotationlib),\n"
    "            annotationlib.get_annotations(as_strings, format=annotationlib.Format.STRING),\n"
    "            Fields.__annotations__, str(inspect.signature(Point)),\n"
    "            typing.get_type_hints(Point.__init__, localns={'Point': Point}) == {\n"
    "                'x': int, 'y': list[Point], 'return': type(None)},\n"
    "            sorted(Point.__init__.__annotations__),\n"
    "            getattr(Routed.__init__, '__annotations__'))\n"
)


@needs_314
def test_deferred_annotations_run_overdubbed_where_the_interpreter_reads_them():
    # Reading __annotations__ calls the owner's __annotate__ from C; the
    # dataclass's __init__ gets an __annotate__ that dataclasses makes.
    namespace = compiled(_ANNOTATED)
    program, scale = namespace["program"], namespace["scale"]
    plain = program()
    assert plain[0] == {"a": 10, "return": 20} and plain[2] == {"a": 40}
    evaluated_plainly = sorted(namespace["evaluated"])
    # (Routed's __init__ is routed with its class before its annotations
    # are read: its __annotate__ must be routed with it.)
    assert {1, 2, 3, 4, 6, 7} <= set(evaluated_plainly)
    namespace["evaluated"].clear()
    calls = Calls(metadata=[])
    with cassette.count_escapes() as escapes:
        dubbed = cassette.overdub(calls, program)
    assert dubbed == plain
    assert sorted(namespace["evaluated"]) == evaluated_plainly
    if IMPLEMENTATION == "cython":
        # (The pure-Python runtime does not route: what C calls escapes.)
        assert sorted(args[0] for f, args in calls.metadata if f is scale) == evaluated_plainly
        assert escapes.total == 0, escapes.report()


@needs_314
def test_a_modules_deferred_annotations_run_overdubbed():
    import types
    module = types.ModuleType("annotated_module")
    exec(compile("def scale(n):\n    return n * 10\nx: scale(7)\n", "<new syntax>", "exec"),
         module.__dict__)
    plain_module = types.ModuleType("annotated_module")
    exec(compile("def scale(n):\n    return n * 10\nx: scale(7)\n", "<new syntax>", "exec"),
         plain_module.__dict__)
    recorder = Recorder(metadata=[])
    with cassette.count_escapes() as escapes:
        dubbed = cassette.overdub(recorder, lambda: module.__annotations__)
    assert dubbed == plain_module.__annotations__ == {"x": 70}
    if IMPLEMENTATION == "cython":
        assert ("scale", ("7",)) in recorder.metadata
        assert escapes.total == 0, escapes.report()


_FINALLY_RETURNS = (
    "def swallow(error):\n"
    "    try:\n"
    "        raise error\n"
    "    finally:\n"
    "        return 'swallowed'\n"
)


@needs_314
def test_return_in_finally_warns_when_compiled_and_still_swallows_when_run():
    # PEP 765: the compiler warns; the statement keeps its meaning.
    import warnings

    def compile_it():
        return compile(_FINALLY_RETURNS, "<finally>", "exec")

    def warned(run):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            code = run()
        return code, [(w.category, str(w.message), w.lineno) for w in caught]

    plain_code, plain_warnings = warned(compile_it)
    dubbed_code, dubbed_warnings = warned(lambda: cassette.overdub(Calls(metadata=[]),
                                                                    compile_it))
    assert dubbed_warnings == plain_warnings
    assert plain_warnings[0][:2] == (SyntaxWarning, "'return' in a 'finally' block")
    assert dubbed_code == plain_code
    namespace = {}
    exec(plain_code, namespace)
    swallow = namespace["swallow"]
    recorder = Recorder(metadata=[])
    assert cassette.overdub(recorder, swallow, KeyError("k")) == swallow(KeyError("k"))


_LAZY_MODULE = (
    "import builtins\n"
    "builtins._cassette_lazy_log.append('imported')\n"
    "VALUE = 41\n"
    "def bump():\n"
    "    return VALUE + 1\n"
)
_LAZY_IMPORTER = (
    "import builtins\n"
    "lazy import {name}\n"
    "lazy from {name} import bump\n"
    "builtins._cassette_lazy_log.append('body done')\n"
    "def use():\n"
    "    builtins._cassette_lazy_log.append('use called')\n"
    "    return {name}.VALUE + bump()\n"
)


def _lazy_run(directory, name, run):
    """Run the importer's body and then ``use``, with ``run(f, *args)``;
    returns what happened, in order, and ``use``'s result."""
    import builtins
    builtins._cassette_lazy_log = log = []
    sys.modules.pop(name, None)
    namespace = {"__name__": "importer"}
    code = compile(_LAZY_IMPORTER.format(name=name), str(directory / "importer.py"), "exec")
    run(exec, code, namespace)
    log.append(("imported yet", name in sys.modules))
    log.append(("result", run(namespace["use"])))
    log.append(("imported", name in sys.modules))
    del builtins._cassette_lazy_log
    return log


@needs_315
def test_lazy_imports_import_when_and_where_they_do_plainly(tmp_path, monkeypatch):
    # PEP 810: the module is imported at the first use of its name, inside
    # use(), overdubbed; the hook sees its body's call.
    name = "cassette_lazily_imported"
    (tmp_path / f"{name}.py").write_text(_LAZY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    plain = _lazy_run(tmp_path, name, lambda f, *args: f(*args))
    assert plain == ["body done", ("imported yet", False), "use called", "imported",
                     ("result", 83), ("imported", True)]
    calls = Calls(metadata=[])
    with cassette.count_escapes() as escapes:
        dubbed = _lazy_run(tmp_path, name,
                           lambda f, *args: cassette.overdub(calls, f, *args))
    sys.modules.pop(name, None)
    assert dubbed == plain
    appended = [args[-1] for f, args in calls.metadata
                if getattr(f, "__name__", None) == "append" and args]
    assert "use called" in appended
    if IMPLEMENTATION == "cython":
        # (The import machinery runs the module from C: without routing,
        # under the pure-Python runtime, its body escapes.)
        assert "imported" in appended
        assert escapes.total == 0, escapes.report()


@needs_315
def test_unpacking_in_comprehensions_builds_what_it_builds_plainly():
    # PEP 798: [*x for x in xs], {*x for x in xs}, {**d for d in ds} and a
    # generator expression of *x.
    program = compiled(
        "def flatten(xs, ds):\n"
        "    return ([*x for x in xs], {*x for x in xs}, {**d for d in ds},\n"
        "            list((*x for x in xs)))\n"
    )["flatten"]
    xs, ds = [[1, 2], (3,), range(4, 6)], [{"a": 1}, {"b": 2, "a": 3}]
    plain = program(xs, ds)
    assert plain == ([1, 2, 3, 4, 5], {1, 2, 3, 4, 5}, {"a": 3, "b": 2}, [1, 2, 3, 4, 5])
    recorder = Recorder(metadata=[])
    assert cassette.overdub(recorder, program, xs, ds) == plain
    assert ("iter", ("list",)) in recorder.metadata


@needs_315
def test_unpacking_in_a_comprehension_carries_each_elements_metadata():
    from cassette import enabletagging, metadata, tag, untag

    class Labels(cassette.Context):
        @classmethod
        def metadatatype(cls, T):
            return str

    def labelled(ctx, value):
        return untag(value, ctx), metadata(value, ctx)

    program = compiled(
        "def flatten(ctx, labelled, a, b, c):\n"
        "    return [labelled(ctx, v) for v in [*x for x in [[a, b], [c]]]]\n"
    )["flatten"]
    ctx = enabletagging(Labels(), labelled)
    out = cassette.overdub(ctx, program, ctx, labelled, tag(1, ctx, "a"), tag(2, ctx, "b"),
                           tag(3, ctx, "c"))
    assert out == [(1, "a"), (2, "b"), (3, "c")]


def test_a_generator_expression_calls_iter_once_on_every_release():
    # 3.15 makes a generator expression's iterator inside it; overdubbed,
    # the caller makes it (so hooks see iter() before the call, as on
    # 3.11-3.14) and the generator expression must not call iter() again:
    # this iterator has no __iter__ (test_generators' own case).
    class Iterator:
        def __init__(self):
            self.val = 0

        def __next__(self):
            if self.val == 2:
                raise StopIteration
            self.val += 1
            return self.val

    class Iterable:
        def __iter__(self):
            return Iterator()

    def program():
        return list(i for i in Iterable()), sum(x * x for x in range(4))

    calls = Calls(metadata=[])
    assert cassette.overdub(calls, program) == program() == ([1, 2], 14)
    order = [getattr(f, "__name__", None) for f, _ in calls.metadata]
    order = [name for name in order if name in ("iter", "<genexpr>")]
    assert order == ["iter", "<genexpr>", "iter", "<genexpr>"]


@needs_315
def test_a_generator_expression_from_its_code_makes_its_iterator_as_plainly():
    # 3.15's generator expression makes its iterator in its prologue, so
    # its code (gi_code) can be called with an iterable (test_generators'
    # test_new_gen_from_gi_code).  Overdubbed, its caller makes the
    # iterator; called from gi_code, the prologue makes it, as plainly.
    import types

    def program():
        generator = (x for x in range(10))
        again = types.FunctionType(generator.gi_code, {})(range(3))
        return list(again), next(generator)

    calls = Calls(metadata=[])
    assert cassette.overdub(calls, program) == program() == ([0, 1, 2], 0)
    order = [(getattr(f, "__name__", None), type(args[0]).__name__) for f, args in calls.metadata
             if getattr(f, "__name__", None) in ("iter", "<genexpr>")]
    # A function made from gi_code runs the rewritten code it was given, as
    # called (callables.runs_rewritten_code): hooks see its iter, not its call.
    assert order == [("iter", "range"), ("<genexpr>", "range_iterator"), ("iter", "range")]


def test_a_generator_expression_never_called_leaves_its_iterator_free():
    # The iterator the caller makes for a generator expression (3.15) is
    # noted for its prologue; a call that never starts, an ``execute``
    # that answers for the function, must not keep it alive.
    import gc
    import weakref

    class Numbers:
        def __init__(self):
            self.left = 3

        def __iter__(self):
            return self

        def __next__(self):
            if not self.left:
                raise StopIteration
            self.left -= 1
            return self.left

    class Answering(cassette.Context):
        def execute(self, f, *args, **kwargs):
            if getattr(f, "__name__", None) == "<genexpr>":
                return "answered"
            return f(*args, **kwargs)

    def program(numbers):
        return (n for n in numbers)

    numbers = Numbers()
    alive = weakref.ref(numbers)
    assert cassette.overdub(Answering(), program, numbers) == "answered"
    del numbers
    gc.collect()
    assert alive() is None


def test_a_generator_expression_with_inner_async_loops_gets_its_iterator():
    # An ``async for`` inside makes a generator expression an asynchronous
    # generator even when its outermost loop is a plain ``for`` (3.15's
    # test_coroutines.test_nested_comp): its caller makes that loop's
    # iterator all the same; with an outermost ``async for`` it does not.
    async def numbers(values):
        for value in values:
            yield value

    async def program():
        nested = ([i + j async for i in numbers([1, 2])] for j in [10, 20])
        outer = (x * 2 async for x in numbers([3, 4]))
        return [x async for x in nested], [x async for x in outer]

    def run(coroutine):
        try:
            coroutine.send(None)
        except StopIteration as stop:
            return stop.value
        raise AssertionError("the program awaited something")

    calls = Calls(metadata=[])
    expected = run(program())
    assert expected == ([[11, 12], [21, 22]], [6, 8])
    assert run(cassette.overdub(calls, program)) == expected


class Nothing(cassette.Context):
    pass


@needs_315
@pytest.mark.parametrize("context", [Nothing, Recorder], ids=["nothing", "hooks"])
def test_an_interrupt_during_enter_is_taken_inside_the_block(context):
    # 3.15 takes no interrupt right after a call of a method LOAD_SPECIAL
    # loaded (gh-148874), so one that arrives during a manager's __enter__
    # is taken in the block and __exit__ runs (test_with's
    # InterruptDuringEnter; the manager, written in C, interrupts itself).
    # Where in the block is not fixed: at its first call plainly, maybe at
    # a slot's call overdubbed.
    testinternalcapi = pytest.importorskip("_testinternalcapi")

    def program():
        manager = testinternalcapi.SelfInterruptingContextManager()
        try:
            with manager:
                manager.within()
        except KeyboardInterrupt:
            return "interrupted", "inside" if manager.within() else "exited"
        return "not interrupted", None

    expected = program()
    assert expected == ("interrupted", "exited")
    dubbed = cassette.overdub(context(metadata=[]), program)
    if IMPLEMENTATION == "cython":
        assert dubbed == expected
    else:
        # The pure-Python runtime's entry is Python code, whose own calls
        # take the interrupt: before the block, so __exit__ does not run.
        assert dubbed == ("interrupted", "inside")
