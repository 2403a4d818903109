"""Run inside the image's virtual environment (`python -I`, so that tests/ is not on the path):
does every module of the wheel import, and is every module its code imports there?

Printed as JSON: `unimportable` (module: error), `missing` (an imported name: the modules that
import it). Only the runtime dependencies are installed, so a missing package, a dependency not
declared, or a module of ours the wheel left out shows here. Names in `OPTIONAL` (extras) may be
missing; the test checks which modules import them.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import pkgutil
import sys
from pathlib import Path

ROOTS = sys.argv[1].split(",")


def _modules() -> list[tuple[str, Path]]:
    found = []
    for root in ROOTS:
        package = importlib.import_module(root)
        if package.__file__ is None:
            raise SystemExit(f"{root}: not in the image (a namespace package found instead)")
        found.append((root, Path(package.__file__ or "")))
        for info in pkgutil.walk_packages(package.__path__, prefix=root + "."):
            spec = importlib.util.find_spec(info.name)
            if spec is not None and spec.origin:
                found.append((info.name, Path(spec.origin)))
    return found


def _imported(path: Path) -> set[str]:
    """Modules imported anywhere in the file (in functions too), except under `if TYPE_CHECKING`."""
    names: set[str] = set()
    pending: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            pending.extend(node.orelse)
            continue
        pending.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def _resolvable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def main() -> None:
    unimportable, missing = {}, {}
    for name, path in _modules():
        if not name.endswith("__main__"):
            try:
                importlib.import_module(name)
            except Exception as exc:  # report every failure, not the first
                unimportable[name] = f"{type(exc).__name__}: {exc}"
        for imported in sorted(_imported(path)):
            if not _resolvable(imported):
                missing.setdefault(imported, []).append(name)
    print(json.dumps({"unimportable": unimportable, "missing": missing}))


main()
