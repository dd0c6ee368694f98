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
