def repeat(word, count):
    return " ".join([word] * count)
