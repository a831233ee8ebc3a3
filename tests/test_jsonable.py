"""core/base/jsonable.py: notebook values (pandas, NumPy) as plain JSON for %%skillrun --eval."""

from __future__ import annotations

import datetime
import json

import numpy as np
import pandas as pd
import pytest

from skill_magics.core.base.errors import ArgumentSerializationError
from skill_magics.core.base.jsonable import to_jsonable
from skill_magics.core.run.planning.payload import encode_arguments


def strict(value):
    """What the executor sends: strict JSON (raises on anything else)."""
    return json.loads(json.dumps(value, allow_nan=False))


def test_dataframe_to_dict_default_orient_becomes_strict_json():
    df = pd.DataFrame({"n": [1, 2], "x": [0.5, float("nan")], "s": ["a", None]})
    assert strict(to_jsonable(df.head().to_dict())) == {
        "n": {"0": 1, "1": 2},
        "x": {"0": 0.5, "1": None},
        "s": {"0": "a", "1": None},
    }


def test_numpy_and_pandas_scalars_missing_values_and_dates():
    df = pd.DataFrame({"n": [1, 2, 3], "when": pd.to_datetime(["2026-01-02", None, "2026-03-04"])})
    value = {
        "sum": df["n"].sum(),  # numpy.int64
        "mean": np.float32(1.5),
        "flag": np.bool_(True),
        "arr": np.array([[1, 2], [3, 4]]),
        "first": df["when"].iloc[0],  # Timestamp
        "missing": df["when"].iloc[1],  # NaT
        "na": pd.NA,
        "day": datetime.date(2026, 1, 2),
        "rows": df.to_dict(orient="records"),
        "tuple": (1, np.int16(2)),
    }
    got = strict(to_jsonable(value))
    assert got["sum"] == 6 and got["mean"] == 1.5 and got["flag"] is True
    assert got["arr"] == [[1, 2], [3, 4]]
    assert got["first"] == "2026-01-02T00:00:00" and got["missing"] is None and got["na"] is None
    assert got["day"] == "2026-01-02" and got["tuple"] == [1, 2]
    assert got["rows"][1] == {"n": 2, "when": None}


def test_keys_follow_json_dumps_and_timestamps_become_iso():
    series = pd.Series([1, 2], index=pd.to_datetime(["2026-01-01", "2026-01-02"]))
    assert to_jsonable({1: "a", 1.5: "b", None: "d"}) == {"1": "a", "1.5": "b", "null": "d"}
    assert to_jsonable({True: "t", False: "f"}) == {"true": "t", "false": "f"}
    assert to_jsonable(series.to_dict()) == {"2026-01-01T00:00:00": 1, "2026-01-02T00:00:00": 2}


def test_what_cannot_be_converted_is_still_refused_by_the_executor():
    for bad in ({"s": {1, 2}}, {(1, 2): "tuple key"}, {"inf": float("inf")}, pd.DataFrame()):
        with pytest.raises(ArgumentSerializationError):
            encode_arguments(to_jsonable(bad))
    loop: dict = {}
    loop["self"] = loop
    with pytest.raises(ArgumentSerializationError):
        encode_arguments(to_jsonable(loop))


def test_numpy_keys_become_their_plain_json_text():
    keys = dict(zip(np.array([0.1, 2.5]), [1, 2], strict=True))
    assert to_jsonable(keys) == {"0.1": 1, "2.5": 2}
    assert to_jsonable({np.int64(3): "x", np.bool_(True): "y"}) == {"3": "x", "true": "y"}


@pytest.mark.parametrize("value", [{1: "a", "1": "b"}, {None: "a", "null": "b"}])
def test_keys_that_collide_in_json_are_refused_not_dropped(value):
    with pytest.raises(ArgumentSerializationError, match="both become"):
        to_jsonable(value)
