//go:build lockrank

package testenv

const lockRank = true
