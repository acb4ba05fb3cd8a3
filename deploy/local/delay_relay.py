"""A TCP relay that delays every byte by a fixed time in each direction: added network latency where the
kernel has no ``netem`` qdisc (deploy/local/topology.py uses ``tc netem`` when it can, and this otherwise).

    python deploy/local/delay_relay.py LISTEN_HOST:PORT TARGET_HOST:PORT DELAY_MS

Each chunk read from one side is written to the other ``DELAY_MS`` after it arrived, in order, so a round
trip through the relay takes ``2 × DELAY_MS`` longer, as it would over a link with that one-way delay. When
either side closes or fails, the relay closes both.
"""

from __future__ import annotations

import asyncio
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def send() -> None:
        while True:
            due, chunk = await queue.get()
            if not chunk:
                break
            await asyncio.sleep(max(0.0, due - loop.time()))
            writer.write(chunk)
            await writer.drain()

    sender = asyncio.create_task(send())
    try:
        while chunk := await reader.read(65536):
            queue.put_nowait((loop.time() + delay, chunk))
    except OSError:
        pass
    finally:
        queue.put_nowait((0.0, b""))
        try:
            await sender
        except OSError:
            pass
        writer.close()


async def serve(listen: tuple[str, int], target: tuple[str, int], delay: float) -> None:
    async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(*target)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pipe(client_reader, server_writer, delay), pipe(server_reader, client_writer, delay)
        )

    server = await asyncio.start_server(relay, *listen)
    async with server:
        await server.serve_forever()


def address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


if __name__ == "__main__":
    listen, target, delay_ms = sys.argv[1:4]
    asyncio.run(serve(address(listen), address(target), int(delay_ms) / 1000))
