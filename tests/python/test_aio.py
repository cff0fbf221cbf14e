"""mdb.aio: asyncio wrappers run every engine call in an executor."""

from __future__ import annotations

import asyncio

import mdb.aio


def test_aio_roundtrip(env):
    async def main():
        aenv = mdb.aio.wrap(env)
        async with aenv.begin(write=True) as txn:
            await txn.put(b"a", b"1")
            await asyncio.gather(txn.put(b"b", b"2"), txn.put(b"c", b"3"))
        txn = await aenv.begin()
        assert await txn.get(b"b") == b"2"
        async with txn.cursor() as cur:
            assert await cur.iternext(values=False) == [b"a", b"b", b"c"]
            assert await cur.set_key(b"c") and cur.value() == b"3"
        await txn.abort()
        try:
            async with aenv.begin(write=True) as txn:
                await txn.put(b"d", b"4")
                raise KeyError
        except KeyError:
            pass
        assert (await aenv.stat())["entries"] == 3
        assert aenv.path() == env.path()

    asyncio.run(main())
