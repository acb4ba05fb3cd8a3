"""A2A v0.3 shapes ⇄ 1.0 shapes, for agents that speak only v0.3 JSON-RPC: requests go out in v0.3 form
(``kind`` discriminators, lowercase roles and states, nested push configs), results come back as 1.0 dicts so
:mod:`quineling.client.models` reads one shape.
"""

from __future__ import annotations

from typing import Any

from quineling.client.models import TaskState
from quineling.protocol.v03 import (
    DATA_PART_COMPAT,
    FILE_CONTENT_TO_V03,
    FILE_CONTENT_TO_V1,
    ROLES_TO_V1,
    file_labels_to_v03,
    file_labels_to_v1,
    is_user_role,
)

JSONDict = dict[str, Any]

# --- 1.0 → v0.3 (requests) -----------------------------------------------------------------------------


def part_out(part: JSONDict) -> JSONDict:
    meta = part.get("metadata")
    extra: JSONDict = {"metadata": meta} if isinstance(meta, dict) else {}
    if "text" in part:
        return {"kind": "text", "text": part["text"], **extra}
    if "data" in part:
        data = part["data"]
        if isinstance(data, dict):
            return {"kind": "data", "data": data, **extra}
        return {"kind": "data", "data": {"value": data}, "metadata": {**(meta or {}), DATA_PART_COMPAT: True}}
    member = "raw" if "raw" in part else "url"
    file: JSONDict = {FILE_CONTENT_TO_V03[member]: part.get(member, ""), **file_labels_to_v03(part)}
    return {"kind": "file", "file": file, **extra}


def message_out(message: JSONDict) -> JSONDict:
    out: JSONDict = {k: v for k, v in message.items() if k not in ("role", "parts")}
    out["kind"] = "message"
    role = message.get("role")
    out["role"] = "user" if role == "user" or is_user_role(role) else "agent"  # a v0.3 name is let through
    out["parts"] = [part_out(p) for p in message.get("parts", [])]
    return out


def send_params_out(params: JSONDict) -> JSONDict:
    out: JSONDict = {"message": message_out(params["message"])}
    config = params.get("configuration") or {}
    v03: JSONDict = {"blocking": not config.get("returnImmediately", False)}
    for name in ("acceptedOutputModes", "historyLength"):
        if name in config:
            v03[name] = config[name]
    out["configuration"] = v03
    if params.get("metadata"):
        out["metadata"] = params["metadata"]
    return out


def push_config_out(config: JSONDict) -> JSONDict:
    inner: JSONDict = {k: config[k] for k in ("id", "url", "token") if config.get(k)}
    auth = config.get("authentication")
    if isinstance(auth, dict) and auth.get("scheme"):
        inner["authentication"] = {"schemes": [auth["scheme"]], **({"credentials": auth["credentials"]}
                                                                   if auth.get("credentials") else {})}  # fmt: skip
    return {"taskId": config.get("taskId", ""), "pushNotificationConfig": inner}


def params_out(op: str, params: JSONDict) -> JSONDict:
    """The v0.3 params of 1.0 operation ``op`` (tenant dropped: v0.3 has none)."""
    if op in ("SendMessage", "SendStreamingMessage"):
        return send_params_out(params)
    if op == "GetTask":
        return {k: params[k] for k in ("id", "historyLength") if k in params}
    if op in ("CancelTask", "SubscribeToTask"):
        return {"id": params["id"]}
    if op == "CreateTaskPushNotificationConfig":
        return push_config_out(params)
    if op in ("GetTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig"):
        return {"id": params["taskId"], "pushNotificationConfigId": params["id"]}
    if op == "ListTaskPushNotificationConfigs":
        return {"id": params["taskId"]}
    return {}


# --- v0.3 → 1.0 (results) ------------------------------------------------------------------------------


def part_in(part: Any) -> Any:
    if not isinstance(part, dict) or "kind" not in part:
        return part
    kind = part["kind"]
    meta = part.get("metadata")
    out: JSONDict = {}
    if kind == "text":
        out["text"] = part.get("text", "")
    elif kind == "data":
        data = part.get("data")
        if (
            isinstance(meta, dict)
            and meta.get(DATA_PART_COMPAT) is True
            and isinstance(data, dict)
            and "value" in data
        ):
            data = data["value"]
            meta = {k: v for k, v in meta.items() if k != DATA_PART_COMPAT}
        out["data"] = data
    elif kind == "file":
        file = part.get("file") or {}
        member = "bytes" if "bytes" in file else "uri"
        out.update({FILE_CONTENT_TO_V1[member]: file.get(member, ""), **file_labels_to_v1(file)})
    if meta:
        out["metadata"] = meta
    return out


def message_in(message: Any) -> Any:
    if not isinstance(message, dict):
        return message
    out = {k: v for k, v in message.items() if k != "kind"}
    role = message.get("role")
    out["role"] = ROLES_TO_V1.get(role, role) if isinstance(role, str) else role
    if isinstance(message.get("parts"), list):
        out["parts"] = [part_in(p) for p in message["parts"]]
    return out


def status_in(status: Any) -> Any:
    if not isinstance(status, dict):
        return status
    out = dict(status)
    out["state"] = TaskState.parse(status.get("state")).value
    if status.get("message"):
        out["message"] = message_in(status["message"])
    return out


def artifact_in(artifact: Any) -> Any:
    if not isinstance(artifact, dict):
        return artifact
    out = dict(artifact)
    if isinstance(artifact.get("parts"), list):
        out["parts"] = [part_in(p) for p in artifact["parts"]]
    return out


def task_in(task: JSONDict) -> JSONDict:
    out = {k: v for k, v in task.items() if k != "kind"}
    out["status"] = status_in(task.get("status"))
    if isinstance(task.get("history"), list):
        out["history"] = [message_in(m) for m in task["history"]]
    if isinstance(task.get("artifacts"), list):
        out["artifacts"] = [artifact_in(a) for a in task["artifacts"]]
    return out


def event_in(result: Any) -> Any:
    """A v0.3 result object (Task, Message, status or artifact update, told apart by ``kind`` or by shape) as
    the 1.0 StreamResponse / SendMessageResponse member dict; anything else unchanged."""
    if not isinstance(result, dict):
        return result
    kind = result.get("kind")
    if kind == "task" or (kind is None and "id" in result and "status" in result):
        return {"task": task_in(result)}
    if kind == "message" or (kind is None and "messageId" in result):
        return {"message": message_in(result)}
    if kind == "status-update" or (kind is None and "status" in result and "taskId" in result):
        out = {k: v for k, v in result.items() if k not in ("kind", "final")}
        out["status"] = status_in(result.get("status"))
        return {"statusUpdate": out}
    if kind == "artifact-update" or (kind is None and "artifact" in result):
        out = {k: v for k, v in result.items() if k != "kind"}
        out["artifact"] = artifact_in(result.get("artifact"))
        return {"artifactUpdate": out}
    return result


def push_config_in(config: Any) -> Any:
    if not isinstance(config, dict):
        return config
    inner = config.get("pushNotificationConfig")
    if not isinstance(inner, dict):
        return config
    out: JSONDict = {
        "taskId": config.get("taskId", ""),
        **{k: v for k, v in inner.items() if k != "authentication"},
    }
    auth = inner.get("authentication")
    if isinstance(auth, dict) and auth.get("schemes"):
        out["authentication"] = {"scheme": auth["schemes"][0],
                                 **({"credentials": auth["credentials"]} if auth.get("credentials") else {})}  # fmt: skip
    return out


def result_in(op: str, result: Any) -> Any:
    """The 1.0 result of ``op`` from the v0.3 one."""
    if op in ("SendMessage", "SendStreamingMessage", "SubscribeToTask"):
        return event_in(result)
    if op in ("GetTask", "CancelTask"):
        return task_in(result) if isinstance(result, dict) else result
    if op in ("CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig"):
        return push_config_in(result)
    if op == "ListTaskPushNotificationConfigs":
        return {"configs": [push_config_in(c) for c in result] if isinstance(result, list) else []}
    return result
