"""``schedlab-wl FAMILY:key=value,...``: schedlab's native workload programs
(pipe, hackbench, workqueue, barrier, periodic, schbench; and the probes
of ``schedlab calibrate``: ``pipecost``, ``wakecost``, ``refillcost``,
``stalls``), installed with the package.

They run as threads of this process (the Rust code in ``schedlab._native``,
with the GIL released), named ``wl-...`` so that a recording can be filtered
with ``--comm 'wl-*'``. Each prints its metric as one JSON line. SIGINT and
SIGTERM stop the workload at its next check (exit 130). For a QEMU guest,
build the same programs as one static binary:
``RUSTFLAGS='-C target-feature=+crt-static' cargo build --release -p schedlab-wl
--target x86_64-unknown-linux-gnu``.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

from . import _native


def main() -> None:
    box: dict[str, int] = {}

    def target() -> None:
        box["rc"] = _native.wl_main(sys.argv[1:])

    def stop(_sig: int, _frame: Any) -> None:
        _native.wl_stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    t = threading.Thread(target=target, name="schedlab-wl", daemon=True)
    t.start()
    while t.is_alive():
        t.join(0.05)
    sys.stdout.flush()
    sys.exit(box.get("rc", 1))
