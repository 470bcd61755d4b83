"""The interface every per-version layer implements, and what they share.

Vocabulary
----------
*Stack tags.*  The rewriter simulates the value stack of a code object to
learn, for every call, what the two slots below its arguments hold.  It only
needs a few kinds of value, the :class:`Tag` members.

*Sites.*  ``layer.site(instr, following)`` classifies one instruction as an
operation site (a :class:`Site`) or returns ``None``.  A site names the
operation (a key of :data:`cassette.operations.OPERATIONS` or one of the
structural kinds below) and how many instructions it spans.

*Emission.*  ``layer.call_constant(const, nargs, location)`` returns
instructions that call the constant ``const`` with the ``nargs`` values on top
of the stack as positional arguments, leaving only the result.  All
operation rewrites are built from it, so a pass author or the rewriter never
spells a call sequence for a particular version.
"""

import enum

from bytecode import Instr, Label

from ..operations import BINARY_NAMES, COMPARE_NAMES, INPLACE_NAMES
from .._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py


class Tag(enum.Enum):
    """What the rewriter knows about one stack value."""

    OTHER = 0        # any ordinary value
    NULL = 1         # the NULL a call pushes beside a plain callable
    METHOD = 2       # a callable already resolved by the rewritten method load
    EXIT = 3         # the __exit__ callable a rewritten `with` pushed


class Site:
    """An operation site found in the instruction stream.

    ``kind``   the operation name (``"add"``, ``"getattr"`` …) or a structural
               kind: ``"call"``, ``"method"``, ``"super_method"``, ``"for"``,
               ``"with"``, ``"async_with"``.
    ``span``   how many consecutive instructions the site replaces.
    ``detail`` kind-specific data (attribute name, number of arguments …).
    """

    __slots__ = ("kind", "span", "detail")

    def __init__(self, kind, span=1, detail=None):
        self.kind = kind
        self.span = span
        self.detail = detail

    def __repr__(self):
        return f"Site({self.kind!r}, span={self.span}, detail={self.detail!r})"


# BinaryOp enum members in CPython order; the in-place forms follow the binary
# forms (NB_INPLACE_ADD == 13).  Same numbering on 3.11–3.13.
_BINARY_OP_NAMES = (
    "add", "and", "floordiv", "lshift", "matmul", "mul", "mod", "or", "pow",
    "rshift", "sub", "truediv", "xor",
)
_INPLACE_OP_NAMES = tuple("i" + n for n in _BINARY_OP_NAMES)
_COMPARE_BY_INDEX = ("lt", "le", "eq", "ne", "gt", "ge")

assert set(_BINARY_OP_NAMES) == set(BINARY_NAMES)
assert set(_INPLACE_OP_NAMES) == set(INPLACE_NAMES)
assert set(_COMPARE_BY_INDEX) == set(COMPARE_NAMES)


def swap_below(count, location):
    """Instructions that move the top of stack below the ``count`` values
    under it, keeping their order: ``[a1 … an, x] -> [x, a1 … an]``."""
    return [Instr("SWAP", i, location=location) for i in range(count + 1, 1, -1)]


def _below_null_resolution(layout, tags):
    """3.11/3.12: a call's two slots are ``[NULL, callable]`` or, in method
    form, ``[callable, self]`` (a generator expression's function and its
    iterator take that form too)."""
    upper_depth, lower_depth = layout
    if len(tags) < lower_depth:
        return None
    lower = tags[-lower_depth]
    if lower is Tag.NULL:
        return upper_depth
    if lower is Tag.OTHER:
        return lower_depth
    return None


class Layer:
    """Base class of the per-version layers: what 3.11–3.13 spell alike."""

    version = None
    #: True when a call pushes its NULL *before* the callable (3.11, 3.12).
    null_below_callable = True

    def is_inlined_scope(self, code):
        """True for the code of a function the compiler of this version calls
        where later versions inline the code instead (3.11's list, set and
        dict comprehensions).  Calling it is not an operation of the program:
        the runtime runs its body without hooks so traces match across
        versions."""
        return False

    # -- emission -----------------------------------------------------------

    def call_constant(self, const, nargs, location):
        """Call ``const`` with the top ``nargs`` stack values; push the result."""
        raise NotImplementedError

    def call_opcodes(self, nargs, location):
        """The instruction(s) that perform a call of ``nargs`` arguments whose
        callable pair is already in place."""
        return [Instr("CALL", nargs, location=location)]

    def jump_forward(self, label, location):
        return Instr("JUMP_FORWARD", label, location=location)

    def jump_forward_if_false(self, label, location):
        return Instr("POP_JUMP_IF_FALSE", label, location=location)

    def jump(self, label, backward, location):
        """An unconditional jump to ``label``, which lies before the jump when
        ``backward``."""
        return Instr("JUMP_BACKWARD" if backward else "JUMP_FORWARD", label, location=location)

    #: Conditional jumps, by the one taken exactly when they are not.
    _INVERSE_JUMPS = {
        "POP_JUMP_IF_TRUE": "POP_JUMP_IF_FALSE", "POP_JUMP_IF_FALSE": "POP_JUMP_IF_TRUE",
        "POP_JUMP_IF_NONE": "POP_JUMP_IF_NOT_NONE", "POP_JUMP_IF_NOT_NONE": "POP_JUMP_IF_NONE",
    }

    def inverted_forward_jump(self, instr, label):
        """A conditional jump to ``label`` (forward) taken exactly when the
        conditional jump ``instr`` is not, with the same stack effect; None
        when ``instr`` has no such inverse (the ``JUMP_IF_…_OR_POP`` forms
        keep their operand on one path only)."""
        name = self._INVERSE_JUMPS.get(instr.name)
        return None if name is None else Instr(name, label, location=instr.location)

    def is_loop_jump(self, instr):
        """True for a jump that may close a loop of the program: any jump
        but those of the ``await``/``yield from`` machinery."""
        return instr.has_jump() and instr.name != "JUMP_BACKWARD_NO_INTERRUPT"

    def binds_to_next(self, instr):
        """True when nothing may be inserted between ``instr`` and the
        instruction after it (``KW_NAMES`` belongs to its call)."""
        return instr.name == "KW_NAMES"

    def resolve_at_depth(self, const, depth, location):
        """Replace the stack value ``depth`` below the top (1 = top) by
        ``const(value)``, leaving the rest of the stack as it was."""
        code = []
        if depth > 1:
            code.append(Instr("SWAP", depth, location=location))
        code += self.call_constant(const, 1, location)
        if depth > 1:
            code.append(Instr("SWAP", depth, location=location))
        return code

    # -- stack simulation ---------------------------------------------------

    def producer_tags(self, instr):
        """Tags of the values ``instr`` pushes, bottom first, or ``None`` when
        they are all :attr:`Tag.OTHER`."""
        name = instr.name
        if name == "PUSH_NULL":
            return [Tag.NULL]
        if name == "LOAD_GLOBAL" and instr.arg[0]:
            return self._null_and_value()
        if name == "BEFORE_WITH" or name == "BEFORE_ASYNC_WITH":
            return [Tag.EXIT, Tag.OTHER]
        return None

    def pushes_null(self, instr):
        """True when ``instr`` pushes a call's NULL along with its value
        (``LOAD_GLOBAL`` with the null flag)."""
        return instr.name == "LOAD_GLOBAL" and instr.arg[0]

    def is_method_load(self, instr):
        """True when ``instr`` loads a method with its object for a call
        (``obj.m(…)``)."""
        return (instr.name in ("LOAD_ATTR", "LOAD_SUPER_ATTR")
                and isinstance(instr.arg, tuple) and bool(instr.arg[0]))

    def _null_and_value(self):
        if self.null_below_callable:
            return [Tag.NULL, Tag.OTHER]
        return [Tag.OTHER, Tag.NULL]

    # -- classification -----------------------------------------------------

    def site(self, instr, following):
        """Classify ``instr`` (``following`` is the list of instructions after
        it, for sites spanning several) as a :class:`Site` or ``None``."""
        name = instr.name
        if name == "BINARY_OP":
            index = int(instr.arg)
            if index < 13:
                return Site(_BINARY_OP_NAMES[index])
            return Site(_INPLACE_OP_NAMES[index - 13])
        if name == "COMPARE_OP":
            return self._compare_site(instr)
        if name == "UNARY_NEGATIVE":
            return Site("neg")
        if name == "UNARY_INVERT":
            return Site("invert")
        if name == "UNARY_NOT":
            return Site("not")
        if name == "CONTAINS_OP":
            return Site("not_contains" if instr.arg else "contains")
        if name == "BINARY_SUBSCR":
            return Site("getitem")
        if name == "STORE_SUBSCR":
            return Site("setitem")
        if name == "DELETE_SUBSCR":
            return Site("delitem")
        if name == "LOAD_ATTR":
            return self._load_attr_site(instr)
        if name == "STORE_ATTR":
            return Site("setattr", detail=instr.arg)
        if name == "DELETE_ATTR":
            return Site("delattr", detail=instr.arg)
        if name == "GET_ITER":
            return Site("iter")
        if name == "FOR_ITER":
            return Site("for", detail=instr.arg)
        if name == "BEFORE_WITH":
            return Site("with")
        if name == "PUSH_EXC_INFO":
            return Site("caught")
        if name == "BEFORE_ASYNC_WITH":
            return Site("async_with")
        return self._call_site(instr, following)

    def _compare_site(self, instr):
        return Site(_COMPARE_BY_INDEX[int(instr.arg)])

    def _load_attr_site(self, instr):
        raise NotImplementedError

    def _call_site(self, instr, following):
        raise NotImplementedError

    # -- rewrites of structural sites ----------------------------------------

    def call_layout(self, site):
        """For a ``call``/``call_ex`` site: ``(callable_depth, partner_depth)``,
        the depths (1 = top of stack, before the site's first instruction) of
        the callable and of the slot paired with it (NULL or ``self``)."""
        raise NotImplementedError

    def resolution_depth(self, site, tags):
        """The depth (1 = top of stack before the site) of the value a call
        site must route through the runtime's ``resolve``, or None when the
        callable is already resolved (rewritten method loads, ``with``
        exits).  ``tags`` is the simulated stack before the site."""
        raise NotImplementedError

    def to_bool(self, location):
        """Instructions converting the top of stack to ``bool`` like a
        comparison whose result feeds a branch (3.13's ``*_CAST`` forms)."""
        return []

    def for_exhausted(self, target, location):
        """Instructions run when a rewritten ``for`` step finds the iterator
        exhausted, with ``[iterator, SENTINEL]`` on the stack; they must leave
        the loop the way FOR_ITER does."""
        raise NotImplementedError

    # -- interpreter semantics outside bytecode ------------------------------

    def default_locals(self, frame):
        """The locals ``exec``/``eval`` use when called from ``frame`` without
        namespaces: what ``locals()`` returns there (up to 3.12 the frame's
        own locals dict, kept in sync with its fast locals)."""
        return frame.f_locals

    @staticmethod
    def exec_arguments(source, globals=None, locals=None, /, *, closure=None):
        """Binds the arguments of ``exec`` as this version's ``exec`` does:
        ``(source, globals, locals, closure)`` (TypeError otherwise)."""
        return source, globals, locals, closure

    @staticmethod
    def eval_arguments(source, globals=None, locals=None, /):
        """Binds the arguments of ``eval`` like :meth:`exec_arguments`."""
        return source, globals, locals, None
