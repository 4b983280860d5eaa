package bench

// DESIGN section 13's limits, each once; the rows judge against these.
const (
	deliveryP50Target = 0.5 // P1, P1i: ms, the wait's p50
	serveStartTarget  = 8   // P4: ms, aipm serve start -> authenticate, p50
	versionOverHello  = 2   // P4v: ms, aipm version's p50 above a hello-world Go binary's
	rssTarget         = 20  // P5, P6: MB, aipm serve's peak resident memory
	agentStartOver    = 10  // P7b: ms, above a bare fork/exec of aipm version
	flowTriggerOver   = 5   // P12a: ms, the p99 above the inotify floor's
)
