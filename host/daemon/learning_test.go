package daemon

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
)

func TestSharedEmbedder(t *testing.T) {
	cfg := config.Default(t.TempDir())
	if e, c := sharedEmbedder(context.Background(), cfg, zerolog.Nop()); e != nil || c != nil {
		t.Fatal("no plugins.embedder: each part keeps its own default")
	}
	cfg.Plugins.Embedder = "hashing"
	e, c := sharedEmbedder(context.Background(), cfg, zerolog.Nop())
	if e == nil || c == nil {
		t.Fatal("built-in hashing embedder not opened")
	}
	defer c.Close()
	vecs, err := e.Embed(context.Background(), []string{"deploy on friday", "deploy on friday"})
	if err != nil || len(vecs) != 2 || len(vecs[0]) == 0 {
		t.Fatalf("embed: %v %d", err, len(vecs))
	}
	cfg.Plugins.Embedder = filepath.Join(t.TempDir(), "missing-plugin")
	if e, c := sharedEmbedder(context.Background(), cfg, zerolog.Nop()); e != nil || c != nil {
		t.Fatal("a missing plugin must fall back (nil), not fail the host")
	}
}
