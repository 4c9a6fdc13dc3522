"""mrc: the curves of `coopcache sim mrc`, and their agreement with replay."""

import coopcache
from conftest import PHOTO, PHOTO_CSV, SPRITE, W106


def test_lru_curve_equals_simulated_lru_at_the_same_sizes():
    sizes = [100, 500, 1000, 2000, 4000]
    curve = coopcache.mrc(SPRITE, "lru", sizes, format="lirs")
    assert list(curve.method) == ["stack"] * 5
    replayed = coopcache.simulate(SPRITE, "lru", sizes, format="lirs")
    assert list(curve.cache_size_objects) == sizes
    assert list(curve.misses) == list(replayed.misses)
    assert list(curve.requests) == list(replayed.requests)
    # libCacheSim's LRU misses on sprite at 100 and 500 objects.
    assert list(curve.misses[:2]) == [105079, 29074]


def test_other_policies_are_replayed_at_every_size(w106_golden):
    df = coopcache.mrc(W106, ["lru", "arc"], "2750,27500,137500", format="be32")
    assert list(df.method) == ["stack"] * 3 + ["replay"] * 3
    for row in df.itertuples():
        assert row.misses == w106_golden[(row.policy, row.cache_size_objects)], row


def test_percentages_are_of_the_working_set():
    df = coopcache.mrc(SPRITE, "lru", "10%..100%:4", format="lirs")
    assert len(df) == 4
    assert abs(df.working_set_fraction.iloc[-1] - 1.0) < 1e-12
    # At the whole working set only cold misses are left: one per object.
    stats = coopcache.trace_stats(SPRITE, format="lirs")
    assert df.misses.iloc[-1] == stats["cold"]
    assert df.misses.is_monotonic_decreasing


def test_byte_curve_of_the_photo_sample_is_in_bytes():
    df = coopcache.mrc(PHOTO, "lru", ["100MiB"], format="csv", csv=PHOTO_CSV)
    assert df.cache_size_bytes[0] == 100 << 20
    assert df.cache_size_objects.isna().all()
    # Within 0.0005 of byte LRU (docs/guide/simulator.md: the sample asks for photos at
    # several sizes).
    lru = coopcache.simulate(PHOTO, "lru", "100MiB", format="csv", csv=PHOTO_CSV)
    assert abs(df.byte_miss_ratio[0] - lru.byte_miss_ratio[0]) < 0.0005
