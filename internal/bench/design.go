package bench

// DESIGN section 13's limits, each once; the rows judge against these.
// Each is what aipm may add above a floor measured in the same run.
const (
	deliveryP50Over  = 0.25 // P1, P1i: ms, the wait's p50 above the relay floor's
	deliveryP99Over  = 1    // P1, P1i, P1r: ms, the p99 above the floor's
	serveStartOver   = 3    // P4: ms, aipm serve start -> authenticate above the SDK floor's start -> its tool answered, p50
	versionOverSDK   = 1    // P4v: ms, aipm version's p50 above the SDK floor binary's bare start
	sendsOfDualWrite = 0.6  // P2: the least share of the dual-write floor's rate
	sendsOfRPC       = 0.75 // P2: the least share of the RPC floor's rate
	rssTarget        = 20   // P5, P6: MB, aipm serve's peak resident memory
	agentStartOver   = 5    // P7b: ms, above two SDK-floor starts (the agent's client and its server)
	hookOverHello    = 3    // P8a: ms, the p99 above a hello-world Go binary's
	flowTriggerOver  = 5    // P12a: ms, the p99 above the inotify floor's
)
