"""A bare IPv6 ``QUINELING_A2A_HOST`` (``::1``) starts the server, bound in brackets, and the card names the
agent at a bracketed URL a client can use."""

from __future__ import annotations

import socket

import pytest
import requests

from tests.attacks.wire import get_task
from tests.support.live import live_server

pytestmark = pytest.mark.slow


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_a_bare_ipv6_host_starts_and_is_served() -> None:
    with live_server(host="::1") as server:
        assert server.base_url.startswith("http://[::1]:")
        card = requests.get(
            server.url("/.well-known/agent-card.json"), headers={"A2A-Version": "1.0"}, timeout=5
        ).json()
        urls = [interface["url"] for interface in card["supportedInterfaces"]]
        assert all(url.startswith(server.base_url + "/") for url in urls), urls
        call = requests.post(
            server.url("/a2a/jsonrpc"),
            data=get_task(),
            headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
            timeout=5,
        )
        assert call.status_code == 200 and call.json()["error"]["data"][0]["reason"] == "TASK_NOT_FOUND"
