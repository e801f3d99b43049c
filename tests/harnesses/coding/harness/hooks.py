"""Hooks of the RepoPilot harness. Pure functions fn(payload, config) -> {"ok": ...}."""

from __future__ import annotations


def check_patch_scope(payload: dict, config: dict) -> dict:
    """Event tool_call. Payload: tool_name, arguments. Config: allowed_prefixes, path_params."""
    if payload.get("tool_name") != "applyPatch":
        return {"ok": True}
    arguments = payload.get("arguments") or {}
    for name in config.get("path_params", []):
        path = str(arguments.get(name, ""))
        if ".." in path.split("/") or not path.startswith(tuple(config.get("allowed_prefixes", []))):
            return {"ok": False, "feedback": f"applyPatch: {name} {path!r} is outside "
                                             f"{', '.join(config.get('allowed_prefixes', []))}; "
                                             f"patch the file inside the repository's code."}
    return {"ok": True}
