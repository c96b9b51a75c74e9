"""Plugins used by the config tests; they log their lifecycle to a shared list."""

from __future__ import annotations

from replay_tui.harness import PluginBase, PluginContext

LOG: list[str] = []


class Recorder(PluginBase):
    extension = "hook"
    version = "7"

    def init(self, context: PluginContext) -> None:
        super().init(context)
        LOG.append(f"init {context.plugin_id} deps={sorted(context.dependencies)}")

    def start(self) -> None:
        if self.context.options.get("fail_start"):
            LOG.append(f"start-fails {self.context.plugin_id}")
            raise RuntimeError(f"{self.context.plugin_id} cannot start")
        LOG.append(f"start {self.context.plugin_id}")

    def stop(self) -> None:
        LOG.append(f"stop {self.context.plugin_id}")

    def on_event(self, event) -> None:
        LOG.append(f"event {self.context.plugin_id} {event.seq}")


class NotAPlugin:
    extension = "model"
