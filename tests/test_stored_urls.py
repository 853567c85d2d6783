"""``storable_url``: a URL as it may be stored — its address and only the query parameters
on the allow-list, with what was left out named (never its value)."""

from __future__ import annotations

import pytest

from neta_nb.providers.factory import create_provider
from neta_nb.stored_urls import describe_withheld, storable_url, withheld_names


@pytest.mark.parametrize(("url", "stored", "withheld"), [
    ("https://x.openai.azure.com/openai/v1?api-version=2024-06-01&api-key=S3CRET",
     "https://x.openai.azure.com/openai/v1?api-version=2024-06-01", ("api-key",)),
    ("http://proxy.local/v1?token=S3CRET&sig=S3CRET&API_Version=2",
     "http://proxy.local/v1?API_Version=2", ("token", "sig")),
    ("http://u:S3CRET@[::1]:8080/v1?a=1&a=2", "http://[::1]:8080/v1", ("user:password", "a")),
    ("http://S3CRET@127.0.0.1/v1", "http://127.0.0.1/v1", ("user:password",)),
    ("http://127.0.0.1/v1?S3CRET", "http://127.0.0.1/v1", ("a query value without a name",)),
    ("http://127.0.0.1/v1?sk-S3CRET%3D=x", "http://127.0.0.1/v1",
     ("a query value without a name",)),
    ("http://127.0.0.1/v1#access_token=S3CRET", "http://127.0.0.1/v1", ("#fragment",)),
    ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1", ()),
])
def test_only_the_address_and_safe_parameters_are_kept(url: str, stored: str,
                                                        withheld: tuple[str, ...]) -> None:
    result = storable_url(url)
    assert (result.url, result.withheld) == (stored, withheld)
    assert "S3CRET" not in repr(result)


def test_what_was_left_out_before_stays_noted_and_reads_as_a_sentence() -> None:
    again = storable_url("https://gw/v1?api-version=1", noted=["user:password", "api-key"])
    assert again.url == "https://gw/v1?api-version=1"
    assert describe_withheld(again.withheld) == (
        "user:password and the query parameter api-key")
    assert describe_withheld(["token", "sig", "#fragment"]) == (
        "the query parameters token and sig and the #fragment")
    assert storable_url(None, noted=["token"]).withheld == ("token",)
    assert withheld_names(["token", 3, "", "token"]) == ("token",)
    assert withheld_names("token") == ()


# --- request options and tokens that look like names ---------------------------------------

def test_a_key_in_request_options_is_not_stored() -> None:
    provider = create_provider("openai-compatible:m", base_url="http://127.0.0.1:9/v1",
                               request_options={"extra_query": {"api-key": "S3CRET"},
                                                "extra_headers": {"api-key": "S3CRET"},
                                                "top_p": 0.9})
    assert "S3CRET" not in repr(provider.settings())


def test_a_bare_padded_token_is_not_kept_as_a_parameter_name() -> None:
    result = storable_url("http://127.0.0.1/v1?sk-S3CRET=")
    assert result.url == "http://127.0.0.1/v1"
    assert "S3CRET" not in repr(result)
