"""repro.core.fsutil's plain-JSON conversion: what each kind of value becomes (golden cases), on the fast path for
lists of integers and the general one alike."""

import math

from repro.core.fsutil import jsonable


def test_values_become_plain_json():
    assert jsonable({"a": (1, 2), 3: [1.5, math.nan, math.inf], "b": [True, 2], "c": [[1, 2], [3, 4]]}) == {
        "a": [1, 2], "3": [1.5, None, None], "b": [True, 2], "c": [[1, 2], [3, 4]]}


def test_a_list_of_integers_is_copied_not_shared():
    counts = [[0, 3, 1]] * 2
    out = jsonable({"usage": counts})
    assert out == {"usage": [[0, 3, 1], [0, 3, 1]]} and out["usage"][0] is not counts[0]
    assert jsonable([1, True]) == [1, True] and type(jsonable([1, True])[1]) is bool
