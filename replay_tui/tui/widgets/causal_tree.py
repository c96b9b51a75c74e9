"""The causal tree: the chain from the root cause to the selected event, and the
effects of each node, loaded lazily (a placeholder child until expanded)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.content import Content
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ...analysis.causal import CausalChain, ChildrenPage, describe
from ...journal import Journal
from ...journal.safe_text import safe_line


@dataclass
class NodeData:
    position: int | None  # None for placeholders
    loaded: bool = False
    loading: bool = False
    next_start: int | None = None  # for a "scan further" node
    parent_position: int | None = None
    shows_elided_chain: bool = False  # the "… N causes between" node


PLACEHOLDER = "…"
CHAIN_HEAD = 1  # causes kept at the top of a long chain
CHAIN_TAIL = 5  # and just above the selected event


def chain_warning(chain: list[int], first_seq: str) -> str | None:
    """What stopped the walk to the root, when it did not end at a root."""
    if not isinstance(chain, CausalChain) or chain.is_complete:
        return None
    if chain.cut:
        return f"⚠ chain cut after {len(chain):,} causes: seq {first_seq} is not the root (earlier causes not followed)"
    if chain.missing_parent:
        return f"⚠ seq {first_seq}'s cause {chain.missing_parent!r} is not in this journal"
    return f"⚠ the causes loop back (a damaged journal): seq {first_seq} is where the loop was cut"


class CausalTree(Tree[NodeData]):
    """Cause → effect. Enter on a node selects that event in the timeline."""

    def __init__(self, journal: Journal, *, id: str | None = None) -> None:
        super().__init__("causes", data=NodeData(None), id=id)
        self.journal = journal
        self.show_root = False
        self.generation = 0
        self.guide_depth = 2
        self.chain: list[int] = []

    def process_label(self, label: str | Text | Content) -> Text:
        """Labels hold journal text: shown as plain text with control characters escaped, never as markup."""
        if isinstance(label, str):
            return Text(safe_line(label))
        return super().process_label(label)  # type: ignore[arg-type]

    def label_of(self, position: int) -> str:
        return describe(self.journal.try_event(position))

    def add_event(self, parent: TreeNode[NodeData], position: int, *, selected: bool = False) -> TreeNode[NodeData]:
        label = self.label_of(position)
        node = parent.add(("▶ " if selected else "") + label, data=NodeData(position), expand=False)
        node.add_leaf(PLACEHOLDER, data=NodeData(None))
        return node

    def show_chain(self, chain: list[int], *, elide: bool = True) -> TreeNode[NodeData] | None:
        """Rebuild the tree as root → … → selected; returns the selected node.

        A long chain (every model call caused by the last tool result) keeps its
        root and the last few causes; one node stands for the rest until chosen.
        """
        self.generation += 1
        self.chain = chain
        self.clear()
        parent: TreeNode[NodeData] = self.root
        warning = chain_warning(chain, self.label_of(chain[0]).split()[0]) if chain else None
        if warning is not None:  # the first event shown is not the root: say so above it
            parent = parent.add(warning, data=NodeData(None, loaded=True), expand=True)
        node: TreeNode[NodeData] | None = None
        hidden = len(chain) - CHAIN_HEAD - CHAIN_TAIL - 1
        for number, position in enumerate(chain):
            if elide and hidden > 1 and CHAIN_HEAD <= number < CHAIN_HEAD + hidden:
                if number == CHAIN_HEAD:
                    first, last = (
                        self.label_of(chain[number]).split()[0],
                        self.label_of(chain[number + hidden - 1]).split()[0],
                    )
                    parent = parent.add(
                        f"⋯ {hidden} causes between (seq {first} … {last}; enter to show)",
                        data=NodeData(None, loaded=True, shows_elided_chain=True),
                        expand=True,
                    )
                continue
            selected = number == len(chain) - 1
            node = self.add_event(parent, position, selected=selected)
            if not selected:
                node.expand()
            parent = node
        if node is not None:
            self.move_cursor(node)
        return node

    def apply_children(self, node: TreeNode[NodeData], page: ChildrenPage) -> None:
        """Put loaded children under ``node``, keeping any child already shown."""
        data = node.data
        if data is None:
            return
        for child in list(node.children):
            if child.data is not None and child.data.position is None and not child.data.shows_elided_chain:
                child.remove()
        present = {child.data.position for child in node.children if child.data is not None}
        for position in page.children:
            if position not in present:
                self.add_event(node, position)
        data.loading = False
        data.loaded = page.exhausted
        if not page.exhausted:
            node.add_leaf(
                f"… scan further for effects ({page.scanned_to - page.scanned_from:,} events searched)",
                data=NodeData(None, next_start=page.scanned_to, parent_position=data.position),
            )
        elif not node.children:
            node.add_leaf("(no effects)", data=NodeData(None, loaded=True))
