"""Any MCP host: the stdio server of the agent's tools and the scratchpad, and its setup entry."""
