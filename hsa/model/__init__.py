"""The harness and episode model: skills, tools, hooks and the harness they make up; episodes, the
gold that says what solves them, and the BFCL-rule scorer that judges a message against gold."""
