package memory

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoSecretAnywhereInTheStore: the wifi password, said the ways
// people say it and echoed back by the assistant, goes through the real
// proxy and memory's whole learning path (extraction, session summaries,
// the FTS index); afterwards not one byte of the database or its WAL holds it.
func TestNoSecretAnywhereInTheStore(t *testing.T) {
	dir := t.TempDir()
	h := startHost(t, testCfg(t, nil), AssembleOptions{}, dir)
	for i, msgs := range [][]string{
		{"Remember: the office wifi password is BlueElephant42", "thanks"},
		{"office wifi pw BlueElephant42, remember it", "ok"},
		{"Wifi password for the office: BlueElephant42", "ECHO-BACK what is it again?"},
		{"BlueElephant42 is the wifi password", "ECHO-BACK BlueElephant42 is the wifi password"},
		{"I prefer tabs for indentation. The office wifi password is BlueElephant42."},
	} {
		h.session("wifi-"+itoa(i), chatOpts{user: "u"}, msgs...)
	}
	h.settle()
	if !strings.Contains(memoryBlock(h.chat("Reformat this with my indentation.", chatOpts{user: "u", session: "later"})), "tabs") {
		t.Fatal("memory is not learning at all")
	}
	h.Flush(t)
	for _, f := range []string{"metaclaw.db", "metaclaw.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(bytes.ToLower(b), []byte("blueelephant42")); n > 0 {
			t.Fatalf("%s holds the wifi password %d times", f, n)
		}
	}
}
