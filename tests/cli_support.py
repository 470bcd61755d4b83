"""What the command-line tests share: running a program in a subprocess (which
inherits ``CASSETTE_PURE_PYTHON``), and counting its calls independently of
cassette, with ``sys.setprofile``."""

import json
import os
import signal
import subprocess
import sys
import textwrap

# Runs a script as __main__ under sys.setprofile and prints, as JSON, how
# many times each function of that script was called ("call" events of code
# whose file is the script; generator resumptions are "call" events too, so
# the programs counted here have no generators or comprehensions).
_COUNT_CALLS = """
import collections, json, runpy, sys
script = sys.argv[1]
counts = collections.Counter()
def profile(frame, event, arg):
    code = frame.f_code
    if event == "call" and code.co_filename == script and code.co_name != "<module>":
        counts[code.co_qualname if hasattr(code, "co_qualname") else code.co_name] += 1
sys.argv = sys.argv[1:]
sys.setprofile(profile)
try:
    runpy.run_path(script, run_name="__main__")
finally:
    sys.setprofile(None)
print(json.dumps(counts), file=sys.stderr)
"""


def run(args, cwd, stdin="", timeout=600):
    """Run Python with ``args``: (exit status, stdout, stderr).  A run still
    going after ``timeout`` seconds fails the test with the stacks of every
    process it made (each dumps them on SIGABRT: ``PYTHONFAULTHANDLER``)."""
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    process = subprocess.Popen([sys.executable, *args], cwd=cwd, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, start_new_session=True)
    try:
        stdout, stderr = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGABRT)
        except ProcessLookupError:      # the program ended; its children did not
            pass
        stdout, stderr = _rest_of_output(process)
        raise AssertionError(f"{args} still ran after {timeout} s; every process's stacks:\n"
                             f"{stderr}\n--- stdout:\n{stdout}") from None
    return process.returncode, stdout, stderr


def _rest_of_output(process):
    try:
        return process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        return process.communicate()


def write(tmp_path, name, source):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def setprofile_calls(script, cwd, *args):
    """Calls per qualified name of the functions of ``script``, counted by
    ``sys.setprofile`` in a plain run (class bodies excluded by the caller)."""
    code, _, err = run(["-c", _COUNT_CALLS, str(script), *args], cwd)
    assert code == 0, err
    return json.loads(err.splitlines()[-1])
