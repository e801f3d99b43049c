"""Write the episodes of the test harnesses of other domains (airline, coding, finance).

``python -m tests.harnesses.make_episodes`` regenerates every ``tests/harnesses/<domain>/
episodes.jsonl`` byte for byte from the conversations below. Each conversation is written step by
step; the gold follows from the steps (a skill load expects that skill, a call step expects those
calls, a final reply expects no call and the words it must contain), and hook feedback comes from
running the harness's own hook, so feedback and hooks never disagree. These harnesses exist so
that the transform families are measured on harnesses nobody tuned them to (see
tests/test_family_coverage.py and tests/family_report.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from hsa.model.harness import Harness, load_harness

HERE = Path(__file__).resolve().parent
DOMAINS = ("airline", "coding", "finance")


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


class Conversation:
    """One episode, built step by step with its gold."""

    def __init__(self, harness: Harness, episode_id: str, user: str, **meta):
        self.harness, self.id, self.meta = harness, episode_id, meta
        self.messages: list[dict] = [{"role": "user", "content": user}]
        self.turns: list[dict] = []
        self.calls = 0

    def _call(self, name: str, args: dict) -> dict:
        self.calls += 1
        return {
            "id": f"call_{self.calls}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
        }

    def load(self, skill: str) -> Conversation:
        """The assistant loads a skill; the result is the skill's body."""
        call = self._call(self.harness.skill_loader, {"name": skill})
        self.turns.append({"at": len(self.messages), "skills": [skill]})
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        self.messages.append(
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": self.harness.skill(skill).content,
            }
        )
        return self

    def call(self, *steps: tuple[str, dict, object]) -> Conversation:
        """The assistant calls tools (in parallel when several); each gets its result."""
        calls = [self._call(name, args) for name, args, _ in steps]
        self.turns.append(
            {
                "at": len(self.messages),
                "calls": [
                    {"name": name, "arguments": {k: [v] for k, v in args.items()}}
                    for name, args, _ in steps
                ],
            }
        )
        self.messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        for call, (_, _, result) in zip(calls, steps):
            self.messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": _json(result)}
            )
        return self

    def blocked(self, name: str, args: dict, hook: str) -> Conversation:
        """A call the harness's hook stops: its result is the hook's own feedback."""
        tool = self.harness.tool(name)
        verdict = self.harness.hook_functions()[hook](
            {"tool_name": name, "arguments": args, "parameters": tool.parameters},
            self.harness_hook(hook).config,
        )
        assert not verdict["ok"], (self.id, hook, args)
        call = self._call(name, args)
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        self.messages.append(
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "name": f"hook.{hook}",
                "content": verdict["feedback"],
            }
        )
        return self

    def bad_reply(self, text: str, hook: str) -> Conversation:
        """A reply the harness's reply hook stops, then its feedback as a user turn."""
        verdict = self.harness.hook_functions()[hook](
            {"reply": text}, self.harness_hook(hook).config
        )
        assert not verdict["ok"], (self.id, hook, text)
        self.messages.append({"role": "assistant", "content": text})
        self.messages.append(
            {"role": "user", "name": f"hook.{hook}", "content": verdict["feedback"]}
        )
        return self

    def harness_hook(self, name: str):
        return next(h for h in self.harness.hooks if h.name == name)

    def reply(self, text: str, *contains: str) -> dict:
        """The final reply; returns the episode."""
        turn = {
            "at": len(self.messages),
            "no_call": True,
            "reply": {"contains": list(contains), "language": "en"},
        }
        self.turns.append(turn)
        self.messages.append({"role": "assistant", "content": text})
        return {
            "id": self.id,
            "harness": "harness",
            "messages": self.messages,
            "gold": {"turns": self.turns},
            "meta": self.meta,
        }


# ---- airline ------------------------------------------------------------------------------------

FLIGHTS = {
    ("SW214", "2026-03-14"): {
        "status": "delayed",
        "departure": "14:35",
        "gate": "B12",
        "delay_minutes": 50,
    },
    ("SW118", "2026-03-15"): {
        "status": "on_time",
        "departure": "07:10",
        "gate": "A3",
        "delay_minutes": 0,
    },
    ("SW452", "2026-03-14"): {
        "status": "cancelled",
        "departure": None,
        "gate": None,
        "delay_minutes": None,
    },
    ("SW730", "2026-03-16"): {
        "status": "delayed",
        "departure": "22:05",
        "gate": "C7",
        "delay_minutes": 215,
    },
}
BOOKINGS = {
    "K7P2QX": {
        "fare": "Classic",
        "passengers": [{"id": "P1", "name": "Ana Silva"}, {"id": "P2", "name": "Joao Silva"}],
        "flights": [{"flight_number": "SW214", "date": "2026-03-14", "from": "LIS", "to": "OPO"}],
    },
    "M4T9RA": {
        "fare": "Flex",
        "passengers": [{"id": "P1", "name": "Lena Koch"}],
        "flights": [{"flight_number": "SW730", "date": "2026-03-16", "from": "OPO", "to": "MAD"}],
    },
    "B2C8LD": {
        "fare": "Light",
        "passengers": [{"id": "P1", "name": "Tom Reyes"}],
        "flights": [{"flight_number": "SW118", "date": "2026-03-15", "from": "LIS", "to": "FNC"}],
    },
}


def airline(h: Harness) -> list[dict]:
    out = []
    for i, ((number, date), status) in enumerate(FLIGHTS.items(), 1):
        text = {
            "delayed": f"{number} is delayed and now leaves at {status['departure']} from "
            f"gate {status['gate']}.",
            "on_time": f"{number} is on time: departure {status['departure']}, gate "
            f"{status['gate']}.",
            "cancelled": f"{number} on {date} is cancelled; I can look at other flights for you.",
        }[status["status"]]
        key = status["departure"] or "cancelled"
        out.append(
            Conversation(
                h,
                f"air-status-{i:03d}",
                f"Is flight {number} on {date} on time?",
                category="status",
            )
            .load("delay-status-reply")
            .call(
                (
                    "get_flight_status",
                    {"flight_number": number, "date": date},
                    {"flight_number": number, "date": date, **status},
                )
            )
            .reply(text, key)
        )
    searches = [
        ({"origin": "LIS", "destination": "OPO", "departure_date": "2026-04-02"}, 49),
        (
            {
                "origin": "OPO",
                "destination": "MAD",
                "departure_date": "2026-04-10",
                "cabin_class": "business",
            },
            310,
        ),
        (
            {
                "origin": "LIS",
                "destination": "FNC",
                "departure_date": "2026-05-01",
                "passenger_count": 3,
            },
            87,
        ),
        (
            {
                "origin": "MAD",
                "destination": "LIS",
                "departure_date": "2026-04-20",
                "cabin_class": "premium_economy",
                "passenger_count": 2,
            },
            142,
        ),
    ]
    for i, (args, fare) in enumerate(searches, 1):
        ask = (
            f"Any flights from {args['origin']} to {args['destination']} on "
            f"{args['departure_date']}"
        )
        ask += f" in {args['cabin_class'].replace('_', ' ')}" if "cabin_class" in args else ""
        ask += f" for {args['passenger_count']} people" if "passenger_count" in args else ""
        out.append(
            Conversation(h, f"air-search-{i:03d}", ask + "?", category="search")
            .call(
                (
                    "search_flights",
                    args,
                    {
                        "flights": [
                            {
                                "flight_number": f"SW{300 + i}",
                                "departure": "09:20",
                                "fare_eur": fare,
                            }
                        ]
                    },
                )
            )
            .reply(f"SW{300 + i} leaves at 09:20, from {fare} EUR per person.", str(fare))
        )
    for i, (ref, ids) in enumerate(
        [("K7P2QX", ["P1", "P2"]), ("M4T9RA", None), ("K7P2QX", ["P2"])], 1
    ):
        args = {"booking_reference": ref} | ({"passenger_ids": ids} if ids else {})
        checked = {"Classic": 1, "Flex": 2}[BOOKINGS[ref]["fare"]]
        out.append(
            Conversation(
                h, f"air-bags-{i:03d}", f"How many bags can we take on {ref}?", category="baggage"
            )
            .call(
                (
                    "get_baggage_allowance",
                    args,
                    {"cabin_kg": 8, "checked_bags": checked, "passengers": ids or ["P1"]},
                )
            )
            .reply(
                f"Each passenger has one 8 kg cabin bag and {checked} checked bag(s).", str(checked)
            )
        )
    for i, (ref, pid, count, price) in enumerate(
        [("K7P2QX", "P2", 1, 35), ("B2C8LD", "P1", 2, 70)], 1
    ):
        out.append(
            Conversation(
                h,
                f"air-addbag-{i:03d}",
                f"Please add {count} checked bag(s) for {pid} on booking {ref}.",
                category="baggage",
            )
            .load("baggage-rules")
            .call(
                (
                    "add_checked_bag",
                    {"booking_reference": ref, "passenger_id": pid, "bag_count": count},
                    {"added": count, "price_eur": price},
                )
            )
            .reply(f"Done: {count} bag(s) of 23 kg added for {price} EUR.", str(price))
        )
    for i, (ref, flight, date, fee) in enumerate(
        [("K7P2QX", "SW216", "2026-03-15", 45), ("M4T9RA", "SW732", "2026-03-17", 0)], 1
    ):
        out.append(
            Conversation(
                h,
                f"air-change-{i:03d}",
                f"Can you move booking {ref} to {flight} on {date}?",
                category="change",
            )
            .load("flight-change-policy")
            .call(("get_booking", {"booking_reference": ref}, BOOKINGS[ref]))
            .call(
                (
                    "change_flight",
                    {
                        "booking_reference": ref,
                        "new_flight_number": flight,
                        "new_departure_date": date,
                    },
                    {"changed": True, "fee_eur": fee},
                )
            )
            .reply(f"You are now on {flight} on {date}; the change fee is {fee} EUR.", flight)
        )
    for i, (ref, reason, method) in enumerate(
        [("B2C8LD", "personal", "travel_credit"), ("K7P2QX", "illness", "original_payment")], 1
    ):
        out.append(
            Conversation(
                h,
                f"air-cancel-{i:03d}",
                f"I need to cancel {ref} ({reason}) and get my money back as "
                f"{method.replace('_', ' ')}.",
                category="cancel",
            )
            .load("cancellation-refund-policy")
            .call(
                (
                    "cancel_booking",
                    {"booking_reference": ref, "reason": reason},
                    {"cancelled": True},
                )
            )
            .call(
                (
                    "request_refund",
                    {"booking_reference": ref, "refund_method": method},
                    {"refund_eur": 120, "method": method},
                )
            )
            .reply(
                f"{ref} is cancelled and 120 EUR is on its way as {method.replace('_', ' ')}.",
                "120",
            )
        )
    for i, (ref, pid, seat) in enumerate([("K7P2QX", "P1", "14C"), ("M4T9RA", "P1", "2A")], 1):
        out.append(
            Conversation(
                h, f"air-seat-{i:03d}", f"Can {pid} on {ref} sit in {seat}?", category="seat"
            )
            .load("seat-selection-reply")
            .call(
                (
                    "select_seat",
                    {"booking_reference": ref, "passenger_id": pid, "seat_number": seat},
                    {"seat": seat, "price_eur": 12},
                )
            )
            .reply(f"Seat {seat} is yours for 12 EUR.", seat)
        )
    for i, (typed, ref) in enumerate([("k7p2qx", "K7P2QX"), ("m4t9-ra", "M4T9RA")], 1):
        out.append(
            Conversation(
                h, f"air-hook-{i:03d}", f"What's on my booking {typed}?", category="hook_retry"
            )
            .blocked("get_booking", {"booking_reference": typed}, "booking_reference_format")
            .call(("get_booking", {"booking_reference": ref}, BOOKINGS[ref]))
            .reply(f"Booking {ref} is a {BOOKINGS[ref]['fare']} fare.", BOOKINGS[ref]["fare"])
        )
    out.append(
        Conversation(
            h,
            "air-hook-003",
            "My flight SW730 was delayed 4 hours, what now?",
            category="hook_retry",
        )
        .call(
            (
                "get_flight_status",
                {"flight_number": "SW730", "date": "2026-03-16"},
                {"flight_number": "SW730", **FLIGHTS[("SW730", "2026-03-16")]},
            )
        )
        .bad_reply(
            "Sorry! You will get a guaranteed refund for the delay.", "no_compensation_promises"
        )
        .reply(
            "SW730 leaves at 22:05 after a 215-minute delay; over three hours you "
            "can file a compensation claim.",
            "22:05",
        )
    )
    out.append(
        Conversation(h, "air-greeting-001", "Thanks a lot, that was quick!", category="greeting")
        .load("greeting-reply")
        .reply("You're welcome! Anything else about your booking?", "welcome")
    )
    out.append(
        Conversation(
            h,
            "air-parallel-001",
            "Are SW214 and SW452 on the 14th of March flying?",
            category="parallel",
        )
        .call(
            (
                "get_flight_status",
                {"flight_number": "SW214", "date": "2026-03-14"},
                FLIGHTS[("SW214", "2026-03-14")],
            ),
            (
                "get_flight_status",
                {"flight_number": "SW452", "date": "2026-03-14"},
                FLIGHTS[("SW452", "2026-03-14")],
            ),
        )
        .reply("SW214 flies at 14:35 (delayed); SW452 is cancelled.", "14:35")
    )
    out.append(
        Conversation(
            h, "air-irrelevant-001", "Can you recommend a hotel in Porto?", category="irrelevant"
        ).reply("I can only help with Skyway bookings and flights.", "bookings")
    )
    return out


# ---- coding -------------------------------------------------------------------------------------

FILES = {
    "src/app/config.py": "import os\n\nTIMEOUT = int(os.environ.get('TIMEOUT', '30s'))\n",
    "src/app/retry.py": "def backoff(attempt):\n    return 2 ** attempt\n",
    "tests/test_config.py": "def test_timeout_default():\n    assert TIMEOUT == 30\n",
}


def coding(h: Harness) -> list[dict]:
    out = []
    for i, (path, lines) in enumerate(
        [("src/app/config.py", None), ("src/app/retry.py", (1, 2)), ("tests/test_config.py", None)],
        1,
    ):
        args = {"path": path} | ({"startLine": lines[0], "endLine": lines[1]} if lines else {})
        out.append(
            Conversation(h, f"code-read-{i:03d}", f"What does {path} do?", category="explain")
            .load("explain-code")
            .call(("readFile", args, {"path": path, "text": FILES[path]}))
            .reply(f"{path} is short: line 1 sets it up; read it with the tests.", path)
        )
    for i, (query, glob, hits) in enumerate(
        [("TIMEOUT", "*.py", 2), ("def backoff", None, 1), ("retry(", "src/*.py", 3)], 1
    ):
        args = {"query": query} | ({"fileGlob": glob} if glob else {})
        out.append(
            Conversation(h, f"code-search-{i:03d}", f"Where is `{query}` used?", category="search")
            .call(("searchCode", args, {"matches": hits, "files": ["src/app/config.py"]}))
            .reply(f"{hits} match(es), in src/app/config.py.", str(hits))
        )
    for i, (path, recursive) in enumerate([("src/app", False), ("tests", True)], 1):
        out.append(
            Conversation(h, f"code-list-{i:03d}", f"What's in {path}?", category="list")
            .call(
                (
                    "listDirectory",
                    {"path": path, "recursive": recursive},
                    {"entries": ["__init__.py", "config.py", "retry.py"]},
                )
            )
            .reply("Three files: __init__.py, config.py and retry.py.", "config.py")
        )
    out.append(
        Conversation(
            h, "code-fix-001", "test_timeout_default fails, can you fix it?", category="fix"
        )
        .load("fix-failing-test")
        .call(
            (
                "runTests",
                {"testPath": "tests/test_config.py"},
                {"failed": 1, "output": "ValueError: invalid literal for int(): '30s'"},
            )
        )
        .call(
            (
                "readFile",
                {"path": "src/app/config.py"},
                {"path": "src/app/config.py", "text": FILES["src/app/config.py"]},
            )
        )
        .call(
            (
                "applyPatch",
                {
                    "path": "src/app/config.py",
                    "patch": "-TIMEOUT = int(os.environ.get('TIMEOUT', '30s'))\n"
                    "+TIMEOUT = int(os.environ.get('TIMEOUT', '30'))\n",
                },
                {"applied": True},
            )
        )
        .call(("runTests", {"testPath": "tests/test_config.py"}, {"failed": 0}))
        .reply(
            "Fixed: the default was '30s', which int() refuses; it is '30' now and "
            "the test passes.",
            "30",
        )
    )
    for i, (number, title) in enumerate([(42, "Timeout ignores env"), (57, "Retry too slow")], 1):
        out.append(
            Conversation(
                h,
                f"code-issue-{i:03d}",
                f"Look at issue #{number} and find the code it is about.",
                category="parallel",
            )
            .call(
                ("getIssue", {"issueNumber": number}, {"title": title, "labels": ["bug"]}),
                (
                    "searchCode",
                    {"query": title.split()[0].lower()},
                    {"matches": 1, "files": ["src/app/config.py"]},
                ),
            )
            .reply(f"Issue #{number} ({title}) is about src/app/config.py.", str(number))
        )
    for i, (head, title) in enumerate(
        [
            ("fix/timeout-default", "Fix timeout default"),
            ("feat/retry-jitter", "Add jitter to retry backoff"),
        ],
        1,
    ):
        out.append(
            Conversation(h, f"code-pr-{i:03d}", f"Open a PR for {head}.", category="pr")
            .load("pull-request-style")
            .call(
                (
                    "createPullRequest",
                    {
                        "title": title,
                        "body": "What changed, why, and how it was tested.",
                        "headBranch": head,
                        "baseBranch": "main",
                    },
                    {"number": 100 + i, "url": f"https://git.example/pr/{100 + i}"},
                )
            )
            .reply(f"Opened PR #{100 + i}: {title}.", str(100 + i))
        )
    for i, (bad, good) in enumerate(
        [("../settings.py", "src/app/config.py"), ("/etc/app/retry.py", "src/app/retry.py")], 1
    ):
        out.append(
            Conversation(
                h, f"code-hook-{i:03d}", "Make the retry limit configurable.", category="hook_retry"
            )
            .blocked("applyPatch", {"path": bad, "patch": "+RETRIES = 3\n"}, "patchScope")
            .call(("applyPatch", {"path": good, "patch": "+RETRIES = 3\n"}, {"applied": True}))
            .reply(f"Added RETRIES = 3 to {good}.", good)
        )
    out.append(
        Conversation(
            h, "code-review-001", "Review my change to src/app/retry.py.", category="review"
        )
        .load("code-review-checklist")
        .call(
            (
                "readFile",
                {"path": "src/app/retry.py"},
                {"path": "src/app/retry.py", "text": FILES["src/app/retry.py"]},
            ),
            (
                "gitLog",
                {"path": "src/app/retry.py", "maxCount": 5},
                {"commits": [{"sha": "a1b2c3", "message": "Exponential backoff"}]},
            ),
        )
        .reply("Blocking: no test for backoff. Suggestion: cap the delay.", "test")
    )
    out.append(
        Conversation(h, "code-tests-001", "Write tests for backoff.", category="tests")
        .load("write-unit-tests")
        .call(
            ("searchCode", {"query": "def backoff"}, {"matches": 1, "files": ["src/app/retry.py"]})
        )
        .call(
            (
                "applyPatch",
                {
                    "path": "tests/test_retry.py",
                    "patch": "+def test_backoff_doubles():\n+    assert backoff(3) == 8\n",
                },
                {"applied": True},
            )
        )
        .call(("runTests", {"testPath": "tests/test_retry.py"}, {"failed": 0}))
        .reply("Added tests/test_retry.py with one test; it passes.", "test_retry.py")
    )
    out.append(
        Conversation(
            h, "code-irrelevant-001", "What's a good name for my cat?", category="irrelevant"
        ).reply("I can only help with this repository's code.", "repository")
    )
    return out


# ---- finance ------------------------------------------------------------------------------------

ACCOUNTS = {
    "CHK-001": ("Everyday checking", "EUR", 2450.10),
    "SAV-002": ("Savings", "EUR", 12800.00),
    "USD-003": ("Dollar account", "USD", 640.55),
}


def finance(h: Harness) -> list[dict]:
    out = []
    for i, (account, (name, currency, balance)) in enumerate(ACCOUNTS.items(), 1):
        out.append(
            Conversation(
                h, f"fin-balance-{i:03d}", f"How much is on {account}?", category="balance"
            )
            .call(
                (
                    "get_account_balance",
                    {"account_id": account},
                    {
                        "account_id": account,
                        "currency": currency,
                        "current": balance,
                        "available": balance,
                    },
                )
            )
            .reply(f"{name} ({account}) holds {balance:.2f} {currency}.", f"{balance:.2f}")
        )
    for i, (account, start, end, category, total) in enumerate(
        [
            ("CHK-001", "2026-02-01", "2026-02-28", None, 1830.40),
            ("CHK-001", "2026-02-01", "2026-02-28", "dining", 212.75),
            ("USD-003", "2026-01-01", "2026-01-31", "transport", 96.00),
        ],
        1,
    ):
        args = {"account_id": account, "start_date": start, "end_date": end}
        args |= {"category": category} if category else {}
        out.append(
            Conversation(
                h,
                f"fin-spend-{i:03d}",
                f"What did I spend from {account} "
                f"between {start} and {end}" + (f" on {category}" if category else "") + "?",
                category="spending",
            )
            .load("spending-summary-reply")
            .call(("list_transactions", args, {"total": total, "count": 14}))
            .reply(f"You spent {total:.2f} in that period.", f"{total:.2f}")
        )
    for i, (src, dst, amount, currency, memo) in enumerate(
        [
            ("CHK-001", "SAV-002", 500, "EUR", "March savings"),
            ("SAV-002", "CHK-001", 1200.5, "EUR", None),
            ("CHK-001", "SAV-002", 75, "EUR", "Holiday pot"),
        ],
        1,
    ):
        args = {
            "from_account_id": src,
            "to_account_id": dst,
            "amount": amount,
            "currency": currency,
        } | ({"memo": memo} if memo else {})
        out.append(
            Conversation(
                h,
                f"fin-transfer-{i:03d}",
                f"Move {amount} {currency} from {src} to {dst}.",
                category="transfer",
            )
            .load("transfer-safety-checklist")
            .call(
                (
                    "get_account_balance",
                    {"account_id": src},
                    {
                        "account_id": src,
                        "current": ACCOUNTS[src][2],
                        "available": ACCOUNTS[src][2],
                        "currency": currency,
                    },
                )
            )
            .call(("transfer_funds", args, {"transfer_id": f"T-{900 + i}", "status": "sent"}))
            .reply(f"Sent {amount} {currency} from {src} to {dst} (T-{900 + i}).", f"T-{900 + i}")
        )
    for i, (base, quote, rate) in enumerate([("EUR", "USD", 1.0842), ("GBP", "CHF", 1.1213)], 1):
        out.append(
            Conversation(
                h, f"fin-fx-{i:03d}", f"What's the {base} to {quote} rate?", category="exchange"
            )
            .call(
                (
                    "get_exchange_rate",
                    {"base_currency": base, "quote_currency": quote},
                    {"rate": rate, "as_of": "2026-03-02T09:00:00Z"},
                )
            )
            .reply(f"1 {base} = {rate} {quote} this morning.", str(rate))
        )
    for i, (category, limit) in enumerate([("dining", 180), ("groceries", 420)], 1):
        out.append(
            Conversation(h, f"fin-budget-{i:03d}", f"Help me budget {category}.", category="budget")
            .load("budgeting-advice")
            .call(
                (
                    "list_transactions",
                    {
                        "account_id": "CHK-001",
                        "start_date": "2026-02-01",
                        "end_date": "2026-02-28",
                        "category": category,
                    },
                    {"total": limit + 32.75, "count": 9},
                )
            )
            .call(
                (
                    "create_budget",
                    {"category": category, "monthly_limit": limit, "currency": "EUR"},
                    {"budget_id": f"B-{i}", "alerts_at": [0.8, 1.0]},
                )
            )
            .reply(
                f"Your {category} budget is {limit} EUR a month; alerts at 80% and 100%.",
                str(limit),
            )
        )
    for i, (ticker, price) in enumerate([("ASML", 712.4), ("SAP", 183.9)], 1):
        out.append(
            Conversation(h, f"fin-stock-{i:03d}", f"Should I buy {ticker}?", category="stock")
            .load("investment-disclaimer")
            .call(
                (
                    "get_stock_quote",
                    {"ticker": ticker},
                    {
                        "ticker": ticker,
                        "price": price,
                        "currency": "EUR",
                        "as_of": "2026-03-02T15:30:00Z",
                    },
                )
            )
            .reply(f"{ticker} trades at {price} EUR; I give no investment advice.", str(price))
        )
    for i, (principal, rate, months, payment) in enumerate(
        [(20000, 4.2, 60, 370.16), (250000, 3.1, 360, 1067.54)], 1
    ):
        out.append(
            Conversation(
                h,
                f"fin-loan-{i:03d}",
                f"What would I pay monthly on {principal} at {rate}% over {months} months?",
                category="loan",
            )
            .call(
                (
                    "calculate_loan_payment",
                    {"principal": principal, "annual_interest_rate": rate, "term_months": months},
                    {"monthly_payment": payment},
                )
            )
            .reply(f"About {payment} a month.", str(payment))
        )
    out.append(
        Conversation(h, "fin-accounts-001", "Which accounts do I have?", category="accounts")
        .call(
            (
                "list_accounts",
                {},
                {
                    "accounts": [
                        {"account_id": k, "name": v[0], "currency": v[1]}
                        for k, v in ACCOUNTS.items()
                    ]
                },
            )
        )
        .reply("Three: CHK-001, SAV-002 and USD-003.", "SAV-002")
    )
    out.append(
        Conversation(h, "fin-parallel-001", "Balances of CHK-001 and SAV-002?", category="parallel")
        .call(
            (
                "get_account_balance",
                {"account_id": "CHK-001"},
                {"current": 2450.10, "currency": "EUR"},
            ),
            (
                "get_account_balance",
                {"account_id": "SAV-002"},
                {"current": 12800.00, "currency": "EUR"},
            ),
        )
        .reply("CHK-001: 2450.10 EUR; SAV-002: 12800.00 EUR.", "12800.00")
    )
    out.append(
        Conversation(
            h, "fin-irrelevant-001", "Write me a poem about spring.", category="irrelevant"
        ).reply("I can only help with your accounts and money questions.", "accounts")
    )
    return out


BUILDERS = {"airline": airline, "coding": coding, "finance": finance}


def episodes_path(domain: str) -> Path:
    return HERE / domain / "episodes.jsonl"


def main() -> None:
    for domain in DOMAINS:
        harness = load_harness(HERE / domain / "harness", trust_hooks=True)
        lines = [_json(e) for e in BUILDERS[domain](harness)]
        episodes_path(domain).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{episodes_path(domain)}: {len(lines)} episodes")


if __name__ == "__main__":
    main()
