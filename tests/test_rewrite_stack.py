"""The stack size the rewrite gives its code is enough.

The rewrite tells the assembler how deep the value stack gets instead of
letting it analyse the code again; too small a number would let the
interpreter write past the frame.  Checked here against an independent flow
analysis of the assembled code (``dis`` stack effects, the exception table's
handler depths) over whole standard-library modules.
"""

import dis
import importlib
import types

import pytest

from cassette import rewrite
from cassette.operations import Intercept

MODULES = ["asyncio.runners", "argparse", "json.encoder", "statistics", "fractions",
           "textwrap", "difflib", "email.message", "inspect", "dataclasses", "enum",
           "zipfile", "tarfile", "contextlib", "functools"]

_FINAL = {"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE", "JUMP_FORWARD",
          "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP"}


def deepest_stack(code):
    """The deepest the value stack of ``code`` gets on any path."""
    instructions = list(dis.get_instructions(code))
    position = {instr.offset: k for k, instr in enumerate(instructions)}
    handlers = dis._parse_exception_table(code)
    depth_at = {0: 0}
    work = [0]
    deepest = 0

    def reach(offset, depth):
        if depth_at.get(offset, -1) < depth:
            depth_at[offset] = depth
            work.append(offset)

    while work:
        offset = work.pop()
        depth = depth_at[offset]
        deepest = max(deepest, depth)
        instr = instructions[position[offset]]
        for entry in handlers:
            if entry.start <= offset < entry.end:
                reach(entry.target, entry.depth + int(entry.lasti) + 1)
        arg = instr.arg if instr.opcode >= dis.HAVE_ARGUMENT else None
        if instr.opcode in dis.hasjrel or instr.opcode in dis.hasjabs:
            taken = depth + dis.stack_effect(instr.opcode, arg, jump=True)
            deepest = max(deepest, taken)
            reach(instr.argval, taken)
        if instr.opname in _FINAL:
            continue
        after = depth + dis.stack_effect(instr.opcode, arg, jump=False)
        deepest = max(deepest, after)
        if position[offset] + 1 < len(instructions):
            reach(instructions[position[offset] + 1].offset, after)
    return deepest


def functions_of(module):
    found = []
    for value in vars(module).values():
        candidates = [value] + (list(vars(value).values()) if isinstance(value, type) else [])
        for candidate in candidates:
            candidate = getattr(candidate, "__func__", candidate)
            if isinstance(candidate, types.FunctionType):
                found.append(candidate)
    return found


@pytest.mark.parametrize("name", MODULES)
def test_rewritten_code_has_room_for_its_deepest_stack(name):
    kinds = rewrite.kinds_for(Intercept.ALL)
    checked = 0
    for function in functions_of(importlib.import_module(name)):
        code = function.__code__
        rewritten = rewrite._rewritten_code(code, kinds, (), None)
        if rewritten is code:
            continue
        assert deepest_stack(rewritten) <= rewritten.co_stacksize, function.__qualname__
        assert deepest_stack(code) <= code.co_stacksize          # the analysis itself
        checked += 1
    assert checked >= 5


def _many_keywords(g, a):
    # More keywords than fit one call instruction: the compiler builds a dict
    # with BUILD_MAP and MAP_ADD 1 and calls with CALL_FUNCTION_EX (attrs'
    # ``attrib`` does this; a wrong depth there crashed the interpreter).
    return g(k0=a, k1=a, k2=a, k3=a, k4=a, k5=a, k6=a, k7=a, k8=a, k9=a,
             k10=a, k11=a, k12=a, k13=a, k14=a, k15=a, k16=a, k17=a, k18=a, k19=a)


def _many_entries(a):
    return {a: 0, a + 1: 1, a + 2: 2, a + 3: 3, a + 4: 4, a + 5: 5, a + 6: 6, a + 7: 7,
            a + 8: 8, a + 9: 9, a + 10: 10, a + 11: 11, a + 12: 12, a + 13: 13,
            a + 14: 14, a + 15: 15, a + 16: 16, a + 17: 17, **{a + 18: 18}}


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


@pytest.mark.parametrize("name", MODULES + [__name__])
def test_stack_simulation_agrees_with_the_interpreters_stack_effects(name):
    """The rewrite's stack simulation (which value a call site resolves,
    where a NULL sits) steps each instruction by the depth the interpreter
    itself gives it: one instruction counted wrong shifts every later site
    of the function onto the wrong value.  Checked for every instruction
    that falls through, over whole modules and this one's shapes."""
    import bytecode

    checked = 0
    for function in functions_of(importlib.import_module(name)):
        for code in _code_objects(function.__code__):
            elements = list(bytecode.Bytecode.from_code(
                code, conserve_exception_block_stackdepth=True))
            before = rewrite.stack_tags(elements)
            for index, instr in enumerate(elements[:-1]):
                following = elements[index + 1]
                if (not isinstance(instr, bytecode.Instr) or instr.name in _FINAL
                        or not isinstance(following, bytecode.Instr)
                        or before[index] is None or before[index + 1] is None
                        or instr.is_cond_jump() or instr.name in ("FOR_ITER", "SEND")):
                    continue
                # bytecode's stack_effect is dis.stack_effect of the assembled
                # instruction.
                expected = len(before[index]) + instr.stack_effect(jump=False)
                if expected < 0:
                    # 3.11's generator prologue: RETURN_GENERATOR's table
                    # effect is 0, and the POP_TOP after it pops the value
                    # sent in when the generator first resumes.
                    continue
                assert len(before[index + 1]) == expected, (function.__qualname__, instr)
                checked += 1
    assert checked >= 50


def test_many_keywords_and_entries_run_overdubbed():
    import cassette

    class Nothing(cassette.Context):
        pass

    def collect(**kw):
        return sorted(kw.items())

    assert cassette.overdub(Nothing(), _many_keywords, collect, 7) == _many_keywords(collect, 7)
    assert cassette.overdub(Nothing(), _many_entries, 3) == _many_entries(3)
