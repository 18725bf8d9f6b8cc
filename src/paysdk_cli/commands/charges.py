"""``paysdk charges upload FILE``: batch CSV charges of subscriptions, safe to re-run (D155-D159, D180-D184).

The file is read and validated locally first (``paysdk.contracts.charges_csv``, the server's own rules),
split into parts of at most 5,000 rows, and each part is sent with its own ``Idempotency-Key``, which
names the rows it carries (D321: a re-run with another ``--part-rows`` sends other parts under other
keys; the server answers a row it charged with its earlier result, D157). A journal
beside the file (``<FILE>.paysdk-journal``, :mod:`paysdk_cli._journal`) records each part before it is
sent and its results once answered, so ``--resume`` after a kill sends no row twice and skips none.

Output: ``-o json`` is one JSON line per row on stdout; a table is a summary and the rows not charged.
``--report OUT.csv`` writes ``row_number,status,error,charge_id,reference,subscription_id``
(:mod:`paysdk_cli._batch`); each row, in ``-o json`` and the report, carries its reference and
subscription id as read from the file wherever the row has as many cells as the header (D492). The progress
bar is on stderr, only when stderr is a terminal. Exit codes (D159): 0 every row charged, 5 some rows not
charged, 2 nothing sent, and 4/6/7 as for every command.

Credentials: the profile's wallet application login (``paysdk wallet login``, D138). Heavy imports
(the SDK, rich) happen inside the command.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from paysdk_cli._app import new_app
from paysdk_cli._context import state
from paysdk_cli._errors import CLIError, ExitCode
from paysdk_cli._state import OutputFormat, State

if TYPE_CHECKING:
    from paysdk.resources.batch_charges import BatchChargeRow, ChargesCsv, ChargesCsvPart, RowIds
    from paysdk_cli._batch import RowOutcome
    from paysdk_cli._journal import Journal

__all__ = ["app", "upload"]

app = new_app("Batch charges of subscriptions from a CSV file.")

#: Spec 8: at most 5,000 rows per request (``paysdk.contracts.charges_csv.BATCH_MAX_ROWS``; not imported
#: here, so that ``paysdk charges --help`` stays cheap).
BATCH_MAX_ROWS = 5000

#: stderr lists at most this many row errors (every row is in ``-o json`` and ``--report``).
ROW_ERRORS_SHOWN = 50
#: A table lists at most this many rows that were not charged.
ROWS_NOT_CHARGED_SHOWN = 50


@app.command("upload")
def upload(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(
            help="The CSV file: subscriptionId,amount,reference[,currency][,description].", show_default=False
        ),
    ],
    validate_only: Annotated[
        bool, typer.Option("--validate-only", help="Validate every row, print the errors, send nothing.")
    ] = False,
    send_valid: Annotated[
        bool,
        typer.Option(
            "--send-valid", help="Send the valid rows even when some rows are invalid (those are refused)."
        ),
    ] = False,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            help="Write row_number,status,error,charge_id,reference,subscription_id for every row to this "
            "CSV file.",
            metavar="OUT.csv",
            show_default=False,
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Continue the run recorded in FILE.paysdk-journal (after a kill)."),
    ] = False,
    resend_unknown: Annotated[
        bool,
        typer.Option(
            "--resend-unknown",
            help="With --resume: also resend parts whose answer was lost when the API does not declare "
            "idempotency-key support (PAYSDK_IDEMPOTENCY); nothing then guarantees a row is not charged "
            "twice: check those rows first.",
        ),
    ] = False,
    part_rows: Annotated[
        int | None,
        typer.Option(
            "--part-rows",
            metavar="N",
            min=1,
            max=BATCH_MAX_ROWS,
            help="Rows per request: 1 to 5000 (default 5000). A resumed run keeps the parts its journal "
            "recorded and splits the rest by this value (default: the journal's).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Charge subscriptions from a CSV file: validate every row, send in parts, journal, report.

    Exit codes: 0 every row charged; 5 some rows not charged (refused, declined or unknown); 2 nothing
    sent (invalid rows without --send-valid, a file error); 4, 6, 7 as for every command.
    """
    st = state(ctx)
    if resend_unknown and not resume:
        raise CLIError("--resend-unknown goes with --resume", ExitCode.USAGE)
    if validate_only and (resume or send_valid):
        raise CLIError("--validate-only sends nothing: drop --resume and --send-valid", ExitCode.USAGE)
    if report is not None:
        report = report.expanduser()
        if not report.parent.is_dir():  # found out before anything is sent, not after
            raise CLIError(f"--report {report}: no directory {report.parent}", ExitCode.USAGE)
        if report.exists() and file.exists() and report.samefile(file):
            raise CLIError("--report must not be the CSV file itself", ExitCode.USAGE)
    run = _Run(st, file, report)
    if validate_only:
        raise typer.Exit(run.nothing_sent(run.read(part_rows or BATCH_MAX_ROWS)))
    raise typer.Exit(
        run.send(send_valid=send_valid, resume=resume, resend_unknown=resend_unknown, part_rows=part_rows)
    )


class _Run:
    """One invocation: the file, its plan, the outcomes and what is written at the end."""

    def __init__(self, st: State, file: Path, report: Path | None) -> None:
        self.st = st
        self.file = file
        self.report = report
        self._part_ids: dict[int, dict[int, RowIds]] = {}

    def _named(self, outcome: RowOutcome, part: ChargesCsvPart) -> RowOutcome:
        """``outcome`` of a row of ``part`` the server did not answer, with the row's reference and
        subscription id as read from the file (D492); the part's rows are read once per run."""
        ids = self._part_ids.get(part.index)
        if ids is None:
            import paysdk

            try:
                ids = part.row_ids()
            except paysdk.ValidationError:  # the file cannot be read again: the rows stay unnamed
                ids = {}
            self._part_ids[part.index] = ids
        return _with_ids(outcome, ids.get(outcome.row))

    # ------------------------------------------------------------------ reading

    def read(self, part_rows: int, resplits: Sequence[tuple[int, int]] = ()) -> ChargesCsv:
        """Read, validate and split the file (no request; ``resplits`` as in
        :func:`paysdk.resources.batch_charges.read_charges_csv`); a file error is one line and exit 2."""
        import paysdk
        from paysdk.resources.batch_charges import read_charges_csv

        if self.file.is_dir():
            raise CLIError(f"{self.file}: is a directory, not a CSV file", ExitCode.USAGE)
        try:
            return read_charges_csv(self.file, part_rows=part_rows, resplits=resplits)
        except paysdk.CsvValidationError as exc:
            first = exc.errors[0] if exc.errors else None
            where = f"{first.column}: {first.message}" if first is not None else exc.message
            raise CLIError(f"{self.file}: {where}", ExitCode.USAGE) from None
        except paysdk.ValidationError as exc:  # cannot read it
            raise CLIError(exc.message, ExitCode.USAGE) from None

    # ------------------------------------------------------------------ nothing sent

    def nothing_sent(self, plan: ChargesCsv) -> int:
        """``--validate-only``, or invalid rows without ``--send-valid``: list the errors, exit 0 or 2."""
        from paysdk_cli._batch import RowOutcome
        from paysdk_cli._output import info

        errors = _errors_by_row(plan)
        outcomes = [
            self._named(RowOutcome(row, "valid"), part)
            for part in plan.parts
            for row in part.layout.data_rows()
        ]
        outcomes += [
            _invalid(RowOutcome(row, "invalid", error=message), plan) for row, message in errors.items()
        ]
        outcomes.sort(key=lambda outcome: outcome.row)
        for number, (row, message) in enumerate(errors.items()):
            if number == ROW_ERRORS_SHOWN:
                info(
                    f"... and {len(errors) - ROW_ERRORS_SHOWN:,} more rows with errors "
                    "(all in -o json and --report)"
                )
                break
            info(f"row {row}: {message}")
        self.finish(outcomes, summary={"file": str(self.file), "sent": False})
        if errors:
            info(
                f"{len(errors):,} of {plan.rows:,} rows invalid: nothing sent"
                + (
                    ""
                    if len(errors) == plan.rows
                    else " (fix them, or send the valid rows with --send-valid)"
                )
            )
            return ExitCode.USAGE
        info(f"all {plan.rows:,} rows valid: nothing sent (--validate-only)")
        return ExitCode.OK

    # ------------------------------------------------------------------ sending

    def send(self, *, send_valid: bool, resume: bool, resend_unknown: bool, part_rows: int | None) -> int:
        """Send the parts the journal says to send; the exit code (or raise the API failure)."""
        from paysdk_cli._journal import Journal, JournalError, journal_path
        from paysdk_cli._output import info

        path = journal_path(self.file)
        journal: Journal | None = None
        if path.exists() and not resume:
            raise CLIError(
                f"{path} records an earlier run of {self.file} that did not finish: continue it with "
                "--resume (or delete the journal to start over)",
                ExitCode.USAGE,
            )
        if resume:
            if path.exists():
                try:
                    journal = Journal.resume(path)
                except JournalError as exc:
                    raise CLIError(str(exc), ExitCode.USAGE) from None
            else:
                info(f"no journal {path}: starting a new run")
        try:
            return self._send(journal, path, send_valid, resend_unknown, part_rows)
        finally:
            if journal is not None:
                journal.close()

    def _send(
        self,
        journal: Journal | None,
        path: Path,
        send_valid: bool,
        resend_unknown: bool,
        part_rows: int | None,
    ) -> int:
        from paysdk_cli._journal import Journal, JournalError

        resplits: list[tuple[int, int]] = []
        resplit: tuple[int, int] | None = None
        if journal is not None:
            send_valid = send_valid or bool(journal.header.get("sendValid"))  # the run resumed decided
            resplits = list(journal.resplits)
            if part_rows is not None and part_rows != journal.part_rows:
                # The parts recorded keep their rows (and so their keys: a key names the rows a part
                # carries, D321); the rows after them go in parts of the new size.
                after = journal.recorded_through()
                if after is None:
                    raise CLIError(
                        f"the journal {path} does not say which rows its parts carry: resume without "
                        "--part-rows",
                        ExitCode.USAGE,
                    )
                resplit = (after, part_rows)
                resplits.append(resplit)
            journaled = journal.header.get("partRows")
            part_rows = journaled if isinstance(journaled, int) else BATCH_MAX_ROWS
        part_rows = part_rows or BATCH_MAX_ROWS
        plan = self.read(part_rows, resplits)
        if journal is not None and journal.header.get("sha256") != plan.sha256:
            raise CLIError(
                f"{self.file} changed since its journal {path} was written: restore the file to resume, "
                "or delete the journal to start a new run",
                ExitCode.USAGE,
            )
        if plan.errors and not send_valid:
            return self.nothing_sent(plan)
        from paysdk_cli._context import open_wallet_client

        with open_wallet_client(self.st) as client:
            honours_keys = bool(client.environment.honours_idempotency_keys)
            if journal is not None:
                if resplit is not None:
                    journal.layout(*resplit, len(plan.parts))
                journal.note("resumed", resendUnknown=resend_unknown, honoursKeys=honours_keys)
                return self._parts(client, journal, plan, honours_keys, resend_unknown=resend_unknown)
            header = {
                "file": self.file.name,
                "sha256": plan.sha256,
                "rows": plan.rows,
                "parts": len(plan.parts),
                "partRows": part_rows,
                "sendValid": send_valid,
            }
            try:
                journal = Journal.create(path, header)
            except JournalError as exc:  # another run created it meanwhile
                raise CLIError(str(exc), ExitCode.USAGE) from None
            try:
                return self._parts(client, journal, plan, honours_keys, resend_unknown=False)
            finally:
                journal.close()

    def _parts(
        self, client: Any, journal: Journal, plan: ChargesCsv, honours_keys: bool, *, resend_unknown: bool
    ) -> int:
        from paysdk_cli._batch import RowOutcome, progress_for
        from paysdk_cli._journal import PartAction

        errors = _errors_by_row(plan)
        outcomes: list[RowOutcome] = [
            _invalid(RowOutcome(row, "refused", error=message), plan) for row, message in errors.items()
        ]
        actions = {
            part.index: journal.action(part.index, honours_keys=honours_keys, resend_unknown=resend_unknown)
            for part in plan.parts
        }
        kept = [part for part in plan.parts if actions[part.index] is PartAction.KEEP]
        resent = sum(1 for action in actions.values() if action is PartAction.RESEND)
        if resent and not honours_keys:
            from paysdk_cli._output import info

            info(
                f"WARNING: --resend-unknown sends {resent} parts whose answer was lost to a target that does "
                "not declare idempotency-key support (PAYSDK_IDEMPOTENCY): a row it already charged may be "
                "charged again"
            )
        progress = progress_for()
        progress.start(
            plan.rows - len(errors),
            len(plan.parts),
            done_rows=sum(p.rows for p in kept),
            done_parts=len(kept),
        )
        failure: BaseException | None = None
        unknown_parts = 0
        try:
            for part in plan.parts:
                action = actions[part.index]
                if failure is not None:
                    outcomes += [
                        self._named(RowOutcome(row, "unsent"), part) for row in list(part.layout.data_rows())
                    ]
                    continue
                if action is PartAction.KEEP:
                    outcomes += [RowOutcome.from_json(result) for result in journal.parts[part.index].results]
                    continue
                if action is PartAction.UNKNOWN:
                    unknown_parts += 1
                    outcomes += self._unknown(part, journal.parts[part.index].error, honours_keys)
                    continue
                self._check_journaled(journal, part)
                progress.sending(part.index)
                results, failure = self._send_part(client, journal, part)
                if results is not None:
                    outcomes += results
                    progress.advance(part.rows)
                elif journal.parts[part.index].state == "unknown":
                    unknown_parts += 1
                    outcomes += self._unknown(part, journal.parts[part.index].error, honours_keys)
                else:  # refused whole by the API: nothing of it was charged
                    outcomes += [
                        self._named(RowOutcome(row, "unsent"), part) for row in list(part.layout.data_rows())
                    ]
        finally:
            progress.close()
        complete = failure is None and journal.complete()
        outcomes.sort(key=lambda outcome: outcome.row)
        self.finish(outcomes, summary={"file": str(self.file), "sent": True})
        self._advise(journal, outcomes, unknown_parts, honours_keys, complete)
        if complete:
            journal.remove()
        if failure is not None:
            raise failure
        from paysdk_cli._batch import exit_code

        return exit_code(outcomes, sent=True)

    def _check_journaled(self, journal: Journal, part: ChargesCsvPart) -> None:
        """A part sent again must be the part the journal recorded (same key, same rows)."""
        earlier = journal.parts.get(part.index)
        if earlier is None or earlier.key is None:
            return
        if (earlier.key, earlier.first_row, earlier.last_row) != (part.key, part.first_row, part.last_row):
            raise CLIError(
                f"part {part.index} of {self.file} is not the part its journal {journal.path} recorded "
                f"(key {earlier.key}, rows {earlier.first_row}-{earlier.last_row}): delete the journal to "
                "start a new run",
                ExitCode.USAGE,
            )

    def _unknown(self, part: ChargesCsvPart, error: str | None, honours_keys: bool) -> list[RowOutcome]:
        from paysdk_cli._batch import RowOutcome

        if not error:
            error = "the run stopped before its answer came: the rows may or may not have been charged"
        how = (
            "--resume sends it again with its key"
            if honours_keys
            else "--resume --resend-unknown sends it again, which may charge it twice: the target does not "
            "declare idempotency-key support"
        )
        reason = f"part {part.index}: {error} ({how})"
        return [
            self._named(RowOutcome(row, "unknown", error=reason), part)
            for row in list(part.layout.data_rows())
        ]

    def _send_part(
        self, client: Any, journal: Journal, part: ChargesCsvPart
    ) -> tuple[list[RowOutcome] | None, BaseException | None]:
        """Send one part, journaled ``sending`` first: ``(outcomes, None)`` once answered (journaled
        ``done``); else ``(None, error)``: journaled ``unknown`` when the answer was lost or the API failed
        (connection, timeout, 5xx, an off-contract answer: the rows may have been charged), ``failed`` when
        the API refused the part whole (another 4xx: nothing charged). The run stops at such an error."""
        import paysdk

        journal.sending(part.index, part.key, part.first_row, part.last_row, part.rows)
        try:
            answer = client.subscriptions.charges.upload_part(part)
        except paysdk.APIConnectionError as exc:
            if exc.outcome_unknown:  # not raised by upload_part today (it answers unknown rows), kept safe
                journal.unknown(part.index, _one_line(exc))
            else:  # the request never left (connection refused): nothing charged
                journal.failed(part.index, _one_line(exc))
            return None, exc
        except paysdk.UnexpectedResponseError as exc:
            journal.unknown(part.index, _one_line(exc))
            return None, exc
        except paysdk.APIError as exc:
            if int(exc.status_code) >= 500:
                journal.unknown(part.index, _one_line(exc))
            else:
                journal.failed(part.index, _one_line(exc))
            return None, exc
        if answer.unknown:
            # the answer was lost and, without idempotency-key support, the SDK did not resend the part
            journal.unknown(part.index, answer.error or "the answer was lost")
            return None, None
        # a part the server had answered before (its key replayed): each row's result is an earlier one
        outcomes = [_outcome(result, replayed=answer.replayed) for result in answer.results]
        journal.done(part.index, [outcome.to_json() for outcome in outcomes])
        return outcomes, None

    # ------------------------------------------------------------------ writing

    def finish(self, outcomes: list[RowOutcome], *, summary: dict[str, Any]) -> None:
        """stdout (JSON lines, or a summary table), then ``--report``."""
        from paysdk_cli._batch import counts, write_report
        from paysdk_cli._output import emit

        if self.st.output is OutputFormat.json:
            from paysdk_cli._output import json_text

            sys.stdout.flush()
            write = sys.stdout.buffer.write if hasattr(sys.stdout, "buffer") else None
            for outcome in outcomes:
                line = json_text(outcome.to_json()) + "\n"
                if write is not None:
                    write(line.encode("utf-8"))
                else:
                    sys.stdout.write(line)
            sys.stdout.flush()
        else:
            emit(self.st.output, {**summary, **counts(outcomes)}, title=f"Batch charges {self.file.name}")
            shown = [o for o in outcomes if o.status not in ("charged", "valid")][:ROWS_NOT_CHARGED_SHOWN]
            if shown:
                emit(
                    self.st.output,
                    [
                        {"row": o.row, "status": o.status, "reference": o.reference, "error": o.error}
                        for o in shown
                    ],
                    columns=["row", "status", "reference", "error"],
                    title=("Rows not charged" if summary.get("sent") else "Invalid rows")
                    + (f" (first {ROWS_NOT_CHARGED_SHOWN})" if len(shown) == ROWS_NOT_CHARGED_SHOWN else ""),
                )
        if self.report is not None:
            try:
                write_report(self.report, outcomes)
            except OSError as exc:
                raise CLIError(f"cannot write the report {self.report}: {exc.strerror or exc}") from None

    def _advise(
        self,
        journal: Journal,
        outcomes: list[RowOutcome],
        unknown_parts: int,
        honours_keys: bool,
        complete: bool,
    ) -> None:
        from paysdk_cli._batch import counts
        from paysdk_cli._output import info

        tally = counts(outcomes)
        info(", ".join(f"{name} {value:,}" for name, value in tally.items()))
        if unknown_parts:
            unknown = tally.get("unknown", 0)
            info(f"{unknown:,} rows of {unknown_parts} parts have no answer: {_resend_hint(honours_keys)}")
        if not complete:
            info(f"the journal {journal.path} is kept: run again with --resume to continue")


#: The ``--resume`` hint where the target declares idempotency-key support (D17, D322).
RESEND_DECLARED = (
    "--resume sends them again with their own keys; the target declares idempotency-key support, so it "
    "answers a part it has seen with its earlier answer and charges nothing twice"
)
#: The ``--resume`` hint where it does not: resending may charge a row twice (D322).
RESEND_UNDECLARED = (
    "they may have been charged. WARNING: the target does not declare idempotency-key support "
    "(PAYSDK_IDEMPOTENCY), so nothing guarantees that a resent row is not charged again: check the "
    "payment history of these rows before --resume --resend-unknown sends them again"
)


def _resend_hint(honours_keys: bool) -> str:
    """What ``--resume`` does with parts whose answer was lost, as the target declares (D322): safe
    wording only where the environment declares idempotency-key support."""
    return RESEND_DECLARED if honours_keys else RESEND_UNDECLARED


def _errors_by_row(plan: ChargesCsv) -> dict[int, str]:
    """Each invalid row's errors as one text (``amount: ...; reference: ...``), by row."""
    errors: dict[int, str] = {}
    for error in plan.errors:
        text = f"{error.column}: {error.message}"
        errors[error.row] = f"{errors[error.row]}; {text}" if error.row in errors else text
    return dict(sorted(errors.items()))


def _invalid(outcome: RowOutcome, plan: ChargesCsv) -> RowOutcome:
    """``outcome`` of an invalid row, with its reference and subscription id as read (D492)."""
    return _with_ids(outcome, plan.invalid_ids.get(outcome.row))


def _with_ids(outcome: RowOutcome, ids: RowIds | None) -> RowOutcome:
    if ids is None:
        return outcome
    return dataclasses.replace(outcome, reference=ids.reference, subscription_id=ids.subscription_id)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _outcome(result: BatchChargeRow, *, replayed: bool = False) -> RowOutcome:
    from paysdk_cli._batch import RowOutcome

    return RowOutcome(
        row=int(result.row),
        status=str(result.status),
        reference=result.reference,
        subscription_id=result.subscription_id,
        charge_id=result.charge_id,
        error=result.error,
        replayed=result.replayed or replayed,
    )
