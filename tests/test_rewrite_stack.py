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
