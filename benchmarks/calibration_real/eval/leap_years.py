"""Leap years and the days in each month of a year."""


def is_leap(year):
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def month_days(year):
    days = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    if is_leap(year):
        days[1] = 29
    return days


leaps = [y for y in range(1896, 1912) if is_leap(y)]
total = sum(month_days(2000))
print(leaps, total, is_leap(1900))
