"""The study archive's file format: a zip laid out as an RO-Crate (``ro-crate-metadata.json``), its tables CSV files
described as Frictionless tabular data resources (``datapackage.json``), and ``manifest.json`` with the SHA-256 of
every other file. Reading an archive checks every hash first (:func:`open_archive`)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import stat
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


#: Limits of an archive this instance reads (docs/users/archive.md, "Archives that are refused"): a manifest larger
#: than this is refused before it is read (an export's manifest holds about 100 bytes per file: 5 KB for the demo).
MANIFEST_MAX_BYTES = 1 << 20
#: Entries (files and folders) in one archive; an export writes a few dozen (each Delphi or preference study adds a
#: handful).
MAX_ENTRIES = 10_000
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_DRIVE = re.compile(r"^[A-Za-z]:")


def entry_problem(name: str) -> str | None:
    """Why an entry name cannot be in an archive (None when it can): the name must be a relative path inside the
    archive's root, written with "/", without empty, "." or ".." parts or control characters."""
    if not name:
        return "has an empty name"
    if name.startswith(("/", "\\")) or _DRIVE.match(name):
        return "is an absolute path"
    if "\\" in name:
        return "has a backslash in its name (folders are separated by '/')"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        return "has a control character in its name"
    parts = name[:-1].split("/") if name.endswith("/") else name.split("/")
    if ".." in parts:
        return "leads outside the archive's root ('..')"
    if "" in parts or "." in parts:
        return "has an empty or '.' part in its path"
    return None


def _check_entries(zf: zipfile.ZipFile) -> set[str]:
    """Refuse an archive whose entries are not plain files and folders under its root, each named once; returns
    the files' names."""
    infos = zf.infolist()
    if len(infos) > MAX_ENTRIES:
        raise ArchiveError(f"The archive has {len(infos)} entries; at most {MAX_ENTRIES} are read.")
    seen: dict[str, str] = {}
    files: set[str] = set()
    for info in infos:
        name = info.filename
        problem = entry_problem(name)
        if problem:
            raise ArchiveError(f"Entry {name!r} {problem}: not a study archive's file.")
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise ArchiveError(f"Entry {name!r} is a symbolic link: an archive holds plain files only.")
        if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise ArchiveError(f"Entry {name!r} is not a plain file or folder.")
        folded = name.rstrip("/").casefold()
        if folded in seen:
            same = "twice" if seen[folded] == name else f"twice (also as {seen[folded]!r}, differing in case)"
            raise ArchiveError(f"Entry {name!r} is in the archive {same}: each file is named once.")
        seen[folded] = name
        if not info.is_dir():
            files.add(name)
    return files


def _read_manifest(zf: zipfile.ZipFile, path: str | Path) -> dict:
    """The manifest, read in bounded memory: refused unread when its declared size is over
    :data:`MANIFEST_MAX_BYTES`, and when more than that comes out of it (a declared size can lie)."""
    try:
        info = zf.getinfo(MANIFEST)
    except KeyError:
        raise ArchiveError(f"{path} has no {MANIFEST}: not a study archive.") from None
    limit = f"{MANIFEST_MAX_BYTES / (1 << 20):g} MiB"
    if info.file_size > MANIFEST_MAX_BYTES:
        raise ArchiveError(f"{MANIFEST} is {info.file_size:,} bytes; a manifest is at most {limit}: refused unread.")
    try:
        with zf.open(info) as fh:
            data = fh.read(MANIFEST_MAX_BYTES + 1)
    except (zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError) as exc:
        raise ArchiveError(f"{MANIFEST} cannot be read: {exc}") from None
    if len(data) > MANIFEST_MAX_BYTES:
        raise ArchiveError(f"{MANIFEST} holds more than {limit} (more than its declared {info.file_size:,} bytes): "
                           "refused.")
    try:
        manifest = json.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise ArchiveError(f"{MANIFEST} is not valid JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveError(f"{MANIFEST} does not describe a {FORMAT}.")
    version = manifest.get("format_version", 0)
    if not isinstance(version, int) or isinstance(version, bool):
        raise ArchiveError(f"{MANIFEST}'s format_version {version!r} is not a number.")
    if version > FORMAT_VERSION:
        raise ArchiveError(f"The archive is format version {version}; this instance reads version {FORMAT_VERSION} "
                           "and older.")
    listed = manifest.get("files")
    if not isinstance(listed, dict):
        raise ArchiveError(f"{MANIFEST} lists no files (its 'files' is not a mapping of names to SHA-256).")
    for name, digest in listed.items():
        problem = entry_problem(name)
        if problem:
            raise ArchiveError(f"{MANIFEST} lists {name!r}, which {problem}.")
        if name == MANIFEST:
            raise ArchiveError(f"{MANIFEST} lists itself.")
        if not isinstance(digest, str) or not _SHA256.match(digest):
            raise ArchiveError(f"{MANIFEST} gives {name!r} the SHA-256 {digest!r}, which is not 64 hex digits.")
    return manifest


def open_archive(path: str | Path) -> Archive:
    """Open an archive, refusing it (:class:`ArchiveError` naming the entry) before any table or figure is read
    unless every entry is a plain file or folder inside the archive's root, named once; the manifest is at most
    :data:`MANIFEST_MAX_BYTES` and read in bounded memory; every file the archive holds is in the manifest with the
    same SHA-256, and every file the manifest lists is there."""
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise ArchiveError(f"{path} is not a study archive (zip): {exc}") from None
    try:
        present = _check_entries(zf) - {MANIFEST}
        manifest = _read_manifest(zf, path)
        listed: dict[str, str] = manifest["files"]
        for name in sorted(present - set(listed)):
            raise ArchiveError(f"{name} is in the archive but not in its manifest.")
        for name in sorted(set(listed) - present):
            raise ArchiveError(f"{name} is in the manifest but missing from the archive.")
        for name in sorted(listed):
            digest = hashlib.sha256()
            try:
                with zf.open(name) as fh:
                    for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                        digest.update(chunk)
            except (zipfile.BadZipFile, OSError, NotImplementedError, RuntimeError) as exc:
                raise ArchiveError(f"{name} cannot be read: {exc}") from None
            if digest.hexdigest() != listed[name]:
                raise ArchiveError(f"{name} does not match the manifest's SHA-256: the file was changed after "
                                   "export.")
    except ArchiveError:
        zf.close()
        raise
    return Archive(zf, manifest)
