"""The docs' code names are real: every ``module.name`` the pages in
``docs/`` cite (```callables.remove_library_entries```,
```cassette.dispatch.Plan.compiled```) names something that exists, and
every ``module.py`` they cite is a file of the package."""

import importlib
import pathlib
import re

import cassette.escapes

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "cassette"
MODULES = ({path.stem for path in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
           | {f"cli.{path.stem}" for path in (PACKAGE / "cli").glob("*.py")})

#: Names the docs' examples give objects, which read like a module's: the
#: attributes cited through them are the object's.
VARIABLES = {"escapes": cassette.escapes.Escapes}

CITATION = re.compile(r"`(?:cassette\.)?((?:cli\.)?[a-z_]+)\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")


def citations():
    for page in sorted((ROOT / "docs").glob("*.md")):
        for match in CITATION.finditer(page.read_text(encoding="utf-8")):
            module, names = match.groups()
            if module in MODULES:
                yield page.name, module, names


def resolves(target, names):
    for name in names.split("."):
        if not hasattr(target, name):
            return False
        target = getattr(target, name)
    return True


def test_every_cited_name_exists():
    cited = list(citations())
    assert len(cited) > 50             # the pattern finds the citations at all
    missing = []
    for page, module, names in cited:
        if names == "py":
            found = (PACKAGE / (module.replace(".", "/") + ".py")).is_file()
        else:
            found = (resolves(importlib.import_module(f"cassette.{module}"), names)
                     or (module in VARIABLES and resolves(VARIABLES[module], names)))
        if not found:
            missing.append(f"{page}: {module}.{names}")
    assert missing == []


def test_a_name_that_does_not_exist_is_found():
    assert not resolves(importlib.import_module("cassette.entry"), "strip_library_frames")
    assert resolves(importlib.import_module("cassette.callables"), "remove_library_entries")
