"""The audit's engine choice (``--engine spark|comet``): validated without a JVM, refused in one line where it cannot
run, and really in use when a session runs on it (a comet session's plans hold Comet's native operators, a Spark
one's none), so that a lane auditing "with Comet" is not silently auditing with Spark."""

from __future__ import annotations

import pytest

from conformance.audit import engine
from conformance.cli import main


def test_an_unknown_engine_is_a_usage_error_naming_the_option(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="--engine must be one of spark, comet, got 'velox'"):
        engine.check_engine("velox")
    trace = tmp_path / "t.jsonl"
    trace.write_text("")
    with pytest.raises(SystemExit) as stop:  # argparse's refusal: exit 2, one line
        main(["audit", str(trace), "--report-dir", str(tmp_path / "r"), "--engine", "velox"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--engine" in err and "velox" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_comet_on_another_spark_line_is_refused_before_any_jvm(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(engine, "_pyspark_version", lambda: "4.3.0")
    with pytest.raises(engine.EngineUnavailable, match=r"needs Spark 4\.1, this Python has pyspark 4\.3\.0"):
        engine.engine_conf("comet")
    assert engine.engine_conf("spark") == {}


def test_the_engine_comes_from_the_environment_when_not_asked(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(engine.ENGINE_ENV, "comet")
    assert engine.default_engine() == "comet"
    monkeypatch.delenv(engine.ENGINE_ENV)
    assert engine.default_engine() == engine.DEFAULT_ENGINE == "spark"


def test_the_session_runs_on_the_engine_it_was_asked_for(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    spark.range(1000).write.parquet(str(tmp_path / "ids"))  # a scan of Parquet, as the audit's of a trace
    counted = spark.read.parquet(str(tmp_path / "ids")).groupBy((F.col("id") % 7).alias("k")).count()
    plan = counted._jdf.queryExecution().executedPlan().toString()
    assert ("Comet" in plan) == (engine.default_engine() == "comet"), plan
    assert sorted(row["count"] for row in counted.collect()) == [142] + [143] * 6


@pytest.mark.parametrize("engines, says", [
    ("spark", "--engines must name two or more different engines, got 'spark'"),
    ("spark,spark", "--engines must name two or more different engines"),
    ("spark,velox", "--engines: each must be one of spark, comet, got 'velox'"),
])
def test_engines_of_one_run_are_checked_before_any_trace_or_jvm(engines, says, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["bench", "audit", "--engines", engines, "--keep", str(tmp_path / "k")]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "k" / "trace").exists()


def test_both_engines_in_one_run_audit_one_trace_and_find_the_same(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Spark and Comet on the same Spark line (pyspark 4.1, the audit-comet lane), each in a process of its own, on
    one synthesized trace: both find exactly what was injected, and the run reports each one's time and the ratio
    (issue 42's "both engines in one run"). Where Comet cannot run here, the run is refused in one line."""
    try:
        engine.engine_conf("comet")
    except engine.EngineUnavailable as exc:
        pytest.skip(f"the comet engine cannot run in this environment: {exc}")
    import json

    assert main(["bench", "audit", "--engines", "spark,comet", "--events", "4000", "--inject",
                 "lost=2,unsafe-commit=1", "--driver-memory", "1g"]) == 0
    doc = json.loads(capsys.readouterr().out)["result"]
    assert set(doc["engines"]) == {"spark", "comet"}
    assert doc["found_exactly"] and doc["same_findings"]
    assert doc["engines"]["comet"]["parameters"]["engine"] == "comet"
    assert doc["audit_ratio"]["comet_over_spark"] > 0
