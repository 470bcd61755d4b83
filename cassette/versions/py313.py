"""CPython 3.13: the callable sits below its NULL/self slot, keyword calls are
CALL_KW, truth tests go through TO_BOOL and comparisons may cast to bool."""

from bytecode import Instr
from bytecode.instr import Intrinsic1Op

from .common import Layer, Site, StackTag
from .._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

_CAST_SUFFIX = "_CAST"
_CO_OPTIMIZED = 0x0001  # inspect.CO_OPTIMIZED


class Layer313(Layer):
    version = (3, 13)
    null_below_callable = False
    sites_read_following = frozenset({"TO_BOOL"})

    def to_bool(self, location):
        return [Instr("TO_BOOL", location=location)]

    def default_locals(self, frame):
        # PEP 667: in an optimized scope locals() is a fresh snapshot, while
        # frame.f_locals is a write-through proxy.
        if frame.f_code.co_flags & _CO_OPTIMIZED:
            return dict(frame.f_locals)
        return frame.f_locals

    @staticmethod
    def exec_arguments(source, /, globals=None, locals=None, *, closure=None):
        # 3.13 accepts globals and locals as keywords.
        return source, globals, locals, closure

    @staticmethod
    def eval_arguments(source, /, globals=None, locals=None):
        return source, globals, locals, None

    def _compare_site(self, instr):
        name = instr.arg.name
        if name.endswith(_CAST_SUFFIX):
            return Site(name[: -len(_CAST_SUFFIX)].lower(), detail="cast")
        return Site(name.lower())

    def _load_attr_site(self, instr):
        is_method, name = instr.arg
        if is_method:
            # [callable, self-or-NULL]: the call that follows resolves the
            # callable slot, so the load itself stays as it is.
            return None
        return Site("getattr", detail=name)

    def is_list_to_tuple(self, instr):
        return (instr.name == "CALL_INTRINSIC_1"
                and instr.arg == Intrinsic1Op.INTRINSIC_LIST_TO_TUPLE)

    def _call_site(self, instr, following):
        name = instr.name
        if name == "CALL":
            return Site("call", detail=instr.arg)
        if name == "CALL_KW":
            return Site("call_kw", detail=instr.arg)
        if name == "CALL_FUNCTION_EX":
            return Site("call_ex", detail=instr.arg & 1)
        if name == "CALL_INTRINSIC_1" and instr.arg == Intrinsic1Op.INTRINSIC_UNARY_POSITIVE:
            return Site("pos")
        if name == "BINARY_SLICE":
            return Site("getslice")
        if name == "STORE_SLICE":
            return Site("setslice")
        if name == "TO_BOOL" and following and following[0].name == "UNARY_NOT":
            return Site("not", span=2)
        return None

    def call_layout(self, site):
        if site.kind == "call_ex":
            return 3 + site.detail, 2 + site.detail
        if site.kind == "call_kw":
            return site.detail + 3, site.detail + 2
        return site.detail + 2, site.detail + 1

    def resolution_depth(self, site, tags):
        callable_depth, _partner_depth = self.call_layout(site)
        if len(tags) < callable_depth or tags[-callable_depth] is not StackTag.OTHER:
            return None
        return callable_depth

    def for_exhausted(self, target, location):
        # The loop's exit label is END_FOR + POP_TOP: together they pop the
        # iterator and the value.
        return [Instr("JUMP_FORWARD", target, location=location)]

    # -- verification of a pass's output (cassette.verify) ---------------------

    verify_fixed = {
        **Layer.verify_fixed,
        # With monitoring on, END_FOR reads the iterator below its value.
        "END_FOR": "obj : obj -> ",
        # Truth tests trust their operand to be a bool (the interpreter
        # only asserts it: a debug build aborts, a release build takes any
        # other object for neither True nor False).
        "TO_BOOL": "obj -> bool",
        "UNARY_NOT": "bool -> bool",
        "POP_JUMP_IF_FALSE": "bool -> ",
        "POP_JUMP_IF_TRUE": "bool -> ",
        "FORMAT_SIMPLE": "obj -> str",
        "FORMAT_WITH_SPEC": "obj obj -> str",
        "CONVERT_VALUE": "obj -> obj",
        "MAKE_FUNCTION": "code -> func",
        # LOAD_FAST_LOAD_FAST reads both locals unchecked.
        "LOAD_FAST_LOAD_FAST": " -> obj obj",
        "STORE_FAST_LOAD_FAST": "null|obj -> obj",
        "STORE_FAST_STORE_FAST": "null|obj null|obj -> ",
    }
    # Exhausted, FOR_ITER pops the iterator and skips END_FOR and POP_TOP at
    # its target; a generator's return runs them instead.
    verify_for_iter_exit = ("END_FOR", "POP_TOP")
    verify_kw_names_next = None
    # COMPARE_OP's operator, with 16 for the forms that cast to bool.
    verify_compare_ops = frozenset(range(6)) | frozenset(range(16, 22))
    verify_resume_max = 7
    _verify_dict_merge_gap = 2

    def resume_starts_code(self, arg):
        return arg & 3 == 0     # RESUME_OPARG_LOCATION_MASK

    def verify_yield_reads_receiver(self, instr, next_instr):
        return instr.arg == 1   # suspends the generator as FRAME_SUSPENDED_YIELD_FROM

    def _verify_version_signature(self, name, arg, jump):
        if name == "COMPARE_OP":
            return "obj obj -> bool" if int(arg) & 16 else "obj obj -> compared"
        if name == "FOR_ITER":
            return "iter : -> obj"
        if name == "SEND":
            return "obj : obj -> obj"
        if name in ("CALL", "CALL_KW"):
            # The callable, then self or NULL, then the arguments (and the
            # tuple of keyword names CALL_KW trusts).
            sig = " ".join(["callee", "null|obj"] + ["obj"] * arg)
            return sig + f" kwnames:{arg} -> obj" if name == "CALL_KW" else sig + " -> obj"
        if name == "CALL_FUNCTION_EX":
            # A NULL above the callable; kwargs must be a dict.
            return "obj null obj dict -> obj" if arg & 1 else "obj null obj -> obj"
        if name == "SET_FUNCTION_ATTRIBUTE":
            token = {1: "tuple", 2: "dict", 4: "annotations", 8: "cells"}.get(arg)
            return None if token is None else f"{token} func -> =1"
        if name == "LOAD_ATTR":
            return "obj -> obj null|obj" if arg[0] else "obj -> obj"
        if name == "LOAD_SUPER_ATTR":
            return "obj obj obj -> obj null|obj" if arg[0] else "obj obj obj -> obj"
        return None

    def _verify_version_arg_error(self, name, arg):
        if name == "CONVERT_VALUE" and not 1 <= int(arg) <= 3:
            return f"CONVERT_VALUE conversion {int(arg)} is not one of 1..3"
        if name == "SET_FUNCTION_ATTRIBUTE" and arg not in (1, 2, 4, 8):
            return f"SET_FUNCTION_ATTRIBUTE takes 1, 2, 4 or 8, not {arg}"
        if name == "YIELD_VALUE" and arg not in (0, 1):
            return f"YIELD_VALUE takes 0 or 1, not {arg}"
        return None

    verify_fast_reads_cells = True
