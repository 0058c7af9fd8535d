"""The file itself: safetensors reading with every check a hostile file needs, and
atomic writes (a temporary file in the target folder, fsynced, then renamed)."""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import stat
from typing import Any

import numpy as np

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


FORMAT = "tinynet"
FORMAT_VERSION = 1
MAX_HEADER_BYTES = 100 * 1024 * 1024
MAX_JSON_DEPTH = 64
OPTIMIZER_PREFIX = "optimizer/"
# a config may ask for at most this many weight scalars beyond those the file holds (so a
# small file cannot make load_model allocate much more memory than its own size)
WEIGHT_SLACK = 1 << 20
# an array a load allocates for a moment (a call() layer's trial batch) may hold this many
# values, or the budget above when that is larger
SCRATCH_VALUES = 1 << 25
# a model file may hold at most this many layers, layer calls and call inputs (each counted
# over the model and every model inside it), and nest models at most MAX_NESTING deep
MAX_LAYERS = 100_000
MAX_NESTING = 16
_DTYPE_SIZES = {"F64": 8, "F32": 4, "F16": 2, "I64": 8, "U64": 8, "I32": 4, "U32": 4,
                "I16": 2, "U16": 2, "I8": 1, "U8": 1, "BOOL": 1, "C64": 8}

#: The file names ``save`` and ``ModelCheckpoint`` write: tinynet's format, or a Keras 3
#: archive (the ``keras`` extra).
SUFFIXES = (".safetensors", ".keras")
#: The file names ``save_weights`` writes: tinynet's format, or Keras's weights file.
WEIGHTS_SUFFIXES = (".safetensors", ".weights.h5")


def fspath(path: Any, owner: str) -> str:
    """``path`` as a str; a ``TypeError`` for another type, a ``ValueError`` for a path
    that names no file (``""``, or one ending in a separator)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{owner}: path must be a str or os.PathLike, got {type(path).__name__}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"{owner}: path must be a str or os.PathLike of a str, got "
                        f"{type(text).__name__}: {text!r:.80}")
    if not text:
        raise ValueError(f"{owner}: path must name a file, got an empty string ''")
    if not os.path.basename(text):
        raise ValueError(f"{owner}: path must name a file, got {text!r}, which ends in a "
                         f"separator (a folder)")
    return text

def check_suffix(path: str, owner: str, arg: str = "path", weights: bool = False) -> str:
    """``path`` when it ends in one of :data:`SUFFIXES` (:data:`WEIGHTS_SUFFIXES` with
    ``weights``): the one list of the names ``save``, ``save_weights`` and
    ``ModelCheckpoint`` accept. Else a ValueError naming the path, the suffixes and a path
    that would do (a legacy Keras ``.h5`` name is not silently written as another format)."""
    suffixes = WEIGHTS_SUFFIXES if weights else SUFFIXES
    if path.endswith(suffixes):
        return path
    root, ext = os.path.splitext(path)
    stem = root if ext and not set("{}") & set(ext) else path
    what = "Keras's weights file" if weights else "a Keras 3 archive"
    raise ValueError(f"{owner}: {arg} must end in {' or '.join(suffixes)} (tinynet's format, "
                     f"or {what}; Keras's legacy .h5 is not supported), got {path!r}; e.g. "
                     f"{stem + suffixes[0]!r}")

def _named(exc: OSError, path: str, doing: str, owner: str) -> OSError:
    """``exc`` (of the same type and errno) told as the user's ``path``: an error that
    names the temporary file of an atomic write, or none, is no help."""
    folder = os.path.dirname(path) or "."
    if isinstance(exc, FileNotFoundError) and not os.path.isdir(folder):
        reason = f"the folder {folder!r} does not exist"
    else:
        reason = exc.strerror or str(exc)
    text = f"{owner}: cannot {doing} {path!r}: {reason}"
    return type(exc)(exc.errno, text) if exc.errno is not None else type(exc)(text)

def _json_depth_ok(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return True

def loads(text: str | bytes, what: str, where: str) -> Any:
    """``json.loads`` that turns any failure, and nesting beyond MAX_JSON_DEPTH, into ValueError."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"{where}: {what} is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{where}: {what} is not valid JSON ({exc})") from None
    if not _json_depth_ok(value):
        raise ValueError(f"{where}: {what} is nested more than {MAX_JSON_DEPTH} levels deep")
    return value

def serialize(tensors: dict[str, np.ndarray], metadata: dict[str, str]) -> bytes:
    """The safetensors bytes of ``tensors`` and ``metadata``, the same for the same input
    (safetensors' own writer orders the metadata keys at random): the header JSON with
    ``__metadata__`` first and its keys sorted, the tensors sorted by name (the largest
    item size first, as safetensors lays them out), padded with spaces to 8 bytes."""
    codes = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64",
             np.dtype(np.float16): "F16", np.dtype(np.int64): "I64", np.dtype(np.int32): "I32",
             np.dtype(np.uint8): "U8"}
    header: dict[str, Any] = {"__metadata__": {k: metadata[k] for k in sorted(metadata)}}
    blobs, offset = [], 0
    for name in sorted(tensors, key=lambda k: (-tensors[k].dtype.itemsize, k)):
        arr = np.require(tensors[name], requirements="C")  # 0-d stays 0-d
        blob = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": codes[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + b"".join(blobs)


def _temp_name(base: str) -> re.Pattern:
    """The names of :func:`atomic_write`'s temporary files for the target ``base``:
    ``.<base>.<12 hex digits>.tmp``."""
    return re.compile(re.escape(f".{base}.") + r"[0-9a-f]{12}\.tmp\Z")


def clean_stale_temps(path: str) -> list[str]:
    """Removes the temporary files that killed saves of ``path`` left beside it (only
    names of the exact pattern ``.<name>.<12 hex digits>.tmp`` for this target), returning
    them. A save still running holds a lock on its temporary file (``flock``), so it is
    never touched; where files cannot be locked (no ``fcntl``, or a file system without
    locks), a file is removed only if it can be (Windows refuses to delete an open file),
    else left. Any error leaves the file in place: cleaning never fails a save or load."""
    folder = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    if not base:
        return []
    pattern = _temp_name(base)
    try:
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if pattern.match(e.name)]
    except OSError:
        return []
    return [os.path.join(folder, n) for n in names if _remove_if_stale(os.path.join(folder, n))]


def _remove_if_stale(tmp: str) -> bool:
    if fcntl is None:  # pragma: no cover - Windows: an open file cannot be removed
        try:
            os.unlink(tmp)
        except OSError:
            return False
        return True
    try:
        fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a save in progress holds it (or the file system has no locks)
        if not os.path.samestat(os.fstat(fd), os.lstat(tmp)):
            return False  # replaced meanwhile: not the file locked
        os.unlink(tmp)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _lock_new(fd: int, tmp: str) -> bool:
    """Locks the new temporary file ``tmp`` (open as ``fd``) for the whole save, so that
    :func:`clean_stale_temps` leaves it alone; False when a cleaner took it first (then
    it is, or is about to be, removed: the caller takes another name)."""
    if fcntl is None:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return True  # no locks on this file system: cleaners cannot lock it either
    try:
        return os.path.samestat(os.fstat(fd), os.lstat(tmp))
    except OSError:
        return False


def _write(file: Any, payload: bytes) -> None:
    file.write(payload)

def atomic_write(path: str, payload: bytes, owner: str = "save") -> None:
    """Writes ``payload`` to a temporary file beside ``path``, fsyncs it, renames it over.

    An error about the temporary file (a missing folder, no permission) is raised as the
    same exception type naming ``path`` instead."""
    folder = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    if not base:
        raise ValueError(f"{owner}: path must name a file, got {path!r}")
    clean_stale_temps(path)  # what saves killed before their rename left
    while True:
        tmp = os.path.join(folder, f".{base}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o666)  # the umask applies, as for any new file
        except FileExistsError:
            continue
        except OSError as exc:
            raise _named(exc, path, "write", owner) from None
        if _lock_new(fd, tmp):
            break
        os.close(fd)  # a cleaner of another process took it for a stale one
    try:
        _write_and_rename(fd, tmp, path, payload)
    except OSError as exc:
        if tmp in (exc.filename, exc.filename2):
            raise _named(exc, path, "write", owner) from None
        raise
    if hasattr(os, "O_DIRECTORY"):  # make the rename durable (POSIX)
        try:
            dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            os.fsync(dir_fd)
        except OSError:
            pass
        finally:
            os.close(dir_fd)

def _write_and_rename(fd: int, tmp: str, path: str, payload: bytes) -> None:
    """Fills the temporary file ``tmp`` (open as ``fd``) and renames it to ``path``; on any
    failure the temporary file is removed and ``path`` is left as it was."""
    file = os.fdopen(fd, "wb")
    try:
        _write(file, payload)
        file.flush()
        os.fsync(file.fileno())
        try:
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))  # keep the old file's mode
        except FileNotFoundError:
            pass
        if fcntl is None:  # pragma: no cover - Windows renames no open file
            file.close()
        os.replace(tmp, path)  # POSIX: renamed still open, so still locked (no cleaner)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        file.close()

def read_file(path: Any, owner: str) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """Reads and validates a tinynet safetensors file: (metadata, tensors)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load

    path = fspath(path, owner)
    where = f"{owner}: {path!r}"
    clean_stale_temps(path)  # what saves of this path killed before their rename left
    try:
        file = open(path, "rb")
    except OSError as exc:
        error = _named(exc, path, "read", owner)
        if isinstance(exc, FileNotFoundError) and os.path.isfile(path + SUFFIXES[0]):
            error.strerror += f"; did you mean {path + SUFFIXES[0]!r}?"
        raise error from None
    with file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            raise ValueError(f"{where} is empty (0 bytes); not a safetensors file")
        if size < 8:
            raise ValueError(f"{where} is truncated or not a safetensors file: {size} bytes, "
                             f"shorter than the 8-byte header length")
        n = int.from_bytes(file.read(8), "little")
        if n > MAX_HEADER_BYTES:
            raise ValueError(f"{where} is not a safetensors file or is corrupt: its header "
                             f"claims {n} bytes, more than the {MAX_HEADER_BYTES}-byte limit")
        if n > size - 8:
            raise ValueError(f"{where} is truncated or not a safetensors file: its header "
                             f"claims {n} bytes but only {size - 8} follow")
        header_bytes = file.read(n)
        header = loads(header_bytes, "the safetensors header", where)
        if not isinstance(header, dict):
            raise ValueError(f"{where} is not a safetensors file: its header is not a JSON "
                             f"object")
        data_len = 0
        for key, info in header.items():
            if key == "__metadata__":
                continue
            offsets = info.get("data_offsets") if isinstance(info, dict) else None
            if (not isinstance(offsets, list) or len(offsets) != 2
                    or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
                raise ValueError(f"{where} is corrupt: tensor {key!r} has no valid data_offsets")
            dtype, shape = info.get("dtype"), info.get("shape")
            if dtype not in _DTYPE_SIZES:
                raise ValueError(f"{where} is not a valid safetensors file for tinynet: tensor "
                                 f"{key!r} has dtype {dtype!r:.40}, which NumPy cannot read")
            if (not isinstance(shape, list) or not all(
                    isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
                    or not 0 <= offsets[0] <= offsets[1]
                    or math.prod(shape) * _DTYPE_SIZES[dtype] != offsets[1] - offsets[0]):
                raise ValueError(f"{where} is not a valid safetensors file: tensor {key!r} "
                                 f"({dtype}, shape {shape!r:.80}) does not fit its data_offsets "
                                 f"{offsets}")
            data_len = max(data_len, offsets[1])
        if 8 + n + data_len != size:
            raise ValueError(f"{where} is truncated or corrupt: the header describes "
                             f"{data_len} bytes of tensor data but the file holds "
                             f"{size - 8 - n}")
        file.seek(0)
        blob = file.read(size)
    if len(blob) != size:
        raise ValueError(f"{where} changed while being read")
    try:
        tensors = load(blob)
    except (SafetensorError, ValueError, TypeError, KeyError, OverflowError, MemoryError) as exc:
        raise ValueError(f"{where} is not a valid safetensors file: {exc}") from None
    metadata = header.get("__metadata__")
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise ValueError(f"{where} is a safetensors file but not a tinynet file (no "
                         f"'format': 'tinynet' entry in its metadata)")
    version = metadata.get("format_version")
    if not isinstance(version, str) or not re.fullmatch(r"[0-9]{1,9}", version) \
            or int(version) < 1:
        raise ValueError(f"{where}: invalid format_version {version!r}, expected a positive "
                         f"integer")
    if int(version) > FORMAT_VERSION:
        raise ValueError(f"{where} has format_version {int(version)}, newer than this tinynet "
                         f"reads ({FORMAT_VERSION}); upgrade tinynet to load it")
    if metadata.get("kind") not in ("model", "weights"):
        raise ValueError(f"{where}: metadata 'kind' must be 'model' or 'weights', got "
                         f"{metadata.get('kind')!r}")
    return metadata, tensors

def check_tensor(tensors: dict, key: str, shape: tuple, dtype: Any, where: str) -> np.ndarray:
    arr = tensors.get(key)
    if arr is None:
        raise ValueError(f"{where}: tensor {key!r} is missing from the file")
    if arr.dtype != dtype:
        raise ValueError(f"{where}: tensor {key!r} has dtype {arr.dtype}, expected "
                         f"{np.dtype(dtype)}")
    if arr.shape != tuple(shape):
        raise ValueError(f"{where}: tensor {key!r} has shape {arr.shape}, expected "
                         f"{tuple(shape)}")
    return arr
