"""A study archive checked against the standards it declares, as a reviewer's tools check it: Frictionless
(``datapackage.json`` validated as ``frictionless validate datapackage.json`` does, every row of every table) and
RO-Crate (the ``rocrate`` library loads ``ro-crate-metadata.json``; its declared version is the one
docs/users/archive.md names; the root dataset has a licence; every file the crate names is in the archive).

Used by the modules that build an archive once (tests/test_studies.py, tests/test_studies_roundtrip.py,
tests/test_studies_replicates.py)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "users" / "archive.md"


def unpack(archive: Path, folder: Path) -> Path:
    """The archive's files under ``folder`` (an archive the tests made: its names are safe)."""
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(folder)
    return folder


def frictionless_errors(folder: Path) -> list[str]:
    """Every error ``frictionless validate datapackage.json`` reports on the unpacked archive, as "resource: row
    N, field F: message" lines (none when it is valid)."""
    from frictionless import validate

    report = validate(str(folder / "datapackage.json"))
    errors = [f"package: {e.message}" for e in report.errors]
    for task in report.tasks:
        for error in task.errors:
            where = ", ".join(f"{k} {getattr(error, k)}" for k in ("row_number", "field_name")
                              if getattr(error, k, None) is not None)
            errors.append(f"{task.name}: {where}: {error.type}: {error.message}")
    return errors if errors or report.valid else ["invalid, without an error listed"]


def documented_crate_version() -> str:
    """The RO-Crate version docs/users/archive.md says the archive follows."""
    found = set(re.findall(r"RO-Crate (\d+\.\d+)", DOCS.read_text(encoding="utf-8")))
    assert len(found) == 1, f"docs/users/archive.md names RO-Crate versions {sorted(found)}: say one"
    return found.pop()


def crate_problems(folder: Path) -> list[str]:
    """What is wrong with the unpacked archive as an RO-Crate (empty when nothing is)."""
    from rocrate.rocrate import ROCrate

    problems = []
    crate = ROCrate(str(folder))  # raises when the metadata cannot be read as a crate
    declared = crate.metadata.get("conformsTo") or {}
    version = str(declared.get("@id", "") if isinstance(declared, dict) else declared).rsplit("/", 1)[-1]
    if version != documented_crate_version():
        problems.append(f"declares RO-Crate {version!r}, the docs say {documented_crate_version()!r}")
    context = crate.metadata.generate()["@context"]
    if f"/crate/{version}/context" not in str(context):
        problems.append(f"@context {context!r} is not RO-Crate {version}'s")
    license_ = crate.root_dataset.get("license")
    if not license_:
        problems.append("the root dataset has no license")
    files = {e.id for e in crate.data_entities}
    on_disk = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} - {"ro-crate-metadata.json"}
    if files - on_disk:
        problems.append(f"the crate names files the archive lacks: {sorted(files - on_disk)[:5]}")
    if on_disk - files:
        problems.append(f"files the crate does not describe: {sorted(on_disk - files)[:5]}")
    for key in ("name", "description", "datePublished"):
        if not crate.root_dataset.get(key):
            problems.append(f"the root dataset has no {key}")
    return problems
