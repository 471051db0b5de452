"""Count vowels and consonants per word."""

VOWELS = set("aeiou")


def counts(word):
    v = c = 0
    for ch in word.lower():
        if ch in VOWELS:
            v += 1
        elif ch.isalpha():
            c += 1
    return v, c


words = ["Rhythm", "queue", "Python"]
table = {w: counts(w) for w in words}
most = max(table, key=lambda w: table[w][0])
print(table, most)
