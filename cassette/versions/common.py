"""The interface every per-version layer implements, and what they share.

Vocabulary
----------
*Stack tags.*  The rewriter simulates the value stack of a code object to
learn, for every call, what the two slots below its arguments hold.  It only
needs a few kinds of value, the :class:`StackTag` members.

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

import dis
import enum

from bytecode import Bytecode, Instr, Label

from ..operations import BINARY_NAMES, COMPARE_NAMES, INPLACE_NAMES
from .._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

_EXTENDED_ARG = dis.opmap["EXTENDED_ARG"]
#: The running interpreter's instructions that store or delete a fast local,
#: by how their argument names it: 1 the whole argument, 2 its high four
#: bits (a store fused with a load, 3.13+), 3 either four bits (two stores).
_LOCAL_STORES = {dis.opmap[name]: form for name, form in (
    ("STORE_FAST", 1), ("DELETE_FAST", 1), ("LOAD_FAST_AND_CLEAR", 1),
    ("STORE_FAST_LOAD_FAST", 2), ("STORE_FAST_STORE_FAST", 3)) if name in dis.opmap}


def _location_entry_end(table, index, kind):
    """Where the location entry of ``kind`` whose body starts at ``index``
    of ``table`` ends (see ``Layer.fit_location_table``)."""
    if kind < 10:
        return index + 1
    if kind < 13:
        return index + 2
    varints = 1 if kind == 13 else 4 if kind == 14 else 0
    for _ in range(varints):
        while index < len(table) and table[index] & 0x40:
            index += 1
        index += 1
    return index


def _location_varint(value):
    encoded = bytearray()
    while True:
        group, value = value & 0x3F, value >> 6
        encoded.append(group | (0x40 if value else 0))
        if not value:
            return encoded


def _location_svarint(value):
    return _location_varint((-value) << 1 | 1 if value < 0 else value << 1)


class StackTag(enum.Enum):
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


#: Instructions of the propagation sites a tagging context needs rewritten
#: (see cassette.propagation), by the site kind they make; ``detail`` is the
#: instruction's argument.
_TAGGING_SITES = {
    "BUILD_LIST": "built", "BUILD_TUPLE": "built", "BUILD_SET": "built",
    "BUILD_MAP": "built", "BUILD_CONST_KEY_MAP": "built",
    "LIST_APPEND": "list_append", "SET_ADD": "set_add", "MAP_ADD": "map_add",
    "LIST_EXTEND": "extended", "SET_UPDATE": "extended", "DICT_UPDATE": "extended",
    "DICT_MERGE": "extended",
    "UNPACK_SEQUENCE": "unpacked", "UNPACK_EX": "unpacked",
    "LOAD_GLOBAL": "load_global", "STORE_GLOBAL": "store_global",
}


def swap_below(count, location):
    """Instructions that move the top of stack below the ``count`` values
    under it, keeping their order: ``[a1 … an, x] -> [x, a1 … an]``."""
    return [Instr("SWAP", i, location=location) for i in range(count + 1, 1, -1)]


def below_null_resolution(layout, tags):
    """3.11/3.12: a call's two slots are ``[NULL, callable]`` or, in method
    form, ``[callable, self]`` (a generator expression's function and its
    iterator take that form too)."""
    upper_depth, lower_depth = layout
    if len(tags) < lower_depth:
        return None
    lower = tags[-lower_depth]
    if lower is StackTag.NULL:
        return upper_depth
    if lower is StackTag.OTHER:
        return lower_depth
    return None


#: The detail of an ``iter`` site whose iterator the caller made already
#: (a generator expression's own, where
#: :attr:`Layer.generator_expressions_take_iterable`): the site keeps an
#: iterator its caller made, makes one of any other value (code called
#: from ``gi_code``), and completes the stack ``GET_ITER`` leaves.
GIVEN_ITERATOR = "given"


class Layer:
    """Base class of the per-version layers: what 3.11–3.13 spell alike."""

    version = None
    #: True when a call pushes its NULL *before* the callable (3.11, 3.12).
    null_below_callable = True

    #: Instructions whose classification reads the instructions after them
    #: (:meth:`site`'s ``following``, at most ``site_lookahead`` of them);
    #: every other one is given ``()``.
    sites_read_following = frozenset()
    site_lookahead = 3
    #: True when the interpreter's specialized property load pushes the
    #: getter's frame after checking only the class (3.14+): a routed
    #: getter's retired version no longer stops it, so the core *pins* the
    #: attribute loads of rewritten code that may reach a routed getter
    #: (:meth:`plain_attribute_loads`, :attr:`attribute_load_pin`).
    property_loads_skip_routing = False
    #: Where :attr:`property_loads_skip_routing`: ``(LOAD_ATTR's opcode,
    #: LOAD_ATTR_PROPERTY's, the opcodes that may stand where a LOAD_ATTR
    #: was compiled — its specializations and the instrumented ones — and
    #: an adaptive counter value that never triggers specialization)``.
    #: The core pins a load by writing that counter into its first cache
    #: entry (and undoing LOAD_ATTR_PROPERTY): the load stays generic, and
    #: a generic load calls a property's getter through its vectorcall
    #: entry, which routing owns.
    attribute_load_pin = None
    #: True when a generator expression's function is passed the iterable
    #: and makes the iterator itself (3.15), not passed the iterator.
    generator_expressions_take_iterable = False
    #: How deep (1 = top) a loop's iterator sits when FOR_ITER runs.
    iterator_depth = 1
    #: Attributes whose reading calls a Python function the owner holds
    #: from C: with deferred annotations (3.14+), ``__annotations__`` calls
    #: the owner's ``__annotate__``.
    annotation_attributes = frozenset()

    #: Instructions :meth:`bytecode_of` spells as others: name -> the name
    #: it decodes as.
    decoded_names = {}

    def bytecode_of(self, code):
        """``code`` as an abstract :class:`bytecode.Bytecode` whose exception
        blocks keep their stack depths: the form passes and the rewriter
        read (a layer may spell some instructions the way earlier releases
        did, with the same effect, so passes written for those still
        match)."""
        return Bytecode.from_code(code, conserve_exception_block_stackdepth=True)

    def is_inlined_scope(self, code):
        """True for the code of a function the compiler of this version calls
        where later versions inline the code instead (3.11's list, set and
        dict comprehensions).  Calling it is not an operation of the program:
        the runtime runs its body without hooks so traces match across
        versions."""
        return False

    # -- emission -----------------------------------------------------------

    def fit_location_table(self, code):
        """``code`` with a location table (``co_linetable``) that the
        interpreter's two readers of it read alike, covering exactly its
        instructions.

        Each entry of the table starts with a byte whose top bit is set and
        every other byte has it clear: the interpreter's line walker (behind
        ``co_lines`` and 3.11's tracing) finds entries by that bit alone, its
        position reader (behind ``co_positions`` and tracebacks) by their
        formats.  The ``bytecode`` package writes a column of 128 to 255 as
        one raw byte of the one-line form, which the line walker takes for
        an entry of its own: the lines it gives are off from there on,
        ``co_lines`` reaches past the code, and 3.11's tracing, which fills
        a per-instruction line array from that walk, writes past the
        array's end (heap corruption, then a crash).  Such an entry is
        written in the long form, as CPython's compiler writes it; entries
        reaching past the last instruction are cut there.  A table this
        layer cannot read is left as it is.

        Format (3.11 on; ``Objects/locations.md`` in CPython): the first
        byte is ``0x80 | kind << 3 | (code units - 1)``; kinds 0-9 (short
        form) have one byte more, 10-12 (one line) two column bytes, 13 (no
        columns) a signed varint, 14 (long form) a signed and three unsigned
        varints, 15 (no location) nothing.  A varint is 6-bit groups, least
        significant first, 0x40 set on all but the last."""
        reach = max((end for _, end, _ in code.co_lines()), default=0)
        if reach == len(code.co_code):
            # The package covers every instruction, and an entry the walker
            # wrongly finds adds to its reach: none here.
            return code
        table = code.co_linetable
        units_left = len(code.co_code) // 2
        fitted = bytearray()
        changed = False
        index, size = 0, len(table)
        while index < size and units_left > 0:
            head = table[index]
            if not head & 0x80:
                return code
            kind, units = (head >> 3) & 15, (head & 7) + 1
            following = _location_entry_end(table, index + 1, kind)
            if following > size:
                return code
            if 10 <= kind <= 12 and (table[index + 1] | table[index + 2]) & 0x80:
                body = (_location_svarint(kind - 10) + _location_varint(0)
                        + _location_varint(table[index + 1] + 1)
                        + _location_varint(table[index + 2] + 1))
                kind, changed = 14, True
            else:
                body = table[index + 1:following]
            if units > units_left:
                units, changed = units_left, True
            fitted.append(0x80 | kind << 3 | (units - 1))
            fitted += body
            units_left -= units
            index = following
        if index < size:
            changed = True          # entries wholly past the last instruction
        return code.replace(co_linetable=bytes(fitted)) if changed else code

    def call_constant(self, const, nargs, location):
        """Call ``const`` with the top ``nargs`` stack values; push the result.

        With operands, ``const`` goes below them and the first is passed as
        a method's object: ``[c, v1 … vn]`` and a call of ``n - 1``
        arguments is ``c(v1, …, vn)`` on every release (see
        :meth:`call_constant_on`), with no NULL to push and half the
        shuffles of the function form."""
        if nargs == 0:
            null = Instr("PUSH_NULL", location=location)
            load = Instr("LOAD_CONST", const, location=location)
            pair = [null, load] if self.null_below_callable else [load, null]
            return pair + self.call_opcodes(0, location)
        return ([Instr("LOAD_CONST", const, location=location)]
                + swap_below(nargs, location) + self.call_opcodes(nargs - 1, location))

    def call_constant_on(self, push, location):
        """After ``LOAD_CONST c``: push one value (``push``, an instruction)
        and call ``c`` with it alone, as a method is called with its
        object; push the result.  The call's two slots are then ``[c,
        value]`` on every release: 3.11/3.12 read a non-NULL lower slot as
        a method and its object, 3.13+ the upper one as ``self``."""
        return [push] + self.call_opcodes(0, location)

    def call_opcodes(self, nargs, location):
        """The instruction(s) that perform a call of ``nargs`` arguments whose
        callable pair is already in place."""
        return [Instr("CALL", nargs, location=location)]

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

    def enter_with(self, slot, location, entry_slot=None):
        """Instructions that replace a ``with``/``async with`` entry site:
        call ``slot`` with the context manager on top of the stack; it
        returns ``(value, exit)``, and the stack must end as the original
        instructions leave it, with ``exit`` where the block's end calls it.
        ``entry_slot`` (a ``with``'s, not an ``async with``'s) is another
        way to the same: called with the manager, it returns an object
        whose ``__enter__()`` returns ``(value, exit)`` — for releases that
        take no interrupt right after a call of a method ``LOAD_SPECIAL``
        loaded (3.15), see :class:`~cassette.versions.py315.Layer315`."""
        return self.call_constant(slot, 1, location) + [
            Instr("UNPACK_SEQUENCE", 2, location=location)]

    def is_generator_expression(self, code):
        """True when ``code`` (a constant) is that of a generator expression
        whose outermost loop is a ``for``, not an ``async for`` (the inner
        ones may be either).  Only layers with
        :attr:`generator_expressions_take_iterable` need it."""
        raise NotImplementedError(f"CPython {self.version} passes a generator expression "
                                  "its iterator")

    def iterator_made(self, location):
        """Instructions after a slot that replaced ``GET_ITER`` left the
        iterator on top, making the stack ``GET_ITER`` leaves."""
        return []

    def call_ex_has_keywords(self, site, tags):
        """True when the ``call_ex`` site's top stack value is a keywords
        dict (``f(*a, **k)``); ``tags`` is the simulated stack before it."""
        return bool(site.detail)

    def call_ex_arguments_depth(self, site):
        """The depth (1 = top) of a ``call_ex`` site's positional tuple."""
        return 2 if site.detail else 1

    def rebinds_local(self, code, name):
        """Whether some instruction of ``code`` stores or deletes the local
        ``name`` (the fused forms of later releases included).  Read from
        the raw instructions: a class made at run time (a dataclass) asks
        this of each new ``__init__``, and ``dis`` takes ten times longer."""
        names = code.co_varnames
        if name not in names:
            return False
        index = names.index(name)       # (locals come first in the fast locals)
        raw = code.co_code
        argument = 0
        for position in range(0, len(raw), 2):
            opcode = raw[position]
            argument |= raw[position + 1]
            if opcode == _EXTENDED_ARG:
                argument <<= 8
                continue
            form = _LOCAL_STORES.get(opcode)
            if form is not None and (
                    argument == index if form == 1
                    else argument >> 4 == index or (form == 3 and argument & 15 == index)):
                return True
            argument = 0
        return False

    def return_first_argument(self, bytecode, name, check):
        """Make each return of ``bytecode`` give the local ``name`` (an
        ``__init__``'s first argument, never rebound) where it gave None: a
        return of the constant None returns the local instead; any other
        return calls ``check(value, local)`` and returns what it returns."""
        out = []
        for element in bytecode:
            if type(element) is Instr and element.name == "RETURN_CONST":
                out.append(Instr("LOAD_CONST", element.arg, location=element.location))
                element = Instr("RETURN_VALUE", location=element.location)
            if type(element) is Instr and element.name == "RETURN_VALUE":
                loc = element.location
                last = out[-1] if out else None
                if type(last) is Instr and last.name == "LOAD_CONST" and last.arg is None:
                    out[-1] = Instr("LOAD_FAST", name, location=last.location)
                else:
                    out.append(Instr("LOAD_FAST", name, location=loc))
                    out += self.call_constant(check, 2, loc)
            out.append(element)
        bytecode[:] = out

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
        they are all :attr:`StackTag.OTHER`.  A function of the opcode and the
        leading flag of a tuple argument only (the rewriter caches it)."""
        name = instr.name
        if name == "PUSH_NULL":
            return [StackTag.NULL]
        if name == "LOAD_GLOBAL" and instr.arg[0]:
            return self._null_and_value()
        if name == "BEFORE_WITH" or name == "BEFORE_ASYNC_WITH":
            return [StackTag.EXIT, StackTag.OTHER]
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
            return [StackTag.NULL, StackTag.OTHER]
        return [StackTag.OTHER, StackTag.NULL]

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
        tagging = _TAGGING_SITES.get(name)
        if tagging is not None:
            return Site(tagging, detail=instr.arg)
        if name == "IS_OP":
            return Site("is_not" if instr.arg else "is")
        if self.is_list_to_tuple(instr):
            return Site("list_to_tuple")
        return self._call_site(instr, following)

    def is_list_to_tuple(self, instr):
        """True for the instruction turning a display's list into a tuple
        (``(*a, b)``, ``f(*a, b)``)."""
        return False

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

    # -- verification of a pass's output (cassette.verify) ---------------------
    #
    # What each instruction a pass may emit does to the value stack, in the
    # vocabulary of cassette/verify.py (which documents the kind tokens).  A
    # signature is a string "kept : popped -> pushed", bottom of the stack
    # first: kept values stay in place and are read, popped values are
    # consumed, pushed values produced ("=N" pushes the N-th popped value
    # back, itself).  Without ":" nothing is kept.  An instruction without a
    # signature may not appear in a pass's output (pseudo, instrumented and
    # specialized opcodes, EXTENDED_ARG, CACHE, INTERPRETER_EXIT …).

    #: Instructions that set up the frame; allowed only where the original
    #: code has them (its prologue, before the first RESUME).  MAKE_CELL is
    #: not among them: 3.12+ comprehensions remake their variable's cell, and
    #: it only wraps what the slot holds in a new cell.
    verify_frame_setup = frozenset({"COPY_FREE_VARS", "RETURN_GENERATOR"})

    #: Instructions after which execution does not fall through.
    verify_final = frozenset({
        "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE",
        "JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT",
    })

    #: Instructions that leave the frame: the stack must be empty after them.
    verify_returns = frozenset({"RETURN_VALUE", "RETURN_CONST"})

    #: Instructions with no error path once they run (monitoring may still
    #: raise *before* one runs, with its inputs on the stack).  Inside a
    #: protected range they may consume values below the range's depth.
    verify_nonraising = frozenset({
        "NOP", "POP_TOP", "PUSH_NULL", "SWAP", "COPY", "LOAD_CONST",
        "STORE_FAST", "PUSH_EXC_INFO", "POP_EXCEPT", "END_FOR", "END_SEND",
        "YIELD_VALUE", "RETURN_VALUE", "RETURN_CONST", "JUMP_FORWARD",
        "LOAD_FAST_AND_CLEAR", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST",
    })

    #: Instructions that raise with their inputs still on the stack (the
    #: handler's depth may reach into them); listed where it matters.
    verify_raise_keeping_inputs = frozenset()

    #: True when the compiler lets a protected range cover instructions
    #: that cannot raise after the values it protects are gone (3.15: a
    #: generator expression's range keeps its iterator's two slots and
    #: covers its return); the checker accepts that at those instructions.
    verify_ranges_outlast_their_stack = False

    #: Conditional jumps on ``value is None``: name -> True when the jump is
    #: taken for None.
    verify_none_jumps = {"POP_JUMP_IF_NONE": True, "POP_JUMP_IF_NOT_NONE": False}

    #: Jumps whose target must lie after / before them.
    verify_forward_jumps = frozenset({"JUMP_FORWARD", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE",
                                      "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE", "FOR_ITER",
                                      "SEND"})
    verify_backward_jumps = frozenset({"JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"})

    #: Instructions ``dis`` lists as jumps whose label only tells monitoring
    #: where a branch came from: they never jump there.
    verify_never_jumps = frozenset()

    #: The instructions that read or write a local's slot (``*_FAST``).
    verify_local_ops = frozenset({
        "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "STORE_FAST", "DELETE_FAST",
        "LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST",
    })

    #: The instructions that use a cell or free variable's slot (``*_DEREF``;
    #: 3.14's ``dis`` lists LOAD_DEREF among the local ones).
    verify_deref_ops = frozenset(dis.opname[op] for op in dis.hasfree) | {"LOAD_DEREF"}

    #: True when LOAD_FAST raises UnboundLocalError for an unbound local
    #: (3.11); from 3.12 the compiler proves the local bound and LOAD_FAST
    #: reads it unchecked (LOAD_FAST_CHECK is the checked form).
    verify_load_fast_checks = False

    #: The instructions FOR_ITER skips when the iterator is exhausted: its
    #: target must be followed by exactly these (the interpreter jumps past
    #: them, a generator's return executes them).
    verify_for_iter_exit = ("END_FOR",)

    #: The instruction a KW_NAMES must be followed by (None: no KW_NAMES).
    verify_kw_names_next = "CALL"

    #: An instruction that must directly precede every CALL with the same
    #: argument (3.11's PRECALL), or None.
    verify_call_prefix = None

    #: Largest BINARY_OP operator (NB_INPLACE_XOR); COMPARE_OP operators.
    verify_binary_op_max = 25
    verify_compare_ops = frozenset(range(6))

    #: Largest RESUME argument.
    verify_resume_max = 3

    #: CALL_INTRINSIC_1 / CALL_INTRINSIC_2 by operand: signature.  Operands
    #: not listed (INTRINSIC_1_INVALID …) are rejected.
    verify_intrinsic1 = {
        1: "obj -> obj",            # INTRINSIC_PRINT
        2: "obj -> obj",            # INTRINSIC_IMPORT_STAR
        3: "exc -> exc",            # INTRINSIC_STOPITERATION_ERROR
        4: "obj -> obj",            # INTRINSIC_ASYNC_GEN_WRAP
        5: "obj -> obj",            # INTRINSIC_UNARY_POSITIVE
        6: "list -> tuple",         # INTRINSIC_LIST_TO_TUPLE (reads the list's items unchecked)
        7: "str -> obj",            # INTRINSIC_TYPEVAR
        8: "str -> obj",            # INTRINSIC_PARAMSPEC
        9: "str -> obj",            # INTRINSIC_TYPEVARTUPLE
        10: "tuple -> obj",         # INTRINSIC_SUBSCRIPT_GENERIC
        11: "alias_args -> obj",    # INTRINSIC_TYPEALIAS
    }
    verify_intrinsic2 = {
        1: "exc list_exc -> exc|none",  # INTRINSIC_PREP_RERAISE_STAR
        2: "str obj -> obj",            # INTRINSIC_TYPEVAR_WITH_BOUND
        3: "str obj -> obj",            # INTRINSIC_TYPEVAR_WITH_CONSTRAINTS
        4: "func tuple -> =0",          # INTRINSIC_SET_FUNCTION_TYPE_PARAMS
    }

    #: Signatures that do not depend on the argument.
    verify_fixed = {
        "NOP": " -> ",
        "RESUME": " -> ",
        "MAKE_CELL": " -> ",
        "POP_TOP": "obj -> ",
        "PUSH_NULL": " -> null",
        "UNARY_NEGATIVE": "obj -> obj",
        "UNARY_NOT": "obj -> obj",
        "UNARY_INVERT": "obj -> obj",
        "BINARY_OP": "obj obj -> obj",
        "BINARY_SUBSCR": "obj obj -> obj",
        "BINARY_SLICE": "obj obj obj -> obj",
        "STORE_SLICE": "obj obj obj obj -> ",
        "STORE_SUBSCR": "obj obj obj -> ",
        "DELETE_SUBSCR": "obj obj -> ",
        "GET_LEN": "obj : -> obj",
        "MATCH_MAPPING": "obj : -> bool",
        "MATCH_SEQUENCE": "obj : -> bool",
        "MATCH_KEYS": "obj tuple : -> obj",         # match_keys reads the keys tuple unchecked
        "MATCH_CLASS": "obj obj tuple -> obj",      # match_class reads the names tuple unchecked
        "GET_ITER": "obj -> iter",
        "GET_YIELD_FROM_ITER": "obj -> obj",
        "GET_AITER": "obj -> obj",
        "GET_ANEXT": "obj : -> obj",
        "GET_AWAITABLE": "obj -> obj",
        "END_FOR": "obj obj -> ",
        "END_SEND": "obj obj -> =1",
        "RETURN_VALUE": "obj -> ",
        "RETURN_CONST": " -> ",
        "YIELD_VALUE": "obj -> obj",
        "POP_EXCEPT": "exc|none -> ",
        "END_ASYNC_FOR": "obj exc -> ",
        "CLEANUP_THROW": "obj obj exc -> none obj",
        "LOAD_ASSERTION_ERROR": " -> obj",
        "LOAD_BUILD_CLASS": " -> obj",
        "STORE_NAME": "obj -> ",
        "DELETE_NAME": " -> ",
        "LOAD_NAME": " -> obj",
        "LOAD_LOCALS": " -> obj",
        "LOAD_FROM_DICT_OR_GLOBALS": "obj -> obj",
        "LOAD_FROM_DICT_OR_DEREF": "obj -> obj",
        "STORE_ATTR": "obj obj -> ",
        "DELETE_ATTR": "obj -> ",
        "STORE_GLOBAL": "obj -> ",
        "DELETE_GLOBAL": " -> ",
        "LOAD_DEREF": " -> obj",
        "STORE_DEREF": "obj -> ",
        "DELETE_DEREF": " -> ",
        "LOAD_CLOSURE": " -> cell",
        "SETUP_ANNOTATIONS": " -> ",
        "IMPORT_NAME": "obj obj -> obj",
        "IMPORT_FROM": "obj : -> obj",
        "IS_OP": "obj obj -> bool",
        "CONTAINS_OP": "obj obj -> bool",
        "COMPARE_OP": "obj obj -> obj",
        "CHECK_EG_MATCH": "exc|none obj -> exc|none exc|none",
        "CHECK_EXC_MATCH": "obj : obj -> bool",
        "JUMP_FORWARD": " -> ",
        "JUMP_BACKWARD": " -> ",
        "JUMP_BACKWARD_NO_INTERRUPT": " -> ",
        "POP_JUMP_IF_FALSE": "obj -> ",
        "POP_JUMP_IF_TRUE": "obj -> ",
        "POP_JUMP_IF_NONE": "obj -> ",
        "POP_JUMP_IF_NOT_NONE": "obj -> ",
        "BEFORE_WITH": "obj -> obj obj",
        "BEFORE_ASYNC_WITH": "obj -> obj obj",
        # exit function, lasti, the previous exception, the exception; it
        # reads the exception's traceback unchecked.
        "WITH_EXCEPT_START": "obj any any exc : -> obj",
        "PUSH_EXC_INFO": "exc -> exc|none =0",
        "KW_NAMES": " -> ",
        "LOAD_FAST": " -> obj",
        "LOAD_FAST_CHECK": " -> obj",
        "LOAD_FAST_AND_CLEAR": " -> null|obj",
        "STORE_FAST": "null|obj -> ",
        "DELETE_FAST": " -> ",
        "LOAD_CONST": " -> obj",
        "SWAP": " -> ",
        "COPY": " -> ",
    }

    def verify_signature(self, name, arg, jump):
        """The signature of instruction ``name`` with argument ``arg`` when
        its jump is taken (``jump``) or not, or None when a pass may not emit
        it.  ``arg`` has been checked to be of the right type."""
        sig = self._verify_version_signature(name, arg, jump)
        if sig is not None:
            return sig
        fixed = self.verify_fixed.get(name)
        if fixed is not None:
            return fixed
        n = arg if type(arg) is int else 0
        if name in ("LIST_APPEND", "LIST_EXTEND"):
            return " ".join(["list"] + ["any"] * (n - 1)) + " : obj -> "
        if name == "SET_ADD":
            # PySet_Add checks its set (3.14 adds to a module's
            # __conditional_annotations__, which LOAD_NAME reads).
            return " ".join(["obj"] + ["any"] * (n - 1)) + " : obj -> "
        if name == "SET_UPDATE":
            return " ".join(["set"] + ["any"] * (n - 1)) + " : obj -> "
        if name == "DICT_UPDATE":
            return " ".join(["dict"] + ["any"] * (n - 1)) + " : obj -> "
        if name == "MAP_ADD":
            return " ".join(["dict"] + ["any"] * (n - 1)) + " : obj obj -> "
        if name == "DICT_MERGE":
            # The callable of the call being built is read (for the error
            # message when the merge fails).
            return " ".join(["obj"] + ["any"] * self._verify_dict_merge_gap
                            + ["dict"] + ["any"] * (n - 1)) + " : obj -> "
        if name == "BUILD_TUPLE":
            return " ".join(["obj"] * n) + " -> tuple*"
        if name == "BUILD_LIST":
            return " ".join(["obj"] * n) + " -> list*"
        if name == "BUILD_SET":
            return " ".join(["obj"] * n) + " -> set"
        if name == "BUILD_MAP":
            return " ".join(["obj"] * (2 * n)) + " -> dict"
        if name == "BUILD_CONST_KEY_MAP":
            return " ".join(["obj"] * (n + 1)) + " -> dict"
        if name == "BUILD_STRING":
            return " ".join(["obj"] * n) + " -> str"
        if name == "BUILD_SLICE":
            return " ".join(["obj"] * n) + " -> obj"
        if name == "UNPACK_SEQUENCE":
            return "obj -> " + " ".join(["obj"] * n)
        if name == "UNPACK_EX":
            return "obj -> " + " ".join(["obj"] * ((n & 0xFF) + 1 + (n >> 8)))
        if name == "RAISE_VARARGS":
            return " ".join(["obj"] * n) + " -> "
        if name == "RERAISE":
            # With an argument, the value that far below the exception is
            # the lasti an exception handler pushed: RERAISE jumps there.
            kept = ["lasti"] + ["any"] * (n - 1) if n else []
            return " ".join(kept) + " : exc -> "
        if name == "CALL_INTRINSIC_1":
            return self.verify_intrinsic1.get(int(arg))
        if name == "CALL_INTRINSIC_2":
            return self.verify_intrinsic2.get(int(arg))
        if name == "LOAD_GLOBAL":
            return " -> " + " ".join(self._verify_with_null("obj") if arg[0] else ["obj"])
        return None

    def verify_arg_error(self, name, arg):
        """Why ``arg`` is out of range for ``name`` (an enum or count the
        interpreter indexes a table with or trusts), or None."""
        if name == "BINARY_OP":
            if not 0 <= int(arg) <= self.verify_binary_op_max:
                return f"BINARY_OP operator {int(arg)} is not one of 0..{self.verify_binary_op_max}"
        elif name == "COMPARE_OP":
            if int(arg) not in self.verify_compare_ops:
                return f"COMPARE_OP operator {int(arg)} is not a comparison"
        elif name in ("IS_OP", "CONTAINS_OP"):
            if arg not in (0, 1):
                return f"{name} takes 0 or 1, not {arg}"
        elif name == "CALL_INTRINSIC_1":
            if int(arg) not in self.verify_intrinsic1:
                return f"CALL_INTRINSIC_1 operand {int(arg)} is not a valid intrinsic"
        elif name == "CALL_INTRINSIC_2":
            if int(arg) not in self.verify_intrinsic2:
                return f"CALL_INTRINSIC_2 operand {int(arg)} is not a valid intrinsic"
        elif name == "RAISE_VARARGS":
            if not 0 <= arg <= 2:
                return f"RAISE_VARARGS takes 0, 1 or 2, not {arg}"
        elif name == "RERAISE":
            if not 0 <= arg <= 2:
                return f"RERAISE takes 0, 1 or 2, not {arg}"
        elif name == "BUILD_SLICE":
            if arg not in (2, 3):
                return f"BUILD_SLICE takes 2 or 3, not {arg}"
        elif name == "GET_AWAITABLE":
            if not 0 <= arg <= 2:
                return f"GET_AWAITABLE takes 0, 1 or 2, not {arg}"
        elif name == "RESUME":
            if not 0 <= arg <= self.verify_resume_max:
                return f"RESUME takes 0..{self.verify_resume_max}, not {arg}"
        elif name == "SWAP":
            if arg < 2:
                return f"SWAP needs an argument of at least 2, not {arg}"
        elif name == "COPY":
            if arg < 1:
                return f"COPY needs an argument of at least 1, not {arg}"
        elif name in ("LIST_APPEND", "LIST_EXTEND", "SET_ADD", "SET_UPDATE", "MAP_ADD",
                      "DICT_UPDATE", "DICT_MERGE"):
            if arg < 1:
                return f"{name} needs an argument of at least 1, not {arg}"
        return self._verify_version_arg_error(name, arg)

    def resume_starts_code(self, arg):
        """True for the RESUME that starts the code (after the prologue)."""
        return arg == 0

    def verify_prologue_leaves(self, prologue):
        """The kinds of the values the frame setup (the names of the
        instructions before the starting RESUME) leaves on the stack."""
        return ()

    #: How deep (1 = top) the sub-iterator of a ``yield from``/``await``
    #: sits while the generator is suspended in it.
    verify_receiver_depth = 1

    def verify_yield_reads_receiver(self, instr, next_instr):
        """True when, suspended at YIELD_VALUE ``instr``, the frame's top of
        stack is read as the sub-iterator of a ``yield from``/``await``
        (so it must be a value)."""
        return (next_instr is not None and next_instr.name == "RESUME"
                and type(next_instr.arg) is int and next_instr.arg >= 2)

    #: DICT_MERGE: how many stack slots lie between the dict and the callable.
    _verify_dict_merge_gap = 1

    def _verify_with_null(self, token):
        """A callable's ``token`` and a NULL pushed with it, in stack order."""
        return ["null", token] if self.null_below_callable else [token, "null"]

    def _verify_version_signature(self, name, arg, jump):
        """Signatures of the instructions this version spells its own way."""
        return None

    def _verify_version_arg_error(self, name, arg):
        return None

    def _verify_flags_signature(self, name, flags):
        """MAKE_FUNCTION's and FORMAT_VALUE's signatures where their argument
        holds flags (3.11, 3.12)."""
        if name == "MAKE_FUNCTION":
            return self._verify_make_function(flags)
        return "obj obj -> str" if flags & 4 else "obj -> str"      # FORMAT_VALUE

    def _verify_flags_arg_error(self, name, flags):
        """Why the flags of MAKE_FUNCTION or FORMAT_VALUE (3.11, 3.12) are
        out of range, or None."""
        if name == "FORMAT_VALUE" and not 0 <= flags <= 7:
            return f"FORMAT_VALUE flags {flags} are not in 0..7"
        if name == "MAKE_FUNCTION" and not 0 <= flags <= 15:
            return f"MAKE_FUNCTION flags {flags} are not in 0..15"
        return None

    def _verify_make_function(self, flags):
        """MAKE_FUNCTION's signature when it takes its flags (3.11, 3.12):
        the code object on top, below it the closure, annotations, keyword
        defaults and defaults the flags announce."""
        popped = [token for bit, token in ((1, "tuple"), (2, "dict"), (4, "annotations"),
                                           (8, "cells")) if flags & bit]
        return " ".join(popped + ["code"]) + " -> func"

    #: True when *_FAST instructions may address a cell or free variable's
    #: slot (3.13 compiles LOAD_CLOSURE to LOAD_FAST of the cell).
    verify_fast_reads_cells = False
