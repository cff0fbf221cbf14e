"""Free-page reuse.

In one process of the library under test: load 2,000 keys; begin a read transaction that
pins that snapshot; commit 1,000 update transactions (10 puts each, values 0..2,500 bytes)
while it is pinned; check the pinned reader still sees exactly its snapshot; end it; then
commit 20,000 more update transactions.

Pages freed while the reader was pinned, and everything freed afterwards, must be reused:
data.mdb after all 20,000 must be within 2x of its size after the first 1,000 of them.
The final content must equal the model kept by the test (so the updates really happened).
MDB_NOSYNC is used: syncing is not what this test is about, and 21,000 fsyncs would
dominate its run time.
"""

import pytest

PAGE = 4096


@pytest.mark.parametrize("seed", [11])
def test_free_pages_are_reused(seed, tmp_path, run_worker):
    r = run_worker("lib", "freelist", tmp_path / "env", seed, timeout=600)
    sizes = r["sizes"]
    assert r["snapshot_ok"], "the pinned read transaction saw later commits"
    assert r["final_ok"], "final content differs from the model"
    assert len(sizes) == 20, sizes
    # The pin must have had an effect, or this test shows nothing about reuse.
    assert r["size_pinned"] > r["size_loaded"] + 50 * PAGE, r
    assert sizes[-1] <= 2 * sizes[0], (
        f"data.mdb grew from {sizes[0]} bytes (after 1,000 updates) to {sizes[-1]} "
        f"(after 20,000): freed pages are not being reused; sizes per 1,000: {sizes}"
    )
