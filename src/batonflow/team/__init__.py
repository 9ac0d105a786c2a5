"""Teams: Solon-AI's ``TeamAgent`` on the graph engine and the one loop.

A ``TeamAgent`` is an ``Agent`` whose run is a graph its protocol builds (``none``, ``sequential``,
``hierarchical``, or a ``TeamProtocol`` of your own): a supervisor model picks the members, who are any agents
(``Member`` adds a profile), until the supervisor says the finish marker. The collaboration's state, a
``TeamTrace``, is in the run's session values under ``__<team name>`` and travels in checkpoints.
``TeamInterceptor`` hooks into the team's run; ``LoopingTeamInterceptor`` stops a team going in circles.
"""

from ._a2a import A2AProtocol as A2AProtocol
from ._blackboard import BlackboardProtocol as BlackboardProtocol
from ._contract_net import ContractNetProtocol as ContractNetProtocol
from ._current import current_trace as current_trace
from ._hierarchical import HierarchicalProtocol as HierarchicalProtocol
from ._interceptor import LoopingTeamInterceptor as LoopingTeamInterceptor
from ._interceptor import TeamInterceptor as TeamInterceptor
from ._market import MarketBasedProtocol as MarketBasedProtocol
from ._member import Member as Member
from ._protocol import NoneProtocol as NoneProtocol
from ._protocol import TeamProtocol as TeamProtocol
from ._protocol import TeamProtocolBase as TeamProtocolBase
from ._protocol import sniff_json as sniff_json
from ._run import TeamMemberError as TeamMemberError
from ._run import TeamState as TeamState
from ._sequential import SequentialProtocol as SequentialProtocol
from ._supervisor import SupervisorTask as SupervisorTask
from ._swarm import SwarmProtocol as SwarmProtocol
from ._team import PROTOCOL_NAMES as PROTOCOL_NAMES
from ._team import TeamAgent as TeamAgent
from ._trace import TeamMetrics as TeamMetrics
from ._trace import TeamRecord as TeamRecord
from ._trace import TeamTrace as TeamTrace

__all__ = [
    "PROTOCOL_NAMES",
    "A2AProtocol",
    "BlackboardProtocol",
    "ContractNetProtocol",
    "HierarchicalProtocol",
    "LoopingTeamInterceptor",
    "MarketBasedProtocol",
    "Member",
    "NoneProtocol",
    "SequentialProtocol",
    "SupervisorTask",
    "SwarmProtocol",
    "TeamAgent",
    "TeamInterceptor",
    "TeamMemberError",
    "TeamMetrics",
    "TeamProtocol",
    "TeamProtocolBase",
    "TeamRecord",
    "TeamState",
    "TeamTrace",
    "current_trace",
    "sniff_json",
]
