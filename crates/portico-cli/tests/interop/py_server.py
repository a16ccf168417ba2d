"""An upstream MCP server written with the official Python SDK (mcp 2.x `MCPServer`, which was
`FastMCP` in mcp 1.x), served over stdio. Used by crates/portico-cli/tests/interop.rs.

Tools:
  reverse(text)   -> the text reversed (stateless)
  tally(amount)   -> the running total of this session: over stdio the process serves exactly one
                     session, so the total lives as long as the gateway's upstream does (a gateway
                     that restarted or reconnected its upstream between calls would start over)
  era()           -> the protocol version this request was served at
  order(item)     -> counts an order, then asks the client whom to bill (an elicitation): the
                     count shows whether a gateway made the call once or twice
Resource: py://motd (text). Prompt: haiku(topic).
"""

from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

server = MCPServer("py-fixture", instructions="A Python SDK fixture for Portico's interop tests.")

# The session's state: one process, one stdio session.
_total = 0


@server.tool()
def reverse(text: str) -> str:
    """Returns the text reversed."""
    return text[::-1]


@server.tool()
def tally(amount: int) -> str:
    """Adds amount to this session's running total and returns the total."""
    global _total
    _total += amount
    return f"total {_total}"


@server.tool()
def era(ctx: Context) -> str:
    """The protocol version this request was served at."""
    return str(ctx.protocol_version)


class Billing(BaseModel):
    name: str


_orders = 0


@server.tool()
async def order(item: str, ctx: Context) -> str:
    """Counts an order, then asks whom to bill it to."""
    global _orders
    _orders += 1
    n = _orders
    answer = await ctx.elicit("Bill whom?", Billing)
    name = answer.data.name if answer.action == "accept" else answer.action
    return f"order {n}: {item} billed to {name}"


@server.resource("py://motd", mime_type="text/plain")
def motd() -> str:
    """The message of the day."""
    return "snakes on a gateway"


@server.prompt()
def haiku(topic: str) -> str:
    """Asks for a haiku about a topic."""
    return f"Write a haiku about {topic}."


if __name__ == "__main__":
    server.run()
