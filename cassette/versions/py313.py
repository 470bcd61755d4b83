"""CPython 3.13: the callable sits below its NULL/self slot, keyword calls are
CALL_KW, truth tests go through TO_BOOL and comparisons may cast to bool."""

from bytecode import Instr
from bytecode.instr import Intrinsic1Op

from .common import Layer, Site, Tag, swap_below
from .._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py

_CAST_SUFFIX = "_CAST"
_CO_OPTIMIZED = 0x0001  # inspect.CO_OPTIMIZED


class Layer313(Layer):
    version = (3, 13)
    null_below_callable = False

    def call_constant(self, const, nargs, location):
        code = [Instr("LOAD_CONST", const, location=location)]
        code += swap_below(nargs, location)
        code.append(Instr("PUSH_NULL", location=location))
        code += swap_below(nargs, location)
        code += self.call_opcodes(nargs, location)
        return code

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
        if len(tags) < callable_depth or tags[-callable_depth] is not Tag.OTHER:
            return None
        return callable_depth

    def for_exhausted(self, target, location):
        # The loop's exit label is END_FOR + POP_TOP: together they pop the
        # iterator and the value.
        return [Instr("JUMP_FORWARD", target, location=location)]
