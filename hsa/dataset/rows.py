"""Rendered rows: what trainers read, one per variant, and their Arrow schema.

``messages`` (system prompt rendered from the variant's harness, then the conversation, with
tool-call arguments as objects, as chat templates expect) and
``tools`` (OpenAI tool objects, the skill loader included) are stored as Arrow's JSON extension
type: Arrow never sees their inner structure, so heterogeneous dicts (tool-call arguments, JSON
schemas) are never merged into one struct with ``null`` keys, and ``datasets`` decodes them back
to Python objects (its ``Json`` feature). The ``hsa_*`` columns say where the row came from.
"""

from __future__ import annotations

import orjson
import pyarrow as pa

from hsa.augment.step import Step
from hsa.augment.variant import HarnessChange, Variant, VariantReject
from hsa.model.episode import Episode
from hsa.model.harness import Harness
from hsa.model.memo import BoundedMemo
from hsa.render import prompt_parts, render_messages, renders_alike, tools_json

JSON = pa.json_()

ROW_SCHEMA = pa.schema(
    [
        ("id", pa.string()),  # "<source id>#<variant index>", unique in a version
        ("messages", JSON),
        ("tools", JSON),
        ("hsa_source_id", pa.string()),
        ("hsa_variant", pa.int32()),
        # "<source harness fingerprint>:<slot>" of the recipe's harness-variant pool; null without
        # a pool and for the original
        ("hsa_harness_variant", pa.string()),
        ("hsa_lineage", JSON),
        ("hsa_mapping", JSON),
        ("hsa_gold", JSON),
        ("hsa_families", pa.list_(pa.string())),  # families that changed what the model reads
        ("hsa_version", pa.string()),
    ]
)

REJECT_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("line", pa.int64()),
        ("id", pa.string()),
        ("variant", pa.int32()),
        ("stage", pa.string()),  # load, check:<name>, transform:<name>, verify:<check>, render
        ("field", pa.string()),
        ("reason", pa.string()),
        ("lineage", JSON),
    ]
)


def row_id(source_id: str, index: int) -> str:
    return f"{source_id}#{index}"


def parse_row_id(text: str) -> tuple[str, int] | None:
    """The (source id, variant index) of a :func:`row_id`, or None when ``text`` is not one.
    Source ids may hold ``#`` themselves: the index is what follows the last one."""
    source_id, _, index = text.rpartition("#")
    if not source_id or not (index.isascii() and index.isdigit()):
        return None
    return source_id, int(index)


def _json(value) -> str:
    return orjson.dumps(value).decode()


# The JSON of a harness stage's lineage by its steps' ids: every row of a harness variant starts
# its lineage with the same Step objects (hsa.augment.stage). The entry holds the steps, so while
# remembered their ids are theirs. Serialising them took 5% of a shared-harness run.
_STAGE_LINEAGE_JSON: BoundedMemo[tuple[tuple[Step, ...], str]] = BoundedMemo(1024)


def lineage_json(lineage, shared: int = 0) -> str:
    """A lineage as JSON, each step as :meth:`Step.to_dict` writes it. Its first ``shared``
    steps (a harness variant's, ``Variant.stage_steps``) are serialised once per harness
    variant; the JSON is the same."""
    if not shared:
        return _json([s.to_dict() for s in lineage])
    head = tuple(lineage[:shared])
    _, head_json = _STAGE_LINEAGE_JSON.get(
        tuple(map(id, head)), lambda: (head, _json([s.to_dict() for s in head]))
    )
    if len(lineage) <= shared:
        return head_json
    # orjson writes a list as "[" + its items joined by "," + "]", each item as it would
    # alone (no spaces): so a lineage's JSON starts with its head's JSON, less the "]"
    # (hsa.dataset.harness_variants cuts a row's harness lineage out of it by that too)
    return head_json[:-1] + "," + _json([s.to_dict() for s in lineage[shared:]])[1:]


def chat_template_messages(messages: list[dict]) -> list[dict]:
    """Messages as chat templates and TRL expect them: tool-call arguments as objects.

    Episodes keep OpenAI's JSON-string arguments; templates (Qwen's among them) apply ``tojson``
    to the arguments, which would double-encode a string."""
    return [chat_template_message(message) for message in messages]


def chat_template_message(message: dict) -> dict:
    """One message as :func:`chat_template_messages` writes it."""
    calls = message.get("tool_calls")
    if not calls:
        return message
    return {
        **message,
        "tool_calls": [
            {
                **call,
                "function": {
                    **call["function"],
                    "arguments": orjson.loads(call["function"]["arguments"]),
                },
            }
            for call in calls
        ],
    }


# A conversation's messages as a row writes them (:func:`chat_template_message`, as JSON), by the
# message object: the variants of an episode share every message their steps left alone (a
# user's question, a tool's result, the reply), so each is converted and written once. The entry
# holds the message, so while remembered its id is no other message's.
_MESSAGE_JSON: BoundedMemo[tuple[dict, str]] = BoundedMemo(4096)


def messages_json(rendered: list[dict], conversation: tuple[dict, ...]) -> str:
    """``_json(chat_template_messages(rendered))``: the messages the model reads (``rendered``,
    :func:`render_messages`) as a row's ``messages`` column, the conversation's own messages
    among them (``conversation``) written once per message object."""
    own = {id(message) for message in conversation}
    parts = [
        _MESSAGE_JSON.get(id(m), lambda m=m: (m, _json(chat_template_message(m))))[1]
        if id(m) in own
        else _json(chat_template_message(m))
        for m in rendered
    ]
    # orjson writes a list as "[" + its items joined by "," + "]", each item as it would alone
    return "[" + ",".join(parts) + "]"


def visibly_changed(before: Episode, after: Episode) -> bool:
    """Whether ``after`` shows the model anything else than ``before``: other messages, other
    tools (the skill loader's list of ids and the order of schema keys included), or another
    rendered prompt. A change the model never reads (a skill body no message loads, a hook's
    code, gold) is no change."""
    if before is after:
        return False
    if before.messages != after.messages:
        return True
    return harness_visibly_changed(before.harness, after.harness, after.messages)


def harness_visibly_changed(before: Harness, after: Harness, conversation) -> bool:
    """Whether ``conversation`` under ``after`` shows the model anything else than under
    ``before`` (:func:`visibly_changed` of a step that kept the conversation)."""
    if before is after:
        return False
    verdict = _HARNESS_CHANGES.get(
        (id(before), id(after)), lambda: (before, after, _harness_change(before, after))
    )[2]
    if verdict is not None:
        return verdict
    # The prompts differ: apart wherever the conversation has a user turn (renders_alike).
    return not renders_alike(before, after, conversation)


def _harness_change(before: Harness, after: Harness) -> bool | None:
    """What :func:`visibly_changed` reads of two harnesses alone: True when the tools the model
    reads differ, False when they and the prompt parts are the same, None when only the prompt
    parts differ (whether that shows depends on the conversation: :func:`renders_alike`)."""
    tools, others = before.all_tools(), after.all_tools()
    if tools != others:
        return True
    # Equal tools may be written in another order of their schemas' keys
    # (``tool_property_order``), which the tools column shows the model whatever the layout
    # renders; a tool no step touched is the same object, and its column is not looked at.
    touched = any(tool is not other for tool, other in zip(tools, others, strict=True))
    if touched and tools_json(before) != tools_json(after):
        return True
    return False if prompt_parts(before) == prompt_parts(after) else None


# What two harnesses show apart (:func:`_harness_change`), by the harnesses' ids: every row of a
# pool's harness variant replays the same steps on the same harness objects, so each step's
# verdict is made once. The entry holds both harnesses, so while remembered their ids are theirs.
_HARNESS_CHANGES: BoundedMemo[tuple[Harness, Harness, bool | None]] = BoundedMemo(4096)


def visible_families(variant: Variant) -> list[str]:
    """The families whose transforms changed what the model reads in this variant (sorted):
    each fired step of its trail compared before and after (:func:`visibly_changed`)."""
    found: set[str] = set()
    for family, before, after in variant.trail:
        if family in found:
            continue
        if isinstance(before, HarnessChange):
            changed = harness_visibly_changed(before.before, before.after, after.messages)
        else:
            changed = visibly_changed(before, after)
        if changed:
            found.add(family)
    return sorted(found)


def variant_row(variant: Variant, version: str) -> dict:
    """The rendered row of one variant. ``hsa_families`` names the families that changed what
    the model reads (statistics count rows that changed, not transforms that fired)."""
    episode = variant.episode
    changed = visible_families(variant)
    return {
        "id": row_id(variant.source_id, variant.index),
        "messages": messages_json(render_messages(episode), episode.messages),
        "tools": tools_json(episode.harness),
        "hsa_source_id": variant.source_id,
        "hsa_variant": variant.index,
        "hsa_harness_variant": variant.harness_variant,
        "hsa_lineage": lineage_json(variant.lineage, variant.stage_steps),
        "hsa_mapping": variant.mapping.json,
        "hsa_gold": _json(episode.gold.to_dict()),
        "hsa_families": changed,
        "hsa_version": version,
    }


def reject_row(reject: VariantReject, *, source: str, line: int | None) -> dict:
    return {
        "source": source,
        "line": line,
        "id": reject.source_id,
        "variant": reject.index,
        "stage": reject.stage,
        "field": None,
        "reason": reject.reason,
        "lineage": lineage_json(reject.lineage),
    }


def skill_licenses(harness) -> dict:
    """``{"<harness>/<skill id>": licence or None}`` of a harness's skills: what a version's
    manifest lists for every source harness whose text its rows carry."""
    return {f"{harness.name}/{s.id}": s.license for s in harness.skills}
