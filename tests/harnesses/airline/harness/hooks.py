"""Hooks of the Skyway support harness. Pure functions fn(payload, config) -> {"ok": ...}."""

from __future__ import annotations

import re


def check_booking_reference(payload: dict, config: dict) -> dict:
    """Event tool_call. Payload: tool_name, arguments. Config: reference_params (names)."""
    arguments = payload.get("arguments") or {}
    for name in config.get("reference_params", []):
        value = arguments.get(name)
        if value is not None and not re.fullmatch(r"[A-Z0-9]{6}", str(value)):
            return {"ok": False, "feedback": f"{payload.get('tool_name')}: {name} {value!r} is "
                                             f"not a booking reference (six capital letters "
                                             f"and digits); ask the traveller or fix its case."}
    return {"ok": True}


def check_promises(payload: dict, config: dict) -> dict:
    """Event reply. Payload: reply. Config: phrases a reply may not contain."""
    text = (payload.get("reply") or "").lower()
    for phrase in config.get("phrases", []):
        if phrase in text:
            return {"ok": False, "feedback": f"The reply promises \"{phrase}\", which no tool "
                                             f"confirmed. Say what the tools returned instead."}
    return {"ok": True}
