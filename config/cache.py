"""The embedded mode's cache: Django's file cache with an atomic ``add``.

Django's ``FileBasedCache.add`` checks for the key, then writes it: two processes can both succeed. The app uses
``cache.add`` as a lock across processes (a dialogue-generation request in flight, login-failure counters), as it
is on Redis, so here the entry is linked into place with link(2), which fails when the file already exists.
"""

from __future__ import annotations

import os
import tempfile

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache


class FileCache(FileBasedCache):
    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None) -> bool:
        self._createdir()
        fname = self._key_to_file(key, version)
        self._cull()
        fd, tmp_path = tempfile.mkstemp(dir=self._dir)
        try:
            with open(fd, "wb") as handle:
                self._write_content(handle, timeout, value)
            for _ in range(2):
                try:
                    os.link(tmp_path, fname)
                    return True
                except FileExistsError:
                    # A live entry wins; an expired one is deleted by has_key, then linking is tried once more
                    # (if another process links first, this one loses, as it should).
                    if self.has_key(key, version):
                        return False
            return False
        finally:
            os.remove(tmp_path)
