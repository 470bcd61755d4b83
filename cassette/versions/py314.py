"""CPython 3.14: subscripts are a BINARY_OP, ``with`` loads its special
methods with LOAD_SPECIAL and keeps ``[exit, self, value]`` on the stack,
CALL_FUNCTION_EX always has a keyword slot (NULL without ``**``), loops pop
their iterator with POP_ITER, template strings build interpolations, and
the specialized property load pushes a getter's frame without calling it
(the core pins the loads that may reach a routed getter)."""

import dis

from bytecode import CellVar, ConcreteBytecode, ConcreteInstr, Instr
from bytecode.instr import SpecialMethod

from .common import _EXTENDED_ARG, Site, StackTag
from .py313 import Layer313
from .._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

#: BINARY_OP's operator for ``obj[index]`` (NB_SUBSCR).
_SUBSCRIPT = 26

#: LOAD_SPECIAL's exit method -> the site of the statement it begins.
_WITH_KINDS = {SpecialMethod.EXIT: "with", SpecialMethod.AEXIT: "async_with"}
_ENTER_OF = {SpecialMethod.EXIT: SpecialMethod.ENTER, SpecialMethod.AEXIT: SpecialMethod.AENTER}


class Interpolation(Instr):
    """``BUILD_INTERPOLATION`` with its argument as the interpreter reads it:
    ``conversion << 2 | has_format_spec``.  (``bytecode`` 0.19 decodes that
    argument as if the conversion sat one bit lower, which fails or changes
    the conversion; this layer carries the integer through untouched.)"""

    def _check_arg(self, name, opcode, arg):
        if name != "BUILD_INTERPOLATION":
            super()._check_arg(name, opcode, arg)
        elif type(arg) is not int or not 0 <= arg < 16:
            raise TypeError(f"BUILD_INTERPOLATION takes an int in 0..15, not {arg!r}")


_LOAD_ATTR = bytes([dis.opmap["LOAD_ATTR"]])


class Layer314(Layer313):
    version = (3, 14)
    sites_read_following = frozenset({"TO_BOOL", "LOAD_SPECIAL"})
    site_lookahead = 4
    # LOAD_ATTR_PROPERTY caches the getter itself and guards the class only.
    property_loads_skip_routing = True
    annotation_attributes = frozenset({"__annotations__"})
    #: LOAD_COMMON_CONSTANT's arguments that load a builtin the compiler
    #: inlines a call of with a generator expression (``opcode.
    #: _common_constants``: tuple, all, any).
    inlined_builtin_constants = frozenset({2, 3, 4})
    decoded_names = {"LOAD_FAST_BORROW": "LOAD_FAST",
                     "LOAD_FAST_BORROW_LOAD_FAST_BORROW": "LOAD_FAST_LOAD_FAST",
                     "LOAD_SMALL_INT": "LOAD_CONST"}

    # pycore_backoff.h: a 12-bit value over a 4-bit backoff; a backoff of 15
    # (UNREACHABLE_BACKOFF) never reaches a value of zero.
    never_triggering_counter = 15

    @property
    def attribute_load_pin(self):
        # (A property: the opcodes are the running interpreter's, and this
        # module is imported on every release by the layer tests.)
        specialized = dis._specialized_opmap
        return (dis.opmap["LOAD_ATTR"], specialized["LOAD_ATTR_PROPERTY"],
                frozenset([dis.opmap["LOAD_ATTR"], dis.opmap["INSTRUMENTED_LINE"],
                           dis.opmap["INSTRUMENTED_INSTRUCTION"]]
                          + [specialized[name] for name in dis._specializations["LOAD_ATTR"]]),
                self.never_triggering_counter)

    def plain_attribute_loads(self, code):
        """``(code unit, name)`` of each ``LOAD_ATTR`` of ``code`` that loads
        an attribute (not a method: its oparg's low bit is clear), the
        positions :attr:`attribute_load_pin` applies to."""
        raw = code.co_code
        names = code.co_names
        loads = []
        position = raw.find(_LOAD_ATTR)
        while position >= 0:
            if not position & 1:
                arg = raw[position + 1]
                shift, before = 8, position - 2
                while before >= 0 and raw[before] == _EXTENDED_ARG:
                    arg |= raw[before + 1] << shift
                    shift += 8
                    before -= 2
                if not arg & 1:
                    loads.append((position >> 1, names[arg >> 1]))
            position = raw.find(_LOAD_ATTR, position + 1)
        return tuple(loads)

    def bytecode_of(self, code):
        concrete = ConcreteBytecode.from_code(code)
        interpolations = []
        for index, instr in enumerate(concrete):
            if isinstance(instr, ConcreteInstr) and instr.name == "BUILD_INTERPOLATION":
                interpolations.append(instr.arg)
                # Any argument the package decodes without failing; the real
                # one is put back below, in the same order.
                concrete[index] = ConcreteInstr("BUILD_INTERPOLATION", 2,
                                                location=instr.location)
        bytecode = concrete.to_bytecode(conserve_exception_block_stackdepth=True)
        arguments = iter(interpolations)
        for index, instr in enumerate(bytecode):
            if not isinstance(instr, Instr):
                continue
            if instr.name == "BUILD_INTERPOLATION":
                bytecode[index] = Interpolation("BUILD_INTERPOLATION", next(arguments),
                                                location=instr.location)
            elif instr.name == "LOAD_DEREF" and type(instr.arg) is str:
                # ``dis`` lists LOAD_DEREF among the local instructions, so
                # the package decodes the cell of an argument as the
                # argument's name; it is the cell.
                instr.arg = CellVar(instr.arg)
            elif instr.name in self.decoded_names:
                # LOAD_FAST_BORROW puts a local on the stack without a
                # reference, trusting the compiler's proof that the local is
                # not rebound before the value is used; a pass or a hook
                # (through ``frame.f_locals``) may rebind it in between, so
                # cassette reads code with owned loads.  LOAD_SMALL_INT is
                # read as the LOAD_CONST passes for earlier releases match.
                bytecode[index] = Instr(self.decoded_names[instr.name], instr.arg,
                                        location=instr.location)
        self._call_inlined_builtins(bytecode)
        return bytecode

    def _call_inlined_builtins(self, bytecode):
        # ``any(x for x in xs)`` (also all() and tuple()) compiles to a
        # test of the global against the builtin, an inlined loop when it is
        # the builtin and a call otherwise.  Comparing with a constant of its
        # own that nothing is makes the code always call, as every other
        # release does, so hooks see the same operations.  Only a builtin's
        # test is: a ``match`` compares its subject with ``case True:``'s
        # constant in the same three instructions (3.15 loads True, False
        # and None with LOAD_COMMON_CONSTANT).
        for index in range(1, len(bytecode) - 1):
            instr = bytecode[index]
            if (isinstance(instr, Instr) and instr.name == "LOAD_COMMON_CONSTANT"
                    and instr.arg in self.inlined_builtin_constants
                    and _is_instr(bytecode[index - 1], "COPY", 1)
                    and _is_instr(bytecode[index + 1], "IS_OP", 0)):
                bytecode[index] = Instr("LOAD_CONST", _NEVER_THE_BUILTIN,
                                        location=instr.location)

    def site(self, instr, following):
        name = instr.name
        if name == "BINARY_OP" and int(instr.arg) == _SUBSCRIPT:
            return Site("getitem")
        if name == "LOAD_SPECIAL":
            return self._with_site(instr, following)
        return super().site(instr, following)

    def _with_site(self, instr, following):
        # [manager, manager] COPY'd; LOAD_SPECIAL __exit__ SWAP 2 SWAP 3
        # LOAD_SPECIAL __enter__ CALL 0 leaves [exit, self, value]; the
        # rewrite (enter_with) drops the copy and makes [exit.__call__, exit,
        # value] (see exit_and_value).
        kind = _WITH_KINDS.get(instr.arg)
        if kind is None or len(following) < 4:
            return None
        swap2, swap3, enter, call = following[:4]
        if (swap2.name, swap2.arg, swap3.name, swap3.arg) != ("SWAP", 2, "SWAP", 3):
            return None
        if enter.name != "LOAD_SPECIAL" or enter.arg != _ENTER_OF[instr.arg]:
            return None
        if (call.name, call.arg) != ("CALL", 0):
            return None
        return Site(kind, span=5)

    def enter_with(self, slot, location, entry_slot=None):
        code = [Instr("POP_TOP", location=location)]
        code += self.call_constant(slot, 1, location)
        return code + self.exit_and_value(location)

    def exit_and_value(self, location):
        """``(value, exit)`` -> ``[exit.__call__ unbound, exit, value]``.

        The exit's self slot holds an object, never NULL: after a block
        whose exception ``__exit__`` suppressed, the interpreter's cleanup
        pops it with POP_TOP, which a debug build (Py_DEBUG) asserts is
        never NULL (a release build lets it pass).  The runtimes' exit
        callables have a ``__call__`` method descriptor (a function, or the
        core's slot wrapper), so the method form of LOAD_ATTR pushes it and
        the exit as its self."""
        return [Instr("UNPACK_SEQUENCE", 2, location=location),
                Instr("SWAP", 2, location=location),
                Instr("LOAD_ATTR", (True, "__call__"), location=location),
                Instr("SWAP", 2, location=location),
                Instr("SWAP", 3, location=location)]

    def producer_tags(self, instr):
        if instr.name == "LOAD_SPECIAL":
            # The exit method stays on the stack for the end of the block and
            # is already resolved (the ``with`` slot returns it); __enter__
            # is called at once, as the interpreter's own call.
            if instr.arg in _WITH_KINDS:
                return [StackTag.EXIT, StackTag.OTHER]
            return [StackTag.METHOD, StackTag.OTHER]
        return super().producer_tags(instr)

    def _call_site(self, instr, following):
        if instr.name == "CALL_FUNCTION_EX":
            # [callable, NULL, args, kwargs or NULL]: four values always.
            return Site("call_ex", detail=1)
        return super()._call_site(instr, following)

    def call_ex_has_keywords(self, site, tags):
        return bool(tags) and tags[-1] is not StackTag.NULL

    def call_ex_arguments_depth(self, site):
        return 2

    # -- verification of a pass's output (cassette.verify) ---------------------

    verify_fixed = {
        **Layer313.verify_fixed,
        "LOAD_SMALL_INT": " -> obj",
        "LOAD_COMMON_CONSTANT": " -> obj",
        "LOAD_FAST_BORROW": " -> obj",
        "LOAD_FAST_BORROW_LOAD_FAST_BORROW": " -> obj obj",
        "POP_ITER": "obj -> ",
        "NOT_TAKEN": " -> ",
        "LOAD_SPECIAL": "obj -> obj null|obj",
        "BUILD_TEMPLATE": "tuple tuple -> obj",
        # The exit method and its self (or NULL), lasti, the previous
        # exception, the exception.
        "WITH_EXCEPT_START": "obj null|obj any any exc : -> obj",
        # (Pops the NULL a ``with`` block's exit may have as its self.)
        "POP_TOP": "null|obj -> ",
    }
    verify_local_ops = Layer313.verify_local_ops | {
        "LOAD_FAST_BORROW", "LOAD_FAST_BORROW_LOAD_FAST_BORROW"}
    verify_for_iter_exit = ("END_FOR", "POP_ITER")
    verify_never_jumps = frozenset({"END_ASYNC_FOR"})
    verify_binary_op_max = 26
    verify_nonraising = Layer313.verify_nonraising | {
        "LOAD_SMALL_INT", "LOAD_COMMON_CONSTANT", "LOAD_FAST_BORROW",
        "LOAD_FAST_BORROW_LOAD_FAST_BORROW", "NOT_TAKEN", "POP_ITER"}

    def _verify_version_signature(self, name, arg, jump):
        if name == "CALL_FUNCTION_EX":
            return "obj null obj null|dict -> obj"
        if name == "BUILD_INTERPOLATION":
            return "obj str str -> obj" if arg & 1 else "obj str -> obj"
        if name == "SET_FUNCTION_ATTRIBUTE":
            token = {1: "tuple", 2: "dict", 4: "annotations", 8: "cells", 16: "func"}.get(arg)
            return None if token is None else f"{token} func -> =1"
        return super()._verify_version_signature(name, arg, jump)

    def _verify_version_arg_error(self, name, arg):
        if name == "SET_FUNCTION_ATTRIBUTE":
            return None if arg in (1, 2, 4, 8, 16) else (
                f"SET_FUNCTION_ATTRIBUTE takes 1, 2, 4, 8 or 16, not {arg}")
        if name == "BUILD_INTERPOLATION" and not (type(arg) is int and 0 <= arg < 16
                                                  and not arg & 2):
            return f"BUILD_INTERPOLATION takes conversion << 2 | has_spec, not {arg!r}"
        return super()._verify_version_arg_error(name, arg)


def _is_instr(element, name, arg):
    return isinstance(element, Instr) and element.name == name and element.arg == arg


#: What ``any``/``all``/``tuple``… are compared with in rewritten code: an
#: object of its own, so never the builtin.
_NEVER_THE_BUILTIN = type("NotABuiltin", (), {"__repr__": lambda self: "<not a builtin>"})()

