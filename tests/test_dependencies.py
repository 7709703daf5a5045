"""Every third-party module the package imports is declared in pyproject.toml, so that a fresh
``pip install .`` (or ``.[tvm]``) has it."""
from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# distribution name -> the top-level module it installs, where the two differ
MODULE_OF = {"scikit-learn": "sklearn", "pyyaml": "yaml", "apache-tvm": "tvm",
             "apache-tvm-ffi": "tvm_ffi"}


def imported_modules(package: Path) -> dict[str, set[str]]:
    """Top-level third-party modules imported anywhere in ``package`` (function bodies
    included), each with the files that import it."""
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != package.name:
                    found.setdefault(top, set()).add(str(path.relative_to(package.parent)))
    return found


def declared_modules(pyproject: Path) -> dict[str, set[str]]:
    """Top-level module -> where pyproject.toml declares it ("core" or the extra's name)."""
    project = tomllib.loads(pyproject.read_text())["project"]
    groups = {"core": project.get("dependencies", []), **project.get("optional-dependencies", {})}
    declared: dict[str, set[str]] = {}
    for group, requirements in groups.items():
        for requirement in requirements:
            dist = re.match(r"[A-Za-z0-9._-]+", requirement).group(0).lower().replace("_", "-")
            module = MODULE_OF.get(dist, dist.replace("-", "_"))
            declared.setdefault(module, set()).add(group)
    return declared


def undeclared(imported: dict[str, set[str]], declared: dict[str, set[str]]) -> list[str]:
    """One line per imported module that is not declared."""
    return [f"{module} (imported by {', '.join(sorted(files))})"
            for module, files in sorted(imported.items()) if module not in declared]


def test_every_imported_module_is_declared():
    missing = undeclared(imported_modules(REPO / "gbxfer"),
                         declared_modules(REPO / "pyproject.toml"))
    assert not missing, "imported but not declared in pyproject.toml: " + "; ".join(missing)


INTEGRATIONS = ("gbxfer/tvm/", "gbxfer/distributed.py", "gbxfer/cli/")


def test_only_the_integrations_import_extras_and_core_needs_no_extra():
    """The core installs with the core dependencies alone; TVM (the `tvm` extra) and Dask (the
    `dask` extra) are imported only by their integrations, gbxfer/tvm and
    gbxfer/distributed.py, and, lazily, by the CLI commands that drive them."""
    declared = declared_modules(REPO / "pyproject.toml")
    for module, files in imported_modules(REPO / "gbxfer").items():
        if "core" in declared.get(module, set()):
            continue
        outside = {f for f in files if not f.startswith(INTEGRATIONS)}
        assert not outside, f"{module} is not a core dependency but {sorted(outside)} import it"


def test_each_removed_declaration_is_named():
    imported = imported_modules(REPO / "gbxfer")
    declared = declared_modules(REPO / "pyproject.toml")
    assert len(set(imported) & set(declared)) >= 10
    for module in set(imported) & set(declared):
        without = {m: g for m, g in declared.items() if m != module}
        missing = undeclared(imported, without)
        assert len(missing) == 1 and missing[0].startswith(f"{module} (imported by gbxfer/")
