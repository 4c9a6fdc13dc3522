"""trace_stats and read_trace: what `coopcache trace stats` reports."""

import coopcache
from conftest import PHOTO, PHOTO_CSV, SPRITE, W106


def test_w106_counts_are_the_readmes():
    s = coopcache.trace_stats(W106, format="be32")
    assert (s["trace"], s["format"]) == ("w106.trace.xz", "be32")
    assert s["ops"] == {"requests": 5292456, "reads": 5292456, "writes": 0, "deletes": 0}
    assert s["objects"] == 275171
    assert s["one_hit_wonders"] == 105883
    assert s["cold"] == 275171
    assert round(s["zipf"]["alpha"], 4) == 1.2127
    rd = s["reuse_distance"]
    assert list(rd.columns) == ["lo", "hi", "count"]
    # Distance 0 (the same object twice in a row), as docs/guide/traces.md's table.
    assert rd[rd.lo == 0]["count"].iloc[0] == 684919
    assert rd["count"].sum() + s["cold"] == 5292456


def test_photo_sample_sizes():
    s = coopcache.trace_stats(PHOTO, format="csv", csv=PHOTO_CSV)
    assert (s["ops"]["requests"], s["objects"]) == (10000, 9469)
    sizes = s["sizes"]
    median = next(p["size"] for p in sizes["percentiles"] if p["percent"] == 50)
    assert (median, sizes["max"]) == (14042, 5161439)
    assert sizes["histogram"]["count"].sum() == 9469
    assert round(s["one_hit_wonders"] / s["objects"], 4) == 0.9632


def test_read_trace_has_every_request_and_the_stats_objects():
    df = coopcache.read_trace(SPRITE, format="lirs")
    s = coopcache.trace_stats(SPRITE, format="lirs")
    assert len(df) == s["ops"]["requests"] == 133996
    assert df.id.nunique() == s["objects"]
    assert list(df.columns) == ["time", "id", "op", "client"]
    assert (df.op == "read").all()


def test_read_trace_sizes_and_limit():
    df = coopcache.read_trace(PHOTO, format="csv", csv=PHOTO_CSV, limit=500)
    assert len(df) == 500
    assert "size" in df.columns and df.attrs == {"format": "csv", "sized": True}
    full = coopcache.read_trace(PHOTO, format="csv", csv=PHOTO_CSV)
    assert int(full["size"].sum()) == coopcache.trace_stats(
        PHOTO, format="csv", csv=PHOTO_CSV
    )["bytes_requested"]
    head = coopcache.read_trace(W106, format="be32", limit=3)
    assert list(head.time) == [0, 1, 2]
