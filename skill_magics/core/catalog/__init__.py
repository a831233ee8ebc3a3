"""Skills on disk: where they are, what SKILL.md says, which scripts and references they hold."""
