"""cassette.verify: bytecode a pass returns is checked before it runs.

Three kinds of evidence: every code object of a sample of the standard
library is accepted unchanged (no false positives) with a stack depth
within the compiler's ``co_stacksize``; each class of defect the contract
names is rejected with a message saying what is wrong; and random mutants of
real functions, run through ``cassette.overdub`` in a separate process,
never crash the interpreter.
"""

import importlib
import os
import subprocess
import sys
import types

import pytest
from bytecode import Bytecode, CompilerFlags, Instr, Label, TryBegin, TryEnd

import cassette
from cassette import ir, verify
from cassette.versions import LAYER

HERE = os.path.dirname(os.path.abspath(__file__))


# -- functions to edit -------------------------------------------------------

def simple(x):
    return x + 1


def looped(n):
    total = 0
    for i in range(n):
        total += i
    return total


def guarded(x):
    try:
        return 1 / x
    except ZeroDivisionError:
        return 0


def make_closure():
    a = 1

    def inner():
        return a
    return inner


inner = make_closure()


def squares(n):
    return list(i * i for i in range(n))


def branching(x):
    if x:
        return 1
    return 2


def negating(x):
    return not x


def editable(function):
    """The Bytecode a pass receives for ``function``."""
    return LAYER.bytecode_of(function.__code__)


def body_start(bytecode):
    return ir.body_start(bytecode)


def first(bytecode, name, arg=None):
    return next(i for i, e in enumerate(bytecode) if isinstance(e, Instr) and e.name == name
                and (arg is None or e.arg == arg))


def inserting(*instructions):
    def edit(bytecode):
        start = body_start(bytecode)
        bytecode[start:start] = [instr.copy() for instr in instructions]
    return edit


def replacing(name, make_new):
    def edit(bytecode):
        at = first(bytecode, name)
        new = make_new()
        bytecode[at: at + 1] = new if isinstance(new, list) else [new]
    return edit


def not_making_an_iterator():
    # GET_ITER's place, the stack left as it leaves it, with no iterator.
    return [Instr("NOP")] + LAYER.iterator_made(None)


def dropping_last(bytecode):
    del bytecode[-1]


def moving_prologue(bytecode):
    setup = bytecode.pop(first(bytecode, "COPY_FREE_VARS"))
    bytecode.insert(body_start(bytecode), setup)


def growing_loop_body(bytecode):
    bytecode.insert(first(bytecode, "STORE_FAST", "i") + 1, Instr("LOAD_CONST", 5))


def adding_argument(bytecode):
    bytecode.argcount += 1
    bytecode.argnames.append("extra")


def making_generator(bytecode):
    bytecode.flags |= CompilerFlags.GENERATOR


def adding_free_variable(bytecode):
    bytecode.freevars.append("other")


def dangling_handler(bytecode):
    start = body_start(bytecode)
    bytecode[start:start] = [TryBegin(Label(), False, 0), Instr("NOP"), TryEnd(None)]


def backward_jump_forward(bytecode):
    index = first(bytecode, "JUMP_BACKWARD")
    bytecode[index] = Instr("JUMP_FORWARD", bytecode[index].arg)


def junk_element(bytecode):
    list.insert(bytecode, body_start(bytecode), "junk")    # Bytecode.insert refuses it


def yield_value():
    return Instr("YIELD_VALUE", 0) if sys.version_info >= (3, 12) else Instr("YIELD_VALUE")


def leaking_genexpr_function(bytecode):
    bytecode.insert(first(bytecode, "MAKE_FUNCTION") + 1, Instr("COPY", 1))
    bytecode.insert(first(bytecode, "MAKE_FUNCTION") + 2, Instr("STORE_GLOBAL", "leak"))


DEFECTS = [
    ("junk element", simple, junk_element, "is not an Instr, Label, SetLineno, TryBegin or TryEnd"),
    ("stack underflow", simple, inserting(Instr("POP_TOP")), "stack underflow"),
    ("jump to a missing label", simple, inserting(Instr("JUMP_FORWARD", Label())),
     "jump target is not a label in the list"),
    ("handler label missing", simple, dangling_handler, "handler label is not in the list"),
    ("jump in the wrong direction", looped, backward_jump_forward, "jumps forward only"),
    ("falling off the end", simple, dropping_last, "execution can run past the end"),
    ("values left at return", simple,
     lambda b: b.insert(len(b) - 1, Instr("LOAD_CONST", 1)), "returns with 1 values left"),
    ("different depths where paths join", looped, growing_loop_body,
     "values on the stack where another path has"),
    ("LIST_APPEND to a non-list", simple,
     inserting(Instr("LOAD_CONST", 1), Instr("LOAD_CONST", 2), Instr("LIST_APPEND", 1),
               Instr("POP_TOP")), "where it needs a list"),
    ("NULL used as a value", simple,
     inserting(Instr("PUSH_NULL"), Instr("UNARY_NEGATIVE"), Instr("POP_TOP")),
     "takes a NULL where it needs a value"),
    ("COPY of a NULL", simple,
     inserting(Instr("PUSH_NULL"), Instr("COPY", 1), Instr("POP_TOP"), Instr("POP_TOP")),
     "COPY of a value that may be NULL"),
    ("FOR_ITER on a non-iterator", looped, replacing("GET_ITER", not_making_an_iterator),
     "where it needs an iterator"),
    ("RERAISE of a non-exception", guarded,
     inserting(Instr("LOAD_CONST", 3), Instr("RERAISE", 0)), "where it needs an exception"),
    ("IS_OP out of range", simple,
     inserting(Instr("LOAD_CONST", 1), Instr("LOAD_CONST", 2), Instr("IS_OP", 2),
               Instr("POP_TOP")), "IS_OP takes 0 or 1, not 2"),
    ("RAISE_VARARGS out of range", simple,
     inserting(Instr("LOAD_CONST", 1), Instr("LOAD_CONST", 2), Instr("LOAD_CONST", 2),
               Instr("RAISE_VARARGS", 3)), "RAISE_VARARGS takes 0, 1 or 2, not 3"),
    ("SWAP 1", simple, inserting(Instr("LOAD_CONST", 1), Instr("SWAP", 1), Instr("POP_TOP")),
     "SWAP needs an argument of at least 2"),
    ("SWAP below the stack", simple,
     inserting(Instr("LOAD_CONST", 1), Instr("SWAP", 3), Instr("POP_TOP")),
     "SWAP 3 reaches below the bottom of the stack"),
    ("frame setup moved", inner, moving_prologue, "frame setup (COPY_FREE_VARS)"),
    ("argument count changed", simple, adding_argument, "changed the frame's argcount from 1 to 2"),
    ("generator flag added", simple, making_generator, "changed the code flags from 0x3 to 0x23"),
    ("free variable added", inner, adding_free_variable,
     "changed the frame's freevars from ['a'] to ['a', 'other']"),
    ("STORE_FAST over a free variable", inner,
     replacing("RETURN_VALUE", lambda: Instr("STORE_FAST", "a")), "'a' is a free variable"),
    ("YIELD_VALUE outside a generator", simple,
     inserting(Instr("LOAD_CONST", 3), yield_value(), Instr("POP_TOP")),
     "YIELD_VALUE in code that is not a generator or coroutine"),
    ("generator expression function escaping", squares, leaking_genexpr_function,
     "COPY of a value that may be generator expression's function"),
]
if sys.version_info >= (3, 13):
    # Truth tests trust their operand to be a bool: a debug build aborts
    # on any other object, a release build takes it for neither.
    DEFECTS += [
        ("truth test of a value not cast to bool", branching,
         replacing("TO_BOOL", lambda: Instr("NOP")), "where it needs a bool"),
        ("not of a value not cast to bool", negating,
         replacing("TO_BOOL", lambda: Instr("NOP")), "where it needs a bool"),
    ]
if not LAYER.generator_expressions_take_iterable:
    # (3.15's generator expressions make their iterator: any value will do.)
    DEFECTS.append(("generator expression called on a non-iterator", squares,
                    replacing("GET_ITER", lambda: Instr("NOP")),
                    "a generator expression's function may only be called"))


@pytest.mark.parametrize("function, edit, message",
                         [case[1:] for case in DEFECTS], ids=[case[0] for case in DEFECTS])
def test_each_defect_is_rejected_with_a_message_naming_it(function, edit, message):
    bytecode = editable(function)
    verify.check(bytecode, function.__code__)      # accepted before the edit
    edit(bytecode)
    with pytest.raises(verify.InvalidBytecode) as info:
        verify.check(bytecode, function.__code__)
    assert message in str(info.value)


def test_an_unchecked_read_of_a_local_depends_on_the_version():
    bytecode = editable(simple)
    inserting(Instr("LOAD_FAST", "unset"), Instr("POP_TOP"))(bytecode)
    if sys.version_info >= (3, 12):
        # LOAD_FAST reads the slot without a check: an unbound local is NULL.
        with pytest.raises(verify.InvalidBytecode, match="reads local 'unset' unchecked"):
            verify.check(bytecode, simple.__code__)
    else:
        # 3.11's LOAD_FAST raises UnboundLocalError itself.
        verify.check(bytecode, simple.__code__)
        function = types.FunctionType(bytecode.to_code(), globals())
        with pytest.raises(UnboundLocalError):
            function(1)


def test_a_local_stored_before_it_is_read_is_accepted_and_runs():
    bytecode = editable(simple)
    inserting(Instr("LOAD_CONST", 41), Instr("STORE_FAST", "fresh"))(bytecode)
    bytecode[first(bytecode, "LOAD_FAST", "x")] = Instr("LOAD_FAST", "fresh")
    verify.check(bytecode, simple.__code__)
    assert types.FunctionType(bytecode.to_code(), globals())(0) == 42


@pytest.mark.skipif(sys.version_info < (3, 13), reason="truth tests take any value before 3.13")
def test_a_truth_test_of_a_constant_bool_is_accepted_and_runs():
    falses = [lambda: Instr("LOAD_CONST", False)]
    if sys.version_info >= (3, 15):
        from bytecode.instr import CommonConstant
        falses.append(lambda: Instr("LOAD_COMMON_CONSTANT", CommonConstant.CONSTANT_FALSE))
    for false in falses:
        bytecode = editable(branching)
        replacing("TO_BOOL", lambda: [Instr("POP_TOP"), false()])(bytecode)
        verify.check(bytecode, branching.__code__)
        assert types.FunctionType(bytecode.to_code(), globals())(True) == 2


def test_only_bytecode_objects_are_checked():
    with pytest.raises(verify.InvalidBytecode, match="expected a bytecode.Bytecode, got list"):
        verify.check([Instr("RETURN_VALUE")], simple.__code__)
    assert issubclass(verify.InvalidBytecode, ValueError)


def test_a_pass_returning_rejected_bytecode_is_a_pass_error_and_nothing_breaks():
    @cassette.Pass
    def underflow(ctx_type, func, code):
        if func is simple:
            inserting(Instr("POP_TOP"))(code)
        return code

    def program(x):
        return simple(x) * 2

    with pytest.raises(cassette.PassError) as info:
        cassette.overdub(cassette.Context(pass_=underflow), program, 3)
    assert "underflow" in str(info.value) and "simple" in str(info.value)
    assert isinstance(info.value.__cause__, verify.InvalidBytecode)
    assert "stack underflow" in str(info.value.__cause__)
    assert cassette.overdub(cassette.Context(), program, 3) == program(3)


# -- no false positives ------------------------------------------------------

STDLIB_SAMPLE = [
    "argparse", "asyncio.tasks", "collections", "contextlib", "dataclasses", "difflib",
    "email.message", "enum", "fractions", "functools", "inspect", "json.decoder",
    "re._parser", "statistics", "textwrap", "typing", "unittest.case", "zipfile",
]


def code_objects(code):
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from code_objects(constant)


@pytest.mark.parametrize("module_name", STDLIB_SAMPLE)
def test_compiled_stdlib_code_is_accepted_within_its_stack_size(module_name):
    module = importlib.import_module(module_name)
    top = module.__spec__.loader.get_code(module_name)
    checked = 0
    for code in code_objects(top):
        depth = verify._analyse(editable_code(code), code)
        assert depth <= code.co_stacksize, (code.co_qualname, depth, code.co_stacksize)
        checked += 1
    assert checked > 10


def editable_code(code):
    return LAYER.bytecode_of(code)


SNIPPETS = {
    "async generator expressions": (
        "async def f(source):\n"
        "    return [y async for y in (x async for x in source)], (await x for x in [1])\n"),
    "comprehensions inside comprehensions": (
        "def f(rows):\n"
        "    return {k: [v * w for w in rows if w] for k, v in enumerate(rows)}, "
        "list(x for x in (y for y in rows))\n"),
}
if sys.version_info >= (3, 12):          # PEP 695 syntax
    SNIPPETS.update({
        "generic function with defaults": (
            "def f[T](x: T = 1, *, y: T = 2) -> T:\n    return x\n"),
        "generic class in a class": (
            "class Outer[A]:\n    class Inner[C, D](list):\n        pass\n"),
        "type alias": "type Pairs[K] = list[tuple[K, K]]\n",
    })


@pytest.mark.parametrize("source", list(SNIPPETS.values()), ids=list(SNIPPETS))
def test_compiler_output_for_hidden_arguments_and_cells_is_accepted(source):
    for code in code_objects(compile(source, "<snippet>", "exec")):
        verify.check(editable_code(code), code)


# -- fuzzing ---------------------------------------------------------------------

@pytest.mark.parametrize("seed", [1, 2])
def test_mutants_are_rejected_or_run_without_crashing_the_interpreter(seed, tmp_path):
    count = 1500
    environment = dict(os.environ, CASSETTE_NO_DISK_CACHE="1",
                       PYTHONPATH=os.pathsep.join([os.path.dirname(HERE),
                                                   os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run(
        [sys.executable, os.path.join(HERE, "verify_fuzz.py"), str(seed), str(count)],
        capture_output=True, text=True, timeout=600, env=environment)
    assert result.returncode == 0, (result.returncode, result.stdout[-2000:],
                                    result.stderr[-2000:])
    last = result.stdout.strip().splitlines()[-1].split()
    rejected, ran = int(last[1]), int(last[3])
    assert rejected + ran == count
    # Both outcomes occur: the verifier neither rejects everything nor
    # lets everything through.
    assert rejected > count // 4 and ran > count // 20
