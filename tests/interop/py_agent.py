"""A small A2A agent built on the official Python SDK (a2a-sdk 1.3.0) server: its DefaultRequestHandler,
InMemoryTaskStore and Starlette routes for JSON-RPC (with the v0.3 compat layer) and HTTP+JSON, run by uvicorn.
The executor is trivial — every message gets one fixed artifact — so a client sees the SDK's own protocol
handling.

    python -m tests.interop.py_agent [PORT]      # prints "ready <port>" once listening; port 0 picks one

A message whose first text part starts with ``slow`` keeps the task WORKING for SLOW_SECONDS first (for
cancel and subscribe tests).
"""

from __future__ import annotations

import asyncio
import socket
import sys

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette

SLOW_SECONDS = 1.5
ARTIFACT_ID = "fixture-result"


class FixedExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        updater = TaskUpdater(event_queue, task_id, context_id)
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(
                    id=task_id, context_id=context_id, status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
                )
            )
        await updater.start_work()
        if context.get_user_input().startswith("slow"):
            await asyncio.sleep(SLOW_SECONDS)
        await updater.add_artifact([Part(text="fixture-result")], artifact_id=ARTIFACT_ID, name="result")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def card(base: str) -> AgentCard:
    return AgentCard(
        name="Python SDK fixture agent",
        description="Answers every message with one fixed artifact (a2a-sdk DefaultRequestHandler).",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=f"{base}/a2a/jsonrpc", protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=f"{base}/a2a/rest", protocol_binding="HTTP+JSON", protocol_version="1.0"),
            AgentInterface(url=f"{base}/a2a/jsonrpc", protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="echo", name="Fixed answer", description="Returns a fixed artifact.", tags=["fixture"]
            )
        ],
    )


def app(port: int) -> Starlette:
    agent_card = card(f"http://127.0.0.1:{port}")
    handler = DefaultRequestHandler(
        agent_executor=FixedExecutor(), task_store=InMemoryTaskStore(), agent_card=agent_card
    )
    routes = [
        *create_agent_card_routes(agent_card, cache_control="public, max-age=60"),
        *create_jsonrpc_routes(handler, "/a2a/jsonrpc", enable_v0_3_compat=True),
        *create_rest_routes(handler, path_prefix="/a2a/rest"),
    ]
    return Starlette(routes=routes)


def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app(port), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)

    async def serve() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            await asyncio.sleep(0.02)
        print(f"ready {port}", flush=True)
        await task

    asyncio.run(serve())


if __name__ == "__main__":
    main()
