"""Real MCP servers the tests start (over stdio, streamable HTTP and SSE)."""
