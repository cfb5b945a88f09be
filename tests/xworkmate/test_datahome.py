"""The data home keeps one generated secret per name, across processes and restarts."""

from __future__ import annotations

import stat
from concurrent.futures import ProcessPoolExecutor

from xworkmate.datahome import ensure_home, stored_secret


def test_it_creates_a_secret_once_and_reuses_it(tmp_path):
    ensure_home(tmp_path)
    first = stored_secret(tmp_path, "artifact_ref_secret")
    assert len(first) == 64 and int(first, 16) >= 0
    assert stored_secret(tmp_path, "artifact_ref_secret") == first
    assert stored_secret(tmp_path, "other") != first
    mode = stat.S_IMODE((tmp_path / "secrets" / "artifact_ref_secret").stat().st_mode)
    assert mode == 0o600
    assert stat.S_IMODE((tmp_path / "secrets").stat().st_mode) == 0o700


def test_racing_processes_agree_on_one_secret(tmp_path):
    with ProcessPoolExecutor(max_workers=4) as pool:
        values = list(pool.map(stored_secret, [tmp_path] * 16, ["shared"] * 16))
    assert len(set(values)) == 1
    assert sorted(p.name for p in (tmp_path / "secrets").iterdir()) == ["shared"]  # no temp files left
