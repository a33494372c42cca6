"""The I/O line of the results table and of `tpubench runs`: shown only when it matters."""

from tpubench.run.train import io_time


def test_the_line_names_blocked_time_its_share_and_the_background():
    results = {
        "io_blocked_seconds": 6.5,
        "io_blocked_final_seconds": 4.25,
        "io_background_seconds": 0.5,
        "io_span_seconds": 10.0,
    }
    assert io_time.summary_line(results) == (
        "6.50 s blocked (65.0% of 10.00 s; 4.25 s of it for the last checkpoint and metrics), "
        "0.50 s in background"
    )


def test_negligible_or_missing_io_time_has_no_line():
    small = {"io_blocked_seconds": 0.3, "io_background_seconds": 0.0, "io_span_seconds": 2.0}
    assert io_time.summary_line(small) is None  # 15%, but under a second
    thin = {"io_blocked_seconds": 2.0, "io_background_seconds": 0.2, "io_span_seconds": 100.0}
    assert io_time.summary_line(thin) is None  # a second or more, but 2%
    assert io_time.summary_line({}) is None  # records from before these fields
    hidden = {"io_blocked_seconds": 0.1, "io_background_seconds": 3.0, "io_span_seconds": 20.0}
    assert io_time.summary_line(hidden) == "0.10 s blocked (0.5% of 20.00 s), 3.00 s in background"
    assert not io_time.noticeable("1.5", 10.0) and not io_time.noticeable(True, 10.0)
