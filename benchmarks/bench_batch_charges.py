"""A 5,000-row batch CSV charge file against the reference server on SQLite (issue 22 item 7, D515).

The reference server (``benchmarks._servers.serve("reference")``, uvicorn, a fresh SQLite file). Through
the SDK: a merchant, a plan and 5,000 active subscriptions (the control plane, D142), then a wallet
client of that merchant. A warm-up upload of one row comes first (the application login, the route's
imports), so the figures leave them out. Then :data:`ROUNDS` uploads, each a new 5,000-row file (one row
per subscription, new references), timed from the SDK's call to its report: the SDK validates the file
locally (D158), sends it as one part, and the server answers once every row is charged (the answer is
the rows' results, D156). Every row must come back ``charged`` and not ``replayed``, and the last
subscription's payment history must hold one batch charge per round, or the run fails. Figures: the
median round (goal < 1 s) and its rows per second; shown beside them, the same file sent again (the
SDK's part key: the server answers it from its idempotency store, D158/D321).

``python -m benchmarks.bench_batch_charges`` runs it alone; ``make bench`` runs it with the others.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import paysdk
from benchmarks._servers import serve

#: Rows of the file: the most one part carries (``BATCH_MAX_ROWS``).
ROWS = 5000
#: Timed uploads of a new file.
ROUNDS = int(os.environ.get("PAYSDK_BENCH_BATCH_ROUNDS", "5"))


@dataclass(frozen=True)
class Figures:
    """What the uploads did."""

    rows: int
    rounds: list[float]
    replay: float

    @property
    def median(self) -> float:
        """The median round, in seconds."""
        return statistics.median(self.rounds)


def _write(path: Path, sub_uids: list[str], prefix: str) -> None:
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write("subscriptionId,amount,reference,description\r\n")
        for index, sub_uid in enumerate(sub_uids):
            out.write(f"{sub_uid},{index % 50 + 1}.{index % 100:02d},{prefix}-{index:05d},row {index}\r\n")


def bench_batch_charges(rows: int = ROWS, rounds: int = ROUNDS) -> Figures:
    """Upload ``rounds`` new ``rows``-row files (and the last one again); their times."""
    with tempfile.TemporaryDirectory(prefix="paysdk-bench-batch-") as folder, serve("reference") as url:
        environment = paysdk.Environment.local(url)
        with paysdk.Client(environment=environment, timeout=120, total_timeout=600, max_retries=0) as sandbox:
            merchant = sandbox.sandbox.create_client()
            plan = sandbox.sandbox.plans.create(merchant.slug, "9.99", name="Monthly")
            created = sandbox.sandbox.subscriptions.create(plan.plan_id, count=rows)
            sub_uids = list(created.sub_uids)
            assert merchant.signing_private_key is not None  # answered once, when the merchant is made
            wallet = paysdk.WalletCredentials(merchant.slug, merchant.signing_private_key)
            with paysdk.Client(
                environment=environment, wallet=wallet, timeout=120, total_timeout=600, max_retries=0
            ) as client:
                warm = Path(folder) / "warm.csv"
                _write(warm, sub_uids[:1], "warm")
                client.subscriptions.charges.upload_csv(warm)
                times: list[float] = []
                path = Path(folder) / "charges.csv"
                for round_ in range(rounds):
                    _write(path, sub_uids, f"r{round_}")
                    started = time.perf_counter()
                    report = client.subscriptions.charges.upload_csv(path)
                    times.append(time.perf_counter() - started)
                    if report.charged != rows or report.replayed or report.rows != rows:
                        raise SystemExit(f"batch charges: round {round_} answered {report!r:.300}")
                started = time.perf_counter()
                again = client.subscriptions.charges.upload_csv(path)
                replay = time.perf_counter() - started
                if again.replayed != rows or again.charged != rows:
                    raise SystemExit(f"batch charges: the file sent again answered {again!r:.300}")
            history = sandbox.sandbox.subscriptions.get(sub_uids[-1]).charges
            batch = [charge for charge in history if charge.source == "batch"]
            if len(batch) != rounds + (1 if rows == 1 else 0):
                raise SystemExit(f"batch charges: {sub_uids[-1]} holds {len(batch)} batch charges")
    return Figures(rows=rows, rounds=times, replay=replay)


def batch_charge_rows() -> list[tuple[str, str, str, str]]:
    """The figures as rows of ``benchmarks/run.py``'s table."""
    f = bench_batch_charges()
    return [
        (
            f"{f.rows:,}-row CSV batch accepted and charged (SQLite)",
            f"{f.rows / f.median:,.0f} rows/s; sent again {f.replay:.2f} s",
            f"{f.median:.2f} s",
            "< 1 s",
        )
    ]


def main() -> None:
    figures = bench_batch_charges()
    print(json.dumps({**asdict(figures), "median": figures.median}, indent=2))


if __name__ == "__main__":
    main()
