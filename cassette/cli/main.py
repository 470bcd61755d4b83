"""``python -m cassette trace|profile [options] (script.py | -m module | -c code) [args]``.

The conventions are ``cProfile``'s and ``trace``'s: options come before the
program, everything after it is the program's own arguments; ``-o FILE``
writes the report to a file.  ``trace`` writes its lines to standard error
(the program's standard output stays its own) and ``profile`` its report
to standard output when the program has finished.  The program's exit
status is the command's.  Bad usage — no program, an unknown option, a
script that does not exist — is one line on standard error and status 2.
"""

import argparse
import importlib.metadata
import importlib.util
import os
import sys
import time

from . import children, profile
from .script import Program, UsageError

DESCRIPTION = ("Run a Python program overdubbed by cassette and report every call "
               "(and operation) it makes.")


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line (status 2)."""

    def error(self, message):
        raise UsageError(message)


def _add_program_arguments(parser):
    source = parser.add_mutually_exclusive_group()
    source.add_argument("-m", dest="module", metavar="module",
                        help="run a library module as a script (as python -m)")
    source.add_argument("-c", dest="code", metavar="code",
                        help="run a string of code (as python -c)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the report to FILE (default: standard error for trace, "
                             "standard output for profile)")
    parser.add_argument("--children", action=argparse.BooleanOptionalAction, default=True,
                        help="follow the child processes multiprocessing starts (fork, spawn, "
                             "forkserver, process pools) and merge their reports; "
                             "--no-children runs them plainly (default: on)")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="script.py [args]",
                        help="the script and its arguments")


def _version():
    try:
        return importlib.metadata.version("cassette")
    except importlib.metadata.PackageNotFoundError:     # a source tree on sys.path
        return "unknown (not installed)"


def build_parser():
    parser = _Parser(prog="python -m cassette", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"cassette {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="{trace,profile}")

    tracer = commands.add_parser(
        "trace", help="print the call tree of a run, as it happens",
        description="Print the call tree of a run: each call with its arguments and "
                    "result (to standard error, or --output).")
    tracer.add_argument("--depth", type=_positive, metavar="N",
                        help="show calls down to depth N only")
    tracer.add_argument("--include", action="append", default=[], metavar="GLOB",
                        help="show only calls whose module or qualified name matches "
                             "(repeatable)")
    tracer.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="hide calls whose module or qualified name matches, and "
                             "what they call (repeatable)")
    tracer.add_argument("--ops", action="store_true",
                        help="show operators, subscripts, attributes and iteration too")
    tracer.add_argument("--format", choices=("text", "json"), default="text",
                        help="an indented tree, or a JSON array of events (default: text)")
    _add_program_arguments(tracer)

    profiler = commands.add_parser(
        "profile", help="time every function and count every operation",
        description="Per function: calls, exclusive and inclusive time; and the "
                    "operation mix, operations counted by operand types.")
    profiler.add_argument("-s", "--sort", choices=tuple(profile.SORT_KEYS), default="cumtime",
                          help="sort the table by (default: cumtime)")
    profiler.add_argument("--ops", action=argparse.BooleanOptionalAction, default=True,
                          help="count the operation mix (default: on)")
    profiler.add_argument("--calibrate", action=argparse.BooleanOptionalAction, default=False,
                          help="measure what the hooks cost per call and operation, and "
                               "take it out of the times (an estimate: default off)")
    profiler.add_argument("-l", "--limit", type=_positive, metavar="N",
                          help="show the first N rows of the table (and of each "
                               "function's operation mix)")
    profiler.add_argument("--include", action="append", default=[], metavar="GLOB",
                          help="show only rows whose name or file matches (repeatable)")
    profiler.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                          help="hide rows whose name or file matches (repeatable)")
    profiler.add_argument("--format", choices=("text", "json", "chrome", "speedscope", "html"),
                          default="text",
                          help="cProfile's table and the mix, JSON, Chrome trace events "
                               "(Perfetto), speedscope, or an HTML flame graph (default: text)")
    _add_program_arguments(profiler)
    return parser


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def split_program(parser, argv):
    """``(cassette's arguments, the program's)``: everything from the
    script, ``-m module`` or ``-c code`` on is the program's (as for
    ``python`` and ``cProfile``) — ``-o``, ``-h``, ``--sort`` after it
    included.  The program's part starts with ``-m``/``-c`` and its value,
    or ``--`` and the script's path."""
    commands = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
                    None)
    index = 0
    while index < len(argv) and argv[index].startswith("-"):
        index += 1                      # options of the command line itself (--help …)
    if commands is None or index >= len(argv) or argv[index] not in commands.choices:
        return argv, []
    takes_value = {option for action in commands.choices[argv[index]]._actions
                   for option in action.option_strings if action.nargs != 0}
    index += 1
    while index < len(argv):
        token = argv[index]
        if token in ("-m", "-c"):
            return argv[:index], argv[index:index + 2] + ["--"] + argv[index + 2:]
        if token[:2] in ("-m", "-c") and not token.startswith("--"):     # -mjson.tool
            return argv[:index], [token[:2], token[2:], "--"] + argv[index + 1:]
        if token == "--" or not token.startswith("-") or token == "-":
            rest = argv[index + 1:] if token == "--" else argv[index:]
            return argv[:index], ["--"] + rest
        index += 2 if token in takes_value else 1
    return argv, []


def _program(options):
    if options.module is not None:
        return Program("module", options.module, options.args)
    if options.code is not None:
        return Program("code", options.code, options.args)
    arguments = options.args
    if not arguments:
        raise UsageError("missing the program to run: script.py, -m module or -c code")
    script, *args = arguments
    if script.startswith("-"):
        raise UsageError(f"unrecognized option {script!r} (options go before the script)")
    return Program("path", script, args)


def _open_output(options, default):
    if options.output is None:
        return default, False
    try:
        return open(options.output, "w", encoding="utf-8", buffering=1 << 20), True
    except OSError as error:
        raise UsageError(f"can't write {options.output!r}: {error.strerror}") from None


def _kept_descriptor(stream):
    """A duplicate of ``stream``'s file descriptor, for the report should
    the program close the stream; None when it has none."""
    try:
        return os.dup(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return None


def main(argv=None):
    parser = build_parser()
    try:
        ours, program_part = split_program(parser, sys.argv[1:] if argv is None else list(argv))
        if program_part[:1] in (["-m"], ["-c"]):
            # argparse takes the value; what follows the "--" is the program's.
            options = parser.parse_args(ours + program_part[:2])
            options.args = program_part[3:]
        else:
            options = parser.parse_args(ours)
            if program_part:
                options.args = program_part[1:]
        if options.command is None:
            raise UsageError("missing the command: trace or profile (see --help)")
        if (options.command == "profile" and options.format == "html"
                and importlib.util.find_spec("cassette.cli.flamegraph") is None):
            raise UsageError("the html format needs cassette.cli.flamegraph, "
                             "which this installation lacks")
        program = _program(options)
        default_output = sys.stderr if options.command == "trace" else sys.stdout
        out, owned = _open_output(options, default_output)
    except UsageError as error:
        sys.stderr.write(f"python -m cassette: error: {error}\n")
        raise SystemExit(2) from None

    settings = children.Settings(options.command, options.format, options.ops,
                                 getattr(options, "depth", None), options.include,
                                 options.exclude)
    if options.command == "trace":
        colour = (not owned and out.isatty() and not os.environ.get("NO_COLOR"))
        ctx, session = settings.make_tool(out, colour=colour)
    else:
        ctx, session = settings.make_tool(None, calibrated=options.calibrate)
    children.watch(settings, options.children, session)
    session.watch_exceptions()
    kept = None if owned or options.command != "profile" else _kept_descriptor(out)
    start = time.perf_counter()
    outcome = program.run(ctx)
    if children.in_forked_child():
        # A bare os.fork() of the program: the report is the parent's.
        outcome.conclude()
        return
    reports = children.finish()
    wall_time = time.perf_counter() - start
    session.finish(reports)
    if options.command == "profile":
        if out.closed and kept is not None:
            # The program closed the stream the report goes to (json.tool
            # closes sys.stdout): the report goes to the same file.
            out = open(kept, "w", encoding="utf-8", closefd=False)
        report = profile.Profile(session, program.name, wall_time,
                                 [(pid, data) for pid, kind, data in reports if kind == "profile"])
        report.row_filters = (tuple(options.include), tuple(options.exclude))
        try:
            report.write(out, options.format, options.sort, options.limit)
            out.flush()
        except BrokenPipeError:         # `… | head`: the reader has seen enough
            sys.stdout = None
    if owned:
        out.close()
    if kept is not None:
        os.close(kept)
    session.release()
    outcome.conclude()
