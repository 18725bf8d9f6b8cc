"""The journal of a batch charge upload: ``<FILE>.paysdk-journal`` beside the CSV file (D159, D180).

JSON lines, each appended, flushed and ``fsync``-ed before the step it records goes on, so a run killed
at any moment (``kill -9``, a power cut) leaves a journal that says what may have happened:

1. the header: ``{"journal": "paysdk-charges", "version": 1, "file", "sha256", "rows", "parts",
   "partRows", "sendValid", "startedAt"}``: the file's SHA-256 (a file changed since is refused);
2. per part, ``{"part", "state": "sending", "key", "firstRow", "lastRow", "rows", "at"}`` BEFORE its
   request leaves (its ``Idempotency-Key`` and the row range it carries);
3. then one of ``{"part", "state": "done", "results": [...]}`` (the server's answer, one result per
   row), ``{"part", "state": "unknown", "error"}`` (the answer was lost: the rows may have been charged)
   or ``{"part", "state": "failed", "error"}`` (the API refused the part whole: nothing charged).

4. ``{"event": "layout", "afterRow", "partRows", "parts", "at"}``: a resumed run asked for another
   ``--part-rows`` (D321): the rows after ``afterRow`` (the last row of the parts recorded so far) go in
   parts of ``partRows`` rows from then on, and the layout has ``parts`` parts. The parts recorded keep
   their rows and keys: a part's key names the rows it carries (``csv-<sha256>-<first>-<last>``), so a
   part sent again is the same request, and parts are sent in order, so the recorded parts are always
   the first ones.

A part's state is the last record about it; a part with no record was never sent. :meth:`Journal.plan`
turns that into what a resumed run does with each part (D159): ``done`` parts are not sent again, a
``failed`` or never-sent part is sent, a ``sending`` or ``unknown`` part is resent with its own key only
where the environment honours keys or with ``--resend-unknown``, and is otherwise reported ``unknown``.

A kill in the middle of writing a line leaves a torn last line: it is ignored (and cut off before the
next append). The journal is locked (``flock``, :func:`paysdk._files.try_lock`) while a run uses it, so
two runs never share one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "JOURNAL_KIND",
    "JOURNAL_SUFFIX",
    "Journal",
    "JournalError",
    "PartAction",
    "PartState",
    "file_sha256",
    "journal_path",
]

JOURNAL_SUFFIX = ".paysdk-journal"
JOURNAL_KIND = "paysdk-charges"
JOURNAL_VERSION = 1

PartStateName = Literal["sending", "done", "unknown", "failed"]


class JournalError(Exception):
    """The journal cannot be used (changed file, unreadable journal, another run holds it): one line."""


class PartAction(StrEnum):
    """What a (resumed) run does with one part."""

    #: Its results are in the journal: report them, send nothing.
    KEEP = "keep"
    #: Never sent, or refused whole by the API: send it.
    SEND = "send"
    #: Its answer was lost: send it again (with its own key, or because ``--resend-unknown``).
    RESEND = "resend"
    #: Its answer was lost and it may not be resent: report its rows ``unknown``.
    UNKNOWN = "unknown"


@dataclass
class PartState:
    """What the journal knows of one part (the last record about it wins)."""

    index: int
    state: PartStateName
    key: str | None = None
    first_row: int | None = None
    last_row: int | None = None
    rows: int | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def journal_path(csv_file: Path) -> Path:
    """``charges.csv`` -> ``charges.csv.paysdk-journal`` (same directory)."""
    return csv_file.with_name(csv_file.name + JOURNAL_SUFFIX)


def file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    """The SHA-256 of a file's bytes (hex), read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _sync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Journal:
    """One journal file, open for appending and locked (see the module docstring).

    Use :meth:`create` for a new run and :meth:`resume` for an existing journal; :meth:`close` (or the
    context manager) releases the lock, :meth:`remove` deletes the file once the run is complete.
    """

    def __init__(
        self,
        path: Path,
        fd: int,
        header: dict[str, Any],
        parts: dict[int, PartState],
        resplits: list[tuple[int, int]] | None = None,
    ) -> None:
        self.path = path
        self._fd = fd
        self.header = header
        self.parts = parts
        #: ``(afterRow, partRows)`` of each ``layout`` record, in order (D321).
        self.resplits: list[tuple[int, int]] = resplits or []

    # ------------------------------------------------------------------ opening

    @staticmethod
    def _lock(fd: int, path: Path) -> None:
        from paysdk._files import try_lock

        if not try_lock(fd):
            os.close(fd)
            raise JournalError(f"another paysdk charges upload is using the journal {path}")

    @classmethod
    def create(cls, path: Path, header: dict[str, Any]) -> Journal:
        """Start a new journal with ``header`` (``sha256`` and the part layout); it must not exist."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        except FileExistsError:
            raise JournalError(f"a journal of an earlier run exists: {path}") from None
        cls._lock(fd, path)
        _sync_directory(path.parent)  # the journal's name survives a power cut, not only a kill
        record = {"journal": JOURNAL_KIND, "version": JOURNAL_VERSION, **header, "startedAt": _now()}
        journal = cls(path, fd, record, {})
        journal._append(record)
        return journal

    @classmethod
    def resume(cls, path: Path) -> Journal:
        """Open an existing journal, replay its records and lock it; a torn last line is cut off."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            raise JournalError(f"no journal to resume: {path}") from None
        cls._lock(fd, path)
        try:
            with open(fd, "rb", closefd=False) as handle:
                data = handle.read()
            lines = data.split(b"\n")
            torn = lines.pop()  # the text after the last newline: b"" when the last record is whole
            if torn:
                os.ftruncate(fd, len(data) - len(torn))
            header, parts, resplits = cls._replay(path, lines)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd, header, parts, resplits)

    @staticmethod
    def _replay(
        path: Path, lines: list[bytes]
    ) -> tuple[dict[str, Any], dict[int, PartState], list[tuple[int, int]]]:
        records: list[dict[str, Any]] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                raise JournalError(f"the journal {path} is damaged at line {number}") from None
            if not isinstance(record, dict):
                raise JournalError(f"the journal {path} is damaged at line {number}")
            records.append(record)
        if not records or records[0].get("journal") != JOURNAL_KIND:
            raise JournalError(f"{path} is not a paysdk charges journal")
        header = records[0]
        if header.get("version") != JOURNAL_VERSION:
            raise JournalError(
                f"the journal {path} has version {header.get('version')!r}, not {JOURNAL_VERSION}"
            )
        parts: dict[int, PartState] = {}
        resplits: list[tuple[int, int]] = []
        for record in records[1:]:
            if record.get("event") == "layout":
                after, size, count = record.get("afterRow"), record.get("partRows"), record.get("parts")
                if not (isinstance(after, int) and isinstance(size, int) and isinstance(count, int)):
                    raise JournalError(f"the journal {path} has a damaged layout record")
                resplits.append((after, size))
                header["parts"] = count
                continue
            index, state = record.get("part"), record.get("state")
            if not isinstance(index, int) or state not in ("sending", "done", "unknown", "failed"):
                continue  # a note (such as "resumed"): no part state
            part = parts.get(index) or PartState(index, state)
            part.state = state
            if state == "sending":
                part.key = record.get("key")
                part.first_row, part.last_row = record.get("firstRow"), record.get("lastRow")
                part.rows = record.get("rows")
                part.results, part.error = [], None
            elif state == "done":
                results = record.get("results")
                part.results = (
                    [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []
                )
                part.error = None
            else:
                part.error = str(record.get("error") or "")
            parts[index] = part
        return header, parts, resplits

    # ------------------------------------------------------------------ recording

    def _append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"
        data = line.encode("utf-8")
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        os.fsync(self._fd)

    def note(self, event: str, **fields: Any) -> None:
        """A line that is no part state (``resumed``), for whoever reads the journal."""
        self._append({"event": event, **fields, "at": _now()})

    def layout(self, after_row: int, part_rows: int, parts: int) -> None:
        """From now on the rows after ``after_row`` go in parts of ``part_rows``; ``parts`` in all."""
        self._append(
            {"event": "layout", "afterRow": after_row, "partRows": part_rows, "parts": parts, "at": _now()}
        )
        self.resplits.append((after_row, part_rows))
        self.header["parts"] = parts

    @property
    def part_rows(self) -> int | None:
        """The part size the rows not yet recorded are split by (the last layout's, else the header's)."""
        if self.resplits:
            return self.resplits[-1][1]
        size = self.header.get("partRows")
        return size if isinstance(size, int) else None

    def recorded_through(self) -> int | None:
        """The last row of the parts recorded so far (1, the header, when none is); ``None`` when a
        recorded part has no row range (a damaged journal: no other layout is started from it)."""
        last = 1
        for part in self.parts.values():
            if part.last_row is None or not isinstance(part.last_row, int):
                return None
            last = max(last, part.last_row)
        return last

    def sending(self, index: int, key: str, first_row: int, last_row: int, rows: int) -> None:
        """Part ``index`` is about to be sent with ``key`` (durable before the request leaves)."""
        self._append(
            {
                "part": index,
                "state": "sending",
                "key": key,
                "firstRow": first_row,
                "lastRow": last_row,
                "rows": rows,
                "at": _now(),
            }
        )
        self.parts[index] = PartState(index, "sending", key, first_row, last_row, rows)

    def done(self, index: int, results: Iterable[dict[str, Any]]) -> None:
        """Part ``index`` was answered: its per-row results."""
        kept = [{k: v for k, v in result.items() if v is not None and v is not False} for result in results]
        self._append({"part": index, "state": "done", "results": kept, "at": _now()})
        part = self.parts.setdefault(index, PartState(index, "done"))
        part.state, part.results, part.error = "done", kept, None

    def unknown(self, index: int, error: str) -> None:
        """Part ``index``'s answer was lost: its rows may or may not have been charged."""
        self._mark(index, "unknown", error)

    def failed(self, index: int, error: str) -> None:
        """The API refused part ``index`` whole (nothing charged): it may be sent again."""
        self._mark(index, "failed", error)

    def _mark(self, index: int, state: PartStateName, error: str) -> None:
        self._append({"part": index, "state": state, "error": error, "at": _now()})
        part = self.parts.setdefault(index, PartState(index, state))
        part.state, part.error = state, error

    # ------------------------------------------------------------------ deciding

    def action(self, index: int, *, honours_keys: bool, resend_unknown: bool) -> PartAction:
        """What a resumed run does with part ``index`` (D159; see the module docstring)."""
        part = self.parts.get(index)
        if part is None or part.state == "failed":
            return PartAction.SEND
        if part.state == "done":
            return PartAction.KEEP
        return PartAction.RESEND if honours_keys or resend_unknown else PartAction.UNKNOWN

    def complete(self) -> bool:
        """Every part of the header's layout (parts count from 1) has its results."""
        count = self.header.get("parts")
        return isinstance(count, int) and all(
            (part := self.parts.get(index)) is not None and part.state == "done"
            for index in range(1, count + 1)
        )

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Release the lock and close the file (idempotent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def remove(self) -> None:
        """Delete the journal (the run is complete), then close it."""
        self.path.unlink(missing_ok=True)
        self.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
