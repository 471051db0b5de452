"""The folders whose code neural-dap may run on its own: a small store in the user's state directory.

The language server runs the entries a file declares when the file is opened only in a folder the
user trusted (`neural-dap trust FOLDER`, or "Trust folder" answered to the editor's question);
"Never" is kept as well, so the question is not asked again. A folder covers its subfolders, and the
most specific folder with a decision wins: a refused clone inside a trusted tree stays refused.
Paths are compared as realpaths, so a symlink into a trusted tree is trusted and one out of it is not.

The store is `$XDG_STATE_HOME/neural-dap/trust.json` (`~/.local/state/...` by default), readable by
its owner only. It is written whole to a temporary file beside it and renamed over it, so a reader
(another language server) sees the old store or the new one, never half of one.
"""

from __future__ import annotations

import datetime
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import msgspec

Decision = Literal["trusted", "refused"]


class Folder(msgspec.Struct, frozen=True):
    path: str  # a realpath
    decision: Decision
    since: str  # when it was decided (ISO 8601, UTC), shown by `neural-dap trust --list`


class TrustStore(msgspec.Struct, frozen=True):
    version: int = 1
    folders: tuple[Folder, ...] = ()


class TrustStoreError(Exception):
    """The store cannot be read or written; nothing counts as trusted then."""


def store_path(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    state = environ.get("XDG_STATE_HOME", "")
    # the XDG spec: a relative path in the variable is invalid and is ignored
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "neural-dap" / "trust.json"


def canonical(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.path.expanduser(os.fspath(path)))


def covers(folder: str, path: str) -> bool:
    """Whether `path` is `folder` or lies inside it (both realpaths)."""
    try:
        return os.path.commonpath([folder, path]) == folder
    except ValueError:  # one relative, one absolute (or different drives)
        return False


def load(store: Path | None = None) -> TrustStore:
    path = store or store_path()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return TrustStore()
    except OSError as exc:
        raise TrustStoreError(f"cannot read the trust store {path}: {exc}") from None
    try:
        return msgspec.json.decode(data, type=TrustStore)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise TrustStoreError(f"{path} is not a neural-dap trust store ({exc}): fix or delete it") from None


def save(trust: TrustStore, store: Path | None = None) -> None:
    path = store or store_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".trust-", suffix=".json")  # mode 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(msgspec.json.format(msgspec.json.encode(trust)) + b"\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError as exc:
        raise TrustStoreError(f"cannot write the trust store {path}: {exc}") from None


def decision_for(trust: TrustStore, path: str | os.PathLike[str]) -> Folder | None:
    """The decision of the most specific folder that covers `path`, if any."""
    real = canonical(path)
    covering = [folder for folder in trust.folders if covers(folder.path, real)]
    return max(covering, key=lambda folder: len(folder.path), default=None)


def decide(folder: str | os.PathLike[str], decision: Decision, store: Path | None = None) -> Folder:
    """Record `decision` for `folder` (replacing an earlier one for the same folder)."""
    real = canonical(folder)
    trust = load(store)
    since = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    entry = Folder(real, decision, since)
    save(TrustStore(folders=(*(f for f in trust.folders if f.path != real), entry)), store)
    return entry


def revoke(folder: str | os.PathLike[str], store: Path | None = None) -> Folder | None:
    """Forget the decision recorded for exactly `folder`; the one forgotten, or None."""
    real = canonical(folder)
    trust = load(store)
    found = next((f for f in trust.folders if f.path == real), None)
    if found is not None:
        save(TrustStore(folders=tuple(f for f in trust.folders if f.path != real)), store)
    return found
