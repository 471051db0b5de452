"""Word lengths of a sentence and the longest word."""


def lengths(sentence):
    words = sentence.split()
    return {word: len(word) for word in words}


def longest(sentence):
    best = ""
    for word in sentence.split():
        if len(word) > len(best):
            best = word
    return best


text = "debugging is twice as hard as writing the code"
sizes = lengths(text)
print(sizes["debugging"], longest(text), sum(sizes.values()))
