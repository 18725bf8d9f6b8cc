"""What ``paysdk charges upload`` writes: per-row outcomes, the report CSV, the exit code, the progress bar.

* :class:`RowOutcome` is one data row's outcome. Statuses: ``charged``, ``declined``, ``refused``
  (the server's, D156, or an invalid row left out by ``--send-valid``), ``unknown`` (its part's answer
  was lost, D159), ``unsent`` (the run stopped before its part was sent), and, when nothing is sent
  (``--validate-only``, or invalid rows without ``--send-valid``), ``valid`` / ``invalid``.
* :func:`write_report` writes ``--report OUT.csv``:
  ``row_number,status,error,charge_id,reference,subscription_id`` (the last two as read from the row,
  D492), every cell
  starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return prefixed with ``'`` (OWASP "CSV
  injection": a spreadsheet would run it as a formula; :func:`neutralise` is
  :func:`paysdk.contracts.spreadsheet.neutralise`, the rule the server's checks share, D384), written
  to a temporary file and renamed.
* :func:`exit_code` maps outcomes to D159's codes: 0 every row charged, 5 some not, 2 nothing sent.
* :func:`progress_for` is a rich progress bar on stderr (rows, parts, rate, ETA), or nothing at all
  when stderr is not a terminal.

rich is imported only when a bar is shown.
"""

from __future__ import annotations

import csv
import os
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from paysdk.contracts.spreadsheet import FORMULA_PREFIXES, neutralise

__all__ = [
    "NEUTRALISED_PREFIXES",
    "REPORT_COLUMNS",
    "STATUSES",
    "NullProgress",
    "Progress",
    "RowOutcome",
    "counts",
    "exit_code",
    "neutralise",
    "progress_for",
    "write_report",
]

REPORT_COLUMNS = ("row_number", "status", "error", "charge_id", "reference", "subscription_id")
#: A cell starting with one of these is a formula (or becomes one) in a spreadsheet (OWASP): the rule of
#: :mod:`paysdk.contracts.spreadsheet`, which the server's checks share (D384).
NEUTRALISED_PREFIXES = FORMULA_PREFIXES
#: Every status a row can end with, in the order counts are shown.
STATUSES = ("charged", "declined", "refused", "unknown", "unsent", "valid", "invalid")

#: D159's exit codes (the numbers of :class:`paysdk_cli._errors.ExitCode`).
EXIT_ALL_CHARGED = 0
EXIT_NOTHING_SENT = 2
EXIT_SOME_NOT_CHARGED = 5


@dataclass(frozen=True, slots=True)
class RowOutcome:
    """One data row's outcome; ``row`` is its line in the file (the header is row 1)."""

    row: int
    status: str
    reference: str | None = None
    subscription_id: str | None = None
    charge_id: str | None = None
    error: str | None = None
    replayed: bool = False

    def to_json(self) -> dict[str, Any]:
        """The ``-o json`` line of this row (camelCase, every key present)."""
        return {
            "row": self.row,
            "status": self.status,
            "reference": self.reference,
            "subscriptionId": self.subscription_id,
            "chargeId": self.charge_id,
            "error": self.error,
            "replayed": self.replayed,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RowOutcome:
        """The inverse of :meth:`to_json` (a journal record; absent keys are ``None``/false)."""

        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)

        return cls(
            row=int(data["row"]),
            status=str(data["status"]),
            reference=text("reference"),
            subscription_id=text("subscriptionId"),
            charge_id=text("chargeId"),
            error=text("error"),
            replayed=bool(data.get("replayed")),
        )


def write_report(path: Path, outcomes: Iterable[RowOutcome]) -> None:
    """Write ``--report``: a header, then one line per row in row order (RFC 4180, CRLF), atomically."""
    path = path.expanduser()
    temp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with temp.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\r\n")
            writer.writerow(REPORT_COLUMNS)
            for outcome in sorted(outcomes, key=lambda o: o.row):
                cells = (
                    str(outcome.row),
                    outcome.status,
                    outcome.error or "",
                    outcome.charge_id or "",
                    outcome.reference or "",
                    outcome.subscription_id or "",
                )
                writer.writerow([neutralise(cell) for cell in cells])
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def counts(outcomes: Iterable[RowOutcome]) -> dict[str, int]:
    """``{"rows": n, "charged": ..., ...}``: every status of :data:`STATUSES` that occurs, in order.

    A charged row whose result is an earlier answer replayed (its part's key seen before) counts as
    ``replayed``, right after ``charged``, not as a new charge (D437).
    """
    seen = Counter(
        "replayed" if outcome.replayed and outcome.status == "charged" else outcome.status
        for outcome in outcomes
    )
    result = {"rows": sum(seen.values())}
    order = ("charged", "replayed", *STATUSES[1:])
    result.update({status: seen[status] for status in order if seen[status]})
    return result


def exit_code(outcomes: Iterable[RowOutcome], *, sent: bool) -> int:
    """0 every row charged; 5 some rows not charged; 2 nothing was sent (D159)."""
    if not sent:
        return EXIT_NOTHING_SENT
    statuses = {outcome.status for outcome in outcomes}
    return EXIT_ALL_CHARGED if statuses <= {"charged"} else EXIT_SOME_NOT_CHARGED


# ----------------------------------------------------------------------------- progress


class Progress(Protocol):
    """The progress display: told the totals, then each part's rows as it is answered."""

    def start(self, rows: int, parts: int, *, done_rows: int = 0, done_parts: int = 0) -> None:
        """The run's totals, and what an earlier run already finished (``--resume``)."""

    def sending(self, part: int) -> None:
        """Part ``part`` (1-based) is being sent."""

    def advance(self, rows: int) -> None:
        """A part was answered: ``rows`` more rows have results."""

    def close(self) -> None:
        """Remove the bar (the summary follows)."""


class NullProgress:
    """No display at all: stderr is not a terminal (scripts, CI logs)."""

    def start(self, rows: int, parts: int, *, done_rows: int = 0, done_parts: int = 0) -> None:
        """Nothing."""

    def sending(self, part: int) -> None:
        """Nothing."""

    def advance(self, rows: int) -> None:
        """Nothing."""

    def close(self) -> None:
        """Nothing."""


class RichProgress:
    """A rich bar on ``stream``: ``Charging  ━━━━━  1,500/12,000 rows  part 1/3  850 rows/s  0:00:12``."""

    def __init__(self, stream: IO[str], *, force_terminal: bool | None = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar

        console = Console(file=stream, force_terminal=force_terminal, stderr=stream is sys.stderr)
        self._bar = Bar(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:,.0f}/{task.total:,.0f} rows"),
            TextColumn("part {task.fields[part]}/{task.fields[parts]}"),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self._task: Any = None
        self._parts = 0
        self._done_rows = 0

    def start(self, rows: int, parts: int, *, done_rows: int = 0, done_parts: int = 0) -> None:
        """Show the bar, already at what an earlier run finished."""
        self._parts = parts
        self._done_rows = done_rows
        self._bar.start()
        self._task = self._bar.add_task(
            "Charging", total=max(rows, 1), completed=done_rows, part=done_parts, parts=parts, rate="- rows/s"
        )

    def sending(self, part: int) -> None:
        """Show which part is on its way."""
        self._bar.update(self._task, part=part)

    def advance(self, rows: int) -> None:
        """Count a part's rows and show the rate of this run."""
        self._bar.advance(self._task, rows)
        task = self._bar.tasks[0]
        elapsed = task.elapsed or 0.0
        sent = task.completed - self._done_rows
        rate = f"{sent / elapsed:,.0f} rows/s" if elapsed > 0 and sent > 0 else "- rows/s"
        self._bar.update(self._task, rate=rate)

    def close(self) -> None:
        """Stop and remove the bar."""
        self._bar.stop()


def progress_for(stream: IO[str] | None = None) -> Progress:
    """A :class:`RichProgress` when ``stream`` (default stderr) is a terminal, else :class:`NullProgress`."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    if callable(isatty) and isatty():
        return RichProgress(stream)
    return NullProgress()
