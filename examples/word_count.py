"""Strings and dicts: a word-frequency table, CRUXEval style."""


def normalize(word):
    return word.strip(".,!?").lower()


def word_count(text):
    counts = {}
    for raw in text.split():
        word = normalize(raw)
        if not word:
            continue
        counts[word] = counts.get(word, 0) + 1
    top = sorted(counts, key=lambda w: (-counts[w], w))
    return top[:3], counts


print(word_count("the cat and the hat. The end!"))
