"""v0.3 ⇄ 1.0 request translators (docs/compat-v03.md): push notification configs and send parameters.

Same conventions as :mod:`quineling.a2a.compat_v03.translate`: ``*_to_v1`` validate v0.3 input and raise
:class:`InvalidParamsError`; ``*_to_v03`` render 1.0 values.
"""

from __future__ import annotations

from typing import Any

from quineling.a2a.compat_v03._shape import (
    copy_nonempty,
    copy_present,
    invalid,
    require_array,
    require_object,
)
from quineling.a2a.compat_v03.translate import message_to_v1
from stores.jsontypes import JSON as Json

# --- push notification configs -------------------------------------------------------------------------


def push_config_to_v1(config: Any, path: str = "pushNotificationConfig") -> Json:
    """A v0.3 PushNotificationConfig → the flat 1.0 fields (``id``, ``url``, ``token``, ``authentication``)."""
    config = require_object(config, path)
    out = copy_nonempty(config, {}, "id", "url", "token")
    auth = config.get("authentication")
    if auth is not None:
        auth = require_object(auth, f"{path}.authentication")
        schemes = require_array(auth.get("schemes"), f"{path}.authentication.schemes")
        if not schemes or not isinstance(schemes[0], str):
            raise invalid(f"{path}.authentication.schemes", "must list at least one scheme name")
        # 1.0 carries a single scheme; the extra v0.3 schemes have no home and are dropped.
        out["authentication"] = copy_nonempty(auth, {"scheme": schemes[0]}, "credentials")
    return out


def push_config_to_v03(config: Json) -> Json:
    """The flat 1.0 fields → a nested v0.3 PushNotificationConfig."""
    out = copy_nonempty(config, {}, "id", "url", "token")
    auth = config.get("authentication")
    if auth:
        schemes = [auth["scheme"]] if auth.get("scheme") else []
        out["authentication"] = copy_nonempty(auth, {"schemes": schemes}, "credentials")
    return out


def task_push_config_to_v1(config: Any, path: str = "params") -> Json:
    """v0.3 ``{taskId, pushNotificationConfig}`` → a flat 1.0 TaskPushNotificationConfig."""
    config = require_object(config, path)
    inner = push_config_to_v1(config.get("pushNotificationConfig"), f"{path}.pushNotificationConfig")
    return {**copy_present(config, {}, "taskId"), **inner}


def task_push_config_to_v03(config: Json) -> Json:
    return {"taskId": config.get("taskId", ""), "pushNotificationConfig": push_config_to_v03(config)}


# --- send requests -------------------------------------------------------------------------------------


def send_config_to_v1(config: Any, path: str = "configuration") -> Json:
    config = require_object(config, path)
    out = copy_present(config, {}, "acceptedOutputModes", "historyLength")
    if config.get("pushNotificationConfig") is not None:
        push = push_config_to_v1(config["pushNotificationConfig"], f"{path}.pushNotificationConfig")
        out["taskPushNotificationConfig"] = push
    blocking = config.get("blocking")
    if blocking is not None and not isinstance(blocking, bool):
        raise invalid(f"{path}.blocking", "must be a boolean")
    # An absent `blocking` means blocking, as the v0.3 SDKs do (docs/compat-v03.md, "Translation choices").
    out["returnImmediately"] = blocking is False
    return out


def send_params_to_v1(params: Json) -> Json:
    """v0.3 MessageSendParams → 1.0 SendMessageRequest (no tenant: v0.3 has none)."""
    out: Json = {"message": message_to_v1(params.get("message"))}
    if params.get("configuration") is not None:
        out["configuration"] = send_config_to_v1(params["configuration"])
    if params.get("metadata") is not None:  # judged like 1.0's, not dropped when empty-ish
        require_object(params["metadata"], "metadata")
    return copy_nonempty(params, out, "metadata")
