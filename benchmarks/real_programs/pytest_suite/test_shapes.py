"""A small pytest suite (run as `python -m pytest -q` in this folder): fixtures, parametrize, a class."""

import math

import pytest


def area(shape, *dims):
    if shape == "square":
        return dims[0] ** 2
    if shape == "circle":
        return math.pi * dims[0] ** 2
    raise ValueError(shape)


@pytest.fixture
def unit():
    return 1.0


@pytest.mark.parametrize(("shape", "dims", "expected"), [("square", (3,), 9), ("circle", (1,), math.pi)])
def test_area(shape, dims, expected):
    result = area(shape, *dims)  # breakpoint
    assert result == pytest.approx(expected)


def test_unknown_shape():
    with pytest.raises(ValueError):
        area("hexagon", 1)


class TestUnit:
    def test_square(self, unit):
        assert area("square", unit) == 1.0
