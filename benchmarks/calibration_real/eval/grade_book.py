"""A grade book where one student's marks are missing a key."""

book = {
    "lee": {"math": 80, "art": 91},
    "kai": {"math": 72, "art": 64},
    "ola": {"math": 95},
}


def subject_average(subject):
    marks = [grades[subject] for grades in book.values()]
    return sum(marks) / len(marks)


math = subject_average("math")
art = subject_average("art")
print(math, art)
