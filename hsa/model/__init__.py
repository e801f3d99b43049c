"""The harness and episode model: skills, tools (and the one walk over their parameter schemas),
hooks and the harness they make up; episodes, the text of their messages, the gold that says what
solves them, and the BFCL-rule scorer that judges a message against gold."""
