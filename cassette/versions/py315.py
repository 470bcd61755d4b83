"""CPython 3.15: as 3.14, but ``GET_ITER`` leaves two values — the iterator
and NULL, or a list or tuple and the index of its next item (a *virtual*
iterator, never an object) — which ``FOR_ITER`` reads and ``POP_ITER``
pops; ``GET_ITER`` with a nonzero argument begins a ``yield from``;
``None``, ``True``, ``False``, ``''`` and ``-1`` load with
``LOAD_COMMON_CONSTANT``; a generator expression makes its own iterator;
and the call right after a ``LOAD_SPECIAL`` (a ``with``'s ``__enter__``)
takes no interrupt, so ``__exit__`` runs for one that arrives meanwhile."""

import dis
import types

from bytecode import Instr
from bytecode.instr import SpecialMethod

from .common import GIVEN_ITERATOR, Site
from .py314 import Layer314
from .._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

#: LOAD_COMMON_CONSTANT's arguments that load a value a LOAD_CONST can hold.
_COMMON_VALUES = {7: None, 8: "", 9: True, 10: False, 11: -1}


class Layer315(Layer314):
    version = (3, 15)
    sites_read_following = Layer314.sites_read_following | {"GET_ITER"}
    iterator_depth = 2
    # ... and list and set.
    inlined_builtin_constants = frozenset({2, 3, 4, 5, 6})
    generator_expressions_take_iterable = True
    # pycore_backoff.h: a 13-bit value over a 3-bit backoff; 7 is the
    # backoff that never reaches a value of zero.
    never_triggering_counter = 7
    # LOAD_ATTR_PROPERTY deopts once the getter's version is retired (as
    # routing retires it) and never specializes on a retired one: nothing
    # needs pinning.
    property_loads_skip_routing = False
    attribute_load_pin = None

    def bytecode_of(self, code):
        bytecode = super().bytecode_of(code)
        # Passes written for earlier releases match LOAD_CONST None.
        for index, instr in enumerate(bytecode):
            if (isinstance(instr, Instr) and instr.name == "LOAD_COMMON_CONSTANT"
                    and instr.arg in _COMMON_VALUES):
                bytecode[index] = Instr("LOAD_CONST", _COMMON_VALUES[instr.arg],
                                        location=instr.location)
        return bytecode

    def enter_with(self, slot, location, entry_slot=None):
        # 3.15 takes no interrupt after a call whose code unit before is a
        # LOAD_SPECIAL (gh-148874): one that arrives during __enter__ is
        # taken in the block, which calls __exit__.  The slot's entry is
        # called that way too: [manager] -> [entry] -> LOAD_SPECIAL
        # __enter__ -> CALL 0 -> (value, exit).
        if entry_slot is None:
            return super().enter_with(slot, location)
        code = [Instr("POP_TOP", location=location)]
        code += self.call_constant(entry_slot, 1, location)
        code += [Instr("LOAD_SPECIAL", SpecialMethod.ENTER, location=location),
                 Instr("CALL", 0, location=location)]
        return code + self.exit_and_value(location)

    def is_generator_expression(self, code):
        # Its prologue makes the iterator: GET_ITER 0 for a ``for``,
        # GET_AITER for an ``async for``, before RETURN_GENERATOR.  (An
        # inner ``async for`` makes it an asynchronous generator all the same.)
        if not (type(code) is types.CodeType and code.co_name == "<genexpr>"
                and code.co_varnames[:1] == (".0",)):
            return False
        before = None
        for instr in dis.get_instructions(code):
            if instr.opname == "RETURN_GENERATOR":
                return before is not None and before.opname == "GET_ITER" and before.arg == 0
            before = instr
        return False

    def iterator_made(self, location):
        # An iterator made by the slot is a real one: its index slot is NULL.
        return [Instr("PUSH_NULL", location=location)]

    def site(self, instr, following):
        if instr.name == "GET_ITER":
            if instr.arg != 0:
                return None     # yield from's: 3.14's GET_YIELD_FROM_ITER
            if following and following[0].name == "RETURN_GENERATOR":
                # A generator expression making its iterator: where its
                # caller made it already (generator_expressions_take_iterable),
                # the site only adds the NULL (iter() again would fail for
                # an iterator without __iter__).
                return Site("iter", detail=GIVEN_ITERATOR)
        return super().site(instr, following)

    # -- verification of a pass's output (cassette.verify) ---------------------

    verify_fixed = {
        **Layer314.verify_fixed,
        # The iterator and its index or NULL.
        "POP_ITER": "obj null -> ",
        # With monitoring on, END_FOR reads the iterator below its index.
        "END_FOR": "obj null : obj -> ",
        # The receiver, its NULL, the value.
        "END_SEND": "obj null obj -> =2",
        "CLEANUP_THROW": "obj null obj exc -> none null obj",
    }
    verify_resume_max = 15
    verify_ranges_outlast_their_stack = True
    # An asynchronous generator expression's range keeps its iterator, which
    # END_ASYNC_FOR pops only when it does not raise.
    verify_raise_keeping_inputs = frozenset({"END_ASYNC_FOR"})
    verify_receiver_depth = 2       # below the NULL SEND keeps

    def resume_starts_code(self, arg):
        # RESUME_OPARG_LOCATION_MASK is 7; a generator expression's
        # RESUME 4 (RESUME_AT_GEN_EXPR_START) precedes its frame setup.
        return arg & 7 == 0

    def verify_prologue_leaves(self, prologue):
        # A generator expression makes its iterator before it starts.
        if "GET_ITER" in prologue:
            return ("iter", "null")
        return ("obj",) if "GET_AITER" in prologue else ()

    def _verify_version_signature(self, name, arg, jump):
        if name == "LOAD_COMMON_CONSTANT" and arg in _COMMON_VALUES:
            # (arg: the bytecode package's CommonConstant, an int enum.)
            return " -> bool" if type(_COMMON_VALUES[arg]) is bool else " -> obj"
        if name == "GET_ITER":
            # The index slot is NULL or a virtual iterator's index: never a
            # value.
            return "obj -> iter null" if arg == 0 else "obj -> obj null"
        if name == "FOR_ITER":
            return "iter null : -> obj"
        if name == "SEND":
            return "obj null : obj -> obj"
        return super()._verify_version_signature(name, arg, jump)
