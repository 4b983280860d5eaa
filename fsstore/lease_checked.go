package fsstore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// Comparing every pair of leases (aipm status, the board: leaseOverlaps)
// costs the product of their patterns, and only a hand edit of
// leases.json can make two that cannot both hold: every take compares
// its lease with every live one. So each write of leases.json records in
// "checked" the digest of the leases it writes, when they are known to
// hold together: they did when read (the digest read matched), or they
// were all compared then (once after a hand edit). Leases ending keep it
// true. A reader whose digest of the leases matches knows there is no
// pair to show, and compares none; any other edit, even one restoring an
// older file, changes the digest, and the leases are compared again.

// leasesDigest is the digest of leases, as "checked" records it.
func leasesDigest(leases []Lease) string {
	data, err := json.Marshal(leases)
	if err != nil {
		return "" // a Lease always encodes
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// checked says whether doc's leases, as read, are known to hold together.
func (doc *leasesDoc) checked() bool {
	return len(doc.Leases) == 0 || doc.Checked != "" && doc.Checked == leasesDigest(doc.Leases)
}

// recordChecked records in doc whether its leases hold together, which
// they did as read when held; otherwise they are compared now.
func (s *Store) recordChecked(doc *leasesDoc, held bool) {
	doc.Checked = ""
	if !held {
		overlaps, compared := s.leaseOverlaps(doc.Leases)
		held = compared && len(overlaps) == 0
	}
	if held {
		doc.Checked = leasesDigest(doc.Leases)
	}
}
