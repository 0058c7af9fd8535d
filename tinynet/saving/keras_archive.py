"""The ``.keras`` archive and Keras's HDF5 weights file, read and written in memory.

A ``.keras`` file is a zip of ``metadata.json``, ``config.json`` and ``model.weights.h5``
(and, for adapted vocabulary layers, ``assets/<layer path>/vocabulary.txt``). Reading
never extracts anything to disk: the archive is read into memory (its size capped),
every member name is checked (no absolute paths, no ``..``), each member's declared
size is checked against a budget before it is read and its actual size while it is read
(a zip bomb stops at the budget). The HDF5 file is opened from bytes with ``h5py``; a
dataset is read only when its shape and dtype are the ones the model expects, so a
lying file cannot make tinynet allocate more than the model's own weights.
"""

from __future__ import annotations

import io
import os
import time
import zipfile
from typing import Any

import numpy as np

MEMBERS = ("metadata.json", "config.json", "model.weights.h5")
MAX_JSON_BYTES = 64 * 1024 * 1024
MAX_ARCHIVE_BYTES = 16 * 1024 ** 3
MAX_H5_BYTES = 16 * 1024 ** 3
#: All vocabulary assets (``assets/.../vocabulary.txt``) of one archive together (bytes).
MAX_ASSET_BYTES = 64 * 1024 * 1024
ASSET_SUFFIX = "/vocabulary.txt"
#: Keras's version whose file layout tinynet writes (the ``keras_version`` in metadata).
KERAS_VERSION = "3.15.1"


def require_h5py(owner: str) -> Any:
    """``h5py``, or an ImportError saying how to install it (the ``keras`` extra)."""
    try:
        import h5py
    except ImportError:
        raise ImportError(f"{owner}: reading and writing Keras files (.keras, .weights.h5) "
                          f"needs h5py; install it with pip install 'tinynet[keras]' (or pip "
                          f"install h5py), or save as .safetensors, which needs nothing "
                          f"extra") from None
    return h5py


def _member_budget(name: str) -> int:
    return MAX_H5_BYTES if name.endswith(".h5") else MAX_JSON_BYTES


def _check_member_name(name: str, where: str) -> None:
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or ".." in parts or (len(name) > 1 and name[1] == ":"):
        raise ValueError(f"{where}: archive member {name!r:.200} has a path outside the "
                         f"archive (absolute or with '..'); refusing the file")


def read_archive(path: str, where: str) -> dict[str, bytes]:
    """The members of the ``.keras`` zip at ``path`` that tinynet reads, as bytes.

    Raises:
        ValueError: not a zip, truncated or corrupt (CRC), a member name with ``..`` or an
            absolute path, a member larger than its budget (declared or actual), or
            ``config.json`` / ``model.weights.h5`` missing.
    """
    size = os.path.getsize(path)
    if size > MAX_ARCHIVE_BYTES:
        raise ValueError(f"{where} is {size} bytes, more than the {MAX_ARCHIVE_BYTES}-byte "
                         f"limit for a .keras archive")
    with open(path, "rb") as file:
        blob = file.read(MAX_ARCHIVE_BYTES + 1)
    try:
        archive = zipfile.ZipFile(io.BytesIO(blob))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{where} is not a .keras archive: not a zip file, or truncated "
                         f"({exc})") from None
    out: dict[str, bytes] = {}
    with archive:
        infos = archive.infolist()
        for info in infos:
            _check_member_name(info.filename, where)
        asset_bytes = 0
        for info in infos:
            if info.filename.startswith("assets/") and info.filename.endswith(ASSET_SUFFIX):
                asset_bytes += info.file_size  # the vocabularies, within one budget
                if asset_bytes > MAX_ASSET_BYTES:
                    raise ValueError(f"{where}: the archive's vocabulary assets declare more "
                                     f"than the {MAX_ASSET_BYTES}-byte limit (at "
                                     f"{info.filename!r:.200}); refused before reading them")
                out[info.filename] = _read_member(archive, info, MAX_ASSET_BYTES, where)
                continue
            if info.filename not in MEMBERS:
                continue  # anything else: never read, never extracted
            budget = _member_budget(info.filename)
            if info.file_size > budget:
                raise ValueError(f"{where}: archive member {info.filename!r} declares "
                                 f"{info.file_size} bytes, more than the {budget}-byte limit")
            out[info.filename] = _read_member(archive, info, budget, where)
    for name in ("config.json", "model.weights.h5"):
        if name not in out:
            raise ValueError(f"{where} is not a Keras model archive: it has no {name!r} "
                             f"(members: {sorted(i.filename for i in infos)[:10]})")
    return out


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int,
                 where: str) -> bytes:
    """A member's bytes, reading at most its declared size (and ``budget``) plus one."""
    limit = min(info.file_size, budget)
    try:
        with archive.open(info) as member:
            data = member.read(limit + 1)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError,
            RuntimeError) as exc:
        raise ValueError(f"{where}: archive member {info.filename!r} cannot be read, the "
                         f"archive is truncated or corrupt ({exc})") from None
    if len(data) > limit:
        raise ValueError(f"{where}: archive member {info.filename!r} inflates to more than "
                         f"its declared {info.file_size} bytes; refusing the file")
    return data


def write_archive(config: bytes, weights: bytes, metadata: bytes,
                  assets: dict[str, bytes] | None = None) -> bytes:
    """The ``.keras`` zip (stored, not compressed, as Keras writes it) as bytes; ``assets``
    maps ``assets/...`` member names to their bytes."""
    buffer = io.BytesIO()
    stamp = time.gmtime()[:6]
    members = [("metadata.json", metadata), ("config.json", config),
               ("model.weights.h5", weights), *sorted((assets or {}).items())]
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in members:
            archive.writestr(zipfile.ZipInfo(name, date_time=stamp), data)
    return buffer.getvalue()


# -- HDF5 ------------------------------------------------------------------------------------
def write_h5(groups: list[tuple[str, str, list[np.ndarray]]], owner: str,
             named: dict[str, dict[str, np.ndarray]] | None = None) -> bytes:
    """An HDF5 file in Keras's layout: for each ``(path, name, arrays)`` a group
    ``<path>/vars`` (attribute ``name``) holding datasets ``0``, ``1``, ..., plus the
    datasets ``named[path]`` maps by name (a lookup's ``idf_weights``)."""
    h5py = require_h5py(owner)
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as file:
        for path, name, arrays in groups:
            group = file.require_group(f"{path}/vars" if path else "vars")
            group.attrs["name"] = name
            for i, arr in enumerate(arrays):
                group.create_dataset(str(i), data=arr)
            for key, arr in (named or {}).get(path, {}).items():
                group.create_dataset(key, data=arr)
    return buffer.getvalue()


class H5Reader:
    """Reads Keras's ``<path>/vars/<i>`` datasets from HDF5 bytes, each checked against
    the shape the model expects before it is read."""

    def __init__(self, data: bytes | str, where: str, owner: str) -> None:
        h5py = require_h5py(owner)
        self.where = where
        try:
            self.file = h5py.File(io.BytesIO(data) if isinstance(data, bytes) else data, "r")
        except (OSError, ValueError) as exc:
            raise ValueError(f"{where}: the weights are not a valid HDF5 file ({exc})") \
                from None

    def __enter__(self) -> "H5Reader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.file.close()

    def count(self, path: str) -> int:
        """How many numbered datasets ``<path>/vars`` holds (0 when the group is absent;
        named ones, such as ``idf_weights``, are read by name)."""
        group = self.file.get(f"{path}/vars" if path else "vars")
        if group is None:
            return 0
        if not hasattr(group, "keys"):
            raise ValueError(f"{self.where}: {path}/vars in the weights file is not a group")
        return sum(1 for key in group.keys() if key.isdigit())

    def read(self, path: str, index: int | str, shape: tuple, kind: str = "f") -> np.ndarray:
        """Dataset ``<path>/vars/<index>`` as float32 (``kind="f"``) or int64 (``"i"``),
        after checking it exists with exactly ``shape`` and a numeric dtype."""
        key = f"{path}/vars/{index}" if path else f"vars/{index}"
        dataset = self.file.get(key)
        if dataset is None or not hasattr(dataset, "shape"):
            raise ValueError(f"{self.where}: the weights file has no dataset {key!r}")
        if tuple(dataset.shape) != tuple(shape):
            raise ValueError(f"{self.where}: dataset {key!r} has shape {tuple(dataset.shape)}, "
                             f"expected {tuple(shape)}")
        if dataset.dtype.kind not in "fiu" or dataset.dtype.itemsize > 8:
            raise ValueError(f"{self.where}: dataset {key!r} has dtype {dataset.dtype}, "
                             f"expected a float or integer type")
        try:
            arr = dataset[()]
        except (OSError, ValueError, TypeError) as exc:
            raise ValueError(f"{self.where}: dataset {key!r} cannot be read ({exc})") from None
        arr = np.asarray(arr)
        if kind == "i":
            return arr.astype(np.int64)
        return np.array(arr, dtype=np.float32, order="C")  # 0-d kept (ascontiguousarray: 1-d)
