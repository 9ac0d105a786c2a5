"""``market_based``: the hierarchical protocol with a marketplace of members, priced by how well and how fast they
worked (Solon's ``MarketBasedProtocol``).

After each member's turn: a quality score (0.5, +0.2 for a code block, +0.2 for ``[Done]`` or ``SUCCESS``, −0.2
for a refusal; 0.1 for an error) and an efficiency (1 − duration / 60 s, at least 0.1) are blended into its
profile (0.6 old, 0.4 new); its price is its base price (profile meta ``base_price``, default 1.0) × (0.5 +
quality) × (1 + ln(1 + deals) · 0.15), × 1.5 for members that read images. The supervisor sees each member's
score, price, ROI (quality × efficiency / price) and deals, the top-ROI member and the cheapest one.
"""

from __future__ import annotations

import math
from typing import Any

from ..adk import Language
from ._hierarchical import HierarchicalProtocol
from ._member import Member, compact_json
from ._texts import phrase
from ._trace import TeamTrace

__all__ = ["MarketBasedProtocol"]

_STATE = "market_state_obj"
_MIN_PRICE = 0.1
_PENALTY_DECLINE = 0.2


def _base_price(member: Member) -> float:
    value = member.meta.get("base_price")
    if isinstance(value, bool) or value is None:
        return 1.0
    try:
        return max(_MIN_PRICE, float(value))
    except (TypeError, ValueError):
        return 1.0


def _quality(content: str) -> float:
    score = 0.5
    if "```" in content:
        score += 0.2
    if "[Done]" in content or "SUCCESS" in content:
        score += 0.2
    if "I'm sorry" in content or "cannot fulfill" in content:
        score -= _PENALTY_DECLINE
    return min(1.0, max(0.1, score))


def _roi(profile: dict[str, Any]) -> float:
    return float(profile["quality"] * profile["efficiency"] / max(_MIN_PRICE, profile["current_price"]))


class MarketBasedProtocol(HierarchicalProtocol):
    """See the module doc."""

    name = "MARKET_BASED"

    @staticmethod
    def marketplace(trace: TeamTrace) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = trace.protocol_context.setdefault(_STATE, {})
        return found

    def _seed(self, market: dict[str, dict[str, Any]]) -> None:
        for member in self.config.members:
            if member.name not in market:
                price = _base_price(member)
                market[member.name] = {
                    "quality": 0.8,
                    "efficiency": 0.8,
                    "completed_tasks": 0,
                    "base_price": price,
                    "current_price": price,
                }

    def on_agent_end(self, trace: TeamTrace, member: Member) -> None:
        market = self.marketplace(trace)
        content = trace.last_agent_content
        if not content or "Error:" in content or "Exception:" in content:
            quality = efficiency = 0.1
        else:
            quality = _quality(content)
            efficiency = max(0.1, 1.0 - trace.last_agent_duration_ms / 60000.0)
        price = _base_price(member)
        profile = market.setdefault(
            member.name,
            {"quality": 0.8, "efficiency": 0.7, "completed_tasks": 0, "base_price": price, "current_price": price},
        )
        profile["completed_tasks"] += 1
        profile["quality"] = profile["quality"] * 0.6 + quality * 0.4
        profile["efficiency"] = profile["efficiency"] * 0.6 + efficiency * 0.4
        volume = 1.0 + math.log1p(profile["completed_tasks"]) * 0.15
        modality = 1.5 if "image" in member.input_modes else 1.0
        profile["current_price"] = profile["base_price"] * (0.5 + profile["quality"]) * volume * modality
        super().on_agent_end(trace, member)

    def prepare_supervisor_instruction(self, trace: TeamTrace, language: Language) -> str:
        market = self.marketplace(trace)
        self._seed(market)
        view = {
            name: {
                "score": f"{p['quality']:.2f}",
                "price": f"{p['current_price']:.2f}",
                "roi": f"{_roi(p):.2f}",
                "deals": p["completed_tasks"],
            }
            for name, p in market.items()
        }
        text = phrase("market.dashboard", language)
        text += f"```json\n{compact_json(view)}\n```\n"
        text += phrase("market.tips", language)
        if market:
            top = max(market, key=lambda name: _roi(market[name]))
            cheapest = min(market, key=lambda name: float(market[name]["current_price"]))
            text += phrase("market.top", language) + top
            text += phrase("market.cheapest", language) + cheapest
        return text + super().prepare_supervisor_instruction(trace, language)

    def supervisor_instruction(self, language: Language) -> str:
        text = super().supervisor_instruction(language)
        return text + phrase("market.supervisor_rules", language)
