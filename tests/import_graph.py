"""The import graph of repro/: every `import` and `from ... import` in each module, at any depth.

Used by test_layout.py to refuse import cycles and by claims/test_package.py for the claims' own imports.
An import inside a function counts like one at the top of the file; imports under `if TYPE_CHECKING:`
do not run, so they do not count. Run it (`python tests/import_graph.py`) to list any cycle.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def module_names(root: Path = REPO) -> dict[str, Path]:
    """'repro.claims.core' -> its file, for every module under repro/ (a package is its __init__.py)."""
    out = {}
    for path in sorted((root / "repro").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _imports(tree: ast.AST, module: str, is_package: bool):
    stack = [tree]
    while stack:
        node = stack.pop()
        if _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target
            yield from (f"{target}.{a.name}" for a in node.names)  # `from pkg import submodule`
        stack.extend(ast.iter_child_nodes(node))


@cache  # parsed once per test session; callers only read it
def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    """module -> the repro modules it imports (names that are not modules, e.g. functions, are dropped)."""
    modules = module_names(root)
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        targets = set(_imports(tree, name, path.name == "__init__.py"))
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    found = cycles(import_graph())
    for c in found:
        print(" <-> ".join(c))
    print(f"{len(found)} cycle(s) among {len(import_graph())} repro modules")
