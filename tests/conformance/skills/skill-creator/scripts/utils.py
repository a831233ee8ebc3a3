from pathlib import Path


def parse_skill_md(folder):
    text = Path(folder, "SKILL.md").read_text(encoding="utf-8")
    head = text.split("---")[1] if text.startswith("---") else ""
    return dict(line.split(": ", 1) for line in head.strip().splitlines() if ": " in line)
