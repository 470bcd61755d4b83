"""The ``python-floor`` variant: the workload's own code with every call and
operator sent through a small Python function, by rewriting its source with
the standard library's :mod:`ast` (no cassette involved).

What it measures is the floor for *any* Python-level hook: whatever routes
operations to a hook written in Python pays at least one Python call per
operation.  Here that call is the hook itself, which counts the operation
(``COUNT[0] += 1``, as the ``counting-prehook`` variant's prehook does) and
then makes it — one Python frame per operation, no router besides::

    f(a, k=b)   ->  __floor_call__(f, a, k=b)
    a + b       ->  __floor_op__(operator.add, a, b)

    def __floor_call__(f, /, *args, **kwargs):
        COUNT[0] += 1
        return f(*args, **kwargs)

Rewritten, in every module whose code the workload runs — its pyperformance
module, and ``bench/workloads.py`` itself for ``fib``, ``rosenbrock`` and the
wrapper functions its builders define:

* every call ``f(args)`` (keywords, ``*args`` and ``**kwargs`` kept; a method
  call ``obj.m(x)`` becomes ``__floor_call__(obj.m, x)``), except direct calls
  of the builtins that read their caller's frame (``super``, ``locals``,
  ``vars``, ``dir``, ``globals``, ``eval``, ``exec``) and of
  ``sys._getframe``, which stay direct calls (cassette does not hook these
  either; zero-argument ``super()`` needs its ``__class__`` cell);
* every binary operator, unary operator (``-``, ``+``, ``~``, ``not``) and
  comparison, as the function of :mod:`operator` (``x in s`` and
  ``x not in s`` as ``operator.contains(s, x)``, through small helpers that
  keep the evaluation order); a chained comparison ``a < b < c`` becomes
  ``(a < b) and (b < c)``, each hooked, with ``b`` evaluated once (an
  assignment expression to a temporary when ``b`` is not a name or a
  constant; where one is not allowed — a comprehension's iterable, a
  comprehension in a class body — the chain is left alone);
* every subscript load ``a[i]`` (``operator.getitem``; a slice as
  ``slice(i, j)``, built directly);
* every augmented assignment ``t op= v``: ``t = op(t, v)`` with the in-place
  operator (``operator.iadd`` …), the target's object and index evaluated
  once (hoisted into temporaries unless they are names or constants), its
  subscript load hooked too.

Not rewritten: ``is``/``is not`` (cassette does not hook them either),
expressions the compiler folds into constants (``-1``, ``2 ** 0.5``),
annotations, attribute loads and stores, subscript stores and deletions,
iteration (``for``), ``with``, ``and``/``or``/``if``-expressions, and any code
outside the workload's own modules (the standard library, pyperf): cassette
hooks attribute access, ``setitem``/``delitem``, iteration and ``with`` too
and recurses into library code, so its counted events are a superset of the
floor's (compare the two variants' ``events_per_call``).

The rewritten source is compiled into fresh modules (registered in
``sys.modules`` as ``cassette_bench_floor_*``); the original modules are not
touched.  A workload is built by running its own builder from the rewritten
``bench/workloads.py``, whose ``pyperformance_benchmark`` returns the
rewritten pyperformance module: its function, arguments and ``observe`` come
from the rewritten modules (the builder itself runs rewritten, which only
costs at build time).
"""

import ast
import operator
import sys
import types

import workloads

COUNT = [0]
"""Hook calls so far (the variant reports the difference over one call)."""


# --------------------------------------------------------------------------
# What the rewritten code calls


# Each is the hook of its operations: it sees the operation (the callee and
# the arguments a cassette prehook gets), counts it and makes it.

def __floor_call__(f, /, *args, **kwargs):
    COUNT[0] += 1
    return f(*args, **kwargs)


def __floor_op__(f, /, *args):
    COUNT[0] += 1
    return f(*args)


def __floor_in__(x, s, /):
    COUNT[0] += 1
    return x in s


def __floor_not_in__(x, s, /):
    COUNT[0] += 1
    return x not in s


BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.MatMult: operator.matmul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.BitAnd: operator.and_,
}
INPLACE = {
    ast.Add: operator.iadd, ast.Sub: operator.isub, ast.Mult: operator.imul,
    ast.MatMult: operator.imatmul, ast.Div: operator.itruediv,
    ast.FloorDiv: operator.ifloordiv, ast.Mod: operator.imod, ast.Pow: operator.ipow,
    ast.LShift: operator.ilshift, ast.RShift: operator.irshift,
    ast.BitOr: operator.ior, ast.BitXor: operator.ixor, ast.BitAnd: operator.iand,
}
UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
         ast.Not: operator.not_}
COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
           ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}


def global_name(function):
    # Ends with "__": never mangled inside a class body.
    return "__floor_%s__" % function.__name__.rstrip("_")


HELPERS = {
    "__floor_call__": __floor_call__,
    "__floor_op__": __floor_op__,
    "__floor_in__": __floor_in__,
    "__floor_not_in__": __floor_not_in__,
    "__floor_slice__": slice,
}
for _table in (BINARY, INPLACE, UNARY, COMPARE):
    for _function in _table.values():
        HELPERS[global_name(_function)] = _function
HELPERS[global_name(operator.getitem)] = operator.getitem

#: Called directly, never through __floor_call__: they read their caller's frame.
FRAME_SENSITIVE_NAMES = {"super", "locals", "vars", "dir", "globals", "eval", "exec"}
FRAME_SENSITIVE_ATTRIBUTES = {"_getframe", "_getframemodulename"}


# --------------------------------------------------------------------------
# The rewriting


def load(name):
    return ast.Name(id=name, ctx=ast.Load())


def is_constant(node):
    """An expression the compiler folds into a constant (no operation runs)."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return is_constant(node.operand)
    if isinstance(node, ast.BinOp):
        return is_constant(node.left) and is_constant(node.right)
    return False


def is_simple(node):
    """Evaluating it twice is the same as once (no code runs)."""
    return isinstance(node, (ast.Name, ast.Constant))


def again(node):
    """A fresh copy of a simple expression, for a second evaluation."""
    if isinstance(node, ast.Name):
        return ast.copy_location(load(node.id), node)
    return ast.copy_location(ast.Constant(value=node.value), node)


class FloorRewriter(ast.NodeTransformer):

    def __init__(self):
        self.temporaries = 0
        self.scopes = ["module"]          # module, class, function, comprehension
        self.no_named_expr = 0            # inside a comprehension's iterable

    # -- helpers

    def temporary(self):
        self.temporaries += 1
        return "__floor_t%d__" % self.temporaries

    def op(self, function, args, node):
        return ast.copy_location(
            ast.Call(func=load("__floor_op__"),
                     args=[load(global_name(function))] + list(args), keywords=[]),
            node)

    def helper(self, name, args, node):
        return ast.copy_location(ast.Call(func=load(name), args=list(args), keywords=[]),
                                 node)

    def index(self, node):
        """A subscript's index as an expression (a slice as slice(...))."""
        if isinstance(node, ast.Slice):
            parts = [part if part is not None else ast.Constant(value=None)
                     for part in (node.lower, node.upper, node.step)]
            return self.helper("__floor_slice__", parts, node)
        if isinstance(node, ast.Tuple) and any(isinstance(e, ast.Slice) for e in node.elts):
            return ast.copy_location(
                ast.Tuple(elts=[self.index(e) for e in node.elts], ctx=ast.Load()), node)
        return node

    def compare(self, op, left, right, node):
        kind = type(op)
        if kind in COMPARE:
            return self.op(COMPARE[kind], (left, right), node)
        if kind is ast.In:
            return self.helper("__floor_in__", (left, right), node)
        if kind is ast.NotIn:
            return self.helper("__floor_not_in__", (left, right), node)
        # is / is not: not an operation
        return ast.copy_location(ast.Compare(left=left, ops=[op], comparators=[right]), node)

    def named_expr_allowed(self):
        if self.no_named_expr:
            return False
        enclosing = [s for s in self.scopes if s != "comprehension"][-1]
        return not (self.scopes[-1] == "comprehension" and enclosing == "class")

    def visit_list(self, nodes):
        return [self.visit(n) for n in nodes]

    # -- scopes (annotations are left alone)

    def visit_arguments(self, node):
        node.defaults = self.visit_list(node.defaults)
        node.kw_defaults = [None if d is None else self.visit(d) for d in node.kw_defaults]
        return node

    def visit_FunctionDef(self, node):
        node.decorator_list = self.visit_list(node.decorator_list)
        node.args = self.visit(node.args)
        self.scopes.append("function")
        node.body = self.body(node.body)
        self.scopes.pop()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        node.args = self.visit(node.args)
        self.scopes.append("function")
        node.body = self.visit(node.body)
        self.scopes.pop()
        return node

    def visit_ClassDef(self, node):
        node.decorator_list = self.visit_list(node.decorator_list)
        node.bases = self.visit_list(node.bases)
        node.keywords = self.visit_list(node.keywords)
        self.scopes.append("class")
        node.body = self.body(node.body)
        self.scopes.pop()
        return node

    def body(self, statements):
        result = []
        for statement in statements:
            new = self.visit(statement)
            if isinstance(new, list):
                result.extend(new)
            elif new is not None:
                result.append(new)
        return result

    def visit_AnnAssign(self, node):
        node.target = self.visit(node.target)
        if node.value is not None:
            node.value = self.visit(node.value)
        return node

    def visit_comprehension_node(self, node, parts):
        for generator in node.generators:
            self.no_named_expr += 1
            generator.iter = self.visit(generator.iter)
            self.no_named_expr -= 1
        self.scopes.append("comprehension")
        for generator in node.generators:
            generator.target = self.visit(generator.target)
            generator.ifs = self.visit_list(generator.ifs)
        for part in parts:
            setattr(node, part, self.visit(getattr(node, part)))
        self.scopes.pop()
        return node

    def visit_ListComp(self, node):
        return self.visit_comprehension_node(node, ("elt",))

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        return self.visit_comprehension_node(node, ("key", "value"))

    def visit_match_case(self, node):
        # Patterns hold literals (-1, 1+2j) that must stay literals.
        if node.guard is not None:
            node.guard = self.visit(node.guard)
        node.body = self.body(node.body)
        return node

    # -- operations

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id in FRAME_SENSITIVE_NAMES:
            return node
        if isinstance(func, ast.Attribute) and func.attr in FRAME_SENSITIVE_ATTRIBUTES:
            return node
        return ast.copy_location(
            ast.Call(func=load("__floor_call__"), args=[func] + node.args,
                     keywords=node.keywords),
            node)

    def visit_BinOp(self, node):
        if is_constant(node):
            return node
        self.generic_visit(node)
        return self.op(BINARY[type(node.op)], (node.left, node.right), node)

    def visit_UnaryOp(self, node):
        if is_constant(node):
            return node
        self.generic_visit(node)
        return self.op(UNARY[type(node.op)], (node.operand,), node)

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        return self.op(operator.getitem, (node.value, self.index(node.slice)), node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1:
            return self.compare(node.ops[0], node.left, node.comparators[0], node)
        # a < b < c  ->  (a < b) and (b < c), b evaluated once
        if not (all(is_simple(c) for c in node.comparators[:-1])
                or self.named_expr_allowed()):
            return node
        parts = []
        left = node.left
        last = len(node.ops) - 1
        for i, (op, right) in enumerate(zip(node.ops, node.comparators)):
            if i == last or is_simple(right):
                operand, next_left = right, (again(right) if i < last else None)
            else:
                name = self.temporary()
                operand = ast.copy_location(
                    ast.NamedExpr(target=ast.Name(id=name, ctx=ast.Store()), value=right),
                    right)
                next_left = ast.copy_location(load(name), right)
            parts.append(self.compare(op, left, operand, node))
            left = next_left
        return ast.copy_location(ast.BoolOp(op=ast.And(), values=parts), node)

    def visit_AugAssign(self, node):
        # t op= v  ->  t = op(t, v), t's object and index evaluated once.
        node.value = self.visit(node.value)
        target = node.target
        inplace = INPLACE[type(node.op)]
        before = []

        def once(expression):
            if is_simple(expression):
                return expression, lambda: again(expression)
            name = self.temporary()
            before.append(ast.copy_location(
                ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=expression),
                node))
            return load(name), lambda: load(name)

        if isinstance(target, ast.Name):
            current = load(target.id)
        elif isinstance(target, ast.Attribute):
            obj, obj_again = once(self.visit(target.value))
            target = ast.Attribute(value=obj, attr=target.attr, ctx=ast.Store())
            current = ast.Attribute(value=obj_again(), attr=target.attr, ctx=ast.Load())
        elif isinstance(target, ast.Subscript):
            obj, obj_again = once(self.visit(target.value))
            key, key_again = once(self.index(self.visit(target.slice)))
            target = ast.Subscript(value=obj, slice=key, ctx=ast.Store())
            current = self.op(operator.getitem, (obj_again(), key_again()), node)
        else:   # not a valid augmented-assignment target: leave it to the compiler
            return node
        assign = ast.copy_location(
            ast.Assign(targets=[ast.copy_location(target, node.target)],
                       value=self.op(inplace, (current, node.value), node)),
            node)
        return before + [assign]


def rewrite(source, filename):
    """The code object of ``source`` rewritten (see the module docstring)."""
    tree = ast.parse(source, filename)
    tree = FloorRewriter().visit(tree)
    ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec", dont_inherit=True)


def rewritten_module(name, filename, extra=None):
    """A fresh module ``name`` running the rewritten source of ``filename``
    (cached in ``sys.modules``)."""
    if name in sys.modules:
        return sys.modules[name]
    with open(filename, encoding="utf-8") as f:
        code = rewrite(f.read(), filename)
    module = types.ModuleType(name)
    module.__file__ = filename
    vars(module).update(HELPERS)
    if extra:
        vars(module).update(extra)
    sys.modules[name] = module
    try:
        exec(code, vars(module))
    except BaseException:
        del sys.modules[name]
        raise
    return module


def pyperformance_benchmark(name):
    """The rewritten copy of ``workloads.pyperformance_benchmark(name)``."""
    original = workloads.pyperformance_benchmark(name)
    return rewritten_module("cassette_bench_floor_bm_" + name, original.__file__)


def rewritten_workloads():
    """bench/workloads.py rewritten, its builders taking rewritten
    pyperformance modules."""
    module = rewritten_module("cassette_bench_floor_workloads", workloads.__file__)
    module.pyperformance_benchmark = pyperformance_benchmark
    return module


def floor_workload(name):
    """Workload ``name`` built by its own builder from the rewritten modules:
    ``func``, ``args`` and ``observe`` all belong to the rewritten code.
    Calling ``func`` adds to ``COUNT[0]`` once per hooked operation."""
    return rewritten_workloads().BUILDERS[name]()
