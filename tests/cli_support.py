"""What the command-line tests share: running a program in a subprocess (which
inherits ``CASSETTE_PURE_PYTHON``), and counting its calls independently of
cassette, with ``sys.setprofile``."""

import json
import os
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


def run(args, cwd, stdin=""):
    result = subprocess.run([sys.executable, *args], cwd=cwd, input=stdin, capture_output=True,
                            text=True, env=dict(os.environ), timeout=600)
    return result.returncode, result.stdout, result.stderr


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
