"""Roman numerals both ways."""

VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
          (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def to_roman(number):
    parts = []
    for value, letters in VALUES:
        count, number = divmod(number, value)
        parts.append(letters * count)
    return "".join(parts)


def from_roman(text):
    symbols = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
    total = 0
    for i, ch in enumerate(text):
        value = symbols[ch]
        if i + 1 < len(text) and symbols[text[i + 1]] > value:
            total -= value
        else:
            total += value
    return total


year = to_roman(1994)
back = from_roman(year)
print(year, back)
