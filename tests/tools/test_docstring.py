"""What ``@tool`` reads from a function's docstring: the tool's description and each parameter's (Google and
Sphinx styles)."""

from batonflow.tools import tool


def described(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description ``@tool`` gives a function whose docstring is ``doc``, and that of each parameter that got
    one."""

    def forecast(city: str = "", days: int = 0, query: str = "", limit: int = 0) -> str:
        return ""

    forecast.__doc__ = doc
    info = tool(forecast).info
    properties = info.parameters["properties"]
    return info.description, {name: p["description"] for name, p in properties.items() if "description" in p}


GOOGLE = """Get the weather forecast for a city.

The forecast comes from the national service.

Args:
    city (str): The city name,
        for example "Paris".
    days: How many days to forecast.
    *extra: Tolerated even though tools cannot take it.

Returns:
    The forecast, one line per day.

Raises:
    LookupError: an unknown city.
"""

SPHINX = """Search the web.

:param query: What to search for,
    in plain words.
:param int limit: At most this many results.
:type limit: int
:returns: The results.
:raises ValueError: on an empty query.
"""


def test_google_docstring_gives_summary_before_args_and_each_argument_description() -> None:
    summary, params = described(GOOGLE)
    assert summary == "Get the weather forecast for a city.\n\nThe forecast comes from the national service."
    assert params == {
        "city": 'The city name, for example "Paris".',
        "days": "How many days to forecast.",
    }  # and "*extra", which a tool cannot take, is tolerated


def test_google_sections_after_args_do_not_leak_into_descriptions() -> None:
    _, params = described(GOOGLE)
    assert "LookupError" not in params
    assert all("forecast, one line" not in text for text in params.values())


def test_sphinx_docstring_gives_summary_before_fields_and_each_param_description() -> None:
    summary, params = described(SPHINX)
    assert summary == "Search the web."
    assert params == {"query": "What to search for, in plain words.", "limit": "At most this many results."}


def test_docstring_without_sections_is_all_summary() -> None:
    assert described("Add two numbers.\n\nExactly.") == ("Add two numbers.\n\nExactly.", {})


def test_missing_docstring_gives_empty_summary_and_no_descriptions() -> None:
    assert described(None) == ("", {})
    assert described("") == ("", {})


def test_other_google_sections_end_the_summary() -> None:
    summary, params = described("Do it.\n\nExamples:\n    do_it()\n")
    assert (summary, params) == ("Do it.", {})


def test_google_args_entries_may_have_empty_first_line() -> None:
    _, params = described("S.\n\nArgs:\n    city:\n        The city.\n")
    assert params == {"city": "The city."}
