"""CPython 3.11: PRECALL/CALL pairs, LOAD_METHOD, NULL below the callable."""

from bytecode import Instr

from .common import Layer, Site, Tag, _below_null_resolution, swap_below
from .._builtins import BUILTINS as __builtins__  # see cassette/_builtins.py


_COMPREHENSION_NAMES = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>"})


class Layer311(Layer):
    version = (3, 11)
    null_below_callable = True

    def is_inlined_scope(self, code):
        # PEP 709 inlines these from 3.12 on.
        return code.co_name in _COMPREHENSION_NAMES

    def call_constant(self, const, nargs, location):
        code = [Instr("PUSH_NULL", location=location)]
        code += swap_below(nargs, location)
        code.append(Instr("LOAD_CONST", const, location=location))
        code += swap_below(nargs, location)
        code += self.call_opcodes(nargs, location)
        return code

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
            return [Tag.METHOD, Tag.OTHER]
        return super().producer_tags(instr)

    def is_method_load(self, instr):
        return instr.name == "LOAD_METHOD"

    def _load_attr_site(self, instr):
        return Site("getattr", detail=instr.arg)

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
        return _below_null_resolution(self.call_layout(site), tags)

    def for_exhausted(self, target, location):
        return [Instr("POP_TOP", location=location),
                Instr("POP_TOP", location=location),
                Instr("JUMP_FORWARD", target, location=location)]
