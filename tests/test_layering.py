"""The layering rules of the code (issue 33), read from every import statement (module level and inside functions):

* ``projects`` (the ground floor) imports no other app, and not ``config``;
* ``annotation`` imports neither ``scoring`` nor ``delphi``;
* the statistics (``core.stats``) import neither Django nor anything of the app beyond themselves;
* ``studies`` (the study archive) may import every app, and no app imports it;
* the LLM engine (``scoring.llm``) imports no job (judges, preference, generation, reports, jobs);
* no package imports another package's private names (``from x import _name``).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("projects", "annotation", "scoring", "delphi", "studies", "config")
JOBS = ("scoring.judges", "scoring.preference", "scoring.generation", "scoring.reports", "core.jobs")


def _modules(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package.replace(".", "/")).rglob("*.py") if "migrations" not in p.parts)


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, imported module, names taken from it) for every import in the file."""
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
            found.append((node.lineno, module, [alias.name for alias in node.names]))
    return found


def _owner(module: str) -> str:
    """The package a module belongs to for these rules: a job of scoring, scoring's engine or statistics, or an app."""
    for package in (*JOBS, "scoring.llm", "core.stats"):
        if module == package or module.startswith(package + "."):
            return package
    return module.split(".")[0]


def _under(module: str, packages) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def violations(package: str, forbidden) -> list[str]:
    return [f"{path.relative_to(ROOT)}:{line} imports {module}"
            for path in _modules(package) for line, module, _ in imports(path) if _under(module, forbidden)]


def test_projects_imports_no_other_app():
    assert violations("projects", ("annotation", "scoring", "delphi", "config")) == []


def test_annotation_imports_neither_scoring_nor_delphi():
    assert violations("annotation", ("scoring", "delphi")) == []


def test_statistics_import_neither_django_nor_the_app():
    assert violations("core.stats", ("django", "rest_framework", "celery", "projects", "annotation", "delphi",
                                        "config", "scoring.llm", *JOBS)) == []


def test_nothing_but_the_configuration_imports_the_study_archive():
    """``studies`` (the study archive, issue 36) sits on top: it reads every app, and no app depends on it."""
    assert [v for package in ("projects", "annotation", "scoring", "delphi")
            for v in violations(package, ("studies",))] == []


def test_engine_imports_no_job():
    assert violations("scoring.llm", JOBS) == []


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
    """A lazy import is still a dependency: projects/apps.py imports its token signals inside ``ready()``."""
    found = {module for _, module, _ in imports(ROOT / "projects" / "apps.py")}
    assert "projects.tokens" in found and "projects.roles" in found
