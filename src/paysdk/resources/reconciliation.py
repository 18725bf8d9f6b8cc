"""Reconciliation (``client.reconciliation``): ``POST /reports/payfac/conciliation/upload/{affiliation}``.

:meth:`AsyncReconciliation.upload` checks the daily settlement CSV locally first with the server's own
reader (:func:`paysdk.contracts.reconciliation.read_reconciliation_csv`, D194): an error of the whole file
(not UTF-8, a missing, unknown or repeated column, too many rows) raises :class:`~paysdk.ValidationError`
naming ``file`` or the column and nothing is sent. Row errors are not raised: the server reports them as
the report's ``invalid`` rows, numbered as in the file. The file is then streamed as the multipart part
``file`` (never read whole into memory). The report changes nothing on the server, so the call is safe
to retry (D241).

The server's answer is bounded (D331): the first page of :data:`~paysdk.contracts.reconciliation.
PAGE_ENTRIES` entries and the counts. ``upload`` then reads the report's other pages
(:meth:`AsyncReconciliation.report_page`) and returns the whole report, so every answer stays small
whatever the file; ``whole=False`` returns the first page alone (``report.pages``, ``report.report_id``
say what is left), for a caller that reads the pages itself as the CLI does.
"""

from __future__ import annotations

import asyncio
import io
import os
from typing import BinaryIO, TypeAlias, Unpack

from paysdk._errors import ValidationError
from paysdk._paths import user_path
from paysdk._pipeline import CallOptions, Operation, apply_call_options
from paysdk.contracts.reconciliation import (
    MAX_ROWS,
    ReconciliationFileError,
    ReconciliationReport,
    ReconciliationReportPage,
    ReconciliationScan,
    read_reconciliation_csv,
)
from paysdk.resources._base import AsyncEndpoint, AsyncResource, Endpoint, M, Resource
from paysdk.resources._validation import path_segment

__all__ = [
    "REPORTS_PATH",
    "UPLOAD_PATH",
    "AsyncReconciliation",
    "Reconciliation",
    "ReconciliationInput",
    "check_reconciliation_csv",
    "report_page_operation",
    "upload_operation",
    "whole_report",
]

UPLOAD_PATH = "/reports/payfac/conciliation/upload/"
REPORTS_PATH = "/reports/payfac/conciliation/reports/"

#: A reconciliation file: a path, a binary file object (a seekable one is read from its current
#: position), or its bytes.
ReconciliationInput: TypeAlias = str | os.PathLike[str] | BinaryIO | bytes


def _check_affiliation(affiliation: object) -> str:
    if not isinstance(affiliation, str) or not affiliation.isascii() or not affiliation.isdigit():
        raise ValidationError("affiliation", "must be the affiliation number (10 digits)")
    if len(affiliation) != 10:
        raise ValidationError("affiliation", "must be the affiliation number (10 digits)")
    return path_segment(affiliation, "affiliation")


def _scan(stream: BinaryIO) -> ReconciliationScan:
    try:
        return read_reconciliation_csv(stream, max_rows=MAX_ROWS)
    except ReconciliationFileError as exc:
        raise ValidationError(exc.column, exc.message) from None


def check_reconciliation_csv(file: ReconciliationInput) -> ReconciliationScan | None:
    """Read a reconciliation file locally with the server's rules (no request): its SHA-256, rows and row
    errors. Raises :class:`~paysdk.ValidationError` naming ``file`` or the column for an error of the
    whole file. A seekable file object is read from its position and put back there; a stream that can
    be read only once is not read (``None``: the server checks it)."""
    if isinstance(file, bytes | bytearray | memoryview):
        return _scan(io.BytesIO(bytes(file)))
    if isinstance(file, str | os.PathLike):
        path = user_path(file)
        try:
            with path.open("rb") as stream:
                return _scan(stream)
        except OSError as exc:
            raise ValidationError("file", f"cannot read {path}: {exc.strerror or exc}") from None
    if isinstance(file, io.TextIOBase):
        raise ValidationError("file", "a file object must be opened in binary mode ('rb'), not text mode")
    if not callable(getattr(file, "read", None)):
        raise ValidationError("file", "must be a path, a binary file object or bytes")
    try:
        seekable = bool(file.seekable())
    except (AttributeError, OSError, ValueError):
        seekable = False
    if not seekable:
        return None
    start = file.tell()
    try:
        return _scan(file)
    finally:
        file.seek(start)


def _check_reconciliation_csv(file: ReconciliationInput) -> ReconciliationScan | None:
    return check_reconciliation_csv(file)


async def _async_check_reconciliation_csv(file: ReconciliationInput) -> ReconciliationScan | None:
    return await asyncio.to_thread(check_reconciliation_csv, file)


def upload_operation(
    affiliation: str, file: ReconciliationInput, **options: Unpack[CallOptions]
) -> Operation[ReconciliationReport]:
    """The request of :meth:`AsyncReconciliation.upload` (no local check): the file as the multipart
    part ``file`` (``text/csv``), the merchant token as credential."""
    from paysdk._uploads import file_source, multipart_body

    segment = _check_affiliation(affiliation)
    name = "reconciliation.csv" if isinstance(file, bytes | bytearray | memoryview) else None
    source = file_source(file, "file", filename=name, content_type="text/csv")
    op: Operation[ReconciliationReport] = Operation(
        method="POST",
        path=UPLOAD_PATH + segment,
        parse=ReconciliationReport.model_validate,
        auth="raw",
        idempotent=True,  # a report is computed, nothing is stored (D194)
        uses_idempotency_keys=False,
        upload=multipart_body([("file", source)]),
    )
    return apply_call_options(op, options)


def report_page_operation(
    report_id: str, page: int, **options: Unpack[CallOptions]
) -> Operation[ReconciliationReportPage]:
    """Page ``page`` (1 to ``report.pages``) of a long reconciliation report (``GET
    /reports/payfac/conciliation/reports/{reportId}/pages/{page}``, D331): the report's entries from
    ``(page - 1) * 5,000`` on, its lists taken in the order ``matched``, ``amount_mismatch``,
    ``unknown``, ``invalid``, ``missing``. ``report_id`` is the upload's ``report.report_id``; the
    server keeps a client's latest 10 reports (an older one is :class:`~paysdk.NotFoundError`)."""
    segment = path_segment(report_id, "report_id")
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        raise ValidationError("page", "must be a whole number, 1 or more")
    op: Operation[ReconciliationReportPage] = Operation(
        method="GET",
        path=f"{REPORTS_PATH}{segment}/pages/{page}",
        parse=ReconciliationReportPage.model_validate,
        auth="raw",
    )
    return apply_call_options(op, options)


def whole_report(first: ReconciliationReport, pages: list[ReconciliationReportPage]) -> ReconciliationReport:
    """The report ``first`` (the upload's answer) with the lists of its other ``pages`` appended, in
    page order."""
    lists = {
        name: [*getattr(first, name)]
        for name in ("matched", "missing", "unknown", "amount_mismatch", "invalid")
    }
    for page in pages:
        for name, items in lists.items():
            items.extend(getattr(page, name))
    return first.model_copy(update=lists)


# unasync: begin
class AsyncReconciliation(AsyncResource[M]):
    """Reconciliation of the daily settlement CSV (``client.reconciliation``, D194)."""

    report_page = AsyncEndpoint(report_page_operation)

    async def upload(
        self,
        affiliation: str,
        csv_file: ReconciliationInput,
        *,
        whole: bool = True,
        **options: Unpack[CallOptions],
    ) -> ReconciliationReport:
        """Reconcile the daily settlement file of ``affiliation`` (``POST
        /reports/payfac/conciliation/upload/{affiliation}``, D194) and return the report: ``matched``,
        ``missing``, ``unknown``, ``amount_mismatch`` and ``invalid`` rows with their row numbers (the
        header is row 1); ``report.all_matched`` says whether everything matched and ``report.counts``
        how many entries each list holds.

        ``csv_file``: a path, a binary file object or bytes, with the columns ``settlementDate``,
        ``paymentId``, ``amount``, ``currency``. An error of the whole file raises
        :class:`~paysdk.ValidationError` naming ``file`` or the column before anything is sent.
        Nothing changes on the server: the same file gives the same report.

        The server answers the first 5,000 entries (D331); with ``whole=True`` (the default) the other
        pages are read (:meth:`report_page`, one ``GET`` each) and the whole report returned.
        ``whole=False`` returns the first page as answered (``report.complete`` is false when pages
        are left; ``report.report_id`` names them).
        """
        await _async_check_reconciliation_csv(csv_file)
        first = await self._send(upload_operation(affiliation, csv_file, **options))
        if not whole or first.report_id is None or first.pages <= 1:
            return first
        pages = [
            await self._send(report_page_operation(first.report_id, number, **options))
            for number in range(2, first.pages + 1)
        ]
        return whole_report(first, pages)


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class Reconciliation(Resource[M]):
    """Reconciliation of the daily settlement CSV (``client.reconciliation``, D194)."""

    report_page = Endpoint(report_page_operation)

    def upload(
        self,
        affiliation: str,
        csv_file: ReconciliationInput,
        *,
        whole: bool = True,
        **options: Unpack[CallOptions],
    ) -> ReconciliationReport:
        """Reconcile the daily settlement file of ``affiliation`` (``POST
        /reports/payfac/conciliation/upload/{affiliation}``, D194) and return the report: ``matched``,
        ``missing``, ``unknown``, ``amount_mismatch`` and ``invalid`` rows with their row numbers (the
        header is row 1); ``report.all_matched`` says whether everything matched and ``report.counts``
        how many entries each list holds.

        ``csv_file``: a path, a binary file object or bytes, with the columns ``settlementDate``,
        ``paymentId``, ``amount``, ``currency``. An error of the whole file raises
        :class:`~paysdk.ValidationError` naming ``file`` or the column before anything is sent.
        Nothing changes on the server: the same file gives the same report.

        The server answers the first 5,000 entries (D331); with ``whole=True`` (the default) the other
        pages are read (:meth:`report_page`, one ``GET`` each) and the whole report returned.
        ``whole=False`` returns the first page as answered (``report.complete`` is false when pages
        are left; ``report.report_id`` names them).
        """
        _check_reconciliation_csv(csv_file)
        first = self._send(upload_operation(affiliation, csv_file, **options))
        if not whole or first.report_id is None or first.pages <= 1:
            return first
        pages = [
            self._send(report_page_operation(first.report_id, number, **options))
            for number in range(2, first.pages + 1)
        ]
        return whole_report(first, pages)


# unasync: generated end
