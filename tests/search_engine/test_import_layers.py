"""The house's imports run one way (issue 28): no import circle among the modules of
`search_engine/` and `knowledge/`, and inside the offline synthesizer
(`search_engine/synthesis/offline/`) no module imports one of a higher layer:
frontend → plan → writers → spaces → the synthesizer on top.

Imports are read with `ast` (nothing is imported), every import statement counted, those
inside functions too: a lazy import is still a tie between two files."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("search_engine", "knowledge")
OFFLINE = "search_engine.synthesis.offline"
# the offline synthesizer's layers, lowest first; a module outside them is the top
LAYERS = ("frontend", "plan", "writers", "spaces")


def module_files(repo: Path, roots=ROOTS) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under the roots."""
    out = {}
    for root in roots:
        for path in sorted((repo / root).rglob("*.py")):
            parts = list(path.relative_to(repo).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of the house that `name` imports: `from pkg import sub` counts as an import
    of `pkg.sub` when that is a module, else of `pkg`."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # `import a.b.c` of a name in a.b
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(repo: Path, roots=ROOTS) -> dict[str, set[str]]:
    modules = module_files(repo, roots)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every set of two or more modules that import each other in a loop (Tarjan's strongly
    connected components), each sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(start: str) -> None:
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(found)


def offline_layer(module: str) -> int | None:
    """0.. for the layers in LAYERS, len(LAYERS) for the top, None outside the synthesizer."""
    if module != OFFLINE and not module.startswith(OFFLINE + "."):
        return None
    first = module[len(OFFLINE) + 1:].split(".")[0]
    return LAYERS.index(first) if first in LAYERS else len(LAYERS)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """'a -> b' for every offline module that imports one of a higher layer."""
    out = []
    for name, targets in sorted(graph.items()):
        layer = offline_layer(name)
        if layer is None:
            continue
        for target in sorted(targets):
            their = offline_layer(target)
            if their is not None and their > layer:
                out.append(f"{name} ({_layer_name(layer)}) -> {target} ({_layer_name(their)})")
    return out


def _layer_name(layer: int) -> str:
    return LAYERS[layer] if layer < len(LAYERS) else "top"


# -- the house ------------------------------------------------------------------------------

def test_no_import_circle_in_search_engine_or_knowledge():
    found = circles(import_graph(REPO))
    assert found == [], "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_offline_synthesizer_imports_only_downward():
    graph = import_graph(REPO)
    assert any(offline_layer(name) == 0 for name in graph), "no frontend modules found"
    found = upward_imports(graph)
    assert found == [], "imports that run back up:\n" + "\n".join(found)


# -- the checks themselves, on a small house of their own -----------------------------------

def _house(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return import_graph(tmp_path)


OFFLINE_DIR = "search_engine/synthesis/offline"
EMPTY_PACKAGES = {f"{d}/__init__.py": "" for d in (
    "search_engine", "search_engine/synthesis", OFFLINE_DIR, f"{OFFLINE_DIR}/frontend",
    f"{OFFLINE_DIR}/plan", f"{OFFLINE_DIR}/writers", "knowledge")}


def test_a_lazy_import_closing_a_loop_is_a_circle(tmp_path):
    graph = _house(tmp_path, {
        **EMPTY_PACKAGES,
        "knowledge/a.py": "from knowledge.b import f\n",
        "knowledge/b.py": "def f():\n    from knowledge import a\n",
        "knowledge/c.py": "from . import a\n",
    })
    assert circles(graph) == [["knowledge.a", "knowledge.b"]]


def test_a_lower_layer_importing_a_higher_one_is_found(tmp_path):
    graph = _house(tmp_path, {
        **EMPTY_PACKAGES,
        f"{OFFLINE_DIR}/frontend/ir.py": "",
        f"{OFFLINE_DIR}/plan/classify.py": "from ..frontend import ir\n",
        f"{OFFLINE_DIR}/writers/rows.py":
            "from search_engine.synthesis.offline.plan.classify import x\n",
        f"{OFFLINE_DIR}/frontend/trace.py":
            "def f():\n    from search_engine.synthesis.offline.writers import rows\n",
        f"{OFFLINE_DIR}/synthesizer.py": "from search_engine.synthesis.offline.writers import rows\n",
    })
    assert circles(graph) == []
    assert upward_imports(graph) == [
        "search_engine.synthesis.offline.frontend.trace (frontend) -> "
        "search_engine.synthesis.offline.writers.rows (writers)"]
