"""Tool schemas: change how the tools are presented without changing what they do.

Changes: the order of the tools and of each schema's properties; tool names (other words from
the general English lexicon, or opaque masks such as ``fn_qzkx``); top-level parameter names
(the same, or masks such as ``arg_qzkx``), every renamed name in the harness variant's one naming
convention (see :mod:`hsa.transforms._names`); the wording of tool and parameter
descriptions (rule-based, English and Chinese); plausible distractor tools nobody needs; equivalent
schema spellings (``required`` and ``enum`` order, an explicit ``"additionalProperties": false``
on or off); and the shape (OpenAI or MCP) in which the prompt shows the tools. Every rename moves
with all its mentions: tool calls and their argument keys, tool results that echo them, other
tools' descriptions, skill content, prompt texts, hook configuration and gold.
Keeps: what every tool does and accepts (types, required parameters, enum values, constraints),
every call's argument values, every number, quoted string, identifier and negation in a
description, and what the gold expects, up to the recorded renaming. The tools list handed to
trainers stays OpenAI-shaped; only the prompt's presentation of it changes.

Every option space a transform draws from (synonyms, naming styles, prefixes, phrasings,
distractor tools) is split into a ``train`` and a ``heldout`` part that never overlap; the
``split`` option chooses the part, so held-out variants use wordings no training variant saw.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import orjson
import yaml

from hsa.model.episode import Episode
from hsa.errors import HsaError
from hsa.model.frozen import replace
from hsa.model.harness import Harness
from hsa.augment.mapping import Mapping
from hsa.text.mentions import replace_code_mentions, replace_mentions
from hsa.text.names import name_words, write_segments
from hsa.augment.registry import register
from hsa.augment.rename import HOOK_MESSAGE_PREFIX, rename_episode, rewrite_descriptions
from hsa.model.tool import Tool
from hsa.augment.transform import Share, Transform
from hsa.text.names import identifier_like
from hsa.transforms._names import (NamingMode, Renamer, declared_or_shared, opaque_word,
                               record_convention, variant_convention)

SPLITS = ("train", "heldout")

# =============================================================================================
# Option tables. Each is split into a train part and a held-out part that never overlap.
# =============================================================================================


_TABLES = yaml.safe_load(Path(__file__).with_suffix(".yaml").read_text(encoding="utf-8"))
# Suffixes of last resort and the first words of masks (tool_schema.yaml); the words of names are
# renamed with the general lexicon (transforms/_names.py).
TOOL_NAME_SUFFIXES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["tool_name_suffixes"].items()}
PARAMETER_NAME_SUFFIXES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["parameter_name_suffixes"].items()}
TOOL_MASK_PREFIXES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["tool_mask_prefixes"].items()}
PARAMETER_MASK_PREFIXES: dict[str, tuple[str, ...]] = {
    k: tuple(v) for k, v in _TABLES["parameter_mask_prefixes"].items()}


@dataclass(frozen=True)
class Phrasing:
    """Interchangeable phrases of descriptions (``lang`` "en": matched case-insensitively as
    whole words; "zh": matched as written). No member contains a negation or a digit."""

    train: tuple[str, ...]
    heldout: tuple[str, ...]
    lang: str = "en"

    def part(self, split: str) -> tuple[str, ...]:
        return self.train if split == "train" else self.heldout


DESCRIPTION_PHRASES: tuple[Phrasing, ...] = (
    # English: verbs that open a tool description, in base and third-person form
    Phrasing(("get", "retrieve", "fetch"), ("obtain", "look up", "pull up")),
    Phrasing(("gets", "retrieves", "fetches"), ("obtains", "looks up", "pulls up")),
    Phrasing(("calculate", "compute"), ("work out", "determine")),
    Phrasing(("calculates", "computes"), ("works out", "determines")),
    Phrasing(("find", "locate"), ("search for", "look for")),
    Phrasing(("finds", "locates"), ("searches for", "looks for")),
    Phrasing(("returns", "provides"), ("gives back", "yields")),
    Phrasing(("recommend", "suggest"), ("propose", "put forward")),
    Phrasing(("list the", "show the"), ("enumerate the", "display the")),
    Phrasing(("check", "verify"), ("confirm", "inspect")),
    Phrasing(("create", "make"), ("set up", "establish")),
    Phrasing(("creates", "makes"), ("sets up", "establishes")),
    Phrasing(("convert", "transform"), ("change", "switch")),
    Phrasing(("converts", "transforms"), ("changes", "switches")),
    Phrasing(("analyze", "analyse"), ("examine", "assess")),
    Phrasing(("analyzes", "analyses"), ("examines", "assesses")),
    Phrasing(("predict", "foresee"), ("anticipate", "prognosticate")),
    Phrasing(("predicts", "foresees"), ("anticipates", "prognosticates")),
    Phrasing(("leave out", "omit"), ("skip", "drop")),
    # connectives and fixed expressions
    Phrasing(("e.g.", "for example"), ("for instance", "as an example")),
    Phrasing(("such as", "including"), ("among them", "notably")),
    Phrasing(("the given", "the specified"), ("the provided", "the supplied")),
    Phrasing(("a given", "a specified"), ("a provided", "a particular")),
    Phrasing(("default is", "defaults to"), ("default value is", "by default it is")),
    Phrasing(("in the format of", "in the form of"), ("following the format of",
                                                      "using the format of")),
    Phrasing(("in the format", "in the form"), ("following the format", "using the format")),
    Phrasing(("based on", "according to"), ("on the basis of", "derived from")),
    Phrasing(("list of", "array of"), ("collection of", "set of")),
    Phrasing(("side by side", "next to each other"), ("in parallel", "head to head")),
    Phrasing(("such that", "so that"), ("in order that", "so as to ensure that")),
    Phrasing(("specific", "particular"), ("exact", "precise")),
    Phrasing(("desired", "wanted"), ("requested", "preferred")),
    Phrasing(("maximum", "greatest"), ("highest", "largest")),
    Phrasing(("minimum", "least"), ("lowest", "smallest")),
    Phrasing(("information", "details"), ("info", "particulars")),
    Phrasing(("the user", "the caller"), ("the requester", "the end user")),
    Phrasing(("the user's", "the caller's"), ("the requester's", "the end user's")),
    Phrasing(("product", "item"), ("article", "listing")),
    Phrasing(("products", "items"), ("articles", "goods")),
    Phrasing(("viewer", "audience member"), ("watcher", "chat member")),
    Phrasing(("viewers", "audience members"), ("watchers", "chat members")),
    Phrasing(("live room", "live-stream room"), ("broadcast room", "live channel")),
    Phrasing(("the number of", "the count of"), ("the quantity of", "the amount of")),
    Phrasing(("identifier", "ID"), ("unique key", "lookup key")),
    Phrasing(("city", "town"), ("municipality", "urban area")),
    Phrasing(("required", "needed"), ("necessary", "essential")),
    Phrasing(("represents", "stands for"), ("denotes", "signifies")),
    Phrasing(("used to", "meant to"), ("intended to", "designed to")),
    Phrasing(("location", "place"), ("site", "spot")),
    # Chinese
    Phrasing(("获取", "查询"), ("取得", "查看"), "zh"),
    Phrasing(("计算", "算出"), ("核算", "求出"), "zh"),
    Phrasing(("直播间", "直播房间"), ("直播频道", "直播现场"), "zh"),
    Phrasing(("商品", "产品"), ("宝贝", "货品"), "zh"),
    Phrasing(("例如", "比如"), ("譬如", "诸如"), "zh"),
    Phrasing(("用户", "使用者"), ("客户", "用家"), "zh"),
    Phrasing(("数量", "件数"), ("个数", "购买数量"), "zh"),
    Phrasing(("优惠券", "折扣券"), ("代金券", "卡券"), "zh"),
    Phrasing(("信息", "资料"), ("详情", "情况"), "zh"),
    Phrasing(("推荐", "建议"), ("推介", "举荐"), "zh"),
    Phrasing(("返回", "给出"), ("回传", "输出"), "zh"),
    Phrasing(("指定的", "给定的"), ("所选的", "选定的"), "zh"),
    Phrasing(("默认", "缺省"), ("预设", "默认情况下"), "zh"),
)

# Negations a paraphrase must keep (they are never part of a phrase and are protected).
NEGATIONS_EN = ("not", "no", "never", "none", "nor", "neither", "without", "cannot", "can't",
                "don't", "doesn't", "isn't", "aren't", "won't", "shouldn't", "mustn't", "unless")
NEGATIONS_ZH = ("不", "没", "无", "非", "别", "勿", "未", "否", "莫")


def _distractor(name: str, description: str, properties: dict, required: list[str],
                keywords: tuple[str, ...]) -> dict:
    """A distractor pool entry: an OpenAI tool plus the words of the requests it would serve
    (a distractor is only offered where none of them occur, so it never answers the task)."""
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return {"tool": {"type": "function", "function": {"name": name, "description": description,
                                                      "parameters": schema}},
            "keywords": keywords}


def _s(description: str, **extra) -> dict:
    return {"type": "string", "description": description, **extra}


def _i(description: str, **extra) -> dict:
    return {"type": "integer", "description": description, **extra}


def _n(description: str, **extra) -> dict:
    return {"type": "number", "description": description, **extra}


def _b(description: str) -> dict:
    return {"type": "boolean", "description": description}


# Plausible tools that no episode of ours needs. The two parts never share a tool (nor a name).
DISTRACTOR_TOOLS: dict[str, tuple[dict, ...]] = {
    "train": (
        _distractor("translate_text", "Translate a piece of text into another language.",
                    {"text": _s("The text to translate."),
                     "target_language": _s("ISO 639-1 code of the language to translate into, "
                                           "e.g. \"fr\".")},
                    ["text", "target_language"],
                    ("translate", "translation", "how do you say", "in french", "in spanish",
                     "in german", "in chinese", "in english", "in japanese", "翻译", "怎么说")),
        _distractor("send_email", "Send an email to one recipient.",
                    {"to": _s("The recipient's email address."), "subject": _s("Subject line."),
                     "body": _s("Plain-text body of the email.")},
                    ["to", "subject", "body"], ("email", "mail", "邮件")),
        _distractor("create_calendar_event", "Add an event to the user's calendar.",
                    {"title": _s("Title of the event."),
                     "start_time": _s("Start, as an ISO 8601 date-time."),
                     "duration_minutes": _i("Length of the event in minutes.", minimum=1)},
                    ["title", "start_time"], ("calendar", "meeting", "appointment", "日程", "会议")),
        _distractor("set_timer", "Start a countdown timer that rings when it ends.",
                    {"seconds": _i("How long the timer runs, in seconds.", minimum=1),
                     "label": _s("An optional label shown when it rings.")},
                    ["seconds"], ("timer", "countdown", "计时")),
        _distractor("set_alarm", "Set a wake-up alarm on the user's phone.",
                    {"time": _s("Alarm time, HH:MM in 24-hour format."),
                     "repeat_daily": _b("Whether the alarm rings every day.")},
                    ["time"], ("alarm", "wake", "闹钟")),
        _distractor("record_voice_memo", "Record a voice memo from the phone's microphone.",
                    {"max_seconds": _i("Longest recording, in seconds.", minimum=1),
                     "title": _s("Title shown in the memo list.")},
                    [], ("memo", "voice", "record", "录音")),
        _distractor("generate_password", "Generate a random password.",
                    {"length": _i("Number of characters.", minimum=8, maximum=128),
                     "include_symbols": _b("Whether to include punctuation symbols.")},
                    ["length"], ("password", "密码")),
        _distractor("create_note", "Save a short note to the user's notebook.",
                    {"title": _s("Title of the note."), "content": _s("Text of the note.")},
                    ["content"], ("note", "notes", "notebook", "笔记")),
        _distractor("turn_on_light", "Turn on a smart light in a room of the user's home.",
                    {"room": _s("The room the light is in."),
                     "brightness": _i("Brightness in percent.", minimum=1, maximum=100)},
                    ["room"], ("light", "lights", "lamp", "灯")),
        _distractor("play_podcast", "Play the latest episode of a podcast.",
                    {"podcast_name": _s("Name of the podcast.")},
                    ["podcast_name"], ("podcast", "episode", "播客")),
        _distractor("convert_timezone", "Convert a date-time from one time zone to another.",
                    {"datetime": _s("The date-time to convert, ISO 8601."),
                     "from_zone": _s("IANA time zone of the input, e.g. \"Asia/Shanghai\"."),
                     "to_zone": _s("IANA time zone to convert to.")},
                    ["datetime", "from_zone", "to_zone"],
                    ("timezone", "time zone", "what time", "current time", "time in", "时区",
                     "几点")),
        _distractor("generate_qr_code", "Make a QR code image for a piece of text or a URL.",
                    {"data": _s("The text or URL to encode."),
                     "size_px": _i("Width of the image in pixels.", minimum=64)},
                    ["data"], ("qr", "二维码")),
        _distractor("summarize_document", "Summarize a document into a few sentences.",
                    {"document_url": _s("Where the document can be downloaded."),
                     "max_sentences": _i("Longest summary, in sentences.", minimum=1)},
                    ["document_url"], ("summarize", "summary", "document", "摘要")),
        _distractor("track_fitness_activity", "Log a workout in the user's fitness diary.",
                    {"activity": _s("Kind of workout, e.g. running."),
                     "minutes": _i("Duration in minutes.", minimum=1)},
                    ["activity", "minutes"], ("workout", "fitness", "exercise", "健身", "运动")),
        _distractor("check_spelling", "Check a sentence for spelling mistakes.",
                    {"text": _s("The text to check.")},
                    ["text"], ("spelling", "spell", "typo", "拼写")),
        _distractor("get_word_synonyms", "Synonyms of an English word.",
                    {"word": _s("The word.")},
                    ["word"], ("synonym", "synonyms", "同义词")),
        _distractor("schedule_reminder", "Remind the user of something at a given time.",
                    {"message": _s("What to be reminded of."),
                     "remind_at": _s("When, as an ISO 8601 date-time.")},
                    ["message", "remind_at"], ("remind", "reminder", "提醒")),
        _distractor("upload_file", "Upload a local file to the user's cloud drive.",
                    {"path": _s("Local path of the file."),
                     "folder": _s("Destination folder on the drive.")},
                    ["path"], ("upload", "file", "drive", "上传", "文件")),
        _distractor("roll_dice", "Roll one or more dice and return the faces.",
                    {"dice": _i("How many dice.", minimum=1, maximum=10),
                     "sides": _i("Sides per die.", minimum=2)},
                    ["dice"], ("dice", "die", "roll", "骰子")),
        _distractor("lookup_zip_code", "The town and district of a postal code.",
                    {"zip_code": _s("The postal code.")},
                    ["zip_code"], ("zip", "postal", "postcode", "邮编")),
    ),
    "heldout": (
        _distractor("compose_sms", "Send a text message to a phone number.",
                    {"phone": _s("The recipient's phone number, with country code."),
                     "message": _s("The text to send.")},
                    ["phone", "message"], ("sms", "text message", "短信")),
        _distractor("book_meeting_room", "Reserve a meeting room in the office.",
                    {"room_name": _s("Name of the room."), "start": _s("ISO 8601 start time."),
                     "end": _s("ISO 8601 end time.")},
                    ["room_name", "start", "end"], ("meeting", "room", "会议室")),
        _distractor("start_stopwatch", "Start a stopwatch that counts up from zero.",
                    {"label": _s("An optional label for the stopwatch.")},
                    [], ("stopwatch", "秒表")),
        _distractor("search_images", "Search the web for images matching a description.",
                    {"query": _s("What the images should show."),
                     "count": _i("How many images to return.", minimum=1, maximum=50)},
                    ["query"], ("image", "images", "picture", "photo", "图片")),
        _distractor("get_word_pronunciation", "How an English word is pronounced (IPA).",
                    {"word": _s("The word.")},
                    ["word"], ("pronounce", "pronunciation", "发音")),
        _distractor("encrypt_text", "Encrypt a text with a passphrase.",
                    {"text": _s("The text to encrypt."),
                     "passphrase": _s("Secret used to derive the key.")},
                    ["text", "passphrase"], ("encrypt", "encryption", "cipher", "加密")),
        _distractor("add_todo_item", "Add an item to the user's to-do list.",
                    {"task": _s("What needs doing."),
                     "due_date": _s("Optional due date, YYYY-MM-DD.")},
                    ["task"], ("todo", "to-do", "task", "待办")),
        _distractor("set_thermostat", "Set the target temperature of the home thermostat.",
                    {"celsius": _n("Target temperature in degrees Celsius.", minimum=5,
                                   maximum=35)},
                    ["celsius"], ("thermostat", "heating", "温控")),
        _distractor("play_white_noise", "Play a relaxing background sound.",
                    {"sound": _s("Kind of sound.", enum=["rain", "waves", "fan", "forest"]),
                     "minutes": _i("How long to play, in minutes.", minimum=1)},
                    ["sound"], ("noise", "sleep", "relax", "白噪音")),
        _distractor("shorten_url", "Make a short link that redirects to a long URL.",
                    {"url": _s("The long URL.")},
                    ["url"], ("url", "link shortener", "短链")),
        _distractor("extract_text_from_image", "Read the printed text in an image (OCR).",
                    {"image_url": _s("Where the image can be downloaded."),
                     "language": _s("Language of the text, ISO 639-1.")},
                    ["image_url"], ("ocr", "scan", "识别")),
        _distractor("rate_limit_status", "How many API requests the caller has left this hour.",
                    {"api_key_id": _s("Identifier of the API key.")},
                    ["api_key_id"], ("rate limit", "quota", "配额")),
        _distractor("log_water_intake", "Record a glass of water in the user's health diary.",
                    {"millilitres": _i("Amount drunk, in millilitres.", minimum=1)},
                    ["millilitres"], ("water", "hydration", "喝水")),
        _distractor("create_poll", "Create a poll with a question and answer options.",
                    {"question": _s("The poll question."),
                     "options": {"type": "array", "items": {"type": "string"}, "minItems": 2,
                                 "description": "The answer options."}},
                    ["question", "options"], ("poll", "vote", "投票")),
        _distractor("get_moon_phase", "The phase of the moon on a date.",
                    {"date": _s("The date, YYYY-MM-DD.")},
                    ["date"], ("moon", "lunar", "月相")),
        _distractor("flip_coin", "Flip a fair coin.",
                    {"times": _i("How many flips.", minimum=1, maximum=100)},
                    [], ("coin", "flip", "硬币")),
        _distractor("backup_contacts", "Back up the phone's contacts to the cloud.",
                    {"include_photos": _b("Whether to include contact photos.")},
                    [], ("backup", "contacts", "备份", "通讯录")),
        _distractor("generate_invoice_pdf", "Render an invoice as a PDF file.",
                    {"invoice_id": _s("Identifier of the invoice."),
                     "locale": _s("Locale for number and date formats, e.g. \"en-GB\".")},
                    ["invoice_id"], ("invoice", "pdf", "发票")),
        _distractor("find_parking", "Free parking spaces near an address.",
                    {"address": _s("Street address to search around."),
                     "radius_m": _i("Search radius in metres.", minimum=50)},
                    ["address"], ("parking", "park", "停车")),
        _distractor("translate_speech", "Transcribe an audio clip and translate it.",
                    {"audio_url": _s("Where the audio clip can be downloaded."),
                     "target_language": _s("ISO 639-1 code to translate into.")},
                    ["audio_url", "target_language"], ("transcribe", "speech", "语音")),
    ),
}

# How the prompt shows tool schemas; the tools column given to trainers stays OpenAI-shaped.
TOOL_SHAPES = ("openai", "mcp")
TOOL_SHAPE_OPTION = "tool_shape"

# =============================================================================================
# Names
# =============================================================================================


def _context_words(tool: Tool) -> set[str]:
    """The words of a tool's name and description: what tells a word's sense."""
    return ({w.lower() for segment in tool.name.split(".") for w in name_words(segment)}
            | {w.lower() for w in re.findall(r"[A-Za-z]+", tool.description)})


# =============================================================================================
# Schema walking (JSON pointers to object nodes, their descriptions, their instances)
# =============================================================================================


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1") if "~" in part or "/" in part else part


def _pointer(parts: list[str]) -> str:
    return "".join("/" + _escape(p) for p in parts)


def _unpointer(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise HsaError(f"schema pointer {pointer!r} must be empty or start with '/'")
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]


def schema_nodes(schema: Any, parts: list[str] | None = None) -> Iterator[tuple[list[str], dict]]:
    """Every sub-schema reachable through ``properties`` and ``items`` (and the schema itself),
    with its path, depth first; these are the nodes a model reads as the tool's parameters."""
    if not isinstance(schema, dict):
        return
    stack = [(parts or [], schema)]
    while stack:
        parts, node = stack.pop()
        yield parts, node
        children = []
        properties = node.get("properties")
        if isinstance(properties, dict):
            children = [(parts + ["properties", key], sub) for key, sub in properties.items()
                        if isinstance(sub, dict)]
        if isinstance(node.get("items"), dict):
            children.append((parts + ["items"], node["items"]))
        stack.extend(reversed(children))


def _node_at(schema: Any, pointer: str) -> dict | None:
    """The schema node at ``pointer`` (through ``properties`` and ``items`` only), or None."""
    try:
        parts = _unpointer(pointer)
    except HsaError:
        return None
    node, i = schema, 0
    while isinstance(node, dict) and i < len(parts):
        if parts[i] == "items":
            node, i = node.get("items"), i + 1
        elif parts[i] == "properties" and i + 1 < len(parts) and isinstance(
                node.get("properties"), dict):
            node, i = node["properties"].get(parts[i + 1]), i + 2
        else:
            return None
    return node if isinstance(node, dict) else None


def _edit_schema(schema: dict, edits: dict[str, Callable[[dict], dict]], tool: str) -> dict:
    """``schema`` with the node at each pointer replaced by ``edit(node)``. Nodes on the way to an
    edit are copied, the rest shared: schemas are never changed in place, by anyone."""
    unknown = sorted(p for p in edits if _node_at(schema, p) is None)
    if unknown:
        raise HsaError(f"tool {tool!r} has no schema node at {unknown[0]!r}")

    def touched(pointer: str) -> bool:
        return any(p == pointer or p.startswith(pointer + "/") for p in edits)

    def rebuild(node: dict, pointer: str) -> dict:
        out = dict(node)
        properties = node.get("properties")
        if isinstance(properties, dict) and touched(pointer + "/properties"):
            out["properties"] = {
                k: rebuild(v, f"{pointer}/properties/{_escape(k)}")
                if isinstance(v, dict) and touched(f"{pointer}/properties/{_escape(k)}") else v
                for k, v in properties.items()}
        if isinstance(node.get("items"), dict) and touched(pointer + "/items"):
            out["items"] = rebuild(node["items"], pointer + "/items")
        return edits[pointer](out) if pointer in edits else out

    return rebuild(schema, "") if edits else schema


def _tool_named(harness: Harness, name: str) -> Tool:
    tool = harness.tool(name)
    if tool is None:
        raise HsaError(f"the harness has no tool {name!r}")
    return tool


def _with_tools(episode: Episode, tools: tuple[Tool, ...]) -> Episode:
    return episode.with_harness(replace(episode.harness, tools=tools))


def _calls(episode: Episode) -> Iterator[tuple[str, str, dict]]:
    """(tool name, call id, decoded arguments) of every tool call in the messages."""
    for message in episode.messages:
        for call in message.get("tool_calls") or ():
            fn = call["function"]
            yield fn["name"], call.get("id"), orjson.loads(fn["arguments"])


def _objects_at(value: Any, steps: list[str], gold: bool) -> Iterator[Any]:
    """The instances that sit at schema path ``steps`` inside ``value``. In gold, an object's
    value is a pattern ``{key: [acceptable values]}`` (BFCL), so each acceptable value is
    followed; ``""`` marks a key that may be left out."""
    if not steps:
        yield value
        return
    head, rest = steps[0], steps[1:]
    if head == "items":
        if isinstance(value, list):
            for element in value:
                yield from _objects_at(element, rest, gold)
    elif head == "properties" and rest and isinstance(value, dict):
        key, rest = rest[0], rest[1:]
        if key not in value:
            return
        if gold and isinstance(value[key], list) and all(isinstance(v, list)
                                                         for v in value.values()):
            for alternative in value[key]:
                if alternative != "":
                    yield from _objects_at(alternative, rest, gold)
        else:
            yield from _objects_at(value[key], rest, gold)


def _arguments_by_tool(episode: Episode) -> dict[str, list[dict]]:
    """The decoded arguments of every tool call in the messages, per tool (parsed once, read
    for every schema node)."""
    out: dict[str, list[dict]] = {}
    for name, _, args in _calls(episode):
        out.setdefault(name, []).append(args)
    return out


def _closing_is_safe(episode: Episode, arguments: dict[str, list[dict]], tool: str,
                     parts: list[str], node: dict) -> bool:
    """Whether every call (``arguments``: :func:`_arguments_by_tool`) and gold value at this
    object node only uses its declared keys, so that ``"additionalProperties": false`` rejects
    nothing the task needs."""
    allowed = set(node.get("properties") or {})
    instances: list[Any] = []
    for args in arguments.get(tool, ()):
        instances.extend(_objects_at(args, parts, gold=False))
    for turn in episode.gold.turns:
        for call in turn.calls:
            if call.name == tool:
                instances.extend(_objects_at(dict(call.arguments), parts, gold=bool(parts)))
                if not parts:  # the top level: the gold's parameter names themselves
                    instances.append({p: None for p in call.omittable})
    return all(set(i) <= allowed for i in instances if isinstance(i, dict))


# =============================================================================================
# Parameter mentions in prose
# =============================================================================================


def _parameter_prose(renames: dict[str, str]) -> Callable[[str], str]:
    """Rewrites mentions of renamed parameters the way the rename kernel rewrites names:
    identifier-like names wherever they stand as a whole identifier; plain-word names
    (``size``) only as inline code (`` `size` ``) or as a keyword argument inside code
    (`` `check_stock(size="M")` ``), since as plain words they are ordinary prose."""
    identifiers = {k: v for k, v in renames.items() if identifier_like(k)}
    words = {k: v for k, v in renames.items() if not identifier_like(k)}
    keyword = (re.compile(r"(?<![A-Za-z0-9_.\-])(" + "|".join(
        re.escape(w) for w in sorted(words, key=len, reverse=True)) + r")(?=\s*=)")
               if words else None)

    def in_code(span: re.Match) -> str:
        return keyword.sub(lambda m: words[m.group(1)], span.group(0))

    def rewrite(text: str) -> str:
        if not text:
            return text
        text = replace_mentions(text, identifiers)
        if words and "`" in text:
            text = replace_code_mentions(text, words)
            text = re.sub(r"`[^`]+`", in_code, text)
        return text

    return rewrite


def _config_values(value: Any, renames: dict[str, str]) -> Any:
    """Hook configuration with every string value equal to a renamed parameter renamed (a hook
    such as ``link_params: [link_number]`` names the parameters it checks)."""
    if isinstance(value, str):
        return renames.get(value, value)
    if isinstance(value, list):
        return [_config_values(v, renames) for v in value]
    if isinstance(value, dict):
        return {k: _config_values(v, renames) for k, v in value.items()}
    return value


def _dump_like(original: str, value: Any) -> str | None:
    """``value`` serialised the way ``original`` was (compact, or ``json.dumps`` style), or None
    when the original's style is not one of those (its text is then left alone)."""
    parsed = orjson.loads(original)
    for dump in (lambda v: orjson.dumps(v).decode(),
                 lambda v: json.dumps(v, ensure_ascii=False),
                 lambda v: json.dumps(v)):
        if dump(parsed) == original:
            return dump(value)
    return None


def _echoed_keys(content: str, args: dict, renames: dict[str, str]) -> str:
    """A JSON tool result whose top-level keys echo the call's renamed arguments (same key,
    same value), with those keys renamed."""
    try:
        result = orjson.loads(content)
    except orjson.JSONDecodeError:
        return content
    if not isinstance(result, dict):
        return content
    echoed = {k for k in result if k in renames and k in args and args[k] == result[k]}
    if not echoed or any(renames[k] in result for k in echoed):
        return content
    renamed = _dump_like(content, {renames.get(k, k) if k in echoed else k: v
                                   for k, v in result.items()})
    return content if renamed is None else renamed


def _rename_parameters(episode: Episode, names: dict[str, str]) -> Episode:
    """Rename top-level parameters (``old -> new``, the same in every tool that has ``old``)
    with every mention: the rename kernel moves schema keys, ``required``, tool-call argument
    keys and gold; this adds prose mentions (tool, skill, prompt and hook texts and messages),
    hook configuration values and tool results that echo the renamed arguments."""
    harness = episode.harness
    per_tool = {t.name: {old: new for old, new in names.items() if old in t.properties}
                for t in harness.tools}
    per_tool = {tool: renames for tool, renames in per_tool.items() if renames}
    if not per_tool:
        return episode
    out = rename_episode(episode, Mapping(parameters=per_tool))
    # Prose mentions are only rewritten where they are unambiguous: never for a name that is
    # also a tool, skill or hook name, nested property, or the skill loader's own argument.
    nested = {parts[-1] for t in harness.tools for parts, _ in schema_nodes(t.parameters)
              if len(parts) > 2 and parts[-2] == "properties"}
    ambiguous = harness.names | nested | ({"name"} if harness.skills else set())
    prose = _parameter_prose({k: v for k, v in names.items() if k not in ambiguous})
    h = out.harness
    tools = tuple(replace(t, description=prose(t.description),
                          parameters=rewrite_descriptions(t.parameters, prose))
                  for t in h.tools)
    skills = tuple(replace(s, description=prose(s.description), content=prose(s.content))
                   for s in h.skills)
    # A configuration value equal to a tool, skill or hook name is that name, not a parameter.
    config_names = {k: v for k, v in names.items() if k not in harness.names}
    hooks = tuple(replace(k, description=prose(k.description),
                          config=_config_values(k.config, config_names)) for k in h.hooks)
    prompt = replace(h.prompt, text={k: prose(v) for k, v in h.prompt.text.items()})
    harness_out = replace(h, tools=tools, skills=skills, hooks=hooks, prompt=prompt)
    calls = {call_id: (name, args) for name, call_id, args in _calls(episode)}
    messages = []
    for message in out.messages:
        content = message.get("content")
        new = message
        if isinstance(content, str) and content:
            text = prose(content)
            call = calls.get(message.get("tool_call_id"))
            if (message.get("role") == "tool" and call is not None and call[0] in per_tool
                    and not str(message.get("name", "")).startswith(HOOK_MESSAGE_PREFIX)):
                text = _echoed_keys(text, call[1], per_tool[call[0]])
            if text != content:
                new = {**message, "content": text}
        elif isinstance(content, list):
            new = {**message, "content": [{**p, "text": prose(p["text"])} if "text" in p else p
                                          for p in content]}
        messages.append(new)
    return replace(out.with_harness(harness_out), messages=tuple(messages))


def _parameter_mapping(harness: Harness, names: dict[str, str]) -> Mapping:
    known = {p for t in harness.tools for p in t.properties}
    unknown = sorted(set(names) - known)
    if unknown:
        raise HsaError(f"renames unknown parameter(s) {unknown}; the tools have "
                       f"{sorted(known)}")
    return Mapping(parameters={t.name: {o: n for o, n in names.items() if o in t.properties}
                               for t in harness.tools})


def _check_parameter_names(harness: Harness, names: dict[str, str]) -> None:
    """New parameter names must be unique, and no tool may end up with two parameters of one
    name (a swap a -> b, b -> a is fine)."""
    new = list(names.values())
    if len(set(new)) != len(new):
        raise HsaError(f"parameter renames give two parameters one name: {names}")
    for tool in harness.tools:
        renamed = [names.get(p, p) for p in tool.properties]
        if len(set(renamed)) != len(renamed):
            raise HsaError(f"parameter renames {names} give tool {tool.name!r} two parameters "
                           f"of one name")


# =============================================================================================
# Description paraphrases
# =============================================================================================

# Spans a paraphrase never touches: inline code, quoted strings, URLs, negations, numbers and
# identifiers (``word`` tokens are kept only when identifier-like or a name of the harness).
_PROTECTED_RE = re.compile(
    r"`[^`\n]*`"
    r'|"[^"\n]*"|“[^”]*”|‘[^’]*’|「[^」]*」|『[^』]*』|《[^》]*》'
    r"|(?<![A-Za-z])'[^'\n]{0,80}'(?![A-Za-z])"
    r"|https?://\S+|\S+@\S+\.\w+"
    r"|(?i:(?<![A-Za-z'])(?:" + "|".join(re.escape(n) for n in NEGATIONS_EN) + r")(?![A-Za-z']))"
    r"|[" + "".join(NEGATIONS_ZH) + r"]"
    r"|(?P<word>[A-Za-z0-9_][A-Za-z0-9_.\-]*[A-Za-z0-9_]|[A-Za-z0-9_])"
    r"|[\U000F0000-\U000FFFFD]")
_HOLE = 0xF0000  # supplementary private use: never in a phrase, never matched by a phrase
_ABBREVIATIONS = ("e.g", "i.e")  # dotted, yet prose


def _protect(text: str, names: set[str]) -> tuple[str, list[str]]:
    """``text`` with protected spans swapped for private-use placeholders, and the spans."""
    kept: list[str] = []

    def hole(match: re.Match) -> str:
        span = match.group(0)
        if match.group("word") is not None and span not in names and (
                span.lower() in _ABBREVIATIONS or not identifier_like(span)):
            return span
        kept.append(span)
        return chr(_HOLE + len(kept) - 1)

    return _PROTECTED_RE.sub(hole, text), kept


def _restore(text: str, kept: list[str]) -> str:
    return re.sub(r"[\U000F0000-\U000FFFFD]", lambda m: kept[ord(m.group(0)) - _HOLE], text)


def _phrase_members() -> tuple[tuple[str, ...], tuple[str, ...], dict[str, Phrasing]]:
    by_member: dict[str, Phrasing] = {}
    en, zh = set(), set()
    for group in DESCRIPTION_PHRASES:
        for member in group.train + group.heldout:
            by_member[member.lower()] = group
            (zh if group.lang == "zh" else en).add(member)
    return tuple(sorted(en)), tuple(sorted(zh)), by_member


_EN_MEMBERS, _ZH_MEMBERS, _PHRASE_OF = _phrase_members()
_ASCII_WORD = re.compile(r"[a-z]+")


def _by_first_word(members: tuple[str, ...]) -> dict[str, tuple[tuple[str, str], ...]]:
    index: dict[str, list[tuple[str, str]]] = {}
    for member in members:
        index.setdefault(_ASCII_WORD.match(member.lower()).group(0), []).append(
            (member.lower(), member))
    return {word: tuple(entries) for word, entries in index.items()}


# A phrase the pattern matches starts at a word boundary, so its first word is a whole ASCII
# word of the text: looking those words up narrows the substring tests to a handful.
_EN_BY_FIRST_WORD = _by_first_word(_EN_MEMBERS)


@lru_cache(maxsize=4096)
def _en_phrases(members: tuple[str, ...]) -> re.Pattern:
    alternatives = "|".join(re.escape(m) for m in sorted(members, key=lambda m: (-len(m), m)))
    return re.compile(r"(?:(?<![A-Za-z])(?P<art>[Aa]n?) )?(?<![A-Za-z0-9_\-'])(?P<phrase>"
                      + alternatives + r")(?![A-Za-z0-9_\-])", re.IGNORECASE)


@lru_cache(maxsize=4096)
def _zh_phrases(members: tuple[str, ...]) -> re.Pattern:
    alternatives = "|".join(re.escape(m) for m in sorted(members, key=lambda m: (-len(m), m)))
    return re.compile(f"(?P<phrase>{alternatives})")


def _phrases_in(text: str) -> tuple[re.Pattern | None, re.Pattern | None]:
    """Patterns of just the table phrases that occur in ``text`` (a substring test each): one
    alternation of every phrase, scanned over every description, was the slow part."""
    lowered = text.lower()
    en = tuple(sorted(member for word in set(_ASCII_WORD.findall(lowered))
                      for low, member in _EN_BY_FIRST_WORD.get(word, ()) if low in lowered))
    zh = tuple(m for m in _ZH_MEMBERS if m in text)
    return (_en_phrases(en) if en else None), (_zh_phrases(zh) if zh else None)


def _article(article: str, word: str) -> str:
    """"a" or "an" before ``word`` (a spelling rule with the common exceptions)."""
    lower = word.lower()
    vowel = lower[:1] in "aeiou" and not lower.startswith(("uni", "use", "usu", "one", "eu"))
    vowel = vowel or lower.startswith(("hour", "honest"))
    new = "an" if vowel else "a"
    return new.capitalize() if article[:1].isupper() else new


_PLACEHOLDER = re.compile(r"[\U000F0000-\U000FFFFD]")


@lru_cache(maxsize=16384)
def _prepared(text: str, names: tuple[str, ...]):
    """What a paraphrase of ``text`` reads, computed once per text and the ``names`` in it
    (descriptions recur in every episode of a harness): the masked text, its protected spans
    and the patterns of the table phrases it holds."""
    masked, kept = _protect(text, set(names))
    en, zh = _phrases_in(masked)
    return masked, tuple(kept), en, zh


def paraphrase(text: str, split: str, rng: random.Random, names: set[str] = frozenset()) -> str:
    """``text`` with every phrase of the tables replaced by another of the split's part; numbers,
    quoted strings, code, identifiers, negations and ``names`` are kept exactly."""
    if not text or _PLACEHOLDER.search(text):
        return text  # text already using the placeholders' code points is left as it is
    masked, kept, en, zh = _prepared(text, tuple(sorted(n for n in names if n in text)))
    if en is None and zh is None:
        return text

    def swap(match: re.Match) -> str:
        phrase = match.group("phrase")
        group = _PHRASE_OF[phrase.lower()]
        if len(phrase) > 1 and phrase.isupper() and phrase not in group.train + group.heldout:
            return match.group(0)  # an acronym (GET, HTTP), not the word
        choices = [c for c in group.part(split) if c.lower() != phrase.lower()]
        if not choices:
            return match.group(0)
        new = rng.choice(choices)
        acronym = len(phrase) > 1 and phrase.isupper()
        if phrase[:1].isupper() and not acronym and not new.isupper():
            new = new[:1].upper() + new[1:]
        article = match.groupdict().get("art")
        return f"{_article(article, new)} {new}" if article else new

    if en is not None:
        masked = en.sub(swap, masked)
    if zh is not None:
        masked = zh.sub(swap, masked)
    return _restore(masked, kept)


def harness_names(harness: Harness) -> set[str]:
    """Every name in the harness a paraphrase must keep: tools, skills, hooks, the loader and
    every parameter at any depth."""
    names = set(harness.names)
    for tool in harness.tools:
        for parts, _ in schema_nodes(tool.parameters):
            if len(parts) >= 2 and parts[-2] == "properties":
                names.add(parts[-1])
    return names


# =============================================================================================
# Transforms
# =============================================================================================


@register
@dataclass(frozen=True)
class ToolOrderPermutation(Transform):
    """Shuffles the order of the tools list; every tool and call is kept as it is."""

    name = "tool_order_permutation"
    version = "1"
    family = "tool_schema"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        # Never the identity when there are two tools or more: a variant should vary.
        return {"order": _shuffled(list(range(len(episode.harness.tools))), rng)}

    def apply(self, episode: Episode, params: dict) -> Episode:
        tools = episode.harness.tools
        order = params["order"]
        if sorted(order) != list(range(len(tools))):
            raise HsaError(f"order {order} is not a permutation of the {len(tools)} tools")
        return episode.with_harness(replace(episode.harness, tools=tuple(tools[i] for i in order)))


def _shuffled(items: list, rng: random.Random) -> list:
    """A random order of ``items`` that differs from the given one whenever two items differ."""
    out = list(items)
    if all(type(i) is str for i in items):  # the common case: names and enum strings
        distinct = len(set(items))
    else:
        distinct = len({json.dumps(i, sort_keys=True) for i in items})
    if distinct < 2:
        return out
    while out == items:
        rng.shuffle(out)
    return out


@register
@dataclass(frozen=True)
class ToolPropertyOrder(Transform):
    """Shuffles the order of the properties in every tool schema (nested objects too); the
    properties themselves, ``required`` and every call are kept as they are."""

    name = "tool_property_order"
    version = "1"
    family = "tool_schema"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        orders: dict[str, dict[str, list[str]]] = {}
        for tool in episode.harness.tools:
            for parts, node in schema_nodes(tool.parameters):
                keys = list(node.get("properties") or {}) if isinstance(
                    node.get("properties"), dict) else []
                if len(keys) >= 2:
                    orders.setdefault(tool.name, {})[_pointer(parts)] = _shuffled(keys, rng)
        return {"orders": orders}

    def apply(self, episode: Episode, params: dict) -> Episode:
        harness = episode.harness
        orders = params["orders"]
        for name in orders:
            _tool_named(harness, name)

        def reorder(order: list[str], tool: str) -> Callable[[dict], dict]:
            def edit(node: dict) -> dict:
                properties = node.get("properties") or {}
                if sorted(order) != sorted(properties):
                    raise HsaError(f"tool {tool!r}: order {order} is not a permutation of the "
                                   f"properties {list(properties)}")
                return {**node, "properties": {k: properties[k] for k in order}}
            return edit

        tools = tuple(
            replace(t, parameters=_edit_schema(
                t.parameters, {p: reorder(o, t.name) for p, o in orders[t.name].items()}, t.name))
            if t.name in orders else t for t in harness.tools)
        return _with_tools(episode, tools)


@register
@dataclass(frozen=True)
class ToolNameMask(Transform):
    """Replaces tool names with opaque ids (fn_qzkx) everywhere they appear; the model must read
    descriptions instead of recognising names. Masks are written in the harness's convention."""

    name = "tool_name_mask"
    version = "2"
    family = "tool_schema"

    fraction: Share = 1.0  # share of the tools whose names are masked
    prefix: str | None = None  # a fixed prefix, as written; None draws a first word of the split
    split: Literal["train", "heldout"] = "train"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        harness = episode.harness
        word = rng.choice(TOOL_MASK_PREFIXES[self.split])
        renamer = Renamer(harness.tool_names, set(harness.names), self.split, rng,
                          convention=declared_or_shared(episode, harness.tool_names),
                          mask_prefixes=(word,))
        renames = {}
        for tool in harness.tools:
            if rng.random() >= self.fraction:
                continue
            if self.prefix is None:
                renames[tool.name] = renamer.mask(tool.name)
                continue
            new = next((n for n in (f"{self.prefix}{opaque_word(rng)}" for _ in range(200))
                        if renamer.fits(tool.name, n)), None)
            if new is None:
                raise HsaError(f"no free masked name with prefix {self.prefix!r}")
            renames[tool.name] = renamer.take(tool.name, new)
        return {"renames": renames}

    def mapping(self, episode: Episode, params: dict) -> Mapping:
        renames = params["renames"]
        unknown = set(renames) - set(episode.harness.tool_names)
        if unknown:
            raise HsaError(f"renames unknown tool(s) {sorted(unknown)}")
        return Mapping(tools=renames)

    def apply(self, episode: Episode, params: dict) -> Episode:
        return rename_episode(episode, self.mapping(episode, params))


@register
@dataclass(frozen=True)
class ToolNameParaphrase(Transform):
    """Renames tools to equivalent names (get_weather -> fetchWeatherReport): words from the
    general English lexicon and the abbreviation table, or, where no table knows a word, the
    verb moved behind the rest, a suffix or a mask; every name of the harness variant in its
    one naming convention. Every mention moves along (calls, tool results, other tools'
    descriptions, skills, hooks, gold); no new name says what another tool's name says.

    ``fraction`` is the share of tools given new words; the others are only rewritten in the
    variant's convention. ``naming: mixed`` draws a convention per name instead."""

    name = "tool_name_paraphrase"
    version = "2"
    family = "tool_schema"

    fraction: Share = 1.0  # share of the tools that are renamed
    split: Literal["train", "heldout"] = "train"
    naming: NamingMode = "variant"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        harness = episode.harness
        convention, record = variant_convention(episode, self.split, rng, self.naming)
        renamer = Renamer(harness.tool_names, set(harness.names), self.split, rng,
                          convention=convention, suffixes=TOOL_NAME_SUFFIXES[self.split],
                          mask_prefixes=TOOL_MASK_PREFIXES[self.split])
        chosen = [t for t in harness.tools if rng.random() < self.fraction]
        renames = {t.name: renamer.paraphrase(t.name, _context_words(t)) for t in chosen}
        for tool in harness.tools:  # one convention for the whole tool list
            if tool.name not in renames and (new := renamer.restyle(tool.name)) is not None:
                renames[tool.name] = new
        return {"renames": renames, "naming": record}

    def mapping(self, episode: Episode, params: dict) -> Mapping:
        renames = params["renames"]
        harness = episode.harness
        unknown = set(renames) - set(harness.tool_names)
        if unknown:
            raise HsaError(f"renames unknown tool(s) {sorted(unknown)}")
        new = list(renames.values())
        clash = (set(new) & harness.names) - set(renames)
        if clash or len(set(new)) != len(new):
            raise HsaError(f"new tool names must be unique and unused, got {renames}")
        return Mapping(tools=renames)

    def apply(self, episode: Episode, params: dict) -> Episode:
        return record_convention(rename_episode(episode, self.mapping(episode, params)), params)


class _ParameterRename(Transform):
    """Shared by the parameter renames: params are ``{"renames": {old: new}}``, one new name per
    old name across all tools, so that a mention in prose (a skill saying `link_number`) means
    the same parameter in every tool that has it."""

    def mapping(self, episode: Episode, params: dict) -> Mapping:
        return _parameter_mapping(episode.harness, params["renames"])

    def apply(self, episode: Episode, params: dict) -> Episode:
        names = params["renames"]
        _parameter_mapping(episode.harness, names)
        _check_parameter_names(episode.harness, names)
        return _rename_parameters(episode, names)

    @staticmethod
    def _names(episode: Episode) -> list[str]:
        return list(dict.fromkeys(p for t in episode.harness.tools for p in t.properties))

    @staticmethod
    def _taken(episode: Episode) -> set[str]:
        return (set(episode.harness.names)
                | {p for t in episode.harness.tools for p in t.properties})


@register
@dataclass(frozen=True)
class ParameterNameParaphrase(_ParameterRename):
    """Renames tool parameters to equivalent names (link_number -> itemNo): words from the
    general English lexicon and the abbreviation table (a suffix or a mask where no table knows a
    word), one new name per old name across all tools, in the variant's one naming convention;
    argument keys in calls, schemas, gold, prose mentions, hook configuration that names them
    (``link_params``) and tool results echoing them move along. Types, argument values and what
    the gold expects are kept; no new name says what another parameter's name says.

    ``fraction`` is the share of parameter names given new words; the others are only rewritten
    in the variant's convention. ``naming: mixed`` draws a convention per name instead."""

    name = "parameter_name_paraphrase"
    version = "2"
    family = "tool_schema"

    fraction: Share = 1.0  # share of the distinct parameter names that are renamed
    split: Literal["train", "heldout"] = "train"
    naming: NamingMode = "variant"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        names = self._names(episode)
        convention, record = variant_convention(episode, self.split, rng, self.naming)
        renamer = Renamer(names, self._taken(episode), self.split, rng, convention=convention,
                          suffixes=PARAMETER_NAME_SUFFIXES[self.split],
                          mask_prefixes=PARAMETER_MASK_PREFIXES[self.split], verbs=False)
        chosen = [n for n in names if rng.random() < self.fraction]
        renames = {}
        for old in chosen:
            tool = next(t for t in episode.harness.tools if old in t.properties)
            renames[old] = renamer.paraphrase(old, _context_words(tool))
        for old in names:  # one convention for every parameter
            if old not in renames and (new := renamer.restyle(old)) is not None:
                renames[old] = new
        return {"renames": renames, "naming": record}

    def apply(self, episode: Episode, params: dict) -> Episode:
        return record_convention(super().apply(episode, params), params)


@register
@dataclass(frozen=True)
class ParameterNameMask(_ParameterRename):
    """Replaces tool parameter names with opaque ids (arg_qzkx) everywhere they appear, so the
    model must read parameter descriptions; argument keys in calls, schemas, gold, prose
    mentions, hook configuration that names them and tool results echoing them move along.
    Types, argument values and what the gold expects are kept. Masks are written in the
    harness's convention."""

    name = "parameter_name_mask"
    version = "2"
    family = "tool_schema"

    fraction: Share = 1.0  # share of the distinct parameter names that are masked
    split: Literal["train", "heldout"] = "train"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        names = self._names(episode)
        word = rng.choice(PARAMETER_MASK_PREFIXES[self.split])
        renamer = Renamer(names, self._taken(episode), self.split, rng,
                          convention=declared_or_shared(episode, names), mask_prefixes=(word,))
        return {"renames": {old: renamer.mask(old) for old in names
                            if rng.random() < self.fraction}}


@register
@dataclass(frozen=True)
class ToolDescriptionParaphrase(Transform):
    """Rewords tool and parameter descriptions with curated phrase tables (English and Chinese);
    every number, quoted string, code span, identifier, name and negation is kept exactly, and
    so is everything else in the schema."""

    name = "tool_description_paraphrase"
    version = "1"
    family = "tool_schema"

    split: Literal["train", "heldout"] = "train"

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        harness = episode.harness
        names = harness_names(harness)
        tools: dict[str, dict] = {}
        for tool in harness.tools:
            entry: dict[str, Any] = {}
            description = paraphrase(tool.description, self.split, rng, names)
            if description != tool.description:
                entry["description"] = description
            schema: dict[str, str] = {}
            for parts, node in schema_nodes(tool.parameters):
                text = node.get("description")
                if isinstance(text, str):
                    new = paraphrase(text, self.split, rng, names)
                    if new != text:
                        schema[_pointer(parts)] = new
            if schema:
                entry["schema"] = schema
            if entry:
                tools[tool.name] = entry
        return {"tools": tools}

    def apply(self, episode: Episode, params: dict) -> Episode:
        harness = episode.harness
        for name in params["tools"]:
            _tool_named(harness, name)

        def describe(text: str, where: str) -> Callable[[dict], dict]:
            def edit(node: dict) -> dict:
                if not isinstance(node.get("description"), str):
                    raise HsaError(f"{where} has no description to reword")
                return {**node, "description": text}
            return edit

        tools = []
        for tool in harness.tools:
            entry = params["tools"].get(tool.name)
            if entry is None:
                tools.append(tool)
                continue
            edits = {p: describe(text, f"tool {tool.name!r} schema node {p!r}")
                     for p, text in entry.get("schema", {}).items()}
            tools.append(replace(tool, description=entry.get("description", tool.description),
                                 parameters=_edit_schema(tool.parameters, edits, tool.name)))
        return _with_tools(episode, tuple(tools))


def _request_text(episode: Episode) -> str:
    """What the task is about: the user's messages and the harness's own tools."""
    parts = [m.get("content") for m in episode.messages if m.get("role") == "user"]
    parts = [p if isinstance(p, str) else " ".join(x.get("text", "") for x in p or [])
             for p in parts]
    parts += [f"{t.name.replace('_', ' ')} {t.description}" for t in episode.harness.tools]
    return " ".join(parts).lower()


def _mentions_keyword(text: str, keyword: str) -> bool:
    if keyword.isascii():
        return keyword.lower() in text and _keyword_pattern(keyword).search(text) is not None
    return keyword in text


@lru_cache(maxsize=4096)
def _keyword_pattern(keyword: str) -> re.Pattern:
    return re.compile(r"(?<![a-z])" + re.escape(keyword.lower()))


def _written_in(tool: dict, name_convention: str | None,
                parameter_convention: str | None) -> dict:
    """A pool tool with its name and top-level parameter names in the harness's conventions (as
    they are where the harness mixes conventions), so a distractor does not stand out by its
    spelling."""
    fn = tool["function"]
    name = write_segments(fn["name"], name_convention) if name_convention else fn["name"]
    schema = fn["parameters"]
    if parameter_convention:
        renames = {p: write_segments(p, parameter_convention) for p in schema["properties"]}
        schema = {**schema, "properties": {renames[k]: v for k, v in schema["properties"].items()}}
        if "required" in schema:
            schema["required"] = [renames[p] for p in schema["required"]]
    return {**tool, "function": {**fn, "name": name, "parameters": schema}}


@register
@dataclass(frozen=True)
class DistractorTools(Transform):
    """Adds plausible tools the task does not need (a realistic pool, none about what the user
    asks or the harness already does) at random places in the tools list, their names written
    in the harness's convention; every existing tool, call and the gold are kept as they are."""

    name = "distractor_tools"
    version = "2"
    family = "tool_schema"

    min_count: int = 1
    max_count: int = 3
    split: Literal["train", "heldout"] = "train"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.min_count <= self.max_count:
            raise HsaError(f"transform {self.name!r}: need 0 <= min_count <= max_count, got "
                           f"{self.min_count} and {self.max_count}")

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        harness = episode.harness
        taken = set(harness.names)
        request = _request_text(episode)
        tool_convention = declared_or_shared(episode, harness.tool_names)
        parameter_convention = declared_or_shared(
            episode, [p for t in harness.tools for p in t.properties])
        pool = [_written_in(d["tool"], tool_convention, parameter_convention)
                for d in DISTRACTOR_TOOLS[self.split]
                if not any(_mentions_keyword(request, k) for k in d["keywords"])]
        pool = [tool for tool in pool if tool["function"]["name"] not in taken]
        count = min(rng.randint(self.min_count, self.max_count), len(pool))
        chosen = rng.sample(pool, count)
        size = len(harness.tools)
        added = []
        for tool in chosen:
            size += 1
            # A copy, so that no variant's harness shares a schema object with the pool.
            added.append({"at": rng.randrange(size), "tool": orjson.loads(orjson.dumps(tool))})
        return {"tools": added}

    def apply(self, episode: Episode, params: dict) -> Episode:
        harness = episode.harness
        taken = set(harness.names)
        tools = list(harness.tools)
        for i, entry in enumerate(params["tools"]):
            tool = Tool.from_dict(entry["tool"], where=f"params.tools[{i}].tool")
            if tool.name in taken:
                raise HsaError(f"distractor tool {tool.name!r} would reuse a name of the harness")
            taken.add(tool.name)
            at = entry["at"]
            if not isinstance(at, int) or not 0 <= at <= len(tools):
                raise HsaError(f"distractor position {at!r} is outside the tools list")
            tools.insert(at, tool)
        return _with_tools(episode, tuple(tools))


@register
@dataclass(frozen=True)
class ToolSchemaSpelling(Transform):
    """Spells tool schemas differently with the same meaning: ``required`` and ``enum`` lists in
    another order, and an explicit ``"additionalProperties": false`` added where no call or gold
    value uses an undeclared key, or dropped where the schema had it; types, constraints and
    values are kept."""

    name = "tool_schema_spelling"
    version = "1"
    family = "tool_schema"

    rate: Share = 0.5  # chance of each possible respelling

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        options: list[tuple[str, str, dict]] = []
        arguments = _arguments_by_tool(episode)
        for tool in episode.harness.tools:
            for parts, node in schema_nodes(tool.parameters):
                pointer = _pointer(parts)
                required = node.get("required")
                if isinstance(required, list) and len(set(required)) >= 2:
                    options.append((tool.name, pointer, {"required": _shuffled(required, rng)}))
                enum = node.get("enum")
                if isinstance(enum, list) and len(enum) >= 2:
                    new = _shuffled(enum, rng)
                    if new != enum:
                        options.append((tool.name, pointer, {"enum": new}))
                if isinstance(node.get("properties"), dict):
                    closed = node.get("additionalProperties")
                    if closed is False:
                        options.append((tool.name, pointer, {"additionalProperties": "open"}))
                    elif closed is None and _closing_is_safe(episode, arguments, tool.name,
                                                             parts, node):
                        options.append((tool.name, pointer, {"additionalProperties": "close"}))
        chosen = [o for o in options if rng.random() < self.rate]
        if not chosen and options and self.rate > 0:
            chosen = [rng.choice(options)]  # a variant that respells nothing is no variant
        edits: dict[str, dict[str, dict]] = {}
        for tool, pointer, change in chosen:
            edits.setdefault(tool, {}).setdefault(pointer, {}).update(change)
        return {"edits": edits}

    def apply(self, episode: Episode, params: dict) -> Episode:
        harness = episode.harness
        for name in params["edits"]:
            _tool_named(harness, name)
        arguments = _arguments_by_tool(episode)

        def respell(change: dict, tool: str, parts: list[str]) -> Callable[[dict], dict]:
            def edit(node: dict) -> dict:
                out = dict(node)
                where = f"tool {tool!r} schema node {_pointer(parts)!r}"
                for key in ("required", "enum"):
                    if key in change:
                        new, old = change[key], node.get(key)
                        if not isinstance(old, list) or sorted(map(json.dumps, new)) != sorted(
                                map(json.dumps, old)):
                            raise HsaError(f"{where}: {key} {new} is not a reordering of {old}")
                        out[key] = new
                closing = change.get("additionalProperties")
                if closing == "open":
                    if node.get("additionalProperties") is not False:
                        raise HsaError(f"{where} is not closed, so it cannot be opened")
                    del out["additionalProperties"]
                elif closing == "close":
                    if "additionalProperties" in node:
                        raise HsaError(f"{where} already sets additionalProperties")
                    if not _closing_is_safe(episode, arguments, tool, parts, node):
                        raise HsaError(f"{where}: a call or gold value uses an undeclared key, "
                                       f"so the schema cannot be closed")
                    out["additionalProperties"] = False
                elif closing is not None:
                    raise HsaError(f"{where}: additionalProperties change must be 'open' or "
                                   f"'close', got {closing!r}")
                return out
            return edit

        tools = []
        for tool in harness.tools:
            changes = params["edits"].get(tool.name)
            if changes is None:
                tools.append(tool)
                continue
            schema = _edit_schema(tool.parameters, {
                p: respell(c, tool.name, _unpointer(p)) for p, c in changes.items()}, tool.name)
            # No meta-schema re-check: respell() only reorders `required`/`enum` (checked above to
            # be permutations) and sets or removes `additionalProperties: false`, none of which
            # can make a valid schema invalid, and the check cost a quarter of generation time.
            tools.append(replace(tool, parameters=schema))
        return _with_tools(episode, tuple(tools))


@register
@dataclass(frozen=True)
class ToolShape(Transform):
    """Switches the shape in which the prompt shows tool schemas between OpenAI
    (``{"type": "function", "function": {...}}``) and MCP (``{"name", "inputSchema"}``), through
    ``prompt.options["tool_shape"]``; the tools themselves, and the OpenAI-shaped tools list given
    to trainers, are kept."""

    name = "tool_shape"
    version = "1"
    family = "tool_schema"

    shape: Literal["other", "openai", "mcp"] = "other"  # "other": the shape not shown now

    def sample_params(self, episode: Episode, rng: random.Random) -> dict:
        current = episode.harness.prompt.options.get(TOOL_SHAPE_OPTION, "openai")
        if self.shape != "other":
            return {"tool_shape": self.shape}
        return {"tool_shape": next((s for s in TOOL_SHAPES if s != current), TOOL_SHAPES[0])}

    def apply(self, episode: Episode, params: dict) -> Episode:
        shape = params["tool_shape"]
        if shape not in TOOL_SHAPES:
            raise HsaError(f"tool_shape must be one of {list(TOOL_SHAPES)}, got {shape!r}")
        return episode.with_prompt_options(**{TOOL_SHAPE_OPTION: shape})
