"""CPython 3.12: CALL without PRECALL, method loads as flagged LOAD_ATTR,
LOAD_SUPER_ATTR, slices as their own opcodes, unary plus as an intrinsic."""

from bytecode import Instr
from bytecode.instr import Intrinsic1Op

from .common import Layer, Site, StackTag, below_null_resolution
from .._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py


class Layer312(Layer):
    version = (3, 12)
    null_below_callable = True
    sites_read_following = frozenset({"KW_NAMES"})

    def producer_tags(self, instr):
        if instr.name == "LOAD_ATTR" and instr.arg[0]:
            return [StackTag.METHOD, StackTag.OTHER]
        if instr.name == "LOAD_SUPER_ATTR" and instr.arg[0]:
            return [StackTag.METHOD, StackTag.OTHER]
        return super().producer_tags(instr)

    def _load_attr_site(self, instr):
        is_method, name = instr.arg
        return Site("method" if is_method else "getattr", detail=name)

    def is_list_to_tuple(self, instr):
        return (instr.name == "CALL_INTRINSIC_1"
                and instr.arg == Intrinsic1Op.INTRINSIC_LIST_TO_TUPLE)

    def _call_site(self, instr, following):
        name = instr.name
        if name == "KW_NAMES":
            return Site("call", span=2, detail=following[0].arg)
        if name == "CALL":
            return Site("call", detail=instr.arg)
        if name == "CALL_FUNCTION_EX":
            return Site("call_ex", detail=instr.arg & 1)
        if name == "CALL_INTRINSIC_1" and instr.arg == Intrinsic1Op.INTRINSIC_UNARY_POSITIVE:
            return Site("pos")
        if name == "BINARY_SLICE":
            return Site("getslice")
        if name == "STORE_SLICE":
            return Site("setslice")
        if name == "LOAD_SUPER_ATTR" and instr.arg[0]:
            return Site("super_method", detail=instr.arg)
        return None

    def super_attribute_load(self, arg, location):
        """The non-method form of a method-flavoured LOAD_SUPER_ATTR."""
        return Instr("LOAD_SUPER_ATTR", (False,) + tuple(arg[1:]), location=location)

    def call_layout(self, site):
        if site.kind == "call_ex":
            return 2 + site.detail, 3 + site.detail
        return site.detail + 1, site.detail + 2

    def resolution_depth(self, site, tags):
        return below_null_resolution(self.call_layout(site), tags)

    def for_exhausted(self, target, location):
        # The loop's exit label is its END_FOR, which pops iterator and value.
        return [Instr("JUMP_FORWARD", target, location=location)]

    # -- verification of a pass's output (cassette.verify) ---------------------

    def _verify_version_signature(self, name, arg, jump):
        if name == "FOR_ITER":
            # Exhausted, FOR_ITER pops the iterator and skips the END_FOR at
            # its target; a generator's return runs that END_FOR instead.
            return "iter : -> obj"
        if name == "SEND":
            return "obj : obj -> obj"
        if name == "CALL":
            # [NULL, callable] or [method, self], then the arguments.
            return " ".join(["null|callee", "obj"] + ["obj"] * arg) + " -> obj"
        if name == "CALL_FUNCTION_EX":
            # A NULL below the callable; kwargs must be a dict (DICT_MERGE
            # makes one).
            return "null obj obj dict -> obj" if arg & 1 else "null obj obj -> obj"
        if name in ("MAKE_FUNCTION", "FORMAT_VALUE"):
            return self._verify_flags_signature(name, arg)
        if name == "LOAD_ATTR":
            return "obj -> null|obj obj" if arg[0] else "obj -> obj"
        if name == "LOAD_SUPER_ATTR":
            return "obj obj obj -> null|obj obj" if arg[0] else "obj obj obj -> obj"
        return None

    def _verify_version_arg_error(self, name, arg):
        return self._verify_flags_arg_error(name, arg)

