"""What a rollout plays from an episode, and which of the teacher's steps its gold judges.

The user side of the episode is replayed: its leading system messages, then its user messages one
at a time (hook feedback messages are the runtime's to make, so recorded ones are not replayed).
Everything else is the teacher's. A gold turn judges the recorded assistant message at index
``at``; in a rollout it judges the step in the same *place*: the same user turn, and the same
position among the steps the hooks accepted in that turn. A step a hook sent back does not count,
so a teacher that needs a retry where the recording did not (or the other way round) is judged
on the step that was accepted. A recorded step counts as sent back when a hook message answers one
of its calls (a ``tool`` message named ``hook.<name>``) or, for a reply, follows it (a ``user``
message named ``hook.<name>``).
"""

from __future__ import annotations

from dataclasses import dataclass

from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.gold import TurnGold
from hsa.model.hook import from_user, hook_rejected

Place = tuple[int, int]  # (user turn, position among the accepted steps of that turn)


class ScriptError(HsaError):
    """An episode a rollout cannot play (no user message, or gold before any user message)."""


@dataclass(frozen=True)
class Script:
    """The replayed side of an episode and the places its gold turns judge."""

    prefix: tuple[dict, ...]
    users: tuple[dict, ...]
    judged: dict[Place, tuple[int, TurnGold]]  # place -> (index in gold.turns, the turn)

    @property
    def last(self) -> Place:
        """The place of the last judged step: the rollout is over once it is judged."""
        return max(self.judged)

    def unvisited(self, seen: set[Place], before_turn: int | None = None) -> list[Place]:
        """Judged places not seen, in the user turns before ``before_turn`` (None: all)."""
        return sorted(
            p for p in self.judged if p not in seen and (before_turn is None or p[0] < before_turn)
        )


def script_of(episode: Episode) -> Script:
    """The script of ``episode``; :class:`ScriptError` when it cannot be played."""
    messages = episode.messages
    start = 0
    while start < len(messages) and messages[start].get("role") in ("system", "developer"):
        start += 1
    users = tuple(m for m in messages[start:] if from_user(m))
    if not users:
        raise ScriptError("the episode has no user message to play", field="messages")
    places: dict[int, Place] = {}
    turn, position = -1, 0
    sent_back = set(hook_rejected(messages))  # a step a hook sent back takes no place of its own
    for i in range(start, len(messages)):
        message = messages[i]
        if from_user(message):
            turn, position = turn + 1, 0
        elif message.get("role") == "assistant":
            places[i] = (turn, position)
            position += i not in sent_back
    places[len(messages)] = (turn, position)  # the message the episode awaits, when at == len
    judged = {}
    for k, gold_turn in enumerate(episode.gold.turns):
        place = places.get(gold_turn.at)
        if place is None or place[0] < 0:
            raise ScriptError(
                f"gold turn at={gold_turn.at} does not judge an assistant message "
                f"after a user message, so a rollout cannot reach it",
                field=f"gold.turns[{k}].at",
            )
        if place in judged:
            raise ScriptError(
                f"gold turns at={judged[place][1].at} and at={gold_turn.at} judge "
                f"the same step (one was sent back by a hook)",
                field=f"gold.turns[{k}].at",
            )
        judged[place] = (k, gold_turn)
    return Script(prefix=tuple(messages[:start]), users=users, judged=judged)
