"""Settings for the test suite: the real settings, isolated from the developer's machine.

Tests never read ./xworkmate.toml or ./var: the data home is a fresh temp
directory and the config file is tests/xworkmate.test.toml unless the caller
(the integration run) sets XWORKMATE_CONFIG / XWORKMATE_HOME itself.
"""

import os
import tempfile
from pathlib import Path

os.environ.setdefault("XWORKMATE_HOME", tempfile.mkdtemp(prefix="xworkmate-test-"))
os.environ.setdefault("XWORKMATE_CONFIG", str(Path(__file__).with_name("xworkmate.test.toml")))

from xworkmate.settings import *  # noqa: F403

# Hashing the admin password with PBKDF2 would dominate the unit tests' time.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# A file (not :memory:) for the SQLite test database, so commands run as
# subprocesses in a test can open the same database.
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    DATABASES["default"]["TEST"] = {"NAME": str(HOME / "test.sqlite3")}  # noqa: F405
