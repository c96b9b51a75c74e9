"""The causal tree: the chain from the root cause to the selected event, and the
effects of each node, loaded lazily (a placeholder child until expanded)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ...analysis.causal import ChildrenPage, describe
from ...journal import Journal


@dataclass
class NodeData:
    position: int | None  # None for placeholders
    loaded: bool = False
    loading: bool = False
    next_start: int | None = None  # for a "scan further" node
    parent_position: int | None = None


PLACEHOLDER = "…"


class CausalTree(Tree[NodeData]):
    """Cause → effect. Enter on a node selects that event in the timeline."""

    def __init__(self, journal: Journal, *, id: str | None = None) -> None:
        super().__init__("causes", data=NodeData(None), id=id)
        self.journal = journal
        self.show_root = False
        self.generation = 0
        self.guide_depth = 2

    def label_of(self, position: int) -> str:
        return describe(self.journal.try_event(position))

    def add_event(self, parent: TreeNode[NodeData], position: int, *, selected: bool = False) -> TreeNode[NodeData]:
        label = self.label_of(position)
        node = parent.add(("▶ " if selected else "") + label, data=NodeData(position), expand=False)
        node.add_leaf(PLACEHOLDER, data=NodeData(None))
        return node

    def show_chain(self, chain: list[int]) -> TreeNode[NodeData] | None:
        """Rebuild the tree as root → … → selected; returns the selected node."""
        self.generation += 1
        self.clear()
        parent: TreeNode[NodeData] = self.root
        node: TreeNode[NodeData] | None = None
        for number, position in enumerate(chain):
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
            if child.data is not None and (child.data.position is None):
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
