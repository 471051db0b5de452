"""A Caesar cipher and a brute-force break of it."""

import string

ALPHABET = string.ascii_lowercase


def shift(text, key):
    out = []
    for ch in text:
        if ch in ALPHABET:
            out.append(ALPHABET[(ALPHABET.index(ch) + key) % 26])
        else:
            out.append(ch)
    return "".join(out)


secret = shift("attack at dawn", 3)
candidates = {k: shift(secret, -k) for k in range(1, 5)}
best = [k for k, text in candidates.items() if "dawn" in text]
print(secret, best)
