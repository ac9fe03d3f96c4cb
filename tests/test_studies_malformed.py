"""Malformed study archives are refused by ``verify_study`` and ``import_study`` before any table or figure is read,
with a message naming the entry: entries outside the archive's root, absolute paths, symbolic links, names given
twice, a manifest over its size limit (refused unread), files the manifest does not list and listed files that are
missing. Each case is a small zip made here whose manifest lists every file with its true SHA-256, so that nothing
but the case itself can be the reason for the refusal."""

from __future__ import annotations

import hashlib
import json
import stat
import warnings
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from studies.archive import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    MANIFEST_MAX_BYTES,
    MAX_ENTRIES,
    ArchiveError,
    open_archive,
)

GOOD = {"study.json": b'{"project": "tiny"}', "data/labels.csv": b"campaign,external_id,rater,item,value\n"}


def _manifest(files: dict[str, bytes], **extra) -> bytes:
    listed = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    return json.dumps({"format": FORMAT, "format_version": FORMAT_VERSION, "algorithm": "sha256",
                       "files": listed, **extra}).encode()


def _zip(path: Path, entries: list[tuple[str | zipfile.ZipInfo, bytes]], manifest: bytes | None = None,
         listed: dict[str, bytes] | None = None, with_manifest: bool = True) -> Path:
    """A zip of ``entries`` (names or ZipInfos) and a manifest listing ``listed`` (default: every entry) with their
    true SHA-256."""
    if manifest is None:
        names = {(e.filename if isinstance(e, zipfile.ZipInfo) else e): data for e, data in entries}
        manifest = _manifest(listed if listed is not None else names)
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns of a duplicate name: that is the case
        for entry, data in entries:
            zf.writestr(entry, data)
        if with_manifest:
            zf.writestr(MANIFEST, manifest)
    return path


def _good_entries() -> list[tuple[str, bytes]]:
    return list(GOOD.items())


def _symlink(name: str, target: str) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.create_system = 3  # Unix: the mode bits say what the entry is
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return (info, target.encode())


CASES = {
    "parent folder": (lambda p: _zip(p, _good_entries() + [("../../evil.sh", b"rm -rf ~")]),
                      "'../../evil.sh' leads outside the archive's root"),
    "parent folder inside a path": (lambda p: _zip(p, _good_entries() + [("data/../../x.csv", b"a\n")]),
                                    "'data/../../x.csv' leads outside the archive's root"),
    "absolute path": (lambda p: _zip(p, _good_entries() + [("/etc/cron.d/evil", b"* * * * * root sh")]),
                      "'/etc/cron.d/evil' is an absolute path"),
    "drive letter": (lambda p: _zip(p, _good_entries() + [("C:/Windows/evil.bat", b"del")]),
                     "'C:/Windows/evil.bat' is an absolute path"),
    "backslashes": (lambda p: _zip(p, _good_entries() + [("data\\..\\..\\evil.txt", b"x")]),
                    "'data\\\\..\\\\..\\\\evil.txt' has a backslash"),
    "empty part": (lambda p: _zip(p, _good_entries() + [("data//x.csv", b"a\n")]),
                   "'data//x.csv' has an empty or '.' part"),
    "dot part": (lambda p: _zip(p, _good_entries() + [("./data/x.csv", b"a\n")]),
                 "'./data/x.csv' has an empty or '.' part"),
    "control character": (lambda p: _zip(p, _good_entries() + [("data/x\x1b[2J.csv", b"a\n")]),
                          "'data/x\\x1b[2J.csv' has a control character"),
    "symbolic link": (lambda p: _zip(p, _good_entries() + [_symlink("data/link.csv", "/etc/passwd")]),
                      "'data/link.csv' is a symbolic link"),
    "name given twice": (lambda p: _zip(p, _good_entries() + [("data/labels.csv", b"other,rows\n")]),
                         "'data/labels.csv' is in the archive twice"),
    "names differing in case": (lambda p: _zip(p, _good_entries() + [("data/Labels.csv", b"a\n")]),
                                "'data/Labels.csv' is in the archive twice (also as 'data/labels.csv'"),
    "manifest over its limit": (lambda p: _zip(p, _good_entries(), manifest=_manifest(GOOD)[:-1] + b" " * (
        MANIFEST_MAX_BYTES) + b"}"), f"manifest.json is {MANIFEST_MAX_BYTES + len(_manifest(GOOD)):,} bytes"),
    "file the manifest does not list": (lambda p: _zip(p, _good_entries() + [("data/extra.csv", b"a\n")],
                                                       listed=GOOD),
                                        "data/extra.csv is in the archive but not in its manifest"),
    "listed file missing": (lambda p: _zip(p, _good_entries(), listed={**GOOD, "data/gone.csv": b"a\n"}),
                            "data/gone.csv is in the manifest but missing from the archive"),
    "manifest naming a path outside": (lambda p: _zip(p, _good_entries(), listed={**GOOD, "../up.csv": b"a\n"}),
                                       "manifest.json lists '../up.csv', which leads outside the archive's root"),
    "manifest without hashes": (lambda p: _zip(p, _good_entries(), manifest=json.dumps({
        "format": FORMAT, "format_version": FORMAT_VERSION, "files": {"study.json": "x" * 64}}).encode()),
                                "manifest.json gives 'study.json' the SHA-256 'xxxx"),
    "too many entries": (lambda p: _zip(p, _good_entries() + [(f"data/{n}.csv", b"") for n in range(MAX_ENTRIES)]),
                         f"has {MAX_ENTRIES + 3} entries; at most {MAX_ENTRIES}"),
    "no manifest": (lambda p: _zip(p, _good_entries(), with_manifest=False), "has no manifest.json"),
}


def test_a_well_formed_small_archive_opens(tmp_path):
    """The control: the same small zip without a malformed entry passes every check."""
    archive = open_archive(_zip(tmp_path / "good.zip", _good_entries()))
    assert sorted(archive.manifest["files"]) == sorted(GOOD)
    folder = _zip(tmp_path / "folders.zip", [("data/", b"")] + _good_entries(), listed=GOOD)
    assert sorted(open_archive(folder).manifest["files"]) == sorted(GOOD)  # a folder entry is fine


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_malformed_archive_is_refused_naming_the_entry(case, tmp_path):
    make, message = CASES[case]
    path = make(tmp_path / "case.zip")
    with pytest.raises(ArchiveError) as refused:
        open_archive(path)
    assert message in str(refused.value)


def test_verify_and_import_refuse_before_reading_anything(db, tmp_path, monkeypatch):
    """Both commands stop at the check: no table is read, no project is made, the message names the entry."""
    from projects.models import Project
    from studies import archive as archive_module

    def no_reading(*args, **kwargs):
        raise AssertionError("a table was read from a refused archive")

    monkeypatch.setattr(archive_module.Archive, "rows", no_reading)
    monkeypatch.setattr(archive_module.Archive, "json", no_reading)
    path = CASES["parent folder"][0](tmp_path / "zip-slip.zip")
    projects = Project.objects.count()
    with pytest.raises(CommandError, match=r"Refused: Entry '\.\./\.\./evil\.sh' leads outside"):
        call_command("verify_study", str(path))
    with pytest.raises(CommandError, match=r"Entry '\.\./\.\./evil\.sh' leads outside"):
        call_command("import_study", str(path), "--project", "Should not exist")
    assert Project.objects.count() == projects


def test_a_manifest_over_the_limit_is_refused_unread(tmp_path, monkeypatch):
    """The manifest's declared size decides: nothing of an oversized manifest is decompressed."""
    path = CASES["manifest over its limit"][0](tmp_path / "padded.zip")
    opened = []
    real_open = zipfile.ZipFile.open

    def counting_open(self, name, *args, **kwargs):
        opened.append(name.filename if isinstance(name, zipfile.ZipInfo) else name)
        return real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", counting_open)
    with pytest.raises(ArchiveError, match="refused unread"):
        open_archive(path)
    assert opened == []
