"""Reverse the order of words and the letters of each word."""

sentence = "stressed desserts are sweet"
words = sentence.split(" ")
reversed_order = words[::-1]
mirrored = [w[::-1] for w in words]
same = [w for w in words if w[::-1] in words and w[::-1] != w]
print(" ".join(reversed_order))
print(" ".join(mirrored), same)
