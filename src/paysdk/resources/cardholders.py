"""Bulk cardholder upload with live progress (spec 4.4, 6.5; decisions D185-D188, D220-D229):
``client.backoffice.cardholders``. Calls take the backoffice user token (D184).

* :meth:`AsyncCardholders.upload` sends a ``.csv`` or ``.xlsx`` file (D186) and answers its
  :class:`~paysdk.contracts.cardholders.CardholderUpload` (``batchId`` at once; the rows are processed in
  the background). The file streams from disk; a failed attempt is sent again whole (D113), which is safe
  because the server keeps one batch per file and partner (D187): a retried upload whose first attempt
  did arrive answers that batch with ``duplicate: true`` (D220).
* :meth:`AsyncCardholders.progress` follows the batch's event stream (D188): typed
  :class:`BatchProgressEvent`, :class:`RowFailedEvent` and :class:`BatchDoneEvent` (a name the SDK does not
  know is an :class:`~paysdk.UnknownEvent`). A dropped connection is reopened with ``Last-Event-ID``:
  nothing lost, nothing repeated. The first reconnect of a stream logs one WARNING (logger
  ``paysdk.stream``, :data:`AFFINITY_WARNING`): the real service keeps a batch's stream on one instance,
  so a reconnect there may land on another and miss events (D188, D221).
* :meth:`AsyncCardholders.wait` follows the stream from its start to ``done`` and answers the
  :class:`CardholderBatchResult`: the final counts and every failed row.
* :meth:`AsyncCardholders.results` (every page) and ``results_page`` answer the rows a batch created with
  their cardholder and card ids; :meth:`AsyncCardholders.lookup` finds a partner's cardholder by
  ``externalId`` or email (our extensions, D450, D451, D452).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeAlias, Unpack

from paysdk._errors import UnexpectedResponseError, ValidationError
from paysdk._pipeline import CallOptions, Operation, apply_call_options, data_envelope, no_result
from paysdk._sse import ServerSentEvent, StreamOperation, StreamPolicy, StreamProgress, UnknownEvent
from paysdk._streaming import AsyncEventStream, EventStream
from paysdk.contracts.cardholders import (
    BatchDone,
    BatchProgress,
    BatchStatus,
    CardholderMatch,
    CardholderResultsPage,
    CardholderUpload,
    CreatedCardholder,
    RowFailed,
)
from paysdk.resources._base import AsyncEndpoint, AsyncResource, Endpoint, M, Resource
from paysdk.resources._validation import check_str, path_segment

if TYPE_CHECKING:
    from paysdk._client import AsyncClient, Client
    from paysdk._file_upload import FileInput

__all__ = [
    "AFFINITY_WARNING",
    "AsyncCardholders",
    "BatchDoneEvent",
    "BatchProgressEvent",
    "CardholderBatchEvent",
    "CardholderBatchResult",
    "Cardholders",
    "RowFailedEvent",
]

_ROOT = "/app/partners/"
#: The file kinds the upload takes (D186), told by the file name.
FILE_SUFFIXES: Final = (".csv", ".xlsx")
#: Partner and batch ids are at most 64 characters (D185).
_ID_LENGTH = 64
#: Clean ends of the stream without ``done`` that :meth:`AsyncCardholders.wait` reopens (D222).
MAX_EARLY_ENDS: Final = 10

#: Logged once per stream (WARNING, logger ``paysdk.stream``) at its first reconnect (D188, D221).
AFFINITY_WARNING: Final = (
    "the cardholder batch progress stream was reopened: the real service keeps a batch's stream on one "
    "server instance, so a reconnect there may land on another instance and miss events (the reference "
    "server shares them through its database); the final 'done' event's counts are authoritative"
)


class BatchProgressEvent(ServerSentEvent[BatchProgress]):
    """A ``progress`` event: the batch's counts so far (``data.total`` is ``None`` until counted)."""


class RowFailedEvent(ServerSentEvent[RowFailed]):
    """A ``row-failed`` event: one data row that created nothing (``data.row``, ``data.field``,
    ``data.message``)."""


class BatchDoneEvent(ServerSentEvent[BatchDone]):
    """The final ``done`` event: the batch's final counts; the stream closes after it."""


#: What a progress stream yields.
CardholderBatchEvent: TypeAlias = BatchProgressEvent | RowFailedEvent | BatchDoneEvent | UnknownEvent

EVENT_TYPES: Final[dict[str, type[ServerSentEvent[Any]]]] = {
    "progress": BatchProgressEvent,
    "row-failed": RowFailedEvent,
    "done": BatchDoneEvent,
}


@dataclass(frozen=True, slots=True)
class CardholderBatchResult:
    """A finished batch (:meth:`AsyncCardholders.wait`): the ``done`` event's counts and every failed row
    in row order. ``status`` is ``completed`` (every row tried) or ``failed`` (the file could not be read
    past some row, D187)."""

    batch_id: str
    status: BatchStatus
    total: int | None
    processed: int
    created: int
    failed: int
    cards_issued: int
    failed_rows: tuple[RowFailed, ...]
    #: How many times the stream was reopened while waiting.
    reconnects: int = 0

    @property
    def all_created(self) -> bool:
        """Whether every row created its cardholder (no row failed, the file read to its end)."""
        return self.status == "completed" and self.failed == 0 and not self.failed_rows


class _AffinityNotice:
    """The ``on_reconnect`` hook of a progress stream: :data:`AFFINITY_WARNING` once (D221)."""

    __slots__ = ("warned",)

    def __init__(self) -> None:
        self.warned = False

    def __call__(self, progress: StreamProgress) -> None:
        if not self.warned:
            self.warned = True
            logging.getLogger("paysdk.stream").warning(AFFINITY_WARNING)


def _id(value: object, field: str) -> str:
    check_str(value, field, max_length=_ID_LENGTH)
    return path_segment(value, field)


def upload_operation(
    partner_id: str,
    file: FileInput,
    *,
    filename: str | None = None,
    **options: Unpack[CallOptions],
) -> Operation[CardholderUpload]:
    """Upload a cardholder file for a partner (``POST {cms}/app/partners/{partnerId}/cardholders/upload``,
    D186, D187): the answer names the batch at once, its rows are processed in the background.

    ``file``: a path, a binary file object, ``bytes``, an iterable of ``bytes`` chunks or a
    :class:`paysdk.FileUpload`; its name must end in ``.csv`` or ``.xlsx`` (``filename=`` gives one to
    a stream; bytes without one are ``cardholders.xlsx`` when a zip archive, else ``cardholders.csv``).
    The file streams from disk, never read whole. A failed attempt sends it again
    (a path re-opened, a seekable file rewound; a non-seekable stream is sent once, D113): the server
    keeps one batch per file and partner, so a retry whose first attempt arrived answers that batch with
    ``duplicate`` true (D187, D220).
    """
    from paysdk._uploads import file_source, multipart_body  # only when uploading

    partner = _id(partner_id, "partner_id")
    source = file_source(file, "file", filename=filename)
    if source.filename is None and source.kind == "bytes" and source.data is not None:
        # Bytes without a name: an xlsx file is a zip archive (D220).
        zipped = bytes(source.data[:4]) == b"PK\x03\x04"
        source = file_source(file, "file", filename="cardholders.xlsx" if zipped else "cardholders.csv")
    if source.filename is None:
        raise ValidationError(
            "filename", "name the file (ending in .csv or .xlsx): it tells the server its kind"
        )
    if not source.filename.lower().endswith(FILE_SUFFIXES):
        raise ValidationError("filename", f"{source.filename!r} must end in .csv or .xlsx (D186)")
    op: Operation[CardholderUpload] = Operation(
        method="POST",
        path=_ROOT + partner + "/cardholders/upload",
        base="cms",
        auth="backoffice_user",
        parse=data_envelope(CardholderUpload.model_validate),
        upload=multipart_body([("file", source)]),
        idempotent=True,  # D220: the server de-duplicates by the file's SHA-256 (D187)
        expected=frozenset({200, 202}),
    )
    return apply_call_options(op, options)


def progress_operation(
    partner_id: str,
    batch_id: str,
    last_event_id: str | None = None,
    read_timeout: float | None = None,
    max_reconnects: int | None = None,
) -> StreamOperation:
    """``GET {cms}/app/partners/{partnerId}/cardholders/batch/{batchId}/progress`` (D188) as a stream."""
    partner = _id(partner_id, "partner_id")
    batch = _id(batch_id, "batch_id")
    if read_timeout is not None and (
        isinstance(read_timeout, bool) or not isinstance(read_timeout, int | float) or not read_timeout > 0
    ):
        raise ValidationError("read_timeout", "must be a positive number of seconds, or None")
    policy = StreamPolicy()
    if max_reconnects is not None:
        if isinstance(max_reconnects, bool) or not isinstance(max_reconnects, int) or max_reconnects < 0:
            raise ValidationError("max_reconnects", "must be an int >= 0")
        policy = StreamPolicy(max_reconnects=max_reconnects)
    op: Operation[None] = Operation(
        method="GET",
        path=f"{_ROOT}{partner}/cardholders/batch/{batch}/progress",
        base="cms",
        auth="backoffice_user",
        parse=no_result,
    )
    return StreamOperation(
        op,
        EVENT_TYPES,
        read_timeout=None if read_timeout is None else float(read_timeout),
        last_event_id=None if last_event_id is None else check_str(last_event_id, "last_event_id"),
        policy=policy,
        on_reconnect=_AffinityNotice(),
    )


def results_page_operation(
    partner_id: str, batch_id: str, page: int = 1, **options: Unpack[CallOptions]
) -> Operation[CardholderResultsPage]:
    """Page ``page`` (1 to ``pages``) of the rows a batch created, with their cardholder and card ids
    (``GET {cms}/app/partners/{partnerId}/cardholders/batch/{batchId}/results/pages/{page}``, our
    extension, D450): 5,000 entries a page in row order; a page past the last is
    :class:`~paysdk.NotFoundError` naming ``page``."""
    partner = _id(partner_id, "partner_id")
    batch = _id(batch_id, "batch_id")
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        raise ValidationError("page", "must be a whole number, 1 or more")
    op: Operation[CardholderResultsPage] = Operation(
        method="GET",
        path=f"{_ROOT}{partner}/cardholders/batch/{batch}/results/pages/{page}",
        base="cms",
        auth="backoffice_user",
        parse=data_envelope(CardholderResultsPage.model_validate),
    )
    return apply_call_options(op, options)


def lookup_operation(
    partner_id: str,
    *,
    external_id: str | None = None,
    email: str | None = None,
    **options: Unpack[CallOptions],
) -> Operation[CardholderMatch]:
    """The partner's cardholder with this ``external_id`` (the upload's ``externalId``) or ``email``
    (``GET {cms}/app/partners/{partnerId}/cardholders/lookup``, our extension, D451): exactly one of them
    (:class:`~paysdk.ValidationError` before sending otherwise); none found is
    :class:`~paysdk.NotFoundError` naming it. The match's ``cardholder_id`` is what
    ``backoffice.associate_card`` takes."""
    partner = _id(partner_id, "partner_id")
    if (external_id is None) == (email is None):
        raise ValidationError("external_id", "give exactly one of external_id and email")
    params = (
        {"externalId": check_str(external_id, "external_id", max_length=_ID_LENGTH)}
        if external_id is not None
        else {"email": check_str(email, "email", max_length=255)}
    )
    op: Operation[CardholderMatch] = Operation(
        method="GET",
        path=f"{_ROOT}{partner}/cardholders/lookup",
        base="cms",
        auth="backoffice_user",
        params=params,
        parse=data_envelope(CardholderMatch.model_validate),
    )
    return apply_call_options(op, options)


class _Collector:
    """What :meth:`AsyncCardholders.wait` gathers from the events."""

    __slots__ = ("done", "failed_rows", "last_event_id")

    def __init__(self) -> None:
        self.failed_rows: dict[int, RowFailed] = {}
        self.done: BatchDone | None = None
        self.last_event_id: str | None = None

    def take(self, event: Any) -> None:
        if isinstance(event, RowFailedEvent):
            self.failed_rows[event.data.row] = event.data
        elif isinstance(event, BatchDoneEvent):
            self.done = event.data

    def result(self, reconnects: int) -> CardholderBatchResult:
        done = self.done
        assert done is not None
        return CardholderBatchResult(
            batch_id=done.batch_id,
            status=done.status,
            total=done.total,
            processed=done.processed,
            created=done.created,
            failed=done.failed,
            cards_issued=done.cards_issued,
            failed_rows=tuple(self.failed_rows[row] for row in sorted(self.failed_rows)),
            reconnects=reconnects,
        )


def _ended_early(op: StreamOperation) -> UnexpectedResponseError:
    return UnexpectedResponseError(
        f"{op.op.method} {op.op.path}: the stream kept ending without its 'done' event",
        status_code=200,
        problem="no 'done' event",
        method=op.op.method,
        path=op.op.path,
    )


# unasync: begin
class AsyncCardholders(AsyncResource[M]):
    """Bulk cardholder upload (``client.backoffice.cardholders``): upload a file, follow its progress."""

    upload = AsyncEndpoint(upload_operation)
    results_page = AsyncEndpoint(results_page_operation)
    lookup = AsyncEndpoint(lookup_operation)

    def __init__(self, client: AsyncClient, *, raw: bool = False) -> None:
        super().__init__(client, raw=raw)

    async def results(
        self, partner_id: str, batch_id: str, **options: Unpack[CallOptions]
    ) -> list[CreatedCardholder]:
        """Every row the batch created so far with its cardholder and card ids, in row order (D450, D452):
        :attr:`results_page` read from page 1 to its last (one ``GET`` each, ``options`` applied to each).
        Call it after :meth:`wait` for a batch's whole results."""
        page = await self._send(results_page_operation(partner_id, batch_id, 1, **options))
        entries = list(page.entries)
        for number in range(2, page.pages + 1):
            more = await self._send(results_page_operation(partner_id, batch_id, number, **options))
            entries.extend(more.entries)
        return entries

    def progress(
        self,
        partner_id: str,
        batch_id: str,
        last_event_id: str | None = None,
        *,
        read_timeout: float | None = None,
        max_reconnects: int | None = None,
    ) -> AsyncEventStream[CardholderBatchEvent]:
        """The batch's live progress (``GET {cms}/app/partners/{partnerId}/cardholders/batch/{batchId}/
        progress``, D188): an iterator of :class:`BatchProgressEvent`, :class:`RowFailedEvent` and,
        last, :class:`BatchDoneEvent` (the stream then ends). A finished batch replays its events.

        ``last_event_id`` resumes after that event (``stream.last_event_id`` of an earlier stream). A
        dropped connection is reopened with ``Last-Event-ID`` (``max_reconnects`` consecutive failures at
        most, default 10), nothing lost or repeated; the first reconnect logs :data:`AFFINITY_WARNING`
        once. No read timeout applies between events unless ``read_timeout`` is given. ``async with`` it,
        or ``aclose()`` it, to close the connection.
        """
        op = progress_operation(partner_id, batch_id, last_event_id, read_timeout, max_reconnects)
        return AsyncEventStream(self._client, op)

    async def wait(
        self,
        partner_id: str,
        batch_id: str,
        *,
        read_timeout: float | None = None,
        max_reconnects: int | None = None,
    ) -> CardholderBatchResult:
        """Follow the batch's progress from its first event to ``done`` and answer the
        :class:`CardholderBatchResult`: the final counts and every failed row (row order). Reconnects as
        :meth:`progress` does; a stream that ends cleanly before ``done`` is reopened after its last event
        (D222). Raises the API error of a wrong partner or batch (``404``)."""
        collector = _Collector()
        reconnects = 0
        for _ in range(MAX_EARLY_ENDS + 1):
            stream = self.progress(
                partner_id,
                batch_id,
                collector.last_event_id,
                read_timeout=read_timeout,
                max_reconnects=max_reconnects,
            )
            async with stream:
                async for event in stream:
                    collector.take(event)
                    if collector.done is not None:
                        break
            collector.last_event_id = stream.last_event_id
            reconnects += stream.reconnects
            if collector.done is not None:
                return collector.result(reconnects)
            reconnects += 1
        raise _ended_early(progress_operation(partner_id, batch_id))


# unasync: end


# unasync: generated begin
# Generated by scripts/unasync.py from the async code above. Do not edit by hand.
class Cardholders(Resource[M]):
    """Bulk cardholder upload (``client.backoffice.cardholders``): upload a file, follow its progress."""

    upload = Endpoint(upload_operation)
    results_page = Endpoint(results_page_operation)
    lookup = Endpoint(lookup_operation)

    def __init__(self, client: Client, *, raw: bool = False) -> None:
        super().__init__(client, raw=raw)

    def results(
        self, partner_id: str, batch_id: str, **options: Unpack[CallOptions]
    ) -> list[CreatedCardholder]:
        """Every row the batch created so far with its cardholder and card ids, in row order (D450, D452):
        :attr:`results_page` read from page 1 to its last (one ``GET`` each, ``options`` applied to each).
        Call it after :meth:`wait` for a batch's whole results."""
        page = self._send(results_page_operation(partner_id, batch_id, 1, **options))
        entries = list(page.entries)
        for number in range(2, page.pages + 1):
            more = self._send(results_page_operation(partner_id, batch_id, number, **options))
            entries.extend(more.entries)
        return entries

    def progress(
        self,
        partner_id: str,
        batch_id: str,
        last_event_id: str | None = None,
        *,
        read_timeout: float | None = None,
        max_reconnects: int | None = None,
    ) -> EventStream[CardholderBatchEvent]:
        """The batch's live progress (``GET {cms}/app/partners/{partnerId}/cardholders/batch/{batchId}/
        progress``, D188): an iterator of :class:`BatchProgressEvent`, :class:`RowFailedEvent` and,
        last, :class:`BatchDoneEvent` (the stream then ends). A finished batch replays its events.

        ``last_event_id`` resumes after that event (``stream.last_event_id`` of an earlier stream). A
        dropped connection is reopened with ``Last-Event-ID`` (``max_reconnects`` consecutive failures at
        most, default 10), nothing lost or repeated; the first reconnect logs :data:`AFFINITY_WARNING`
        once. No read timeout applies between events unless ``read_timeout`` is given. ``with`` it,
        or ``close()`` it, to close the connection.
        """
        op = progress_operation(partner_id, batch_id, last_event_id, read_timeout, max_reconnects)
        return EventStream(self._client, op)

    def wait(
        self,
        partner_id: str,
        batch_id: str,
        *,
        read_timeout: float | None = None,
        max_reconnects: int | None = None,
    ) -> CardholderBatchResult:
        """Follow the batch's progress from its first event to ``done`` and answer the
        :class:`CardholderBatchResult`: the final counts and every failed row (row order). Reconnects as
        :meth:`progress` does; a stream that ends cleanly before ``done`` is reopened after its last event
        (D222). Raises the API error of a wrong partner or batch (``404``)."""
        collector = _Collector()
        reconnects = 0
        for _ in range(MAX_EARLY_ENDS + 1):
            stream = self.progress(
                partner_id,
                batch_id,
                collector.last_event_id,
                read_timeout=read_timeout,
                max_reconnects=max_reconnects,
            )
            with stream:
                for event in stream:
                    collector.take(event)
                    if collector.done is not None:
                        break
            collector.last_event_id = stream.last_event_id
            reconnects += stream.reconnects
            if collector.done is not None:
                return collector.result(reconnects)
            reconnects += 1
        raise _ended_early(progress_operation(partner_id, batch_id))


# unasync: generated end
