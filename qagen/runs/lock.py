"""One process at a time in a run directory: an OS file lock, and a note of who holds it.

Two processes appending to one run directory would both pay for every call (the records are only
read at start) and each would report half of the funnel. The lock is `filelock`'s `flock(2)` on
`.qagen.lock`: the kernel releases it when its holder exits, even after `kill -9`, so a lock is
never left stale. It is taken without waiting: a second process is refused at once and told
which process holds it, from the note `.qagen.lock.owner` the holder writes once it has the lock.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from qagen.errors import RunInUseError

LOCK_NAME = ".qagen.lock"
OWNER_NAME = ".qagen.lock.owner"


class RunLock:
    """The lock of one run directory; `acquire` refuses at once when another process holds it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock_file = root / LOCK_NAME
        self.owner_file = root / OWNER_NAME
        # Not thread-local: a command may release the lock from another thread than the one that took it.
        self._lock = FileLock(str(self.lock_file), timeout=0, thread_local=False)

    def acquire(self) -> None:
        try:
            self._lock.acquire()
        except Timeout:
            raise RunInUseError(
                f"{self.root} is in use by another qagen process ({self._describe_owner()}); wait for it to "
                "finish, or stop it, then run this command again."
            ) from None
        owner = {"pid": os.getpid(), "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds")}
        try:
            self.owner_file.write_text(json.dumps(owner) + "\n", encoding="utf-8")
        except BaseException:
            self._lock.release()
            raise

    def release(self, *, remove: bool = False) -> None:
        """Release the lock; with `remove`, delete the lock's files too (a run directory never made).

        The note goes first: once the lock is free a new holder writes its own.
        """
        # Cleaning up must not hide why a command ended (a read-only folder, say): the lock matters.
        with contextlib.suppress(OSError):
            self.owner_file.unlink(missing_ok=True)
            if remove:
                # Unlinked while still held: filelock re-checks, after locking, that the path still
                # names the file it locked, so a process that opened the old file retries on a new one.
                self.lock_file.unlink(missing_ok=True)
        self._lock.release()

    def _describe_owner(self) -> str:
        try:
            owner: dict[str, Any] = json.loads(self.owner_file.read_text(encoding="utf-8"))
            return f"PID {int(owner['pid'])}, started {owner['started']}"
        except (OSError, ValueError, KeyError, TypeError):
            # The holder took the lock a moment ago and has not written its note yet.
            return "its PID is not recorded yet"
