from __future__ import annotations

import asyncio
from pathlib import Path

from tests.v5.front import messages, receive_request, serving, status_of


def test_smoke(tmp_path: Path) -> None:
    async def main() -> None:
        async with serving(tmp_path) as f:
            route = await f.route("T1")
            print(route)
            sent = await f.send("T1", b"hello", tag="A")
            print(sent)
            got = await f.receive(receive_request("G1", "T1"))
            print(got)
            assert status_of(got).code == 20000
            assert messages(got)[0].body == b"hello"
    asyncio.run(main())
