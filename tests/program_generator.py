"""Random Python programs for differential testing (``tests/test_differential.py``).

Not a test module.  :func:`generate` makes, from a seed, the source text of a
valid, terminating and deterministic program: a prelude of shared classes
and helpers, then *parts* ``part_0(out)``, ``part_1(out)`` … each of which
exercises a feature (``match`` in all its forms, comprehensions, generators,
``with``, ``try``/``except*``, class bodies, closures, f- and t-strings,
unpacking, loops…) mixed with randomly generated statements, appending what
it observes to ``out``.  The program's ``entry()`` runs every part, records
an exception that escapes one as ``('raised', part, type name, message)``
and returns ``out``: a list of plain values (numbers, strings, tuples,
lists, dicts, None), whose ``repr`` is what a run is compared by.

What keeps a program deterministic: every class the program makes defines
``__repr__`` (no addresses reach ``out``), sets are sorted before they are
recorded, integers are reduced modulo a prime where loops could make them
grow, loops are over small ranges and every ``while`` counts down.  A program
runs in well under a second.

:meth:`Program.source` can leave parts out, which is how a failing program
is reduced (``test_differential.minimal_failing_source``).
"""

import random
import sys

#: The prelude every program starts with: classes the ``match`` patterns and
#: the class parts use, a describer of exceptions and a context manager.
PRELUDE = '''\
import contextlib
import functools


class Point:
    __match_args__ = ("x", "y")

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __repr__(self):
        return f"Point({self.x!r}, {self.y!r})"

    def __eq__(self, other):
        return type(other) is Point and (self.x, self.y) == (other.x, other.y)

    __hash__ = None


class Point3(Point):
    __match_args__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        super().__init__(x, y)
        self.z = z

    def __repr__(self):
        return f"Point3({self.x!r}, {self.y!r}, {self.z!r})"


class Box:
    def __init__(self, content, label="box"):
        self.content = content
        self.label = label

    def __repr__(self):
        return f"Box({self.content!r}, {self.label!r})"


class Color:
    RED = 1
    GREEN = 2
    BLUE = "blue"


G = 0
GLIST = []


def describe(error):
    """An exception as plain values: type name, message, cause, children."""
    children = getattr(error, "exceptions", None)
    described = [type(error).__name__, str(error)]
    if error.__cause__ is not None:
        described.append(("cause", type(error.__cause__).__name__))
    if children is not None:
        described.append([describe(child) for child in children])
    return tuple(described)


class Recorder:
    """A context manager that records its events; it suppresses an
    exception whose type name is in ``suppress``."""

    def __init__(self, out, name, suppress=(), fail_enter=False):
        self.out = out
        self.name = name
        self.suppress = suppress
        self.fail_enter = fail_enter

    def __repr__(self):
        return f"Recorder({self.name!r})"

    def __enter__(self):
        self.out.append(("enter", self.name))
        if self.fail_enter:
            raise RuntimeError("enter " + self.name)
        return self.name.upper()

    def __exit__(self, kind, value, traceback):
        self.out.append(("exit", self.name, None if kind is None else kind.__name__))
        return kind is not None and kind.__name__ in self.suppress


@contextlib.contextmanager
def managed(out, name):
    out.append(("open", name))
    try:
        yield name * 2
    except KeyError as error:
        out.append(("handled", name, str(error)))
    finally:
        out.append(("close", name))


def helper(a, b=2, *rest, scale=1, **named):
    return (a + b + sum(rest)) * scale + len(named)


def fail(kind, message):
    raise kind(message)
'''

EPILOGUE = '''

def entry():
    out = []
    for part in PARTS:
        try:
            part(out)
        except Exception as error:
            out.append(("raised", part.__name__) + describe(error))
    return out
'''

#: A prime the integers of loops are reduced by.
MODULUS = 10007

#: Debug (Py_DEBUG) builds of CPython 3.14 and 3.15 abort, with no cassette
#: involved, on a program whose ``except*`` handler raises while the rest of
#: the group propagates to an outer ``except*`` (an assertion in
#: ``_PyExc_PrepReraiseStar``: the original group has no traceback); such
#: handlers are not generated there.
RAISE_IN_EXCEPT_STAR_ABORTS = hasattr(sys, "gettotalrefcount") and sys.version_info >= (3, 14)

EXCEPTIONS = ["ValueError", "TypeError", "KeyError", "IndexError", "RuntimeError",
              "ZeroDivisionError", "LookupError", "ArithmeticError"]


class Program:
    """A generated program: its seed, prelude and parts (each the source of
    one ``def part_N(out):``)."""

    def __init__(self, seed, parts):
        self.seed = seed
        self.parts = parts

    def source(self, keep=None):
        """The program's source, with only the parts whose indices are in
        ``keep`` (all by default)."""
        indices = range(len(self.parts)) if keep is None else sorted(keep)
        chosen = [self.parts[i] for i in indices]
        names = ", ".join(f"part_{i}" for i in indices)
        return (PRELUDE + "\n\n" + "\n\n".join(chosen)
                + f"\n\nPARTS = [{names}{',' if len(chosen) == 1 else ''}]\n" + EPILOGUE)


class Lines:
    """Source lines being written, with the current indentation."""

    def __init__(self):
        self.lines = []
        self.depth = 0

    def add(self, text):
        for line in text.split("\n"):
            self.lines.append("    " * self.depth + line)

    def indent(self):
        return _Indent(self)

    def text(self):
        return "\n".join(self.lines)


class _Indent:
    def __init__(self, lines):
        self.lines = lines

    def __enter__(self):
        self.lines.depth += 1

    def __exit__(self, *exc):
        self.lines.depth -= 1


class Generator:
    """Writes the parts of one program from ``rng``."""

    def __init__(self, rng, version=sys.version_info[:2]):
        self.rng = rng
        self.version = version
        self.counter = 0
        self.loop_depth = 0
        self.counting = set()
        #: Subjects some literal pattern written since the last match part
        #: matches.
        self.examples = []

    # -- names and small values ------------------------------------------

    def fresh(self, prefix="v"):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def chance(self, p):
        return self.rng.random() < p

    def choice(self, items):
        return self.rng.choice(items)

    def small(self):
        return self.rng.randint(-3, 12)

    # -- expressions ------------------------------------------------------

    def int_expr(self, scope, depth=2):
        """An expression whose value is an int (or that raises
        deterministically: ZeroDivisionError, IndexError…)."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.3:
            if scope and rng.random() < 0.6:
                return rng.choice(scope)
            return str(self.small())
        sub = lambda: self.int_expr(scope, depth - 1)
        form = rng.randrange(16)
        if form < 4:
            op = rng.choice(["+", "-", "*", "//", "%", "&", "|", "^", "+", "-"])
            return f"({sub()} {op} {sub()})"
        if form == 4:
            return f"({sub()} << ({sub()} & 3))"
        if form == 5:
            return f"({sub()} if {self.bool_expr(scope, depth - 1)} else {sub()})"
        if form == 6:
            return f"-{sub()}" if rng.random() < 0.5 else f"~{sub()}"
        if form == 7:
            var = self.fresh("c")
            cond = self.choice(["", f" if {var} % 2", f" if {var} > {self.small()}"])
            return f"sum({var} * {sub()} for {var} in range({rng.randint(0, 5)}){cond})"
        if form == 8:
            return f"len([{', '.join(sub() for _ in range(rng.randint(0, 3)))}])"
        if form == 9:
            return f"helper({sub()}, {sub()}, scale={rng.randint(1, 3)})"
        if form == 10:
            return f"[{sub()}, {sub()}, {sub()}][{rng.randint(-4, 3)}]"
        if form == 11:
            fn = rng.choice(["max", "min", "abs"])
            return f"{fn}({sub()})" if fn == "abs" else f"{fn}({sub()}, {sub()})"
        if form == 12:
            return f"Point({sub()}, {sub()}).{rng.choice('xy')}"
        if form == 13:
            var = self.fresh("w")
            return f"({var} := {sub()})"
        if form == 14:
            return f"int({self.bool_expr(scope, depth - 1)})"
        return f"{{'a': {sub()}, 'b': {sub()}}}.get({rng.choice(['a', 'b', 'c'])!r}, {sub()})"

    def bool_expr(self, scope, depth=2):
        rng = self.rng
        sub = lambda: self.int_expr(scope, max(depth - 1, 0))
        form = rng.randrange(7)
        if form == 0:
            ops = [rng.choice(["<", "<=", ">", ">=", "==", "!="]) for _ in range(rng.randint(1, 3))]
            text = sub()
            for op in ops:
                text += f" {op} {sub()}"
            return f"({text})"
        if form == 1 and depth > 0:
            return f"({self.bool_expr(scope, depth - 1)} {rng.choice(['and', 'or'])} " \
                   f"{self.bool_expr(scope, depth - 1)})"
        if form == 2 and depth > 0:
            return f"(not {self.bool_expr(scope, depth - 1)})"
        if form == 3:
            return f"({sub()} {rng.choice(['in', 'not in'])} ({sub()}, {sub()}, {sub()}))"
        if form == 4:
            return (f"({{'a': {sub()}}}.get({rng.choice(['a', 'b'])!r}) "
                    f"{rng.choice(['is', 'is not'])} None)")
        if form == 5:
            return rng.choice(["True", "False", f"bool({sub()})"])
        return f"({sub()} % 2 == 0)"

    # -- statements ---------------------------------------------------------

    def block(self, out, scope, depth=2, count=None):
        """Random statements written to ``out`` (Lines); ``scope`` holds the
        names of int variables bound before it.  Never empty."""
        scope = list(scope)
        n = count if count is not None else self.rng.randint(1, 4)
        for _ in range(n):
            self.statement(out, scope, depth)
        return scope

    def statement(self, out, scope, depth):
        rng = self.rng
        kinds = ["assign", "assign", "record", "augment", "record"]
        if depth > 0:
            kinds += ["if", "for", "while", "try", "with", "match", "closure", "comprehension"]
        if self.loop_depth:
            kinds += ["break", "continue"]
        kind = rng.choice(kinds)
        getattr(self, "stmt_" + kind)(out, scope, depth)

    def assignable(self, scope):
        return [name for name in scope if name not in self.counting]

    def stmt_assign(self, out, scope, depth):
        targets = self.assignable(scope)
        name = self.fresh() if not targets or self.chance(0.5) else self.choice(targets)
        form = self.rng.randrange(5)
        if form == 0 and scope:
            other = self.fresh()
            out.add(f"{name}, *{other} = {self.int_expr(scope)}, {self.int_expr(scope)}, "
                    f"{self.int_expr(scope)}")
            out.add(f"{other} = len({other})")
            scope.append(other)
        elif form == 1:
            other = self.fresh()
            out.add(f"{name} = {other} = ({self.int_expr(scope)}) % {MODULUS}")
            scope.append(other)
        else:
            out.add(f"{name} = ({self.int_expr(scope)}) % {MODULUS}")
        if name not in scope:
            scope.append(name)

    def stmt_record(self, out, scope, depth):
        form = self.rng.randrange(5)
        if form == 0 and scope:
            var = self.choice(scope)
            out.add(f"out.append(f'{{{var}=}} {{{var}:>6}} {{{var}!r}} {{{var}:#x}}')")
        elif form == 1:
            out.add(f"out.append(({self.int_expr(scope)}, {self.bool_expr(scope)}))")
        else:
            out.add(f"out.append({self.int_expr(scope)})")

    def stmt_augment(self, out, scope, depth):
        if not self.assignable(scope):
            return self.stmt_assign(out, scope, depth)
        var = self.choice(self.assignable(scope))
        op = self.choice(["+=", "-=", "*=", "//=", "%=", "|=", "^=", "&=", "<<="])
        value = self.int_expr(scope, 1)
        if op == "<<=":
            value = f"({value}) & 3"
        out.add(f"{var} {op} {value}")
        out.add(f"{var} %= {MODULUS}")

    def stmt_break(self, out, scope, depth):
        out.add(f"if {self.bool_expr(scope, 1)}:")
        with out.indent():
            out.add(self.choice(["break", "continue"]))

    stmt_continue = stmt_break

    def stmt_if(self, out, scope, depth):
        out.add(f"if {self.bool_expr(scope)}:")
        with out.indent():
            self.block(out, scope, depth - 1)
        for _ in range(self.rng.randint(0, 2)):
            out.add(f"elif {self.bool_expr(scope)}:")
            with out.indent():
                self.block(out, scope, depth - 1)
        if self.chance(0.5):
            out.add("else:")
            with out.indent():
                self.block(out, scope, depth - 1)

    def stmt_for(self, out, scope, depth):
        var = self.fresh("i")
        iterable = self.choice([
            f"range({self.rng.randint(0, 5)})",
            f"[{', '.join(str(self.small()) for _ in range(self.rng.randint(0, 4)))}]",
            f"reversed(range({self.rng.randint(1, 4)}))",
            f"(x * 2 for x in range({self.rng.randint(0, 4)}))",
            f"dict.fromkeys(range({self.rng.randint(0, 4)}))",
        ])
        out.add(f"for {var} in {iterable}:")
        self.loop_depth += 1
        with out.indent():
            self.block(out, scope + [var], depth - 1)
        self.loop_depth -= 1
        if self.chance(0.4):
            out.add("else:")
            with out.indent():
                out.add(f"out.append(('for-else', {var!r}))")

    def stmt_while(self, out, scope, depth):
        var = self.fresh("n")
        out.add(f"{var} = {self.rng.randint(0, 5)}")
        out.add(f"while {var} > 0:")
        self.loop_depth += 1
        self.counting.add(var)      # the block never assigns the counter
        with out.indent():
            out.add(f"{var} -= 1")
            self.block(out, scope + [var], depth - 1)
        self.counting.discard(var)
        self.loop_depth -= 1
        if self.chance(0.4):
            out.add("else:")
            with out.indent():
                out.add(f"out.append(('while-else', {var}))")
        scope.append(var)

    def raise_statement(self, scope):
        kind = self.choice(EXCEPTIONS)
        return self.choice([
            f"raise {kind}({self.small()})",
            f"raise {kind}('v=' + str({self.int_expr(scope, 1)}))",
            f"fail({kind}, 'failed')",
            f"raise {kind}('chained') from ValueError('cause')",
        ])

    def stmt_try(self, out, scope, depth):
        # (A break or continue in the try or a handler leaves through the
        # finally; none is written in a finally.)
        out.add("try:")
        with out.indent():
            self.block(out, scope, depth - 1)
            if self.chance(0.5):
                out.add(f"if {self.bool_expr(scope, 1)}:")
                with out.indent():
                    out.add(self.raise_statement(scope))
        handlers = self.rng.randint(0, 3)
        for _ in range(handlers):
            kinds = self.rng.sample(EXCEPTIONS, self.rng.randint(1, 2))
            name = self.fresh("e")
            spelled = kinds[0] if len(kinds) == 1 else "(" + ", ".join(kinds) + ")"
            out.add(f"except {spelled} as {name}:")
            with out.indent():
                out.add(f"out.append(('caught',) + describe({name}))")
                if self.chance(0.3):
                    self.block(out, scope, depth - 1)
                if self.chance(0.15):
                    out.add("raise")
        if handlers and self.chance(0.4):
            out.add("else:")
            with out.indent():
                self.block(out, scope, depth - 1)
        if not handlers or self.chance(0.4):
            out.add("finally:")
            with out.indent():
                out.add("out.append('finally')")

    def stmt_with(self, out, scope, depth):
        managers = []
        for _ in range(self.rng.randint(1, 3)):
            name = self.fresh("cm")
            suppress = self.rng.sample(EXCEPTIONS, self.rng.randint(0, 2))
            fail_enter = self.chance(0.1)
            if self.chance(0.25):
                managers.append(f"managed(out, {name!r}) as {name}")
            else:
                managers.append(f"Recorder(out, {name!r}, {tuple(suppress)!r}, {fail_enter})"
                                + (f" as {name}" if self.chance(0.7) else ""))
        if self.version >= (3, 9) and len(managers) > 1 and self.chance(0.5):
            out.add("with (" + ", ".join(managers) + "):")
        else:
            out.add("with " + ", ".join(managers) + ":")
        with out.indent():
            self.block(out, scope, depth - 1)
            if self.chance(0.4):
                out.add(f"if {self.bool_expr(scope, 1)}:")
                with out.indent():
                    out.add(self.raise_statement(scope))

    def stmt_match(self, out, scope, depth):
        subject = self.choice([self.int_expr(scope, 1), self.choice(SUBJECTS)])
        self.match_statement(out, subject, scope, depth)

    def stmt_closure(self, out, scope, depth):
        fn = self.fresh("f")
        counter = self.fresh("k")
        out.add(f"{counter} = {self.small()}")
        out.add(f"def {fn}(step, *more, bias={self.small()}):")
        with out.indent():
            out.add(f"nonlocal {counter}")
            out.add(f"{counter} = ({counter} + step + bias + len(more)) % {MODULUS}")
            out.add(f"return {counter}")
        for _ in range(self.rng.randint(1, 3)):
            args = ", ".join(self.int_expr(scope, 1) for _ in range(self.rng.randint(1, 3)))
            out.add(f"out.append({fn}({args}))")
        scope.append(counter)

    def stmt_comprehension(self, out, scope, depth):
        name = self.fresh("q")
        out.add(f"{name} = {self.comprehension(scope)}")
        out.add(f"out.append({name})")

    def comprehension(self, scope):
        rng = self.rng
        a, b = self.fresh("x"), self.fresh("y")
        inner = scope + [a]
        loops = f"for {a} in range({rng.randint(0, 5)})"
        if self.chance(0.4):
            loops += f" for {b} in range({a}, {rng.randint(1, 5)})"
            inner = inner + [b]
        if self.chance(0.5):
            loops += f" if {self.bool_expr(inner, 1)}"
        element = self.int_expr(inner, 1)
        form = rng.randrange(9)
        if form == 0:
            return f"[{element} {loops}]"
        if form == 1:
            return f"sorted({{{element} {loops}}})"
        if form == 2:
            return f"{{{a}: {element} {loops}}}"
        if form == 3:
            return f"tuple({element} {loops})"
        if form == 4:
            return f"[[{element} for _ in range(2)] {loops}]"
        if form == 5:
            return f"{rng.choice(['any', 'all', 'sum', 'list', 'sorted'])}({element} {loops})"
        if form == 6:
            return f"max(({element} {loops}), default=-1)"
        if form == 7:
            return f"[({a}, w) {loops} if (w := {a} * 2) > {rng.randint(0, 4)}]"
        return f"''.join(str({element}) {loops})"

    # -- match ------------------------------------------------------------

    def match_statement(self, out, subject, scope, depth, returns=False):
        """A ``match`` on ``subject``: several cases of every pattern form,
        each recording (or returning) its index and what it bound."""
        out.add(f"match {subject}:")
        count = self.rng.randint(1, 6)
        with out.indent():
            for index in range(count):
                last = index == count - 1
                pattern, names = self.pattern(3, irrefutable_ok=last and self.chance(0.5))
                guard = ""
                if self.chance(0.25):
                    guard = f" if {self.bool_expr(scope, 1)}"
                    if names and self.chance(0.6):
                        guard = f" if {names[0]} is not None"
                out.add(f"case {pattern}{guard}:")
                with out.indent():
                    recorded = "(" + "".join(f"{n}, " for n in names) + ")"
                    if returns:
                        out.add(f"return ({index}, {recorded})")
                    else:
                        out.add(f"out.append(('case', {index}, {recorded}))")
                        if depth > 0 and self.chance(0.25):
                            self.block(out, scope, depth - 1, count=1)

    def pattern(self, depth, irrefutable_ok=False):
        """``(pattern source, names it binds)``; refutable unless
        ``irrefutable_ok``."""
        rng = self.rng
        if irrefutable_ok:
            if self.chance(0.5):
                return "_", []
            name = self.fresh("m")
            return name, [name]
        forms = ["literal", "literal", "value", "or"]
        if depth > 0:
            forms += ["sequence", "sequence", "mapping", "class", "class", "as"]
        form = rng.choice(forms)
        if form == "literal":
            literal = rng.choice(LITERALS)
            self.examples.append(literal)
            return literal, []
        if form == "value":
            return rng.choice(["Color.RED", "Color.GREEN", "Color.BLUE"]), []
        if form == "or":
            options = sorted(set(rng.sample(LITERALS, rng.randint(2, 3))))
            self.examples += options
            if len(options) == 1:
                return options[0], []
            return " | ".join(options), []
        if form == "as":
            inner, names = self.pattern(depth - 1)
            name = self.fresh("m")
            return f"({inner}) as {name}", names + [name]
        if form == "sequence":
            items, names = [], []
            for _ in range(rng.randint(0, 3)):
                sub, sub_names = self.sub_pattern(depth - 1)
                items.append(sub)
                names += sub_names
            if self.chance(0.4):
                star = self.fresh("s") if self.chance(0.6) else "_"
                items.insert(rng.randint(0, len(items)), "*" + star)
                if star != "_":
                    names.append(star)
            brackets = rng.choice(["[]", "()"])
            if brackets == "()" and len(items) == 1:
                return f"({items[0]},)", names
            return brackets[0] + ", ".join(items) + brackets[1], names
        if form == "mapping":
            items, names = [], []
            for key in rng.sample(["'a'", "'b'", "'k'", "1"], rng.randint(0, 2)):
                sub, sub_names = self.sub_pattern(depth - 1)
                items.append(f"{key}: {sub}")
                names += sub_names
            if self.chance(0.4):
                rest = self.fresh("r")
                items.append(f"**{rest}")
                names.append(rest)
            return "{" + ", ".join(items) + "}", names
        # class patterns
        cls = rng.choice(["Point", "Point3", "Box", "int", "str", "bool", "tuple", "list", "dict"])
        names, args = [], []
        if cls in ("Point", "Point3"):
            fields = ["x", "y", "z"][: 2 if cls == "Point" else 3]
            positional = rng.randint(0, len(fields))
            for field in fields[:positional]:
                sub, sub_names = self.sub_pattern(depth - 1)
                args.append(sub)
                names += sub_names
            for field in fields[positional:]:
                if self.chance(0.5):
                    sub, sub_names = self.sub_pattern(depth - 1)
                    args.append(f"{field}={sub}")
                    names += sub_names
        elif cls == "Box":
            if self.chance(0.05):
                # Box has no __match_args__: a TypeError when tried.
                sub, sub_names = self.sub_pattern(depth - 1)
                args.append(sub)
                names += sub_names
            for field in ("content", "label"):
                if self.chance(0.6):
                    sub, sub_names = self.sub_pattern(depth - 1)
                    args.append(f"{field}={sub}")
                    names += sub_names
        elif self.chance(0.6):
            sub, sub_names = self.sub_pattern(depth - 1)
            args.append(sub)
            names += sub_names
        return f"{cls}({', '.join(args)})", names

    def sub_pattern(self, depth):
        """A pattern inside another: captures and wildcards allowed."""
        roll = self.rng.random()
        if roll < 0.3:
            name = self.fresh("m")
            return name, [name]
        if roll < 0.4:
            return "_", []
        return self.pattern(depth)

    # -- the parts ----------------------------------------------------------

    def part(self, index):
        out = Lines()
        out.add(f"def part_{index}(out):")
        with out.indent():
            kind = self.choice(PART_KINDS)
            if kind == "tstring" and self.version < (3, 14):
                kind = "fstring"
            getattr(self, "part_" + kind)(out)
        return out.text()

    def part_mixed(self, out):
        scope = self.block(out, [], depth=3, count=self.rng.randint(3, 7))
        if scope:
            out.add(f"out.append(({', '.join(scope[:6])},))")

    def part_match(self, out):
        fn = self.fresh("matcher")
        out.add(f"def {fn}(subject):")
        self.examples = []
        with out.indent():
            self.match_statement(out, "subject", [], 0, returns=self.chance(0.6))
            out.add("return 'no match'")
        # The constants True, False and None are singled out by the
        # compiler (and 0 and 1 are equal to two of them): always some.
        subjects = self.rng.sample(SUBJECTS, self.rng.randint(4, 10)) + self.rng.sample(
            ["True", "False", "None", "0", "1"], 2) + self.examples
        out.add(f"for subject in [{', '.join(subjects)}]:")
        with out.indent():
            out.add(f"out.append({fn}(subject))")

    def part_comprehensions(self, out):
        scope = self.block(out, [], depth=1, count=2)
        for _ in range(self.rng.randint(2, 5)):
            self.stmt_comprehension(out, scope, 1)
        if self.chance(0.5):
            # A class body's comprehension sees the class's names only in
            # its outermost iterable.
            cls = self.fresh("K")
            out.add(f"class {cls}:")
            with out.indent():
                out.add(f"base = {self.rng.randint(0, 4)}")
                out.add("items = [base * i for i in range(base + 2)]")
                out.add("pairs = {i: [j for j in range(i)] for i in items if i % 2 == 0}")
            out.add(f"out.append(({cls}.items, {cls}.pairs))")

    def part_generators(self, out):
        rng = self.rng
        sub, gen = self.fresh("sub"), self.fresh("gen")
        out.add(f"def {sub}(n):")
        with out.indent():
            out.add("total = 0")
            out.add("for i in range(n):")
            with out.indent():
                out.add("received = yield i")
                out.add("total += i if received is None else received")
            out.add("return total")
        out.add(f"def {gen}(n):")
        with out.indent():
            out.add("try:")
            with out.indent():
                out.add(f"result = yield from {sub}(n)")
                out.add("out.append(('sub returned', result))")
                out.add("yield -1")
                if self.chance(0.5):
                    out.add(f"yield from [x * x for x in range(n)]")
                out.add("try:")
                with out.indent():
                    out.add("yield -2")
                out.add("except KeyError as error:")
                with out.indent():
                    out.add("out.append(('gen caught', str(error)))")
                    out.add("yield -3")
            out.add("finally:")
            with out.indent():
                out.add("out.append(('gen finally', n))")
        n = rng.randint(0, 4)
        action = rng.randrange(5)
        if action == 0:
            out.add(f"out.append(list({gen}({n})))")
        elif action == 1:
            out.add(f"g = {gen}({n})")
            out.add("out.append(next(g))")
            for _ in range(rng.randint(1, 4)):
                out.add(f"out.append(g.send({rng.randint(0, 9)}))")
            out.add("g.close()")
        elif action == 2:
            out.add(f"g = {gen}({n})")
            out.add("out.append([next(g) for _ in range(%d)])" % (n + 1))
            out.add("out.append(g.throw(KeyError('thrown')))")
            out.add("out.append(list(g))")
        elif action == 3:
            out.add(f"g = {gen}({n})")
            out.add("out.append(next(g))")
            out.add("try:")
            with out.indent():
                out.add("g.throw(ValueError('into the generator'))")
            out.add("except ValueError as error:")
            with out.indent():
                out.add("out.append(('propagated', str(error)))")
            out.add("out.append(next(g, 'exhausted'))")
        else:
            gx = self.fresh("gx")
            out.add(f"{gx} = (v * 2 for v in {gen}({n}) if v != -3)")
            out.add(f"out.append(sum({gx}))")
            out.add(f"out.append(list(zip({gen}({n}), 'abcdefgh')))")
        if self.chance(0.4):
            # A with and a finally in a generator closed or thrown into
            # half-way; StopIteration raised inside one (PEP 479).
            holder = self.fresh("holder")
            out.add(f"def {holder}(n):")
            with out.indent():
                out.add("with Recorder(out, 'in-gen', ('KeyError',)):")
                with out.indent():
                    out.add("for i in range(n):")
                    with out.indent():
                        out.add("yield i")
                out.add("if n > 2:")
                with out.indent():
                    out.add("raise StopIteration('inside')")
                out.add("yield 'after'")
            out.add(f"h = {holder}({rng.randint(0, 4)})")
            out.add("out.append(next(h, None))")
            out.add(rng.choice(["h.close()", "out.append(h.throw(KeyError('k')))",
                                "out.append(list(h))", "out.append(h.send(None))"]))
            out.add("out.append(list(h))")
        if self.chance(0.5):
            out.add(f"squares = (i * i for i in range({rng.randint(0, 6)}))")
            out.add("out.append((next(squares, None), list(squares)))")

    def part_with(self, out):
        for _ in range(self.rng.randint(1, 3)):
            self.stmt_with(out, [], 2)
        if self.chance(0.5):
            out.add("with contextlib.suppress(KeyError):")
            with out.indent():
                out.add("out.append('suppressing')")
                out.add("{}['missing']")
        if self.chance(0.5):
            out.add("with contextlib.ExitStack() as stack:")
            with out.indent():
                out.add("for name in 'ab':")
                with out.indent():
                    out.add("out.append(stack.enter_context(Recorder(out, name)))")
                out.add("stack.callback(out.append, 'callback')")

    def part_try(self, out):
        for _ in range(self.rng.randint(1, 3)):
            self.stmt_try(out, [], 2)
        if self.chance(0.5):
            out.add("def deep(n):")
            with out.indent():
                out.add("if n == 0:")
                with out.indent():
                    out.add(f"raise {self.choice(EXCEPTIONS)}('at the bottom')")
                out.add("try:")
                with out.indent():
                    out.add("return deep(n - 1)")
                out.add("finally:")
                with out.indent():
                    out.add("out.append(('unwinding', n))")
            out.add("try:")
            with out.indent():
                out.add(f"deep({self.rng.randint(0, 5)})")
            out.add("except Exception as error:")
            with out.indent():
                out.add("out.append(describe(error))")
                out.add("out.append(type(error.__context__).__name__)")

    def part_except_star(self, out):
        rng = self.rng
        leaves = [f"{rng.choice(EXCEPTIONS[:5])}({i})" for i in range(rng.randint(1, 4))]
        if self.chance(0.5):
            leaves.append(f"ExceptionGroup('inner', [{rng.choice(EXCEPTIONS[:5])}('nested')])")
        out.add("try:")
        with out.indent():
            out.add("try:")
            with out.indent():
                out.add(f"raise ExceptionGroup('group', [{', '.join(leaves)}])")
            for kinds in rng.sample(EXCEPTIONS[:5], rng.randint(1, 3)):
                name = self.fresh("eg")
                out.add(f"except* {kinds} as {name}:")
                with out.indent():
                    out.add(f"out.append(('except*', describe({name})))")
                    if self.chance(0.2) and not RAISE_IN_EXCEPT_STAR_ABORTS:
                        out.add("raise RuntimeError('from a handler')")
            if self.chance(0.3):
                out.add("else:")
                with out.indent():
                    out.add("out.append('else')")
            if self.chance(0.5):
                out.add("finally:")
                with out.indent():
                    out.add("out.append('finally')")
        out.add("except* Exception as rest:")
        with out.indent():
            out.add("out.append(('rest', describe(rest)))")

    def part_classes(self, out):
        rng = self.rng
        base, derived = self.fresh("Base"), self.fresh("Derived")
        slots = self.chance(0.4)
        out.add(f"class {base}:")
        with out.indent():
            out.add(f"kind = {rng.choice(['base', 'b'])!r}")
            out.add("count = 0")
            if slots:
                out.add("__slots__ = ('value', '_hidden')")
            out.add("def __init__(self, value):")
            with out.indent():
                out.add("self.value = value")
                out.add("self._hidden = value * 2")
                out.add("type(self).count += 1")
            out.add("def __repr__(self):")
            with out.indent():
                out.add("return f'{type(self).__name__}({self.value!r})'")
            out.add("@property")
            out.add("def hidden(self):")
            with out.indent():
                out.add("return self._hidden")
            out.add("@hidden.setter")
            out.add("def hidden(self, value):")
            with out.indent():
                out.add("if value < 0:")
                with out.indent():
                    out.add("raise ValueError('negative')")
                out.add("self._hidden = value")
            out.add("def __add__(self, other):")
            with out.indent():
                out.add("if isinstance(other, int):")
                with out.indent():
                    out.add("return type(self)(self.value + other)")
                out.add("if isinstance(other, " + base + "):")
                with out.indent():
                    out.add("return type(self)(self.value + other.value)")
                out.add("return NotImplemented")
            out.add("__radd__ = __add__")
            out.add("def __eq__(self, other):")
            with out.indent():
                out.add(f"return isinstance(other, {base}) and self.value == other.value")
            out.add("def __hash__(self):")
            with out.indent():
                out.add("return hash(self.value)")
            out.add("def __lt__(self, other):")
            with out.indent():
                out.add("return self.value < other.value")
            out.add("def __len__(self):")
            with out.indent():
                out.add("return abs(self.value) % 7")
            out.add("def __getitem__(self, index):")
            with out.indent():
                out.add("if index >= len(self):")
                with out.indent():
                    out.add("raise IndexError(index)")
                out.add("return self.value * index")
            out.add("def __contains__(self, item):")
            with out.indent():
                out.add("return item == self.value")
            out.add("def __bool__(self):")
            with out.indent():
                out.add("return self.value != 0")
            out.add("@classmethod")
            out.add("def make(cls, *values):")
            with out.indent():
                out.add("return [cls(v) for v in values]")
            out.add("@staticmethod")
            out.add("def double(x):")
            with out.indent():
                out.add("return x * 2")
        out.add(f"class {derived}({base}):")
        with out.indent():
            if slots:
                out.add("__slots__ = ('extra',)")
            out.add("kind = 'derived'")
            out.add("def __init__(self, value, extra=1):")
            with out.indent():
                out.add("super().__init__(value)")
                out.add("self.extra = extra")
            out.add("def __add__(self, other):")
            with out.indent():
                out.add("result = super().__add__(other)")
                out.add("if result is not NotImplemented:")
                with out.indent():
                    out.add("result.extra = self.extra + 1")
                out.add("return result")
            out.add("def __call__(self, *args, **kwargs):")
            with out.indent():
                out.add("return (self.value, args, sorted(kwargs.items()))")
            out.add("def __init_subclass__(cls, **kwargs):")
            with out.indent():
                out.add("super().__init_subclass__(**kwargs)")
                out.add("GLIST.append(cls.__name__)")
        a, b = rng.randint(-3, 9), rng.randint(-3, 9)
        actions = [
            f"out.append(({base}({a}) + {b}, {b} + {derived}({a}), {derived}({a}) + {base}({b})))",
            f"out.append(sorted([{derived}({b}), {base}({a}), {derived}({a} - 1)]))",
            f"out.append(list({base}({a})))",
            f"out.append(({a} in {derived}({a}), bool({base}({b})), len({derived}({a}))))",
            f"out.append({derived}({a}, extra={b})(1, 2, k={b}))",
            f"out.append(({base}.make({a}, {b}), {derived}.double({a}), {derived}.kind, "
            f"{base}.count, {derived}.count))",
            f"o = {derived}({a}); o.hidden = {b}; out.append((o.hidden, o.extra))",
            f"o = {base}({a}); o.value += {b}; out.append(o)",
            f"out.append({{{base}({a}): 1, {derived}({a}): 2}})",
            f"o = {base}({a}); del o.value; out.append(o.value)",
            f"o = {base}({a}); o.missing = 1; out.append(o.missing)",
            f"out.append({base}({a}) + 'text')",
            f"class Sub({derived}): pass\nout.append((Sub({a}) + 1, GLIST[-1:]))",
        ]
        for action in rng.sample(actions, rng.randint(3, 7)):
            out.add("try:")
            with out.indent():
                out.add(action)
            out.add("except Exception as error:")
            with out.indent():
                out.add("out.append(describe(error))")

    def part_closures(self, out):
        rng = self.rng
        out.add("def make_counter(start, *, step=1):")
        with out.indent():
            out.add("count = start")
            out.add("def bump(times=1, **named):")
            with out.indent():
                out.add("nonlocal count")
                out.add("for _ in range(times):")
                with out.indent():
                    out.add("count += step + len(named)")
                out.add("return count")
            out.add("return bump")
        out.add(f"bump = make_counter({rng.randint(0, 9)}, step={rng.randint(1, 3)})")
        out.add(f"out.append([bump(), bump({rng.randint(0, 3)}), bump(2, a=1, b=2)])")
        out.add(f"adders = [lambda x, i=i: x + i for i in range({rng.randint(1, 4)})]")
        out.add(f"out.append([f({rng.randint(0, 9)}) for f in adders])")
        out.add("late = [lambda: i for i in range(3)]")
        out.add("out.append([f() for f in late])")
        out.add("def fib(n):")
        with out.indent():
            out.add("return n if n < 2 else fib(n - 1) + fib(n - 2)")
        out.add(f"out.append(fib({rng.randint(0, 12)}))")
        out.add("def trace(fn):")
        with out.indent():
            out.add("@functools.wraps(fn)")
            out.add("def wrapper(*args, **kwargs):")
            with out.indent():
                out.add("out.append(('call', fn.__name__, args, sorted(kwargs)))")
                out.add("return fn(*args, **kwargs)")
            out.add("return wrapper")
        out.add("@trace")
        out.add("def combine(a, b=0, /, c=1, *rest, d, e=5, **more):")
        with out.indent():
            out.add("return (a, b, c, rest, d, e, sorted(more.items()))")
        calls = [
            f"combine({rng.randint(0, 5)}, d={rng.randint(0, 5)})",
            f"combine(1, 2, 3, 4, 5, d=6, z=7)",
            f"combine(*[1, 2], **{{'d': 3, 'e': 4}})",
            f"combine(1, c=2, d=3, **{{'x': 1}})",
            "combine(1)",
            "combine(1, 2, d=3, a=4)",
            f"functools.partial(combine, 1, d=2)({rng.randint(0, 5)})",
            f"helper(*range({rng.randint(0, 5)}), scale=2, k=1)",
            "helper(**{'a': 1, 'b': 2})",
        ]
        for call in rng.sample(calls, rng.randint(2, 5)):
            out.add("try:")
            with out.indent():
                out.add(f"out.append({call})")
            out.add("except TypeError as error:")
            with out.indent():
                out.add("out.append(describe(error))")
        out.add("def outer():")
        with out.indent():
            out.add("global G")
            out.add("G += 1")
            out.add(f"x = {rng.randint(0, 9)}")
            out.add("def middle():")
            with out.indent():
                out.add("def inner():")
                with out.indent():
                    out.add("nonlocal x")
                    out.add("x *= 2")
                    out.add("return x")
                out.add("return inner() + inner()")
            out.add("return middle(), x, G")
        out.add("out.append(outer())")

    def part_fstring(self, out):
        rng = self.rng
        scope = self.block(out, [], depth=1, count=2)
        value = self.choice(scope) if scope else "7"
        specs = [
            f"f'{{{value}:>8}}|{{{value}:<5}}|{{{value}:^7}}'",
            f"f'{{{value}!r:>10}} {{\"text\"!r}} {{\"é\"!a}}'",
            f"f'{{{value}=}} {{{value} + 1 = }}'",
            f"f'{{{value}:+05d}} {{{value}:,}} {{{value}:b}} {{{value}:o}}'",
            f"f'{{{value} / 3:.3f}} {{{value} * 1.5:e}} {{{value} / 7:.2%}}'",
            f"f'{{{value}:{{width}}}}'.replace(' ', '.')",
            f"f'{{Point({value}, 2)}} {{Point(1, {value})!s:>20}}'",
            f"f'{{\"nested {{}}\".format({value})}} {{[x for x in range(3)]}}'",
            f"f'{{{value}!s:*^{rng.randint(1, 12)}}}'",
            f"'{{:>{{}}}}'.format({value}, {rng.randint(1, 9)})",
            f"f'{{{value}:{{\"<\" if {value} % 2 else \">\"}}{{width}}}}'",
        ]
        out.add(f"width = {rng.randint(1, 10)}")
        for spec in rng.sample(specs, rng.randint(2, 5)):
            out.add(f"out.append({spec})")

    def part_tstring(self, out):
        rng = self.rng
        out.add("from string.templatelib import Interpolation, Template")
        scope = self.block(out, [], depth=1, count=2)
        value = self.choice(scope) if scope else "3"
        templates = [
            f"t'a{{{value}}}b{{{value} + 1!r}}c'",
            f"t'{{{value}:>6}} and {{\"s\"!s:^5}}'",
            f"t'{{{value}=}}'",
            f"t'plain' t'{{{value}}}'",
            f"t'{{Point({value}, 1)!r}} {{[i for i in range(2)]}}'",
        ]
        out.add("def render(template):")
        with out.indent():
            out.add("parts = []")
            out.add("for item in template:")
            with out.indent():
                out.add("match item:")
                with out.indent():
                    out.add("case str() as text:")
                    with out.indent():
                        out.add("parts.append(text)")
                    out.add("case Interpolation(value, expression, conversion, spec):")
                    with out.indent():
                        out.add("shown = repr(value) if conversion == 'r' else value")
                        out.add("parts.append(format(shown, spec) + '<' + expression + '>')")
            out.add("return ''.join(parts)")
        for template in rng.sample(templates, rng.randint(2, 4)):
            name = self.fresh("t")
            out.add(f"{name} = {template}")
            out.add(f"out.append(({name}.strings, [i.value for i in {name}.interpolations], "
                    f"[(i.conversion, i.format_spec) for i in {name}.interpolations], "
                    f"render({name}), type({name}) is Template))")

    def part_unpacking(self, out):
        rng = self.rng
        scope = self.block(out, [], depth=1, count=2)
        e = lambda: self.int_expr(scope, 1)
        statements = [
            f"first, *middle, last = [{e()}, {e()}, {e()}, {e()}]; out.append((first, middle, last))",
            f"(a, b), *c = ({e()}, {e()}), {e()}; out.append((a, b, c))",
            f"a, b = b, a = {e()}, {e()}; out.append((a, b))",
            f"xs = [*range({rng.randint(0, 4)}), *[{e()}], *(1, 2)]; out.append(xs)",
            f"d = {{**{{'a': {e()}}}, 'b': 2, **dict(c={e()})}}; out.append(d)",
            f"s = {{*range(3), {e()}}}; out.append(sorted(s))",
            f"out.append(helper(*[{e()}, {e()}], *(1,), **{{'scale': 2}}))",
            f"a, *b = 'xyz'; out.append((a, b))",
            f"a, b = [{e()}]; out.append(a)",
            f"a, b, *c = range(1); out.append(a)",
            f"xs = list(range(6)); xs[1:3] = [{e()}]; del xs[-1]; xs[0] += 5; out.append(xs)",
            f"d = {{}}; d['k'] = d.get('k', 0) + 1; d['k'] *= 3; del d['k']; out.append(d)",
            f"p = Point({e()}, {e()}); p.x += 1; p.y -= p.x; del p.y; out.append(p.x); p.y",
            "global G; G += 1; out.append(G)",
            f"x = {e()}; del x; out.append(x)",
            f"out.append(({e()} < {e()} <= {e()} != {e()}, 1 < 2 < 3, {e()} == {e()} == {e()}))",
            f"q = [{e()}]; q *= 2; q += [3]; out.append(q)",
            f"m = {{1: 'a'}}; m |= {{2: 'b'}}; out.append(m)",
        ]
        for statement in rng.sample(statements, rng.randint(3, 7)):
            out.add("try:")
            with out.indent():
                out.add(statement)
            out.add("except Exception as error:")
            with out.indent():
                out.add("out.append(describe(error))")

    def part_iteration(self, out):
        """The iteration protocols: an iterable whose iterator has no
        ``__iter__``, one with only ``__getitem__``, ``iter(f, sentinel)``,
        consumed by every construct that iterates (3.15 makes a generator
        expression's iterator in the expression)."""
        rng = self.rng
        n = rng.randint(0, 5)
        out.add("class Steps:")
        with out.indent():
            out.add("def __init__(self, n):")
            with out.indent():
                out.add("self.n = n")
                out.add("self.iters = 0")
            out.add("def __repr__(self):")
            with out.indent():
                out.add("return f'Steps({self.n})'")
            out.add("def __iter__(self):")
            with out.indent():
                out.add("self.iters += 1")
                out.add("return StepIterator(self.n)")
        out.add("class StepIterator:")
        with out.indent():
            out.add("def __init__(self, n):")
            with out.indent():
                out.add("self.i = 0")
                out.add("self.n = n")
            out.add("def __next__(self):")
            with out.indent():
                out.add("if self.i >= self.n:")
                with out.indent():
                    out.add("raise StopIteration")
                out.add("self.i += 1")
                out.add("return self.i * 10")
        out.add("class Indexed:")
        with out.indent():
            out.add("def __getitem__(self, index):")
            with out.indent():
                out.add(f"if index >= {n}:")
                with out.indent():
                    out.add("raise IndexError(index)")
                out.add("return -index")
        out.add(f"steps = Steps({n})")
        sources = ["steps", "Indexed()", "iter(StepIterator(%d).__next__, %d)" % (n, 10 * rng.randint(0, n + 1)),
                   f"iter(Indexed())", f"StepIterator({n})", "Steps(3)"]
        uses = [
            "out.append([x for x in {0}])",
            "out.append(list(x + 1 for x in {0}))",
            "out.append(sum(x for x in {0} if x % 20 == 0))",
            "out.append(sorted({{x % 3 for x in {0}}}))",
            "out.append(tuple(zip({0}, 'abcdef')))",
            "out.append([*{0}])",
            "a, *b = {0}; out.append((a, b))",
            "out.append(max({0}, default=None))",
            "out.append(10 in {0})",
            "out.append(dict.fromkeys({0}))",
            "out.append([(x, y) for x in {0} for y in range(2) if x])",
            "g = (x for x in {0}); out.append((next(g, None), list(g)))",
            "out.append(list(enumerate(y for y in (x * 2 for x in {0}))))",
            "def walk(it):\n    yield from it\n    return 'done'\nout.append(list(walk({0})))",
            "for x in {0}:\n    out.append(x)\n    if x > 20:\n        break\nelse:\n    out.append('all')",
        ]
        for use in rng.sample(uses, rng.randint(3, 7)):
            out.add("try:")
            with out.indent():
                out.add(use.format(rng.choice(sources)))
            out.add("except Exception as error:")
            with out.indent():
                out.add("out.append(describe(error))")
        out.add("out.append(steps.iters)")

    def part_operators(self, out):
        """Operator dispatch at its corners: reflected operands of a
        subclass first, NotImplemented, in-place fallbacks, comparisons
        reflected, __bool__/__len__/__index__/__hash__ rules, attribute
        hooks, descriptors, a metaclass; names and defaults of functions."""
        rng = self.rng
        out.add("""class Num:
    def __init__(self, v):
        self.v = v
    def __repr__(self):
        return f'{type(self).__name__}({self.v!r})'
    def __add__(self, other):
        out.append(('add', type(self).__name__, type(other).__name__))
        return type(self)(self.v + getattr(other, 'v', other)) if isinstance(other, (int, Num)) else NotImplemented
    def __radd__(self, other):
        out.append(('radd', type(self).__name__, type(other).__name__))
        return type(self)(getattr(other, 'v', other) + self.v)
    def __iadd__(self, other):
        out.append(('iadd', type(self).__name__))
        return NotImplemented
    def __sub__(self, other):
        return NotImplemented
    def __rsub__(self, other):
        return ('rsub', other)
    def __eq__(self, other):
        out.append(('eq', type(self).__name__, type(other).__name__))
        return NotImplemented if not isinstance(other, Num) else self.v == other.v
    def __lt__(self, other):
        out.append(('lt', type(self).__name__, type(other).__name__))
        return self.v < getattr(other, 'v', other)
    def __gt__(self, other):
        out.append(('gt', type(self).__name__, type(other).__name__))
        return self.v > getattr(other, 'v', other)
    def __index__(self):
        return self.v
    def __neg__(self):
        return type(self)(-self.v)
    def __invert__(self):
        return NotImplemented
    __hash__ = None


class SubNum(Num):
    def __radd__(self, other):
        out.append(('sub-radd',))
        return SubNum(1000)
    def __bool__(self):
        if self.v < 0:
            raise ValueError('no truth')
        return self.v > 1


class Sized:
    def __init__(self, n):
        self.n = n
    def __len__(self):
        return self.n
    def __repr__(self):
        return f'Sized({self.n})'


class Dynamic:
    def __init__(self):
        object.__setattr__(self, 'log', [])
    def __getattr__(self, name):
        if name.startswith('x'):
            return name.upper()
        raise AttributeError(f'no {name}')
    def __setattr__(self, name, value):
        self.log.append(('set', name, value))
        object.__setattr__(self, name, value * 2 if isinstance(value, int) else value)
    def __delattr__(self, name):
        self.log.append(('del', name))
        object.__delattr__(self, name)
    def __repr__(self):
        return 'Dynamic()'


class Clamped:
    def __set_name__(self, owner, name):
        self.name = '_' + name
    def __get__(self, obj, owner=None):
        return self if obj is None else getattr(obj, self.name, 0)
    def __set__(self, obj, value):
        setattr(obj, self.name, max(0, min(10, value)))
    def __repr__(self):
        return 'Clamped()'


class Meta(type):
    def __call__(cls, *args):
        out.append(('meta call', cls.__name__, args))
        return super().__call__(*args)
    def __getitem__(cls, item):
        return (cls.__name__, item)


class Holder(metaclass=Meta):
    level = Clamped()
    def __init__(self, level=3):
        self.level = level
    def __repr__(self):
        return f'Holder({self.level})'
    def __class_getitem__(cls, item):
        return ('class_getitem', item)""")
        a, b = rng.randint(-3, 9), rng.randint(-3, 9)
        actions = [
            f"out.append(Num({a}) + Num({b}))",
            f"out.append({a} + Num({b}))",
            f"out.append(Num({a}) + SubNum({b}))",
            f"out.append(Num({a}) + 'x')",
            f"x = Num({a}); x += {b}; out.append(x)",
            f"out.append(Num({a}) - {b})",
            f"out.append({b} - Num({a}))",
            f"out.append(Num({a}) - Num({b}))",
            f"out.append(Num({a}) == Num({b}))",
            f"out.append(Num({a}) == {b})",
            f"out.append(Num({a}) != SubNum({a}))",
            f"out.append({a} < Num({b}))",
            f"out.append(Num({a}) < Num({b}) < {b + 1})",
            f"out.append(sorted([Num({a}), Num({b}), Num(0)], key=lambda n: n.v))",
            f"out.append([10, 20, 30, 40][Num({a % 4})])",
            f"out.append(list(range(10))[Num(1):Num({b % 10})])",
            f"out.append(-Num({a}))",
            f"out.append(~Num({a}))",
            f"out.append({{Num({a}): 1}})",
            f"out.append(bool(SubNum({a})))",
            f"out.append('yes' if SubNum({a}) else 'no')",
            f"out.append(not SubNum({a}))",
            f"out.append((bool(Sized({a})), len(Sized({a}))))",
            f"out.append([x for x in [SubNum({a}), SubNum({b})] if x])",
            f"d = Dynamic(); d.y = {a}; out.append((d.y, d.xylo, d.log))",
            f"d = Dynamic(); d.q = 1; del d.q; out.append(d.log); d.q",
            "d = Dynamic(); out.append(d.missing)",
            f"h = Holder({a * 3}); h.level += {b}; out.append((h, Holder.level, Holder[1], Holder._level if hasattr(Holder, '_level') else None))",
            # (Not sys._getframe(): the pure-Python runtime's frames are
            # seen by frame introspection, docs/overdub.md says.)
            f"out.append((lambda q={a}, *r, k={b}: (q, r, k))({b}, k={a}))",
            "out.append((describe.__name__, describe.__qualname__, helper.__defaults__, helper.__kwdefaults__))",
            f"out.append(sorted(k for k in locals() if not k.startswith('_')))",
            f"out.append(max(Num({a}), Num({b}), key=lambda n: n.v))",
            f"out.append(divmod({a}, {b or 1}) + ({a} ** 2, pow({a}, 2, 7), round({a} / 3, 2)))",
        ]
        for action in rng.sample(actions, rng.randint(4, 10)):
            out.add("try:")
            with out.indent():
                out.add(action)
            out.add("except Exception as error:")
            with out.indent():
                out.add("out.append(describe(error))")

    def part_loops(self, out):
        rng = self.rng
        out.add(f"data = [{', '.join(str(self.small()) for _ in range(rng.randint(0, 6)))}]")
        out.add("for i, (a, b) in enumerate(zip(data, reversed(data))):")
        with out.indent():
            out.add(f"if a == b: continue")
            out.add(f"if i > {rng.randint(0, 4)}: break")
            out.add("out.append((i, a - b))")
        out.add("else:")
        with out.indent():
            out.add("out.append('no break')")
        out.add("found = None")
        out.add("for row in range(4):")
        with out.indent():
            out.add("for col in range(4):")
            with out.indent():
                out.add(f"if row * col == {rng.randint(0, 9)}:")
                with out.indent():
                    out.add("found = (row, col)")
                    out.add("break")
            out.add("else:")
            with out.indent():
                out.add("continue")
            out.add("break")
        out.add("out.append(found)")
        self.stmt_while(out, [], 2)
        self.loop_depth += 1
        self.stmt_for(out, [], 2)
        self.loop_depth -= 1


#: The kinds of parts, by the method that writes one (weighted by repetition).
PART_KINDS = ["mixed", "mixed", "match", "match", "match", "comprehensions", "generators",
              "with", "try", "except_star", "classes", "closures", "fstring", "tstring",
              "unpacking", "loops", "iteration", "generators", "operators", "operators"]

#: Literal patterns (all hashable and comparable by equality or identity).
LITERALS = ["0", "1", "2", "-1", "True", "False", "None", "'x'", "'a'", "''", "1.5",
            "b'x'", "-2", "3", "True", "False", "None"]

#: Subjects the ``match`` parts try, some of each shape the patterns take.
SUBJECTS = [
    "0", "1", "2", "-1", "True", "False", "None", "'x'", "'a'", "''", "1.5", "b'x'",
    "3", "[]", "()", "[1]", "(1,)", "[1, 2]", "(1, 2)", "[1, 2, 3]", "[True, 'x', None]",
    "[[1, 2], 3]", "('x', [1, 2], {'a': 1})", "{}", "{'a': 1}", "{'a': 1, 'b': 2}",
    "{'a': [1, 2], 'k': 'x'}", "{1: True, 'b': None}", "Point(1, 2)", "Point(0, 0)",
    "Point3(1, 2, 3)", "Point(True, None)", "Point([1], {'a': 1})", "Box(1)",
    "Box('x', label=1)", "Box(Point(1, 2))", "Color.RED", "Color.BLUE", "'text'",
    "range(3)", "{'a': 1, 'b': 2, 'k': 3, 1: 4}", "Point3(Point(1, 2), 0, 'x')",
]


def generate(seed, version=sys.version_info[:2], parts=None):
    """The :class:`Program` of ``seed`` (the same on every run of a release;
    t-strings only from 3.14)."""
    rng = random.Random(seed)
    generator = Generator(rng, version)
    count = parts if parts is not None else rng.randint(2, 5)
    return Program(seed, [generator.part(index) for index in range(count)])
