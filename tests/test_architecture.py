"""The core's dependencies point inward: rules never import policies or RL frameworks, and no
module of the core imports itself back through a circle.

The graph is read from the source (`ast`), every `import` and `from ... import` of a
`replicalab` module, at module level or inside a function alike: a circle through a deferred
import is still a circle a reader has to hold in their head.
"""

from __future__ import annotations

import ast
from pathlib import Path

import replicalab

ROOT = Path(replicalab.__file__).parent
FRONTS = ("envs", "baselines")  # the RL adapters and the runner, installed under replicalab
POLICIES = "replicalab.agents"
FRAMEWORKS = ("gymnasium", "pettingzoo", "torch", "ray", "openai")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _core_modules() -> dict[str, Path]:
    modules = {}
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).parts
        if relative[0] in FRONTS:
            continue
        modules[_module_name(path)] = path
    return modules


def _imports(path: Path, known: set[str]) -> set[str]:
    """The modules `path` imports: a `from package import name` counts `package.name` when that
    is a module, else `package`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in known else node.module)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _core_modules()
    known = set(modules)
    graph = {}
    for name, path in modules.items():
        graph[name] = {target for target in _imports(path, known) if target in known and target != name}
    return graph


def _find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a list of modules (first repeated last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state:
                circle = visit(target)
                if circle:
                    return circle
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            circle = visit(module)
            if circle:
                return circle
    return None


def test_the_graph_is_read() -> None:
    graph = _graph()
    assert "replicalab.episode" in graph and "replicalab.feasibility" in graph["replicalab.episode"]


def test_the_core_has_no_import_circle() -> None:
    assert _find_circle(_graph()) is None


def test_a_circle_is_found_when_there_is_one() -> None:
    assert _find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_circle({"a": {"b"}, "b": set()}) is None


def test_rules_do_not_import_policies() -> None:
    graph = _graph()
    rules = [name for name in graph if not (name == POLICIES or name.startswith(POLICIES + "."))]
    offenders = {name: sorted(t for t in graph[name] if t.startswith(POLICIES)) for name in rules}
    assert {name: targets for name, targets in offenders.items() if targets} == {}


def test_the_core_imports_no_rl_framework() -> None:
    modules = _core_modules()
    offenders = {
        name: sorted(i for i in _imports(path, set(modules)) if i.split(".")[0] in FRAMEWORKS)
        for name, path in modules.items()
    }
    assert {name: found for name, found in offenders.items() if found} == {}
