"""Scale a recipe to a number of servings and round the amounts."""

from fractions import Fraction

recipe = {"flour": Fraction(3, 2), "sugar": Fraction(2, 3), "eggs": Fraction(2), "milk": Fraction(1, 4)}
serves = 4


def scale(ingredients, people):
    factor = Fraction(people, serves)
    return {name: amount * factor for name, amount in ingredients.items()}


scaled = scale(recipe, 6)
shopping = {name: float(amount) for name, amount in scaled.items()}
eggs = round(shopping["eggs"])
print(scaled["flour"], shopping["sugar"], eggs)
