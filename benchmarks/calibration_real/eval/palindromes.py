"""Find palindromic phrases, ignoring case and punctuation."""


def normalise(text):
    return "".join(ch.lower() for ch in text if ch.isalnum())


def is_palindrome(text):
    clean = normalise(text)
    return clean == clean[::-1]


phrases = ["A man, a plan, a canal: Panama", "Hello", "Was it a car or a cat I saw?", "abca"]
result = {}
for phrase in phrases:
    result[phrase[:10]] = is_palindrome(phrase)
print(result)
