"""Teacher rollouts: the runtime over episodes and their harness variants, judged by the scorer
and written as a dataset version (kept trajectories as rows, the others as rejects)."""

from hsa.rollout.run import Result, RolloutSettings, rollout, rollout_recipe
from hsa.rollout.script import Script, ScriptError, script_of

__all__ = [
    "Result",
    "RolloutSettings",
    "Script",
    "ScriptError",
    "rollout",
    "rollout_recipe",
    "script_of",
]
