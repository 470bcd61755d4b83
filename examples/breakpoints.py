"""A line-breakpoint pass, in the spirit of a debugger.

``Debugger`` is a context whose metadata is a :class:`Breakpoints` table:
source lines (file name, line number), each with an optional condition on
the frame's local variables.  The pass inserts, before the first instruction
of every chosen line of every function the program runs, a call of the
table's check with the line and the frame's ``locals()``; when the condition
holds, the check records a :class:`Hit` (function, line, a copy of the
locals) and calls ``on_hit`` if one was given — where a debugger would stop
and talk to its user.

Both calls are ``nooverdub``: they belong to the debugger, not the program.
``locals`` is frame-sensitive, so it reads the frame of the function being
debugged.  The lines are fixed when :func:`debug` makes the pass; the
conditions may change while the program runs.

Run ``python examples/breakpoints.py`` to see it.
"""

import dataclasses
import linecache

import cassette
from cassette import ir


@dataclasses.dataclass
class Hit:
    function: str
    line: int
    locals: dict


class Breakpoints:
    """Breakpoints by ``(filename, line)``; ``hits`` lists what stopped."""

    def __init__(self, on_hit=None):
        self.conditions = {}
        self.hits = []
        self.on_hit = on_hit

    def add(self, filename, line, condition=None):
        """Stop at ``line`` of ``filename`` when ``condition(locals)`` is
        true (always, without a condition)."""
        self.conditions[(filename, line)] = condition

    def check(self, function, filename, line, frame_locals):
        condition = self.conditions.get((filename, line))
        if condition is None and (filename, line) not in self.conditions:
            return
        if condition is not None and not condition(frame_locals):
            return
        hit = Hit(function, line, dict(frame_locals))
        self.hits.append(hit)
        if self.on_hit is not None:
            self.on_hit(hit)


class Debugger(cassette.Context):
    intercept = cassette.Intercept.CALLS


def _check(ctx, function, filename, line, frame_locals):
    ctx.metadata.check(function, filename, line, frame_locals)


def line_breakpoints(lines):
    """A pass that inserts ``_check(CONTEXT, name, file, line, locals())``
    before each line of ``lines`` (``{(filename, line), …}``).

    A pass must be deterministic: what it inserts depends only on the lines
    it was made for, so each set of lines gets its own Pass (and cassette
    rewrites code once per Pass)."""
    by_file = {}
    for filename, line in lines:
        by_file.setdefault(filename, set()).add(line)

    @cassette.Pass
    def insert_checks(ctx_type, func, code):
        chosen = by_file.get(code.filename)
        if not chosen:
            return code
        name = func.__qualname__ if func is not None else code.name
        starts = ir.line_starts(code)
        # From the end, so that earlier indices stay valid.
        for line in sorted((line for line in chosen if line in starts), reverse=True):
            index = starts[line]
            code[index:index] = ir.call_statement(
                ir.nooverdub(_check), ir.CONTEXT, name, code.filename, line,
                ir.call(ir.nooverdub(locals)), location=code[index].location)
        return code

    return insert_checks


def debug(breakpoints, f, /, *args, **kwargs):
    """Run ``f(*args, **kwargs)`` under a :class:`Debugger` with
    ``breakpoints``; returns what ``f`` returns."""
    pass_ = line_breakpoints(breakpoints.conditions)
    return cassette.overdub(Debugger(metadata=breakpoints, pass_=pass_), f, *args, **kwargs)


def _mean_and_spread(values):
    total = 0.0
    for value in values:
        total += value                               # a breakpoint here
    mean = total / len(values)
    spread = max(values) - min(values)               # and here
    return mean, spread


if __name__ == "__main__":
    code = _mean_and_spread.__code__
    loop_line = code.co_firstlineno + 3
    spread_line = code.co_firstlineno + 5
    table = Breakpoints(on_hit=lambda hit: print(
        f"stop at {hit.function}:{hit.line}: "
        f"{linecache.getline(code.co_filename, hit.line).strip()!r} {hit.locals}"))
    table.add(code.co_filename, loop_line, condition=lambda local: local["value"] > 2)
    table.add(code.co_filename, spread_line)
    print("result:", debug(table, _mean_and_spread, [1.0, 2.0, 3.0, 4.0]))
