"""Result formatting (summarize, % vs first, mean ± sd) on fake frames,
independent of the engine."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlab import UnknownNameError, summarize
from schedlab._compare import (
    default_metrics,
    fmt_mean_sd,
    fmt_num,
    fmt_pct,
    metric_columns,
)
from schedlab._cli_compare import _compare_table


def fake_frame() -> pd.DataFrame:
    """Two policies x three runs, as `compare` returns them."""
    rows = []
    values = {
        "eevdf": ([10.0, 12.0, 14.0], [100.0, 110.0, 120.0], [5, 7, 9]),
        "eevdf+x": ([8.0, 9.0, 10.0], [100.0, 100.0, 100.0], [5, 7, 9]),
    }
    for policy, (ct, p99, mig) in values.items():
        for i in range(3):
            rows.append(
                {
                    "policy": policy,
                    "run": i,
                    "seed": i,
                    "machine": "m",
                    "workload": "w",
                    "events_processed": 1,
                    "sim_time_ns": 1,
                    "wakeup_latency_p99_us": p99[i],
                    "completion_time_s": ct[i],
                    "migrations": mig[i],
                    "idle_pct": 0.0,
                }
            )
    df = pd.DataFrame(rows)
    df.attrs.update(
        {
            "primary": "completion_time_s",
            "units": {
                "completion_time_s": "s",
                "wakeup_latency_p99_us": "us",
                "migrations": "count",
                "idle_pct": "pct",
            },
            "better": {
                "completion_time_s": "lower",
                "wakeup_latency_p99_us": "lower",
                "migrations": "neither",
                "idle_pct": "neither",
            },
        }
    )
    return df


def test_summary_mean_sd_and_pct_vs_first() -> None:
    s = summarize(fake_frame(), ["completion_time_s"])
    assert list(s["policy"]) == ["eevdf", "eevdf+x"]
    base, other = s.iloc[0], s.iloc[1]
    assert base["mean"] == pytest.approx(12.0)
    assert base["sd"] == pytest.approx(2.0)  # sample sd of 10, 12, 14
    assert math.isnan(base["pct_vs_first"])
    assert other["mean"] == pytest.approx(9.0)
    assert other["sd"] == pytest.approx(1.0)
    assert other["pct_vs_first"] == pytest.approx(-25.0)
    assert other["unit"] == "s"
    assert other["better"] == "lower"
    assert other["n"] == 3


def test_summary_default_is_every_metric_primary_first() -> None:
    s = summarize(fake_frame())
    metrics = list(dict.fromkeys(s["metric"]))
    assert metrics[0] == "completion_time_s"
    assert set(metrics) == {"completion_time_s", "wakeup_latency_p99_us", "migrations", "idle_pct"}


def test_default_metrics_order() -> None:
    df = fake_frame()
    assert default_metrics(df) == ["completion_time_s", "wakeup_latency_p99_us", "migrations"]
    assert metric_columns(df)[0] == "completion_time_s"


def test_unknown_metric_is_unknown_name_error() -> None:
    with pytest.raises(UnknownNameError, match="no_such_metric"):
        summarize(fake_frame(), ["no_such_metric"])


def test_zero_baseline_and_single_run_give_nan() -> None:
    df = fake_frame()
    s = summarize(df, ["idle_pct"])
    assert math.isnan(s.iloc[1]["pct_vs_first"])
    one = df[df["run"] == 0].copy()
    one.attrs = df.attrs
    s1 = summarize(one, ["completion_time_s"])
    assert math.isnan(s1.iloc[0]["sd"])


def test_formatting() -> None:
    # The sd to two significant digits, the mean to the same place.
    assert fmt_mean_sd(12.0, 2.0) == "12.0 ± 2.0"
    assert fmt_mean_sd(0.004884, 0.0002783) == "0.00488 ± 0.00028"
    assert fmt_mean_sd(700444.0, 4736.0) == "700400 ± 4700"
    assert fmt_mean_sd(1.23456, math.nan) == "1.235 ± n/a"
    # Identical runs whose float sd is off by rounding: a zero spread.
    assert fmt_mean_sd(0.74306864, 1.1e-16) == "0.7431 ± 0"
    assert fmt_pct(-25.0) == "-25.0%"
    assert fmt_pct(3.04) == "+3.0%"
    assert fmt_pct(math.nan) == "n/a"
    assert fmt_num(123456.0) == "123456"
    assert fmt_num(2.5e7) == "2.500e+07"
    assert fmt_num(0.0) == "0"


def test_compare_table_layout() -> None:
    df = fake_frame()
    s = summarize(df, default_metrics(df))
    table = _compare_table(s, ["eevdf", "eevdf+x"], "t")
    headers = [str(c.header) for c in table.columns]
    assert headers == ["metric", "unit", "eevdf", "eevdf+x", "% vs eevdf", "better"]
    first_row = [str(c._cells[0]) for c in table.columns]
    assert first_row == [
        "completion_time_s",
        "s",
        "12.0 ± 2.0",
        "9.0 ± 1.0",
        "-25.0%",
        "lower is better",
    ]


@given(
    st.lists(st.floats(min_value=0.5, max_value=1e6), min_size=2, max_size=8),
    st.lists(st.floats(min_value=0.5, max_value=1e6), min_size=2, max_size=8),
)
def test_summary_matches_definitions(a: list[float], b: list[float]) -> None:
    rows = [{"policy": "a", "m": v} for v in a] + [{"policy": "b", "m": v} for v in b]
    df = pd.DataFrame(rows)
    s = summarize(df, ["m"])
    mean_a, mean_b = sum(a) / len(a), sum(b) / len(b)
    assert s.iloc[0]["mean"] == pytest.approx(mean_a)
    assert s.iloc[1]["mean"] == pytest.approx(mean_b)
    var_b = sum((v - mean_b) ** 2 for v in b) / (len(b) - 1)
    assert s.iloc[1]["sd"] == pytest.approx(math.sqrt(var_b), rel=1e-6, abs=1e-9)
    assert s.iloc[1]["pct_vs_first"] == pytest.approx((mean_b - mean_a) / mean_a * 100)


def test_summary_independent_of_row_order() -> None:
    df = fake_frame()
    shuffled = df.sample(frac=1.0, random_state=3)
    shuffled.attrs = df.attrs
    # Policy order is first appearance: restore it explicitly, then compare.
    a = summarize(df)
    b = summarize(shuffled.sort_values("policy", kind="stable"))
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))
