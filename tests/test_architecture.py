"""Dependencies point inward: rules never import policies or RL frameworks, the RL fronts never
import the baselines, and no module imports itself back through a circle.

The graph is read from the source (`ast`), every `import` and `from ... import` of a
`replicalab` module, at module level or inside a function alike: a circle through a deferred
import is still a circle a reader has to hold in their head. Module names are the installed ones:
packaging maps `replicalab.envs` onto envs/ and `replicalab.baselines` onto baselines/, so every
project import must resolve to a file of the tree through that mapping.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
POLICIES = "replicalab.agents"
FRAMEWORKS = ("gymnasium", "pettingzoo", "torch", "ray", "openai")


def _package_dirs() -> dict[str, Path]:
    """pyproject's mapping of import names to folders."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return {name: REPO / folder for name, folder in config["tool"]["setuptools"]["package-dir"].items()}


def _modules(package: str) -> dict[str, Path]:
    """Every module of the mapped `package`, by its installed name."""
    folder = _package_dirs()[package]
    modules = {}
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).with_suffix("").parts
        modules[".".join([package, *(parts[:-1] if parts[-1] == "__init__" else parts)])] = path
    return modules


def _core_modules() -> dict[str, Path]:
    return _modules("replicalab")


def _all_modules() -> dict[str, Path]:
    return {name: path for package in _package_dirs() for name, path in _modules(package).items()}


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


def _graph(modules: dict[str, Path] | None = None) -> dict[str, set[str]]:
    modules = _core_modules() if modules is None else modules
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
    assert "replicalab.episode" in graph and "replicalab.lab.feasibility" in graph["replicalab.episode"]


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


def test_every_project_import_of_the_fronts_resolves_to_a_file() -> None:
    modules = _all_modules()
    known = set(modules)
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    unresolved = {}
    for name, path in modules.items():
        if name.startswith(("replicalab.envs", "replicalab.baselines")):
            missing = sorted(
                target
                for target in _imports(path, known)
                if target.split(".")[0] == "replicalab" and target not in known and target not in packages
            )
            if missing:
                unresolved[name] = missing
    assert {"replicalab.envs.codec", "replicalab.baselines.cli"} <= known
    assert unresolved == {}


def test_the_whole_distribution_has_no_import_circle() -> None:
    assert _find_circle(_graph(_all_modules())) is None


def test_the_envs_never_import_the_baselines() -> None:
    graph = _graph(_all_modules())
    offenders = {
        name: sorted(t for t in targets if t.startswith("replicalab.baselines"))
        for name, targets in graph.items()
        if name.startswith("replicalab.envs")
    }
    assert {name: targets for name, targets in offenders.items() if targets} == {}


def test_no_function_outside_the_tests_runs_over_60_lines() -> None:
    """A function a reader can hold in one screen: the distribution, the benchmarks and the
    examples alike."""
    files = [*_all_modules().values(), *sorted((REPO / "benchmarks").glob("*.py"))]
    files += sorted((REPO / "examples").glob("*.py"))
    long = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 60:
                    long[f"{path.relative_to(REPO)}:{node.name}"] = length
    assert long == {}


def test_no_test_module_imports_another() -> None:
    tests = Path(__file__).resolve().parent
    offenders = {}
    for path in sorted(tests.glob("*.py")):
        found = _imports(path, set())
        pulled = sorted(name for name in found if name.startswith("tests.test_"))
        if pulled:
            offenders[path.name] = pulled
    assert offenders == {}


def test_the_evaluation_engine_never_imports_a_trainer() -> None:
    graph = _graph(_all_modules())
    offenders = {
        name: sorted(t for t in targets if t.startswith("replicalab.baselines.training"))
        for name, targets in graph.items()
        if name.startswith("replicalab.baselines.evaluation")
    }
    assert {name: targets for name, targets in offenders.items() if targets} == {}


def _folder(module: str, packages: set[str]) -> str:
    """The folder a module lives in, a package being its own; the core's ground-floor modules
    (`replicalab.episode`, `replicalab.prices`, ...) stand for themselves, since the rooms above
    them and the rules beside them are different floors of one package."""
    if module in packages:
        return module
    folder = module.rpartition(".")[0]
    return module if folder == "replicalab" else folder


def test_no_folder_imports_itself_back_through_a_circle() -> None:
    modules = _all_modules()
    packages = {name for name, path in modules.items() if path.name == "__init__.py"}
    folders: dict[str, set[str]] = {}
    for module, targets in _graph(modules).items():
        here = _folder(module, packages)
        folders.setdefault(here, set()).update(
            folder for target in targets if (folder := _folder(target, packages)) != here
        )
    assert _find_circle(folders) is None


def test_no_benchmark_imports_the_tests() -> None:
    known = set(_all_modules())
    offenders = {
        path.name: sorted(name for name in _imports(path, known) if name.split(".")[0] == "tests")
        for path in sorted((REPO / "benchmarks").glob("*.py"))
    }
    assert {name: found for name, found in offenders.items() if found} == {}
