"""SQL written inside prose or code: another system's language, whose names are its own.

A data agent's skill, a call's query and the result that echoes it write SQL whose columns may be
spelled like a tool's parameters (``SELECT user_id, SUM(amount) ... GROUP BY user_id`` beside a
``get_user_profile(user_id)`` tool). Renamed with the parameter, the column would not exist in
the database the query runs on, and the query would contradict the gold call that runs it as
written. :func:`written_in_sql` tells such a piece of code; the renames keep it as written.
"""

from __future__ import annotations

import re

# What follows FROM in English and never in SQL: an article, a determiner or a pronoun, as a
# word of its own ("Select an x_column from the DataFrame's columns", "select a y_column from
# them", "delete from the list" are sentences; no table is called "the", and "my.orders" is one).
_NO_TABLE = (
    r"(?!(?:the|a|an|this|that|these|those|your|our|my|its|their|his|her|each|every|any|all|"
    r"them|it|which|what|there|here)(?!\w|\.\w))"
)
# A statement, in either case ("select ... from" is as much SQL as "SELECT ... FROM"), read by
# its first keyword and the clause that must follow it: "select a size from the list" in a
# quoted phrase is not code, but "select size from sizes" stays SQL whatever it means in English.
# A plan asked of a statement (EXPLAIN, with Postgres's options), a table or view made (CREATE
# TABLE name ( or AS) and the catalogue's own statements (SHOW TABLES; or FROM ...) are SQL too;
# "Show tables of revenue by region", "Create view for the dashboard" are sentences.
_STATEMENT = re.compile(
    r"^(?:\s*--[^\n]*\n)*\s*\(?\s*"
    r"(?:explain\s+(?:\([^)]*\)\s*|analy[sz]e\s+|verbose\s+|query\s+plan\s+)*)?(?:"
    rf"select\s[\s\S]*?\bfrom\s+{_NO_TABLE}"
    r"|with\s+(?:recursive\s+)?\w+\s*(?:\([\w\s,]*\)\s*)?as\s*\("
    r"|insert\s+into\s"
    r"|update\s+[\w.\"`\[\]]+\s+set\s"
    rf"|delete\s+from\s+{_NO_TABLE}"
    r"|merge\s+into\s"
    r"|create\s+(?:or\s+replace\s+)?(?:(?:temp|temporary|materialized)\s+)?(?:table|view)\s+"
    r"(?:if\s+not\s+exists\s+)?[\w.\"`\[\]]+\s*(?:\(|as\b)"
    r"|show\s+(?:full\s+)?(?:tables|columns|databases|schemas)(?=\s*(?:;|$|(?:from|in|like|where)\b))"
    r"|show\s+create\s+(?:table|view)\s"
    r")",
    re.IGNORECASE,
)
# A fragment of a statement (a clause a skill quotes on its own: `WHERE user_id = 1042`, `date =
# CURRENT_DATE - 1`): SQL's words written in capitals, as SQL is written and prose is not.
_CLAUSE = re.compile(
    r"(?<![\w.])(?:SELECT|FROM|WHERE|GROUP\s+BY|ORDER\s+BY|HAVING|(?:LEFT\s+|RIGHT\s+|INNER\s+|"
    r"OUTER\s+|FULL\s+|CROSS\s+)?JOIN|BETWEEN|INTERVAL|CURRENT_DATE|CURRENT_TIMESTAMP|"
    r"DISTINCT|UNION|LIMIT\s+\d+)(?![\w.])"
)
# Whether a text may hold SQL at all (most texts of most rows do not: read before the spans are).
HINT = re.compile(
    r"(?<![\w.])(?:SELECT|FROM|WHERE|GROUP|ORDER|HAVING|JOIN|BETWEEN|INTERVAL|CURRENT_DATE|"
    r"CURRENT_TIMESTAMP|DISTINCT|UNION|LIMIT|select|with|insert|update|delete|merge|explain|"
    r"EXPLAIN|create|CREATE|show|SHOW)(?![\w.])"
)


def sql_statement(code: str) -> bool:
    """Whether ``code`` (a fenced block's body) is an SQL statement, maybe after comments: a
    block of Python that runs one (``run_sql(query="SELECT ...", limit=20)``) is not, and its
    call's keywords are the tool's."""
    return _STATEMENT.match(code) is not None


# A quoted clause: a string that opens with a clause in SQL's capitals (a fragment a call's
# query is built from, "WHERE user_id = %s").
_QUOTED_CLAUSE = re.compile(
    r"^\s*(?:WHERE|GROUP\s+BY|ORDER\s+BY|HAVING|(?:(?:LEFT|RIGHT|INNER|OUTER|FULL|CROSS)\s+)?"
    r"JOIN|FROM|AND|OR|LIMIT\s+\d+)\s"
)


def quoted_sql(text: str) -> bool:
    """Whether a quoted string is SQL: a statement, or a clause it opens with. Not a sentence
    that shouts a word SQL has too ("max_rows must be BETWEEN 1 AND 5000" is a message)."""
    return _STATEMENT.match(text) is not None or _QUOTED_CLAUSE.match(text) is not None


def written_in_sql(code: str) -> bool:
    """Whether ``code`` (a code span's text or a quoted string, the strings inside it already
    held apart) is SQL: a statement in either case, or a clause written with SQL's capitals."""
    return _STATEMENT.match(code) is not None or _CLAUSE.search(code) is not None
