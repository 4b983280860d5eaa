package fsstore

import "testing"

func TestAncestors(t *testing.T) {
	_, cfg := testStoreWith(t)
	if got := cfg.Ancestors("coder"); len(got) != 1 || got[0] != "lead" {
		t.Fatalf("Ancestors(coder) = %v", got)
	}
	if got := cfg.Ancestors("lead"); len(got) != 0 {
		t.Fatalf("Ancestors(lead) = %v", got)
	}
}
