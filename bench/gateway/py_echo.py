"""An `echo` tool on the official Python SDK (mcp 2.x `MCPServer`), served over stdio: the upstream
of `bench-gateway --python PATH`, a real server of the kind people run, beside the Rust bench
server. Shaped like the bench server's `echo`: it returns its `text` argument as one text content.
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-py-echo")


@server.tool()
def echo(text: str) -> str:
    """Returns its text argument as one text content."""
    return text


if __name__ == "__main__":
    server.run()
