"""A PostgreSQL cluster of the test's own: initdb in a temporary directory, a free port.

PostgreSQL refuses to run as root, so the cluster belongs to the unprivileged
`postgres` account (`runuser -u postgres --` when the tests run as root). It
can be stopped (`pg_ctl stop -m fast`: the server closes every connection),
started again on the same port and data directory, or restarted (`pg_ctl
restart`, fast or immediate), by its own pg_ctl; the machine's shared server is
never touched.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.support.ports import free_port

__all__ = ["OwnPostgres", "own_postgres"]

OWNER = "postgres"


def _bin_dir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        raise RuntimeError("PostgreSQL's initdb is needed for this test")
    return Path(initdb).parent


class OwnPostgres:
    """One cluster the test owns; `url(name)` stays the same across restarts."""

    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.port = free_port()
        # Outside pytest's tmp_path: the unprivileged owner must reach it.
        self.root = Path(tempfile.mkdtemp(prefix="xworkmate-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.as_owner: list[str] = []
        if os.geteuid() == 0:
            entry = pwd.getpwnam(OWNER)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            self.as_owner = ["runuser", "-u", OWNER, "--"]

    def _run(self, *args: str) -> None:
        subprocess.run([*self.as_owner, *args], check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres",
                  "--auth=trust", "--no-sync", "-E", "UTF8")

    def _server(self, action: str, *args: str) -> None:
        # The log file always: without -l the server would write to pg_ctl's
        # stdout, which _run captures, and it would wait for the server to end.
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
                  "-o", options, *args, "-w", "-t", "60", action)

    def start(self) -> None:
        self._server("start")

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "fast") -> None:
        """`pg_ctl restart -m mode`, back when it accepts connections again.

        fast: the server ends every session (their transactions roll back) and
        shuts down cleanly; immediate: it is killed, and crash recovery replays
        its log on the way up.
        """
        self._server("restart", "-m", mode)

    def running(self) -> bool:
        done = subprocess.run([*self.as_owner, str(self.bin / "pg_ctl"), "-D", str(self.data),
                               "status"], capture_output=True, check=False)
        return done.returncode == 0

    def createdb(self, name: str) -> None:
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port),
                  "-U", "postgres", name)

    def url(self, name: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def own_postgres() -> Iterator[OwnPostgres]:
    """An initialised, started cluster; stopped and removed when the block ends."""
    cluster = OwnPostgres()
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        if cluster.data.exists() and cluster.running():
            cluster.stop("immediate")
        cluster.remove()
