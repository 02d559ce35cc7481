package main

import "testing"

// TestGeneratedDocsUpToDate fails when docs/configuration.md or manifest.json
// no longer match the config schema.
func TestGeneratedDocsUpToDate(t *testing.T) {
	stale, err := run("../..", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Fatalf("out of date: %v; run `go run ./tools/gendocs`", stale)
	}
}
