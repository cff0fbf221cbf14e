"""The rule that decides whether an acknowledged modify was lost (lab/failures.py's
judge), on made-up client logs: no server, so each case is exact.  The experiments
themselves run in test_lab_smoke.py."""

from __future__ import annotations

from lab.failures import ClientLog, judge
from lab.verify import tree_diff, tree_digest


def log(acked=(), unanswered=()) -> ClientLog:
    return ClientLog(acked=list(acked), unanswered=list(unanswered))


def test_the_last_acknowledged_value_is_what_must_survive() -> None:
    logs = [log(acked=[(7, "v1", 0.0, 0.1), (7, "v2", 0.2, 0.3)])]
    ok = judge(logs, {7: b"v2"})
    assert (ok.acked, ok.entries, ok.lost, ok.foreign) == (2, 1, 0, 0)
    older = judge(logs, {7: b"v1"})  # the newer acknowledged value is gone
    assert older.lost == 1 and older.examples
    gone = judge(logs, {7: None})  # neither survived
    assert gone.lost == 2


def test_a_modify_in_flight_at_the_kill_may_or_may_not_have_committed() -> None:
    logs = [log(acked=[(3, "v1", 0.0, 0.1)], unanswered=[(3, "v2", 0.2)])]
    applied = judge(logs, {3: b"v2"})
    assert (applied.lost, applied.inflight, applied.inflight_applied) == (0, 1, 1)
    not_applied = judge(logs, {3: b"v1"})
    assert (not_applied.lost, not_applied.inflight_applied) == (0, 0)
    only_inflight = judge([log(unanswered=[(4, "w", 0.0)])], {4: None})
    assert only_inflight.lost == 0


def test_a_value_nobody_sent_is_reported() -> None:
    v = judge([log(acked=[(1, "v1", 0.0, 0.1)])], {1: b"garbage"})
    assert v.foreign == 1


def test_shared_entries_keep_the_change_sent_after_the_other_was_acknowledged() -> None:
    # client A's V acknowledged at 1.0; client B's W sent at 1.1, after it: W must win
    a = log(acked=[(9, "V", 0.9, 1.0)])
    b = log(acked=[(9, "W", 1.1, 1.3)])
    assert judge([a, b], {9: b"W"}).lost == 0
    assert judge([a, b], {9: b"V"}).lost == 1
    # concurrent (each sent before the other was acknowledged): either may win
    a = log(acked=[(9, "V", 0.9, 1.2)])
    b = log(acked=[(9, "W", 1.0, 1.1)])
    assert judge([a, b], {9: b"V"}).lost == 0
    assert judge([a, b], {9: b"W"}).lost == 0


def test_tree_digest_and_diff_see_one_changed_value() -> None:
    t1 = {"uid=a": {"description": [b"x"]}, "uid=b": {"cn": [b"b"]}}
    t2 = {"uid=a": {"description": [b"y"]}, "uid=b": {"cn": [b"b"]}}
    assert tree_digest(t1) == tree_digest(dict(t1)) != tree_digest(t2)
    assert "uid=a" in tree_diff([t1, t2]) and "uid=b" not in tree_diff([t1, t2])
    assert tree_diff([t1, t1]) == "trees equal"
