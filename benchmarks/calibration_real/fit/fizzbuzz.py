"""FizzBuzz, collected and counted."""


def fizzbuzz(n):
    if n % 15 == 0:
        return "FizzBuzz"
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    return str(n)


out = [fizzbuzz(i) for i in range(1, 16)]
counts = {}
for word in out:
    if not word.isdigit():
        counts[word] = counts.get(word, 0) + 1
print(out[-1], counts)
