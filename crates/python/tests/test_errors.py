"""Bad input raises with a message naming it, as the CLI's does."""

import pytest

import coopcache
from conftest import PHOTO, SPRITE, TRACES


def test_an_unknown_format_is_named():
    with pytest.raises(ValueError, match="trace format `nope`: expected one of lirs"):
        coopcache.simulate(SPRITE, "lru", 100, format="nope")


def test_a_missing_file_is_an_oserror_naming_it():
    missing = TRACES / "no-such.trace.gz"
    with pytest.raises(OSError, match="no-such.trace.gz"):
        coopcache.simulate(missing, "lru", 100, format="lirs")
    with pytest.raises(OSError, match="no-such.trace.gz"):
        coopcache.trace_stats(missing, format="lirs")


def test_a_format_the_name_does_not_say_is_asked_for():
    with pytest.raises(ValueError, match="its name does not say"):
        coopcache.read_trace(SPRITE)


def test_bad_policy_size_and_csv_are_named():
    with pytest.raises(ValueError, match="lruu"):
        coopcache.simulate(SPRITE, "lruu", 100, format="lirs")
    with pytest.raises(ValueError, match="`12Q`"):
        coopcache.simulate(SPRITE, "lru", "12Q", format="lirs")
    with pytest.raises(ValueError, match="needs csv=SPEC"):
        coopcache.simulate(PHOTO, "lru", 100, format="csv")
    with pytest.raises(ValueError, match="`2Q` is not a cache size"):
        coopcache.mrc(SPRITE, "lru", "1MiB..2Q:5", format="lirs")


def test_a_bad_line_names_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text("1\n2\nthree\n")
    with pytest.raises(ValueError, match=r"bad.trace:3"):
        coopcache.simulate(bad, "lru", 10, format="lirs")


def test_cluster_input_is_checked():
    with pytest.raises(ValueError, match="not both or neither"):
        coopcache.simulate_cluster("nchance")
    with pytest.raises(ValueError, match="wibble"):
        coopcache.simulate_cluster("wibble", workload="sprite-like")
    with pytest.raises(ValueError, match="set clients=N"):
        coopcache.simulate_cluster("nchance", workload="sprite-like", clients=0)
