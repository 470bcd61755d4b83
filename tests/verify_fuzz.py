"""Fuzzing :mod:`cassette.verify` through the real pass pipeline.

Run as a script (``python tests/verify_fuzz.py SEED COUNT``) by
``tests/test_verify.py``, in its own process: a verifier that lets bad
bytecode through may crash the interpreter, and the test must see that as a
failure, not die with it.

Each mutant is a random edit of a corpus function's bytecode (an
instruction dropped, duplicated, moved, replaced by another of the same
function's, given a neighbouring argument, a jump retargeted, a stack
instruction inserted).  A pass returns the mutant; ``cassette.overdub`` then
either raises :class:`cassette.PassError` (rejected) or runs it, and
whatever the run raises is caught.  The last line printed is
``rejected R ran A of N``; a crash never gets to print it.
"""

import random
import signal
import sys

from bytecode import Bytecode, Instr, Label

import cassette


# -- the corpus: small functions covering the shapes compilers emit ------------

def arithmetic(x, y):
    z = x * y + 3
    return -z // (y or 1)


def loop(n):
    total = 0
    for i in range(n):
        if i % 2:
            total += i
        else:
            total -= 1
    return total


def while_loop(n):
    seen = []
    while n > 0:
        seen.append(n)
        n -= 3
    return seen


def handler(x):
    try:
        return 10 // x
    except ZeroDivisionError as error:
        return str(error)
    finally:
        x = None


def with_block(items):
    import contextlib
    with contextlib.suppress(KeyError):
        return items["missing"]
    return len(items)


def comprehension(n):
    return [i * i for i in range(n) if i != 2], {i: -i for i in range(n)}


def closure(n):
    step = 2

    def inner(k):
        return k + step + n
    return inner(1)


def generator(n):
    for i in range(n):
        yield i
    yield from range(2)


def unpacking(pair, *rest, **named):
    a, b = pair
    first, *others = rest or (0,)
    return a, b, first, others, sorted(named.items())


def formatting(value):
    return f"{value!r:>6}|{value:x}" if isinstance(value, int) else f"{value}"


def matching(value):
    match value:
        case [a, b]:
            return a + b
        case {"k": v}:
            return v
        case int(n) if n > 3:
            return n
        case _:
            return None


def calls(items):
    return max(items, key=abs), sorted(items, reverse=True), dict(a=1, **{"b": 2})


def generator_driver(n):
    return list(generator(n))


CORPUS = [
    (arithmetic, (6, 4)),
    (loop, (7,)),
    (while_loop, (10,)),
    (handler, (0,)),
    (handler, (5,)),
    (with_block, ({"a": 1},)),
    (comprehension, (5,)),
    (closure, (3,)),
    (generator_driver, (3,)),
    (unpacking, ((1, 2), 3, 4)),
    (formatting, (42,)),
    (matching, ([1, 2],)),
    (matching, ({"k": 9},)),
    (matching, (7,)),
    (calls, ([3, -5, 2],)),
]

STACK_INSTRUCTIONS = [
    lambda: Instr("POP_TOP"), lambda: Instr("PUSH_NULL"), lambda: Instr("NOP"),
    lambda: Instr("LOAD_CONST", 7), lambda: Instr("LOAD_CONST", None),
    lambda: Instr("COPY", 1), lambda: Instr("COPY", 2), lambda: Instr("SWAP", 2),
    lambda: Instr("SWAP", 3), lambda: Instr("BUILD_LIST", 0), lambda: Instr("BUILD_TUPLE", 2),
    lambda: Instr("GET_ITER"), lambda: Instr("RETURN_VALUE"),
]


def mutate(code, rng):
    """A random single edit of ``code`` (a fresh Bytecode)."""
    mutant = Bytecode.from_code(code)
    positions = [i for i, e in enumerate(mutant) if isinstance(e, Instr)]
    labels = [e for e in mutant if isinstance(e, Label)]
    index = rng.choice(positions)
    instr = mutant[index]
    edit = rng.randrange(7)
    if edit == 0:
        del mutant[index]
    elif edit == 1:
        mutant.insert(index, instr.copy())
    elif edit == 2:
        other = rng.choice(positions)
        mutant[index], mutant[other] = mutant[other], mutant[index]
    elif edit == 3:
        mutant[index] = mutant[rng.choice(positions)].copy()
    elif edit == 4 and isinstance(instr.arg, int) and not isinstance(instr.arg, bool):
        try:
            instr.arg = max(0, int(instr.arg) + rng.choice((-1, 1)))
        except (TypeError, ValueError):
            mutant.insert(index, rng.choice(STACK_INSTRUCTIONS)())
    elif edit == 5 and labels:
        jumps = [i for i in positions if isinstance(mutant[i].arg, Label)]
        if jumps:
            mutant[rng.choice(jumps)].arg = rng.choice(labels)
        else:
            mutant.insert(index, rng.choice(STACK_INSTRUCTIONS)())
    else:
        mutant.insert(index, rng.choice(STACK_INSTRUCTIONS)())
    return mutant


class Quiet(cassette.Context):
    pass


class TimedOut(Exception):
    pass


def _alarm(signum, frame):
    raise TimedOut


def main(seed, count):
    rng = random.Random(seed)
    signal.signal(signal.SIGALRM, _alarm)
    rejected = ran = 0
    for number in range(count):
        function, args = CORPUS[number % len(CORPUS)]
        target = function.__code__
        mutant = mutate(target, rng)

        @cassette.Pass
        def swap_in(ctx_type, func, code, mutant=mutant, target=target):
            return mutant if getattr(func, "__code__", None) is target else code

        try:
            signal.setitimer(signal.ITIMER_REAL, 0.5)
            try:
                cassette.overdub(Quiet(pass_=swap_in), function, *args)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except cassette.PassError:
            rejected += 1
            continue
        except BaseException:      # the mutant ran and raised, or looped
            pass
        ran += 1
    print(f"rejected {rejected} ran {ran} of {count}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
