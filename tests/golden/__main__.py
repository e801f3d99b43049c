"""``python -m tests.golden --update``: regenerate the transforms' golden files (see __init__)."""

from __future__ import annotations

import argparse

from tests.golden import update


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tests.golden",
        description="Write a golden file for every registered transform version that has none, and "
        "remove the golden files of versions no transform has. A transform whose "
        "output changed without a version bump is refused: bump its version first.",
    )
    parser.add_argument(
        "--update",
        action="store_true",
        required=True,
        help="write the missing golden files and remove the stale ones",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="also rewrite golden files whose output changed under the same "
        "version (only for a change of the golden serialisation itself)",
    )
    args = parser.parse_args(argv)
    for line in update(force=args.force) or ["golden files are up to date"]:
        print(line)


if __name__ == "__main__":
    main()
