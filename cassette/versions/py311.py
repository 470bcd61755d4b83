"""CPython 3.11: PRECALL/CALL pairs, LOAD_METHOD, NULL below the callable."""

from bytecode import Instr

from .common import Layer, Site, StackTag, below_null_resolution
from .._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py


_COMPREHENSION_NAMES = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})


class Layer311(Layer):
    version = (3, 11)
    null_below_callable = True
    sites_read_following = frozenset({"KW_NAMES"})

    def is_inlined_scope(self, code):
        # PEP 709 inlines these from 3.12 on.
        return code.co_name in _COMPREHENSION_NAMES

    def call_opcodes(self, nargs, location):
        return [Instr("PRECALL", nargs, location=location),
                Instr("CALL", nargs, location=location)]

    def jump_forward_if_false(self, label, location):
        return Instr("POP_JUMP_FORWARD_IF_FALSE", label, location=location)

    def inverted_forward_jump(self, instr, label):
        name = instr.name
        if not name.startswith(("POP_JUMP_FORWARD_IF_", "POP_JUMP_BACKWARD_IF_")):
            return None
        condition = name.rsplit("_IF_", 1)[1]
        inverse = {"TRUE": "FALSE", "FALSE": "TRUE", "NONE": "NOT_NONE",
                   "NOT_NONE": "NONE"}[condition]
        return Instr("POP_JUMP_FORWARD_IF_" + inverse, label, location=instr.location)

    def binds_to_next(self, instr):
        return instr.name in ("KW_NAMES", "PRECALL")

    def producer_tags(self, instr):
        if instr.name == "LOAD_METHOD":
            return [StackTag.METHOD, StackTag.OTHER]
        return super().producer_tags(instr)

    def is_method_load(self, instr):
        return instr.name == "LOAD_METHOD"

    def _load_attr_site(self, instr):
        return Site("getattr", detail=instr.arg)

    def is_list_to_tuple(self, instr):
        return instr.name == "LIST_TO_TUPLE"

    def _call_site(self, instr, following):
        name = instr.name
        if name == "LOAD_METHOD":
            return Site("method", detail=instr.arg)
        if name == "UNARY_POSITIVE":
            return Site("pos")
        if name == "KW_NAMES":
            return Site("call", span=3, detail=following[0].arg)
        if name == "PRECALL":
            return Site("call", span=2, detail=instr.arg)
        if name == "CALL_FUNCTION_EX":
            return Site("call_ex", detail=instr.arg & 1)
        return None

    def call_layout(self, site):
        if site.kind == "call_ex":
            return 2 + site.detail, 3 + site.detail
        return site.detail + 1, site.detail + 2

    def resolution_depth(self, site, tags):
        return below_null_resolution(self.call_layout(site), tags)

    def for_exhausted(self, target, location):
        return [Instr("POP_TOP", location=location),
                Instr("POP_TOP", location=location),
                Instr("JUMP_FORWARD", target, location=location)]

    # -- verification of a pass's output (cassette.verify) ---------------------

    verify_fixed = {
        **{name: sig for name, sig in Layer.verify_fixed.items()
           if name not in ("POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE",
                           "POP_JUMP_IF_NOT_NONE", "RETURN_CONST", "END_FOR", "END_SEND",
                           "BINARY_SLICE", "STORE_SLICE", "CLEANUP_THROW", "LOAD_LOCALS",
                           "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_FROM_DICT_OR_DEREF",
                           "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR")},
        "POP_JUMP_FORWARD_IF_FALSE": "obj -> ",
        "POP_JUMP_FORWARD_IF_TRUE": "obj -> ",
        "POP_JUMP_FORWARD_IF_NONE": "obj -> ",
        "POP_JUMP_FORWARD_IF_NOT_NONE": "obj -> ",
        "POP_JUMP_BACKWARD_IF_FALSE": "obj -> ",
        "POP_JUMP_BACKWARD_IF_TRUE": "obj -> ",
        "POP_JUMP_BACKWARD_IF_NONE": "obj -> ",
        "POP_JUMP_BACKWARD_IF_NOT_NONE": "obj -> ",
        "UNARY_POSITIVE": "obj -> obj",
        "LIST_TO_TUPLE": "list -> tuple",
        "PREP_RERAISE_STAR": "exc list_exc -> exc|none",   # reads the list unchecked
        "ASYNC_GEN_WRAP": "obj -> obj",
        "PRINT_EXPR": "obj -> ",
        "IMPORT_STAR": "obj -> ",
        "LOAD_CLASSDEREF": " -> obj",
        "LOAD_ATTR": "obj -> obj",
        "LOAD_METHOD": "obj -> null|obj obj",
    }
    verify_none_jumps = {
        "POP_JUMP_FORWARD_IF_NONE": True, "POP_JUMP_BACKWARD_IF_NONE": True,
        "POP_JUMP_FORWARD_IF_NOT_NONE": False, "POP_JUMP_BACKWARD_IF_NOT_NONE": False,
    }
    verify_forward_jumps = frozenset({
        "JUMP_FORWARD", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_TRUE",
        "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE",
        "JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP", "FOR_ITER", "SEND",
    })
    verify_backward_jumps = frozenset({
        "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "POP_JUMP_BACKWARD_IF_FALSE",
        "POP_JUMP_BACKWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE",
    })
    verify_load_fast_checks = True
    # An exhausted FOR_ITER pops the iterator and jumps: nothing is skipped.
    verify_for_iter_exit = ()
    verify_kw_names_next = "PRECALL"
    # PRECALL and CALL act as one instruction: a specialized PRECALL makes
    # the call itself and skips the CALL after it.
    verify_call_prefix = "PRECALL"

    def _verify_version_signature(self, name, arg, jump):
        if name == "FOR_ITER":
            return "iter -> " if jump else "iter : -> obj"
        if name == "SEND":
            # Returning, the sub-iterator is popped along with the value sent.
            return "obj obj -> obj" if jump else "obj : obj -> obj"
        if name in ("JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP"):
            return "obj : -> " if jump else "obj -> "
        if name in ("PRECALL", "CALL"):
            # [NULL, callable] or [method, self], then the arguments.
            args = " ".join(["obj"] * arg)
            if name == "PRECALL":
                return f"null|callee obj {args} : -> "
            return f"null|callee obj {args} -> obj"
        if name == "CALL_FUNCTION_EX":
            # A NULL below the callable; kwargs that are not a dict are
            # converted.
            return "null obj obj obj -> obj" if arg & 1 else "null obj obj -> obj"
        if name in ("MAKE_FUNCTION", "FORMAT_VALUE"):
            return self._verify_flags_signature(name, arg)
        return None

    def _verify_version_arg_error(self, name, arg):
        return self._verify_flags_arg_error(name, arg)

