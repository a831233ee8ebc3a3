import re

WORD = re.compile(r"\w+")


def words(text):
    return WORD.findall(text)
