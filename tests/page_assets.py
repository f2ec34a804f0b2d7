"""Which assets a rendered page loads: tests check they are all served by the app itself.

A substring test over the whole page ("cdn" not in it) fails at random: the page's CSRF token
is 64 random letters and digits, which spell "cdn" about once in 300 renders.
"""
from html.parser import HTMLParser

_ASSET_ATTRIBUTES = {"script": "src", "link": "href", "img": "src", "iframe": "src",
                     "source": "src", "video": "src", "audio": "src"}


class _AssetCollector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag, attrs):
        wanted = _ASSET_ATTRIBUTES.get(tag)
        self.urls.extend(value for name, value in attrs if name == wanted and value)


def asset_urls(page: str) -> list[str]:
    """The URLs of every script, stylesheet, image and frame the page loads."""
    collector = _AssetCollector()
    collector.feed(page)
    return collector.urls


def foreign_assets(page: str) -> list[str]:
    """Assets that are not a path on this app (another host, a protocol-relative URL, a CDN)."""
    return [url for url in asset_urls(page)
            if not url.startswith("/") or url.startswith("//") or "cdn" in url.lower()]
