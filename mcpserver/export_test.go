package mcpserver

// InferSchemas makes s infer every tool's schemas from its Go types instead
// of serving schemas/ (TestServedSchemas compares the two).
func (s *Server) InferSchemas() { s.inferSchemas = true }
