"""The study archive's file format: a zip laid out as an RO-Crate (``ro-crate-metadata.json``), its tables CSV files
described as Frictionless tabular data resources (``datapackage.json``), and ``manifest.json`` with the SHA-256 of
every other file. Reading an archive checks every hash first (:func:`open_archive`)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "minicex-study-archive"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CRATE_METADATA = "ro-crate-metadata.json"
DATAPACKAGE = "datapackage.json"
#: The RO-Crate version of ro-crate-metadata.json (the one the ``rocrate`` package writes; docs/users/archive.md).
RO_CRATE_VERSION = "1.3"

# Fields of a table: name -> Table Schema type ("string", "integer", "number", "boolean", "datetime", "object" for a
# JSON object, "array" for a JSON array).
Schema = list[tuple[str, str]]


class ArchiveError(ValueError):
    """An archive that cannot be read or loaded; the message names the file (and row) at fault."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cell(value: Any) -> str:
    """A value as a CSV cell: JSON for lists and dicts, "" for None, lower-case booleans."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


@dataclass
class Table:
    """One CSV table of the archive and its Frictionless schema."""

    path: str
    title: str
    schema: Schema
    rows: int = 0


@dataclass
class Writer:
    """Writes an archive's files into a zip (deflated), hashing each as it goes."""

    zf: zipfile.ZipFile
    hashes: dict[str, str] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)
    descriptions: dict[str, str] = field(default_factory=dict)

    def write_bytes(self, path: str, data: bytes, description: str = "") -> None:
        self.zf.writestr(path, data)
        self.hashes[path] = sha256_bytes(data)
        if description:
            self.descriptions[path] = description

    def write_json(self, path: str, value: Any, description: str = "") -> None:
        self.write_bytes(path, json.dumps(value, indent=1, ensure_ascii=False, sort_keys=True,
                                          default=str).encode("utf-8"), description)

    def write_text(self, path: str, text: str, description: str = "") -> None:
        self.write_bytes(path, text.encode("utf-8"), description)

    def write_table(self, path: str, title: str, schema: Schema, rows: Iterable[dict[str, Any]]) -> Table:
        """A CSV table streamed into the zip (a 643,200-label table is never held as one string)."""
        digest = hashlib.sha256()
        names = [name for name, _ in schema]
        count = 0
        with self.zf.open(path, "w", force_zip64=True) as raw:
            buffer = io.StringIO()
            out = csv.writer(buffer, lineterminator="\n")

            def flush() -> None:
                data = buffer.getvalue().encode("utf-8")
                raw.write(data)
                digest.update(data)
                buffer.seek(0)
                buffer.truncate()

            out.writerow(names)
            for row in rows:
                out.writerow([cell(row.get(name)) for name in names])
                count += 1
                if count % 5000 == 0:
                    flush()
            flush()
        self.hashes[path] = digest.hexdigest()
        table = Table(path, title, schema, count)
        self.tables.append(table)
        self.descriptions[path] = title
        return table


def datapackage(tables: list[Table], name: str) -> dict:
    """The Frictionless data package (Data Package v1) describing every table."""
    return {"profile": "tabular-data-package", "name": name, "resources": [{
        "name": Path(t.path).stem.replace("_", "-"), "path": t.path, "profile": "tabular-data-resource",
        "title": t.title, "format": "csv", "mediatype": "text/csv", "encoding": "utf-8",
        "schema": {"fields": [{"name": n, "type": k} for n, k in t.schema], "missingValues": [""]},
    } for t in tables]}


@dataclass
class Archive:
    """An archive whose every file matched its manifest; tables are read on demand."""

    zf: zipfile.ZipFile
    manifest: dict

    def json(self, path: str) -> Any:
        try:
            return json.loads(self.zf.read(path).decode("utf-8"))
        except KeyError:
            raise ArchiveError(f"The archive has no {path}.") from None

    def text(self, path: str) -> str:
        return self.zf.read(path).decode("utf-8")

    def has(self, path: str) -> bool:
        return path in self.manifest["files"]

    def rows(self, path: str) -> Iterator[tuple[int, dict[str, str]]]:
        """(line number, row) of a CSV table."""
        if not self.has(path):
            return
        with self.zf.open(path) as raw:
            reader = csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8", newline=""))
            yield from enumerate(reader, start=2)


def open_archive(path: str | Path) -> Archive:
    """Open an archive, refusing it unless every file it holds is in the manifest with the same SHA-256 and every
    file the manifest lists is there."""
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ArchiveError(f"{path} is not a study archive (zip): {exc}") from None
    try:
        manifest = json.loads(zf.read(MANIFEST).decode("utf-8"))
    except KeyError:
        raise ArchiveError(f"{path} has no {MANIFEST}: not a study archive.") from None
    except ValueError as exc:
        raise ArchiveError(f"{MANIFEST} is not valid JSON: {exc}") from None
    if manifest.get("format") != FORMAT:
        raise ArchiveError(f"{MANIFEST} does not describe a {FORMAT}.")
    if manifest.get("format_version", 0) > FORMAT_VERSION:
        raise ArchiveError(f"The archive is format version {manifest['format_version']}; this instance reads "
                           f"version {FORMAT_VERSION} and older.")
    listed: dict[str, str] = manifest.get("files") or {}
    present = {name for name in zf.namelist() if not name.endswith("/")} - {MANIFEST}
    for name in sorted(present - set(listed)):
        raise ArchiveError(f"{name} is in the archive but not in its manifest.")
    for name in sorted(set(listed) - present):
        raise ArchiveError(f"{name} is in the manifest but missing from the archive.")
    for name in sorted(listed):
        digest = hashlib.sha256()
        with zf.open(name) as fh:
            for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                digest.update(chunk)
        if digest.hexdigest() != listed[name]:
            raise ArchiveError(f"{name} does not match the manifest's SHA-256: the file was changed after export.")
    return Archive(zf, manifest)
