package watcher

import "aipm/fsstore"

// reactCompaction compacts the agents' logs ([retention] in config.toml)
// when every has passed since the last compaction (at once when the
// watcher starts), and asks for a pass when the next one is due. A
// compaction that another process runs is skipped, not waited for; one
// that failed is tried again next time.
func reactCompaction(d *Daemon, p *Pass) error {
	every := p.Cfg.Retention().Every.Duration
	if d.once || every <= 0 {
		return nil
	}
	if next := d.compacted.Add(every); !d.compacted.IsZero() && p.Now.Before(next) {
		p.Due(next)
		return nil
	}
	d.compacted = p.Now
	p.Due(p.Now.Add(every))
	res, err := d.store.Compact(p.Ctx, p.Cfg, fsstore.CompactOptions{})
	for _, f := range res.Files {
		d.log.Info("compacted", "log", f.Path, "droppedLines", f.DroppedLines, "droppedBytes", f.DroppedBytes, "keptBytes", f.KeptBytes, "unreadKept", f.Unread)
	}
	return err
}
