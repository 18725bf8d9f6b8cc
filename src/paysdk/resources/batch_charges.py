"""Batch CSV charges (``client.subscriptions.charges``): ``POST /v1/subscriptions/charges/upload-csv``.

The whole file is validated locally first with the server's own rules (:mod:`paysdk.contracts.charges_csv`,
D155): any invalid row raises :class:`CsvValidationError` (row-numbered errors) and nothing is sent,
unless ``send_valid_rows=True`` (the invalid rows are then reported ``refused`` without being sent).
The file is split into parts of at most 5,000 rows; each part is the header line plus byte ranges of
the file, streamed from disk (never copied in memory), with
``Idempotency-Key: csv-<sha256 prefix>-<first row>-<last row>`` (what the part carries, whatever the part
size: D321) and a multipart boundary derived from it, so the same part is the same request body in any
process (D158). A part whose answer is lost is retried with its key only where the environment declares
idempotency support (``Environment.honours_idempotency_keys``, D17); elsewhere its rows are reported
``unknown``: they may or may not have been charged, and sending the part again is safe only where keys
are honoured (the server also answers a row whose ``reference`` it has seen with its earlier result, D157).

The low-level API the CLI's journal uses: :meth:`AsyncBatchCharges.read_csv` (validate and split,
no request) and :meth:`AsyncBatchCharges.upload_part` (send one part, results numbered as in the file).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, TypeAlias, Unpack

from paysdk._errors import APIConnectionError, ValidationError
from paysdk._pipeline import APIResponse, CallOptions, Operation, apply_call_options, data_envelope
from paysdk.contracts.charges_csv import (
    BATCH_MAX_ROWS,
    CsvFileError,
    CsvPart,
    CsvPlan,
    CsvRowError,
    RowIds,
    part_row_ids,
    plan_upload,
)
from paysdk.resources._base import AsyncResource, M, Resource

if TYPE_CHECKING:
    from paysdk._uploads import FileSource, UploadBody

__all__ = [
    "UPLOAD_PATH",
    "AsyncBatchCharges",
    "BatchChargeReport",
    "BatchChargeRow",
    "BatchCharges",
    "BatchPartResult",
    "BatchRowOutcome",
    "ChargesCsv",
    "ChargesCsvPart",
    "CsvRowError",
    "CsvValidationError",
    "RowIds",
    "read_charges_csv",
]

UPLOAD_PATH = "/v1/subscriptions/charges/upload-csv"

#: A batch charge file: a path, a seekable binary file object (read from its current position), or its
#: bytes.
CsvInput: TypeAlias = str | os.PathLike[str] | BinaryIO | bytes

#: A row's outcome: ``charged`` and ``declined`` are charges in the payment history; ``refused`` rows
#: were not charged (invalid locally or on the server); ``unknown``: the part's answer was lost and the
#: environment does not honour idempotency keys, so the rows may or may not have been charged.
BatchRowOutcome: TypeAlias = Literal["charged", "declined", "refused", "unknown"]


class CsvValidationError(ValidationError):
    """Rows of a batch charge file are invalid (or the file itself is): nothing was sent.

    ``errors``: every :class:`~paysdk.contracts.charges_csv.CsvRowError` (``row``, ``column``,
    ``message``; the header is row 1); a file error is one entry with row 0 whose column is ``file`` or
    the column concerned.
    """

    def __init__(self, errors: Sequence[CsvRowError], *, rows: int = 0) -> None:
        self.errors: tuple[CsvRowError, ...] = tuple(errors)
        self.rows = rows
        first = self.errors[0] if self.errors else CsvRowError(0, "file", "is invalid")
        if first.row == 0:
            field_name, message = first.column, first.message
        else:
            more = len(self.errors) - 1
            message = f"{len({e.row for e in self.errors})} invalid row(s); first: {first}"
            if more:
                message += f" (and {more} more error(s))"
            field_name = "file"
        super().__init__(field_name, message)


@dataclass(frozen=True, slots=True)
class BatchChargeRow:
    """The result of one data row, ``row`` numbered as in the original file (the header is row 1).

    ``reference`` and ``subscription_id`` are the row's cells as read from the file (as the server read
    them, for a row it answered), for every row that has as many cells as the header: a row refused
    locally and a row of a part whose answer was lost carry them too (D492).
    """

    row: int
    status: BatchRowOutcome
    reference: str | None = None
    subscription_id: str | None = None
    charge_id: str | None = None
    error: str | None = None
    #: The server answered an earlier upload's result for this reference (D157): nothing was charged now.
    replayed: bool = False
    #: The part (from 1) the row was sent in; ``None`` for a row refused locally.
    part: int | None = None


@dataclass(frozen=True, slots=True)
class ChargesCsvPart:
    """One part of a :class:`ChargesCsv` (at most 5,000 rows): ``index`` from 1, the original row
    numbers of its first and last data rows, its row count and its ``Idempotency-Key``."""

    index: int
    first_row: int
    last_row: int
    rows: int
    key: str
    file: ChargesCsv = field(repr=False, compare=False)
    layout: CsvPart = field(repr=False, compare=False)

    def row_ids(self) -> dict[int, RowIds]:
        """The ``subscriptionId`` and ``reference`` cells of each of the part's rows as read, by row
        number: the part's byte ranges read again from the file (blocking). Rows the server answered
        carry them already; this names the rows of a part that got no answer."""
        source = self.file.source
        if isinstance(source, Path):
            try:
                with open(source, "rb") as stream:
                    return part_row_ids(stream, self.layout)
            except OSError as exc:
                raise ValidationError("file", f"cannot read {source}: {exc.strerror or exc}") from None
        return part_row_ids(source, self.layout)


@dataclass(frozen=True, slots=True)
class BatchPartResult:
    """What one part's upload gave: one result per row it carried. ``unknown``: its answer was lost
    (every row ``unknown``, ``error`` says why); ``replayed``: the server replayed its stored answer to
    this part's idempotency key (the part had been received before)."""

    part: int
    key: str
    results: tuple[BatchChargeRow, ...]
    unknown: bool = False
    replayed: bool = False
    error: str | None = None


@dataclass(frozen=True, slots=True)
class BatchChargeReport:
    """Every row's result, in row order (``results``), with the counts by outcome."""

    sha256: str
    rows: int
    parts: int
    results: tuple[BatchChargeRow, ...]

    def _count(self, status: str) -> int:
        return sum(1 for result in self.results if result.status == status)

    @property
    def charged(self) -> int:
        """Rows charged (approved)."""
        return self._count("charged")

    @property
    def declined(self) -> int:
        """Rows whose charge was declined (in the payment history)."""
        return self._count("declined")

    @property
    def refused(self) -> int:
        """Rows not charged: invalid, unknown or inactive subscription, reference already used..."""
        return self._count("refused")

    @property
    def unknown(self) -> int:
        """Rows of parts whose answer was lost (may or may not have been charged)."""
        return self._count("unknown")

    @property
    def replayed(self) -> int:
        """Rows answered with an earlier upload's result (nothing charged again)."""
        return sum(1 for result in self.results if result.replayed)

    @property
    def all_charged(self) -> bool:
        """Whether every row was charged."""
        return self.charged == self.rows


@dataclass(frozen=True, slots=True)
class ChargesCsv:
    """A batch charge file read, validated and split (:func:`read_charges_csv`): its SHA-256, size,
    data row count, row ``errors`` and ``parts``. It keeps the path (or the seekable file object, which
    the caller keeps open) to read each part's bytes when it is sent."""

    source: Path | BinaryIO = field(repr=False)
    name: str
    sha256: str
    size: int
    rows: int
    errors: tuple[CsvRowError, ...]
    parts: tuple[ChargesCsvPart, ...]
    plan: CsvPlan = field(repr=False)

    @property
    def invalid_rows(self) -> frozenset[int]:
        """The row numbers with an error."""
        return self.plan.invalid_rows

    @property
    def invalid_ids(self) -> dict[int, RowIds]:
        """The ``subscriptionId`` and ``reference`` cells of each invalid row as read, by row number
        (rows with as many cells as the header)."""
        return self.plan.invalid_ids

    def refused_results(self) -> tuple[BatchChargeRow, ...]:
        """The invalid rows as ``refused`` results (their errors joined; their reference and
        subscription id as read), in row order."""
        by_row: dict[int, list[str]] = {}
        for error in self.errors:
            by_row.setdefault(error.row, []).append(f"{error.column}: {error.message}")
        ids = self.plan.invalid_ids
        return tuple(
            BatchChargeRow(
                row=row,
                status="refused",
                reference=ids[row].reference if row in ids else None,
                subscription_id=ids[row].subscription_id if row in ids else None,
                error="; ".join(messages),
            )
            for row, messages in by_row.items()
        )


def read_charges_csv(
    file: CsvInput, *, part_rows: int = BATCH_MAX_ROWS, resplits: Sequence[tuple[int, int]] = ()
) -> ChargesCsv:
    """Read, validate and split a batch charge file (a path, a seekable binary file object read from
    its current position, or the file's bytes) into parts of at most ``part_rows`` rows (1-5,000); no
    request is made. A file error (not UTF-8, no header, a column error, no rows) raises
    :class:`CsvValidationError` naming ``file`` or the column; row errors are in ``errors``.
    ``resplits``: ``(after_row, part_rows)`` pairs, the rows after ``after_row`` in parts of that size
    (:func:`paysdk.contracts.charges_csv.plan_upload`; the CLI's ``--resume`` with another
    ``--part-rows``). Blocking: the async resource runs it on a worker thread."""
    from paysdk._paths import user_path

    for size in (part_rows, *(size for _, size in resplits)):
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= BATCH_MAX_ROWS:
            raise ValidationError("part_rows", f"must be an int from 1 to {BATCH_MAX_ROWS}")
    if isinstance(file, bytes | bytearray | memoryview):
        file = io.BytesIO(bytes(file))
    if isinstance(file, str | os.PathLike):
        path = user_path(file)
        try:
            with open(path, "rb") as stream:
                plan = plan_upload(stream, part_rows=part_rows, resplits=resplits)
        except OSError as exc:
            raise ValidationError("file", f"cannot read {path}: {exc.strerror or exc}") from None
        except CsvFileError as exc:
            raise CsvValidationError([CsvRowError(exc.row or 0, exc.column, exc.message)]) from None
        source: Path | BinaryIO = path
        name = path.name
    else:
        if isinstance(file, io.TextIOBase) or not callable(getattr(file, "read", None)):
            raise ValidationError("file", "must be a path or a binary file object opened with 'rb'")
        try:
            seekable = bool(file.seekable())
        except (AttributeError, OSError, ValueError):
            seekable = False
        if not seekable:
            raise ValidationError(
                "file", "a file object must be seekable (each part is read when it is sent)"
            )
        try:
            plan = plan_upload(file, part_rows=part_rows, resplits=resplits)
        except CsvFileError as exc:
            raise CsvValidationError([CsvRowError(exc.row or 0, exc.column, exc.message)]) from None
        source = file
        name = Path(str(getattr(file, "name", "") or "charges.csv")).name or "charges.csv"
    holder: list[ChargesCsvPart] = []
    csv_file = ChargesCsv(
        source=source,
        name=name,
        sha256=plan.sha256,
        size=plan.size,
        rows=plan.rows,
        errors=plan.errors,
        parts=(),
        plan=plan,
    )
    for part in plan.parts:
        holder.append(
            ChargesCsvPart(part.index, part.first_row, part.last_row, part.rows, part.key, csv_file, part)
        )
    object.__setattr__(csv_file, "parts", tuple(holder))
    return csv_file


async def _async_read_charges_csv(file: CsvInput, part_rows: int) -> ChargesCsv:
    return await asyncio.to_thread(functools.partial(read_charges_csv, file, part_rows=part_rows))


def _read_charges_csv(file: CsvInput, part_rows: int) -> ChargesCsv:
    return read_charges_csv(file, part_rows=part_rows)


# ------------------------------------------------------------------------------------ the request


def _sources(part: ChargesCsvPart) -> tuple[FileSource, tuple[FileSource, ...]]:
    from paysdk._uploads import FileSource

    csv_file = part.file
    header = part.layout.header
    first = FileSource("bytes", "file", csv_file.name, "text/csv", len(header), data=header)
    more: list[FileSource] = []
    for span in part.layout.spans:
        size = span.end - span.start
        if isinstance(csv_file.source, Path):
            more.append(
                FileSource(
                    "path",
                    "file",
                    None,
                    "text/csv",
                    size,
                    path=csv_file.source,
                    start=span.start,
                    total=csv_file.size,
                )
            )
        else:
            more.append(
                FileSource(
                    "seekable", "file", None, "text/csv", size, stream=csv_file.source, start=span.start
                )
            )
    return first, tuple(more)


def _body(part: ChargesCsvPart) -> UploadBody:
    from paysdk._uploads import FilePart, UploadBody

    first, more = _sources(part)
    return UploadBody(parts=(FilePart("file", first, more),), boundary="paysdk-" + part.key)


def _part_results(part: ChargesCsvPart, body: Any) -> tuple[BatchChargeRow, ...]:
    from paysdk.contracts.subscriptions import BatchChargeResult

    answer = BatchChargeResult.model_validate(body)
    results = []
    for item in answer.results:
        results.append(
            BatchChargeRow(
                row=part.layout.original_row(item.row),
                status=item.status,
                reference=item.reference,
                subscription_id=item.subscription_id,
                charge_id=item.charge_id,
                error=item.error,
                replayed=item.replayed,
                part=part.index,
            )
        )
    return tuple(results)


def upload_part_operation(part: ChargesCsvPart, **options: Unpack[CallOptions]) -> Operation[Any]:
    """The request of one part: ``POST /v1/subscriptions/charges/upload-csv`` with the part as the
    multipart ``file`` and its ``Idempotency-Key`` (the wallet application token as bearer, D138)."""
    if not isinstance(part, ChargesCsvPart):
        raise ValidationError("part", "must be a part of client.subscriptions.charges.read_csv(...)")
    if "idempotency_key" in options:
        raise ValidationError(
            "idempotency_key", "each part carries its own key (csv-<sha256>-<first row>-<last row>)"
        )
    op: Operation[Any] = Operation(
        method="POST",
        path=UPLOAD_PATH,
        base="base",
        auth="wallet_app",
        parse=data_envelope(lambda body: body),
        upload=_body(part),
    )
    return apply_call_options(op, {**options, "idempotency_key": part.key})


def _lost(part: ChargesCsvPart, exc: APIConnectionError) -> BatchPartResult:
    """Every row of a part whose answer was lost: ``unknown``, named by its cells as read (blocking)."""
    message = f"the answer was lost ({exc}); the rows may or may not have been charged"
    ids = part.row_ids()
    rows = tuple(
        BatchChargeRow(
            row=row,
            status="unknown",
            reference=ids[row].reference if row in ids else None,
            subscription_id=ids[row].subscription_id if row in ids else None,
            error=message,
            part=part.index,
        )
        for row in part.layout.data_rows()
    )
    return BatchPartResult(part.index, part.key, rows, unknown=True, error=message)


async def _async_lost(part: ChargesCsvPart, exc: APIConnectionError) -> BatchPartResult:
    return await asyncio.to_thread(_lost, part, exc)


def _done(part: ChargesCsvPart, answer: APIResponse[Any]) -> BatchPartResult:
    results = _part_results(part, answer.parse())
    if answer.replayed:  # the server replayed its stored answer to this key: nothing was charged now
        results = tuple(
            dataclasses.replace(item, replayed=True) if item.status in ("charged", "declined") else item
            for item in results
        )
    return BatchPartResult(part.index, part.key, results, replayed=answer.replayed)


def _report(csv_file: ChargesCsv, parts: Sequence[BatchPartResult]) -> BatchChargeReport:
    results = list(csv_file.refused_results())
    for result in parts:
        results.extend(result.results)
    results.sort(key=lambda item: item.row)
    return BatchChargeReport(csv_file.sha256, csv_file.rows, len(csv_file.parts), tuple(results))


def _check_file(csv_file: ChargesCsv, send_valid_rows: bool) -> None:
    if csv_file.errors and not send_valid_rows:
        raise CsvValidationError(csv_file.errors, rows=csv_file.rows)


# unasync: begin
class AsyncBatchCharges(AsyncResource[M]):
    """Batch CSV charges (``client.subscriptions.charges``, D155-D158): see the module docstring."""

    async def read_csv(self, file: CsvInput, *, part_rows: int = BATCH_MAX_ROWS) -> ChargesCsv:
        """Read, validate and split a batch charge file locally (no request): its row errors and its
        parts of at most ``part_rows`` rows (see :func:`read_charges_csv`)."""
        return await _async_read_charges_csv(file, part_rows)

    async def upload_part(self, part: ChargesCsvPart, **options: Unpack[CallOptions]) -> BatchPartResult:
        """Send one part (its ``Idempotency-Key`` is the part's ``key``) and answer its rows' results,
        numbered as in the original file. A lost answer (the request may have been received) is
        retried with the key only where the environment honours idempotency keys; otherwise, or when
        retries are spent, the part's rows are ``unknown``. Other failures raise the API error."""
        op = upload_part_operation(part, **options)
        try:
            answer = await self._client._request_raw(op)
        except APIConnectionError as exc:
            if not exc.outcome_unknown:
                raise
            return await _async_lost(part, exc)
        return _done(part, answer)

    async def upload_csv(
        self,
        file: CsvInput,
        *,
        send_valid_rows: bool = False,
        part_rows: int = BATCH_MAX_ROWS,
        **options: Unpack[CallOptions],
    ) -> BatchChargeReport:
        """Charge every row of a batch CSV file (``POST /v1/subscriptions/charges/upload-csv``, D158).

        ``file``: a path, a seekable binary file object (read from its current position) or bytes. Every row
        is validated locally first: any invalid row raises :class:`CsvValidationError` and nothing is
        sent, unless ``send_valid_rows`` (the invalid rows are then ``refused`` without being sent).
        The rows go in parts of at most ``part_rows`` (5,000, the server's limit), each with its own
        ``Idempotency-Key``; the answer has one result per row, numbered as in the file (``charged``,
        ``declined``, ``refused`` or, for a part whose answer was lost where keys are not honoured,
        ``unknown``).
        """
        csv_file = await self.read_csv(file, part_rows=part_rows)
        _check_file(csv_file, send_valid_rows)
        results = []
        for part in csv_file.parts:
            results.append(await self.upload_part(part, **options))
        return _report(csv_file, results)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class BatchCharges(Resource[M]):
    """Batch CSV charges (``client.subscriptions.charges``, D155-D158): see the module docstring."""

    def read_csv(self, file: CsvInput, *, part_rows: int = BATCH_MAX_ROWS) -> ChargesCsv:
        """Read, validate and split a batch charge file locally (no request): its row errors and its
        parts of at most ``part_rows`` rows (see :func:`read_charges_csv`)."""
        return _read_charges_csv(file, part_rows)

    def upload_part(self, part: ChargesCsvPart, **options: Unpack[CallOptions]) -> BatchPartResult:
        """Send one part (its ``Idempotency-Key`` is the part's ``key``) and answer its rows' results,
        numbered as in the original file. A lost answer (the request may have been received) is
        retried with the key only where the environment honours idempotency keys; otherwise, or when
        retries are spent, the part's rows are ``unknown``. Other failures raise the API error."""
        op = upload_part_operation(part, **options)
        try:
            answer = self._client._request_raw(op)
        except APIConnectionError as exc:
            if not exc.outcome_unknown:
                raise
            return _lost(part, exc)
        return _done(part, answer)

    def upload_csv(
        self,
        file: CsvInput,
        *,
        send_valid_rows: bool = False,
        part_rows: int = BATCH_MAX_ROWS,
        **options: Unpack[CallOptions],
    ) -> BatchChargeReport:
        """Charge every row of a batch CSV file (``POST /v1/subscriptions/charges/upload-csv``, D158).

        ``file``: a path, a seekable binary file object (read from its current position) or bytes. Every row
        is validated locally first: any invalid row raises :class:`CsvValidationError` and nothing is
        sent, unless ``send_valid_rows`` (the invalid rows are then ``refused`` without being sent).
        The rows go in parts of at most ``part_rows`` (5,000, the server's limit), each with its own
        ``Idempotency-Key``; the answer has one result per row, numbered as in the file (``charged``,
        ``declined``, ``refused`` or, for a part whose answer was lost where keys are not honoured,
        ``unknown``).
        """
        csv_file = self.read_csv(file, part_rows=part_rows)
        _check_file(csv_file, send_valid_rows)
        results = []
        for part in csv_file.parts:
            results.append(self.upload_part(part, **options))
        return _report(csv_file, results)


# unasync: generated end
