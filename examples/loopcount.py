"""A pass that counts loop iterations per function.

``count_loops(f, *args)`` runs ``f`` and returns ``(result, counts)``:
``counts[qualname]`` is how many times a loop of that function went round
again — how many times control took a jump back to the start of a loop (a
*back-edge*, what JIT compilers count to find hot loops).  A ``for`` loop over
n items takes its back-edge n times (each item's body ends by jumping back to
fetch the next).  CPython 3.11+ tests a ``while`` condition again at the
bottom of the loop, so a ``while`` loop whose body runs n times goes round
n - 1 times; ``continue`` is a back-edge too.

How: before every back-edge the pass inserts a call of the context's counter,
``nooverdub`` (counting is the tool's business, not the program's), with the
function's name; a conditional back-edge gets the call on its taken path
only (:func:`cassette.ir.on_jump_taken`).  The same pass works on 3.11, 3.12
and 3.13.

Run ``python examples/loopcount.py`` to see it.
"""

import collections

import cassette
from cassette import ir


class LoopCounter(cassette.Context):
    """``metadata`` is a Counter of back-edges taken, by qualified name."""

    intercept = cassette.Intercept.CALLS


def _went_round(ctx, name):
    ctx.metadata[name] += 1


@cassette.Pass
def count_back_edges(ctx_type, func, code):
    name = func.__qualname__ if func is not None else code.name
    for jump in ir.back_edges(code):
        ir.on_jump_taken(code, jump,
                         ir.call_statement(ir.nooverdub(_went_round), ir.CONTEXT, name))
    return code


def count_loops(f, /, *args, **kwargs):
    """``(f(*args, **kwargs), Counter of back-edges taken per function)``."""
    counts = collections.Counter()
    result = cassette.overdub(LoopCounter(metadata=counts, pass_=count_back_edges),
                              f, *args, **kwargs)
    return result, counts


def _collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def _longest_collatz(limit):
    best = (0, 0)
    for start in range(1, limit):
        best = max(best, (_collatz_steps(start), start))
    return best


if __name__ == "__main__":
    result, counts = count_loops(_longest_collatz, 30)
    print("result:", result)
    for name, count in counts.most_common():
        print(f"{count:6d}  {name}")
