"""The package's layout follows the pipeline: every import points down it, modules stay small."""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gbxfer"
# The pipeline, bottom up: a module may import its own layer and the ones below.
LAYERS = [
    ("errors", "_version", "config_files", "manifests"),
    ("records",),
    ("hardware",),
    ("splits", "metrics"),
    ("features",),
    ("model",),
    ("training",),
    ("transfer", "pruning", "study", "online"),
    ("tvm", "distributed"),  # integrations at the edge: TVM, Dask; the command line over all
    ("cli", "__main__"),
]
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}
MAX_LINES = 400


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.as_posix() != "__init__.py":  # the package's face re-exports every layer
            yield path, rel


def _layer(rel_parts) -> int:
    top = rel_parts[0].removesuffix(".py")
    assert top in LAYER_OF, f"gbxfer/{'/'.join(rel_parts)} is in no layer of LAYERS"
    return LAYER_OF[top]


def _imported(path: Path, rel: Path):
    """gbxfer modules imported by ``path``, as paths relative to the package."""
    package = list(rel.parent.parts)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)]
            target = base + (node.module.split(".") if node.module else [])
            names = [target] if node.module else [target + [a.name] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gbxfer."):
            names = [node.module.split(".")[1:]]
        elif isinstance(node, ast.Import):
            names = [a.name.split(".")[1:] for a in node.names if a.name.startswith("gbxfer.")]
        else:
            continue
        yield from (n for n in names if n)


def test_every_import_points_down_the_pipeline():
    upward = []
    for path, rel in _modules():
        own = _layer(rel.parts)
        for target in _imported(path, rel):
            if _layer(target) > own:
                upward.append(f"gbxfer/{rel} imports gbxfer.{'.'.join(target)}")
    assert not upward, "imports against the pipeline:\n" + "\n".join(upward)


def test_modules_stay_under_400_lines():
    long = {rel.as_posix(): n for path, rel in _modules()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_every_subpackage_is_installed():
    """``pip install .`` installs the packages pyproject.toml lists, not what is on disk."""
    import tomllib
    listed = set(tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(PACKAGE.parent).parts)
               for p in PACKAGE.rglob("__init__.py")}
    assert on_disk - listed == set(), f"not installed: {sorted(on_disk - listed)}"
