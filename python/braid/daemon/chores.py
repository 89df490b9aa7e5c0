"""What the daemon does every second once it is ready, on a thread of its own: it looks at its
configuration file again (a ConfigMap edit applies, and is logged and counted, even while no
call comes) and keeps braid's conflist on the node in line (``--cni-conf-dir``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from braid.daemon.logs import DAEMON_LOGGER

log = logging.getLogger(DAEMON_LOGGER)
INTERVAL_SECONDS = 1.0


class Chores:
    """Runs each of ``tasks`` every ``interval`` seconds, in order, until ``stop``; a task that
    raises is logged and the others go on."""

    def __init__(
        self, tasks: Sequence[Callable[[], object]], interval: float = INTERVAL_SECONDS
    ) -> None:
        self.tasks = list(tasks)
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="braid-chores", daemon=True)

    def start(self) -> None:
        if self.tasks:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def _run(self) -> None:
        while True:
            for task in self.tasks:
                try:
                    task()
                except Exception:  # one chore's bug must not stop the others
                    log.exception("a periodic task of the daemon failed")
            if self._stop.wait(self.interval):
                return
