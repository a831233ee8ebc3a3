"""Tests of this skill's own files.

Run with: python -m unittest test_skill.py -v
"""
import os
import unittest

SKILL_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class SkillFiles(unittest.TestCase):
    def test_skill_md_exists(self):
        self.assertTrue(os.path.isfile(os.path.join(SKILL_DIR, "SKILL.md")))


if __name__ == "__main__":
    unittest.main()
