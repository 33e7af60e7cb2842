"""A small HTML tree for the report tests (standard-library html.parser; no dependency).

:func:`parse` checks that every non-void element is closed in order (a page the browser
would have to repair fails) and returns the root :class:`Node`.
"""

from __future__ import annotations

from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node] = []
        self.parts: list[str] = []

    def text(self) -> str:
        """The text of the element and its descendants, whitespace collapsed."""
        out: list[str] = []

        def walk(node: Node) -> None:
            out.extend(node.parts)
            for child in node.children:
                walk(child)

        walk(self)
        return " ".join(" ".join(out).split())

    def iter(self):
        yield self
        for child in self.children:
            yield from child.iter()

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Node]:
        return [
            n
            for n in self.iter()
            if (tag is None or n.tag == tag) and all(n.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]

    def find(self, tag: str | None = None, **attrs: str) -> Node:
        found = self.find_all(tag, **attrs)
        assert found, f"no <{tag}> with {attrs}"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.current = self.root
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Node(tag, dict(attrs), self.current))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if self.current.tag != tag:
            self.errors.append(f"</{tag}> closes <{self.current.tag}> at line {self.getpos()[0]}")
            return
        assert self.current.parent is not None
        self.current = self.current.parent

    def handle_data(self, data):
        self.current.parts.append(data)


def parse(page: str) -> Node:
    builder = _Builder()
    builder.feed(page)
    builder.close()
    assert not builder.errors, builder.errors[:5]
    assert builder.current is builder.root, f"<{builder.current.tag}> never closed"
    return builder.root
