package mcpserver

// SDKTools makes s register every tool through the SDK's mcp.AddTool, its
// schemas inferred from its Go types: the reference that TestServedSchemas
// and TestToolCallsMatchTheSDK compare aipm's own registration with.
func (s *Server) SDKTools() { s.sdkTools = true }
