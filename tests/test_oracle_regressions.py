"""Small reproductions of engine bugs found by the CPython oracle
(``tests/test_cpython_oracle.py``), each run under a context that defines
nothing, under one with a catch-all prehook and under one with tagging."""

import sys

import pytest

import cassette
from cassette.entry import IMPLEMENTATION

PURE = IMPLEMENTATION == "python"


class Nothing(cassette.Context):
    pass


class Touching(cassette.Context):
    def prehook(self, f, *args, **kwargs):
        type(f)
        len(args)


def Tagging():
    """A context with tagging enabled (nothing tagged)."""
    return cassette.enabletagging(Nothing(), print)


CONTEXTS = [Nothing, Touching, Tagging]


@pytest.fixture(params=CONTEXTS, ids=lambda c: c.__name__)
def ctx(request):
    return request.param()


# test_grammar.test_var_annot_in_module: importlib's _ModuleLock calls
# super().__init__() on a class that overrides __init__; the builtin method
# super() returns was reported as the subclass's own __init__ (recursion).
def test_super_reaches_builtin_method_of_base(ctx):
    class D(dict):
        def __init__(self):
            super().__init__(a=1)

        def update(self, other):
            super().update(other)
            self["u"] = 1

    def program():
        d = D()
        d.update({"b": 2})
        return d

    assert cassette.overdub(ctx, program) == {"a": 1, "b": 2, "u": 1}


# test_scope.testClassAndGlobal / testScopeOfGlobalStmt call exec(source)
# without namespaces: the builtin reads its caller's globals and locals, which
# must be the program's, and the code it runs must run overdubbed.
def test_exec_and_eval_use_the_callers_namespaces(ctx):
    def program(y):
        x = 1
        exec("z = x + y")
        return eval("  x + y"), eval("z", None, {"z": 5})

    assert cassette.overdub(ctx, program, 2) == (3, 5)


def test_code_run_by_exec_and_eval_is_overdubbed():
    class Seen(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            self.metadata.append(f)

    def inner():
        return "inner"

    def program():
        namespace = {"inner": inner}
        exec("result = inner()", namespace)
        return namespace["result"], eval("inner()", {"inner": inner})

    ctx = Seen(metadata=[])
    assert cassette.overdub(ctx, program) == ("inner", "inner")
    assert ctx.metadata.count(inner) == 2


def test_exec_keeps_the_callers_future_flags(ctx):
    namespace = {}
    exec("from __future__ import annotations\n"
         "def program():\n"
         "    ns = {}\n"
         "    exec('def f(x: undefined_name): pass', ns)\n"
         "    return ns['f'].__annotations__\n", namespace)
    assert cassette.overdub(ctx, namespace["program"]) == {"x": "undefined_name"}


def test_exec_and_eval_raise_the_builtins_errors(ctx):
    def program():
        errors = []
        for bad in (lambda: exec("1 +"), lambda: exec(42), lambda: eval("x", []),
                    lambda: exec("pass", {}, 42)):
            try:
                bad()
            except Exception as e:
                errors.append(type(e))
        return errors

    assert cassette.overdub(ctx, program) == program()


def test_class_bodies_run_overdubbed():
    class Seen(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            self.metadata.append(f)

    def helper():
        return 42

    def program():
        class C:
            attribute = helper()

            def method(self):
                return __class__

        return C.attribute, C().method() is C

    ctx = Seen(metadata=[])
    assert cassette.overdub(ctx, program) == (42, True)
    assert helper in ctx.metadata


# test_exceptions.testExceptionCleanupState segfaulted: the bytecode
# package recomputed the exception table's stack depths of a `finally:
# raise` inside an `except` block too deep, and unwinding freed values the
# frame did not own.  The rewrite keeps the original depths.
def test_reraise_in_finally_inside_except(ctx):
    class Held:
        pass

    def fail():
        raise KeyError

    def program():
        held = Held()
        try:
            fail()
        except KeyError:
            try:
                try:
                    raise
                finally:
                    raise
            except KeyError:
                pass
        return held

    for _ in range(3):
        assert type(cassette.overdub(ctx, program)) is Held


# Cython names a traceback entry of the core by the relative path of the
# source file it was written in: every one of them is the library's, so that
# no entry of the core is left in a traceback the program sees (pyparsing
# counts the entries to learn how many arguments a parse action takes).
def test_every_source_of_the_core_names_library_entries():
    import pathlib

    from cassette import callables

    package = pathlib.Path(cassette.__file__).parent
    sources = [package / "_core.pyx", *sorted((package / "_core_src").glob("*.pxi"))]
    assert len(sources) >= 6
    for source in sources:
        relative = str(source.relative_to(package.parent))
        code = compile("pass", relative, "exec")
        assert callables.is_library_code(code), relative
    assert not callables.is_library_code(compile("pass", "program/_core_src/x.pxi", "exec"))


# test_exceptions.PEP626Tests, test_raise.TestTracebackType.test_attrs and
# test_contextlib's traceback tests read the tracebacks of exceptions the
# program catches: cassette's own frames must not be in them.
def test_tracebacks_caught_by_the_program_show_only_its_frames(ctx):
    import traceback

    class Manager:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            raise KeyError("exit")

    class Boom:
        def __init__(self):
            raise ValueError("init")

    def divide():
        return 1 / 0

    class Thing:
        def method(self):
            return divide()

    def program():
        names = []
        cases = (
            lambda: divide(),
            lambda: Thing().method(),
            lambda: Boom(),
            lambda: Thing().missing(),
            lambda: exec("divide()"),
            lambda: [x for x in (1, 0) if 1 / x],
        )
        for case in cases:
            try:
                case()
            except Exception as e:
                names.append([f.name for f in traceback.extract_tb(e.__traceback__)])
        try:
            with Manager():
                pass
        except KeyError as e:
            names.append([f.name for f in traceback.extract_tb(e.__traceback__)])
        return names

    expected = program()
    assert cassette.overdub(ctx, program) == expected


# test_exceptions.testSettingException (3.11): a C function raised a class
# whose __init__ fails; 3.11 instantiates it lazily, when the program's
# frame catches it, and keeps the traceback it had only if the failure
# brings none.  The failure left the routed __init__ through the core and
# carried the core's entries, so the program's entry was lost.  The class:
# exceptions leaving Python code the interpreter calls from C (instantiation
# from C, sort keys, comparisons, property getters, iteration) carry the
# traceback a plain call gives.
def test_exceptions_from_code_called_from_c_keep_their_tracebacks(ctx):
    import traceback
    _testcapi = pytest.importorskip("_testcapi")

    class BadInit(Exception):
        def __init__(self):
            raise RuntimeError("init")

    class Compared:
        def __eq__(self, other):
            raise KeyError("eq")

    class Getter:
        @property
        def value(self):
            raise AttributeError("getter")

    class Counting:
        def __iter__(self):
            return self

        def __next__(self):
            raise ValueError("next")

    def key(item):
        raise LookupError("key")

    cases = [
        lambda: _testcapi.raise_exception(BadInit, 1),   # __init__ of the wrong arity
        lambda: sorted([2, 1], key=key),
        lambda: Compared() in [1],
        lambda: getattr(Getter(), "value"),
        lambda: list(Counting()),
        lambda: BadInit(1),
    ]
    # __init__ raising when 3.11 instantiates lazily: the pure runtime's
    # frames catch and re-raise what passes through them (to drop their own
    # traceback entries), which instantiates it early (docs/overdub.md).
    if not (PURE and sys.version_info < (3, 12)):
        cases.append(lambda: _testcapi.raise_exception(BadInit, 0))

    def program():
        seen = []
        for case in cases:
            try:
                case()
            except Exception as e:
                seen.append((type(e).__name__,
                             [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)]))
        return seen

    expected = program()
    assert len(expected) == len(cases) and all(frames for _, frames in expected), expected
    assert cassette.overdub(ctx, program) == expected


# test_coroutines.test_nested_comp crashed the interpreter: an async
# comprehension ends through its StopAsyncIteration handler, and the stack
# simulation seeded handlers with unknown values, losing the NULL below
# `sum`, so the rewrite resolved the NULL instead of the callable.
def test_call_around_an_async_comprehension(ctx):
    async def numbers(n):
        for i in range(n):
            yield i

    async def program():
        return {sum([i async for i in numbers(j)]) for j in [3, 5]}

    def drive():
        coroutine = program()
        try:
            coroutine.send(None)
        except StopIteration as stop:
            return stop.value

    assert cassette.overdub(ctx, drive) == {3, 10}


# test_generators.test_name: a generator takes its names from the function
# when called; the rewritten body copied them, and a cache kept a stale copy
# after the program renamed the function.  Keyword defaults likewise.
def test_renamed_function_and_new_keyword_defaults(ctx):
    def gen(*, k=1):
        yield k

    def program():
        first = next(gen())
        gen.__name__ = "renamed"
        gen.__qualname__ = "Renamed"
        gen.__kwdefaults__ = {"k": 2}
        g = gen()
        return first, g.__name__, g.__qualname__, next(g)

    assert cassette.overdub(ctx, program) == (1, "renamed", "Renamed", 2)


# test_functools.test_lru_reentrancy_with_len replaces builtins.len with an
# lru_cache of it: cassette's own len(dict) calls then failed (unhashable).
# (Code first rewritten meanwhile still runs the bytecode package with the
# program's builtins; the loop below avoids 3.11's comprehension function.)
def test_program_replacing_a_builtin_does_not_break_cassette(ctx):
    import builtins
    import functools

    def make():
        def fresh(n):      # a new function of already rewritten code: a cache miss
            return n
        return fresh

    def program():
        make()(0)
        real = builtins.len
        builtins.len = functools.lru_cache(4)(real)
        try:
            out = ()       # hashable, like everything the Touching hook's len sees
            for i in (0, 1, 1, 2):
                out += (make()(len("a" * i)),)
            return out
        finally:
            builtins.len = real

    assert cassette.overdub(ctx, program) == (0, 1, 1, 2)


# test_listcomps.test_cell_inner_free_outer (3.13): the bytecode package
# cannot decompile a function whose inlined comprehension makes a cell of a
# name that is also one of the function's free variables.  Such code runs
# un-rewritten instead of failing.
def test_code_the_bytecode_package_cannot_read_still_runs(ctx):
    def outer():
        x = ...

        def f():
            return [lambda: x for x in (x, [1])[1]]

        return [fn() for fn in f()]

    assert cassette.overdub(ctx, outer) == [1]


# test_iter.test_reduce_mutating_builtins_iter: an iterator's __reduce__
# looks `iter` up in the builtins of the frame calling it.  The pure
# runtime's frames that call into the program (3.11/3.12 call `it.m()`
# through one) must keep the program's builtins, not cassette's snapshot.
def test_c_functions_called_for_the_program_see_its_builtins(ctx):
    import builtins

    namespace = builtins.__dict__

    def program():
        it = iter("xyz")
        original = namespace["iter"]

        class Key:
            def __hash__(self):
                return hash("iter")

            def __eq__(self, other):
                list(it)                  # exhausts the iterator
                return other == "iter"

        del namespace["iter"]
        namespace[Key()] = original
        try:
            return it.__reduce__()
        finally:
            for key in [k for k in namespace if type(k) is Key]:
                del namespace[key]
            namespace["iter"] = original

    assert cassette.overdub(ctx, program) == (iter, ("",))


def _star_argument_callee(*args):
    return args


# test_extcall: the interpreter names the callable in the errors of star-
# arguments; the wrapper a hooked or tagging context calls must not show.
@pytest.mark.parametrize("call", [
    lambda: len(*5), lambda: len(**5), lambda: _star_argument_callee(*5),
    lambda: _star_argument_callee(**[]),
])
def test_star_argument_errors_name_the_callee(ctx, call):
    with pytest.raises(TypeError) as plain:
        call()
    with pytest.raises(TypeError) as dubbed:
        cassette.overdub(ctx, call)
    assert str(dubbed.value) == str(plain.value)


# test_funcattrs.test___builtins__: a function made without "__builtins__" in
# its globals takes the builtins of the frame that makes it.
def test_a_function_made_at_run_time_takes_the_callers_builtins(ctx):
    source = "def f(): pass\ng = type(f)(f.__code__, {})\n"
    namespace = {"__builtins__": {"type": type}}

    def run():
        exec(source, namespace)
        return namespace["g"].__builtins__

    expected = run()
    assert cassette.overdub(ctx, run) is expected == {"type": type}


# test_generators' test_new_gen_from_gi_code (3.14): a generator made from a
# running generator's code object — the rewritten copy — and handed a range
# where its loop expects an iterator.  The Cython core stepped such a loop
# with Cython's own next(), whose error reads "range object is not an
# iterator"; the interpreter's quotes the type name.

def _generator_from_its_code():
    import types

    def numbers():
        return (x for x in range(10))

    generator = numbers()
    again = types.FunctionType(generator.gi_code, {})(range(3))
    try:
        list(again)
    except TypeError as error:
        return str(error)
    return None


@pytest.mark.skipif(sys.version_info < (3, 14),
                    reason="the interpreter itself crashes on this program before 3.14 "
                           "(a generator's code run with a non-iterator)")
def test_a_loop_over_a_non_iterator_fails_as_the_interpreter_says(ctx):
    # (3.15's generator expression makes its own iterator: there it runs.)
    expected = _generator_from_its_code()
    assert expected is None or expected.startswith("'range' object")
    assert cassette.overdub(ctx, _generator_from_its_code) == expected


# Differential fuzzing (tests/test_differential.py), 3.15: a literal pattern
# whose subject a later case still needs compiles to ``COPY 1;
# LOAD_COMMON_CONSTANT True; IS_OP``, the three instructions of 3.14's
# inlined any()/all()/tuple() (3.15: list(), set()) test of the global
# against the builtin, which the layer turns into a test that always fails
# so the builtin is called as on every other release.  Read as that, ``case
# True:`` never matched.  Each literal a LOAD_COMMON_CONSTANT loads (and
# others), first of several cases.

_LITERAL_PATTERN_SOURCE = """
def classify(subject):
    match subject:
        case {literal}:
            return "first"
        case "other":
            return "second"
        case [*_]:
            return "sequence"
    return "none"
"""


@pytest.mark.parametrize("literal", ["True", "False", "None", "''", "-1", "0", "1", "'x'"])
def test_a_literal_pattern_before_another_case_matches(ctx, literal):
    namespace = {}
    exec(_LITERAL_PATTERN_SOURCE.format(literal=literal), namespace)
    classify = namespace["classify"]
    subjects = [True, False, None, "", -1, 0, 1, "x", "other", [1], 2.5]

    def program():
        return [classify(subject) for subject in subjects]

    expected = program()
    assert expected.count("first") >= 1 and "second" in expected
    assert cassette.overdub(ctx, program) == expected


def test_builtins_called_with_a_generator_expression_are_called(ctx):
    # The other side of the same test: any()/all()/tuple()/list()/set() of
    # a generator expression are calls, whatever the release inlines.
    def program(xs):
        return (any(x > 2 for x in xs), all(x for x in xs), tuple(x for x in xs),
                list(x * 2 for x in xs), sorted(set(x % 2 for x in xs)))

    expected = program([1, 2, 3])
    assert cassette.overdub(ctx, program, [1, 2, 3]) == expected

    class Seen(cassette.Context):
        def prehook(self, f, *args, **kwargs):
            self.metadata.append(f)

    seen = Seen(metadata=[])
    cassette.overdub(seen, program, [1, 2, 3])
    assert [f for f in seen.metadata if f in (any, all, tuple, list, set)] == [
        any, all, tuple, list, set]


@pytest.mark.skipif(sys.version_info < (3, 14),
                    reason="LOAD_COMMON_CONSTANT (opcode._common_constants) is new in 3.14")
def test_the_layer_reads_load_common_constant_as_the_interpreter_does():
    import opcode

    from cassette.versions import LAYER

    table = opcode._common_constants
    builtins_called = {all, any, tuple, list, set}
    assert LAYER.inlined_builtin_constants == {
        index for index, value in enumerate(table)
        if any(value is builtin for builtin in builtins_called)}
    values = getattr(sys.modules[type(LAYER).__module__], "_COMMON_VALUES", {})
    for index, value in values.items():
        assert table[index] is value or table[index] == value and type(table[index]) is type(value)
