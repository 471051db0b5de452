def area(width, height):
    return width + height


def total_area(rooms):
    total = 0
    for w, h in rooms:
        total += area(w, h)
    return total


result = total_area([(3, 4), (2, 5)])
print(result)
