"""The floors of the code, read from every import statement (module level and inside functions); every arrow points
down (docs/architecture.md draws them):

* ``projects`` (the ground floor) imports no other app;
* ``core`` (the shared floor: background jobs, stored figures, the site's infrastructure, pure statistics) imports
  only ``projects``; what it needs from the floors above is registered with it (job handlers, the figures that follow
  a change, health details, reconciler hooks, the Celery app), never imported;
* the statistics (``core.stats``) import neither Django nor anything of the app beyond themselves;
* ``annotation`` imports only ``projects`` and ``core``;
* ``delphi`` imports no package of ``scoring``, and ``scoring`` none of ``delphi``;
* the LLM engine (``scoring.llm``) imports no job (judges, preference, generation, reports, background jobs);
* ``studies`` (the study archive) may import every app, and no app imports it;
* ``config`` (settings, URLs, the Celery app, the launcher) is imported by no app;
* no cycle between packages (each of ``core``'s and ``scoring``'s packages counts as one);
* no package imports another package's private names (``from x import _name``).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("projects", "core", "annotation", "scoring", "delphi", "studies", "config")
SHARED = ("core.jobs", "core.stats", "core.site")
JOBS = ("scoring.judges", "scoring.preference", "scoring.generation", "scoring.reports")
PACKAGES = (*SHARED, *JOBS, "scoring.llm")


def _modules(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package.replace(".", "/")).rglob("*.py") if "migrations" not in p.parts)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    path = ROOT / dotted.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names taken from it) for every import in the file; ``from core import stats`` counts
    as an import of ``core.stats``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module_name(path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative import: resolve against this package
                base = here.split(".")
                base = base[:len(base) - node.level + (1 if path.name == "__init__.py" else 0)]
                module = ".".join([*base, module] if module else base)
            names = [alias.name for alias in node.names]
            submodules = [name for name in names if module.split(".")[0] in APPS and _is_module(f"{module}.{name}")]
            found.extend((node.lineno, f"{module}.{name}", []) for name in submodules)
            if len(submodules) < len(names):
                found.append((node.lineno, module, [name for name in names if name not in submodules]))
    return found


def _owner(module: str) -> str:
    """The package a module belongs to for these rules: one of core's or scoring's packages, or an app."""
    for package in PACKAGES:
        if module == package or module.startswith(package + "."):
            return package
    return module.split(".")[0]


def _under(module: str, packages) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def violations(package: str, forbidden) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line} imports {module}"
            for path in _modules(package) for line, module, _ in imports(path) if _under(module, forbidden)]


def test_projects_imports_no_other_app():
    assert violations("projects", ("core", "annotation", "scoring", "delphi", "studies", "config")) == []


def test_the_shared_floor_imports_only_the_ground_floor():
    assert violations("core", ("annotation", "scoring", "delphi", "studies", "config")) == []


def test_statistics_import_neither_django_nor_the_app():
    assert violations("core.stats", ("django", "rest_framework", "celery", "projects", "core.jobs", "core.site",
                                     "annotation", "scoring", "delphi", "studies", "config")) == []


def test_annotation_imports_only_the_floors_below():
    assert violations("annotation", ("scoring", "delphi", "studies", "config")) == []


def test_delphi_and_scoring_keep_to_their_rooms():
    assert violations("delphi", ("scoring",)) == []
    assert violations("scoring", ("delphi",)) == []


def test_engine_imports_no_job():
    assert violations("scoring.llm", (*JOBS, "core.jobs")) == []


def test_nothing_but_the_configuration_imports_the_study_archive():
    """``studies`` (the study archive) sits on top: it reads every app, and no app depends on it."""
    assert [v for package in ("projects", "core", "annotation", "scoring", "delphi")
            for v in violations(package, ("studies",))] == []


def test_nothing_imports_the_configuration():
    """``config`` sits above every app: it imports them (settings, URLs, the Celery app registering itself with
    ``core.site.health``), and none imports it."""
    assert [v for package in APPS if package != "config" for v in violations(package, ("config",))] == []


def package_graph() -> dict[str, set[str]]:
    """Package -> the packages it imports (core's and scoring's packages each count as one)."""
    graph: dict[str, set[str]] = {}
    for app in APPS:
        for path in _modules(app):
            owner = _owner(_module_name(path))
            targets = graph.setdefault(owner, set())
            targets.update(_owner(module) for _, module, _ in imports(path)
                           if _under(module, APPS) and _owner(module) != owner)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_package_cycle():
    assert cycles(package_graph()) == []


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_package_imports_another_packages_private_names():
    found = []
    for package in APPS:
        for path in _modules(package):
            owner = _owner(_module_name(path))
            for line, module, names in imports(path):
                if not _under(module, APPS) or _owner(module) == owner:
                    continue
                private = [n for n in names if n.startswith("_") and not n.startswith("__")]
                if private or any(part.startswith("_") and not part.startswith("__") for part in module.split(".")):
                    found.append(f"{path.relative_to(ROOT)}:{line} takes {private or module} from {module}")
    assert found == []


def test_the_scan_reads_imports_inside_functions():
    """A lazy import is still a dependency: projects/apps.py imports its token signals inside ``ready()``, and
    delphi's consensus imports the statistics inside its functions (``from core import stats``)."""
    found = {module for _, module, _ in imports(ROOT / "projects" / "apps.py")}
    assert "projects.tokens" in found and "projects.roles" in found
    assert "core.stats" in {module for _, module, _ in imports(ROOT / "delphi" / "consensus.py")}
