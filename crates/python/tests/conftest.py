"""Where the tests find the shared traces and the golden figures."""

import csv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
TRACES = REPO.parent / "shared" / "traces"
W106 = TRACES / "w106.trace.xz"
SPRITE = TRACES / "sprite.trace.gz"
PHOTO = TRACES / "snia" / "tencent-photo-sample.csv.bz2"
PHOTO_CSV = "sep=space,id=2,size=5,ids=hash"


def golden(path: Path, trace: str) -> dict:
    """(policy, cache size in objects) -> misses, from a golden CSV."""
    with open(path, newline="") as f:
        return {
            (r["policy"], int(r["cache_size_objects"])): int(r["misses"])
            for r in csv.DictReader(f)
            if r["trace"] == trace
        }


@pytest.fixture(scope="session")
def w106_golden() -> dict:
    """libCacheSim's misses on w106: the shared goldens and the repo's."""
    found = golden(TRACES / "golden-libcachesim.csv", "w106")
    found.update(golden(REPO / "crates/sim/tests/golden-blocks-libcachesim.csv", "w106"))
    return found


def pytest_configure(config):
    missing = [p for p in (W106, SPRITE, PHOTO) if not p.exists()]
    if missing:
        raise pytest.UsageError(f"shared traces missing (../shared beside the checkout): {missing}")
