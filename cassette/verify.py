"""Is a pass's output safe to compile and run?

:func:`check` runs on the ``bytecode.Bytecode`` a pass returned, before
cassette rewrites and assembles it.  It returns None when the code is safe,
and otherwise raises :class:`InvalidBytecode` (a ``ValueError``) saying what
is wrong and where: the element's index in the list, the instruction and its
line.

The contract
------------
A code object assembled from bytecode that passes :func:`check` cannot crash
a release build of CPython 3.11–3.15, nor make a debug build's assertions
fail on a truth test, through its stack discipline, its use of the frame,
or the types of the values it hands to instructions that trust them.  What
is checked:

* **Elements.**  Only ``Instr``, ``Label``, ``SetLineno``, ``TryBegin`` and
  ``TryEnd``; each label at most once; instructions a pass may not emit
  (pseudo, instrumented and specialized opcodes, ``EXTENDED_ARG``, ``CACHE``,
  ``INTERPRETER_EXIT`` — anything the version layer gives no signature) are
  rejected.
* **Targets.**  Every jump targets a label present in the list, in the
  direction the opcode jumps; every ``TryBegin`` targets a label present;
  ``TryBegin``/``TryEnd`` pair up without nesting, each ``TryBegin`` appears
  once and its range holds an instruction.
* **The frame.**  Argument counts and names, generator/coroutine flags,
  ``freevars`` and ``cellvars`` equal the original's (a pass may add locals,
  not change the frame's shape).  The instructions before the first
  ``RESUME`` are exactly the original's frame setup (``COPY_FREE_VARS``,
  ``MAKE_CELL``, ``RETURN_GENERATOR``), outside every protected range and
  never jumped into; frame-setup instructions and the starting ``RESUME``
  appear nowhere else.  ``YIELD_VALUE`` only in generators and coroutines.
  ``*_FAST`` instructions never write the slot of a cell or free variable.
* **Arguments.**  Enum and count arguments the interpreter uses to index a
  table or trusts (``BINARY_OP``, ``COMPARE_OP``, ``CALL_INTRINSIC_1/2``,
  ``FORMAT_VALUE``/``CONVERT_VALUE``, ``SET_FUNCTION_ATTRIBUTE``,
  ``RAISE_VARARGS``, ``RERAISE``, ``SWAP``/``COPY`` …) are in range;
  ``KW_NAMES`` names a tuple of strings no longer than its call's arguments
  and is followed by its call (3.11: ``KW_NAMES``, ``PRECALL n``,
  ``CALL n`` stay together); ``FOR_ITER``'s target is followed by the
  instructions an exhausted loop skips (3.12: ``END_FOR``; 3.13:
  ``END_FOR``, ``POP_TOP``).
* **The stack, on every path** (an abstract interpretation from the
  starting ``RESUME`` through jumps, fall-through and exception handlers):
  no underflow; the same depth wherever paths join; no path runs past the
  end of the code; ``RETURN_VALUE``/``RETURN_CONST`` leave an empty stack;
  every instruction inside a protected range leaves at least the range's
  depth on the stack (what it consumes included, unless it cannot raise).
  A handler starts with the values below its range's depth (merged over
  every instruction of the range), then ``lasti`` when ``push_lasti``, then
  the exception.
* **Kinds of values.**  Each stack value carries a set of possible kinds:
  NULL, a value of unknown type, None, list, set, dict, tuple (with its
  length when known), a tuple of cells, iterator (from ``GET_ITER`` or kept
  by ``FOR_ITER``), exception instance, a handler's ``lasti``, code object,
  function (with or without its closure set yet), str, cell, bool, a
  comparison's result.  Instructions that trust a kind get only values
  that have it on every path: a list for ``LIST_APPEND``/``LIST_EXTEND``
  and ``LIST_TO_TUPLE``, a set for
  ``SET_ADD``/``SET_UPDATE``, a dict for ``MAP_ADD``/``DICT_UPDATE``/
  ``DICT_MERGE`` and ``CALL_FUNCTION_EX``'s keyword arguments (3.12+), an
  iterator for ``FOR_ITER``, an exception for ``RERAISE``, ``PUSH_EXC_INFO``,
  ``WITH_EXCEPT_START``, ``END_ASYNC_FOR``, ``CLEANUP_THROW`` and the
  StopIteration intrinsic, exception-or-None for ``POP_EXCEPT`` and
  ``CHECK_EG_MATCH``, a handler's ``lasti`` for ``RERAISE n``, tuples for
  ``MATCH_CLASS``/``MATCH_KEYS``, a list of exceptions (built on the stack)
  for ``PREP_RERAISE_STAR``, a constant code object and a tuple of exactly
  its free variables' cells for ``MAKE_FUNCTION`` (3.13:
  ``SET_FUNCTION_ATTRIBUTE``), defaults tuples, keyword-default dicts,
  even-length annotation tuples, a constant tuple of keyword names for
  ``CALL_KW``, constant strings and functions for the PEP 695 intrinsics.
  From 3.13, ``POP_JUMP_IF_TRUE``/``POP_JUMP_IF_FALSE`` and ``UNARY_NOT``
  take a bool (``TO_BOOL``'s, a comparison's that casts to bool,
  ``IS_OP``'s, ``CONTAINS_OP``'s, a match test's or a constant): the
  interpreter only asserts it, so a debug build aborts and a release build
  takes any other object for neither true nor false.  A comparison that
  does not cast is accepted there too, as the compiler emits it where it
  knows the operands (``format > 2`` in an ``__annotate__``).
  A NULL (``PUSH_NULL``, ``LOAD_GLOBAL``'s null flag, a method-form
  ``LOAD_ATTR``/``LOAD_SUPER_ATTR``/``LOAD_METHOD``, ``LOAD_FAST_AND_CLEAR``
  of an unbound local) is consumed only by a call's self-or-NULL slot
  (3.11/3.12 below the callable, 3.13 on above it), ``CALL_FUNCTION_EX``'s NULL
  slot or ``STORE_FAST`` (which unbinds the local); ``SWAP`` moves it; every
  other use, ``COPY`` included, is rejected.  A None test (``POP_JUMP_IF_
  [NOT_]NONE``) on a copy of a value narrows the value itself on each
  branch.
* **Locals.**  A local read without a check (``LOAD_FAST`` from 3.12,
  ``LOAD_FAST_LOAD_FAST``) is bound on every path: an argument, stored
  before (not from a possibly-NULL value), and not deleted or cleared since.

Bytecode whose ``TryBegin`` stack depths are not all set is checked in the
form the ``bytecode`` package assembles it in (it computes every depth
then), so indexes in messages refer to that form.  The largest stack depth
the code reaches is what the assembler's ``co_stacksize`` must cover; the
tests compare the two.

Known false positive: code where one name is a free variable and also a
local or cell (3.12+: an inlined comprehension in a PEP 695 scope whose
variable shadows a type parameter and is captured) may be rejected, since
the ``bytecode`` package labels such slots by position, not kind.  The
standard library has none outside ``test_type_params``.

Not covered:

* code objects among the constants (a nested function's body is checked
  when cassette runs it through a pass; ``MAKE_FUNCTION`` only checks the
  closure matches its free variables);
* calls a pass adds of a PEP 695 scope's hidden function (made from a
  ``<generic parameters of …>`` code constant) with arguments of the wrong
  kind: its body trusts ``.defaults`` to be a tuple and ``.kwdefaults`` a
  dict, as the compiler's own call guarantees.  (Generator expressions'
  functions, whose body trusts ``.0`` to be an iterator, *are* checked: they
  may only be called, on an iterator, and never copied or stored.)
* objects a pass loads as constants and what calls do with them (any
  object may be a constant; calling it is ordinary Python);
* run-time invariants the interpreter only asserts and that cannot crash a
  release build (e.g. that ``CHECK_EXC_MATCH``'s operand is an exception,
  that ``CALL_FUNCTION_EX``'s NULL slot holds NULL on 3.11 only leaks);
* semantics: a pass can still make code that computes nonsense, raises, or
  loops forever; a frame whose locals a debugger or ``f_locals`` writer
  unbinds behind its back is CPython's own hazard, as for compiled code.
"""

import dis
import heapq
import types

from bytecode import Bytecode, ControlFlowGraph, Instr, Label, SetLineno, TryBegin, TryEnd
from bytecode.instr import UNSET, CellVar, FreeVar

from .versions import LAYER
from ._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

# Bound at import: a program may patch or delete anything of the standard
# library; what cassette calls stays what it was (issue 35, item 2).
_CellType = types.CellType
_CodeType = types.CodeType
_get_instructions = dis.get_instructions
_heappop = heapq.heappop
_heappush = heapq.heappush
_opmap = dis.opmap
_opname = dis.opname

__all__ = ["InvalidBytecode", "check"]


class InvalidBytecode(ValueError):
    """Bytecode a pass returned that would not run safely."""


# -- kinds -------------------------------------------------------------------
# A stack value is (kinds, ident, info): ``kinds`` a bit set of what it may
# be; ``ident`` an int shared by copies of one value (only for values a None
# test can narrow), else None; ``info`` detail some instructions need:
# ("const", object) for constants, ("tuple", n) for built tuples,
# ("func", code) for functions made here.

NULL = 1 << 0
OBJ = 1 << 1            # an object of unknown type
NONE = 1 << 2
LIST = 1 << 3
LIST_EXC = 1 << 4       # a list built on the stack holding only exceptions / None
SET = 1 << 5
DICT = 1 << 6
TUPLE = 1 << 7
CELLS = 1 << 8          # a tuple of cells
ALIAS = 1 << 9          # a (str, value, function) tuple, INTRINSIC_TYPEALIAS's operand
ITER = 1 << 10
EXC = 1 << 11
LASTI = 1 << 12
CODE = 1 << 13
FUNC = 1 << 14
FUNC_PENDING = 1 << 15  # a function whose closure is not set yet (3.13)
STR = 1 << 16
CELL = 1 << 17
ITERATING = 1 << 18     # a function of a generator expression's code (3.11: or a
                        # comprehension's): it trusts its one argument, ``.0``, to be
                        # an iterator, so it may only be called, on an iterator
BOOL = 1 << 19          # True or False
COMPARED = 1 << 20      # a comparison's result not cast to bool (3.13+): what the
                        # compiler itself tests for truth where it knows it is a bool

_ALL = (1 << 21) - 1
_VALUES = _ALL & ~NULL & ~FUNC_PENDING & ~ITERATING
_TUPLES = TUPLE | CELLS | ALIAS

_KIND_NAMES = {
    NULL: "NULL", OBJ: "object", NONE: "None", LIST: "list", LIST_EXC: "list",
    SET: "set", DICT: "dict", TUPLE: "tuple", CELLS: "tuple of cells",
    ALIAS: "tuple", ITER: "iterator", EXC: "exception", LASTI: "lasti",
    CODE: "code object", FUNC: "function", FUNC_PENDING: "function without its closure",
    STR: "str", CELL: "cell", ITERATING: "generator expression's function", BOOL: "bool",
    COMPARED: "comparison result",
}

# Requirement tokens of the version layer's signatures: the kinds allowed.
_REQUIRES = {
    "any": _ALL, "obj": _VALUES, "null": NULL, "null|obj": NULL | _VALUES,
    "null|dict": NULL | DICT,
    "list": LIST | LIST_EXC, "list_exc": LIST_EXC, "set": SET, "dict": DICT,
    "tuple": _TUPLES, "iter": ITER, "exc": EXC, "exc|none": EXC | NONE,
    "lasti": LASTI, "code": CODE, "func": FUNC | FUNC_PENDING, "str": STR,
    "cells": CELLS, "alias_args": ALIAS, "annotations": DICT | _TUPLES,
    "kwnames": TUPLE, "callee": _VALUES | ITERATING, "null|callee": NULL | _VALUES | ITERATING,
    "bool": BOOL | COMPARED,
}

# Kinds the pushed tokens produce.
_PRODUCES = {
    "obj": OBJ, "null": NULL, "null|obj": NULL | OBJ, "none": NONE, "iter": ITER,
    "exc": EXC, "exc|none": EXC | NONE, "tuple": TUPLE, "dict": DICT, "set": SET,
    "str": STR, "cell": CELL, "bool": BOOL, "compared": COMPARED,
}

_GENERATOR_FLAGS = 0x0020 | 0x0080 | 0x0200 | 0x0100   # GENERATOR COROUTINE ASYNC_GENERATOR ITERABLE_COROUTINE
# Flags that shape the frame: OPTIMIZED NEWLOCALS VARARGS VARKEYWORDS + the above.
_FRAME_FLAGS = 0x0001 | 0x0002 | 0x0004 | 0x0008 | _GENERATOR_FLAGS

#: Largest count argument accepted (larger ones would only describe stacks
#: far deeper than any real code's).
MAX_COUNT = 1 << 16

_CONST_OPS = frozenset(dis.opname[op] for op in dis.hasconst)
_LABEL = "label"
_TYPE_PARAMS = ".type_params"


def check(bytecode, original):
    """Raise :class:`InvalidBytecode` unless ``bytecode`` (a pass's output
    for the code object ``original``) is safe to assemble and run; see the
    module docstring for what that covers."""
    _analyse(bytecode, original)


def _analyse(bytecode, original):
    """:func:`check`, returning the deepest the value stack gets (for
    tests)."""
    if not isinstance(bytecode, Bytecode):
        raise InvalidBytecode(f"expected a bytecode.Bytecode, got {type(bytecode).__name__}")
    checker = _Checker(bytecode, original, LAYER)
    try:
        return checker.run()
    except InvalidBytecode:
        raise
    except (RecursionError, MemoryError):
        raise
    except Exception as error:
        # Arguments of the wrong type make the analysis itself fail: the
        # bytecode is malformed.
        where = checker.where(checker.current) if checker.current is not None else "the bytecode"
        raise InvalidBytecode(f"{where}: malformed ({type(error).__name__}: {error})") from error


# -- signatures and static facts -----------------------------------------------

class _Signature:
    """A parsed layer signature.  ``kept``/``pops``: ``(mask, token)`` per
    value, bottom first; ``masks``: the masks of kept then popped values, in
    stack order; ``plain``: the values pushed when every pushed token is a
    plain kind and no requirement needs more than its mask (else None)."""

    __slots__ = ("kept", "pops", "pushes", "need", "npops", "masks", "plain")

    def __init__(self, text):
        kept_text, _, rest = text.partition(" : ") if " : " in text else ("", "", text)
        pops_text, _, push_text = rest.partition("->")
        self.kept = tuple(_requirement(t) for t in kept_text.split())
        self.pops = tuple(_requirement(t) for t in pops_text.split())
        self.pushes = tuple(push_text.split())
        self.need = len(self.kept) + len(self.pops)
        self.npops = len(self.pops)
        # The fast path never lets a generator expression's function through:
        # calling one needs the check in _Checker._apply.
        self.masks = tuple(mask & ~ITERATING for mask, _token in self.kept + self.pops)
        tokens = [token for _mask, token in self.kept + self.pops]
        plain = all(t in _PRODUCES and t != "exc|none" for t in self.pushes) and not any(
            type(t) is tuple or t in ("annotations", "cells", "code", "func") for t in tokens)
        self.plain = tuple((_PRODUCES[t], None, None) for t in self.pushes) if plain else None


def _requirement(token):
    name, _, param = token.partition(":")
    return (_REQUIRES[name], token if not param else (name, int(param)))


# Roles: instructions whose effect goes beyond their signature.
_PLAIN, _LOCALS, _DEREF, _CONST, _SWAP, _COPY, _OTHER = range(7)


class _Facts:
    """What does not depend on where an instruction is: the argument's
    error, the signatures (fall-through, jump), and how the flow analysis
    treats it."""

    __slots__ = ("error", "sig", "jump_sig", "final", "consumed", "role", "fast")


_signatures = {}
_facts_cache = {}


def _facts(layer, name, arg):
    if name in _CONST_OPS or arg is UNSET:
        key = None
    elif isinstance(arg, int):
        key = int(arg)
    elif type(arg) is tuple and arg and type(arg[0]) is bool:
        key = arg[0]
    else:
        key = None
    facts = _facts_cache.get((name, key))
    if facts is not None:
        return facts
    facts = _Facts()
    facts.error = None
    if key is not None and type(key) is int and name not in _CONST_OPS:
        if key < 0:
            facts.error = f"negative argument {key}"
        elif key > MAX_COUNT:
            facts.error = f"argument {key} is larger than {MAX_COUNT}"
    if facts.error is None:
        facts.error = layer.verify_arg_error(name, arg)
    if facts.error is None:
        facts.sig = _parsed(layer.verify_signature(name, arg, False))
        is_jump = _opmap[name] in _JUMP_OPCODES and name not in layer.verify_never_jumps
        facts.jump_sig = _parsed(layer.verify_signature(name, arg, True)) if is_jump else None
        sig = facts.sig
        if sig is None:
            facts.error = ("a pass may not emit this instruction (pseudo, instrumented, "
                           "specialized or internal opcode)")
    if facts.error is not None:
        facts.sig = facts.jump_sig = None
        facts.final, facts.consumed, facts.role, facts.fast = False, 0, _OTHER, False
    else:
        facts.final = name in layer.verify_final
        facts.consumed = 0 if (name in layer.verify_nonraising
                               or name in layer.verify_raise_keeping_inputs) else sig.npops
        if name in layer.verify_local_ops:
            facts.role = _LOCALS
        elif name in layer.verify_deref_ops:
            facts.role = _DEREF
        elif name in _CONST_OPS:
            facts.role = _CONST
        elif name == "SWAP":
            facts.role = _SWAP
        elif name == "COPY":
            facts.role = _COPY
        elif (name in layer.verify_returns or name in layer.verify_none_jumps
              or name in ("YIELD_VALUE", "LIST_APPEND", "LIST_EXTEND")):
            facts.role = _OTHER
        else:
            facts.role = _PLAIN
        # The fast path of the flow analysis: plain kinds in and out, and a
        # jump leaving the same stack as falling through.
        facts.fast = (facts.role == _PLAIN and sig.plain is not None
                      and (facts.jump_sig is None or facts.jump_sig is sig))
    if len(_facts_cache) < 4096:
        _facts_cache[(name, key)] = facts
    return facts


def _parsed(text):
    if text is None:
        return None
    sig = _signatures.get(text)
    if sig is None:
        sig = _signatures[text] = _Signature(text)
    return sig


_JUMP_OPCODES = frozenset(dis.hasjrel + dis.hasjabs)


# -- abstract values -----------------------------------------------------------

def _const_value(value):
    kind = type(value)
    if value is None:
        bits = NONE
    elif kind is bool:
        bits = BOOL
    elif kind is tuple:
        bits = CELLS if value and all(type(v) is _CellType for v in value) else TUPLE
    elif kind is str:
        bits = STR
    elif kind is _CodeType:
        bits = CODE
    elif kind is list:
        bits = LIST
    elif kind is dict:
        bits = DICT
    elif kind is set:
        bits = SET
    elif isinstance(value, BaseException):
        bits = EXC
    else:
        bits = OBJ
    return (bits, None, ("const", value))


def _same_info(a, b):
    if a is b:
        return True
    if a is None or b is None or a[0] != b[0]:
        return False
    if a[0] == "const":
        return a[1] is b[1]
    return a == b


def _merge_value(a, b):
    if a is b:
        return a
    bits = a[0] | b[0]
    ident = a[1] if a[1] == b[1] else None
    info = a[2] if _same_info(a[2], b[2]) else None
    if bits == a[0] and ident == a[1] and info is a[2]:
        return a
    return (bits, ident, info)


def _tuple_length(value):
    info = value[2]
    if info is None:
        return None
    if info[0] == "tuple":
        return info[1]
    if info[0] == "const" and type(info[1]) is tuple:
        return len(info[1])
    return None


def _takes_iterator(code):
    """Whether functions of ``code`` trust their argument to be an iterator:
    the implicit ``.0`` of a generator expression (3.11: or comprehension)
    that the compiled code hands straight to FOR_ITER.  (An ``async for``
    over ``.0`` gives it to GET_ANEXT, which checks its type.)"""
    return _iterates_argument(code) == "FOR_ITER"


def _iterates_argument(code):
    """What the code of a generator expression's function (3.11: or a
    comprehension's) does first with its implicit ``.0``: ``"FOR_ITER"``
    (it trusts an iterator), ``"GET_ITER"`` (3.15: it makes the iterator
    itself), or None for other code."""
    if code.co_argcount != 1 or code.co_varnames[:1] != (".0",):
        return None
    reads = False
    for instr in _get_instructions(code):
        if reads:
            return instr.opname if instr.opname in ("FOR_ITER", "GET_ITER") else None
        reads = instr.opname.startswith("LOAD_FAST") and instr.argval == ".0"
    return None


def _tuple_kind(items):
    if items and all(v[0] == CELL for v in items):
        return CELLS
    if len(items) == 3 and items[0][0] == STR and not items[2][0] & ~FUNC:
        return ALIAS
    return TUPLE


def _describe(bits):
    names = []
    for bit, name in _KIND_NAMES.items():
        if bits & bit and name not in names:
            names.append(name)
    return " or ".join(names) if names else "nothing"


def _describe_arg(instr):
    arg = instr.arg
    if isinstance(arg, Label):
        return "<label>"
    if isinstance(arg, (CellVar, FreeVar)):
        return arg.name
    text = repr(arg)
    return text if len(text) <= 40 else text[:37] + "..."


_TOKEN_TEXT = {
    "obj": "a value", "null": "the NULL of a call", "null|obj": "a value or NULL",
    "any": "anything", "list": "a list", "list_exc": "a list of exceptions built on the stack",
    "set": "a set", "dict": "a dict", "tuple": "a tuple",
    "iter": "an iterator (from GET_ITER)", "exc": "an exception (from a handler)",
    "exc|none": "an exception or None", "lasti": "the lasti a handler pushed",
    "code": "a constant code object", "func": "a function made by MAKE_FUNCTION",
    "str": "a constant str", "cells": "a tuple of cells (LOAD_CLOSURE values)",
    "alias_args": "a (name, parameters, function) tuple",
    "annotations": "annotations (a dict or tuple of pairs)",
    "callee": "a value", "null|callee": "a value or NULL",
    "bool": "a bool (from TO_BOOL, a comparison that casts to bool, IS_OP or CONTAINS_OP)",
}


# -- the checker -------------------------------------------------------------

class _Checker:

    def __init__(self, bytecode, original, layer):
        self.bytecode = bytecode
        self.original = original
        self.layer = layer
        self.current = None
        self.normalized = False
        self.elements = []

    # -- reporting -------------------------------------------------------------

    def where(self, index):
        element = self.elements[index]
        if isinstance(element, Instr):
            arg = "" if element.arg is UNSET else " " + _describe_arg(element)
            lineno = element.lineno
            line = f" (line {lineno})" if isinstance(lineno, int) else ""
            text = f"instruction {index} {element.name}{arg}{line}"
        else:
            text = f"element {index} ({type(element).__name__})"
        if self.normalized:
            text += " [index in the bytecode package's normalized form]"
        return text

    def fail(self, index, message):
        raise InvalidBytecode(f"{self.where(index)}: {message}")

    # -- driver ------------------------------------------------------------------

    def run(self):
        self._check_frame_shape()
        self.elements = list(list.__iter__(self.bytecode))
        self._scan()
        if self.unset_depths:
            self._normalize()
            self._scan()
        return self._flow()

    def _check_frame_shape(self):
        bc, code = self.bytecode, self.original
        nargs = code.co_argcount + code.co_kwonlyargcount
        nargs += bool(code.co_flags & 0x0004) + bool(code.co_flags & 0x0008)
        expected = {
            "argcount": code.co_argcount,
            "posonlyargcount": code.co_posonlyargcount,
            "kwonlyargcount": code.co_kwonlyargcount,
            "argnames": list(code.co_varnames[:nargs]),
            "freevars": list(code.co_freevars),
            "cellvars": list(code.co_cellvars),
        }
        for attribute, value in expected.items():
            got = getattr(bc, attribute, None)
            if attribute == "argnames" and isinstance(got, (list, tuple)) \
                    and len(set(got)) == len(got):
                # The bytecode package may list more names than the
                # arguments (it counts positional-only ones twice); the
                # assembler puts them first, so the arguments must lead.
                got = list(got[:nargs])
            if isinstance(value, list):
                differs = not isinstance(got, (list, tuple)) or list(got) != value
            else:
                differs = got != value
            if differs:
                raise InvalidBytecode(
                    f"the pass changed the frame's {attribute} from {value!r} to {got!r}; a "
                    "pass may add locals but not change arguments, cells or free variables")
        if (int(bc.flags) ^ code.co_flags) & _FRAME_FLAGS:
            raise InvalidBytecode(
                f"the pass changed the code flags from {code.co_flags:#x} to {int(bc.flags):#x} "
                "(arguments, generator or coroutine bits)")
        self.is_generator = bool(code.co_flags & _GENERATOR_FLAGS)
        self.argnames = expected["argnames"]
        self.cellvars = frozenset(code.co_cellvars)
        self.freevars = frozenset(code.co_freevars)

    def _normalize(self):
        """Replace the elements by the form the bytecode package assembles
        when some TryBegin has no stack depth: it computes all of them."""
        try:
            cfg = ControlFlowGraph.from_bytecode(self._copy())
            cfg.compute_stacksize(compute_exception_stack_depths=True)
            normalized = cfg.to_bytecode()
        except Exception as error:
            raise InvalidBytecode(
                "the bytecode package cannot compute the exception table's stack depths "
                f"(some TryBegin has none): {type(error).__name__}: {error}") from error
        self.elements = list(list.__iter__(normalized))
        self.normalized = True

    def _copy(self):
        # The depth computation sets the depths of the TryBegin objects it
        # is given: give it copies.
        copies = {}
        items = []
        for element in self.elements:
            if isinstance(element, TryBegin):
                element = copies.setdefault(id(element), element.copy())
            elif isinstance(element, TryEnd):
                element = TryEnd(copies.setdefault(id(element.entry), element.entry.copy()))
            items.append(element)
        out = self.bytecode.copy()      # with the code's attributes
        list.clear(out)
        list.extend(out, items)
        return out

    # -- static checks -----------------------------------------------------------

    def _scan(self):
        """Everything that does not depend on the path taken; builds the
        plan the flow analysis follows."""
        elements = self.elements
        labels = {}
        for index, element in enumerate(elements):
            if isinstance(element, Label):
                if element in labels:
                    self.fail(index, "this label appears twice in the list")
                labels[element] = index
            elif not isinstance(element, (Instr, SetLineno, TryBegin, TryEnd)):
                self.fail(index, f"{type(element).__name__} {element!r:.60} is not an Instr, "
                          "Label, SetLineno, TryBegin or TryEnd")
        self.labels = labels
        self._scan_prologue()
        self._scan_try_ranges()

        layer = self.layer
        opmap = _opmap
        start = self.start
        call_prefix = layer.verify_call_prefix
        self.slot_bits = {}
        for argname in self.argnames:
            self._slot(argname)
        self.written = set()
        self.slots = {}
        plan = []
        for index, element in enumerate(elements):
            if not isinstance(element, Instr):
                plan.append(_LABEL if isinstance(element, Label) else None)
                continue
            if index < start:
                plan.append(None)        # the prologue, compared with the original's
                continue
            self.current = index
            name = element.name
            arg = element.arg
            if name not in opmap:
                self.fail(index, "not an instruction of this Python version")
            facts = _facts(layer, name, arg)
            if facts.error is not None:
                self.fail(index, facts.error)
            if name in layer.verify_frame_setup:
                self.fail(index, "frame-setup instructions may only appear where the original "
                          "code has them, before the first RESUME")
            target = None
            if facts.jump_sig is not None:
                target = self._scan_jump(index, element)
            role = facts.role
            if role == _LOCALS:
                self.slots[index] = self._scan_local(index, name, arg)
            elif role == _DEREF:
                self.slots[index] = self._scan_deref(index, name, arg)
            elif name == "RESUME":
                if index != start and layer.resume_starts_code(arg):
                    self.fail(index, "the RESUME that starts the code may appear only once, "
                              "first")
            elif name == "KW_NAMES":
                self._scan_kw_names(index, arg)
            elif name == "YIELD_VALUE":
                if not self.is_generator:
                    self.fail(index, "YIELD_VALUE in code that is not a generator or coroutine")
            elif call_prefix is not None:
                if name == call_prefix:
                    following = self._neighbour(index, +1)
                    if following is None or following.name != "CALL" or following.arg != arg:
                        self.fail(index, f"{call_prefix} must be directly followed by CALL "
                                  "with the same argument")
                elif name == "CALL":
                    previous = self._neighbour(index, -1)
                    if previous is None or previous.name != call_prefix or previous.arg != arg:
                        self.fail(index, f"CALL must directly follow {call_prefix} with the "
                                  "same argument")
            plan.append((element, facts, target))
        self.current = None
        self.plan = plan
        labels = self.labels
        self.handlers = [None if r is None else
                         (labels[r.target], r.stack_depth, bool(r.push_lasti))
                         for r in self.cover]

    def _scan_prologue(self):
        """The instructions before the first RESUME must be the original's
        frame setup, untouched and outside every protected range."""
        expected = _original_prologue(self.original, self.layer)
        layer = self.layer
        seen = []
        start = None
        for index, element in enumerate(self.elements):
            if isinstance(element, Instr):
                if element.name == "RESUME" and type(element.arg) is int \
                        and layer.resume_starts_code(element.arg):
                    start = index
                    break
                seen.append((element.name, _prologue_key(element)))
            elif isinstance(element, TryBegin) and len(seen) < len(expected):
                self.fail(index, "a protected range may not cover the frame setup "
                          "before the first RESUME")
        if start is None or seen != expected:
            names = ", ".join(n for n, _ in expected) or "nothing"
            raise InvalidBytecode(
                "the code must begin with the original's frame setup "
                f"({names}) followed by the RESUME that starts it; the pass output begins "
                f"with {', '.join(n for n, _ in seen[:6]) or 'no instruction'}"
                + ("" if start is not None else " and has no such RESUME"))
        self.start = start
        self.prologue_cells = [key for name, key in expected if name == "MAKE_CELL"]
        self.prologue_stack = [(_PRODUCES[token], None, None) for token in
                               layer.verify_prologue_leaves([n for n, _ in expected])]

    def _scan_try_ranges(self):
        elements = self.elements
        cover = [None] * len(elements)
        open_range = None
        open_index = None
        has_instr = False
        seen = set()
        unset = False
        for index, element in enumerate(elements):
            if isinstance(element, Instr):
                cover[index] = open_range
                has_instr = True
            elif isinstance(element, TryBegin):
                if open_range is not None:
                    self.fail(index, f"TryBegin inside the protected range begun at element "
                              f"{open_index}: ranges cannot nest")
                if id(element) in seen:
                    self.fail(index, "this TryBegin appears twice in the list")
                seen.add(id(element))
                if not isinstance(element.target, Label) or element.target not in self.labels:
                    self.fail(index, "TryBegin's handler label is not in the list")
                if self.labels[element.target] < self.start:
                    self.fail(index, "TryBegin's handler is inside the frame setup")
                if element.push_lasti not in (True, False):
                    self.fail(index, "TryBegin.push_lasti must be a bool, not "
                              f"{element.push_lasti!r}")
                depth = element.stack_depth
                if type(depth) is not int:
                    if depth is not UNSET:
                        self.fail(index, f"TryBegin.stack_depth must be an int, not {depth!r}")
                    unset = True
                elif depth < 0:
                    self.fail(index, f"TryBegin.stack_depth {depth} is negative")
                open_range, open_index, has_instr = element, index, False
            elif isinstance(element, TryEnd):
                if open_range is None or element.entry is not open_range:
                    self.fail(index, "TryEnd without its TryBegin (it must close the range "
                              "begun by the TryBegin it names, which must come first)")
                if not has_instr:
                    self.fail(index, f"the protected range begun at element {open_index} "
                              "holds no instruction")
                open_range = None
        if open_range is not None:
            self.fail(open_index, "TryBegin without a TryEnd")
        self.cover = cover
        self.unset_depths = unset

    def _scan_jump(self, index, instr):
        """The index of the jump's target label, once checked."""
        target = instr.arg
        if not isinstance(target, Label) or target not in self.labels:
            self.fail(index, "jump target is not a label in the list")
        position = self.labels[target]
        if position < self.start:
            self.fail(index, "jumps into the frame setup before the first RESUME")
        name = instr.name
        if name in self.layer.verify_forward_jumps and position < index:
            self.fail(index, f"{name} jumps forward only, but its target is before it")
        if name in self.layer.verify_backward_jumps and position > index:
            self.fail(index, f"{name} jumps backward only, but its target is after it")
        if name == "FOR_ITER":
            exit_names = list(self.layer.verify_for_iter_exit)
            following = [e.name for e in self.elements[position:] if isinstance(e, Instr)]
            if following[:len(exit_names)] != exit_names:
                self.fail(index, "an exhausted FOR_ITER skips the instructions at its target, "
                          f"which must be {' '.join(exit_names)}")
        return position

    def _scan_local(self, index, name, arg):
        """The slots a *_FAST instruction uses: ``(bound_bit, cell_bit,
        free)`` per name (see :meth:`_slot`)."""
        names = arg if type(arg) is tuple else (arg,)
        result = []
        for position, local in enumerate(names):
            writes = name.startswith("STORE") and not (name == "STORE_FAST_LOAD_FAST"
                                                        and position == 1)
            writes = writes or name in ("DELETE_FAST", "LOAD_FAST_AND_CLEAR")
            if isinstance(local, (CellVar, FreeVar)):
                if not self.layer.verify_fast_reads_cells:
                    self.fail(index, f"{name} takes local names, not a cell or free variable")
                free = isinstance(local, FreeVar)
                if local.name not in (self.freevars if free else self.cellvars):
                    self.fail(index, f"{local.name!r} is not among the code's "
                              f"{'free' if free else 'cell'} variables")
                local = local.name
            elif type(local) is str:
                # A name that is both a local and a free variable (an inlined
                # comprehension's variable shadowing one) names the local.
                free = local in self.freevars and local not in self.original.co_varnames
                if free and not (self.layer.verify_fast_reads_cells and not writes):
                    self.fail(index, f"{local!r} is a free variable: {name} would make a second "
                              "local of that name")
            else:
                self.fail(index, f"{name} takes a local name, not {local!r:.40}")
            if free and writes:
                self.fail(index, f"{name} would overwrite the cell of free variable {local!r}")
            if writes:
                self.written.add(local)
            result.append(self._slot(local, free))
        return tuple(result)

    def _slot(self, name, free=False):
        """``(bound_bit, cell_bit, free)`` for the frame slot of ``name``.
        In the flow's bit set, ``bound_bit`` means the slot is not empty;
        a cell variable's ``cell_bit`` that it holds the variable's cell
        (3.12+ comprehensions park a plain value there for a while).  A free
        variable's slot always holds its cell."""
        if free:
            return (0, 0, True)
        bits = self.slot_bits.get(name)
        if bits is None:
            bound = 1 << (2 * len(self.slot_bits))
            cell = bound << 1 if name in self.cellvars else 0
            bits = self.slot_bits[name] = (bound, cell, False)
        return bits

    def _scan_deref(self, index, name, arg):
        if isinstance(arg, CellVar):
            if arg.name not in self.cellvars:
                self.fail(index, f"{arg.name!r} is not a cell variable of the code")
            if name == "MAKE_CELL":
                self.written.add(arg.name)
            return (self._slot(arg.name),)
        if isinstance(arg, FreeVar):
            if arg.name not in self.freevars:
                self.fail(index, f"{arg.name!r} is not a free variable of the code")
            if name == "MAKE_CELL":
                self.fail(index, "MAKE_CELL of a free variable")
            return (self._slot(arg.name, free=True),)
        self.fail(index, f"expected a CellVar or FreeVar argument, not {arg!r:.40}")

    def _scan_kw_names(self, index, names):
        if type(names) is not tuple or not all(type(n) is str for n in names):
            self.fail(index, "KW_NAMES needs a tuple of str")
        expected = self.layer.verify_kw_names_next
        following = self._neighbour(index, +1)
        if following is None or following.name != expected:
            self.fail(index, f"KW_NAMES must be directly followed by {expected}")
        if type(following.arg) is not int or len(names) > following.arg:
            self.fail(index, f"{len(names)} keyword names for a call of "
                      f"{following.arg} arguments")

    def _neighbour(self, index, step):
        """The instruction directly before/after ``index``, or None when
        there is none or a label lies between (another path could enter)."""
        elements = self.elements
        index += step
        while 0 <= index < len(elements):
            element = elements[index]
            if isinstance(element, Instr):
                return element
            if isinstance(element, Label):
                return None
            index += step
        return None

    def _next_instr(self, index):
        """The instruction after ``index`` in code order, or None."""
        for element in self.elements[index + 1:]:
            if isinstance(element, Instr):
                return element
        return None

    # -- the flow analysis ---------------------------------------------------

    def _flow(self):
        """Walk every path from the start, merging states where paths join
        (labels, handlers), until nothing changes; returns the deepest the
        stack gets."""
        self.states = {}
        self.queue = []
        self.queued = set()
        self.deepest = 0
        self.handler_exc = {}
        self._merge(self.start, list(self.prologue_stack), self._initial_bits(), self.start)
        queue = self.queue
        while queue:
            position = _heappop(queue)
            self.queued.discard(position)
            stack, bound = self.states[position]
            self._walk(position, list(stack), bound)
        return self.deepest

    def _initial_bits(self):
        """Bound at the start: the arguments, and the cells the prologue
        made."""
        bits = 0
        for name in self.argnames:
            bits |= self.slot_bits[name][0]
        for name in self.prologue_cells:
            bound, cell, _free = self._slot(name)
            bits |= bound | cell
        # Hidden arguments the compiler's callers fill with a known kind and
        # its code trusts (as may the pass's, as long as it never rebinds
        # them): a generator expression's iterator (3.11: a comprehension's;
        # callers are checked, see ITERATING), and the defaults a PEP 695
        # scope's function receives for the function it makes (not
        # checked at the caller: only the compiler makes such calls).
        self.trusted = []
        hidden = [(".0", ITER)] if _takes_iterator(self.original) else []
        hidden += [(".defaults", TUPLE), (".kwdefaults", DICT)]
        for name, kind in hidden:
            if name in self.argnames and name not in self.written:
                self.trusted.append((self.slot_bits[name][0], kind))
        return bits

    def _merge(self, position, stack, bound, origin):
        old = self.states.get(position)
        if old is None:
            self.states[position] = (tuple(stack), bound)
        else:
            old_stack, old_bound = old
            if len(old_stack) != len(stack):
                self.fail(origin, f"reaches element {position} with {len(stack)} values on "
                          f"the stack where another path has {len(old_stack)}")
            if (bound & old_bound) == old_bound and all(a is b for a, b in zip(old_stack, stack)):
                return
            merged = tuple(_merge_value(a, b) for a, b in zip(old_stack, stack))
            bound &= old_bound
            if bound == old_bound and all(a is b for a, b in zip(merged, old_stack)):
                return
            self.states[position] = (merged, bound)
        if position not in self.queued:
            self.queued.add(position)
            _heappush(self.queue, position)

    def _walk(self, position, stack, bound):
        """Follow one path from ``position`` to the next label (merged
        into), a final instruction, or the end of the code."""
        plan = self.plan
        handlers = self.handlers
        count = len(plan)
        index = position + 1 if plan[position] is _LABEL else position
        contributed = {}        # handler -> (bound, stack prefix) last merged on this walk
        while index < count:
            step = plan[index]
            if step is None:
                index += 1
                continue
            if step is _LABEL:
                self._merge(index, stack, bound, index)
                return
            self.current = index
            height = len(stack)
            if height > self.deepest:
                self.deepest = height
            instr, facts, target = step
            try_range = handlers[index]
            if try_range is not None and height < try_range[1] and (
                    self.layer.verify_ranges_outlast_their_stack
                    and instr.name in self.layer.verify_nonraising):
                # An instruction that cannot raise, where the compiler's
                # range outlasts the values it protects (see the layer).
                try_range = None
            if try_range is not None:
                handler, depth, push_lasti = try_range
                if height - facts.consumed < depth:
                    self._short_handler(index, depth, height, facts.consumed)
                last = contributed.get(handler)
                if last is None or last[0] != bound or any(
                        a is not b for a, b in zip(last[1], stack)):
                    contributed[handler] = (bound, stack[:depth])
                    self._enter_handler(index, handler, depth, push_lasti, stack, bound)
            sig = facts.sig
            if facts.fast and height >= sig.need and not any(
                    value[0] & ~mask for value, mask in zip(stack[height - sig.need:], sig.masks)):
                # Plain kinds in and out, and the masks hold: pop, push.
                del stack[height - sig.npops:]
                stack.extend(sig.plain)
                if target is not None:
                    self._merge(target, stack, bound, index)
            else:
                if target is not None:
                    jump_stack, jump_bound = self._apply(index, instr, facts.jump_sig,
                                                         list(stack), bound, True)
                    self._merge(target, jump_stack, jump_bound, index)
                stack, bound = self._apply(index, instr, sig, stack, bound, False)
            if facts.final:
                return
            index += 1
        self.fail(self.current if self.current is not None else position,
                  "execution can run past the end of the code (the last instruction on "
                  "this path is not a return, raise or unconditional jump)")

    def _short_handler(self, index, depth, height, consumed):
        if height < depth:
            self.fail(index, f"inside a protected range whose handler expects {depth} values "
                      f"below it, but the stack holds {height}")
        self.fail(index, f"consumes values below the depth ({depth}) of the protected "
                  "range it is in: an exception here would leave the handler a short stack")

    def _enter_handler(self, index, handler, depth, push_lasti, stack, bound):
        """Merge the stack an exception raised at ``index`` gives the handler."""
        lasti, exc = self.handler_exc.get(handler) or self.handler_exc.setdefault(
            handler, ((LASTI, None, None), (EXC, None, None)))
        entry = stack[:depth]
        if push_lasti:
            entry.append(lasti)
        entry.append(exc)
        self._merge(handler, entry, bound, index)
        if len(entry) > self.deepest:
            self.deepest = len(entry)

    # -- one instruction ---------------------------------------------------------

    def _apply(self, index, instr, sig, stack, bound, jump):
        """The stack and slot bits after ``instr`` (jump taken or not)."""
        name = instr.name
        height = len(stack)
        if name == "SWAP" or name == "COPY":
            n = instr.arg
            if n > height:
                self.fail(index, f"{name} {n} reaches below the bottom of the stack "
                          f"({height} values)")
            if name == "SWAP":
                stack[-1], stack[-n] = stack[-n], stack[-1]
                return stack, bound
            value = stack[-n]
            if value[0] & ~_VALUES:
                self.fail(index, f"COPY of a value that may be {_describe(value[0] & ~_VALUES)}")
            if value[0] & LIST_EXC:
                # The list is no longer the only reference to itself.
                value = ((value[0] & ~LIST_EXC) | LIST, value[1], value[2])
                stack[-n] = value
            stack.append(value)
            return stack, bound

        kept, pops = sig.kept, sig.pops
        need = sig.need
        if height < need:
            self.fail(index, f"stack underflow: needs {need} values, the stack holds {height}")
        base = height - len(pops)
        for offset, (mask, token) in enumerate(kept):
            self._require(index, stack[base - len(kept) + offset], mask, token, "reads")
        popped = stack[base:]
        for value, (mask, token) in zip(popped, pops):
            self._require(index, value, mask, token, "takes")
        del stack[base:]
        if popped and popped[0][0] & ITERATING:
            # The compiler calls a generator expression's function as
            # [function, iterator] CALL 0 — one layout that means
            # function(iterator) in every version (3.15: function(iterable),
            # and the function makes the iterator).
            argument = _VALUES if self.layer.generator_expressions_take_iterable else ITER
            if name != "CALL" or instr.arg != 0 or popped[1][0] & ~argument:
                self.fail(index, "a generator expression's function may only be called as "
                          "[function, iterator] CALL 0, on an iterator from GET_ITER"
                          if argument == ITER else "a generator expression's function may "
                          "only be called as [function, iterable] CALL 0")
            # It returns a generator, which 3.14's inlined any()/all()/
            # tuple() iterate at once.
            stack.append((ITER, None, None))
            return stack, bound

        slots = self.slots.get(index)
        if slots is not None:
            after, bound = self._apply_slots(index, name, slots, popped, stack, bound)
            if after is not None:
                return after, bound
            if instr.arg.name == _TYPE_PARAMS:
                # The compiler's hidden cell of a PEP 695 scope, which
                # INTRINSIC_SUBSCRIPT_GENERIC reads as a tuple unchecked:
                # only tuples may be stored there.
                if name == "STORE_DEREF":
                    self._require(index, popped[0], _TUPLES, "tuple", "stores")
                elif name in ("LOAD_DEREF", "LOAD_FROM_DICT_OR_DEREF"):
                    stack.append((TUPLE, None, None))
                    return stack, bound
        if name in _CONST_OPS:
            if sig.pushes:
                stack.append(_const_value(instr.arg))
        if name in self.layer.verify_returns and stack:
            self.fail(index, f"returns with {len(stack)} values left on the stack")
        if name == "YIELD_VALUE" and self.layer.verify_yield_reads_receiver(
                instr, self._next_instr(index)):
            depth = self.layer.verify_receiver_depth
            if len(stack) < depth or stack[-depth][0] & ~_VALUES:
                self.fail(index, "suspended in a yield from/await, the generator reads the "
                          "sub-iterator on its stack: it must be a value")
        if name in ("LIST_APPEND", "LIST_EXTEND"):
            position = base - len(kept)
            value = stack[position]
            if value[0] & LIST_EXC and (name == "LIST_EXTEND" or popped[0][0] & ~(EXC | NONE)):
                stack[position] = ((value[0] & ~LIST_EXC) | LIST, value[1], value[2])
        none_test = self.layer.verify_none_jumps.get(name)
        if none_test is not None and popped[0][1] is not None:
            self._narrow(stack, popped[0][1], is_none=(none_test == jump))
        if name not in _CONST_OPS:
            self._push(index, sig, popped, stack)
        return stack, bound

    def _require(self, index, value, mask, token, verb):
        bits = value[0]
        if bits & ~mask:
            what = "a NULL" if bits & ~mask == NULL else _describe(bits)
            needs = "a tuple of keyword names" if type(token) is tuple else _TOKEN_TEXT[token]
            self.fail(index, f"{verb} {what} where it needs {needs}")
        if type(token) is tuple:            # kwnames:N
            info = value[2]
            names = info[1] if info is not None and info[0] == "const" else None
            if type(names) is not tuple or not all(type(n) is str for n in names):
                self.fail(index, "the keyword names must be a constant tuple of str")
            if len(names) > token[1]:
                self.fail(index, f"{len(names)} keyword names for a call of {token[1]} arguments")
        elif token == "annotations" and bits & _TUPLES:
            length = _tuple_length(value)
            if length is None or length % 2:
                self.fail(index, "annotations must be a dict or a tuple of name/value pairs "
                          "(of known, even length)")

    def _apply_slots(self, index, name, slots, popped, stack, bound):
        """The effect of *_FAST and *_DEREF instructions on the frame slots
        they use (their popped values are checked and gone).  Returns the
        stack (None for *_DEREF: push as the signature says) and the slot
        bits."""
        if name in self.layer.verify_deref_ops:
            slot, cell, free = slots[0]
            if name == "MAKE_CELL":
                # Wraps whatever the slot holds in a new cell.
                return stack, bound | slot | cell
            if not free and not bound & cell:
                self.fail(index, f"{name} of {self.elements[index].arg.name!r}, whose slot may "
                          "not hold its cell here (LOAD_FAST_AND_CLEAR, DELETE_FAST or "
                          "STORE_FAST changed it)")
            return None, bound
        if name in ("STORE_FAST", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST"):
            # STORE_FAST_STORE_FAST stores the top value into its first name.
            values = popped[::-1] if name == "STORE_FAST_STORE_FAST" else popped
            for (slot, cell, _free), value in zip(slots, values):
                bound &= ~(slot | cell)
                if not value[0] & NULL:
                    bound |= slot
                    if value[0] == CELL:
                        bound |= cell
            loads = slots[1:] if name == "STORE_FAST_LOAD_FAST" else ()
        elif name == "DELETE_FAST":
            slot, cell, _free = slots[0]
            return stack, bound & ~(slot | cell)
        elif name == "LOAD_FAST_AND_CLEAR":
            slot, cell, _free = slots[0]
            stack.append((self._slot_kind(slots[0], bound) | (0 if bound & slot else NULL),
                          None, None))
            return stack, bound & ~(slot | cell)
        elif name == "LOAD_FAST_CHECK" or (name == "LOAD_FAST"
                                           and self.layer.verify_load_fast_checks):
            stack.append((self._slot_kind(slots[0], bound), None, None))
            return stack, bound | slots[0][0]
        else:
            loads = slots
        for slot_bits in loads:
            slot, _cell, free = slot_bits
            if not free and not bound & slot:
                local = [n for n, bits in self.slot_bits.items() if bits[0] == slot][0]
                self.fail(index, f"reads local {local!r} unchecked, but it may be unbound "
                          "here (use LOAD_FAST_CHECK, or store it first on every path)")
            stack.append((self._slot_kind(slot_bits, bound), None, None))
        return stack, bound

    def _slot_kind(self, slot_bits, bound):
        slot, cell, free = slot_bits
        if free or bound & cell:
            return CELL
        for trusted_slot, kind in self.trusted:
            if slot & trusted_slot:
                return kind
        return OBJ

    def _narrow(self, stack, ident, is_none):
        """After a None test of a value, on one branch: its copies left on
        the stack are None / are not None."""
        for position, value in enumerate(stack):
            if value[1] == ident:
                bits = NONE if is_none else value[0] & ~NONE
                if bits & value[0]:
                    stack[position] = (bits & value[0], ident, value[2])

    def _push(self, index, sig, popped, stack):
        """Push what ``sig`` produces from the ``popped`` values."""
        if sig.plain is not None:
            stack.extend(sig.plain)
            return
        tokens = [token for _mask, token in sig.pops]
        code = None
        if "code" in tokens:
            info = popped[tokens.index("code")][2]
            if info is None or info[0] != "const" or type(info[1]) is not _CodeType:
                self.fail(index, "MAKE_FUNCTION needs a code object loaded by LOAD_CONST")
            code = info[1]
        elif "func" in tokens:
            info = popped[tokens.index("func")][2]
            code = info[1] if info is not None and info[0] == "func" else None
        if "cells" in tokens:
            cells = _tuple_length(popped[tokens.index("cells")])
            if code is None:
                self.fail(index, "sets a closure on a function whose code cannot be told")
            if cells != len(code.co_freevars):
                self.fail(index, f"a closure of {cells} cells for {code.co_name!r}, which has "
                          f"{len(code.co_freevars)} free variables")
        for token in sig.pushes:
            if token[0] == "=":
                value = popped[int(token[1:])]
                if "cells" in tokens and value[0] & FUNC_PENDING:
                    made = ITERATING if _iterates_argument(code) else FUNC
                    value = ((value[0] & ~FUNC_PENDING) | made, value[1], value[2])
                stack.append(value)
            elif token == "func":
                # Without its closure yet (3.13 sets it with SET_FUNCTION_ATTRIBUTE;
                # before, MAKE_FUNCTION takes it or the function is unusable).
                pending = code.co_freevars and "cells" not in tokens
                made = FUNC_PENDING if pending else ITERATING if _iterates_argument(code) else FUNC
                stack.append((made, None, ("func", code)))
            elif token == "list*":
                exc_only = all(not v[0] & ~(EXC | NONE) for v in popped)
                stack.append((LIST_EXC if exc_only else LIST, None, None))
            elif token == "tuple*":
                stack.append((_tuple_kind(popped), None, ("tuple", len(popped))))
            elif token == "exc|none":
                # A value None tests narrow: copies share its identity.
                ident = index * 8 + len(stack) % 8
                for position, value in enumerate(stack):
                    if value[1] == ident:
                        stack[position] = (value[0], None, value[2])
                stack.append((EXC | NONE, ident, None))
            else:
                stack.append((_PRODUCES[token], None, None))


# -- the original's prologue -------------------------------------------------

def _prologue_key(instr):
    arg = instr.arg
    if isinstance(arg, (CellVar, FreeVar)):
        return arg.name
    if instr.name == "COPY_FREE_VARS":
        return arg
    return None


def _original_prologue(code, layer):
    """``(name, key)`` of the instructions before the RESUME that starts
    ``code``: its frame setup (MAKE_CELL's key is the cell's name)."""
    raw = code.co_code
    names = _opname
    extended = _opmap["EXTENDED_ARG"]
    resume = _opmap["RESUME"]
    cache = _opmap.get("CACHE", 0)
    localsplus = (code.co_varnames
                  + tuple(c for c in code.co_cellvars if c not in code.co_varnames)
                  + code.co_freevars)
    prologue = []
    ext = 0
    for offset in range(0, len(raw), 2):
        op, arg = raw[offset], raw[offset + 1] | ext
        if op == extended:
            ext = arg << 8
            continue
        ext = 0
        if op == cache:
            continue
        if op == resume and layer.resume_starts_code(arg):
            return prologue
        name = layer.decoded_names.get(names[op], names[op])
        if name == "MAKE_CELL":
            prologue.append((name, localsplus[arg]))
        elif name == "COPY_FREE_VARS":
            prologue.append((name, arg))
        else:
            prologue.append((name, None))
    return prologue
