"""Helpers for writing passes (reference §5): markers, Cassette's IR functions,
and version-independent building blocks.

A pass gets the ``bytecode.Bytecode`` of a function's original code — a list
of ``Instr``, ``Label``, ``TryBegin``/``TryEnd`` and ``SetLineno`` elements —
and returns bytecode.  Jumps target :class:`bytecode.Label` elements, not
instructions, so inserting before an instruction keeps every jump to it
pointing at the first inserted one (the label sits in front).

Markers (constants a pass loads with ``LOAD_CONST``):

* :data:`CONTEXT` loads the running context.
* :func:`nooverdub` ``(callee)``: a call whose callable is this constant is not
  intercepted; ``callee`` runs as a handler does (not overdubbed by the
  context, still seen by an enclosing one).  Everything else a pass inserts
  is intercepted like the program's own code.

Cassette's IR functions, for instruction lists:

* :func:`insert_statements` ``(instrs, stmtcount, newstmts)``
* :func:`replace_match` ``(replace, ismatch, x)``

Building blocks that spell the same thing on 3.11, 3.12 and 3.13:

* :func:`call` / :func:`call_statement`: call a callee with arguments;
* :func:`variable`: load a local, cell or free variable;
* :func:`call_sites`, :func:`loaded_name`, :func:`replace_callee`: find the
  calls of a function and change what they call;
* :func:`body_start`: where the code's body begins, after the frame setup;
* :func:`line_starts`: where each source line begins (a place to insert);
* :func:`back_edges` and :func:`on_jump_taken`: the jumps that close loops,
  and code that runs when a jump is taken;
* :func:`rewritten_code` and :func:`dis`: the code that actually runs for a
  function under a context, for debugging a pass.
"""

from __future__ import annotations

import dis as _dis
import sys
import types
from typing import Any, Callable, Iterable, Sequence, TextIO, TypeVar

from bytecode import Bytecode, CellVar, FreeVar, Instr, Label
from bytecode.instr import InstrLocation

from .rewrite import CONTEXT, NoOverdub, stack_producers, stack_tags, following
from .versions import LAYER
from .context import Context
from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_CodeType = types.CodeType
_dis_dis = _dis.dis

__all__ = [
    "CONTEXT", "nooverdub", "insert_statements", "replace_match", "call",
    "call_statement", "variable", "call_sites", "CallSite", "loaded_name",
    "replace_callee", "body_start", "line_starts", "back_edges", "on_jump_taken", "rewritten_code",
    "dis",
]


#: A list of bytecode elements (``Instr``, ``Label``, ``TryBegin`` …), as a
#: ``bytecode.Bytecode`` is; the functions that change one in place return it.
_Elements = TypeVar("_Elements", bound=list[Any])
#: Where an instruction comes from, as ``Instr(location=…)`` takes it.
Location = InstrLocation | int | None


def nooverdub(callee: Callable[..., Any]) -> NoOverdub:
    """A constant standing for ``callee`` whose calls are not intercepted."""
    return NoOverdub(callee)


# -- Cassette's IR functions ---------------------------------------------------

def insert_statements(instrs: _Elements, stmtcount: Callable[[Instr, int], int | None],
                      newstmts: Callable[[Instr, int], Sequence[Any]]) -> _Elements:
    """Replace instructions of ``instrs`` (a ``Bytecode`` or list, changed in
    place and returned) by new ones, as Cassette's ``insert_statements!``.

    For every instruction ``stmt`` at position ``i`` of the original list
    (labels and pseudo-instructions are not offered), ``stmtcount(stmt, i)``
    returns ``None`` to keep it, or an ``int`` n: then ``stmt`` is removed and
    the n elements ``newstmts(stmt, i)`` take its place (include ``stmt``
    among them to keep it).  ``ValueError`` if the lengths differ.  New
    instructions without a location get the location of ``stmt``.  A jump to
    ``stmt`` lands on the first new element.
    """
    original = list(instrs)
    out = []
    for i, stmt in enumerate(original):
        if not isinstance(stmt, Instr):
            out.append(stmt)
            continue
        count = stmtcount(stmt, i)
        if count is None:
            out.append(stmt)
            continue
        new = list(newstmts(stmt, i))
        if len(new) != count:
            raise ValueError(
                f"insert_statements: stmtcount said {count} for {stmt!r} at {i}, "
                f"newstmts returned {len(new)} elements")
        out.extend(_located(new, stmt.location))
    instrs[:] = out
    return instrs


def replace_match(replace: Callable[[Any], Any], ismatch: Callable[[Any], bool], x: Any) -> Any:
    """``x`` (a ``Bytecode`` or list, changed in place and returned) with
    every element ``y`` for which ``ismatch(y)`` replaced by ``replace(y)``,
    as Cassette's ``replace_match!``.

    ``replace(y)`` returns one element or a list of them (spliced in; a jump
    to ``y`` lands on the first).  An element that does not match but is
    itself a list is searched the same way.  New instructions without a
    location get the location of ``y``.

    ``x`` that is not a list (an instruction, a label, any value) is
    returned unchanged, or ``replace(x)`` when ``ismatch(x)``: Cassette
    applies ``replace_match!`` to leaves the same way.
    """
    if not isinstance(x, list):
        return replace(x) if ismatch(x) else x
    out = []
    for y in list(x):
        if ismatch(y):
            new = replace(y)
            new = list(new) if isinstance(new, (list, tuple)) else [new]
            out.extend(_located(new, getattr(y, "location", None)))
        elif isinstance(y, list):
            out.append(replace_match(replace, ismatch, y))
        else:
            out.append(y)
    x[:] = out
    return x


def _located(elements, location):
    if location is None:
        return elements
    for element in elements:
        if isinstance(element, Instr) and element.location is None:
            element.location = location
    return elements


# -- building blocks -----------------------------------------------------------

def call(callee: Any, *args: Any, location: Location = None) -> list[Instr]:
    """Instructions that call ``callee`` (a constant: wrap it in
    :func:`nooverdub` to keep the call from being intercepted) with
    ``args`` and leave the result on the stack.  Each argument is a list of
    instructions that pushes one value (an expression: :func:`variable`,
    another :func:`call` …) or any other value, loaded as a constant
    (:data:`CONTEXT` included)."""
    code = _callable_pair(callee, location)
    for arg in args:
        if isinstance(arg, list):
            code += arg
        else:
            code.append(Instr("LOAD_CONST", arg, location=location))
    code += LAYER.call_opcodes(len(args), location)
    return code


def call_statement(callee: Any, *args: Any, location: Location = None) -> list[Instr]:
    """:func:`call`, discarding the result: stack-neutral, ready for
    :func:`insert_statements`."""
    return call(callee, *args, location=location) + [Instr("POP_TOP", location=location)]


def _callable_pair(callee, location):
    """Push ``callee`` (constant) and the NULL a call expects, in this
    version's order."""
    load = Instr("LOAD_CONST", callee, location=location)
    null = Instr("PUSH_NULL", location=location)
    return [null, load] if LAYER.null_below_callable else [load, null]


def variable(code: Bytecode, name: str, location: Location = None) -> list[Instr]:
    """Instructions loading the variable ``name`` of ``code`` (a local, or a
    cell or free variable of a closure)."""
    if name in code.cellvars:
        return [Instr("LOAD_DEREF", CellVar(name), location=location)]
    if name in code.freevars:
        return [Instr("LOAD_DEREF", FreeVar(name), location=location)]
    return [Instr("LOAD_FAST", name, location=location)]


class CallSite:
    """A call in a function's code.

    ``call``    the instruction that makes the call (``CALL``, ``CALL_KW``,
                ``CALL_FUNCTION_EX``)
    ``callee``  the instruction that pushed the callable, or None when the
                stack does not say (after a merge of paths)
    ``method``  True when the callable was loaded as a method of an object
                (``obj.m(…)``: the load also pushed ``obj``)
    """

    __slots__ = ("call", "callee", "method")
    call: Instr
    callee: Instr | None
    method: bool

    def __init__(self, call: Instr, callee: Instr | None, method: bool) -> None:
        self.call = call
        self.callee = callee
        self.method = method

    def __repr__(self):
        return f"<CallSite {loaded_name(self.callee)!r} by {self.call.name}>"


def call_sites(code: Iterable[Any]) -> list[CallSite]:
    """The :class:`CallSite` of every reachable call in ``code`` (a
    ``Bytecode`` or list of elements), in order."""
    elements = list(code)
    tags = stack_tags(elements)
    producers = None
    sites = []
    index = 0
    while index < len(elements):
        element = elements[index]
        site = None
        if isinstance(element, Instr) and tags[index] is not None:
            site = LAYER.site(element, following(elements, index))
        if site is None or site.kind not in ("call", "call_kw", "call_ex"):
            index += 1
            continue
        if producers is None:
            producers = stack_producers(elements)
        state = producers[index] or []
        callable_depth, partner_depth = LAYER.call_layout(site)
        callee = state[-callable_depth] if len(state) >= callable_depth else None
        partner = state[-partner_depth] if len(state) >= partner_depth else None
        method = False
        for load in (partner, callee):
            if load is not None and LAYER.is_method_load(load):
                callee, method = load, True
        if callee is not None and callee.name == "PUSH_NULL":
            callee = None
        sites.append(CallSite(elements[index + site.span - 1], callee, method))
        index += site.span
    return sites


def loaded_name(instr: Any) -> str | None:
    """The name ``instr`` loads (``LOAD_GLOBAL``, ``LOAD_NAME``, ``LOAD_FAST``,
    ``LOAD_DEREF``, ``LOAD_ATTR``, ``LOAD_METHOD`` …), or None."""
    if not isinstance(instr, Instr) or not instr.name.startswith("LOAD_"):
        return None
    arg = instr.arg
    if isinstance(arg, tuple):
        arg = arg[-1]
    if isinstance(arg, (CellVar, FreeVar)):
        return arg.name
    return arg if isinstance(arg, str) else None


def replace_callee(code: _Elements, site: CallSite, new_callee: Any) -> _Elements:
    """Make ``site`` (a :class:`CallSite` of ``code``) call ``new_callee``
    instead: a constant, or a list of instructions computing the callable.
    The arguments stay as they are.  ``ValueError`` for a method call
    (``obj.m(…)``) or a site whose callable is unknown."""
    if site.callee is None or site.method:
        raise ValueError(f"replace_callee: cannot replace the callable of {site!r}")
    expression = (list(new_callee) if isinstance(new_callee, list)
                  else [Instr("LOAD_CONST", new_callee)])
    loc = site.callee.location
    _located(expression, loc)
    if LAYER.pushes_null(site.callee):
        # The load pushed the call's NULL too: push it with the new callable.
        null = Instr("PUSH_NULL", location=loc)
        expression = [null] + expression if LAYER.null_below_callable else expression + [null]
    for index, element in enumerate(code):
        if element is site.callee:
            code[index: index + 1] = expression
            return code
    raise ValueError(f"replace_callee: {site!r} is not in this code")


def body_start(code: Iterable[Any]) -> int:
    """The index just after the ``RESUME`` that starts ``code``: the first
    place a pass may insert instructions.  Before it is the frame setup
    (``MAKE_CELL``, ``COPY_FREE_VARS``, ``RETURN_GENERATOR`` … and, for a
    generator expression on 3.15, the making of its iterator after a
    ``RESUME`` of its own), which the interpreter needs first."""
    for index, element in enumerate(code):
        if (isinstance(element, Instr) and element.name == "RESUME"
                and type(element.arg) is int and LAYER.resume_starts_code(element.arg)):
            return index + 1
    raise ValueError("body_start: the code has no RESUME that starts it")


def line_starts(code: Iterable[Any]) -> dict[int, int]:
    """``{line number: index}``: for each source line of ``code``, the index
    of its first instruction (in code order) before which statements may be
    inserted — after the function's prologue, never inside an instruction
    pair that must stay together."""
    elements = list(code)
    starts = {}
    previous = None
    for index in range(body_start(elements), len(elements)):
        element = elements[index]
        if not isinstance(element, Instr):
            continue
        glued = previous is not None and LAYER.binds_to_next(previous)
        previous = element
        line = element.lineno
        if glued or not isinstance(line, int) or line in starts:
            continue
        starts[line] = index
    return starts


def back_edges(code: Iterable[Any]) -> list[Instr]:
    """The jump instructions of ``code`` that close a loop: jumps to a label
    placed before them (not those of ``await``/``yield from``)."""
    seen_labels = set()
    edges = []
    for element in code:
        if isinstance(element, Label):
            seen_labels.add(element)
        elif (isinstance(element, Instr) and LAYER.is_loop_jump(element)
                and element.arg in seen_labels):
            edges.append(element)
    return edges


def on_jump_taken(code: _Elements, jump: Instr, statements: Iterable[Instr]) -> _Elements:
    """Insert ``statements`` (stack-neutral instructions) into ``code`` so
    they run exactly when the jump instruction ``jump`` is taken.  An
    unconditional jump gets them in front; a conditional one becomes the
    inverse jump over ``statements`` followed by an unconditional jump.
    ``ValueError`` for a jump that has no inverse."""
    index = next((i for i, e in enumerate(code) if e is jump), None)
    if index is None:
        raise ValueError(f"on_jump_taken: {jump!r} is not in this code")
    statements = _located(list(statements), jump.location)
    if not jump.is_cond_jump():
        code[index:index] = statements
        return code
    skip = Label()
    inverse = LAYER.inverted_forward_jump(jump, skip)
    if inverse is None:
        raise ValueError(f"on_jump_taken: cannot split the conditional jump {jump!r}")
    backward = any(e is jump.arg for e in code[:index])
    code[index:index + 1] = ([inverse] + statements
                             + [LAYER.jump(jump.arg, backward, jump.location), skip])
    return code


# -- debugging -----------------------------------------------------------------

def rewritten_code(ctx: Context, f: Callable[..., Any]) -> _CodeType:
    """The code object that runs when ``f``'s body is overdubbed with
    ``ctx``: ``ctx``'s pass applied, operations rewritten, constants bound
    to ``ctx``'s runtime.  ``TypeError`` for what has no Python body."""
    from . import entry, engine

    engine.check_arguments(ctx, f)
    function = getattr(f, "__func__", f)
    if not hasattr(function, "__code__"):
        raise TypeError(f"rewritten_code: {f!r} has no Python code of its own")
    runtime = entry.runtime_of(ctx)
    return engine.rewritten_function(function, runtime, escapes=True).__code__


def dis(ctx: Context, f: Callable[..., Any], *, file: TextIO | None = None) -> None:
    """Print the disassembly of :func:`rewritten_code` ``(ctx, f)``."""
    _dis_dis(rewritten_code(ctx, f), file=file if file is not None else sys.stdout)
